// How well training scales from a few GPUs to many: the source document's efficiency curve.
//
// efficiency = T_base x N_base / (T_N x N) x 100, with T the time to process the same tokens
// (docs/FORMULAS.md#scaling). A scaling curve means something only when it compares like with
// like, so by default every count runs the per-GPU setup of the smallest count that runs — the
// same tensor parallelism, micro-batch, recomputation and ZeRO stage, more data parallelism —
// and the curve shows what the extra GPUs' communication costs. With `best`, each count gets
// its own fastest layout instead; a point above 100 % then says why (the smaller count had to
// recompute or shard to fit, which the larger one need not).
#ifndef GPUPLAN_SCALING_H_
#define GPUPLAN_SCALING_H_

#include <string>
#include <vector>

#include "gpuplan/training.h"

namespace gpuplan {

struct ScaleJob {
  TrainJob base;                // model-independent job: precision, seq, software, price
  std::vector<int64_t> counts;  // GPU counts, ascending
  int64_t per_gpu_batch = 0;    // weak scaling: sequences per GPU per step (0: use global)
  int64_t global_batch = 0;     // strong scaling: sequences per step at every count
  bool best = false;            // each count's fastest layout instead of the base's setup
};

struct ScalePoint {
  int64_t gpus = 0;
  TrainEstimate estimate;        // feasible or with the reason
  double seconds_per_token = 0;  // step / tokens per step
  double efficiency_pct = 0;     // against the base point
  double comm_share = 0;         // exposed communication / step
  bool superlinear = false;      // efficiency above 100 %
  std::string note;              // why a point is superlinear, or what it could not keep
};

struct ScaleCurve {
  std::vector<ScalePoint> points;
  int64_t base_gpus = 0;      // the smallest count that runs; 0 when none does
  std::vector<Text> caveats;  // what the model leaves out for this model (training_caveats)
};

// The curve on the cluster `node` describes (its GPU, fabrics, GPUs per node and NICs; the count
// is replaced by each of job.counts). REQUIRES: counts positive; one of the batch sizes set, and
// a global batch divisible by every count.
ScaleCurve scale_training(const Model& model, const Cluster& node, const ScaleJob& job,
                          const MemoryParams& mp, const TrainParams& tp);

// "tp 1, micro-batch 8, no recompute, ZeRO 0": the per-GPU setup a curve keeps.
std::string train_setup_text(const TrainJob& job);

}  // namespace gpuplan

#endif  // GPUPLAN_SCALING_H_
