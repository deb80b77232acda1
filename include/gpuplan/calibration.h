// Fitting the training-time model to published runs, and judging it on runs it has not seen.
//
// A few parameters of the training model are not measured by any microbenchmark the project has:
// the share of their microbenchmark rate that GEMM and attention kernels keep inside a step (one
// per GPU architecture), the elementwise HBM traffic per byte a kernel's tensors hold, the launch
// gap of one elementwise kernel, the slowdown that hidden communication causes the compute under
// it, and the fixed time per optimizer step. They are few, physical and shared by every run and
// framework, and this module is the only place that sets them: it fits them to the rows of a
// validation file by least absolute log error, each row's at most log 1.3 (so that a row missed
// for a reason the parameters cannot mend does not pull them), from a fixed start, so anyone can
// refit them and get the same numbers. gpuplan calibrate --validation writes the result into
// data/params/training-fit.toml. Leave-one-source-out cross-validation refits without
// each source's rows and predicts them, which is the error to expect on runs from a source the fit
// never saw. docs/VALIDATION.md shows both.
#ifndef GPUPLAN_CALIBRATION_H_
#define GPUPLAN_CALIBRATION_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/validation.h"

namespace gpuplan {

// Both fits minimise the mean over their entries of min(|log(predicted / published)|,
// log kFitMissRatio): an entry off by more than this ratio, or not predicted, counts as one miss
// whatever its size (calibration.cc, log_miss).
inline constexpr double kFitMissRatio = 1.3;

// A fitted parameter: its name as in its -fit.toml file, its value and the physical range
// searched, and the unit the file gives it in ("ms", "us"; "" for a share or ratio).
struct FittedParameter {
  std::string name;
  double value = 0;  // SI (times in seconds)
  double lower = 0;
  double upper = 0;
  std::string unit;
};

struct TrainingFit {
  TrainParams params;  // the catalog's, with the fitted ones replaced
  std::vector<FittedParameter> fitted;
  int64_t rows = 0;                 // rows that informed the fit (predictable, source not excluded)
  double median_abs_error_pct = 0;  // over those rows
  double max_abs_error_pct = 0;
  int evaluations = 0;
  std::string caveat;  // non-empty when the rows are too few to pin the parameters
};

// A fitted value with its unit, as a -fit.toml file holds it: "61.05 ms", "1.302 us", "0.5147".
std::string fitted_value_text(const FittedParameter& f);

// Fits the four parameters to `rows`, leaving out rows whose source is in `exclude`. With no row
// left, the catalog's parameters are returned unchanged (rows = 0).
TrainingFit fit_training(const std::vector<TrainingRow>& rows, const Catalog& catalog,
                         const std::set<std::string>& exclude = {});

// One row, predicted with the fit to every row (in sample) and with the fit to every other
// source's rows (out of sample).
struct CrossValidatedRow {
  std::string id;
  std::string metric;  // "step_time_s" for training rows
  std::string source;
  double published = 0;
  std::optional<double> in_sample;  // predicted step time, s
  std::optional<double> out_of_sample;
  std::string reason;  // why not predicted
};

struct CrossValidation {
  std::vector<CrossValidatedRow> rows;
  int64_t sources = 0;
  double median_in_pct = 0;
  double max_in_pct = 0;
  double median_out_pct = 0;
  double max_out_pct = 0;
};

// Leave-one-source-out over the sources of `rows`, fitted on `threads` threads (the answer does
// not depend on the thread count).
CrossValidation cross_validate_training(const std::vector<TrainingRow>& rows,
                                        const Catalog& catalog, int threads = 1);

// training-fit.toml for `fit`, naming `what` it was fitted to.
std::string training_fit_file(const TrainingFit& fit, const std::string& what);

// The serving model's parameters that no microbenchmark gives (params/serving-fit.toml): the
// engine's host time per iteration, the fixed time per layer per iteration beyond its kernels'
// time, the share of the streaming bandwidth that memory-bound attention and elementwise
// kernels reach, the share of their microbenchmark compute rate that GEMM and attention
// kernels keep on a loaded GPU, and the passes elementwise kernels make over the tensors a token
// writes (fewer where the engine fuses them).
// Fitted to every (row, metric) entry of a validation file of kind "inference" by least
// absolute log error, each entry's at most log 1.3, from a fixed start, as the training fit is;
// an entry off by more than 30 % or not predicted at some trial parameters counts as one miss.
struct ServingFit {
  InferenceParams params;  // the catalog's, with the fitted ones and the rows' architectures
                           // (fitted_architectures) replaced
  std::vector<FittedParameter> fitted;
  int64_t entries = 0;  // (row, metric) entries that informed the fit
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  int evaluations = 0;
  std::string caveat;
};

// Fits the four parameters to `rows`, leaving out rows whose publication (validation.h) is in
// `exclude`. With no entry left, the catalog's parameters are returned unchanged (entries = 0).
ServingFit fit_serving(const std::vector<ServingRow>& rows, const Catalog& catalog,
                       const std::set<std::string>& exclude = {});

// Leave-one-publication-out over the serving rows, one entry per (row, metric).
CrossValidation cross_validate_serving(const std::vector<ServingRow>& rows, const Catalog& catalog,
                                       int threads = 1);

// serving-fit.toml for `fit`, naming `what` it was fitted to.
std::string serving_fit_file(const ServingFit& fit, const std::string& what);

}  // namespace gpuplan

#endif  // GPUPLAN_CALIBRATION_H_
