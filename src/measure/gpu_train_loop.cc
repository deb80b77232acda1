// The training loop on GPUs: the same network, data and schedule as train_loop.cc, with bf16
// weights and activations in cuBLAS GEMMs (fp32 accumulation), fp32 master weights and fp32
// gradients reduced by NCCL in buckets while the backward pass goes on.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "measure/gpu_kernels.h"
#include "measure/harness.h"

namespace gpuplan::measure {
namespace {

// A bf16 element, as stored on the device (the loop never reads it on the host).
struct bf16 {
  uint16_t bits;
};

// Row-major C[m x n] = op(A) op(B) (+ beta C) with bf16 inputs and fp32 accumulation; C is bf16
// or fp32. cuBLAS is column-major, so the product is computed as C^T = op(B)^T op(A)^T.
void gemm(cublasHandle_t handle, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const bf16* a,
          const bf16* b, void* c, cudaDataType_t c_type, float beta) {
  const float alpha = 1.0f;
  cublasGemmEx(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
               static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
               CUDA_R_16BF, static_cast<int>(tb ? k : n), a, CUDA_R_16BF,
               static_cast<int>(ta ? m : k), &beta, c, c_type, static_cast<int>(n),
               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

template <class T>
T* device(size_t count) {
  void* p = nullptr;
  cudaMalloc(&p, std::max<size_t>(1, count) * sizeof(T));
  cudaMemset(p, 0, std::max<size_t>(1, count) * sizeof(T));
  return static_cast<T*>(p);
}

}  // namespace

TrainResult train_loop_gpu(Communicator& comm, Watchdog& dog, const TrainOptions& o) {
  const int n = comm.size();
  const int64_t h = o.hidden;
  const int64_t f = 4 * o.hidden;
  const int64_t L = o.layers;
  const int64_t tokens = o.per_worker_batch * o.seq;
  const int64_t per_layer = 2 * h * f;
  const int64_t params = per_layer * L;
  TrainResult r;
  r.ranks = n;
  r.parameters = params;
  r.tokens_per_step = static_cast<double>(tokens * n);
  r.flops_per_step = 6.0 * static_cast<double>(params * tokens);
  r.gradient_bytes = static_cast<double>(params) * sizeof(float);

  cublasHandle_t handle;
  cublasCreate(&handle);
  float* w32 = device<float>(static_cast<size_t>(params));
  bf16* w16 = device<bf16>(static_cast<size_t>(params));
  // Gradients live where the communicator can reduce them.
  float* g = comm.allocate(static_cast<size_t>(params));
  bf16* x = device<bf16>(static_cast<size_t>((L + 1) * tokens * h));
  bf16* pre = device<bf16>(static_cast<size_t>(L * tokens * f));
  bf16* act = device<bf16>(static_cast<size_t>(L * tokens * f));
  bf16* dx = device<bf16>(static_cast<size_t>(tokens * h));
  bf16* dx_next = device<bf16>(static_cast<size_t>(tokens * h));
  bf16* da = device<bf16>(static_cast<size_t>(tokens * f));
  bf16* target = device<bf16>(static_cast<size_t>(tokens * h));
  gpu::init_weights(w32, w16, per_layer, L, h * f, 1.0f / std::sqrt(static_cast<float>(h)),
                    1.0f / std::sqrt(static_cast<float>(f)), o.seed);
  const float inv_norm = static_cast<float>(1.0 / static_cast<double>(tokens * n * h));
  const int64_t layers_per_bucket = std::max<int64_t>(
      1, static_cast<int64_t>(o.bucket_bytes / (static_cast<double>(per_layer) * 4)));
  r.buckets = static_cast<int>((L + layers_per_bucket - 1) / layers_per_bucket);
  cudaDeviceSynchronize();

  for (int step = 0; step < o.warmup + o.steps; ++step) {
    comm.barrier();
    dog.begin(fmt::format("training step {}", step));
    const double t0 = seconds_now();
    gpu::load_batch(x, target, tokens, h, o.seed, step, comm.rank() * tokens);
    for (int64_t l = 0; l < L; ++l) {
      const bf16* xl = x + l * tokens * h;
      bf16* p = pre + l * tokens * f;
      bf16* a = act + l * tokens * f;
      bf16* y = x + (l + 1) * tokens * h;
      const bf16* w1 = w16 + l * per_layer;
      const bf16* w2 = w1 + h * f;
      gemm(handle, false, false, tokens, f, h, xl, w1, p, CUDA_R_16BF, 0.0f);
      gpu::gelu_forward(p, a, tokens * f);
      cudaMemcpyAsync(y, xl, static_cast<size_t>(tokens * h) * sizeof(bf16),
                      cudaMemcpyDeviceToDevice);
      gemm(handle, false, false, tokens, h, f, a, w2, y, CUDA_R_16BF, 1.0f);
    }
    gpu::seed_gradient(x + L * tokens * h, target, dx, tokens * h, inv_norm);
    std::vector<std::unique_ptr<Request>> pending;
    int64_t bucket_end = L;
    for (int64_t l = L - 1; l >= 0; --l) {
      const bf16* xl = x + l * tokens * h;
      const bf16* p = pre + l * tokens * f;
      const bf16* a = act + l * tokens * f;
      const bf16* w1 = w16 + l * per_layer;
      const bf16* w2 = w1 + h * f;
      float* g1 = g + l * per_layer;
      float* g2 = g1 + h * f;
      gemm(handle, true, false, f, h, tokens, a, dx, g2, CUDA_R_32F, 0.0f);
      gemm(handle, false, true, tokens, f, h, dx, w2, da, CUDA_R_16BF, 0.0f);
      gpu::gelu_backward(da, p, tokens * f);
      gemm(handle, true, false, h, f, tokens, xl, da, g1, CUDA_R_32F, 0.0f);
      cudaMemcpyAsync(dx_next, dx, static_cast<size_t>(tokens * h) * sizeof(bf16),
                      cudaMemcpyDeviceToDevice);
      gemm(handle, false, true, tokens, h, f, da, w1, dx_next, CUDA_R_16BF, 1.0f);
      std::swap(dx, dx_next);
      const bool full = bucket_end - l >= layers_per_bucket || l == 0;
      if (full && n > 1 && o.overlap) {
        // The bucket's gradients must exist before NCCL reads them on its own stream.
        cudaDeviceSynchronize();
        pending.push_back(comm.start_all_reduce(g + l * per_layer,
                                                static_cast<size_t>((bucket_end - l) * per_layer)));
        bucket_end = l;
      } else if (full) {
        bucket_end = l;
      }
    }
    cudaDeviceSynchronize();
    const double t_backward = seconds_now();
    if (n > 1 && !o.overlap) {
      comm.run(Op::kAllReduce, g, g, static_cast<size_t>(params));
      comm.synchronize();
    }
    for (auto& q : pending) {
      q->wait();
    }
    const double t_reduced = seconds_now();
    gpu::sgd(w32, g, w16, params, o.learning_rate);
    cudaDeviceSynchronize();
    const double t_end = seconds_now();
    dog.end();
    const double step_s = comm.max(t_end - t0);
    const double compute = comm.max(t_backward - t0);
    const double exposed = comm.max(t_reduced - t_backward);
    const double update = comm.max(t_end - t_reduced);
    if (step >= o.warmup) {
      r.step_s.push_back(step_s);
      r.compute_s.push_back(compute);
      r.exposed_s.push_back(exposed);
      r.update_s.push_back(update);
    }
  }
  for (void* p : std::initializer_list<void*>{w32, w16, x, pre, act, dx, dx_next, da, target}) {
    cudaFree(p);
  }
  comm.release(g);
  cublasDestroy(handle);
  return r;
}

std::vector<GemmPoint> gpu_gemm_sweep(const std::vector<int64_t>& sizes, int iters) {
  cublasHandle_t handle;
  cublasCreate(&handle);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<GemmPoint> out;
  for (int64_t n : sizes) {
    const size_t count = static_cast<size_t>(n * n);
    bf16* a = device<bf16>(count);
    bf16* b = device<bf16>(count);
    bf16* c = device<bf16>(count);
    std::vector<double> times;
    for (int it = 0; it < iters + 1; ++it) {
      cudaEventRecord(start);
      gemm(handle, false, false, n, n, n, a, b, c, CUDA_R_16BF, 0.0f);
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (it > 0)
        times.push_back(ms / 1e3);
    }
    std::sort(times.begin(), times.end());
    const double t = times[times.size() / 2];
    const double d = static_cast<double>(n);
    out.push_back({n, t, 2.0 * d * d * d / t});
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasDestroy(handle);
  return out;
}

MemoryPoint gpu_memory_probe(double bytes, int iters) {
  const size_t n = static_cast<size_t>(bytes);
  char* src = device<char>(n);
  char* dst = device<char>(n);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> times;
  for (int it = 0; it < iters + 1; ++it) {
    cudaEventRecord(start);
    cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (it > 0)
      times.push_back(ms / 1e3);
  }
  std::sort(times.begin(), times.end());
  const double t = times[times.size() / 2];
  cudaFree(src);
  cudaFree(dst);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return {bytes, t, 2.0 * bytes / t};
}

}  // namespace gpuplan::measure
