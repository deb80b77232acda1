// What `gpuplan serve` found, and its two writers: a text report for people and JSON for
// programs, from the same answer.
#ifndef GPUPLAN_TOOLS_SERVE_REPORT_H_
#define GPUPLAN_TOOLS_SERVE_REPORT_H_

#include <optional>
#include <string>

#include "gpuplan/engine.h"
#include "gpuplan/hardware.h"
#include "gpuplan/lang.h"
#include "gpuplan/serve.h"

namespace gpuplan::cli {

// What `gpuplan serve` was asked and found: the job and the library's answer (serve.h), with
// the job described for people.
struct ServeReport {
  std::string model;  // catalog id or file
  const Gpu* gpu = nullptr;
  const Offer* offer = nullptr;  // when the hardware came from an offer
  ServeJob job;
  std::optional<Precision> precision_given;  // --precision; nullopt: choose_weights decides
  std::optional<Precision> kv_precision_given;
  Text weights;       // how the answer names the weights (weights_name)
  Text weights_note;  // unread_format_note, when the checkpoint's format was not read
  ServeAnswer answer;
  std::string per_request;  // "467 -> 256 tokens per request", or the trace
  std::string load;         // the load, for people
  std::string load_kind;    // "offline", "poisson", "static_batch", "closed_loop"
  int64_t input = 0;        // tokens (the means, for a trace)
  int64_t output = 0;
  std::optional<Money> price;             // per GPU-hour
  const EngineProfile* engine = nullptr;  // whose defaults applied
  std::string engine_release;             // the release asked for; empty: the current one
  bool host_time_fitted = true;           // false: the shared host time stood in for its own
  // The architectures the serving parameters were fitted on, whether the GPU's is one of them
  // (serving_fit_note), and what the answer leans on unchecked (serving_caveats).
  std::vector<std::string> fit_architectures;
  bool fit_covers_gpu = true;
  std::vector<Text> caveats;
  Lang lang = Lang::kEn;  // of the text and HTML reports (and of per_request and load)
};

void print_serve_text(const ServeReport& r);
// What the answer leans on that no measurement or fit checked: the engine's host time where no
// published run of it was fitted, then the library's serving_caveats. The text report prints
// them as notes, the HTML report as caveats.
std::vector<Text> serve_caveats(const ServeReport& r);
void print_serve_json(const ServeReport& r);
// The shapes as CSV, one row each.
void print_serve_csv(const ServeReport& r);

// Loads the HTML report draws the latency curve at (ServeJob::curve_points).
inline constexpr int64_t kCurvePoints = 12;
// The HTML report, in r.lang: the answer, latency against load with the objective, memory per GPU
// of each shape, and the shapes' table. REQUIRES: r.job.curve_points set before serve() ran.
std::string serve_html(const ServeReport& r);

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_SERVE_REPORT_H_
