// gpuplan serve MODEL --gpu ID --input N --output N [--rate R | --users N | --static-batch B]
// [--tp N] [--slo-ttft T --slo-tpot T] [--target-rate R | --target-users N] : serving capacity
// of one instance and of a fleet, from the iteration-time model and the discrete-event
// simulation (serving.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "command.h"
#include "flags.h"
#include "gpuplan/json_writer.h"
#include "gpuplan/serving.h"
#include "report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "serve";

int usage(const std::string& flag, const std::string& what, const std::string& hint) {
  return report_error(kName, Error{flag, what, hint}, kExitUsage);
}

// One tensor-parallel size, evaluated: how much it serves — requests/s (open loop) or users
// (closed loop) — within the objective, or at most without one.
struct Option {
  int64_t tp = 0;
  int64_t gpus = 0;    // tp x pp
  std::string name;    // "tp 4", "tp 8 pp 2"
  std::string reason;  // why it cannot serve
  std::optional<InferenceModel> model;
  double amount = 0;        // requests/s or users
  double per_gpu = 0;       // amount per GPU
  double tokens_per_s = 0;  // output tokens/s at that capacity
  ServingResult offline;
};

// How many replicas serve `target` (requests/s or users) within the objective: target / what
// one serves (at most its offline rate or what it runs at once, so the fleet keeps up), checked
// by simulating the fleet behind the balancer and grown while the check fails.
struct Fleet {
  int64_t replicas = 0;
  ServingResult result;
  bool met = false;
};

Fleet size_fleet(const InferenceModel& m, Workload w, ServingSetup s, const Slo& slo,
                 double per_replica, double target) {
  Fleet f;
  f.replicas = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(target / per_replica)));
  if (w.users > 0) {
    w.users = static_cast<int64_t>(std::ceil(target));
  } else {
    w.rate_per_s = target;
  }
  for (int tries = 0; tries < 8; ++tries) {
    s.replicas = f.replicas;
    Workload fleet = w;
    // About the same simulated time per instance as the single-instance run.
    fleet.requests = std::max(w.requests * f.replicas, 4 * w.users);
    f.result = simulate_serving(m, fleet, s);
    f.met = meets_slo(f.result, slo);
    if (f.met) {
      break;
    }
    ++f.replicas;
  }
  return f;
}

// The table's first cell: "4", or "4 x 2" with pipeline stages.
std::string cell(const Option& o) {
  return o.gpus == o.tp ? fmt::format("{}", o.tp) : fmt::format("{} x {}", o.tp, o.gpus / o.tp);
}

std::string ms(double seconds) {
  return seconds < 1.0 ? fmt::format("{:.1f} ms", seconds * 1e3) : fmt::format("{:.2f} s", seconds);
}

std::string spread(const Percentiles& p) {
  return fmt::format("mean {}, p50 {}, p90 {}, p99 {}", ms(p.mean), ms(p.p50), ms(p.p90),
                     ms(p.p99));
}

void write_percentiles(JsonWriter& w, const char* key, const Percentiles& p) {
  w.key(key)
      .begin_object()
      .field("mean_s", p.mean)
      .field("p50_s", p.p50)
      .field("p90_s", p.p90)
      .field("p99_s", p.p99)
      .field("max_s", p.max)
      .end_object();
}

void write_result(JsonWriter& w, const char* key, const ServingResult& r) {
  w.key(key).begin_object();
  w.field("requests", r.requests)
      .field("duration_s", r.duration.si())
      .field("output_tokens_per_s", r.output_tokens_per_s)
      .field("requests_per_s", r.requests_per_s);
  write_percentiles(w, "ttft", r.ttft);
  write_percentiles(w, "tpot", r.tpot);
  write_percentiles(w, "e2e", r.e2e);
  w.field("itl_mean_s", r.itl_mean)
      .field("mean_batch", r.mean_batch)
      .field("max_batch", r.max_batch)
      .field("iterations", r.iterations)
      .end_object();
}

void print_result(const ServingResult& r, const std::string& indent) {
  fmt::print(
      "{}throughput  {} output tokens/s ({:.2f} requests/s over {}, the last completions "
      "included)\n",
      indent, grouped(std::llround(r.output_tokens_per_s)), r.requests_per_s,
      duration_text(r.duration));
  fmt::print("{}TTFT        {}\n", indent, spread(r.ttft));
  fmt::print("{}TPOT        {}\n", indent, spread(r.tpot));
  fmt::print("{}ITL         mean {}\n", indent, ms(r.itl_mean));
  fmt::print("{}E2E         {}\n", indent, spread(r.e2e));
  fmt::print("{}batch       mean {:.1f} sequences, max {}; {} iterations\n", indent, r.mean_batch,
             r.max_batch, grouped(r.iterations));
}

std::string slo_text(const Slo& slo) {
  std::string s;
  if (slo.ttft_p99) {
    s += fmt::format("p99 TTFT <= {}", ms(slo.ttft_p99->si()));
  }
  if (slo.tpot_p99) {
    s += fmt::format("{}p99 TPOT <= {}", s.empty() ? "" : ", ", ms(slo.tpot_p99->si()));
  }
  return s;
}

// What serving costs at a price per GPU-hour: an instance per hour, a million output tokens
// at its capacity, and a fleet of `replicas` per month (kHoursPerMonth).
struct Costs {
  double instance_hour = 0;
  double per_million = 0;
  double fleet_month = 0;
};

Costs costs(const Money& price, const Option& o, int64_t replicas) {
  Costs k;
  k.instance_hour = price.amount * static_cast<double>(o.gpus);
  k.per_million = o.tokens_per_s > 0 ? k.instance_hour / (o.tokens_per_s * 3600.0) * 1e6 : 0;
  k.fleet_month = k.instance_hour * static_cast<double>(replicas) * kHoursPerMonth;
  return k;
}

}  // namespace

int run_serve(const std::vector<std::string>& args) {
  CLI::App app(
      "Serving capacity: per-instance throughput and latency, requests/s under a latency "
      "objective, and the replicas a target rate needs.",
      args.front());
  std::string model_id, gpu_id, precision = "bf16", kv_precision, balancer = "least-loaded";
  std::string slo_ttft, slo_tpot, data, profile;
  int64_t tp = 0, max_tp = 8, input = 0, output = 0, static_batch = 0, requests = 1000,
          replicas = 1;
  double rate = 0, target_rate = 0;
  int64_t users = 0, target_users = 0, pp = 1, gpus_per_node = 0, nics_per_node = 0;
  std::string scale_out;
  std::string think;
  uint64_t seed = 1;
  bool json = false;
  app.add_option("model", model_id, "catalog model id or path to a config.json")->required();
  std::string offer_id, price_text;
  app.add_option("--gpu", gpu_id, "catalog GPU id");
  app.add_option("--offer", offer_id,
                 "catalog offer: its GPU, node, network and price (instead of --gpu)");
  app.add_option("--price", price_text,
                 "price per GPU-hour, e.g. '2.5 USD/h' (default: the offer's)");
  std::string lengths_file;
  app.add_option("--input", input, "prompt tokens per request");
  app.add_option("--output", output, "output tokens per request");
  app.add_option("--lengths", lengths_file,
                 "CSV of per-request lengths (header input_tokens,output_tokens), instead of "
                 "--input and --output");
  app.add_option("--tp", tp, "GPUs per instance (tensor parallel); default: try 1, 2, 4, 8");
  app.add_option("--pp", pp, "pipeline stages per instance (default 1)");
  app.add_option("--gpus-per-node", gpus_per_node,
                 "GPUs per node (default: the GPU's NVLink domain, or --max-tp over PCIe)");
  app.add_option("--scale-out", scale_out,
                 "network between nodes, for instances that span them, e.g. ib-ndr-400g");
  app.add_option("--nics-per-node", nics_per_node, "NICs per node (default: one per GPU)");
  app.add_option("--max-tp", max_tp,
                 "without --tp, the most PCIe cards one instance may span (default 8)");
  app.add_option("--precision", precision, "weights: bf16, fp16, fp8, int8, int4 (default bf16)");
  app.add_option("--kv-precision", kv_precision, "KV cache: bf16 or fp8 (default: as weights)");
  app.add_option("--rate", rate,
                 "Poisson arrivals, requests/s over all replicas (default: "
                 "every request queued at once)");
  app.add_option("--users", users,
                 "closed loop: concurrent users, each sending its next request when the last "
                 "ends (instead of --rate)");
  app.add_option("--think", think, "closed loop: a user's pause between requests, e.g. '5 s'");
  app.add_option("--static-batch", static_batch,
                 "static batching: sequences per batch (default: continuous batching)");
  app.add_option("--requests", requests, "requests to simulate (default 1000)");
  app.add_option("--replicas", replicas, "instances behind the load balancer (default 1)");
  app.add_option("--balancer", balancer, "least-loaded or round-robin (default least-loaded)");
  app.add_option("--slo-ttft", slo_ttft, "objective: p99 time to first token, e.g. '2 s'");
  app.add_option("--slo-tpot", slo_tpot, "objective: p99 time per output token, e.g. '50 ms'");
  app.add_option("--target-rate", target_rate,
                 "requests/s to serve: size the fleet (needs --slo-ttft or --slo-tpot)");
  app.add_option("--target-users", target_users,
                 "with --users: concurrent users to serve: size the fleet (needs an objective)");
  app.add_option("--seed", seed, "arrival generator seed (default 1)");
  app.add_option("--profile", profile, "calibration profile from 'gpuplan calibrate'");
  app.add_option("--data", data, "catalog directory");
  app.add_flag("--json", json, "print JSON");
  if (std::optional<int> status = parse_flags(app, args, kName)) {
    return *status;
  }
  if (gpu_id.empty() == offer_id.empty()) {
    return usage(gpu_id.empty() ? "--gpu" : "--offer",
                 gpu_id.empty() ? "is required" : "give --gpu or --offer, not both",
                 "e.g. --gpu h100-sxm or --offer aws-p5.48xlarge");
  }
  if (lengths_file.empty() && (input < 1 || output < 1)) {
    return usage(input < 1 ? "--input" : "--output",
                 input == 0 || output == 0 ? "is required" : "must be at least 1 token",
                 "give --input and --output, or --lengths FILE");
  }
  if (!lengths_file.empty() && (input != 0 || output != 0)) {
    return usage("--lengths", "the file gives every request's lengths",
                 "drop --input and --output");
  }
  std::vector<RequestLength> lengths;
  double mean_output = static_cast<double>(output);
  if (!lengths_file.empty()) {
    Result<std::vector<RequestLength>> l = load_request_lengths(lengths_file);
    if (!l) {
      return report_error(kName, l.error());
    }
    lengths = std::move(*l);
    // The means stand for the trace where one length is shown (floors, the table).
    double in = 0, out = 0;
    for (const RequestLength& r : lengths) {
      in += static_cast<double>(r.input);
      out += static_cast<double>(r.output);
    }
    input = std::llround(in / static_cast<double>(lengths.size()));
    output = std::llround(out / static_cast<double>(lengths.size()));
    mean_output = out / static_cast<double>(lengths.size());
  }
  if (requests < 1 || replicas < 1) {
    return usage(requests < 1 ? "--requests" : "--replicas", "must be at least 1", "");
  }
  // The simulation keeps every request in memory (~100 bytes each).
  constexpr int64_t kMostRequests = 10'000'000;
  if (requests > kMostRequests || users > kMostRequests / 4) {
    return usage(requests > kMostRequests ? "--requests" : "--users",
                 fmt::format("at most {} requests are simulated", grouped(kMostRequests)),
                 "percentiles settle long before that; try 1000-100000");
  }
  if (pp < 1 || gpus_per_node < 0 || nics_per_node < 0) {
    return usage(pp < 1              ? "--pp"
                 : gpus_per_node < 0 ? "--gpus-per-node"
                                     : "--nics-per-node",
                 pp < 1 ? "must be at least 1" : "cannot be negative", "");
  }
  if (rate < 0 || target_rate < 0 || static_batch < 0 || tp < 0 || max_tp < 1) {
    return usage("", "--rate, --target-rate, --static-batch and --tp cannot be negative",
                 "and --max-tp must be at least 1");
  }
  if (users < 0 || target_users < 0) {
    return usage(users < 0 ? "--users" : "--target-users", "cannot be negative", "");
  }
  if (users > 0 && (rate > 0 || static_batch > 0 || target_rate > 0)) {
    return usage("--users", "a closed loop of users has no arrival rate or static batch",
                 "give --users (and --target-users) or --rate (and --target-rate)");
  }
  if (target_users > 0 && users == 0) {
    return usage("--target-users", "sizing a fleet for users needs the closed loop",
                 "add --users N (the load one instance is simulated at)");
  }
  if (!think.empty() && users == 0) {
    return usage("--think", "think time belongs to a closed loop", "add --users N");
  }
  if (rate > 0 && static_batch > 0) {
    return usage("--static-batch", "static batching is measured offline",
                 "drop --rate, or drop --static-batch for continuous batching");
  }
  Slo slo;
  for (auto [flag, text, target] : {std::tuple{"--slo-ttft", &slo_ttft, &slo.ttft_p99},
                                    std::tuple{"--slo-tpot", &slo_tpot, &slo.tpot_p99}}) {
    if (text->empty()) {
      continue;
    }
    Result<double> d = parse_quantity(*text, Dimension::kSeconds);
    if (!d || *d <= 0) {
      return usage(flag, d ? "must be positive" : d.error().what, d ? "" : d.error().hint);
    }
    *target = Seconds(*d);
  }
  if ((target_rate > 0 || target_users > 0) && !slo.any()) {
    return usage(target_rate > 0 ? "--target-rate" : "--target-users",
                 "sizing a fleet needs a latency objective", "add --slo-ttft and/or --slo-tpot");
  }
  Seconds think_time;
  if (!think.empty()) {
    Result<double> d = parse_quantity(think, Dimension::kSeconds);
    if (!d || *d < 0) {
      return usage("--think", d ? "cannot be negative" : d.error().what, d ? "" : d.error().hint);
    }
    think_time = Seconds(*d);
  }
  Instance base;
  Result<Precision> p = parse_precision(precision);
  if (!p) {
    return usage("--precision", p.error().what, p.error().hint);
  }
  base.precision = *p;
  if (kv_precision.empty()) {
    base.kv_precision = *p == Precision::kFp8 || *p == Precision::kFp16 ? *p : Precision::kBf16;
  } else {
    Result<Precision> k = parse_precision(kv_precision);
    if (!k) {
      return usage("--kv-precision", k.error().what, k.error().hint);
    }
    base.kv_precision = *k;
  }
  ServingSetup setup;
  setup.replicas = replicas;
  Result<Balancer> b = parse_balancer(balancer);
  if (!b) {
    return usage("--balancer", b.error().what, b.error().hint);
  }
  setup.balancer = *b;
  if (static_batch > 0) {
    setup.batching = Batching::kStatic;
    setup.static_batch = static_batch;
  }

  Result<Catalog> catalog = load_catalog_with_profile(data, profile, json);
  if (!catalog) {
    return report_error(kName, catalog.error());
  }
  Result<Model> model = catalog->model(model_id);
  if (!model) {
    return report_error(kName, model.error());
  }
  Workload w;
  w.requests = requests;
  w.input_tokens = input;
  w.output_tokens = output;
  w.lengths = lengths;
  if (model->max_positions > 0 && w.max_context() > model->max_positions) {
    const std::string what = lengths.empty()
                                 ? fmt::format("{} + {} tokens", input, output)
                                 : fmt::format("the longest request, {} tokens,", w.max_context());
    return usage(
        lengths.empty() ? "--input" : "--lengths",
        fmt::format("{} exceed the {}-token context of {}", what, model->max_positions, model->id),
        "shorten the prompt or the output");
  }
  // An offer gives the GPU, the node, its network and a price per node-hour.
  std::optional<Money> price;
  const Offer* offer = nullptr;
  if (!offer_id.empty()) {
    Result<const Offer*> o = catalog->offer(offer_id);
    if (!o) {
      return report_error(kName, Error{"--offer", o.error().what, o.error().hint});
    }
    offer = *o;
    gpu_id = offer->gpu;
    if (gpus_per_node == 0) {
      gpus_per_node = offer->gpus_per_node;
    }
    if (scale_out.empty()) {
      scale_out = offer->scale_out;
    }
    if (nics_per_node == 0) {
      nics_per_node = offer->nics_per_node;
    }
    if (offer->price_per_node_hour) {
      price = Money{offer->price_per_node_hour->amount / static_cast<double>(offer->gpus_per_node),
                    offer->price_per_node_hour->currency};
    }
  }
  if (!price_text.empty()) {
    Result<Money> given = parse_price(price_text);
    if (!given) {
      return report_error(kName, given.error(), kExitUsage);
    }
    price = *given;
  }
  Result<const Gpu*> gpu = catalog->gpu(gpu_id);
  if (!gpu) {
    return report_error(kName, Error{"--gpu", gpu.error().what, gpu.error().hint});
  }
  base.gpu = *gpu;
  Result<const Fabric*> fabric =
      catalog->fabric(offer != nullptr ? offer->scale_up : (*gpu)->scale_up);
  if (!fabric) {
    return report_error(kName, fabric.error());
  }
  base.scale_up = *fabric;
  base.pp = pp;
  base.gpus_per_node = gpus_per_node > 0
                           ? gpus_per_node
                           : ((*gpu)->scale_up_domain > 1 ? (*gpu)->scale_up_domain : max_tp);
  base.nics_per_node = nics_per_node;
  if (!scale_out.empty()) {
    Result<const Fabric*> out = catalog->fabric(scale_out);
    if (!out) {
      return report_error(kName, Error{"--scale-out", out.error().what, out.error().hint});
    }
    base.scale_out = *out;
  }

  w.rate_per_s = rate;
  w.seed = seed;
  w.users = users;
  w.think_time = think_time;
  if (users > 0) {
    w.requests = std::max(requests, 4 * users);  // several requests per user
  }
  const bool closed = users > 0;

  // Evaluate each tensor-parallel size: its capacity under the objective (or its offline
  // throughput), per GPU.
  std::vector<Option> options;
  // Without --tp: powers of two up to the GPU's NVLink domain, or up to --max-tp cards over
  // PCIe, and never past the node (an offer's, or --gpus-per-node).
  const int64_t widest =
      std::min((*gpu)->scale_up_domain > 1 ? (*gpu)->scale_up_domain : max_tp, base.gpus_per_node);
  for (int64_t t = tp > 0 ? tp : 1; t <= (tp > 0 ? tp : widest); t *= 2) {
    Option o;
    o.tp = t;
    o.gpus = t * pp;
    o.name = pp > 1 ? fmt::format("tp {} pp {}", t, pp) : fmt::format("tp {}", t);
    Instance in = base;
    in.tp = t;
    o.model.emplace(*model, in, catalog->memory_params(), catalog->train_params(),
                    catalog->inference_params());
    if (!o.model->feasible()) {
      o.reason = o.model->reason();
    } else {
      ServingSetup one = setup;
      one.replicas = 1;
      Workload open = w;
      open.users = 0;
      const Capacity c = capacity_under_slo(*o.model, open, one, closed ? Slo{} : slo);
      o.offline = c.offline;
      o.amount = c.max_rate_per_s;
      o.reason = c.reason;
      // Steady state: the rate times the mean output.
      o.tokens_per_s = c.max_rate_per_s * mean_output;
      if (closed && c.feasible) {
        const UserCapacity u = users_under_slo(*o.model, w, one, slo);
        o.amount = static_cast<double>(slo.any() ? u.max_users : u.at_once);
        o.reason = u.reason;
        o.tokens_per_s = slo.any() ? u.at_max.output_tokens_per_s : c.offline.output_tokens_per_s;
      }
      o.per_gpu = o.amount / static_cast<double>(o.gpus);
    }
    options.push_back(std::move(o));
    if (tp > 0) {
      break;
    }
  }
  const Option* best = nullptr;
  for (const Option& o : options) {
    if (o.reason.empty() && (best == nullptr || o.per_gpu > best->per_gpu * 1.0000001)) {
      best = &o;
    }
  }

  const std::string per_request =
      lengths.empty()
          ? fmt::format("{} -> {} tokens per request", input, output)
          : fmt::format("request lengths from {} ({} lines, means {} -> {} tokens, longest {})",
                        lengths_file, lengths.size(), input, output, w.max_context());
  const std::string what =
      fmt::format("{} on {}, {} weights, {} KV cache, {}", model->id, (*gpu)->id,
                  precision_name(base.precision), precision_name(base.kv_precision), per_request);
  const std::string load_text =
      closed
          ? fmt::format("{} users in a closed loop{}", users,
                        think.empty() ? "" : ", " + ms(think_time.si()) + " of thinking on average")
      : static_batch > 0 ? fmt::format("static batches of {}", static_batch)
      : rate > 0         ? fmt::format("Poisson arrivals at {:.4g} requests/s", rate)
                         : std::string("every request queued at once (offline)");
  const char* unit = closed ? "users" : "requests/s";

  std::optional<ServingResult> run;
  std::optional<Fleet> fleet;
  if (best != nullptr) {
    run = simulate_serving(*best->model, w, setup);
    if (target_rate > 0 || target_users > 0) {
      fleet = size_fleet(*best->model, w, setup, slo, best->amount,
                         closed ? static_cast<double>(target_users) : target_rate);
    }
  }

  if (json) {
    JsonWriter j;
    j.begin_object()
        .field("model", model->id)
        .field("gpu", (*gpu)->id)
        .field("precision", std::string(precision_name(base.precision)))
        .field("kv_precision", std::string(precision_name(base.kv_precision)))
        .field("input_tokens", input)
        .field("output_tokens", output)
        .field("load", closed             ? "closed_loop"
                       : static_batch > 0 ? "static_batch"
                       : rate > 0         ? "poisson"
                                          : "offline")
        .field("rate_per_s", rate)
        .field("static_batch", static_batch)
        .field("users", users)
        .field("think_s", think_time.si())
        .field("requests", w.requests);
    if (slo.ttft_p99) {
      j.field("slo_ttft_p99_s", slo.ttft_p99->si());
    }
    if (slo.tpot_p99) {
      j.field("slo_tpot_p99_s", slo.tpot_p99->si());
    }
    j.key("options").begin_array();
    for (const Option& o : options) {
      j.begin_object().field("tp", o.tp).field("pp", pp).field("feasible", o.reason.empty());
      if (!o.reason.empty()) {
        j.field("reason", o.reason);
      }
      if (o.model->feasible()) {
        j.field("weights_per_gpu_bytes", o.model->weights_per_gpu().si())
            .field("kv_cache_per_gpu_bytes", o.model->kv_budget_per_gpu().si())
            .field("kv_tokens", o.model->kv_tokens())
            .field("ttft_floor_s", o.model->prefill_alone(input).si())
            .field("tpot_floor_s", o.model->decode_step(1, static_cast<double>(input)).si());
      }
      if (o.reason.empty()) {
        j.field(closed ? "capacity_users" : "capacity_requests_per_s", o.amount)
            .field(closed ? "capacity_users_per_gpu" : "capacity_requests_per_s_per_gpu", o.per_gpu)
            .field("offline_output_tokens_per_s", o.offline.output_tokens_per_s);
      }
      j.end_object();
    }
    j.end_array();
    if (best != nullptr) {
      j.field("chosen_tp", best->tp).field("pp", pp).field("replicas", setup.replicas);
      j.field("capacity_output_tokens_per_s", best->tokens_per_s);
      if (price) {
        const Costs k = costs(*price, *best, fleet ? fleet->replicas : 0);
        j.key("cost")
            .begin_object()
            .field("currency", price->currency)
            .field("per_gpu_hour", price->amount)
            .field("instance_per_hour", k.instance_hour)
            .field("per_million_output_tokens", k.per_million);
        if (fleet) {
          j.field("fleet_per_month", k.fleet_month);
        }
        j.end_object();
      }
      write_result(j, "simulation", *run);
      if (fleet) {
        j.key("fleet")
            .begin_object()
            .field(closed ? "target_users" : "target_requests_per_s",
                   closed ? static_cast<double>(target_users) : target_rate)
            .field("replicas", fleet->replicas)
            .field("gpus", fleet->replicas * best->gpus)
            .field("meets_objective", fleet->met);
        write_result(j, "simulation", fleet->result);
        j.end_object();
      }
    } else {
      j.key("chosen_tp").null();
    }
    j.end_object();
    fmt::print("{}", j.str());
    return kExitOk;
  }

  fmt::print("serve {}\n\n", what);
  const std::string capacity_text =
      closed ? (slo.any() ? "capacity: the most concurrent users with " + slo_text(slo)
                          : "users: the sequences one instance runs at once")
             : (slo.any() ? "capacity: the highest Poisson rate with " + slo_text(slo)
                          : "req/s: every request queued at once");
  fmt::print("instances, one per tensor-parallel size ({})\n", capacity_text);
  const std::string amount_head = closed ? (slo.any() ? "capacity (users)" : "users")
                                         : (slo.any() ? "capacity (req/s)" : "req/s");
  Table t(
      {pp > 1 ? "tp x pp" : "tp", "weights/GPU", "KV cache/GPU", "requests in KV", "TTFT floor",
       "TPOT floor", "offline tok/s", amount_head, closed ? "users per GPU" : "req/s per GPU", ""},
      {true, true, true, true, true, true, true, true, true, false});
  std::vector<std::string> problems;
  for (const Option& o : options) {
    if (!o.model->feasible()) {
      t.add({cell(o), "-", "-", "-", "-", "-", "-", "-", "-", "cannot serve"});
      problems.push_back(fmt::format("{} cannot serve: {}", o.name, o.reason));
      continue;
    }
    const InferenceModel& m = *o.model;
    std::vector<std::string> row = {
        cell(o),
        gib(m.weights_per_gpu()),
        gib(m.kv_budget_per_gpu()),
        grouped(static_cast<int64_t>(static_cast<double>(m.kv_tokens()) / w.mean_context())),
        ms(m.prefill_alone(input).si()),
        ms(m.decode_step(1, static_cast<double>(input)).si())};
    if (o.reason.empty()) {
      row.push_back(grouped(std::llround(o.offline.output_tokens_per_s)));
      row.push_back(closed ? grouped(std::llround(o.amount)) : fmt::format("{:.2f}", o.amount));
      row.push_back(closed ? fmt::format("{:.1f}", o.per_gpu) : fmt::format("{:.2f}", o.per_gpu));
      row.push_back(&o == best && options.size() > 1 ? "<- best per GPU" : "");
    } else {
      row.insert(row.end(), {"-", "-", "-", "cannot serve"});
      problems.push_back(fmt::format("{} cannot serve: {}", o.name, o.reason));
    }
    t.add(row);
  }
  fmt::print("{}", t.str());
  for (const std::string& line : problems) {
    fmt::print("  {}\n", line);
  }
  fmt::print(
      "TTFT floor: one prompt alone. TPOT floor: one sequence decoding. The engine runs at most "
      "{} sequences and {} tokens per iteration (data/params).\n",
      catalog->inference_params().max_batch, catalog->memory_params().inference_chunk_tokens);
  if (best == nullptr) {
    fmt::print("\nanswer  {} cannot serve this on {}.\n", model->id, (*gpu)->id);
    return kExitOk;
  }
  fmt::print("\nsimulation  {}, {} replica(s) ({}), {}, {} requests\n", best->name, setup.replicas,
             balancer_name(setup.balancer), load_text, w.requests);
  print_result(*run, "  ");
  if (slo.any()) {
    std::string why;
    fmt::print("  objective   {}: {}\n", slo_text(slo),
               meets_slo(*run, slo, &why) ? "met" : "missed, " + why);
  }
  const double target = closed ? static_cast<double>(target_users) : target_rate;
  if (fleet) {
    fmt::print("\nfleet  {:.4g} {} within {} need {} replicas of {} = {} x {}{}\n", target, unit,
               slo_text(slo), fleet->replicas, best->name, fleet->replicas * best->gpus, (*gpu)->id,
               fleet->met ? "" : " (not met even with these: the objective is too tight)");
    print_result(fleet->result, "  ");
  }
  const std::string tokens =
      fmt::format(" ({} output tokens/s)", grouped(std::llround(best->tokens_per_s)));
  fmt::print(
      "\nanswer  one instance ({}) {} {:.3g} {}{}{}; {}\n", best->name, closed ? "holds" : "serves",
      best->amount, unit, slo.any() ? " within " + slo_text(slo) : " at most", tokens,
      fleet ? fmt::format("{:.4g} {} take {} GPUs.", target, unit, fleet->replicas * best->gpus)
            : fmt::format("add {} to size a fleet.", closed ? "--target-users" : "--target-rate"));
  if (price) {
    const Costs k = costs(*price, *best, fleet ? fleet->replicas : 0);
    fmt::print(
        "cost    at {:.4g} {} per GPU-hour: an instance {:.2f} {}/h, {:.3g} {} per million output "
        "tokens at that load{}\n",
        price->amount, price->currency, k.instance_hour, price->currency, k.per_million,
        price->currency,
        fleet ? fmt::format(", the fleet {} {} per month", grouped(std::llround(k.fleet_month)),
                            price->currency)
              : "");
  } else if (offer != nullptr) {
    fmt::print("cost    {} has no public price: give --price VALUE/h per GPU\n", offer->id);
  }
  return kExitOk;
}

}  // namespace gpuplan::cli
