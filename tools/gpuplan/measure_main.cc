// gpuplan-measure: `gpuplan measure` on its own, the one executable that links MPI, NCCL, CUDA
// and BLAS. `gpuplan measure ARGS...` hands over to it (measure_handover.cc); run directly it
// takes the same arguments.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.h"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args = {"gpuplan measure"};
    args.insert(args.end(), argv + 1, argv + argc);
    return gpuplan::cli::run_measure_here(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuplan measure: internal error: %s\n", e.what());
    return gpuplan::cli::kExitError;
  }
}
