// libFuzzer target: a measurement file (gpuplan measure ... --json), read as calibrate reads it,
// with the collective fit it feeds.
#include <cstdint>
#include <string>

#include "fuzz_file.h"
#include "gpuplan/measurement.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gpuplan::fuzz::write_input(data, size, ".json");
  gpuplan::Result<gpuplan::Measurement> m = gpuplan::read_measurement(path);
  gpuplan::fuzz::consume(m);
  if (m && m->kind == gpuplan::MeasurementKind::kCollectives) {
    const gpuplan::AlphaBeta fit = gpuplan::fit_alpha_beta(m->collectives);
    volatile double b = fit.busbw;
    (void)b;
  }
  return 0;
}
