// Results of `gpuplan measure`, as files: what the harness writes, what `measure report` and
// `calibrate` read. JSON, one object per run, with every field named with its unit.
#ifndef GPUPLAN_MEASUREMENT_H_
#define GPUPLAN_MEASUREMENT_H_

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/collective.h"
#include "gpuplan/gemm.h"
#include "gpuplan/result.h"

namespace gpuplan {

struct CollectivePoint {
  double bytes = 0;
  double median_s = 0;
  double busbw = 0;  // bytes/s
  int64_t wrong = 0;
};

struct CollectiveRun {
  std::string op;
  std::string backend;
  int ranks = 0;
  std::vector<CollectivePoint> points;
};

struct TrainRun {
  std::string backend;
  int ranks = 0;
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t seq = 0;
  int64_t per_worker_batch = 0;
  bool overlap = true;
  double tokens_per_step = 0;
  double flops_per_step = 0;  // per rank
  double gradient_bytes = 0;
  double step_median_s = 0;
  double step_p90_s = 0;
  double compute_median_s = 0;
  double exposed_median_s = 0;
  double update_median_s = 0;
};

// Square GEMMs (measure gemm): every size's achieved rate, and the best.
struct GemmPoint {
  int64_t n = 0;  // an n x n x n GEMM: 2 n^3 FLOPs
  double flops_per_s = 0;
};
struct GemmRun {
  std::string backend;
  std::vector<GemmPoint> points;
  double best_flops_per_s = 0;
  int64_t best_n = 0;
};

// The run's sizes as GEMM samples (gemm.h) for the tile-model fit: n x n x n, batch 1.
std::vector<GemmSample> gemm_samples(const GemmRun& run);

// Reads a published GEMM sweep: a CSV with '#' comment lines (its source), the header
// "batch,m,n,k,TFLOP/s" and one measured GEMM per line. Errors name the file and line.
Result<std::vector<GemmSample>> read_gemm_sweep(const std::string& path);

// A copy probe (measure memory).
struct MemoryRun {
  std::string backend;
  double bytes = 0;
  double bytes_per_s = 0;
};

enum class MeasurementKind { kCollectives, kTrain, kGemm, kMemory };

// One file: one kind.
struct Measurement {
  std::string file;
  MeasurementKind kind = MeasurementKind::kCollectives;
  bool is_train = false;  // kind == kTrain
  CollectiveRun collectives;
  TrainRun train;
  GemmRun gemm;
  MemoryRun memory;
};

Result<Measurement> read_measurement(const std::string& path);

// nccl-tests' bus-bandwidth factor of collective `op` ("all_reduce", "all_gather",
// "reduce_scatter", "broadcast", "all_to_all") on n ranks: all-reduce 2(n-1)/n, broadcast 1,
// the others (n-1)/n.
double bus_factor(const std::string& op, int n);

// Fits t = alpha + S x factor / busbw to a sweep (least squares over the sizes, latency and
// bandwidth both >= 0); `factor` is the op's bus factor at the run's rank count.
struct AlphaBeta {
  double alpha_s = 0;
  double busbw = 0;  // bytes/s
};
AlphaBeta fit_alpha_beta(const CollectiveRun& run);

// The measure report (`gpuplan measure report`): training runs at several rank counts, their
// scaling efficiency by the source document's formula against the smallest, and — given the
// fabric the ranks talk over — gpuplan's prediction: the smallest run's compute and update plus
// the gradient all-reduce of the fabric's alpha-beta model (collective.h), left exposed (the
// prediction for --no-overlap, an upper bound on its cost).
struct ReportRow {
  TrainRun run;
  double tokens_per_s = 0;
  double efficiency_pct = 0;
  std::optional<double> predicted_pct;
};

struct MeasureReport {
  int base_ranks = 0;
  std::vector<ReportRow> rows;  // by rank count
};

// REQUIRES: runs not empty. `fabric` may be null (no prediction).
MeasureReport measure_report(std::vector<TrainRun> runs, const Fabric* fabric,
                             const TrainParams& params);

}  // namespace gpuplan

#endif  // GPUPLAN_MEASUREMENT_H_
