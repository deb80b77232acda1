// GEMM and memory-bandwidth probes on the CPU backend (OpenBLAS, memcpy); the GPU backend's
// live in gpu_train_loop.cc.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "measure/harness.h"

namespace gpuplan::measure {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<GemmPoint> gemm_sweep(Communicator& comm, const std::vector<int64_t>& sizes,
                                  int iters) {
  if (comm.backend() == "nccl") {
    return gpu_gemm_sweep(sizes, iters);
  }
  std::vector<GemmPoint> out;
  for (int64_t n : sizes) {
    const size_t count = static_cast<size_t>(n * n);
    std::vector<float> a(count, 0.5f), b(count, 0.25f), c(count, 0.0f);
    std::vector<double> times;
    for (int it = 0; it < iters + 1; ++it) {
      const double t0 = seconds_now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n),
                  static_cast<int>(n), static_cast<int>(n), 1.0f, a.data(), static_cast<int>(n),
                  b.data(), static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
      if (it > 0)
        times.push_back(seconds_now() - t0);  // the first run warms the caches and threads
    }
    const double t = median(times);
    const double d = static_cast<double>(n);
    out.push_back({n, t, 2.0 * d * d * d / t});
  }
  return out;
}

MemoryPoint memory_probe(Communicator& comm, double bytes, int iters) {
  if (comm.backend() == "nccl") {
    return gpu_memory_probe(bytes, iters);
  }
  const size_t n = static_cast<size_t>(bytes);
  std::vector<char> src(n, 1), dst(n, 0);
  std::vector<double> times;
  for (int it = 0; it < iters + 1; ++it) {
    const double t0 = seconds_now();
    std::memcpy(dst.data(), src.data(), n);
    if (it > 0)
      times.push_back(seconds_now() - t0);
  }
  const double t = median(times);
  return {bytes, t, 2.0 * bytes / t};
}

}  // namespace gpuplan::measure
