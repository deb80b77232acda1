// gpuplan validate FILE [--json]: predicted vs published for every row of a validation file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "command.h"
#include "flags.h"
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
    w.end_object();
  }
  w.end_array();
  w.key("summary")
      .begin_object()
      .field("rows", r.rows)
      .field("predicted", r.predicted)
      .field("median_abs_error_pct", r.median_abs_error_pct)
      .field("max_abs_error_pct", r.max_abs_error_pct)
      .end_object();
  w.end_object();
  fmt::print("{}", w.str());
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
      row.push_back(fmt::format("{:.3g}", (s.tp_comm + s.cp_comm + s.pp_comm + s.dp_comm).si()));
      row.push_back(fmt::format("{:.3g}", s.bubble.si()));
      if (!est.fits_memory) {
        row.push_back("note: " + est.memory_note);
      }
    }
    t.add(row);
  }
  fmt::print(
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
    row.push_back(e.predicted ? "" : "not predicted: " + e.reason);
    t.add(row);
  }
  fmt::print(
      "inference rows, one line per metric (tokens/s; TTFT, TPOT and ITL in ms); mean batch: "
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
  fmt::print("\nsummary: {} rows, {} predicted, median |error| {:.1f} %, max |error| {:.1f} %\n",
             r.rows, r.predicted, r.median_abs_error_pct, r.max_abs_error_pct);
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
  app.add_option("--data", data, "catalog directory (default $GPUPLAN_DATA or the built-in one)");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  Result<Catalog> c = load_catalog(data);
  if (!c)
    return report_error(kName, c.error());
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
