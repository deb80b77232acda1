// Predicted against published: runs gpuplan's models on the rows of a validation file.
//
// The file format is specified in data/validation/README.md (from shared/validation): a JSON
// object {schema: 1, kind: "training" | "inference", rows: [...]}, every row with a model in
// Hugging Face config.json form, a system (catalog GPU and fabric ids) and a layout. Each row
// gets error_pct = (predicted - published) / published x 100; a row the models cannot predict
// is kept with its reason and counts in `rows` but not in `predicted`. A malformed file is an
// Error naming the row and key.
#ifndef GPUPLAN_VALIDATION_H_
#define GPUPLAN_VALIDATION_H_

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/lang.h"
#include "gpuplan/result.h"
#include "gpuplan/serving.h"
#include "gpuplan/training.h"

namespace gpuplan {

struct ValidationEntry {
  std::string id;
  std::string metric;  // "step_time_s", "output_tokens_per_s", ...
  double published = 0;
  std::optional<double> predicted;
  double error_pct = 0;                   // meaningful only when predicted
  std::string reason;                     // why not predicted
  std::string note;                       // what was assumed to predict it (a rounded batch)
  std::string architecture;               // of the row's GPU; empty where the catalog has none
  std::optional<TrainEstimate> training;  // the estimate behind a training prediction
  std::optional<ServingResult> serving;   // the simulation behind a serving prediction
};

// The entries of one group. By metric: a serving file mixes throughput with latencies, whose
// errors differ by an order of magnitude, so one median over all of them says little. By GPU
// architecture: the fitted parameters saw some architectures and not others (their files say
// which), and a file of held-out rows shows whether they hold on the rest.
struct GroupSummary {
  std::string name;  // the metric ("output_tokens_per_s"), or the architecture ("hopper")
  int64_t rows = 0;
  int64_t predicted = 0;
  double median_abs_error_pct = 0;  // over the predicted entries; 0 when none
  double max_abs_error_pct = 0;
};

struct ValidationReport {
  std::string kind;
  std::vector<ValidationEntry> entries;
  int64_t rows = 0;
  int64_t predicted = 0;
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  std::vector<GroupSummary> by_metric;  // in the order each metric first appears
  // Over the entries whose GPU the catalog knows, in the order each architecture first appears.
  std::vector<GroupSummary> by_architecture;
};

// The MFU a published training run reached: model FLOPs (training.h, model_flops_per_token)
// over its GPUs' dense peak for the run's precision, from the published step time.
struct PublishedMfu {
  std::string id;
  std::string gpu;
  Precision precision = Precision::kBf16;
  double mfu = 0;
};

// The MFU of every training row of a validation file whose GPU the catalog knows.
Result<std::vector<PublishedMfu>> published_mfus(const std::string& path, const Catalog& catalog);

// The highest of `runs` in `precision`'s class (fp16 and bf16 count as one: the same tensor-core
// rate) on `gpu` or on a GPU with the same tensor cores: the same architecture and the same dense
// peak in that precision (the H200 SXM's runs count for the H100 SXM and the other way round);
// nullopt when none was published.
std::optional<PublishedMfu> best_published_mfu(const std::vector<PublishedMfu>& runs,
                                               const Catalog& catalog, const std::string& gpu,
                                               Precision precision);

// Names `run` as a ceiling for `gpu`: "the best published h100-sxm bf16 run (45.7 %, ID)", or,
// from another GPU with the same tensor cores, "the best published bf16 run on the same tensor
// cores (h100-sxm, 45.7 %, ID)"; in `lang`.
std::string published_mfu_text(const PublishedMfu& run, const std::string& gpu, Lang lang);

// The best MFU published on `gpu`'s tensor cores in `precision`'s class (best_published_mfu),
// from the catalog's own validation file (DATA/validation/training.json); nullopt when it has
// none or no such run.
std::optional<PublishedMfu> catalog_mfu_ceiling(const Catalog& catalog, const std::string& gpu,
                                                Precision precision);

// What a validation file holds: training runs or serving results (its `kind`).
enum class ValidationKind { kTraining, kInference };
Result<ValidationKind> validation_kind(const std::string& path);

// Reads and runs a validation file against the catalog's hardware and parameters.
Result<ValidationReport> run_validation(const std::string& path, const Catalog& catalog);

// One training row of a validation file, read and resolved against the catalog: everything a
// prediction needs, so that a fit can predict it under many parameter sets.
struct TrainingRow {
  std::string id;
  std::string source;  // where it was published (the unit of leave-one-source-out)
  double published = 0;
  std::string reason;  // non-empty: the row cannot be predicted (and the rest is unset)
  std::string note;    // what was assumed to predict it (a rounded global batch)
  Model model;
  Cluster cluster;
  TrainJob job;
};

// The training rows of a validation file of kind "training". A malformed file is an Error; a row
// gpuplan cannot predict keeps its reason.
Result<std::vector<TrainingRow>> read_training_rows(const std::string& path,
                                                    const Catalog& catalog);

// Predicts one row with the training model's parameters `params` (the catalog's hardware and
// memory parameters). Micro-batch and interleaving left open are chosen as planning chooses
// them: the fastest that fits the memory model.
ValidationEntry predict_training_row(const TrainingRow& row, const Catalog& catalog,
                                     const TrainParams& params);

// One inference row of a validation file, read and resolved against the catalog: everything a
// simulation needs, so that a fit can predict it under many parameter sets.
struct ServingMetric {
  std::string name;  // "output_tokens_per_s", "ttft_ms_mean", ...
  double published = 0;
};
struct ServingRow {
  std::string id;
  std::string source;
  std::vector<ServingMetric> metrics;
  std::string reason;  // non-empty: the row cannot be simulated (and the rest is unset)
  Model model;
  Instance instance;  // tp 0: the layout was not published, and each prediction picks one
  int64_t gpus = 0;   // the row's GPUs
  // How a size the row left null was taken from the others ("tp 4 = 8 GPUs / 2 replicas");
  // empty when the row gave them all, or none (then each prediction picks the layout).
  std::string layout_note;
  ServingSetup setup;
  Workload workload;  // `requests` is set by each prediction
  const EngineProfile* engine = nullptr;
  std::string engine_version;  // the release the row's engine text gives; empty: none
  // A row of continuous batching a serving client measured (Poisson arrivals, or latencies with
  // every request queued; no data set named): the requests its engine's own serving benchmark
  // sends (EngineProfile::benchmark_requests), every one of them measured from the first arrival
  // to the last completion, as that client reports. 0: the steady state (a throughput table sized
  // to reach it, or MLPerf's LoadGen, whose runs last at least ten minutes).
  int64_t benchmark_requests = 0;
};

// The inference rows of a validation file of kind "inference". A malformed file (a row without
// an id, a metric that is not a positive number) is an Error; a row gpuplan cannot simulate keeps
// its reason.
Result<std::vector<ServingRow>> read_serving_rows(const std::string& path, const Catalog& catalog);

// One entry per metric of `row`, simulated with the serving parameters `params` in place of the
// catalog's (the row's engine profile applies its own limits over them).
std::vector<ValidationEntry> predict_serving_row(const ServingRow& row, const Catalog& catalog,
                                                 const InferenceParams& params);

// Whether gpuplan predicts the serving metric `name` ("ttft_ms_mean" yes, "goodput" no).
bool predicts_serving_metric(const std::string& name);

// The publication a row's `source` names: its text up to the first ';' (the shared rows name the
// publication there and the table or file after it). The unit of leave-one-source-out for
// serving rows, whose sources name a different file per row of one publication.
std::string publication(const std::string& source);

// The median and largest |error_pct| of the predicted entries, over all of them and per metric.
void summarize(ValidationReport& report);

// The median of `values` (the mean of the middle two for an even count; 0 for none).
double median(std::vector<double> values);

}  // namespace gpuplan

#endif  // GPUPLAN_VALIDATION_H_
