// libFuzzer target: a Hugging Face config.json, as `gpuplan fit path/config.json` reads it,
// then the parameter count every command derives from it.
#include <cstdint>
#include <string_view>

#include "fuzz_file.h"
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
  }
  return 0;
}
