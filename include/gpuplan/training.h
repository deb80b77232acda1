// How long a training step takes on a given cluster and parallel layout, and where the time
// goes.
//
// The estimate composes three models: compute (every GEMM of a layer at the GPU's peak times an
// efficiency that falls off for small GEMMs, attention kernels, and memory-bound work at the
// achieved HBM bandwidth), communication (collective.h over the fabric each group actually
// spans, groups placed TP innermost, then CP, DP and PP outermost, as Megatron-LM places them),
// and the pipeline schedule (1F1B or interleaved, with its bubble). Which communication overlaps
// with computation is stated by the TrainParams fractions, not hidden in a fudge factor.
// Every formula is in docs/FORMULAS.md#training.
#ifndef GPUPLAN_TRAINING_H_
#define GPUPLAN_TRAINING_H_

#include <optional>
#include <string>

#include "gpuplan/collective.h"
#include "gpuplan/hardware.h"
#include "gpuplan/memory.h"
#include "gpuplan/model.h"

namespace gpuplan {

// Physical parameters of the training-time model, shared by every estimate
// (data/params/training.toml).
struct TrainParams {
  double attention_efficiency = 0;  // attention kernels' fraction of the GEMM efficiency
  double elementwise_traffic = 0;   // HBM bytes moved per byte of stored activation (fwd)
  double dp_overlap = 0;            // share of the last micro-batch's backward that hides DP comm
  double zero3_overlap = 0;         // share of ZeRO-3 parameter traffic hidden behind compute
  double nccl_efficiency = 0;       // achieved fraction of a link's rate where no busbw is measured
  Seconds collective_latency;       // software latency of one collective pass (collective.h)
  Seconds step_overhead;            // per optimizer step: launch, data loader, bookkeeping
};

// The machines: how many GPUs of which type, how they are grouped into nodes, and the fabrics.
struct Cluster {
  const Gpu* gpu = nullptr;
  int64_t gpus = 1;
  int64_t gpus_per_node = 8;
  const Fabric* scale_up = nullptr;   // inside a node
  const Fabric* scale_out = nullptr;  // between nodes; may be null for one node
  int64_t nics_per_node = 0;
};

struct TrainJob {
  MemoryJob memory;              // task, precision, recompute, layout, seq, micro-batch
  int64_t context_parallel = 1;  // CP ranks splitting each sequence
  int64_t global_batch = 0;      // sequences per optimizer step
  double tokens = 0;             // token budget for time-to-train; 0: none
  std::optional<Money> price_per_gpu_hour;
};

// Where the time of one optimizer step goes. `compute` includes recomputation; the
// communication terms are what is left exposed after the stated overlap.
struct StepTime {
  Seconds compute;
  Seconds recompute;  // part of compute spent re-running forward passes
  Seconds tp_comm;
  Seconds cp_comm;
  Seconds pp_comm;
  Seconds dp_comm;
  Seconds bubble;
  Seconds optimizer;
  Seconds overhead;

  Seconds total() const {
    return compute + tp_comm + cp_comm + pp_comm + dp_comm + bubble + optimizer + overhead;
  }
};

struct TrainEstimate {
  bool feasible = false;
  std::string reason;  // why not, when infeasible
  // The memory model's verdict. A layout that does not fit is still timed (a published run
  // that did fit shows the memory model's error), but callers must show the verdict.
  bool fits_memory = false;
  std::string memory_note;
  TrainJob job;            // as estimated (micro-batch and virtual stages resolved)
  MemoryBreakdown memory;  // heaviest GPU
  Bytes usable;
  int64_t micro_batches = 0;  // per pipeline per step
  StepTime step;
  double tokens_per_s = 0;
  FlopsPerSecond model_flops_per_gpu;     // useful work (no recompute) per GPU per second
  FlopsPerSecond hardware_flops_per_gpu;  // what the GPUs executed, recompute included
  double mfu = 0;
  double hfu = 0;
  Seconds time_to_train;  // for job.tokens; 0 when no budget
  double gpu_hours = 0;
  double energy_joules = 0;  // at TDP: an upper bound
  std::optional<Money> cost;
};

// Builds the Network a cluster offers to collectives, from its fabrics' measured bus bandwidth
// (or link rate x nccl_efficiency where none is measured).
Network cluster_network(const Cluster& c, const TrainParams& p);

// One layout. REQUIRES: c.gpu has an efficiency calibration; job.memory.micro_batch > 0 and
// job.memory.layout.virtual_stages > 0. With `skip_over_memory`, a layout that does not fit is
// returned infeasible at once, untimed (what a search wants).
TrainEstimate estimate_training(const Model& model, const Cluster& c, const TrainJob& job,
                                const MemoryParams& mp, const TrainParams& tp,
                                bool skip_over_memory = false);

// How best_training treats the memory model's verdict when it picks a micro-batch size or a
// number of virtual stages.
enum class MemoryPolicy {
  kRequire,  // planning: prefer candidates that fit; the fastest of those
  kReport,   // a published run that is known to have fitted: the fastest, verdict reported
};

// As estimate_training, but a micro-batch or virtual-stage count of 0 means "pick the fastest
// value", as tuned published runs did, under `policy`. With kRequire and no candidate that
// fits, the fastest of all is returned with fits_memory false. Returns the reason when no
// candidate is feasible at all.
TrainEstimate best_training(const Model& model, const Cluster& c, const TrainJob& job,
                            const MemoryParams& mp, const TrainParams& tp,
                            MemoryPolicy policy = MemoryPolicy::kRequire);

// Model FLOPs per token of training (forward + backward, no recompute): 6 x matmul parameters
// a token uses + 6 x layers x seq x attention width (causal: half of the 12 l s a d of full
// attention). docs/FORMULAS.md#flops
double model_flops_per_token(const Model& model, int64_t seq);

}  // namespace gpuplan

#endif  // GPUPLAN_TRAINING_H_
