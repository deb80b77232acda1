// Strict JSON parsing for every JSON file gpuplan reads (config.json, validation and
// measurement files), private to the library.
//
// nlohmann::json accepts a key given twice (the last one wins) and throws on a number too large
// for a double; here both are Errors located at the file's line, like a syntax error.
#ifndef GPUPLAN_SRC_JSON_READER_H_
#define GPUPLAN_SRC_JSON_READER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/result.h"

namespace gpuplan::detail {

// Parses `text`, read from `where` (a path, or a name for messages); `hint` says what the
// file should be ("a config.json is one JSON object").
Result<nlohmann::json> parse_json(std::string_view text, const std::string& where,
                                  const std::string& hint);

// Reads and parses the file at `path`.
Result<nlohmann::json> read_json_file(const std::string& path, const std::string& hint);

// "where:line" of the first occurrence of the key "key": in `text`, or `where` alone.
std::string json_key_location(std::string_view text, const std::string& where,
                              const std::string& key);

// Typed, range-checked access to the keys of one JSON object; errors name `where` and the key
// path ("points[2].median_s"). A missing key, a wrong type and a value outside [min, max] are
// errors; no value is replaced by a default.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string where, std::string prefix = "")
      : object_(object), where_(std::move(where)), prefix_(std::move(prefix)) {}

  Result<double> number(const std::string& key, double min, double max) const;
  Result<int64_t> integer(const std::string& key, int64_t min, int64_t max) const;
  Result<std::string> text(const std::string& key) const;
  Result<bool> boolean(const std::string& key) const;
  // An array of objects with at least `min_size` elements, each with its own reader.
  Result<std::vector<JsonFields>> objects(const std::string& key, size_t min_size) const;

 private:
  Result<const nlohmann::json*> get(const std::string& key, const char* expected) const;
  std::string path(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }

  const nlohmann::json& object_;
  std::string where_;
  std::string prefix_;
};

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_JSON_READER_H_
