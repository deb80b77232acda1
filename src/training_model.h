// The pieces of the training-time model (private to training.cc): the compute of one layer and
// of the output head for one micro-batch on one GPU, by GEMM shape (training_compute.cc).
#ifndef GPUPLAN_SRC_TRAINING_MODEL_H_
#define GPUPLAN_SRC_TRAINING_MODEL_H_

#include <array>
#include <limits>
#include <optional>

#include "gpuplan/training.h"

namespace gpuplan::detail {

// Work of one transformer layer (or of the output head) for one micro-batch on one GPU.
struct LayerWork {
  Seconds gemm_forward;       // weight GEMMs
  Seconds gemm_backward;      // their input- and weight-gradient GEMMs
  Seconds attention_forward;  // attention core: fused kernels, or eager batched GEMMs + softmax
  Seconds attention_backward;
  Seconds elementwise_forward;  // norms, activations, residuals, dropout, casts
  Seconds elementwise_backward;
  Seconds recompute;  // forward work the recompute mode repeats in the backward

  Seconds forward() const { return gemm_forward + attention_forward + elementwise_forward; }
  Seconds backward() const { return gemm_backward + attention_backward + elementwise_backward; }
  Seconds total() const { return forward() + backward() + recompute; }
};

// Layer `layer` of the model (layers of one span cost the same). REQUIRES: the job's layout is
// valid for the model (layout_problem) and the GPU has a tile model.
LayerWork layer_work(const Model& m, int64_t layer, const Gpu& gpu, const TrainJob& job,
                     const TrainParams& p);

// Bytes per token that one MoE layer's forward pass moves on one GPU to permute the routed
// copies to their experts and back (the backward moves as many). REQUIRES: m.is_moe().
double permutation_bytes(const Model& m, const Parallelism& layout);

// The output head on the last stage: logits GEMM and its gradients, and the fp32 cross-entropy.
LayerWork head_work(const Model& m, const Gpu& gpu, const TrainJob& job, const TrainParams& p);

// The compute of one micro-batch that a layout's tp, cp, ep, sequence parallelism, recompute and
// micro-batch decide, and not its pp, dp, ZeRO stage or interleaving: a search times it once for
// all of those.
struct StepWork {
  std::array<LayerWork, 2> spans{};  // one layer of each of layer_spans(m), in order
  LayerWork head;
  double flops_per_token = 0;  // model_flops_per_token at the job's sequence length
};
StepWork step_work(const Model& m, const Gpu& gpu, const TrainJob& job, const TrainParams& p);

// What a search shares between the estimates of a group of layouts, and its bound.
struct SearchShortcut {
  // The step's work: taken from here when held, stored here when computed. REQUIRES: a held
  // work is step_work of a job that differs from the estimated one at most in pp, dp, ZeRO
  // stage and virtual stages.
  std::optional<StepWork> work;
  // Likewise the pipeline's stage_breaks (REQUIRES: for the estimated job's pp) and the model's
  // parameter count.
  std::optional<StageBreaks> breaks;
  std::optional<ParameterCount> parameters;
  // A layout that fits but whose step cannot take less than this (its slowest stage's compute
  // alone, times the micro-batches, plus the step overhead) is left untimed and marked `beaten`:
  // it cannot enter a ranking whose last entry takes this long.
  Seconds bound = Seconds(std::numeric_limits<double>::infinity());
  // Check the bound before sizing the memory (a beaten layout's fit is then unknown), not after.
  bool bound_before_memory = false;
  bool beaten = false;  // set by the last estimate
};

// estimate_training for a search: see SearchShortcut.
TrainEstimate estimate_training_with(const Model& m, const Cluster& c, const TrainJob& job,
                                     const MemoryParams& mp, const TrainParams& p,
                                     EstimateOptions options, SearchShortcut& shortcut);

// Whether `job` runs its linear layers' GEMMs in fp8 on this GPU.
bool fp8_gemms(const Gpu& gpu, const TrainJob& job);

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_TRAINING_MODEL_H_
