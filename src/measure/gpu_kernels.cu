// The GPU training loop's kernels (compiled by nvcc), behind plain launch functions so that the
// loop itself stays ordinary C++ (gpu_train_loop.cc).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "measure/gpu_kernels.h"
#include "measure/network_math.h"

namespace gpuplan::measure::gpu {
namespace {

using bf16 = __nv_bfloat16;

__global__ void init_weights_kernel(float* w32, bf16* w16, int64_t per_layer, int64_t layers,
                                    int64_t first_block, float scale1, float scale2,
                                    uint64_t seed) {
  const int64_t n = per_layer * layers;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float s = (i % per_layer) < first_block ? scale1 : scale2;
    w32[i] = s * uniform(seed, 1, static_cast<uint64_t>(i));
    w16[i] = __float2bfloat16(w32[i]);
  }
}

__global__ void load_batch_kernel(bf16* x, bf16* target, int64_t tokens, int64_t h, uint64_t seed,
                                  int64_t step, int64_t first) {
  const int64_t n = tokens * h;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / h;
    const int64_t c = i % h;
    const uint64_t idx = batch_index(step, first + t, h, c);
    x[i] = __float2bfloat16(uniform(seed, 2, idx));
    target[i] = __float2bfloat16(uniform(seed, 3, idx));
  }
}

__global__ void gelu_forward_kernel(const bf16* pre, bf16* act, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    act[i] = __float2bfloat16(gelu(__bfloat162float(pre[i])));
  }
}

__global__ void gelu_backward_kernel(bf16* grad, const bf16* pre, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    grad[i] = __float2bfloat16(__bfloat162float(grad[i]) * gelu_grad(__bfloat162float(pre[i])));
  }
}

__global__ void seed_gradient_kernel(const bf16* out, const bf16* target, bf16* dx, int64_t n,
                                     float inv_norm) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = __float2bfloat16((__bfloat162float(out[i]) - __bfloat162float(target[i])) * inv_norm);
  }
}

__global__ void sgd_kernel(float* w32, const float* g, bf16* w16, int64_t n, float lr) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    w32[i] -= lr * g[i];
    w16[i] = __float2bfloat16(w32[i]);
  }
}

constexpr int kBlocks = 1024;
constexpr int kThreads = 256;

}  // namespace

using Bf16 = __nv_bfloat16;

void init_weights(float* w32, void* w16, int64_t per_layer, int64_t layers, int64_t first_block,
                  float scale1, float scale2, uint64_t seed) {
  init_weights_kernel<<<kBlocks, kThreads>>>(w32, static_cast<Bf16*>(w16), per_layer, layers,
                                             first_block, scale1, scale2, seed);
}
void load_batch(void* x, void* target, int64_t tokens, int64_t h, uint64_t seed, int64_t step,
                int64_t first) {
  load_batch_kernel<<<kBlocks, kThreads>>>(static_cast<Bf16*>(x), static_cast<Bf16*>(target),
                                           tokens, h, seed, step, first);
}
void gelu_forward(const void* pre, void* act, int64_t n) {
  gelu_forward_kernel<<<kBlocks, kThreads>>>(static_cast<const Bf16*>(pre), static_cast<Bf16*>(act),
                                             n);
}
void gelu_backward(void* grad, const void* pre, int64_t n) {
  gelu_backward_kernel<<<kBlocks, kThreads>>>(static_cast<Bf16*>(grad),
                                              static_cast<const Bf16*>(pre), n);
}
void seed_gradient(const void* out, const void* target, void* dx, int64_t n, float inv_norm) {
  seed_gradient_kernel<<<kBlocks, kThreads>>>(static_cast<const Bf16*>(out),
                                              static_cast<const Bf16*>(target),
                                              static_cast<Bf16*>(dx), n, inv_norm);
}
void sgd(float* w32, const float* g, void* w16, int64_t n, float lr) {
  sgd_kernel<<<kBlocks, kThreads>>>(w32, g, static_cast<Bf16*>(w16), n, lr);
}

}  // namespace gpuplan::measure::gpu
