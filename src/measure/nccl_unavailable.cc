// Built when CUDA and NCCL are not found: the GPU backend reports why it is missing.
#include "measure/harness.h"

namespace gpuplan::measure {

Result<std::unique_ptr<Communicator>> make_nccl_communicator() {
  return fail("--backend", "this gpuplan was built without CUDA and NCCL",
              "rebuild on a machine with the CUDA toolkit and NCCL (GPUPLAN_WITH_NCCL), or use "
              "--backend mpi");
}

TrainResult train_loop_gpu(Communicator& comm, Watchdog&, const TrainOptions&) {
  comm.abort("gpuplan measure: error: this gpuplan was built without CUDA");
}

std::vector<GemmPoint> gpu_gemm_sweep(const std::vector<int64_t>&, int) {
  return {};
}

MemoryPoint gpu_memory_probe(double, int) {
  return {};
}

}  // namespace gpuplan::measure
