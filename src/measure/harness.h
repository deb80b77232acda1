// The measurements: a collective sweep in the manner of nccl-tests, and a data-parallel
// training loop (forward, backward, bucketed gradient all-reduce, update) on a real network.
// Both run on every rank of a Communicator and return what rank 0 reports.
#ifndef GPUPLAN_SRC_MEASURE_HARNESS_H_
#define GPUPLAN_SRC_MEASURE_HARNESS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "measure/communicator.h"
#include "measure/watchdog.h"

namespace gpuplan::measure {

// Seconds on the monotonic clock, for timing host-side steps.
inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct SweepOptions {
  Op op = Op::kAllReduce;
  double min_bytes = 8;
  double max_bytes = 256.0 * 1024 * 1024;
  double factor = 2;
  int iters = 20;
  int warmup = 5;
  int inject_hang_rank = -1;  // fault injection for testing the watchdog; -1: none
  int inject_kill_rank = -1;  // fault injection: this rank dies (SIGKILL) mid-sweep; -1: none
};

struct SizePoint {
  double bytes = 0;   // S: the buffer size per rank, as nccl-tests defines it
  int64_t count = 0;  // float elements
  double min_s = 0;   // of the slowest rank's time per iteration
  double median_s = 0;
  double max_s = 0;
  double algbw = 0;   // S / median, bytes/s
  double busbw = 0;   // algbw x bus factor
  int64_t wrong = 0;  // elements that differ from the expected result, all ranks
};

std::vector<SizePoint> sweep_collective(Communicator& comm, Watchdog& dog, const SweepOptions& o);

struct TrainOptions {
  int64_t hidden = 1024;
  int64_t layers = 4;
  int64_t seq = 512;
  int64_t per_worker_batch = 8;
  int steps = 10;
  int warmup = 2;
  double bucket_bytes = 25.0 * 1024 * 1024;  // PyTorch DDP's default bucket
  bool overlap = true;
  uint64_t seed = 1;
  float learning_rate = 1e-3f;
  bool verify = false;  // rank 0 also trains one worker on the global batch and compares
};

struct TrainResult {
  int ranks = 1;
  int64_t parameters = 0;
  double tokens_per_step = 0;     // global
  double flops_per_step = 0;      // per rank: 6 x parameters x local tokens
  std::vector<double> step_s;     // slowest rank, per measured step
  std::vector<double> compute_s;  // slowest rank's forward + backward (excluding waits)
  std::vector<double> exposed_s;  // slowest rank's wait for the gradient all-reduce
  std::vector<double> update_s;   // slowest rank's optimizer step
  double gradient_bytes = 0;
  int buckets = 0;
  // With verify: the largest |w_dp - w_single| / max(1, |w_single|) over all weights.
  double verify_max_rel_diff = -1;
};

// On the CPU: fp32, OpenBLAS, buffers in host memory (MPI).
TrainResult train_loop(Communicator& comm, Watchdog& dog, const TrainOptions& o);

// On GPUs: bf16 cuBLAS GEMMs with fp32 accumulation, fp32 master weights and gradients, NCCL.
// REQUIRES: `comm` is the NCCL communicator. `verify` is not supported here.
TrainResult train_loop_gpu(Communicator& comm, Watchdog& dog, const TrainOptions& o);

// Square GEMMs n x n x n on this rank alone: fp32 OpenBLAS on the CPU backend, bf16 cuBLAS with
// fp32 accumulation on the GPU backend. FLOP/s = 2 n^3 / median time.
struct GemmPoint {
  int64_t n = 0;
  double median_s = 0;
  double flops_per_s = 0;
};
std::vector<GemmPoint> gemm_sweep(Communicator& comm, const std::vector<int64_t>& sizes, int iters);
std::vector<GemmPoint> gpu_gemm_sweep(const std::vector<int64_t>& sizes, int iters);

// A device-to-device (or host memcpy) copy of `bytes`: bandwidth = 2 x bytes / median time
// (every byte read once and written once), as STREAM's copy counts it.
struct MemoryPoint {
  double bytes = 0;
  double median_s = 0;
  double bytes_per_s = 0;
};
MemoryPoint memory_probe(Communicator& comm, double bytes, int iters);
MemoryPoint gpu_memory_probe(double bytes, int iters);

}  // namespace gpuplan::measure

#endif  // GPUPLAN_SRC_MEASURE_HARNESS_H_
