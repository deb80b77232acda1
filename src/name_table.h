// Names of an enumeration's values, for output, and their parser, for input: one table of
// (value, name) pairs per enumeration, read by these two functions (private to the library).
#ifndef GPUPLAN_SRC_NAME_TABLE_H_
#define GPUPLAN_SRC_NAME_TABLE_H_

#include <fmt/format.h>

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuplan/result.h"
#include "gpuplan/suggest.h"

namespace gpuplan::detail {

// The name of `value` in `table`; "?" for a value the table does not list.
template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) {
      return name;
    }
  }
  return "?";
}

// Every name of `table`, in its order (for help texts: the names the parser takes).
template <class E, size_t N>
std::vector<std::string> names_in(const std::array<std::pair<E, std::string_view>, N>& table) {
  std::vector<std::string> names;
  for (const auto& [e, name] : table) {
    names.emplace_back(name);
  }
  return names;
}

// The value named `text`, or "unknown `what` 'text'" with a "did you mean" hint.
template <class E, size_t N>
Result<E> parse_from(const std::array<std::pair<E, std::string_view>, N>& table,
                     std::string_view text, std::string_view what) {
  std::vector<std::string> names;
  for (const auto& [e, name] : table) {
    if (name == text) {
      return e;
    }
    names.emplace_back(name);
  }
  return fail("", fmt::format("unknown {} '{}'", what, text), suggestion_hint(text, names));
}

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_NAME_TABLE_H_
