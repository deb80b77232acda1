// libFuzzer target: every TOML reader. The first byte picks the reader (a catalog GPU, fabric,
// offer, framework, tile fit or parameter file, a plan job file, a calibration profile, the
// exchange rates, a serving engine or a request-length data set); the rest is the file.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_file.h"
#include "gpuplan/advisor.h"
#include "gpuplan/catalog.h"
#include "gpuplan/engine.h"
#include "loaders.h"

namespace {

const gpuplan::Catalog& shipped() {
  static const gpuplan::Catalog catalog = [] {
    gpuplan::Result<gpuplan::Catalog> c = gpuplan::Catalog::load(GPUPLAN_DATA_DIR);
    if (!c) {
      std::abort();  // the shipped catalog must load, or nothing here means anything
    }
    return *c;
  }();
  return catalog;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  namespace d = gpuplan::detail;
  const std::string path = gpuplan::fuzz::write_input(data + 1, size - 1, ".toml");
  switch (data[0] % 13) {
    case 0:
      gpuplan::fuzz::consume(d::load_gpu(path));
      break;
    case 1:
      gpuplan::fuzz::consume(d::load_fabric(path));
      break;
    case 2:
      gpuplan::fuzz::consume(d::load_offer(path));
      break;
    case 3:
      gpuplan::fuzz::consume(d::load_framework(path));
      break;
    case 4:
      gpuplan::fuzz::consume(d::load_tile_model(path));
      break;
    case 5:
      gpuplan::fuzz::consume(d::load_memory_params(path));
      break;
    case 6:
      gpuplan::fuzz::consume(d::load_train_fit(path, gpuplan::TrainParams{}));
      break;
    case 7: {
      // The input as the serving parameters' file, and as their fit's.
      const std::string params = std::string(GPUPLAN_DATA_DIR) + "/params/";
      gpuplan::fuzz::consume(d::load_inference_params(path, params + "serving-fit.toml"));
      gpuplan::fuzz::consume(d::load_inference_params(params + "inference.toml", path));
      break;
    }
    case 8: {
      gpuplan::Result<gpuplan::PlanJob> job = gpuplan::load_plan_job(path);
      gpuplan::fuzz::consume(job);
      if (job) {
        gpuplan::fuzz::consume(gpuplan::check_plan_job(*job, shipped()));
      }
      break;
    }
    case 10:
      gpuplan::fuzz::consume(d::load_exchange_rates(path));
      break;
    case 11: {
      // An engine that loads is applied as serve and validate apply one: on a GPU, for its
      // current release and for the releases published names give.
      gpuplan::Result<gpuplan::EngineProfile> e = d::load_engine(path);
      gpuplan::fuzz::consume(e);
      if (e) {
        const gpuplan::Catalog& c = shipped();
        for (const char* name : {"vLLM 0.10.0", "TensorRT-LLM 0.17 + Triton", "SGLang 0.4"}) {
          const std::string version = e->published_version(name);
          const gpuplan::EngineSettings s = gpuplan::engine_settings(
              *e, **c.gpu("h100-sxm"), c.inference_params(), c.memory_params(), version);
          if (!(s.inference.sequence_overhead.si() >= 0)) {
            std::abort();  // a negative or NaN host time would shorten iterations
          }
        }
      }
      break;
    }
    case 12:
      gpuplan::fuzz::consume(d::load_dataset(path));
      break;
    default: {
      gpuplan::Catalog c = shipped();
      gpuplan::fuzz::consume(c.apply_profile(path));
      break;
    }
  }
  return 0;
}
