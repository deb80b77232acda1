#include "json_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace gpuplan::detail {
namespace {

using Json = nlohmann::json;

size_t line_of(std::string_view text, size_t byte) {
  const size_t at = std::min(byte, text.size());
  return 1 +
         static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// The byte offset of the n-th (0-based) place where "key" stands as a key (followed by ':'),
// or npos. Keys with escapes are not found, and their errors carry no line.
size_t find_key(std::string_view text, const std::string& key, size_t n) {
  const std::string quoted = fmt::format("\"{}\"", key);
  size_t at = 0;
  while ((at = text.find(quoted, at)) != std::string_view::npos) {
    size_t after = at + quoted.size();
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                   text[after] == '\n' || text[after] == '\r')) {
      ++after;
    }
    if (after < text.size() && text[after] == ':' && n-- == 0) {
      return at;
    }
    at += quoted.size();
  }
  return std::string_view::npos;
}

}  // namespace

std::string json_key_location(std::string_view text, const std::string& where,
                              const std::string& key) {
  const size_t at = find_key(text, key, 0);
  return at == std::string_view::npos ? where : fmt::format("{}:{}", where, line_of(text, at));
}

Result<Json> parse_json(std::string_view text, const std::string& where, const std::string& hint) {
  // The keys seen in each open object, innermost last; and how often each key has stood as a
  // key so far, to find a duplicate's line.
  std::vector<std::set<std::string>> open;
  std::map<std::string, size_t> seen;
  std::string duplicate;
  size_t duplicate_index = 0;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open.empty()) {
          open.pop_back();
        }
        break;
      case Json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        const size_t index = seen[key]++;
        if (!open.empty() && !open.back().insert(key).second && duplicate.empty()) {
          duplicate = key;
          duplicate_index = index;
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end(), callback);
  } catch (const Json::parse_error& e) {
    return fail(fmt::format("{}:{}", where, line_of(text, e.byte)), "not valid JSON", hint);
  } catch (const Json::out_of_range& e) {
    // "number overflow parsing '1e400'": find the number's line.
    const std::string what = e.what();
    const size_t open_quote = what.find('\'');
    const size_t close_quote = what.rfind('\'');
    std::string number;
    if (open_quote != std::string::npos && close_quote > open_quote) {
      number = what.substr(open_quote + 1, close_quote - open_quote - 1);
    }
    const size_t at = number.empty() ? std::string_view::npos : text.find(number);
    return fail(
        at == std::string_view::npos ? where : fmt::format("{}:{}", where, line_of(text, at)),
        fmt::format("the number {} is too large", number.empty() ? "here" : number),
        "numbers must fit in a double (below 1.8e308)");
  } catch (const Json::exception& e) {
    return fail(where, "not valid JSON", hint);
  }
  if (!duplicate.empty()) {
    const size_t at = find_key(text, duplicate, duplicate_index);
    return fail(
        at == std::string_view::npos ? where : fmt::format("{}:{}", where, line_of(text, at)),
        fmt::format("key '{}' is given twice", duplicate), "keep one of them");
  }
  return doc;
}

Result<Json> read_json_file(const std::string& path, const std::string& hint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(path, "cannot open the file", "check the path");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json(buffer.str(), path, hint);
}

Result<const Json*> JsonFields::get(const std::string& key, const char* expected) const {
  if (!object_.is_object()) {
    return fail(where_,
                fmt::format("'{}' must be an object", prefix_.empty() ? "the file" : prefix_), "");
  }
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) {
    return fail(where_, fmt::format("missing key '{}'", path(key)),
                fmt::format("give {}", expected));
  }
  return &*it;
}

Result<double> JsonFields::number(const std::string& key, double min, double max) const {
  const Json* v = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(v, get(key, "a number"));
  if (!v->is_number()) {
    return fail(where_, fmt::format("key '{}' must be a number, not {}", path(key), v->dump()), "");
  }
  const double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    return fail(where_, fmt::format("key '{}' = {} is out of range", path(key), x),
                fmt::format("expected {} to {}", min, max));
  }
  return x;
}

Result<int64_t> JsonFields::integer(const std::string& key, int64_t min, int64_t max) const {
  const Json* v = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(v, get(key, "an integer"));
  // An unsigned value above INT64_MAX is out of range, not a negative number.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max)) {
    return fail(where_, fmt::format("key '{}' = {} is out of range", path(key), v->dump()),
                fmt::format("expected {} to {}", min, max));
  }
  if (!v->is_number_integer()) {
    return fail(where_, fmt::format("key '{}' must be an integer, not {}", path(key), v->dump()),
                "");
  }
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max) {
    return fail(where_, fmt::format("key '{}' = {} is out of range", path(key), x),
                fmt::format("expected {} to {}", min, max));
  }
  return x;
}

Result<std::string> JsonFields::text(const std::string& key) const {
  const Json* v = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(v, get(key, "a string"));
  if (!v->is_string()) {
    return fail(where_, fmt::format("key '{}' must be a string, not {}", path(key), v->dump()), "");
  }
  return v->get<std::string>();
}

Result<bool> JsonFields::boolean(const std::string& key) const {
  const Json* v = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(v, get(key, "true or false"));
  if (!v->is_boolean()) {
    return fail(where_, fmt::format("key '{}' must be true or false, not {}", path(key), v->dump()),
                "");
  }
  return v->get<bool>();
}

Result<std::vector<JsonFields>> JsonFields::objects(const std::string& key, size_t min_size) const {
  const Json* v = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(v, get(key, "an array of objects"));
  if (!v->is_array()) {
    return fail(where_, fmt::format("key '{}' must be an array", path(key)), "");
  }
  if (v->size() < min_size) {
    return fail(where_, fmt::format("key '{}' has {} entries", path(key), v->size()),
                fmt::format("it needs at least {}", min_size));
  }
  std::vector<JsonFields> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string at = fmt::format("{}[{}]", path(key), i);
    if (!(*v)[i].is_object()) {
      return fail(where_, fmt::format("'{}' must be an object", at), "");
    }
    out.emplace_back((*v)[i], where_, at);
  }
  return out;
}

}  // namespace gpuplan::detail
