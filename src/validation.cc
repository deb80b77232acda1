#include "gpuplan/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpuplan/model_loader.h"
#include "json_reader.h"
#include "validation_rows.h"

namespace gpuplan {

namespace detail {

Result<Cluster> row_cluster(const RowReader& r, const Json& sys, const Catalog& c,
                            bool* nics_assumed_out) {
  Cluster cl;
  bool nics_assumed = false;
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
    if (cl.nics_per_node == 0) {
      cl.nics_per_node = cl.gpus_per_node;  // not published: one per GPU, as the CLI assumes
      nics_assumed = true;
    }
  }
  // The row's nodes may be the trays of one NVLink domain (GB200 NVL72).
  cl = scale_up_nodes(cl);
  if (cl.scale_out == nullptr && cl.gpus > cl.gpus_per_node) {
    return fail(r.where(), "the run spans nodes but names no 'scale_out' fabric",
                "give the network between nodes, e.g. \"ib-ndr-400g\"");
  }
  if (nics_assumed_out != nullptr) {
    *nics_assumed_out = nics_assumed;
  }
  return cl;
}

// Reads a validation file and checks its envelope: schema 1, a kind, an array of rows.
Result<Json> read_validation_file(const std::string& path) {
  Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(doc, read_json_file(path, "a validation file is one JSON object"));
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
    return fail(path, "missing array 'rows'", "see data/validation/README.md for the format");
  }
  if (!doc.contains("schema") || doc["schema"] != 1) {
    return fail(path, "missing or unsupported 'schema'", "this gpuplan reads schema 1");
  }
  return doc;
}

}  // namespace detail

namespace {

using detail::Json;
using detail::RowReader;

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
  if (lay.contains("expert_parallel")) {
    GPUPLAN_ASSIGN_OR_RETURN(l.ep, r.count(lay, "expert_parallel"));
  }
  if (lay.contains("context_parallel")) {
    GPUPLAN_ASSIGN_OR_RETURN(l.cp, r.count(lay, "context_parallel"));
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
  if (l.tp == 0 || l.pp == 0 || l.dp == 0 || job.global_batch == 0 || mj.seq == 0 || l.cp == 0) {
    return fail(r.where(), "tp, pp, dp, global_batch, seq_len, context_parallel must be >= 1", "");
  }
  return job;
}

// The row's training software, {"framework": F, "year": Y}, resolved against the catalog.
Result<Software> row_software(const RowReader& r, const Json& row, const Catalog& catalog) {
  if (!row.contains("software") || !row["software"].is_object()) {
    return fail(r.where(), "key 'software' must be an object",
                "{\"framework\": \"megatron-lm\", \"year\": 2024} (see the format README)");
  }
  const Json& sw = row["software"];
  std::string id;
  GPUPLAN_ASSIGN_OR_RETURN(id, r.text(sw, "framework"));
  int64_t year = 0;
  GPUPLAN_ASSIGN_OR_RETURN(year, r.count(sw, "year"));
  Result<Software> s = catalog.software(fmt::format("{}@{}", id, year));
  if (!s) {
    return fail(r.where(), "software: " + s.error().what, s.error().hint);
  }
  return *s;
}

// A global batch that dp x micro-batch does not divide becomes the nearest one it does (at least
// one step of it), and the row says so.
std::string round_global_batch(TrainJob& job) {
  const int64_t unit = job.memory.layout.dp * std::max<int64_t>(1, job.memory.micro_batch);
  if (job.global_batch % unit == 0) {
    return "";
  }
  const int64_t given = job.global_batch;
  job.global_batch = nearest_global_batch(given, unit);
  return fmt::format("global batch {} rounded to {}, the nearest multiple of dp {}{}", given,
                     job.global_batch, job.memory.layout.dp,
                     job.memory.micro_batch > 0
                         ? fmt::format(" x micro-batch {}", job.memory.micro_batch)
                         : std::string());
}

}  // namespace

Result<std::vector<PublishedMfu>> published_mfus(const std::string& path, const Catalog& catalog) {
  Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(doc, detail::read_validation_file(path));
  std::vector<PublishedMfu> out;
  if (detail::text_or(doc, "kind", "") != "training") {
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
    Result<Cluster> cluster = detail::row_cluster(r, row["system"], catalog);
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
    out.push_back({detail::text_or(row, "id", ""), cluster->gpu->id, p,
                   flops / (static_cast<double>(cluster->gpus) * step * peak->si())});
  }
  return out;
}

std::optional<PublishedMfu> best_published_mfu(const std::vector<PublishedMfu>& runs,
                                               const Catalog& catalog, const std::string& gpu,
                                               Precision precision) {
  auto sixteen = [](Precision p) { return p == Precision::kFp16 || p == Precision::kBf16; };
  const Gpu* mine = catalog.gpu(gpu).value_or(nullptr);
  auto same_tensor_cores = [&](const std::string& other) {
    if (other == gpu) {
      return true;
    }
    const Gpu* theirs = catalog.gpu(other).value_or(nullptr);
    if (!mine || !theirs || mine->architecture != theirs->architecture) {
      return false;
    }
    const std::optional<FlopsPerSecond> a = mine->peak_for(precision);
    const std::optional<FlopsPerSecond> b = theirs->peak_for(precision);
    return a && b && a->si() == b->si();
  };
  std::optional<PublishedMfu> best;
  for (const PublishedMfu& r : runs) {
    const bool same = r.precision == precision || (sixteen(r.precision) && sixteen(precision));
    if (same && (!best || r.mfu > best->mfu) && same_tensor_cores(r.gpu)) {
      best = r;
    }
  }
  return best;
}

Result<std::vector<TrainingRow>> read_training_rows(const std::string& path,
                                                    const Catalog& catalog) {
  Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(doc, detail::read_validation_file(path));
  if (detail::text_or(doc, "kind", "") != "training") {
    return fail(path, fmt::format("kind '{}' is not 'training'", detail::text_or(doc, "kind", "")),
                "give a validation file of training runs");
  }
  std::vector<TrainingRow> rows;
  for (size_t i = 0; i < doc["rows"].size(); ++i) {
    const Json& row = doc["rows"][i];
    TrainingRow t;
    t.id = detail::text_or(row, "id", "");
    const RowReader r(row, fmt::format("{}: row {} '{}'", path, i, t.id));
    if (t.id.empty()) {
      return fail(r.where(), "every row needs an 'id'", "");
    }
    t.source = row.is_object() && row.contains("source") && row["source"].is_string()
                   ? row["source"].get<std::string>()
                   : "";
    const std::string metric = detail::text_or(row, "metric", "step_time_s");
    if (!row.contains("value") || !row["value"].is_number()) {
      return fail(r.where(), "key 'value' must be a number",
                  "the published figure, in the metric's unit");
    }
    t.published = row["value"].get<double>();
    const Json* model_json = nullptr;
    const Json* sys = nullptr;
    const Json* lay = nullptr;
    GPUPLAN_ASSIGN_OR_RETURN(model_json, r.object("model"));
    GPUPLAN_ASSIGN_OR_RETURN(sys, r.object("system"));
    GPUPLAN_ASSIGN_OR_RETURN(lay, r.object("layout"));
    // A layout, software or model gpuplan cannot read (an unsupported family, an unknown
    // framework) makes the row unpredictable, not the file unreadable.
    Result<TrainJob> job = row_job(r, *lay);
    Result<Software> software = row_software(r, row, catalog);
    Result<Model> model = parse_model_config(model_json->dump(), "model", t.id);
    bool nics_assumed = false;
    Result<Cluster> cluster = detail::row_cluster(r, *sys, catalog, &nics_assumed);
    if (!job) {
      t.reason = job.error().message();
    } else if (!software) {
      t.reason = software.error().message();
    } else if (!model) {
      t.reason = model.error().message();
    } else if (metric != "step_time_s") {
      t.reason = fmt::format("metric '{}' is not a training metric gpuplan predicts", metric);
    } else if (!cluster) {
      t.reason = cluster.error().message();
    } else if (!cluster->gpu->efficiency) {
      t.reason = fmt::format("gpu '{}' has no [efficiency] calibration", cluster->gpu->id);
    } else if (t.published <= 0) {
      t.reason = "the published step time is not positive";
    } else {
      apply_software(*job, *software);
      t.note = round_global_batch(*job);
      if (auto problem = software_layout_problem(*job)) {
        // The run is published: it ran, and the framework file is what disagrees.
        detail::add_note(t.note,
                         fmt::format("{} in its framework file; timed as published", *problem));
      }
      if (nics_assumed) {
        detail::add_note(t.note, detail::nics_note(*cluster));
      }
      t.model = std::move(*model);
      t.cluster = *cluster;
      t.job = std::move(*job);
    }
    rows.push_back(std::move(t));
  }
  return rows;
}

ValidationEntry predict_training_row(const TrainingRow& row, const Catalog& catalog,
                                     const TrainParams& params) {
  ValidationEntry e;
  e.id = row.id;
  e.metric = "step_time_s";
  e.published = row.published;
  e.note = row.note;
  if (row.cluster.gpu != nullptr) {
    e.architecture = row.cluster.gpu->architecture;
  }
  if (!row.reason.empty()) {
    e.reason = row.reason;
    return e;
  }
  // The published run did fit; where no choice fits the memory model, the fastest is timed and
  // the disagreement reported (docs/VALIDATION.md).
  TrainEstimate est = best_training(row.model, row.cluster, row.job, catalog.memory_params(),
                                    params, MemoryPolicy::kPublished);
  if (!est.feasible) {
    e.reason = est.reason;
  } else if (!std::isfinite(est.step.total().si())) {
    // Never a non-finite number in a report: a model that gives one has a bug to report.
    e.reason = "the model gave no finite step time (a gpuplan bug: please report the row)";
  } else {
    e.predicted = est.step.total().si();
    e.error_pct = (*e.predicted - e.published) / e.published * 100.0;
  }
  e.training = std::move(est);
  return e;
}

double median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

double largest(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

// Groups under construction: each summary beside the |errors| of its predicted entries.
struct Groups {
  std::vector<GroupSummary> summaries;  // in the order each name first appears
  std::vector<std::vector<double>> errors;

  void add(const std::string& name, const ValidationEntry& e) {
    auto it = std::find_if(summaries.begin(), summaries.end(),
                           [&](const GroupSummary& g) { return g.name == name; });
    if (it == summaries.end()) {
      summaries.push_back(GroupSummary{.name = name});
      errors.emplace_back();
      it = summaries.end() - 1;
    }
    ++it->rows;
    if (e.predicted) {
      errors[static_cast<size_t>(it - summaries.begin())].push_back(std::fabs(e.error_pct));
      ++it->predicted;
    }
  }

  std::vector<GroupSummary> done() {
    for (size_t i = 0; i < summaries.size(); ++i) {
      summaries[i].median_abs_error_pct = median(errors[i]);
      summaries[i].max_abs_error_pct = largest(errors[i]);
    }
    return std::move(summaries);
  }
};

}  // namespace

void summarize(ValidationReport& report) {
  std::vector<double> errors;
  Groups metrics, architectures;
  report.predicted = 0;
  for (const ValidationEntry& e : report.entries) {
    metrics.add(e.metric, e);
    if (!e.architecture.empty()) {
      architectures.add(e.architecture, e);
    }
    if (e.predicted) {
      errors.push_back(std::fabs(e.error_pct));
      ++report.predicted;
    }
  }
  report.median_abs_error_pct = median(errors);
  report.max_abs_error_pct = largest(errors);
  report.by_metric = metrics.done();
  report.by_architecture = architectures.done();
}

Result<ValidationKind> validation_kind(const std::string& path) {
  Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(doc, detail::read_validation_file(path));
  const std::string kind = detail::text_or(doc, "kind", "");
  if (kind != "training" && kind != "inference") {
    return fail(path, fmt::format("unknown kind '{}'", kind), "expected 'training' or 'inference'");
  }
  return kind == "training" ? ValidationKind::kTraining : ValidationKind::kInference;
}

Result<ValidationReport> run_validation(const std::string& path, const Catalog& catalog) {
  ValidationKind kind = ValidationKind::kTraining;
  GPUPLAN_ASSIGN_OR_RETURN(kind, validation_kind(path));
  ValidationReport report;
  report.kind = kind == ValidationKind::kTraining ? "training" : "inference";
  if (report.kind == "training") {
    std::vector<TrainingRow> rows;
    GPUPLAN_ASSIGN_OR_RETURN(rows, read_training_rows(path, catalog));
    for (const TrainingRow& row : rows) {
      report.entries.push_back(predict_training_row(row, catalog, catalog.train_params()));
    }
    report.rows = static_cast<int64_t>(rows.size());
    summarize(report);
    return report;
  }
  std::vector<ServingRow> rows;
  GPUPLAN_ASSIGN_OR_RETURN(rows, read_serving_rows(path, catalog));
  for (const ServingRow& row : rows) {
    // One entry per (row, metric), and each counts as a row of the summary.
    for (ValidationEntry& e : predict_serving_row(row, catalog, catalog.inference_params())) {
      report.entries.push_back(std::move(e));
    }
  }
  report.rows = static_cast<int64_t>(report.entries.size());
  summarize(report);
  return report;
}

std::string published_mfu_text(const PublishedMfu& run, const std::string& gpu, Lang lang) {
  const std::string mfu = number(run.mfu * 100, 1, lang);
  if (run.gpu == gpu) {
    return fmt::format(fmt::runtime(tr(lang, "the best published {} {} run ({} %, {})",
                                       "a melhor execução publicada em {} com {} ({} %, {})")),
                       gpu, precision_name(run.precision), mfu, run.id);
  }
  return fmt::format(
      fmt::runtime(tr(lang, "the best published {} run on the same tensor cores ({}, {} %, {})",
                      "a melhor execução publicada com {} nos mesmos tensor cores ({}, {} %, {})")),
      precision_name(run.precision), run.gpu, mfu, run.id);
}

std::optional<PublishedMfu> catalog_mfu_ceiling(const Catalog& catalog, const std::string& gpu,
                                                Precision precision) {
  Result<std::vector<PublishedMfu>> runs =
      published_mfus(catalog.data_dir() + "/validation/training.json", catalog);
  return runs ? best_published_mfu(*runs, catalog, gpu, precision) : std::nullopt;
}

}  // namespace gpuplan
