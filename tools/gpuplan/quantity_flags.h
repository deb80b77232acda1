// The flags whose value is a quantity with a unit ("7 d", "500 GB"), and the dimension of each:
// the commands read them by it, and a request (request.h) that gives one a bare number is read
// in that dimension's SI unit. One table, so the two cannot disagree.
#ifndef GPUPLAN_TOOLS_QUANTITY_FLAGS_H_
#define GPUPLAN_TOOLS_QUANTITY_FLAGS_H_

#include <array>
#include <optional>
#include <string_view>

#include "gpuplan/result.h"
#include "gpuplan/units.h"

namespace gpuplan::cli {

struct QuantityFlag {
  std::string_view command;
  std::string_view flag;  // without the dashes
  Dimension dimension;
};

inline constexpr std::array<QuantityFlag, 6> kQuantityFlags = {{
    {"plan", "deadline", Dimension::kSeconds},
    {"plan", "latency-target", Dimension::kSeconds},
    {"plan", "egress", Dimension::kBytes},
    {"serve", "think", Dimension::kSeconds},
    {"serve", "slo-ttft", Dimension::kSeconds},
    {"serve", "slo-tpot", Dimension::kSeconds},
}};

// The dimension of `command`'s flag `flag`, or nullopt when it takes no quantity.
constexpr std::optional<Dimension> quantity_dimension(std::string_view command,
                                                      std::string_view flag) {
  for (const QuantityFlag& q : kQuantityFlags) {
    if (q.command == command && q.flag == flag) {
      return q.dimension;
    }
  }
  return std::nullopt;
}

// The same, for a flag the command knows takes a quantity. REQUIRES: it is in the table.
inline Dimension quantity_flag(std::string_view command, std::string_view flag) {
  const std::optional<Dimension> d = quantity_dimension(command, flag);
  GPUPLAN_CHECK(d.has_value(), "a quantity flag missing from kQuantityFlags");
  return *d;
}

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_QUANTITY_FLAGS_H_
