// gpuplan serve MODEL (--gpu ID | --offer ID) (--input N --output N | --lengths FILE)
// [--rate R | --users N | --static-batch B] [--tp N --pp N] [--slo-ttft T --slo-tpot T]
// [--target-rate R | --target-users N] : serving capacity of one instance and of a fleet, from
// the iteration-time model and the discrete-event simulation (serving.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <tuple>

#include "command.h"
#include "flags.h"
#include "gpuplan/machines.h"
#include "html.h"
#include "quantity_flags.h"
#include "report.h"
#include "serve_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "serve";

// The simulation keeps every request in memory (~100 bytes each).
constexpr int64_t kMostRequests = static_cast<int64_t>(fields::kRequests.max);
// Loads one sweep simulates.
constexpr size_t kMostSweepLoads = 32;

int usage(const std::string& flag, const std::string& what, const std::string& hint) {
  return report_error(kName, Error{flag, what, hint}, kExitUsage);
}

struct ServeFlags {
  std::string model, gpu, offer, price, lengths, precision, kv_precision;
  std::string dataset, input_dist, output_dist;
  double input_sd = -1, output_sd = -1;
  std::string balancer = "least-loaded", kv_policy, engine, slo_ttft, slo_tpot, think, scale_out,
              data, profile;
  int64_t tp = 0, pp = 0, max_tp = 8, gpus_per_node = 0, nics_per_node = 0;
  int64_t input = 0, output = 0, static_batch = 0, requests = 0, replicas = 1;
  int64_t users = 0, target_users = 0;  // users: the first of users_list
  double rate = 0, target_rate = 0;     // rate: the first of rates
  double prefix_hit = 0;
  int64_t beams = 0;  // 0: the data set's, else 1
  int64_t disaggregate = 0;
  std::vector<double> rates;  // more than one: a sweep
  std::vector<int64_t> users_list;
  uint64_t seed = 1;
  bool json = false;
  ReportFlags out;
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
  app.add_option("--dataset", f.dataset,
                 "request lengths drawn from a benchmark's data set (gpuplan catalog list "
                 "datasets), instead of --input and --output");
  app.add_option("--input-dist", f.input_dist,
                 "prompt lengths drawn from uniform, normal or lognormal, --input the mean");
  app.add_option("--input-sd", f.input_sd, "with --input-dist: the standard deviation, tokens");
  app.add_option("--output-dist", f.output_dist,
                 "output lengths drawn from uniform, normal or lognormal, --output the mean");
  app.add_option("--output-sd", f.output_sd, "with --output-dist: the standard deviation, tokens");
  app.add_option("--beams", f.beams,
                 "beam search: sequences each request decodes side by side, one of them returned "
                 "(default: the data set's, e.g. 4 for mlperf-gptj-cnn-dailymail; else 1)")
      ->check(rule(fields::kBeams));
  app.add_option("--tp", f.tp, "GPUs per instance (tensor parallel); default: try 1, 2, 4, 8")
      ->check(rule(fields::kParallel));
  app.add_option("--pp", f.pp,
                 "pipeline stages per instance (default: 1, or whole-node stages over --scale-out "
                 "for a model one node cannot hold)")
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
  app.add_option("--precision", f.precision,
                 "weights: " + names_help(precision_names(),
                                          "default: the checkpoint's own format where its "
                                          "config.json declares one, else bf16; nvfp4, "
                                          "mxfp4, w4a16 and w8a8 are read as fp4, fp4, int4 "
                                          "and int8; the class of the published format is "
                                          "that format"));
  app.add_option("--kv-precision", f.kv_precision,
                 "KV cache: bf16 or fp8 (default: the engine's; TensorRT-LLM as the weights, "
                 "fp8 with fp4 ones; vLLM, SGLang, TGI and LMDeploy the model's 16 bits; bf16 "
                 "with the checkpoint's own format)");
  app.add_option("--rate", f.rates,
                 "Poisson arrivals, requests/s over all replicas; a list (2,4,8) sweeps the "
                 "loads (default: every request queued at once)")
      ->delimiter(',')
      ->check(rule(fields::kRate));
  app.add_option("--users", f.users_list,
                 "closed loop: concurrent users, each sending its next request when the last "
                 "ends (instead of --rate); a list (50,100,200) sweeps them")
      ->delimiter(',')
      ->check(rule(fields::kUsers));
  app.add_option("--think", f.think, "closed loop: a user's pause between requests, e.g. '5 s'");
  app.add_option("--prefix-hit", f.prefix_hit,
                 "prefix caching: the share of prompt tokens found in the cache, 0 to 1 "
                 "(default 0)")
      ->check(rule(fields::kPrefixHit));
  app.add_option("--disaggregate", f.disaggregate,
                 "also split this many GPUs into prefill and decode pools, the KV cache sent "
                 "between them, and compare with aggregated serving on the same GPUs")
      ->check(rule(fields::kDisaggregateGpus));
  app.add_option("--static-batch", f.static_batch,
                 "static batching: sequences per batch (default: continuous batching)")
      ->check(rule(fields::kBatch));
  app.add_option("--requests", f.requests,
                 "requests to simulate (default: 1000 queued at once; a load (--rate, --users) "
                 "runs until it settles, and with this flag exactly so many)")
      ->check(rule(fields::kRequests));
  app.add_option("--replicas", f.replicas, "instances behind the load balancer (default 1)")
      ->check(rule(fields::kReplicas));
  app.add_option("--balancer", f.balancer,
                 names_help(balancer_names(),
                            "default least-loaded: the instance with the fewest requests; "
                            "least-tokens: the fewest prompt tokens"));
  app.add_option("--engine", f.engine,
                 "serving engine whose defaults apply: an id of gpuplan catalog list engines, "
                 "or ID@RELEASE for an older release's behaviour, e.g. vllm@0.10.0 (default: "
                 "the one the serving parameters were fitted with, named in "
                 "data/params/inference.toml)");
  app.add_option("--kv-policy", f.kv_policy,
                 names_help(kv_policy_names(),
                            "reserve: a request's whole context at admission, as TensorRT-LLM; "
                            "paged: blocks as it grows, preempting when full, as vLLM; "
                            "default: the engine's"));
  app.add_option("--slo-ttft", f.slo_ttft, "objective: p99 time to first token, e.g. '2 s'");
  app.add_option("--slo-tpot", f.slo_tpot, "objective: p99 time per output token, e.g. '50 ms'");
  app.add_option("--target-rate", f.target_rate,
                 "requests/s to serve: size the fleet (needs --slo-ttft or --slo-tpot)")
      ->check(rule(fields::kRate));
  app.add_option("--target-users", f.target_users,
                 "with --users: concurrent users to serve: size the fleet (needs an objective)")
      ->check(rule(fields::kUsers));
  app.add_option("--seed", f.seed, "arrival generator seed (default 1)")
      ->check(rule(fields::kSeed));
  app.add_option("--profile", f.profile, "calibration profile from 'gpuplan calibrate'");
  app.add_option("--data", f.data, "catalog directory");
  app.add_flag("--json", f.json, "print JSON");
  add_report_flags(app, f.out, true);
}

// Flags that contradict each other or are out of range; nullopt when they hold together.
std::optional<int> check_flags(ServeFlags& f) {
  f.rate = f.rates.empty() ? 0 : f.rates.front();
  f.users = f.users_list.empty() ? 0 : f.users_list.front();
  if (f.gpu.empty() == f.offer.empty()) {
    return usage(f.gpu.empty() ? "--gpu" : "--offer",
                 f.gpu.empty() ? "is required" : "give --gpu or --offer, not both",
                 "e.g. --gpu h100-sxm or --offer aws-p5.48xlarge");
  }
  if (!f.lengths.empty() && !f.dataset.empty()) {
    return usage("--dataset", "give --lengths or --dataset, not both", "");
  }
  const bool given = !f.lengths.empty() || !f.dataset.empty();
  if (!given && (f.input < 1 || f.output < 1)) {
    return usage(f.input < 1 ? "--input" : "--output",
                 f.input == 0 || f.output == 0 ? "is required" : "must be at least 1 token",
                 "give --input and --output, or --lengths FILE, or --dataset ID");
  }
  if (given && (f.input != 0 || f.output != 0 || !f.input_dist.empty() || !f.output_dist.empty())) {
    return usage(f.lengths.empty() ? "--dataset" : "--lengths",
                 f.lengths.empty() ? "the data set gives every request's lengths"
                                   : "the file gives every request's lengths",
                 "drop --input, --output and their distributions");
  }
  for (const auto& [flag, dist, sd] : {std::tuple{"--input-sd", &f.input_dist, f.input_sd},
                                       std::tuple{"--output-sd", &f.output_dist, f.output_sd}}) {
    if (dist->empty() != (sd < 0)) {
      return usage(flag, dist->empty() ? "goes with a distribution" : "is required",
                   "give --input-dist KIND --input-sd SD (likewise for the output)");
    }
  }
  // Ranges are the flags' field rules (fields.h); what is left is how the flags combine, and
  // the closed loop's own limit: every user needs several requests simulated.
  if (std::any_of(f.users_list.begin(), f.users_list.end(),
                  [](int64_t u) { return u > kMostRequests / 4; })) {
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
  if (f.disaggregate > 0 && (f.users > 0 || f.static_batch > 0 || f.pp > 1)) {
    return usage("--disaggregate",
                 f.users > 0          ? "the pools are compared on request rates, not users"
                 : f.static_batch > 0 ? "the pools batch continuously"
                                      : "the pools hold one-stage instances",
                 f.users > 0          ? "give --rate (or no load) instead of --users"
                 : f.static_batch > 0 ? "drop --static-batch"
                                      : "drop --pp");
  }
  if (f.rate > 0 && f.static_batch > 0) {
    return usage("--static-batch", "static batching is measured offline",
                 "drop --rate, or drop --static-batch for continuous batching");
  }
  for (const auto& [flag, list] :
       {std::pair{"--rate", f.rates},
        std::pair{"--users", std::vector<double>(f.users_list.begin(), f.users_list.end())}}) {
    if (list.size() > kMostSweepLoads) {
      return usage(flag, fmt::format("at most {} loads in a sweep", kMostSweepLoads),
                   "sweep coarsely first, then closer around the knee");
    }
    if (!std::is_sorted(list.begin(), list.end()) ||
        std::adjacent_find(list.begin(), list.end()) != list.end()) {
      return usage(flag, "the loads of a sweep must rise", "e.g. 2,4,8,16");
    }
  }
  return std::nullopt;
}

// A positive (or, with `zero_ok`, non-negative) duration flag.
Result<std::optional<Seconds>> duration_flag(const char* flag, const std::string& text,
                                             bool zero_ok) {
  if (text.empty()) {
    return std::optional<Seconds>();
  }
  Result<double> d = parse_quantity(text, quantity_flag("serve", std::string_view(flag).substr(2)));
  if (!d) {
    return fail(flag, d.error().what, d.error().hint);
  }
  if (*d < 0 || (*d == 0 && !zero_ok)) {
    return fail(flag, zero_ok ? "cannot be negative" : "must be positive", "");
  }
  return std::optional<Seconds>(Seconds(*d));
}

// Everything that needs no catalog: precisions, objective, load, batching, balancer.
Result<ServeReport> read_flags(const ServeFlags& f) {
  ServeReport a;
  // Applied once the model is known (choose_weights): its checkpoint may set the default.
  if (!f.precision.empty()) {
    Result<Precision> p = parse_precision(f.precision);
    if (!p) {
      return fail("--precision", p.error().what, p.error().hint);
    }
    a.precision_given = *p;
  }
  if (!f.kv_precision.empty()) {
    Result<Precision> k = parse_precision(f.kv_precision);
    if (!k) {
      return fail("--kv-precision", k.error().what, k.error().hint);
    }
    a.kv_precision_given = *k;
  }
  std::optional<Seconds> think;
  GPUPLAN_ASSIGN_OR_RETURN(a.job.slo.ttft_p99, duration_flag("--slo-ttft", f.slo_ttft, false));
  GPUPLAN_ASSIGN_OR_RETURN(a.job.slo.tpot_p99, duration_flag("--slo-tpot", f.slo_tpot, false));
  GPUPLAN_ASSIGN_OR_RETURN(think, duration_flag("--think", f.think, true));
  if ((f.target_rate > 0 || f.target_users > 0) && !a.job.slo.any()) {
    return fail(f.target_rate > 0 ? "--target-rate" : "--target-users",
                "sizing a fleet needs a latency objective", "add --slo-ttft and/or --slo-tpot");
  }
  Result<Balancer> b = parse_balancer(f.balancer);
  if (!b) {
    return fail("--balancer", b.error().what, b.error().hint);
  }
  a.job.setup.balancer = *b;
  if (!f.kv_policy.empty()) {
    Result<KvPolicy> kv = parse_kv_policy(f.kv_policy);
    if (!kv) {
      return fail("--kv-policy", kv.error().what, kv.error().hint);
    }
    a.job.setup.kv_policy = *kv;
    if (*kv == KvPolicy::kPaged && f.static_batch > 0) {
      return fail("--kv-policy", "a paged cache applies to continuous batching",
                  "drop --static-batch or --kv-policy");
    }
  }
  a.job.setup.replicas = f.replicas;
  if (f.static_batch > 0) {
    a.job.setup.batching = Batching::kStatic;
    a.job.setup.static_batch = f.static_batch;
  }
  Workload& w = a.job.workload;
  if (f.requests > 0) {  // given: exactly so many (ServeJob::settle_run)
    w.requests = f.requests;
    a.job.settle_run = false;
  }
  w.input_tokens = f.input;
  w.output_tokens = f.output;
  w.rate_per_s = f.rate;
  w.seed = f.seed;
  w.users = f.users;
  w.think_time = think.value_or(Seconds(0));
  w.prefix_hit = f.prefix_hit;
  a.input = f.input;
  a.output = f.output;
  const Lang lang = f.out.lang;
  a.lang = lang;
  a.per_request =
      say(lang, "{} -> {} tokens per request", "{} -> {} tokens por requisição", f.input, f.output);
  a.job.target = f.users > 0 ? static_cast<double>(f.target_users) : f.target_rate;
  a.job.disaggregate_gpus = f.disaggregate;
  if (f.rates.size() > 1 || f.users_list.size() > 1) {
    // A sweep: each load simulated in turn, in place of one run.
    a.job.sweep =
        f.users > 0 ? std::vector<double>(f.users_list.begin(), f.users_list.end()) : f.rates;
    a.job.simulate_load = false;
  }
  a.load_kind = f.users > 0          ? "closed_loop"
                : f.static_batch > 0 ? "static_batch"
                : f.rate > 0         ? "poisson"
                                     : "offline";
  const std::string thinking = think ? say(lang, ", {} s of thinking on average",
                                           ", {} s pensando em média", number(think->si(), 2, lang))
                                     : std::string();
  a.load = f.users > 0 ? say(lang, "{} users in a closed loop{}", "{} usuários em ciclo fechado{}",
                             f.users, thinking)
           : f.static_batch > 0
               ? say(lang, "static batches of {}", "lotes estáticos de {}", f.static_batch)
           : f.rate > 0 ? say(lang, "Poisson arrivals at {} requests/s",
                              "chegadas de Poisson a {} requisições/s",
                              lang == Lang::kEn ? fmt::format("{:.4g}", f.rate)
                                                : number(f.rate, f.rate < 10 ? 2 : 1, lang))
                        : std::string(tr(lang, "every request queued at once (offline)",
                                         "todas as requisições na fila de uma vez (offline)"));
  return a;
}

// Request lengths from a data set or drawn from distributions: the answer shows the means.
Result<bool> read_distributions(const ServeFlags& f, const Catalog& c, ServeReport& a) {
  Workload& w = a.job.workload;
  if (!f.dataset.empty()) {
    Result<const Dataset*> d = c.dataset(f.dataset);
    if (!d) {
      return fail("--dataset", d.error().what, d.error().hint);
    }
    w.input_distribution = (*d)->input;
    w.output_distribution = (*d)->output;
    w.beams = (*d)->beams;
  }
  if (!f.input_dist.empty()) {
    GPUPLAN_ASSIGN_OR_RETURN(
        w.input_distribution,
        parametric_lengths(f.input_dist, static_cast<double>(f.input), f.input_sd, "--input-dist"));
  }
  if (!f.output_dist.empty()) {
    GPUPLAN_ASSIGN_OR_RETURN(w.output_distribution,
                             parametric_lengths(f.output_dist, static_cast<double>(f.output),
                                                f.output_sd, "--output-dist"));
  }
  if (!w.input_distribution && !w.output_distribution) {
    return true;
  }
  a.input = std::llround(w.mean_input());
  a.output = std::llround(w.mean_output());
  const std::string from = f.dataset.empty()
                               ? say(f.out.lang, "drawn lengths", "tamanhos sorteados")
                               : say(f.out.lang, "lengths from {}", "tamanhos de {}", f.dataset);
  a.per_request =
      say(f.out.lang, "{} (means {} -> {} tokens, longest {})",
          "{} (médias {} -> {} tokens, maior {})", from, a.input, a.output, w.max_context());
  return true;
}

// Request lengths from a trace: the workload takes them in turn; the answer shows the means.
Result<bool> read_lengths(const ServeFlags& f, ServeReport& a) {
  if (f.lengths.empty()) {
    return true;
  }
  GPUPLAN_ASSIGN_OR_RETURN(a.job.workload.lengths, load_request_lengths(f.lengths));
  const Workload& w = a.job.workload;
  a.input = std::llround(w.mean_input());
  a.output = std::llround(w.mean_output());
  a.per_request =
      say(f.out.lang, "request lengths from {} ({} lines, means {} -> {} tokens, longest {})",
          "tamanhos das requisições de {} ({} linhas, médias {} -> {} tokens, maior {})", f.lengths,
          w.lengths.size(), a.input, a.output, w.max_context());
  return true;
}

// The hardware: a GPU with its usual node, or an offer's GPU, node, network and price
// (machines.h); the flags override either.
Result<bool> read_hardware(const ServeFlags& f, const Catalog& c, ServeReport& a) {
  Instance& in = a.job.base;
  if (!f.offer.empty()) {
    Result<const Offer*> o = c.offer(f.offer);
    if (!o) {
      return fail("--offer", o.error().what, o.error().hint);
    }
    a.offer = *o;
    in = offer_instance(c, *a.offer);  // the weights are chosen with the engine (choose_weights)
    a.price = offer_gpu_price(*a.offer);
  } else {
    Result<const Gpu*> gpu = c.gpu(f.gpu);
    if (!gpu) {
      return fail("--gpu", gpu.error().what, gpu.error().hint);
    }
    in.gpu = *gpu;
    GPUPLAN_ASSIGN_OR_RETURN(in.scale_up, c.fabric(in.gpu->scale_up));
  }
  a.gpu = in.gpu;
  if (!f.price.empty()) {
    GPUPLAN_ASSIGN_OR_RETURN(a.price, parse_price(f.price));
  }
  if (!f.scale_out.empty()) {
    Result<const Fabric*> out = c.fabric(f.scale_out);
    if (!out) {
      return fail("--scale-out", out.error().what, out.error().hint);
    }
    in.scale_out = *out;
  }
  in.gpus_per_node = f.gpus_per_node > 0 ? f.gpus_per_node : in.gpus_per_node;  // 0: serve's
  in.nics_per_node = f.nics_per_node > 0 ? f.nics_per_node : in.nics_per_node;
  a.job.pp = f.pp;
  a.job.tp = f.tp;
  a.job.max_tp = f.max_tp;
  return true;
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
  if (std::optional<int> status = finish_report_flags(f.out, f.json, kName)) {
    return *status;
  }
  if (std::optional<int> status = check_flags(f)) {
    return *status;
  }
  Result<ServeReport> read = read_flags(f);
  if (!read) {
    return report_error(kName, read.error(), kExitUsage);
  }
  ServeReport a = std::move(*read);
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
  if (Result<bool> d = read_distributions(f, *catalog, a); !d) {
    return report_error(kName, d.error(), kExitUsage);
  }
  if (Result<int64_t> c = check_context(*model, a.job.workload.max_context(),
                                        !f.lengths.empty()   ? "--lengths"
                                        : !f.dataset.empty() ? "--dataset"
                                                             : "--input + --output");
      !c) {
    return report_error(kName, c.error(), kExitUsage);
  }
  if (Result<bool> h = read_hardware(f, *catalog, a); !h) {
    return report_error(kName, h.error(), h.error().where == "--price" ? kExitUsage : kExitError);
  }
  if (f.beams > 0) {
    a.job.workload.beams = f.beams;
  }
  if (a.job.workload.beams > 1) {
    a.per_request += say(f.out.lang, ", {} beams per request", ", {} feixes por requisição",
                         a.job.workload.beams);
  }
  if (f.prefix_hit > 0) {
    a.per_request += say(f.out.lang, ", {} % of prompt tokens from the prefix cache",
                         ", {} % dos tokens do prompt vindos do cache de prefixos",
                         number(f.prefix_hit * 100, 0, f.out.lang));
  }
  if (!f.out.html.empty()) {
    a.job.curve_points = kCurvePoints;
  }
  // The engine's limits on this GPU; its KV policy unless --kv-policy says otherwise.
  const Result<EngineChoice> choice = catalog->engine_choice(f.engine);
  if (!choice) {
    return report_error(kName, Error{"--engine", choice.error().what, choice.error().hint},
                        kExitUsage);
  }
  const EngineProfile* engine = choice->profile;
  const EngineSettings es = engine_settings(*engine, *a.gpu, catalog->inference_params(),
                                            catalog->memory_params(), choice->release);
  if (f.kv_policy.empty() && f.static_batch == 0) {
    a.job.setup.kv_policy = es.kv_policy;
  }
  a.engine = engine;
  a.engine_release = choice->release;
  a.host_time_fitted = es.host_time_fitted;
  a.fit_architectures = es.inference.fitted_architectures;
  a.fit_covers_gpu = serving_fit_note(*a.gpu, es.inference).empty();
  // The weights as given or published, and the KV cache the engine keeps for them.
  const WeightChoice weights = choose_weights(*model, Task::kInfer, a.precision_given,
                                              a.kv_precision_given, engine->kv_cache);
  a.job.base.precision = weights.precision;
  a.job.base.kv_precision = weights.kv_precision;
  a.job.base.as_released = weights.as_released;
  a.weights = weights_name(*model, weights.precision, weights.as_released);
  a.weights_note = unread_format_note(*model, Task::kInfer, a.precision_given.has_value());
  a.caveats = serving_caveats(*a.gpu, a.job.base.precision, es.inference);
  a.answer = serve(*model, a.job, es.memory, catalog->train_params(), es.inference);
  if (!f.out.html.empty()) {
    if (Result<bool> w = write_html_file(f.out.html, serve_html(a)); !w)
      return report_error(kName, w.error());
  }
  if (f.json) {
    print_serve_json(a);
  } else if (f.out.csv) {
    print_serve_csv(a);
  } else {
    print_serve_text(a);
  }
  return kExitOk;
}

}  // namespace gpuplan::cli
