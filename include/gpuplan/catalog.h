// The catalog: every GPU, fabric, model, offer and model parameter gpuplan knows, loaded
// strictly from a data directory.
//
// Layout of the directory: gpus/*.toml, gemm/*.toml (fitted GEMM tile models), fabrics/*.toml,
// frameworks/*.toml, offers/*.toml, models/*.json (Hugging Face config.json files),
// datasets/*.toml (benchmarks' request lengths; the folder may be absent), engines/*.toml
// (serving engines' defaults),
// params/memory.toml, params/training.toml, params/inference.toml and params/exchange.toml. Each
// TOML file starts with `schema = 1`, gives every value with its unit ("141 GB", "4.8 TB/s") and
// names its `source`. Loading stops at the first problem with an Error naming file:line:column and
// the key, with a "did you mean" hint for misspelt keys; an unknown key, a bare number where a unit
// is due, a negative size, a missing field or a reference to an id that does not exist are all
// errors. After loading, the Catalog is immutable; lookups by id suggest the closest id on a miss.
#ifndef GPUPLAN_CATALOG_H_
#define GPUPLAN_CATALOG_H_

#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/dataset.h"
#include "gpuplan/engine.h"
#include "gpuplan/framework.h"
#include "gpuplan/hardware.h"
#include "gpuplan/model.h"
#include "gpuplan/params.h"
#include "gpuplan/result.h"

namespace gpuplan {

class Catalog {
 public:
  // Loads every entry under `data_dir`. Entries of each kind are sorted by id.
  static Result<Catalog> load(const std::string& data_dir);

  const std::vector<Gpu>& gpus() const { return gpus_; }
  const std::vector<Fabric>& fabrics() const { return fabrics_; }
  const std::vector<Model>& models() const { return models_; }
  const std::vector<Offer>& offers() const { return offers_; }
  const std::vector<Framework>& frameworks() const { return frameworks_; }
  const std::vector<Dataset>& datasets() const { return datasets_; }
  const std::vector<EngineProfile>& engines() const { return engines_; }
  // The engine the shared serving parameters were fitted with (params/inference.toml's
  // `engine`); memory_params() and inference_params() carry its defaults.
  const EngineProfile& default_engine() const { return engines_[default_engine_]; }
  const MemoryParams& memory_params() const { return memory_params_; }
  const TrainParams& train_params() const { return train_params_; }
  const InferenceParams& inference_params() const { return inference_params_; }
  // Units of `currency` per US dollar from params/exchange.toml; null when the catalog has none.
  const ExchangeRate* usd_rate(std::string_view currency) const;
  const std::string& data_dir() const { return data_dir_; }

  // Lookups by exact id; on a miss the error suggests the closest id.
  Result<const Gpu*> gpu(std::string_view id) const;
  Result<const Fabric*> fabric(std::string_view id) const;
  Result<const Offer*> offer(std::string_view id) const;
  Result<const Framework*> framework(std::string_view id) const;
  Result<const Dataset*> dataset(std::string_view id) const;
  Result<const EngineProfile*> engine(std::string_view id) const;
  // A serving engine from "ID" or "ID@RELEASE" ("vllm@0.10"): its profile and the release whose
  // behaviour applies (engine.h; without one, the engine's current release). An empty spec is
  // the default engine (default_engine) at its current release.
  Result<EngineChoice> engine_choice(std::string_view spec) const;
  // The engine a published result names ("TensorRT-LLM 0.17 + Triton"), or null.
  const EngineProfile* engine_named(std::string_view published) const;
  // A run's software from "ID" or "ID@YEAR" (the year defaults to kCurrentYear, when every
  // default of the framework applies).
  Result<Software> software(std::string_view spec) const;
  // A catalog model id, or a path to a config.json (is_model_path).
  Result<Model> model(std::string_view id_or_path) const;
  // Whether model() reads `text` as a path: it contains '/' or ends ".json".
  static bool is_model_path(std::string_view text);

  // Replaces catalog values with measured ones from a calibration profile (written by
  // `gpuplan calibrate`): a fabric's bus bandwidth and latency, a GPU's GEMM and HBM
  // efficiency. Returns one line per value replaced, for the output to say so.
  Result<std::vector<std::string>> apply_profile(const std::string& path);

 private:
  std::string data_dir_;
  std::vector<Gpu> gpus_;
  std::vector<Fabric> fabrics_;
  std::vector<Model> models_;
  std::vector<Offer> offers_;
  std::vector<Framework> frameworks_;
  std::vector<Dataset> datasets_;
  std::vector<EngineProfile> engines_;
  size_t default_engine_ = 0;
  MemoryParams memory_params_;
  TrainParams train_params_;
  InferenceParams inference_params_;
  std::vector<ExchangeRate> usd_rates_;
};

}  // namespace gpuplan

#endif  // GPUPLAN_CATALOG_H_
