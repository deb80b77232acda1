// The pieces of the training-time model (private to training.cc): the compute of one layer and
// of the output head for one micro-batch on one GPU, by GEMM shape (training_compute.cc).
#ifndef GPUPLAN_SRC_TRAINING_MODEL_H_
#define GPUPLAN_SRC_TRAINING_MODEL_H_

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

// The output head on the last stage: logits GEMM and its gradients, and the fp32 cross-entropy.
LayerWork head_work(const Model& m, const Gpu& gpu, const TrainJob& job, const TrainParams& p);

// The fused attention kernels' forward rate as a share of the 16-bit peak: FlashAttention-2 class,
// or on Hopper the kernels written for it when the job's software has them.
double attention_share(const Gpu& gpu, const TrainJob& job);

// Whether `job` runs its linear layers' GEMMs in fp8 on this GPU.
bool fp8_gemms(const Gpu& gpu, const TrainJob& job);

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_TRAINING_MODEL_H_
