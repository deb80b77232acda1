// gpuplan serve MODEL (--gpu ID | --offer ID) (--input N --output N | --lengths FILE)
// [--rate R | --users N | --static-batch B] [--tp N --pp N] [--slo-ttft T --slo-tpot T]
// [--target-rate R | --target-users N] : serving capacity of one instance and of a fleet, from
// the iteration-time model and the discrete-event simulation (serving.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "command.h"
#include "flags.h"
#include "report.h"
#include "serve_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "serve";

// The simulation keeps every request in memory (~100 bytes each).
constexpr int64_t kMostRequests = static_cast<int64_t>(fields::kRequests.max);

int usage(const std::string& flag, const std::string& what, const std::string& hint) {
  return report_error(kName, Error{flag, what, hint}, kExitUsage);
}

struct ServeFlags {
  std::string model, gpu, offer, price, lengths, precision = "bf16", kv_precision;
  std::string balancer = "least-loaded", kv_policy = "reserve", slo_ttft, slo_tpot, think,
              scale_out, data, profile;
  int64_t tp = 0, pp = 1, max_tp = 8, gpus_per_node = 0, nics_per_node = 0;
  int64_t input = 0, output = 0, static_batch = 0, requests = 1000, replicas = 1;
  int64_t users = 0, target_users = 0;
  double rate = 0, target_rate = 0;
  uint64_t seed = 1;
  bool json = false;
};

void add_flags(CLI::App& app, ServeFlags& f) {
  app.add_option("model", f.model, "catalog model id or path to a config.json")->required();
  app.add_option("--gpu", f.gpu, "catalog GPU id");
  app.add_option("--offer", f.offer,
                 "catalog offer: its GPU, node, network and price (instead of --gpu)");
  app.add_option("--price", f.price, "price per GPU-hour, e.g. '2.5 USD/h' (default: the offer's)");
  app.add_option("--input", f.input, "prompt tokens per request")
      ->check(rule(fields::kRequestTokens));
  app.add_option("--output", f.output, "output tokens per request")
      ->check(rule(fields::kRequestTokens));
  app.add_option("--lengths", f.lengths,
                 "CSV of per-request lengths (header input_tokens,output_tokens), instead of "
                 "--input and --output");
  app.add_option("--tp", f.tp, "GPUs per instance (tensor parallel); default: try 1, 2, 4, 8")
      ->check(rule(fields::kParallel));
  app.add_option("--pp", f.pp, "pipeline stages per instance (default 1)")
      ->check(rule(fields::kParallel));
  app.add_option("--gpus-per-node", f.gpus_per_node,
                 "GPUs per node (default: the GPU's NVLink domain, or --max-tp over PCIe)")
      ->check(rule(fields::kGpusPerNode));
  app.add_option("--scale-out", f.scale_out,
                 "network between nodes, for instances that span them, e.g. ib-ndr-400g");
  app.add_option("--nics-per-node", f.nics_per_node, "NICs per node (default: one per GPU)")
      ->check(rule(fields::kNicsPerNode));
  app.add_option("--max-tp", f.max_tp,
                 "without --tp, the most PCIe cards one instance may span (default 8)")
      ->check(rule(fields::kParallel));
  app.add_option("--precision", f.precision, "weights: bf16, fp16, fp8, int8, int4 (default bf16)");
  app.add_option("--kv-precision", f.kv_precision, "KV cache: bf16 or fp8 (default: as weights)");
  app.add_option("--rate", f.rate,
                 "Poisson arrivals, requests/s over all replicas (default: every request "
                 "queued at once)")
      ->check(rule(fields::kRate));
  app.add_option("--users", f.users,
                 "closed loop: concurrent users, each sending its next request when the last "
                 "ends (instead of --rate)")
      ->check(rule(fields::kUsers));
  app.add_option("--think", f.think, "closed loop: a user's pause between requests, e.g. '5 s'");
  app.add_option("--static-batch", f.static_batch,
                 "static batching: sequences per batch (default: continuous batching)")
      ->check(rule(fields::kBatch));
  app.add_option("--requests", f.requests, "requests to simulate (default 1000)")
      ->check(rule(fields::kRequests));
  app.add_option("--replicas", f.replicas, "instances behind the load balancer (default 1)")
      ->check(rule(fields::kReplicas));
  app.add_option("--balancer", f.balancer, "least-loaded or round-robin (default least-loaded)");
  app.add_option("--kv-policy", f.kv_policy,
                 "reserve (a request's whole context at admission, as TensorRT-LLM) or paged "
                 "(blocks as it grows, preempting when full, as vLLM); default reserve");
  app.add_option("--slo-ttft", f.slo_ttft, "objective: p99 time to first token, e.g. '2 s'");
  app.add_option("--slo-tpot", f.slo_tpot, "objective: p99 time per output token, e.g. '50 ms'");
  app.add_option("--target-rate", f.target_rate,
                 "requests/s to serve: size the fleet (needs --slo-ttft or --slo-tpot)")
      ->check(rule(fields::kRate));
  app.add_option("--target-users", f.target_users,
                 "with --users: concurrent users to serve: size the fleet (needs an objective)")
      ->check(rule(fields::kUsers));
  app.add_option("--seed", f.seed, "arrival generator seed (default 1)");
  app.add_option("--profile", f.profile, "calibration profile from 'gpuplan calibrate'");
  app.add_option("--data", f.data, "catalog directory");
  app.add_flag("--json", f.json, "print JSON");
}

// Flags that contradict each other or are out of range; nullopt when they hold together.
std::optional<int> check_flags(const ServeFlags& f) {
  if (f.gpu.empty() == f.offer.empty()) {
    return usage(f.gpu.empty() ? "--gpu" : "--offer",
                 f.gpu.empty() ? "is required" : "give --gpu or --offer, not both",
                 "e.g. --gpu h100-sxm or --offer aws-p5.48xlarge");
  }
  if (f.lengths.empty() && (f.input < 1 || f.output < 1)) {
    return usage(f.input < 1 ? "--input" : "--output",
                 f.input == 0 || f.output == 0 ? "is required" : "must be at least 1 token",
                 "give --input and --output, or --lengths FILE");
  }
  if (!f.lengths.empty() && (f.input != 0 || f.output != 0)) {
    return usage("--lengths", "the file gives every request's lengths",
                 "drop --input and --output");
  }
  // Ranges are the flags' field rules (fields.h); what is left is how the flags combine, and
  // the closed loop's own limit: every user needs several requests simulated.
  if (f.users > kMostRequests / 4) {
    return usage("--users",
                 fmt::format("at most {} requests are simulated", grouped(kMostRequests)),
                 "percentiles settle long before that; try 1000-100000");
  }
  if (f.users > 0 && (f.rate > 0 || f.static_batch > 0 || f.target_rate > 0)) {
    return usage("--users", "a closed loop of users has no arrival rate or static batch",
                 "give --users (and --target-users) or --rate (and --target-rate)");
  }
  if (f.target_users > 0 && f.users == 0) {
    return usage("--target-users", "sizing a fleet for users needs the closed loop",
                 "add --users N (the load one instance is simulated at)");
  }
  if (!f.think.empty() && f.users == 0) {
    return usage("--think", "think time belongs to a closed loop", "add --users N");
  }
  if (f.rate > 0 && f.static_batch > 0) {
    return usage("--static-batch", "static batching is measured offline",
                 "drop --rate, or drop --static-batch for continuous batching");
  }
  return std::nullopt;
}

// A positive (or, with `zero_ok`, non-negative) duration flag.
Result<std::optional<Seconds>> duration_flag(const char* flag, const std::string& text,
                                             bool zero_ok) {
  if (text.empty()) {
    return std::optional<Seconds>();
  }
  Result<double> d = parse_quantity(text, Dimension::kSeconds);
  if (!d) {
    return fail(flag, d.error().what, d.error().hint);
  }
  if (*d < 0 || (*d == 0 && !zero_ok)) {
    return fail(flag, zero_ok ? "cannot be negative" : "must be positive", "");
  }
  return std::optional<Seconds>(Seconds(*d));
}

// Everything that needs no catalog: precisions, objective, load, batching, balancer.
Result<ServeAnswer> read_flags(const ServeFlags& f) {
  ServeAnswer a;
  Result<Precision> p = parse_precision(f.precision);
  if (!p) {
    return fail("--precision", p.error().what, p.error().hint);
  }
  a.base.precision = *p;
  a.base.kv_precision = *p == Precision::kFp8 || *p == Precision::kFp16 ? *p : Precision::kBf16;
  if (!f.kv_precision.empty()) {
    Result<Precision> k = parse_precision(f.kv_precision);
    if (!k) {
      return fail("--kv-precision", k.error().what, k.error().hint);
    }
    a.base.kv_precision = *k;
  }
  std::optional<Seconds> think;
  GPUPLAN_ASSIGN_OR_RETURN(a.slo.ttft_p99, duration_flag("--slo-ttft", f.slo_ttft, false));
  GPUPLAN_ASSIGN_OR_RETURN(a.slo.tpot_p99, duration_flag("--slo-tpot", f.slo_tpot, false));
  GPUPLAN_ASSIGN_OR_RETURN(think, duration_flag("--think", f.think, true));
  if ((f.target_rate > 0 || f.target_users > 0) && !a.slo.any()) {
    return fail(f.target_rate > 0 ? "--target-rate" : "--target-users",
                "sizing a fleet needs a latency objective", "add --slo-ttft and/or --slo-tpot");
  }
  Result<Balancer> b = parse_balancer(f.balancer);
  if (!b) {
    return fail("--balancer", b.error().what, b.error().hint);
  }
  a.setup.balancer = *b;
  Result<KvPolicy> kv = parse_kv_policy(f.kv_policy);
  if (!kv) {
    return fail("--kv-policy", kv.error().what, kv.error().hint);
  }
  a.setup.kv_policy = *kv;
  if (*kv == KvPolicy::kPaged && f.static_batch > 0) {
    return fail("--kv-policy", "a paged cache applies to continuous batching",
                "drop --static-batch or --kv-policy");
  }
  a.setup.replicas = f.replicas;
  if (f.static_batch > 0) {
    a.setup.batching = Batching::kStatic;
    a.setup.static_batch = f.static_batch;
  }
  Workload& w = a.workload;
  w.requests = f.requests;
  w.input_tokens = f.input;
  w.output_tokens = f.output;
  w.rate_per_s = f.rate;
  w.seed = f.seed;
  w.users = f.users;
  w.think_time = think.value_or(Seconds(0));
  a.closed = f.users > 0;
  if (a.closed) {
    w.requests = std::max(f.requests, 4 * f.users);  // several requests per user
  }
  a.input = f.input;
  a.output = f.output;
  a.per_request = fmt::format("{} -> {} tokens per request", f.input, f.output);
  a.target = a.closed ? static_cast<double>(f.target_users) : f.target_rate;
  a.load_kind = a.closed             ? "closed_loop"
                : f.static_batch > 0 ? "static_batch"
                : f.rate > 0         ? "poisson"
                                     : "offline";
  a.load =
      a.closed
          ? fmt::format("{} users in a closed loop{}", f.users,
                        think ? fmt::format(", {:.2f} s of thinking on average", think->si()) : "")
      : f.static_batch > 0 ? fmt::format("static batches of {}", f.static_batch)
      : f.rate > 0         ? fmt::format("Poisson arrivals at {:.4g} requests/s", f.rate)
                           : std::string("every request queued at once (offline)");
  return a;
}

// Request lengths from a trace: the workload takes them in turn; the answer shows the means.
Result<bool> read_lengths(const ServeFlags& f, ServeAnswer& a) {
  if (f.lengths.empty()) {
    return true;
  }
  GPUPLAN_ASSIGN_OR_RETURN(a.workload.lengths, load_request_lengths(f.lengths));
  const std::vector<RequestLength>& l = a.workload.lengths;
  double in = 0, out = 0;
  for (const RequestLength& r : l) {
    in += static_cast<double>(r.input);
    out += static_cast<double>(r.output);
  }
  const double n = static_cast<double>(l.size());
  a.input = std::llround(in / n);
  a.output = std::llround(out / n);
  a.per_request =
      fmt::format("request lengths from {} ({} lines, means {} -> {} tokens, longest {})",
                  f.lengths, l.size(), a.input, a.output, a.workload.max_context());
  return true;
}

// The hardware: a GPU with its usual node, or an offer's GPU, node, network and price.
Result<bool> read_hardware(const ServeFlags& f, const Catalog& c, ServeAnswer& a) {
  std::string gpu_id = f.gpu, scale_out = f.scale_out;
  int64_t gpus_per_node = f.gpus_per_node, nics_per_node = f.nics_per_node;
  if (!f.offer.empty()) {
    Result<const Offer*> o = c.offer(f.offer);
    if (!o) {
      return fail("--offer", o.error().what, o.error().hint);
    }
    a.offer = *o;
    gpu_id = a.offer->gpu;
    gpus_per_node = gpus_per_node > 0 ? gpus_per_node : a.offer->gpus_per_node;
    scale_out = scale_out.empty() ? a.offer->scale_out : scale_out;
    nics_per_node = nics_per_node > 0 ? nics_per_node : a.offer->nics_per_node;
    if (const std::optional<Money>& node = a.offer->price_per_node_hour) {
      a.price = Money{node->amount / static_cast<double>(a.offer->gpus_per_node), node->currency};
    }
  }
  if (!f.price.empty()) {
    GPUPLAN_ASSIGN_OR_RETURN(a.price, parse_price(f.price));
  }
  Result<const Gpu*> gpu = c.gpu(gpu_id);
  if (!gpu) {
    return fail("--gpu", gpu.error().what, gpu.error().hint);
  }
  a.gpu = *gpu;
  GPUPLAN_ASSIGN_OR_RETURN(a.base.scale_up,
                           c.fabric(a.offer != nullptr ? a.offer->scale_up : a.gpu->scale_up));
  if (!scale_out.empty()) {
    Result<const Fabric*> out = c.fabric(scale_out);
    if (!out) {
      return fail("--scale-out", out.error().what, out.error().hint);
    }
    a.base.scale_out = *out;
  }
  a.base.gpu = a.gpu;
  a.base.pp = f.pp;
  a.base.gpus_per_node = gpus_per_node > 0
                             ? gpus_per_node
                             : (a.gpu->scale_up_domain > 1 ? a.gpu->scale_up_domain : f.max_tp);
  a.base.nics_per_node = nics_per_node;
  return true;
}

// One instance shape: its capacity within the objective (requests/s, or users for a closed
// loop), or the most it serves without one.
ServeOption evaluate(const Model& model, const Catalog& c, const ServeAnswer& a, int64_t tp) {
  ServeOption o;
  o.tp = tp;
  o.gpus = tp * a.base.pp;
  o.name = a.base.pp > 1 ? fmt::format("tp {} pp {}", tp, a.base.pp) : fmt::format("tp {}", tp);
  Instance in = a.base;
  in.tp = tp;
  o.model.emplace(model, in, c.memory_params(), c.train_params(), c.inference_params());
  if (!o.model->feasible()) {
    o.reason = o.model->reason();
    return o;
  }
  ServingSetup one = a.setup;
  one.replicas = 1;
  Workload open = a.workload;
  open.users = 0;
  const Capacity cap = capacity_under_slo(*o.model, open, one, a.closed ? Slo{} : a.slo);
  o.offline = cap.offline;
  o.amount = cap.max_rate_per_s;
  o.reason = cap.reason;
  // Steady state: the rate times the mean output.
  double outputs = 0;
  for (int64_t i = 0; i < open.requests; ++i) {
    outputs += static_cast<double>(open.length(i).output);
  }
  o.tokens_per_s = cap.max_rate_per_s * outputs / static_cast<double>(open.requests);
  if (a.closed && cap.feasible) {
    const UserCapacity u = users_under_slo(*o.model, a.workload, one, a.slo);
    o.amount = static_cast<double>(a.slo.any() ? u.max_users : u.at_once);
    o.reason = u.reason;
    o.tokens_per_s = a.slo.any() ? u.at_max.output_tokens_per_s : cap.offline.output_tokens_per_s;
  }
  o.per_gpu = o.amount / static_cast<double>(o.gpus);
  return o;
}

// How many replicas serve the target (requests/s or users) within the objective: target / what
// one serves (at most its offline rate or what it runs at once, so the fleet keeps up), checked
// by simulating the fleet behind the balancer and grown while the check fails.
ServeFleet size_fleet(const ServeAnswer& a) {
  const ServeOption& b = *a.best;
  ServeFleet f;
  f.replicas = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(a.target / b.amount)));
  Workload w = a.workload;
  if (a.closed) {
    w.users = static_cast<int64_t>(std::ceil(a.target));
  } else {
    w.rate_per_s = a.target;
  }
  ServingSetup s = a.setup;
  for (int tries = 0; tries < 8; ++tries) {
    s.replicas = f.replicas;
    Workload fleet = w;
    // About the same simulated time per instance as the single-instance run.
    fleet.requests = std::max(w.requests * f.replicas, 4 * w.users);
    f.result = simulate_serving(*b.model, fleet, s);
    f.met = meets_slo(f.result, a.slo);
    if (f.met) {
      break;
    }
    ++f.replicas;
  }
  return f;
}

}  // namespace

int run_serve(const std::vector<std::string>& args) {
  CLI::App app(
      "Serving capacity: per-instance throughput and latency, requests/s or users under a "
      "latency objective, and the replicas a target needs.",
      args.front());
  ServeFlags f;
  add_flags(app, f);
  if (std::optional<int> status = parse_flags(app, args, kName)) {
    return *status;
  }
  if (std::optional<int> status = check_flags(f)) {
    return *status;
  }
  Result<ServeAnswer> read = read_flags(f);
  if (!read) {
    return report_error(kName, read.error(), kExitUsage);
  }
  ServeAnswer a = std::move(*read);
  if (Result<bool> l = read_lengths(f, a); !l) {
    return report_error(kName, l.error());
  }
  Result<Catalog> catalog = load_catalog_with_profile(f.data, f.profile, f.json);
  if (!catalog) {
    return report_error(kName, catalog.error());
  }
  Result<Model> model = catalog->model(f.model);
  if (!model) {
    return report_error(kName, model.error());
  }
  a.model = model->id;
  if (Result<int64_t> c = check_context(*model, a.workload.max_context(),
                                        f.lengths.empty() ? "--input + --output" : "--lengths");
      !c) {
    return report_error(kName, c.error(), kExitUsage);
  }
  if (Result<bool> h = read_hardware(f, *catalog, a); !h) {
    return report_error(kName, h.error(), h.error().where == "--price" ? kExitUsage : kExitError);
  }
  a.max_batch = catalog->inference_params().max_batch;
  a.chunk_tokens = catalog->memory_params().inference_chunk_tokens;

  // Without --tp: powers of two up to the GPU's NVLink domain, or up to --max-tp cards over
  // PCIe, and never past the node (an offer's, or --gpus-per-node).
  const int64_t widest = std::min(a.gpu->scale_up_domain > 1 ? a.gpu->scale_up_domain : f.max_tp,
                                  a.base.gpus_per_node);
  for (int64_t t = f.tp > 0 ? f.tp : 1; t <= (f.tp > 0 ? f.tp : widest); t *= 2) {
    a.options.push_back(evaluate(*model, *catalog, a, t));
  }
  for (const ServeOption& o : a.options) {
    if (o.reason.empty() && (a.best == nullptr || o.per_gpu > a.best->per_gpu * 1.0000001)) {
      a.best = &o;
    }
  }
  if (a.best != nullptr) {
    a.run = simulate_serving(*a.best->model, a.workload, a.setup);
    if (a.target > 0) {
      a.fleet = size_fleet(a);
    }
  }
  if (f.json) {
    print_serve_json(a);
  } else {
    print_serve_text(a);
  }
  return kExitOk;
}

}  // namespace gpuplan::cli
