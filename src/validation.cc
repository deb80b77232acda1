#include "gpuplan/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "gpuplan/model_loader.h"
#include "gpuplan/serving.h"

namespace gpuplan {
namespace {

using Json = nlohmann::json;

// Typed access to one row's keys; errors name the row and the key path.
class RowReader {
 public:
  RowReader(const Json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Result<const Json*> object(const char* key) const {
    if (!obj_.contains(key) || !obj_[key].is_object()) {
      return fail(where_, fmt::format("key '{}' must be an object", key), "see the format README");
    }
    return &obj_[key];
  }
  Result<std::string> text(const Json& o, const char* key) const {
    if (!o.contains(key) || !o[key].is_string()) {
      return fail(where_, fmt::format("key '{}' must be a string", key), "see the format README");
    }
    return o[key].get<std::string>();
  }
  // A positive integer; when `nullable`, null (or absence) gives 0.
  Result<int64_t> count(const Json& o, const char* key, bool nullable = false) const {
    if (nullable && (!o.contains(key) || o[key].is_null())) {
      return int64_t{0};
    }
    if (!o.contains(key) || !o[key].is_number_integer() || o[key].get<int64_t>() < 0) {
      return fail(where_, fmt::format("key '{}' must be an integer >= 0", key),
                  o.contains(key) ? fmt::format("found {}", o[key].dump()) : "it is missing");
    }
    return o[key].get<int64_t>();
  }
  Result<bool> flag(const Json& o, const char* key) const {
    if (!o.contains(key) || !o[key].is_boolean()) {
      return fail(where_, fmt::format("key '{}' must be true or false", key), "");
    }
    return o[key].get<bool>();
  }
  const std::string& where() const { return where_; }

 private:
  const Json& obj_;
  std::string where_;
};

// Resolves a row's system against the catalog; an unknown id makes the row unpredictable.
Result<Cluster> row_cluster(const RowReader& r, const Json& sys, const Catalog& c) {
  Cluster cl;
  std::string id;
  GPUPLAN_ASSIGN_OR_RETURN(id, r.text(sys, "gpu"));
  GPUPLAN_ASSIGN_OR_RETURN(cl.gpu, c.gpu(id));
  GPUPLAN_ASSIGN_OR_RETURN(cl.gpus, r.count(sys, "gpus"));
  GPUPLAN_ASSIGN_OR_RETURN(cl.gpus_per_node, r.count(sys, "gpus_per_node"));
  GPUPLAN_ASSIGN_OR_RETURN(id, r.text(sys, "scale_up"));
  GPUPLAN_ASSIGN_OR_RETURN(cl.scale_up, c.fabric(id));
  if (cl.gpus == 0 || cl.gpus_per_node == 0) {
    return fail(r.where(), "gpus and gpus_per_node must be positive", "");
  }
  // A single-node row may leave the network out (null or absent).
  if (sys.contains("scale_out") && !sys["scale_out"].is_null()) {
    GPUPLAN_ASSIGN_OR_RETURN(id, r.text(sys, "scale_out"));
    GPUPLAN_ASSIGN_OR_RETURN(cl.scale_out, c.fabric(id));
    GPUPLAN_ASSIGN_OR_RETURN(cl.nics_per_node, r.count(sys, "nics_per_node", true));
  } else if (cl.gpus > cl.gpus_per_node) {
    return fail(r.where(), "the run spans nodes but names no 'scale_out' fabric",
                "give the network between nodes, e.g. \"ib-ndr-400g\"");
  }
  return cl;
}

Result<TrainJob> row_job(const RowReader& r, const Json& lay) {
  TrainJob job;
  MemoryJob& mj = job.memory;
  mj.task = Task::kTrain;
  Parallelism& l = mj.layout;
  GPUPLAN_ASSIGN_OR_RETURN(l.tp, r.count(lay, "tp"));
  GPUPLAN_ASSIGN_OR_RETURN(l.pp, r.count(lay, "pp"));
  GPUPLAN_ASSIGN_OR_RETURN(l.dp, r.count(lay, "dp"));
  GPUPLAN_ASSIGN_OR_RETURN(mj.micro_batch, r.count(lay, "micro_batch", true));
  GPUPLAN_ASSIGN_OR_RETURN(job.global_batch, r.count(lay, "global_batch"));
  GPUPLAN_ASSIGN_OR_RETURN(mj.seq, r.count(lay, "seq_len"));
  GPUPLAN_ASSIGN_OR_RETURN(l.sequence_parallel, r.flag(lay, "sequence_parallel"));
  GPUPLAN_ASSIGN_OR_RETURN(l.zero, r.count(lay, "zero"));
  GPUPLAN_ASSIGN_OR_RETURN(l.virtual_stages, r.count(lay, "virtual_stages", true));
  if (lay.contains("attention")) {
    // Optional: the attention kernels the run used. "eager" (2021-22 Megatron-LM and
    // DeepSpeed: scores materialised, fused softmax) or "flash" (fused, the default).
    std::string kernel;
    GPUPLAN_ASSIGN_OR_RETURN(kernel, r.text(lay, "attention"));
    if (kernel != "eager" && kernel != "flash") {
      return fail(r.where(), fmt::format("layout.attention '{}' is unknown", kernel),
                  "expected 'eager' or 'flash'");
    }
    mj.flash_attention = kernel == "flash";
  }
  if (lay.contains("expert_parallel")) {
    GPUPLAN_ASSIGN_OR_RETURN(l.ep, r.count(lay, "expert_parallel"));
  }
  if (lay.contains("context_parallel")) {
    GPUPLAN_ASSIGN_OR_RETURN(job.context_parallel, r.count(lay, "context_parallel"));
  }
  std::string text;
  GPUPLAN_ASSIGN_OR_RETURN(text, r.text(lay, "recompute"));
  Result<Recompute> rc = parse_recompute(text);
  if (!rc) {
    return fail(r.where(), "layout.recompute: " + rc.error().what, rc.error().hint);
  }
  mj.recompute = *rc;
  GPUPLAN_ASSIGN_OR_RETURN(text, r.text(lay, "precision"));
  Result<Precision> pr = parse_precision(text);
  if (!pr) {
    return fail(r.where(), "layout.precision: " + pr.error().what, pr.error().hint);
  }
  mj.precision = *pr;
  if (l.tp == 0 || l.pp == 0 || l.dp == 0 || job.global_batch == 0 || mj.seq == 0 ||
      job.context_parallel == 0) {
    return fail(r.where(), "tp, pp, dp, global_batch, seq_len, context_parallel must be >= 1", "");
  }
  return job;
}

double median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Reads a validation file and checks its envelope: schema 1, a kind, an array of rows.
Result<Json> read_validation_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(path, "cannot open the file", "check the path");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    const size_t at = std::min(e.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
    return fail(fmt::format("{}:{}", path, line), "not valid JSON",
                "a validation file is one JSON object");
  }
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
    return fail(path, "missing array 'rows'", "see data/validation/README.md for the format");
  }
  if (!doc.contains("schema") || doc["schema"] != 1) {
    return fail(path, "missing or unsupported 'schema'", "this gpuplan reads schema 1");
  }
  return doc;
}

// The value of a serving metric the validation format names, in its unit; nullopt for a
// metric gpuplan does not predict.
std::optional<double> serving_metric(const ServingResult& r, const std::string& name) {
  if (name == "output_tokens_per_s") {
    return r.output_tokens_per_s;
  }
  if (name == "ttft_ms_mean") {
    return r.ttft.mean * 1e3;
  }
  if (name == "ttft_ms_p99") {
    return r.ttft.p99 * 1e3;
  }
  if (name == "tpot_ms_mean") {
    return r.tpot.mean * 1e3;
  }
  if (name == "tpot_ms_p99") {
    return r.tpot.p99 * 1e3;
  }
  if (name == "itl_ms_mean") {
    return r.itl_mean * 1e3;
  }
  return std::nullopt;
}

// A serving row's simulation, and the rate its instances sustain with every request queued at
// once (requests/s), which tells a run that kept up from a saturated one.
struct RowSimulation {
  ServingResult result;
  double ceiling = 0;
};

// Why a serving row cannot be simulated, or its simulation.
Result<std::variant<std::string, RowSimulation>> simulate_row(const RowReader& r, const Json& row,
                                                              const Catalog& catalog) {
  using Outcome = std::variant<std::string, RowSimulation>;
  const Json* model_json = nullptr;
  const Json* sys = nullptr;
  const Json* srv = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(model_json, r.object("model"));
  GPUPLAN_ASSIGN_OR_RETURN(sys, r.object("system"));
  GPUPLAN_ASSIGN_OR_RETURN(srv, r.object("serving"));
  Instance in;
  int64_t pp = 0;
  ServingSetup setup;
  GPUPLAN_ASSIGN_OR_RETURN(in.tp, r.count(*srv, "tp"));
  GPUPLAN_ASSIGN_OR_RETURN(pp, r.count(*srv, "pp"));
  GPUPLAN_ASSIGN_OR_RETURN(setup.replicas, r.count(*srv, "replicas"));
  if (in.tp == 0 || pp == 0 || setup.replicas == 0) {
    return fail(r.where(), "serving tp, pp and replicas must be >= 1", "");
  }
  std::string text;
  for (auto [key, target] :
       {std::pair{"precision", &in.precision}, std::pair{"kv_precision", &in.kv_precision}}) {
    GPUPLAN_ASSIGN_OR_RETURN(text, r.text(*srv, key));
    Result<Precision> p = parse_precision(text);
    if (!p) {
      return fail(r.where(), fmt::format("serving.{}: {}", key, p.error().what), p.error().hint);
    }
    *target = *p;
  }
  Workload w;
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
  Result<Model> model = parse_model_config(model_json->dump(), "model", row.value("id", ""));
  if (!model) {
    return Outcome(model.error().message());
  }
  Result<Cluster> cluster = row_cluster(r, *sys, catalog);
  if (!cluster) {
    return Outcome(cluster.error().message());
  }
  if (w.input_tokens == 0 || w.output_tokens == 0) {
    return Outcome(
        std::string("the source gives the request lengths only as a distribution (lengths_note)"));
  }
  in.gpu = cluster->gpu;
  in.scale_up = cluster->scale_up;
  in.pp = pp;
  in.gpus_per_node = cluster->gpus_per_node;
  in.scale_out = cluster->scale_out;
  in.nics_per_node = cluster->nics_per_node;
  const InferenceModel m(*model, in, catalog.memory_params(), catalog.train_params(),
                         catalog.inference_params());
  if (!m.feasible()) {
    return Outcome(m.reason());
  }
  // Enough requests for the steady state to dominate: a static batch is measured once; an
  // offline run queues eight times what the instances hold at once.
  const int64_t context = w.input_tokens + w.output_tokens;
  const int64_t at_once =
      std::min(m.params().max_batch, m.kv_tokens() / std::max<int64_t>(1, context));
  if (setup.batching == Batching::kStatic) {
    w.requests = setup.static_batch * setup.replicas;
  } else if (w.rate_per_s <= 0) {
    w.requests = std::max<int64_t>(1000, 8 * at_once * setup.replicas);
  }
  RowSimulation sim;
  sim.result = simulate_serving(m, w, setup);
  if (!sim.result.feasible) {
    return Outcome(sim.result.reason);
  }
  sim.ceiling = sim.result.requests_per_s;
  if (w.rate_per_s > 0) {
    Workload offline = w;
    offline.rate_per_s = 0;
    offline.requests = std::max<int64_t>(1000, 8 * at_once * setup.replicas);
    sim.ceiling = simulate_serving(m, offline, setup).requests_per_s;
  }
  return Outcome(std::move(sim));
}

// Time to first token in a saturated run is mostly queueing, and queueing grows with the number
// of requests the benchmark sent, which the format does not record: such a TTFT says how long
// the benchmark ran, not how fast the system is. Returns why, or "" when the run kept up.
std::string queueing_problem(const Json& row, const RowSimulation& s) {
  const Json& load = row["serving"]["load"];
  const std::string kind = load.value("kind", "");
  if (kind == "offline") {
    return "TTFT of an offline run is queueing time, set by how many requests were queued "
           "(not in the row)";
  }
  if (kind == "poisson") {
    const double rate = load.value("rate_per_s", 0.0);
    if (rate > 0.95 * s.ceiling) {
      return fmt::format(
          "the offered {:.3g} requests/s reach the simulated capacity ({:.3g}/s): TTFT is "
          "queueing that grows with the benchmark's length (not in the row)",
          rate, s.ceiling);
    }
  }
  return "";
}

Result<bool> validate_inference_row(const RowReader& r, const Json& row, const std::string& id,
                                    const Catalog& catalog, ValidationReport& report,
                                    std::vector<double>& errors) {
  if (!row.contains("metrics") || !row["metrics"].is_object() || row["metrics"].empty()) {
    return fail(r.where(), "key 'metrics' must be an object with at least one metric",
                "e.g. {\"output_tokens_per_s\": 1234.5}");
  }
  std::variant<std::string, RowSimulation> outcome;
  GPUPLAN_ASSIGN_OR_RETURN(outcome, simulate_row(r, row, catalog));
  for (const auto& [name, value] : row["metrics"].items()) {
    if (!value.is_number() || value.get<double>() <= 0) {
      return fail(r.where(), fmt::format("metric '{}' must be a positive number", name), "");
    }
    ValidationEntry e;
    e.id = id;
    e.metric = name;
    e.published = value.get<double>();
    if (const std::string* why = std::get_if<std::string>(&outcome)) {
      e.reason = *why;
    } else {
      const RowSimulation& sim = std::get<RowSimulation>(outcome);
      const ServingResult& s = sim.result;
      const std::optional<double> v = serving_metric(s, name);
      const std::string queued = queueing_problem(row, sim);
      if (!v) {
        e.reason = fmt::format("metric '{}' is not a serving metric gpuplan predicts", name);
      } else if (name.starts_with("ttft") && !queued.empty()) {
        e.reason = queued;
      } else {
        e.predicted = *v;
        e.error_pct = (*v - e.published) / e.published * 100.0;
        errors.push_back(std::fabs(e.error_pct));
        ++report.predicted;
      }
      e.serving = s;
    }
    report.entries.push_back(std::move(e));
    ++report.rows;
  }
  return true;
}

}  // namespace

Result<std::vector<PublishedMfu>> published_mfus(const std::string& path, const Catalog& catalog) {
  Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(doc, read_validation_file(path));
  std::vector<PublishedMfu> out;
  if (doc.value("kind", "") != "training") {
    return out;
  }
  for (size_t i = 0; i < doc["rows"].size(); ++i) {
    const Json& row = doc["rows"][i];
    if (!row.is_object() || !row.contains("model") || !row.contains("system") ||
        !row.contains("layout") || !row.contains("value") || !row["value"].is_number()) {
      continue;
    }
    const RowReader r(row, fmt::format("{}: row {}", path, i));
    Result<Model> model = parse_model_config(row["model"].dump(), "model", "row");
    Result<TrainJob> job = row_job(r, row["layout"]);
    Result<Cluster> cluster = row_cluster(r, row["system"], catalog);
    if (!model || !job || !cluster) {
      continue;
    }
    const Precision p = job->memory.precision;
    const auto peak = cluster->gpu->peak_for(p);
    const double step = row["value"].get<double>();
    if (!peak || step <= 0) {
      continue;
    }
    const double tokens = static_cast<double>(job->global_batch * job->memory.seq);
    const double flops = model_flops_per_token(*model, job->memory.seq) * tokens;
    out.push_back({row.value("id", ""), cluster->gpu->id, p,
                   flops / (static_cast<double>(cluster->gpus) * step * peak->si())});
  }
  return out;
}

std::optional<PublishedMfu> best_published_mfu(const std::vector<PublishedMfu>& runs,
                                               const std::string& gpu, Precision precision) {
  auto sixteen = [](Precision p) { return p == Precision::kFp16 || p == Precision::kBf16; };
  std::optional<PublishedMfu> best;
  for (const PublishedMfu& r : runs) {
    const bool same = r.precision == precision || (sixteen(r.precision) && sixteen(precision));
    if (r.gpu == gpu && same && (!best || r.mfu > best->mfu)) {
      best = r;
    }
  }
  return best;
}

Result<ValidationReport> run_validation(const std::string& path, const Catalog& catalog) {
  Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(doc, read_validation_file(path));
  ValidationReport report;
  report.kind = doc.value("kind", "");
  if (report.kind != "training" && report.kind != "inference") {
    return fail(path, fmt::format("unknown kind '{}'", report.kind),
                "expected 'training' or 'inference'");
  }
  std::vector<double> errors;
  for (size_t i = 0; i < doc["rows"].size(); ++i) {
    const Json& row = doc["rows"][i];
    const std::string id = row.is_object() ? row.value("id", "") : "";
    const RowReader r(row, fmt::format("{}: row {} '{}'", path, i, id));
    if (id.empty()) {
      return fail(r.where(), "every row needs an 'id'", "");
    }
    if (report.kind == "inference") {
      // One entry per (row, metric), and each counts as a row of the summary.
      GPUPLAN_RETURN_IF_ERROR(validate_inference_row(r, row, id, catalog, report, errors));
      continue;
    }
    ++report.rows;
    ValidationEntry e;
    e.id = id;
    e.metric = row.value("metric", "step_time_s");
    if (!row.contains("value") || !row["value"].is_number()) {
      return fail(r.where(), "key 'value' must be a number",
                  "the published figure, in the metric's unit");
    }
    e.published = row["value"].get<double>();
    const Json* model_json = nullptr;
    const Json* sys = nullptr;
    const Json* lay = nullptr;
    GPUPLAN_ASSIGN_OR_RETURN(model_json, r.object("model"));
    GPUPLAN_ASSIGN_OR_RETURN(sys, r.object("system"));
    GPUPLAN_ASSIGN_OR_RETURN(lay, r.object("layout"));
    // A layout value gpuplan cannot read, or a model it cannot read (an unsupported family),
    // makes the row unpredictable, not the file unreadable.
    Result<TrainJob> job = row_job(r, *lay);
    // A model gpuplan cannot read (an unsupported family) makes the row unpredictable, not the
    // file unreadable.
    Result<Model> model = parse_model_config(model_json->dump(), "model", id);
    Result<Cluster> cluster = row_cluster(r, *sys, catalog);
    if (!job) {
      e.reason = job.error().message();
    } else if (!model) {
      e.reason = model.error().message();
    } else if (e.metric != "step_time_s") {
      e.reason = fmt::format("metric '{}' is not a training metric gpuplan predicts", e.metric);
    } else if (!cluster) {
      e.reason = cluster.error().message();
    } else if (!cluster->gpu->efficiency) {
      e.reason = fmt::format("gpu '{}' has no [efficiency] calibration", cluster->gpu->id);
    } else {
      // The published run ran, so it fitted: where the memory model disagrees, the estimate is
      // still made and the disagreement reported (docs/VALIDATION.md).
      TrainEstimate est = best_training(*model, *cluster, *job, catalog.memory_params(),
                                        catalog.train_params(), MemoryPolicy::kReport);
      if (!est.feasible) {
        e.reason = est.reason;
      } else {
        e.predicted = est.step.total().si();
        e.error_pct = (*e.predicted - e.published) / e.published * 100.0;
        errors.push_back(std::fabs(e.error_pct));
        ++report.predicted;
      }
      e.training = std::move(est);
    }
    report.entries.push_back(std::move(e));
  }
  report.median_abs_error_pct = median(errors);
  report.max_abs_error_pct = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
  return report;
}

}  // namespace gpuplan
