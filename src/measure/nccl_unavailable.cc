// Built when CUDA and NCCL are not found: the GPU backend reports why it is missing.
#include "measure/communicator.h"

namespace gpuplan::measure {

Result<std::unique_ptr<Communicator>> make_nccl_communicator() {
  return fail("--backend", "this gpuplan was built without CUDA and NCCL",
              "rebuild on a machine with the CUDA toolkit and NCCL (GPUPLAN_WITH_NCCL), or use "
              "--backend mpi");
}

}  // namespace gpuplan::measure
