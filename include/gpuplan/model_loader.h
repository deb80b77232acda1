// Reads Hugging Face `config.json` files into Models.
//
// The same reader serves the built-in catalog (data/models/*.json), a user's own config.json,
// and the model objects embedded in validation files. Supported model_type values:
// supported_model_types() below.
// Hugging Face files carry many keys gpuplan does not need (token ids, dtype, rope scaling);
// those are accepted and ignored, since they are part of the format. Keys gpuplan needs must be
// present (or have the default the transformers library itself applies), with the right type
// and a sensible value; anything else is an Error naming the file, line and key.
#ifndef GPUPLAN_MODEL_LOADER_H_
#define GPUPLAN_MODEL_LOADER_H_

#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/model.h"
#include "gpuplan/result.h"

namespace gpuplan {

// Parses the JSON text of a config.json. `where` names the source in errors (a path, or
// "training.json row 'KOR22-22B'"); `id` becomes Model::id.
Result<Model> parse_model_config(std::string_view json_text, const std::string& where,
                                 const std::string& id);

// Reads and parses a config.json file; the id is the file name without ".json" (or the name
// of the enclosing folder when the file is called config.json).
Result<Model> load_model_config(const std::string& path);

// The model_type values parse_model_config() understands.
const std::vector<std::string>& supported_model_types();

}  // namespace gpuplan

#endif  // GPUPLAN_MODEL_LOADER_H_
