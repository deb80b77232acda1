// The arithmetic the CPU and GPU training loops share, in one place so that both generate the
// same data and differentiate the same activation: a counter-based random generator and the
// tanh approximation of GELU. Compiled by g++ (train_loop.cc) and by nvcc (gpu_kernels.cu).
#ifndef GPUPLAN_SRC_MEASURE_NETWORK_MATH_H_
#define GPUPLAN_SRC_MEASURE_NETWORK_MATH_H_

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define GPUPLAN_HOST_DEVICE __host__ __device__
#else
#define GPUPLAN_HOST_DEVICE
#endif

namespace gpuplan::measure {

// A uniform number in [-1, 1): the same (seed, stream, index) always gives the same number, so
// any rank can produce any row of the global batch (splitmix64 finaliser).
GPUPLAN_HOST_DEVICE inline float uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL ^
               (stream + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL ^
               index * 0x94D049BB133111EBULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

// Global row `row` of step `step`'s batch, column `c`: the index the generator draws from.
GPUPLAN_HOST_DEVICE inline uint64_t batch_index(int64_t step, int64_t row, int64_t h, int64_t c) {
  return static_cast<uint64_t>((step * 1000003LL + row) * h + c);
}

constexpr float kGeluC = 0.7978845608f;  // sqrt(2 / pi)

GPUPLAN_HOST_DEVICE inline float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(kGeluC * (x + 0.044715f * x * x * x)));
}

GPUPLAN_HOST_DEVICE inline float gelu_grad(float x) {
  const float u = kGeluC * (x + 0.044715f * x * x * x);
  const float t = tanhf(u);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3 * 0.044715f * x * x);
}

}  // namespace gpuplan::measure

#endif  // GPUPLAN_SRC_MEASURE_NETWORK_MATH_H_
