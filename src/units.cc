#include "gpuplan/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gpuplan/suggest.h"

namespace gpuplan {

std::string Error::message() const {
  std::string out = where.empty() ? what : fmt::format("{}: {}", where, what);
  if (!hint.empty()) {
    out += "; " + hint;
  }
  return out;
}

void check_failed(const char* file, int line, const char* condition, const char* msg) {
  std::fprintf(stderr, "%s:%d: internal error: check '%s' failed: %s\n", file, line, condition,
               msg);
  std::abort();
}

namespace {

struct UnitEntry {
  std::string_view symbol;
  Dimension dimension;
  double factor;  // SI value of one unit
};

// One table, the single place where unit symbols are defined.
constexpr std::array kUnits = {
    UnitEntry{"B", Dimension::kBytes, 1.0},
    UnitEntry{"kB", Dimension::kBytes, 1e3},
    UnitEntry{"KB", Dimension::kBytes, 1e3},
    UnitEntry{"MB", Dimension::kBytes, 1e6},
    UnitEntry{"GB", Dimension::kBytes, 1e9},
    UnitEntry{"TB", Dimension::kBytes, 1e12},
    UnitEntry{"PB", Dimension::kBytes, 1e15},
    UnitEntry{"KiB", Dimension::kBytes, 1024.0},
    UnitEntry{"MiB", Dimension::kBytes, 1048576.0},
    UnitEntry{"GiB", Dimension::kBytes, 1073741824.0},
    UnitEntry{"TiB", Dimension::kBytes, 1099511627776.0},
    UnitEntry{"s", Dimension::kSeconds, 1.0},
    UnitEntry{"ms", Dimension::kSeconds, 1e-3},
    UnitEntry{"us", Dimension::kSeconds, 1e-6},
    UnitEntry{"ns", Dimension::kSeconds, 1e-9},
    UnitEntry{"min", Dimension::kSeconds, 60.0},
    UnitEntry{"h", Dimension::kSeconds, 3600.0},
    UnitEntry{"d", Dimension::kSeconds, 86400.0},
    UnitEntry{"B/s", Dimension::kBytesPerSecond, 1.0},
    UnitEntry{"kB/s", Dimension::kBytesPerSecond, 1e3},
    UnitEntry{"MB/s", Dimension::kBytesPerSecond, 1e6},
    UnitEntry{"GB/s", Dimension::kBytesPerSecond, 1e9},
    UnitEntry{"TB/s", Dimension::kBytesPerSecond, 1e12},
    UnitEntry{"MiB/s", Dimension::kBytesPerSecond, 1048576.0},
    UnitEntry{"GiB/s", Dimension::kBytesPerSecond, 1073741824.0},
    UnitEntry{"Mb/s", Dimension::kBytesPerSecond, 1e6 / 8},
    UnitEntry{"Gb/s", Dimension::kBytesPerSecond, 1e9 / 8},
    UnitEntry{"Tb/s", Dimension::kBytesPerSecond, 1e12 / 8},
    UnitEntry{"FLOP", Dimension::kFlops, 1.0},
    UnitEntry{"GFLOP", Dimension::kFlops, 1e9},
    UnitEntry{"TFLOP", Dimension::kFlops, 1e12},
    UnitEntry{"PFLOP", Dimension::kFlops, 1e15},
    UnitEntry{"FLOP/s", Dimension::kFlopsPerSecond, 1.0},
    UnitEntry{"GFLOP/s", Dimension::kFlopsPerSecond, 1e9},
    UnitEntry{"TFLOP/s", Dimension::kFlopsPerSecond, 1e12},
    UnitEntry{"PFLOP/s", Dimension::kFlopsPerSecond, 1e15},
    UnitEntry{"TOP/s", Dimension::kFlopsPerSecond, 1e12},
    UnitEntry{"POP/s", Dimension::kFlopsPerSecond, 1e15},
    UnitEntry{"W", Dimension::kWatts, 1.0},
    UnitEntry{"kW", Dimension::kWatts, 1e3},
};

std::string_view example_for(Dimension d) {
  switch (d) {
    case Dimension::kBytes:
      return "'80 GiB' or '141 GB'";
    case Dimension::kSeconds:
      return "'2 us' or '1.5 ms'";
    case Dimension::kBytesPerSecond:
      return "'450 GB/s' or '400 Gb/s'";
    case Dimension::kFlops:
      return "'2 GFLOP'";
    case Dimension::kFlopsPerSecond:
      return "'989.5 TFLOP/s'";
    case Dimension::kWatts:
      return "'700 W'";
  }
  return "";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::string_view dimension_name(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBytes:
      return "a size";
    case Dimension::kSeconds:
      return "a time";
    case Dimension::kBytesPerSecond:
      return "a bandwidth";
    case Dimension::kFlops:
      return "an amount of work";
    case Dimension::kFlopsPerSecond:
      return "a compute rate";
    case Dimension::kWatts:
      return "a power";
  }
  return "a quantity";
}

Result<double> parse_quantity(std::string_view text, Dimension dimension) {
  const std::string_view s = trim(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return fail(
        "", fmt::format("'{}' is too large a number", text),
        fmt::format("write {} as e.g. {}", dimension_name(dimension), example_for(dimension)));
  }
  if (ec != std::errc() || s.empty()) {
    return fail(
        "", fmt::format("'{}' is not a number with a unit", text),
        fmt::format("write {} as e.g. {}", dimension_name(dimension), example_for(dimension)));
  }
  const std::string_view unit = trim(std::string_view(end, s.data() + s.size() - end));
  if (unit.empty()) {
    return fail("", fmt::format("'{}' has no unit", text),
                fmt::format("write {} with its unit, e.g. {}", dimension_name(dimension),
                            example_for(dimension)));
  }
  for (const UnitEntry& u : kUnits) {
    if (u.symbol != unit) {
      continue;
    }
    if (u.dimension != dimension) {
      return fail("",
                  fmt::format("'{}' is {}, expected {}", text, dimension_name(u.dimension),
                              dimension_name(dimension)),
                  fmt::format("e.g. {}", example_for(dimension)));
    }
    // from_chars reads "nan" and "inf": no physical quantity is either.
    if (!std::isfinite(value) || !std::isfinite(value * u.factor)) {
      return fail(
          "", fmt::format("'{}' is not a finite number", text),
          fmt::format("write {} as e.g. {}", dimension_name(dimension), example_for(dimension)));
    }
    if (value < 0) {
      return fail("", fmt::format("'{}' is negative", text), "a physical quantity is >= 0");
    }
    // Every rate gpuplan reads divides something (bytes by bandwidth, work by compute rate).
    const bool rate =
        dimension == Dimension::kBytesPerSecond || dimension == Dimension::kFlopsPerSecond;
    if (rate && value == 0) {
      return fail("", fmt::format("'{}' is zero", text),
                  fmt::format("{} must be positive", dimension_name(dimension)));
    }
    return value * u.factor;
  }
  std::vector<std::string> same_dimension;
  for (const UnitEntry& u : kUnits) {
    if (u.dimension == dimension) {
      same_dimension.emplace_back(u.symbol);
    }
  }
  return fail("", fmt::format("unknown unit '{}' in '{}'", unit, text),
              suggestion_hint(unit, same_dimension));
}

}  // namespace gpuplan
