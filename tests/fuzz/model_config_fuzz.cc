// libFuzzer target: a Hugging Face config.json, as `gpuplan fit path/config.json` reads it,
// then the parameter count every command derives from it and the inference weights in the
// format its quantization_config publishes (memory.h: choose_weights), which must be finite.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "fuzz_file.h"
#include "gpuplan/memory.h"
#include "gpuplan/model.h"
#include "gpuplan/model_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuplan::Result<gpuplan::Model> m = gpuplan::parse_model_config(text, "config.json", "fuzz");
  gpuplan::fuzz::consume(m);
  if (m) {
    const gpuplan::ParameterCount p = gpuplan::count_parameters(*m);
    volatile int64_t total = p.total;
    (void)total;
    const gpuplan::WeightChoice w = gpuplan::choose_weights(
        *m, gpuplan::Task::kInfer, std::nullopt, std::nullopt, gpuplan::KvDefault::kFollowsWeights);
    gpuplan::MemoryJob job;
    job.task = gpuplan::Task::kInfer;
    job.precision = w.precision;
    job.kv_precision = w.kv_precision;
    job.as_released = w.as_released;
    job.context = 1;
    if (!gpuplan::layout_problem(*m, job)) {
      const gpuplan::MemoryParams params{gpuplan::Bytes(0), 1};
      const double weights = gpuplan::memory_per_gpu(*m, job, params).weights.si();
      if (!std::isfinite(weights) || weights < 0) {
        std::abort();  // a published format must give a finite, non-negative size
      }
    }
  }
  return 0;
}
