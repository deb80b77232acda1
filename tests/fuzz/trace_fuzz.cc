// libFuzzer target: the CSV readers. An even first byte reads the rest as a request-length trace
// (serve --lengths), an odd one as a published GEMM sweep (calibrate --gemm-sweep).
#include <cstdint>
#include <string>

#include "fuzz_file.h"
#include "gpuplan/measurement.h"
#include "gpuplan/serving.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string path = gpuplan::fuzz::write_input(data + 1, size - 1, ".csv");
  if (data[0] % 2 == 0) {
    gpuplan::Result<std::vector<gpuplan::RequestLength>> l = gpuplan::load_request_lengths(path);
    gpuplan::fuzz::consume(l);
    if (l) {
      gpuplan::Workload w;
      w.lengths = *l;
      volatile int64_t most = w.max_context();
      (void)most;
    }
  } else {
    gpuplan::fuzz::consume(gpuplan::read_gemm_sweep(path));
  }
  return 0;
}
