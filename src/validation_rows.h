// Reading the rows of a validation file (private to the validation module): typed access to a
// row's keys with errors that name the row and key, and the row's system as a Cluster.
#ifndef GPUPLAN_SRC_VALIDATION_ROWS_H_
#define GPUPLAN_SRC_VALIDATION_ROWS_H_

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/result.h"
#include "gpuplan/validation.h"

namespace gpuplan::detail {

using Json = nlohmann::json;

// The string at `key` of `o`, or `fallback` when `o` is not an object or the key is missing or
// not a string.
inline std::string text_or(const Json& o, const char* key, const std::string& fallback) {
  if (!o.is_object()) {
    return fallback;
  }
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// Typed access to one row's keys; errors name the row and the key path.
class RowReader {
 public:
  RowReader(const Json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Result<const Json*> object(const char* key) const {
    if (!obj_.contains(key) || !obj_[key].is_object()) {
      return fail(where_, fmt::format("key '{}' must be an object", key), "see the format README");
    }
    return &obj_[key];
  }
  Result<std::string> text(const Json& o, const char* key) const {
    if (!o.contains(key) || !o[key].is_string()) {
      return fail(where_, fmt::format("key '{}' must be a string", key), "see the format README");
    }
    return o[key].get<std::string>();
  }
  // A positive integer; when `nullable`, null (or absence) gives 0.
  Result<int64_t> count(const Json& o, const char* key, bool nullable = false) const {
    if (nullable && (!o.contains(key) || o[key].is_null())) {
      return int64_t{0};
    }
    // Counts in a row are ranks, batches and token lengths: 2^24 bounds them all, and keeps their
    // products (tp x pp x dp, batch x seq) within int64.
    constexpr int64_t kMost = int64_t{1} << 24;
    const bool too_large = o.contains(key) && o[key].is_number_unsigned() &&
                           o[key].get<uint64_t>() > static_cast<uint64_t>(kMost);
    if (!o.contains(key) || !o[key].is_number_integer() || too_large || o[key].get<int64_t>() < 0 ||
        o[key].get<int64_t>() > kMost) {
      return fail(where_, fmt::format("key '{}' must be an integer from 0 to {}", key, kMost),
                  o.contains(key) ? fmt::format("found {}", o[key].dump()) : "it is missing");
    }
    return o[key].get<int64_t>();
  }
  Result<bool> flag(const Json& o, const char* key) const {
    if (!o.contains(key) || !o[key].is_boolean()) {
      return fail(where_, fmt::format("key '{}' must be true or false", key), "");
    }
    return o[key].get<bool>();
  }
  const std::string& where() const { return where_; }

 private:
  const Json& obj_;
  std::string where_;
};

// Resolves a row's system against the catalog; an unknown id makes the row unpredictable. A
// multi-node row without nics_per_node gets one per GPU, and *nics_assumed says so.
Result<Cluster> row_cluster(const RowReader& r, const Json& sys, const Catalog& c,
                            bool* nics_assumed = nullptr);

// Adds `note` to what a row assumed, after a "; " where there is already something.
inline void add_note(std::string& notes, std::string_view note) {
  if (!notes.empty()) {
    notes += "; ";
  }
  notes += note;
}

// The note for a row whose NICs were assumed (row_cluster).
inline std::string nics_note(const Cluster& c) {
  return fmt::format("nics_per_node not published: one per GPU ({})", c.nics_per_node);
}

// Reads a validation file and checks its envelope: schema 1, a kind, an array of rows.
Result<Json> read_validation_file(const std::string& path);

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_VALIDATION_ROWS_H_
