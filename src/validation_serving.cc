// Inference rows of a validation file, run through the serving model (serving.h): the row's
// model, GPU, tp and pp, precisions, request lengths and load become one simulation, and each
// published metric is compared with the simulation's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>

#include "gpuplan/memory.h"
#include "gpuplan/model_loader.h"
#include "gpuplan/serving.h"
#include "validation_rows.h"

namespace gpuplan::detail {
namespace {

// The value of a serving metric the validation format names, in its unit; nullopt for a
// metric gpuplan does not predict.
std::optional<double> serving_metric(const ServingResult& r, const std::string& name) {
  if (name == "output_tokens_per_s") {
    return r.output_tokens_per_s;
  }
  if (name == "requests_per_s") {
    return r.requests_per_s;
  }
  if (name == "itl_ms_mean") {
    return r.itl_mean * 1e3;
  }
  // ttft_ms_*, tpot_ms_* and e2e_s_* with a statistic: mean, p50, p90 or p99.
  const struct {
    std::string_view prefix;
    const Percentiles* of;
    double scale;
  } kinds[] = {{"ttft_ms_", &r.ttft, 1e3}, {"tpot_ms_", &r.tpot, 1e3}, {"e2e_s_", &r.e2e, 1.0}};
  for (const auto& k : kinds) {
    if (!name.starts_with(k.prefix)) {
      continue;
    }
    const std::string_view stat = std::string_view(name).substr(k.prefix.size());
    const Percentiles& p = *k.of;
    for (const auto& [label, value] : {std::pair{"mean", p.mean}, std::pair{"p50", p.p50},
                                       std::pair{"p90", p.p90}, std::pair{"p99", p.p99}}) {
      if (stat == label) {
        return value * k.scale;
      }
    }
  }
  return std::nullopt;
}

// A serving row's simulation, and the rate its instances sustain with every request queued at
// once in their steady state (Capacity::offline; requests/s), which tells a run that kept up from
// a saturated one.
struct RowSimulation {
  ServingResult result;
  bool growing = false;  // a Poisson row's runs did not settle: its queue grows (SettledResult)
  double ceiling = 0;
  std::string note;  // the layout gpuplan picked where the row publishes none
};

// Fills in the one size of tp x pp x replicas = gpus a row left null, from the others; pp null
// with tp or replicas null too is one stage, and tp and replicas both null stay 0 (each
// prediction picks them). Returns how a size was derived ("" when none was), or an Error when
// the row's GPUs cannot hold the sizes it gives.
Result<std::string> complete_layout(int64_t& tp, int64_t& pp, int64_t& replicas, int64_t gpus,
                                    const std::string& where) {
  const auto share = [&](int64_t given, const char* name, int64_t& out) -> Result<bool> {
    if (given == 0 || gpus % given != 0) {
      return fail(where,
                  fmt::format("serving {} is null, and the other sizes ({}) do not divide the "
                              "row's {} GPUs",
                              name, given, gpus),
                  "give tp, pp and replicas whose product is system.gpus");
    }
    out = gpus / given;
    return true;
  };
  std::string note;
  if (pp == 0 && tp > 0 && replicas > 0) {
    GPUPLAN_RETURN_IF_ERROR(share(tp * replicas, "pp", pp));
    note = fmt::format("pp not published: {} GPUs / (tp {} x {} replicas) = pp {}", gpus, tp,
                       replicas, pp);
  } else if (pp == 0) {
    pp = 1;
    note = "pp not published: 1";
  }
  if (tp == 0 && replicas > 0) {
    GPUPLAN_RETURN_IF_ERROR(share(pp * replicas, "tp", tp));
    add_note(note, fmt::format("tp not published: {} GPUs / (pp {} x {} replicas) = tp {}", gpus,
                               pp, replicas, tp));
  } else if (replicas == 0 && tp > 0) {
    GPUPLAN_RETURN_IF_ERROR(share(tp * pp, "replicas", replicas));
    add_note(note, fmt::format("replicas not published: {} GPUs / (tp {} x pp {}) = {}", gpus, tp,
                               pp, replicas));
  }
  return note;
}

// Reads the row's serving block into `out`; an Error is a block gpuplan cannot read (naming the
// row and key) or a model, data set or engine the catalog does not have, either of which makes
// the row unpredictable.
Result<bool> read_serving(const RowReader& r, const Json& row, const Catalog& catalog,
                          ServingRow& out) {
  const Json* model_json = nullptr;
  const Json* sys = nullptr;
  const Json* srv = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(model_json, r.object("model"));
  GPUPLAN_ASSIGN_OR_RETURN(sys, r.object("system"));
  GPUPLAN_ASSIGN_OR_RETURN(srv, r.object("serving"));
  Instance& in = out.instance;
  ServingSetup& setup = out.setup;
  Workload& w = out.workload;
  // tp and replicas null: the layout was not published; gpuplan picks one for the row's GPUs.
  // One of tp, pp and replicas null is what the row's GPUs leave once the others are given.
  int64_t pp = 0;
  GPUPLAN_ASSIGN_OR_RETURN(in.tp, r.count(*srv, "tp", true));
  GPUPLAN_ASSIGN_OR_RETURN(pp, r.count(*srv, "pp", true));
  GPUPLAN_ASSIGN_OR_RETURN(setup.replicas, r.count(*srv, "replicas", true));
  for (const char* key : {"tp", "pp", "replicas"}) {
    if (srv->contains(key) && (*srv)[key].is_number() && (*srv)[key].get<double>() == 0) {
      return fail(r.where(), fmt::format("serving.{} is 0", key),
                  "a size is >= 1, or null where the source does not give it");
    }
  }
  int64_t gpus = 0;
  {
    const RowReader s(*sys, r.where() + " system");
    GPUPLAN_ASSIGN_OR_RETURN(gpus, s.count(*sys, "gpus"));
  }
  GPUPLAN_ASSIGN_OR_RETURN(out.layout_note,
                           complete_layout(in.tp, pp, setup.replicas, gpus, r.where()));
  // The row's engine, by the name its source gives it: its limits on the row's GPU, its KV
  // policy and the KV cache it keeps when the row names none. An engine no profile names runs
  // as the default engine, the one the serving parameters were fitted with, and the row says so.
  const std::string engine_text = text_or(row, "engine", "");
  out.engine = catalog.engine_named(engine_text);
  if (out.engine == nullptr) {
    out.engine = &catalog.default_engine();
    add_note(out.layout_note,
             fmt::format("no engine profile (data/engines) names '{}': modelled as {}, the "
                         "engine the serving parameters were fitted with",
                         engine_text, out.engine->id));
  } else {
    out.engine_version = out.engine->published_version(engine_text);
  }
  GPUPLAN_ASSIGN_OR_RETURN(out.model, parse_model_config(model_json->dump(), "model", out.id));
  std::string text;
  std::optional<Precision> weights, kv;
  for (auto [key, target] : {std::pair{"precision", &weights}, std::pair{"kv_precision", &kv}}) {
    if (target == &kv && (!srv->contains(key) || (*srv)[key].is_null())) {
      continue;  // not published: the engine's cache for those weights (choose_weights)
    }
    GPUPLAN_ASSIGN_OR_RETURN(text, r.text(*srv, key));
    Result<Precision> p = parse_precision(text);
    if (!p) {
      return fail(r.where(), fmt::format("serving.{}: {}", key, p.error().what), p.error().hint);
    }
    *target = *p;
  }
  // The rule every front end uses: gpt-oss's "fp4" is its published MXFP4 checkpoint.
  const WeightChoice chosen =
      choose_weights(out.model, Task::kInfer, weights, kv, out.engine->kv_cache);
  in.precision = chosen.precision;
  in.kv_precision = chosen.kv_precision;
  in.as_released = chosen.as_released;
  if (!kv) {
    add_note(out.layout_note,
             fmt::format("kv_precision not published: {}", precision_name(in.kv_precision)));
  }
  GPUPLAN_ASSIGN_OR_RETURN(w.input_tokens, r.count(*srv, "input_tokens", true));
  GPUPLAN_ASSIGN_OR_RETURN(w.output_tokens, r.count(*srv, "output_tokens", true));
  const Json* load = nullptr;
  {
    const RowReader s(*srv, r.where() + " serving");
    GPUPLAN_ASSIGN_OR_RETURN(load, s.object("load"));
  }
  GPUPLAN_ASSIGN_OR_RETURN(text, r.text(*load, "kind"));
  if (text == "poisson") {
    if (!load->contains("rate_per_s") || !(*load)["rate_per_s"].is_number() ||
        (*load)["rate_per_s"].get<double>() <= 0) {
      return fail(r.where(), "load.rate_per_s must be a positive number", "requests per second");
    }
    w.rate_per_s = (*load)["rate_per_s"].get<double>();
  } else if (text == "static_batch") {
    setup.batching = Batching::kStatic;
    GPUPLAN_ASSIGN_OR_RETURN(setup.static_batch, r.count(*load, "batch"));
    if (setup.static_batch == 0) {
      return fail(r.where(), "load.batch must be >= 1", "");
    }
  } else if (text != "offline") {
    return fail(r.where(), fmt::format("load.kind '{}' is unknown", text),
                "expected 'offline', 'poisson' or 'static_batch'");
  }
  Cluster cluster;
  bool nics_assumed = false;
  GPUPLAN_ASSIGN_OR_RETURN(cluster, row_cluster(r, *sys, catalog, &nics_assumed));
  if (nics_assumed) {
    add_note(out.layout_note, nics_note(cluster));
  }
  // The benchmark's data set (serving.dataset), whose lengths the catalog has.
  const std::string dataset = text_or(*srv, "dataset", "");
  if (w.input_tokens == 0 || w.output_tokens == 0) {
    if (dataset.empty()) {
      return fail("",
                  "the source gives the request lengths only as a distribution and names no "
                  "data set");
    }
    const Dataset* d = nullptr;
    GPUPLAN_ASSIGN_OR_RETURN(d, catalog.dataset(dataset));
    if (w.input_tokens == 0) {
      w.input_distribution = d->input;
    }
    if (w.output_tokens == 0) {
      w.output_distribution = d->output;
    }
    w.beams = d->beams;  // the benchmark's decoding (MLPerf GPT-J: beam search of 4)
  }
  // A serving client measured the row: it sent Poisson arrivals, or it timed latencies with
  // every request queued at once. An offline row of throughput alone comes from a throughput
  // benchmark sized to reach the steady state, and a row naming a data set from MLPerf's LoadGen
  // (at least ten minutes): those keep the steady state.
  const bool latencies = std::ranges::any_of(out.metrics, [](const ServingMetric& m) {
    return !m.name.starts_with("output_tokens") && !m.name.starts_with("requests");
  });
  if ((latencies || w.rate_per_s > 0) && dataset.empty() &&
      setup.batching == Batching::kContinuous && out.engine->benchmark_requests) {
    out.benchmark_requests = *out.engine->benchmark_requests;
    add_note(out.layout_note,
             fmt::format("a run of {} requests, all measured: the length of {}'s serving "
                         "benchmark (the row gives none)",
                         out.benchmark_requests, out.engine->id));
  }
  in.gpu = cluster.gpu;
  in.scale_up = cluster.scale_up;
  in.pp = pp;
  in.gpus_per_node = cluster.gpus_per_node;
  in.scale_out = cluster.scale_out;
  in.nics_per_node = cluster.nics_per_node;
  out.gpus = cluster.gpus;
  return true;
}

// Why a serving row cannot be simulated with `params`, or its simulation.
std::variant<std::string, RowSimulation> simulate_row(const ServingRow& row, const Catalog& catalog,
                                                      const InferenceParams& params) {
  using Outcome = std::variant<std::string, RowSimulation>;
  const EngineSettings es = engine_settings(*row.engine, *row.instance.gpu, params,
                                            catalog.memory_params(), row.engine_version);
  Instance in = row.instance;
  ServingSetup setup = row.setup;
  Workload w = row.workload;
  if (setup.batching != Batching::kStatic) {
    setup.kv_policy = es.kv_policy;
  }
  RowSimulation sim;
  sim.note = row.layout_note;
  if (in.tp == 0) {
    // The layout that serves the most offline on the row's GPUs: tp a power of two within a
    // node, as many replicas as the GPUs hold.
    double best = -1;
    const int64_t per_node = in.gpus_per_node;
    for (int64_t tp = 1; tp * in.pp <= row.gpus && tp <= per_node; tp *= 2) {
      Instance candidate = in;
      candidate.tp = tp;
      const InferenceModel trial(row.model, candidate, es.memory, catalog.train_params(),
                                 es.inference);
      if (!trial.feasible() || !kv_too_small(trial, w).en.empty()) {
        continue;
      }
      ServingSetup s = setup;
      s.replicas = row.gpus / (tp * in.pp);
      Workload offline = w;
      offline.rate_per_s = 0;
      offline.requests = offline_requests(sequences_at_once(trial, w, s));
      const double rate = simulate_serving(trial, offline, s).requests_per_s;
      if (rate > best) {
        best = rate;
        in.tp = tp;
        setup.replicas = s.replicas;
      }
    }
    if (in.tp == 0) {
      return Outcome(std::string("no layout of the row's GPUs can serve it"));
    }
    add_note(sim.note,
             fmt::format("layout not published: tp {} x {} replicas picked, the most offline "
                         "throughput",
                         in.tp, setup.replicas));
  }
  const InferenceModel m(row.model, in, es.memory, catalog.train_params(), es.inference);
  if (!m.feasible()) {
    return Outcome(m.reason().en);
  }
  if (row.benchmark_requests > 0) {
    // The benchmark as its client ran it: its requests, each one measured.
    w.requests = row.benchmark_requests;
    w.warmup = 0;
    w.cooldown = 0;
    sim.result = simulate_serving(m, w, setup);
    if (!sim.result.feasible) {
      return Outcome(sim.result.reason.en);
    }
    return Outcome(std::move(sim));
  }
  // Enough requests for the steady state to dominate: a static batch is measured once; an
  // offline run queues eight times what the instances hold at once.
  if (setup.batching == Batching::kStatic) {
    w.requests = setup.static_batch * setup.replicas;
  } else if (w.rate_per_s <= 0) {
    w.requests = offline_requests(sequences_at_once(m, w, setup));
  }
  // A Poisson row is measured in its steady state (serving.h, SteadyState): a benchmark's
  // fill-up and drain are not what it reports.
  SettledResult settled = simulate_settled(m, w, setup);
  sim.result = std::move(settled.result);
  sim.growing = settled.growing;
  if (!sim.result.feasible) {
    return Outcome(sim.result.reason.en);
  }
  if (w.rate_per_s > 0) {
    // The capacity a Poisson load is held against: the saturated engines' steady rate.
    sim.ceiling = capacity_under_slo(m, w, setup, Slo{}).max_rate_per_s;
  }
  return Outcome(std::move(sim));
}

// Time to first token in a saturated run is mostly queueing, and queueing grows with the number
// of requests the benchmark sent, which the format does not record: such a TTFT says how long
// the benchmark ran, not how fast the system is. A Poisson load below capacity keeps its queue
// bounded, however long near capacity, and its TTFT is the steady state's, even where the
// percentiles converge too slowly to settle within SteadyState's tolerance: only a queue that
// grows with the run (SettledResult::growing) is the benchmark's length. A row simulated for its
// engine's benchmark length (ServingRow::benchmark_requests) has that length, and its TTFT is
// predicted. Returns why not, or "" when the run kept up or ran for its benchmark's length.
std::string queueing_problem(const ServingRow& row, const RowSimulation& s) {
  if (row.setup.batching == Batching::kStatic || row.benchmark_requests > 0) {
    return "";
  }
  const double rate = row.workload.rate_per_s;
  if (rate <= 0) {
    return "TTFT of an offline run is queueing time, set by how many requests were queued "
           "(not in the row)";
  }
  if (rate >= s.ceiling) {
    return fmt::format(
        "the offered {:.3g} requests/s are at or past the simulated capacity ({:.3g}/s): "
        "TTFT is queueing that grows with the benchmark's length (not in the row)",
        rate, s.ceiling);
  }
  if (s.growing) {
    return fmt::format(
        "at the offered {:.3g} requests/s the simulated queue grows with the run (capacity "
        "{:.3g}/s): TTFT is queueing set by the benchmark's length (not in the row)",
        rate, s.ceiling);
  }
  return "";
}

}  // namespace

}  // namespace gpuplan::detail

namespace gpuplan {

bool predicts_serving_metric(const std::string& name) {
  return detail::serving_metric(ServingResult{}, name).has_value();
}

std::string publication(const std::string& source) {
  return source.substr(0, source.find(';'));
}

Result<std::vector<ServingRow>> read_serving_rows(const std::string& path, const Catalog& catalog) {
  using detail::text_or;
  detail::Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(doc, detail::read_validation_file(path));
  if (text_or(doc, "kind", "") != "inference") {
    return fail(path, fmt::format("kind '{}' is not 'inference'", text_or(doc, "kind", "")),
                "give a validation file of serving results");
  }
  std::vector<ServingRow> rows;
  for (size_t i = 0; i < doc["rows"].size(); ++i) {
    const detail::Json& row = doc["rows"][i];
    ServingRow s;
    s.id = text_or(row, "id", "");
    const detail::RowReader r(row, fmt::format("{}: row {} '{}'", path, i, s.id));
    if (s.id.empty()) {
      return fail(r.where(), "every row needs an 'id'", "");
    }
    s.source = text_or(row, "source", "");
    if (!row.contains("metrics") || !row["metrics"].is_object() || row["metrics"].empty()) {
      return fail(r.where(), "key 'metrics' must be an object with at least one metric",
                  "e.g. {\"output_tokens_per_s\": 1234.5}");
    }
    for (const auto& [name, value] : row["metrics"].items()) {
      if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>())) {
        return fail(r.where(), fmt::format("metric '{}' must be a positive number", name), "");
      }
      s.metrics.push_back({name, value.get<double>()});
    }
    // A serving block gpuplan cannot read (a precision or load it does not know, a missing key)
    // makes the row unpredictable, not the file unreadable, as for training rows.
    Result<bool> read = detail::read_serving(r, row, catalog, s);
    if (!read) {
      s.reason = read.error().message();
    }
    rows.push_back(std::move(s));
  }
  return rows;
}

std::vector<ValidationEntry> predict_serving_row(const ServingRow& row, const Catalog& catalog,
                                                 const InferenceParams& params) {
  std::variant<std::string, detail::RowSimulation> outcome =
      row.reason.empty() ? detail::simulate_row(row, catalog, params)
                         : std::variant<std::string, detail::RowSimulation>(row.reason);
  std::vector<ValidationEntry> entries;
  for (const ServingMetric& metric : row.metrics) {
    ValidationEntry e;
    e.id = row.id;
    e.metric = metric.name;
    e.published = metric.published;
    if (row.instance.gpu != nullptr) {
      e.architecture = row.instance.gpu->architecture;
    }
    if (const std::string* why = std::get_if<std::string>(&outcome)) {
      e.reason = *why;
    } else {
      const detail::RowSimulation& sim = std::get<detail::RowSimulation>(outcome);
      const std::optional<double> v = detail::serving_metric(sim.result, metric.name);
      const std::string queued = detail::queueing_problem(row, sim);
      if (!v) {
        e.reason = fmt::format("metric '{}' is not a serving metric gpuplan predicts", metric.name);
      } else if (metric.name.starts_with("ttft") && !queued.empty()) {
        e.reason = queued;
      } else if (metric.name.starts_with("e2e") && !queued.empty()) {
        e.reason = "E2E begins with the time to first token: " + queued;
      } else if (!std::isfinite(*v)) {
        e.reason = "the simulation gave no finite value (a gpuplan bug: please report the row)";
      } else {
        e.predicted = *v;
        e.error_pct = (*v - e.published) / e.published * 100.0;
      }
      e.serving = sim.result;
      e.note = sim.note;
    }
    entries.push_back(std::move(e));
  }
  return entries;
}
}  // namespace gpuplan
