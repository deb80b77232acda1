// Launchers of the GPU training loop's kernels (gpu_kernels.cu). Pointers are device memory;
// `void*` buffers hold bf16 values. All run on the default stream.
#ifndef GPUPLAN_SRC_MEASURE_GPU_KERNELS_H_
#define GPUPLAN_SRC_MEASURE_GPU_KERNELS_H_

#include <cstdint>

namespace gpuplan::measure::gpu {

// Weights from the counter-based generator, scaled by 1/sqrt(fan-in): the first `first_block`
// of each layer's weights by scale1, the rest by scale2; fp32 master and bf16 copy.
void init_weights(float* w32, void* w16, int64_t per_layer, int64_t layers, int64_t first_block,
                  float scale1, float scale2, uint64_t seed);
// Inputs and targets: global rows [first, first + tokens) of step `step`'s batch.
void load_batch(void* x, void* target, int64_t tokens, int64_t h, uint64_t seed, int64_t step,
                int64_t first);
void gelu_forward(const void* pre, void* act, int64_t n);
// grad *= gelu'(pre), in place.
void gelu_backward(void* grad, const void* pre, int64_t n);
// dx = (out - target) x inv_norm.
void seed_gradient(const void* out, const void* target, void* dx, int64_t n, float inv_norm);
// w32 -= lr g; w16 = bf16(w32).
void sgd(float* w32, const float* g, void* w16, int64_t n, float lr);

}  // namespace gpuplan::measure::gpu

#endif  // GPUPLAN_SRC_MEASURE_GPU_KERNELS_H_
