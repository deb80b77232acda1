// gpuplan validate FILE [--json]: predicted vs published for every row of a validation file.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <thread>

#include "command.h"
#include "flags.h"
#include "gpuplan/calibration.h"
#include "gpuplan/json_writer.h"
#include "gpuplan/validation.h"
#include "report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "validate";

void print_json(const ValidationReport& r) {
  JsonWriter w;
  w.begin_object().field("kind", r.kind).key("rows").begin_array();
  for (const ValidationEntry& e : r.entries) {
    w.begin_object().field("id", e.id).field("metric", e.metric).field("published", e.published);
    if (e.predicted) {
      w.field("predicted", *e.predicted).field("error_pct", e.error_pct);
      if (e.training) {
        const TrainEstimate& t = *e.training;
        w.field("micro_batch", t.job.memory.micro_batch)
            .field("virtual_stages", t.job.memory.layout.virtual_stages)
            .field("mfu", t.mfu)
            .field("fits_memory", t.fits_memory);
      }
      if (e.serving) {
        w.field("mean_batch", e.serving->mean_batch)
            .field("kv_sequences", e.serving->kv_sequences)
            .field("simulated_requests", e.serving->requests);
      }
    } else {
      w.key("predicted").null();
      w.field("reason", e.reason);
    }
    if (!e.note.empty()) {
      w.field("note", e.note);
    }
    w.end_object();
  }
  w.end_array();
  w.key("summary")
      .begin_object()
      .field("rows", r.rows)
      .field("predicted", r.predicted)
      // With nothing predicted there is no error to summarise: null, not 0.
      .field("median_abs_error_pct",
             r.predicted > 0 ? std::optional<double>(r.median_abs_error_pct) : std::nullopt)
      .field("max_abs_error_pct",
             r.predicted > 0 ? std::optional<double>(r.max_abs_error_pct) : std::nullopt);
  // Each group as {"<key>": name, rows, predicted, median and max |error| (null: none)}.
  auto groups = [&](const char* array, const char* key, const std::vector<GroupSummary>& gs) {
    w.key(array).begin_array();
    for (const GroupSummary& g : gs) {
      w.begin_object()
          .field(key, g.name)
          .field("rows", g.rows)
          .field("predicted", g.predicted)
          .field("median_abs_error_pct",
                 g.predicted > 0 ? std::optional<double>(g.median_abs_error_pct) : std::nullopt)
          .field("max_abs_error_pct",
                 g.predicted > 0 ? std::optional<double>(g.max_abs_error_pct) : std::nullopt)
          .end_object();
    }
    w.end_array();
  };
  groups("by_metric", "metric", r.by_metric);
  groups("by_architecture", "architecture", r.by_architecture);
  w.end_object();
  w.end_object();
  emit("{}", w.str());
}

void print_training(const ValidationReport& r) {
  Table t({"id", "published", "predicted", "error (%)", "mb", "v", "MFU (%)", "exposed comm (s)",
           "bubble (s)", ""},
          {false, true, true, true, true, true, true, true, true, false});
  for (const ValidationEntry& e : r.entries) {
    if (!e.predicted) {
      t.add({e.id, fmt::format("{:.4g}", e.published), "-", "-", "-", "-", "-", "-", "-",
             "not predicted: " + e.reason});
      continue;
    }
    std::vector<std::string> row = {e.id, fmt::format("{:.4g}", e.published),
                                    fmt::format("{:.4g}", *e.predicted),
                                    fmt::format("{:+.1f}", e.error_pct)};
    if (e.training) {
      const TrainEstimate& est = *e.training;
      const StepTime& s = est.step;
      row.push_back(fmt::format("{}", est.job.memory.micro_batch));
      row.push_back(fmt::format("{}", est.job.memory.layout.virtual_stages));
      row.push_back(fmt::format("{:.1f}", est.mfu * 100));
      row.push_back(fmt::format("{:.3g}", s.communication().si()));
      row.push_back(fmt::format("{:.3g}", s.bubble.si()));
    }
    // What was assumed to predict the row, and where the memory model disagrees with the run.
    std::vector<std::string> notes;
    if (!e.note.empty()) {
      notes.push_back(e.note);
    }
    if (e.training && !e.training->fits_memory) {
      notes.push_back(e.training->memory_note);
    }
    row.resize(9, "-");
    row.push_back(notes.empty() ? "" : "note: " + fmt::format("{}", fmt::join(notes, "; ")));
    t.add(row);
  }
  emit(
      "training rows, metric step_time_s (published vs predicted, seconds per optimizer "
      "step)\n\n{}",
      t.str());
}

void print_inference(const ValidationReport& r) {
  Table t({"id", "metric", "published", "predicted", "error (%)", "mean batch", "KV holds", ""},
          {false, false, true, true, true, true, true, false});
  for (const ValidationEntry& e : r.entries) {
    std::vector<std::string> row = {e.id, e.metric, fmt::format("{:.4g}", e.published)};
    if (e.predicted) {
      row.push_back(fmt::format("{:.4g}", *e.predicted));
      row.push_back(fmt::format("{:+.1f}", e.error_pct));
    } else {
      row.insert(row.end(), {"-", "-"});
    }
    if (e.serving) {
      row.push_back(fmt::format("{:.0f}", e.serving->mean_batch));
      row.push_back(fmt::format("{}", e.serving->kv_sequences));
    } else {
      row.insert(row.end(), {"-", "-"});
    }
    row.push_back(e.predicted ? (e.note.empty() ? "" : "note: " + e.note)
                              : "not predicted: " + e.reason);
    t.add(row);
  }
  emit(
      "inference rows, one line per metric (tokens/s, requests/s; TTFT, TPOT and ITL in ms, "
      "E2E in s); mean batch: "
      "sequences per iteration in the simulation; KV holds: requests the KV cache of one "
      "instance holds\n\n{}",
      t.str());
}

void print_text(const ValidationReport& r) {
  if (r.kind == "training") {
    print_training(r);
  } else {
    print_inference(r);
  }
  if (r.predicted == 0) {
    emit("\nsummary: {} rows, none predicted\n", r.rows);
    return;
  }
  emit("\nsummary: {} rows, {} predicted, median |error| {:.1f} %, max |error| {:.1f} %\n", r.rows,
       r.predicted, r.median_abs_error_pct, r.max_abs_error_pct);
  // A table of the groups under `title`, where there are two or more.
  auto groups = [](const char* title, const char* key, const std::vector<GroupSummary>& gs) {
    if (gs.size() < 2) {
      return;
    }
    Table t({key, "rows", "predicted", "median |error| (%)", "max |error| (%)"},
            {false, true, true, true, true});
    for (const GroupSummary& g : gs) {
      const bool any = g.predicted > 0;
      t.add({g.name, fmt::format("{}", g.rows), fmt::format("{}", g.predicted),
             any ? fmt::format("{:.1f}", g.median_abs_error_pct) : "-",
             any ? fmt::format("{:.1f}", g.max_abs_error_pct) : "-"});
    }
    emit("\n{}\n{}", title, t.str());
  };
  groups("by metric", "metric", r.by_metric);
  groups("by GPU architecture", "architecture", r.by_architecture);
}

double error_pct(std::optional<double> predicted, double published) {
  return (*predicted - published) / published * 100.0;
}

// --cross-validate: the fit to every row (in sample) beside the fit without the row's source (out
// of sample), row by row.
void print_cross_validation(const CrossValidation& cv, ValidationKind kind, bool json) {
  const bool training = kind == ValidationKind::kTraining;
  if (json) {
    JsonWriter w;
    w.begin_object().field("kind", training ? "training" : "inference").key("rows").begin_array();
    for (const CrossValidatedRow& r : cv.rows) {
      w.begin_object()
          .field("id", r.id)
          .field("metric", r.metric)
          .field("source", r.source)
          .field("published", r.published);
      if (r.in_sample) {
        w.field("in_sample", *r.in_sample)
            .field("in_sample_error_pct", error_pct(r.in_sample, r.published));
      } else {
        w.key("in_sample").null();
      }
      if (r.out_of_sample) {
        w.field("out_of_sample", *r.out_of_sample)
            .field("out_of_sample_error_pct", error_pct(r.out_of_sample, r.published));
      } else {
        w.key("out_of_sample").null();
        w.field("reason", r.reason);
      }
      w.end_object();
    }
    w.end_array();
    w.key("summary")
        .begin_object()
        .field("rows", static_cast<int64_t>(cv.rows.size()))
        .field("sources", cv.sources)
        .field("median_abs_error_pct", cv.median_in_pct)
        .field("max_abs_error_pct", cv.max_in_pct)
        .field("loso_median_abs_error_pct", cv.median_out_pct)
        .field("loso_max_abs_error_pct", cv.max_out_pct)
        .end_object();
    w.end_object();
    emit("{}", w.str());
    return;
  }
  Table t({"id", "metric", "published", "in sample", "error (%)", "left out", "error (%)", ""},
          {false, false, true, true, true, true, true, false});
  for (const CrossValidatedRow& r : cv.rows) {
    std::vector<std::string> row = {r.id, r.metric, fmt::format("{:.4g}", r.published)};
    for (const std::optional<double>& v : {r.in_sample, r.out_of_sample}) {
      if (v) {
        row.push_back(fmt::format("{:.4g}", *v));
        row.push_back(fmt::format("{:+.1f}", error_pct(v, r.published)));
      } else {
        row.insert(row.end(), {"-", "-"});
      }
    }
    row.push_back(r.in_sample && r.out_of_sample ? "" : "not predicted: " + r.reason);
    t.add(row);
  }
  emit(
      "{}: fitted to every row (in sample), and fitted without the row's source (left out: "
      "leave-one-source-out over {} sources)\n\n{}",
      training ? "training rows, step time (s)"
               : "inference rows, one line per metric (tokens/s; TTFT, TPOT and ITL in ms)",
      cv.sources, t.str());
  emit(
      "\nsummary: {} {}; in sample median |error| {:.1f} %, max {:.1f} %; leave-one-source-out "
      "median |error| {:.1f} %, max {:.1f} %\n",
      cv.rows.size(), training ? "rows" : "entries", cv.median_in_pct, cv.max_in_pct,
      cv.median_out_pct, cv.max_out_pct);
}

}  // namespace

int run_validate(const std::vector<std::string>& args) {
  CLI::App app("Predicted vs published: run gpuplan's models on every row of a validation file.",
               args.front());
  std::string file;
  std::string data;
  bool json = false;
  app.add_option("file", file, "validation JSON file (format: data/validation/README.md)")
      ->required();
  app.add_flag("--json", json, "print JSON");
  bool cross = false;
  int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  app.add_flag("--cross-validate", cross,
               "refit the model's parameters without each source and predict that source");
  app.add_option("--threads", threads, "with --cross-validate: worker threads (default: all)")
      ->check(rule(fields::kThreads));
  app.add_option("--data", data, "catalog directory (default $GPUPLAN_DATA or the built-in one)");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  Result<Catalog> c = load_catalog(data);
  if (!c)
    return report_error(kName, c.error());
  if (cross) {
    Result<ValidationKind> kind = validation_kind(file);
    if (!kind)
      return report_error(kName, kind.error());
    if (*kind == ValidationKind::kInference) {
      Result<std::vector<ServingRow>> rows = read_serving_rows(file, *c);
      if (!rows)
        return report_error(kName, rows.error());
      print_cross_validation(cross_validate_serving(*rows, *c, std::max(1, threads)), *kind, json);
      return kExitOk;
    }
    Result<std::vector<TrainingRow>> rows = read_training_rows(file, *c);
    if (!rows)
      return report_error(kName, rows.error());
    print_cross_validation(cross_validate_training(*rows, *c, std::max(1, threads)), *kind, json);
    return kExitOk;
  }
  Result<ValidationReport> r = run_validation(file, *c);
  if (!r)
    return report_error(kName, r.error());
  if (json) {
    print_json(*r);
  } else {
    print_text(*r);
  }
  return kExitOk;
}

}  // namespace gpuplan::cli
