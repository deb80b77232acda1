// Readers of the individual catalog files (private to the catalog module). Each takes a
// parsed-to-be file path and returns a validated struct or the first error, located.
#ifndef GPUPLAN_SRC_LOADERS_H_
#define GPUPLAN_SRC_LOADERS_H_

#include <string>

#include "gpuplan/dataset.h"
#include "gpuplan/engine.h"
#include "gpuplan/framework.h"
#include "gpuplan/hardware.h"
#include "gpuplan/inference.h"
#include "gpuplan/memory.h"
#include "gpuplan/result.h"
#include "gpuplan/training.h"
#include "toml_reader.h"

namespace gpuplan::detail {

Result<Gpu> load_gpu(const std::string& path);
// A fitted GEMM tile model (data/gemm/<id>.toml); its id is in TileModel::fit.
Result<TileModel> load_tile_model(const std::string& path);
Result<Fabric> load_fabric(const std::string& path);
Result<Framework> load_framework(const std::string& path);
Result<Offer> load_offer(const std::string& path);
Result<MemoryParams> load_memory_params(const std::string& path);
// The training model's physical parameters (params/training.toml) and its fitted ones
// (params/training-fit.toml, written by gpuplan calibrate --validation).
Result<TrainParams> load_train_params(const std::string& path, const std::string& fit_path);
// The fitted parameters of `path` over `base`.
Result<TrainParams> load_train_fit(const std::string& path, TrainParams base);
// The serving model's physical parameters (params/inference.toml) and its fitted ones
// (params/serving-fit.toml, written by gpuplan calibrate --validation).
Result<InferenceParams> load_inference_params(const std::string& path, const std::string& fit_path);
Result<std::vector<ExchangeRate>> load_exchange_rates(const std::string& path);
// A benchmark's request lengths (data/datasets/<id>.toml, dataset.h).
Result<Dataset> load_dataset(const std::string& path);
// A serving engine's defaults (data/engines/<id>.toml, engine.h).
Result<EngineProfile> load_engine(const std::string& path);

// Opens a catalog TOML file and checks its `schema = 1` line; `reader` reads the rest.
Result<toml::table> open_catalog_file(const std::string& path);

// Checks that an entry's id is lower case with dashes (and dots in version numbers), as the
// scripts and validation files expect ("h200-sxm", "llama-3.1-8b").
Result<std::string> checked_id(TomlReader& r);

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_LOADERS_H_
