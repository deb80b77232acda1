// How long a training step takes on a given cluster, parallel layout and training software, and
// where the time goes.
//
// The estimate composes four models. Compute: every GEMM of a layer by its shape (gemm.h: tiles,
// waves, memory traffic, the sustained ceiling), forward, input-gradient and weight-gradient;
// attention as fused kernels or as the eager batched GEMMs and softmax of 2021-22 frameworks;
// memory-bound elementwise work at the achieved HBM bandwidth. Communication: collective.h over
// the fabric each group spans, groups placed TP innermost, then CP, DP and PP outermost, as
// Megatron-LM places them. Overlap: what the software hides (framework.h) is hidden behind the
// compute it runs under, and hidden traffic still slows that compute by `overlap_slowdown` of its
// own time (NCCL kernels take SMs and memory bandwidth). And the pipeline schedule: 1F1B or
// interleaved, its bubble and its point-to-point transfers. Every formula is in
// docs/FORMULAS.md#training.
#ifndef GPUPLAN_TRAINING_H_
#define GPUPLAN_TRAINING_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/collective.h"
#include "gpuplan/framework.h"
#include "gpuplan/gemm.h"
#include "gpuplan/hardware.h"
#include "gpuplan/lang.h"
#include "gpuplan/memory.h"
#include "gpuplan/model.h"
#include "gpuplan/params.h"
#include "gpuplan/why.h"

namespace gpuplan {

struct TrainJob {
  MemoryJob memory;          // task, precision, recompute, layout, seq, micro-batch, state
  int64_t global_batch = 0;  // sequences per optimizer step
  double tokens = 0;         // token budget for time-to-train; 0: none
  Software software;         // framework and year; null framework: none applied
  std::optional<Money> price_per_gpu_hour;
};

// Sets what the software decides about a job: its mixed-precision state bytes and whether its
// attention kernels are fused (framework.h). Front ends call this, then apply explicit overrides.
void apply_software(TrainJob& job, const Software& software);

// Where the time of one optimizer step goes. `compute` includes recomputation; the
// communication terms are what is left exposed after the software's overlap, plus the slowdown
// that hidden traffic causes the compute under it.
struct StepTime {
  Seconds compute;
  Seconds recompute;  // part of compute spent re-running forward passes
  // Part of compute spent adding each micro-batch's gradients to the earlier ones' where the
  // framework runs kernels of its own for it (docs/FORMULAS.md#gradient-accumulation).
  Seconds grad_accumulation;
  Seconds tp_comm;  // tensor parallelism
  Seconds ep_comm;  // expert parallelism: the routed tokens' all-to-alls
  Seconds cp_comm;
  Seconds pp_comm;
  Seconds dp_comm;  // gradient and weight synchronisation, ZeRO-3 gathers included
  Seconds bubble;
  Seconds optimizer;
  Seconds overhead;

  Seconds total() const {
    return compute + tp_comm + ep_comm + cp_comm + pp_comm + dp_comm + bubble + optimizer +
           overhead;
  }
  Seconds communication() const { return tp_comm + ep_comm + cp_comm + pp_comm + dp_comm; }
};

struct TrainEstimate {
  bool feasible = false;
  Why why = Why::kNone;  // the kind of reason, when infeasible
  std::string reason;    // why not, when infeasible
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
  // With a price: what a million tokens cost at this throughput, all GPUs paid by the hour.
  std::optional<Money> cost_per_million_tokens;
  // What the estimate leaves out that published runs of such a job show to matter
  // (training_caveats); set by the answers (train_layout, search_layouts), not per estimate.
  std::vector<Text> caveats;
  // The architecture ("hopper") whose own kernels its attention ran (native_attention_kernels);
  // empty where it ran the FlashAttention-2 class or eager attention.
  std::string native_attention;
};

// Which attention kernels `job` runs on `gpu`: eager where its software has no fused kernels,
// the kernels written for the GPU's architecture (FlashAttention-3 or cuDNN's on Hopper, cuDNN's
// on Blackwell) where its software has them that year (framework.h, native_attention_since),
// else the FlashAttention-2 class.
AttentionKernels attention_kernels(const Gpu& gpu, const TrainJob& job);

// How the job's micro-batches add up their weight gradients where the ranks keep them whole
// (ZeRO below the framework's gradient-sharding stage), its 16-bit format bf16 (fp8 runs keep
// bf16) or fp16; kFused, nothing to count, where they are sharded or no framework is named
// (docs/FORMULAS.md#gradient-accumulation).
GradAccumulation grad_accumulation(const TrainJob& job);

// Whether `job`'s MoE all-to-alls run under another micro-batch's compute: its framework overlaps
// them that year, it has expert parallelism, and its pipeline, if any, is interleaved
// (docs/FORMULAS.md#parallelism).
bool ep_comm_overlapped(const TrainJob& job);

// Whether `job`'s attention runs at the measured rate of the kernels written for `gpu`'s
// architecture (efficiency.attention_native in data/gpus/): it runs them, and the GPU has the
// rate (native_attention_rate).
bool native_attention_kernels(const Gpu& gpu, const TrainJob& job);

// Why `v` virtual stages cannot interleave `pp` stages of `model` under the software's pipeline
// engine, or nullopt: Megatron needs the layers (or, where it can count them, the layers with the
// embedding and the loss) to divide evenly into pp x v chunks, DeepSpeed's engine does not
// interleave, a custom engine balances uneven chunks (at least one layer each).
std::optional<std::string> interleaving_problem(const Model& model, int64_t pp, int64_t v,
                                                const Software& software);
// The same rule without the words: whether the interleaving can run.
bool interleaving_allowed(const Model& model, int64_t pp, int64_t v, const Software& software);

// Why the job's framework, as of the job's year, cannot run its layout: context parallelism,
// Megatron's sequence parallelism, selective recompute or a ZeRO stage it did not have yet
// (Framework::*_since, zero_since), or ZeRO-2/3 under DeepSpeed's pipeline engine with more than
// one stage; nullopt when it can.
std::optional<std::string> software_layout_problem(const TrainJob& job);

// The multiple of `unit` (dp x micro-batch) nearest to a global batch of `given` sequences, at
// least one `unit`; halfway rounds down.
int64_t nearest_global_batch(int64_t given, int64_t unit);

// What an estimate does with a layout that cannot run as asked.
struct EstimateOptions {
  // A layout that does not fit in memory is returned infeasible at once, untimed; otherwise it
  // is timed and `memory_note` says it does not fit.
  bool skip_over_memory = false;
  // false: an infeasible estimate says its kind (`why`) but leaves `reason` empty, so that a
  // search over many layouts formats no sentence it will not show.
  bool reasons = true;
  // false: a layout the job's framework could not run in its year (software_layout_problem) is
  // timed all the same, as a published run shows that it ran (validate).
  bool software_layouts = true;
};

// One layout. REQUIRES: c.gpu has an efficiency calibration and a tile model;
// job.memory.micro_batch > 0 and job.memory.layout.virtual_stages > 0.
TrainEstimate estimate_training(const Model& model, const Cluster& c, const TrainJob& job,
                                const MemoryParams& mp, const TrainParams& tp,
                                EstimateOptions options = {});

// How best_training treats the memory model's verdict when it picks a micro-batch size or a
// number of virtual stages.
enum class MemoryPolicy {
  // The fastest candidate that fits; with none that fits, the one that needs the least memory,
  // so that what is reported is how far the layout is from running (train, scale).
  kRequire,
  // The fastest candidate that fits; with none that fits, the fastest of all: a published run
  // did run, so where the memory model rejects every choice it is the model that disagrees and
  // the run is taken as tuned for speed (validate). Its layout is timed even where the framework
  // file says the framework could not run it that year (EstimateOptions::software_layouts).
  kPublished,
  // The fastest, the verdict only reported.
  kReport,
};

// As estimate_training, but a micro-batch or virtual-stage count of 0 means "pick the fastest
// value", as tuned published runs did, under `policy`; what is returned without a fitting
// candidate has fits_memory false. Returns the reason when no candidate is feasible at all.
TrainEstimate best_training(const Model& model, const Cluster& c, const TrainJob& job,
                            const MemoryParams& mp, const TrainParams& tp,
                            MemoryPolicy policy = MemoryPolicy::kRequire);

// Why `gpu` cannot train in the job's precision (fp8 without fp8 tensor cores: Transformer
// Engine's fp8 recipes need Hopper or later; tf32 on Turing), or nullopt. estimate_training rejects
// such a job; train_layout reports it under "precision".
std::optional<std::string> training_precision_problem(const Gpu& gpu, const MemoryJob& job);

// What the training model leaves out for `model` that published runs show to matter, for people
// to read beside an estimate: a mixture of experts is timed by its expert GEMMs, router and
// all-to-alls, without the host time of per-expert kernels and of the synchronisation that sizes
// each all-to-all, and held-out Megatron runs of fine-grained MoE models took much longer
// (docs/VALIDATION.md). Which of `gpu`'s rates a step of `job` (its precision, its attention
// kernels) leans on are catalog estimates, not measurements (estimated_rates). And, where the
// training fit `p` saw no run on `gpu`'s architecture (no in_situ of its own), that its default
// stands in unchecked. Empty when nothing is known to be missing.
std::vector<Text> training_caveats(const Model& model, const Gpu& gpu, const TrainJob& job,
                                   const TrainParams& p);

// The train answer (`gpuplan train` on a layout the user chose): dp 0 takes the GPUs that tp x pp
// x cp leave; a layout that does not use every GPU or does not suit the model is an Error at
// "layout"; then best_training, which picks micro-batch and interleaving where they are 0.
Result<TrainEstimate> train_layout(const Model& model, const Cluster& c, TrainJob job,
                                   const MemoryParams& mp, const TrainParams& tp);

// Model FLOPs per token of training (forward + backward, no recompute): 6 x matmul parameters
// a token uses + 6 x layers x seq x attention width (causal: half of the 12 l s a d of full
// attention), scaled by attended_share for sliding-window layers. docs/FORMULAS.md#flops
double model_flops_per_token(const Model& model, int64_t seq);

}  // namespace gpuplan

#endif  // GPUPLAN_TRAINING_H_
