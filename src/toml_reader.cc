#include "toml_reader.h"

#include <fmt/format.h>

#include "gpuplan/suggest.h"

namespace gpuplan::detail {

namespace {

std::string location(const std::string& file, const toml::source_region& region) {
  if (region.begin.line == 0) {
    return file;
  }
  return fmt::format("{}:{}:{}", file, region.begin.line, region.begin.column);
}

}  // namespace

Result<toml::table> parse_toml_file(const std::string& path) {
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const toml::source_region& r = e.source();
    if (r.begin.line == 0 && e.description().find("File could not") != std::string_view::npos) {
      // As every other file gpuplan reads says it: toml++'s own words name no syntax error.
      return fail(path, "cannot open the file", "check the path");
    }
    return fail(location(path, r), std::string(e.description()),
                "see https://toml.io for the syntax");
  }
}

TomlReader::TomlReader(const toml::table& table, std::string file, std::string prefix)
    : table_(&table), file_(std::move(file)), prefix_(std::move(prefix)) {}

std::string TomlReader::path(const std::string& key) const {
  return prefix_.empty() ? key : prefix_ + "." + key;
}

std::string TomlReader::where(const std::string& key) const {
  if (const toml::node* n = table_->get(key)) {
    return location(file_, n->source());
  }
  return location(file_, table_->source());
}

const toml::node* TomlReader::node(const std::string& key) {
  if (known_.insert(key).second) {
    known_in_order_.push_back(key);
  }
  return table_->get(key);
}

Error TomlReader::missing(const std::string& key, const std::string& hint) const {
  // A missing key is often a misspelt one: name the misspelling where it stands.
  for (const auto& [k, v] : *table_) {
    const std::string present(k.str());
    // Close in spelling, or the same last word ("hbm_bandwidth" for "memory_bandwidth").
    const bool same_tail = key.find('_') != std::string::npos &&
                           present.substr(present.rfind('_') + 1) == key.substr(key.rfind('_') + 1);
    if (known_.count(present) == 0 && (same_tail || closest_match(present, {key}) == key)) {
      return Error{location(file_, k.source()), fmt::format("unknown key '{}'", path(present)),
                   fmt::format("did you mean '{}'?", key)};
    }
  }
  return Error{where(key), fmt::format("missing key '{}'", path(key)), hint};
}

Error TomlReader::keyed(const std::string& key, const Error& e) const {
  return Error{e.where, fmt::format("key '{}': {}", path(key), e.what), e.hint};
}

Error TomlReader::wrong_type(const std::string& key, const std::string& expected) const {
  return Error{where(key), fmt::format("key '{}' must be {}", path(key), expected), ""};
}

Result<std::optional<std::string>> TomlReader::optional_text(const std::string& key) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::optional<std::string>();
  }
  if (!n->is_string()) {
    return std::unexpected(wrong_type(key, "a string"));
  }
  return std::optional<std::string>(std::string(*n->value<std::string_view>()));
}

Result<std::string> TomlReader::text(const std::string& key) {
  std::optional<std::string> v;
  GPUPLAN_ASSIGN_OR_RETURN(v, optional_text(key));
  if (!v) {
    return std::unexpected(missing(key, "every entry must give it"));
  }
  if (v->empty()) {
    return fail(where(key), fmt::format("key '{}' is empty", path(key)), "give a value");
  }
  return *v;
}

Result<std::optional<int64_t>> TomlReader::optional_integer(const std::string& key, int64_t min,
                                                            int64_t max) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::optional<int64_t>();
  }
  if (!n->is_integer()) {
    return std::unexpected(wrong_type(key, "an integer"));
  }
  const int64_t v = *n->value<int64_t>();
  if (v < min || v > max) {
    return fail(where(key), fmt::format("key '{}' = {} is out of range", path(key), v),
                fmt::format("expected {} to {}", min, max));
  }
  return std::optional<int64_t>(v);
}

Result<int64_t> TomlReader::integer(const std::string& key, int64_t min, int64_t max) {
  std::optional<int64_t> v;
  GPUPLAN_ASSIGN_OR_RETURN(v, optional_integer(key, min, max));
  if (!v) {
    return std::unexpected(missing(key, "every entry must give it"));
  }
  return *v;
}

Result<std::optional<double>> TomlReader::optional_quantity(const std::string& key,
                                                            Dimension dimension) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::optional<double>();
  }
  if (n->is_number()) {
    return fail(where(key),
                fmt::format("key '{}' = {} has no unit", path(key), n->value<double>().value_or(0)),
                fmt::format("write {} as a string with its unit, e.g. '{} = \"{} GB\"'",
                            dimension_name(dimension), key, n->value<double>().value_or(0)));
  }
  if (!n->is_string()) {
    return std::unexpected(wrong_type(key, "a string with a unit"));
  }
  Result<double> v = parse_quantity(*n->value<std::string_view>(), dimension);
  if (!v) {
    return std::unexpected(keyed(key, Error{where(key), v.error().what, v.error().hint}));
  }
  return std::optional<double>(*v);
}

Result<double> TomlReader::quantity(const std::string& key, Dimension dimension) {
  std::optional<double> v;
  GPUPLAN_ASSIGN_OR_RETURN(v, optional_quantity(key, dimension));
  if (!v) {
    return std::unexpected(missing(
        key, fmt::format("every entry must give {} with its unit", dimension_name(dimension))));
  }
  return *v;
}

Result<std::optional<double>> TomlReader::optional_number(const std::string& key, double min,
                                                          double max) {
  if (table_->get(key) == nullptr) {
    node(key);
    return std::optional<double>();
  }
  double v = 0;
  GPUPLAN_ASSIGN_OR_RETURN(v, number(key, min, max));
  return std::optional<double>(v);
}

Result<double> TomlReader::number(const std::string& key, double min, double max) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::unexpected(missing(key, "every entry must give it"));
  }
  if (!n->is_number()) {
    return std::unexpected(wrong_type(key, "a number"));
  }
  const double v = *n->value<double>();
  // Written so that nan (a TOML literal, as are inf and -inf) fails too.
  if (!(v >= min && v <= max)) {
    return fail(where(key), fmt::format("key '{}' = {} is out of range", path(key), v),
                fmt::format("expected {} to {}", min, max));
  }
  return v;
}

Result<std::optional<double>> TomlReader::optional_field(const std::string& key,
                                                         const Field& field) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::optional<double>();
  }
  if (!n->is_number()) {
    return std::unexpected(wrong_type(key, "a number"));
  }
  Result<double> v = check_field(field, *n->value<double>(), where(key));
  if (!v) {
    return std::unexpected(keyed(key, v.error()));
  }
  return std::optional<double>(*v);
}

Result<std::optional<int64_t>> TomlReader::optional_count(const std::string& key,
                                                          const Field& field) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::optional<int64_t>();
  }
  if (!n->is_integer()) {
    return std::unexpected(wrong_type(key, "an integer"));
  }
  Result<int64_t> v = check_count(field, *n->value<int64_t>(), where(key));
  if (!v) {
    return std::unexpected(keyed(key, v.error()));
  }
  return std::optional<int64_t>(*v);
}

Result<std::vector<std::string>> TomlReader::text_list(const std::string& key,
                                                       const std::string& missing_hint) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::unexpected(missing(key, missing_hint));
  }
  const toml::array* a = n->as_array();
  if (a == nullptr) {
    return std::unexpected(wrong_type(key, "an array of strings"));
  }
  std::vector<std::string> out;
  for (const toml::node& item : *a) {
    if (!item.is_string()) {
      return fail(location(file_, item.source()),
                  fmt::format("key '{}' must hold only strings", path(key)), "");
    }
    out.emplace_back(*item.value<std::string_view>());
  }
  return out;
}

Result<std::vector<double>> TomlReader::number_list(const std::string& key, double min,
                                                    double max) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::unexpected(missing(key, "every entry must give it"));
  }
  const toml::array* a = n->as_array();
  if (a == nullptr || a->empty()) {
    return std::unexpected(wrong_type(key, "a non-empty array of numbers"));
  }
  std::vector<double> out;
  for (const toml::node& item : *a) {
    const std::optional<double> v = item.is_number() ? item.value<double>() : std::nullopt;
    // Written so that nan fails too.
    if (!v || !(*v >= min && *v <= max)) {
      return fail(location(file_, item.source()),
                  fmt::format("key '{}' must hold numbers from {} to {}", path(key), min, max), "");
    }
    out.push_back(*v);
  }
  return out;
}

Result<std::vector<TomlReader>> TomlReader::table_list(const std::string& key) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::unexpected(missing(key, "every entry must give it"));
  }
  const toml::array* a = n->as_array();
  if (a == nullptr) {
    return std::unexpected(wrong_type(key, "an array of tables"));
  }
  std::vector<TomlReader> out;
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::table* t = (*a)[i].as_table();
    if (t == nullptr) {
      return fail(location(file_, (*a)[i].source()),
                  fmt::format("key '{}' must hold only tables", path(key)), "");
    }
    out.emplace_back(*t, file_, fmt::format("{}[{}]", path(key), i));
  }
  return out;
}

Result<std::optional<TomlReader>> TomlReader::optional_table(const std::string& key) {
  const toml::node* n = node(key);
  if (n == nullptr) {
    return std::optional<TomlReader>();
  }
  const toml::table* t = n->as_table();
  if (t == nullptr) {
    return std::unexpected(wrong_type(key, "a table"));
  }
  return std::optional<TomlReader>(TomlReader(*t, file_, path(key)));
}

std::vector<std::string> TomlReader::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : *table_) {
    out.emplace_back(k.str());
  }
  return out;
}

Result<bool> TomlReader::finish() const {
  for (const auto& [k, v] : *table_) {
    const std::string key(k.str());
    if (known_.count(key) == 0) {
      return fail(location(file_, k.source()), fmt::format("unknown key '{}'", path(key)),
                  suggestion_hint(key, known_in_order_));
    }
  }
  return true;
}

}  // namespace gpuplan::detail
