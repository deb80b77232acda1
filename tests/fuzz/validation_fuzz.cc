// libFuzzer target: a validation file (data/validation/README.md), read and predicted row by row
// against the shipped catalog, as `gpuplan validate FILE` does.
#include <cstdint>
#include <string>

#include "fuzz_file.h"
#include "gpuplan/catalog.h"
#include "gpuplan/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const gpuplan::Catalog catalog = [] {
    gpuplan::Result<gpuplan::Catalog> c = gpuplan::Catalog::load(GPUPLAN_DATA_DIR);
    if (!c) {
      std::abort();
    }
    return *c;
  }();
  const std::string path = gpuplan::fuzz::write_input(data, size, ".json");
  gpuplan::fuzz::consume(gpuplan::run_validation(path, catalog));
  return 0;
}
