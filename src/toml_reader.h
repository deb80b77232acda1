// Strict, located access to a TOML table (private to the catalog loaders).
//
// Every accessor records the key it was asked for, present or not; finish() then rejects any
// key in the table that no accessor asked for, suggesting the closest known key. So the set
// of allowed keys is exactly the set the loader reads, with no second list to keep in step.
// Errors name file:line:column and the dotted key path.
#ifndef GPUPLAN_SRC_TOML_READER_H_
#define GPUPLAN_SRC_TOML_READER_H_

#include <toml++/toml.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuplan/fields.h"
#include "gpuplan/result.h"
#include "gpuplan/units.h"

namespace gpuplan::detail {

// Parses a TOML file; syntax errors come back with file:line:column.
Result<toml::table> parse_toml_file(const std::string& path);

class TomlReader {
 public:
  // `prefix` is the key path of `table` inside the file ("" at top level).
  TomlReader(const toml::table& table, std::string file, std::string prefix = "");

  Result<std::string> text(const std::string& key);
  Result<std::optional<std::string>> optional_text(const std::string& key);
  Result<int64_t> integer(const std::string& key, int64_t min, int64_t max);
  Result<std::optional<int64_t>> optional_integer(const std::string& key, int64_t min, int64_t max);
  // A quantity written as a string with its unit, e.g. "141 GB".
  Result<double> quantity(const std::string& key, Dimension dimension);
  Result<std::optional<double>> optional_quantity(const std::string& key, Dimension dimension);
  // A plain number in [min, max] (fractions, ratios, counts such as 2e9 tokens).
  Result<std::optional<double>> optional_number(const std::string& key, double min, double max);
  Result<double> number(const std::string& key, double min, double max);
  // A value checked by a field's rule (fields.h): an integer key for integer fields, a number
  // for the others; nullopt when absent.
  Result<std::optional<double>> optional_field(const std::string& key, const Field& field);
  Result<std::optional<int64_t>> optional_count(const std::string& key, const Field& field);
  // An array of strings; `missing_hint` says what to do where the key is absent.
  Result<std::vector<std::string>> text_list(
      const std::string& key, const std::string& missing_hint = "every entry must give it");
  // A non-empty array of numbers, each within [min, max].
  Result<std::vector<double>> number_list(const std::string& key, double min, double max);
  // An array of tables, each read by its own reader.
  Result<std::vector<TomlReader>> table_list(const std::string& key);
  // A sub-table; nullopt when absent.
  Result<std::optional<TomlReader>> optional_table(const std::string& key);

  // The raw node of a key, or nullptr; for values the typed accessors do not cover.
  const toml::node* raw(const std::string& key) const { return table_->get(key); }

  // Marks a key as allowed without reading it (checked elsewhere).
  void accept(const std::string& key) { node(key); }

  // Rejects keys no accessor asked for.
  Result<bool> finish() const;

  // The table's keys, in key order: for a table whose keys are names, not fields.
  std::vector<std::string> keys() const;

  // "file:line:col" of `key` (or of this table when the key is absent).
  std::string where(const std::string& key) const;
  const std::string& file() const { return file_; }

 private:
  const toml::node* node(const std::string& key);
  std::string path(const std::string& key) const;
  Error missing(const std::string& key, const std::string& hint) const;
  Error wrong_type(const std::string& key, const std::string& expected) const;
  // `e` (a rule's error about the value of `key`) with the key's path in front.
  Error keyed(const std::string& key, const Error& e) const;

  const toml::table* table_;
  std::string file_;
  std::string prefix_;
  std::set<std::string> known_;
  std::vector<std::string> known_in_order_;
};

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_TOML_READER_H_
