#include "gpuplan/fields.h"

#include <fmt/format.h>

#include <cmath>

#include "gpuplan/format.h"

namespace gpuplan {
namespace {

std::string bound_text(const Field& f, double v) {
  return f.integer ? grouped(std::llround(v)) : fmt::format("{:g}", v);
}

// The one "out of range" message, for a value already written as text.
Error out_of_range(const Field& f, const std::string& value, std::string_view given_as) {
  return Error{std::string(given_as), fmt::format("{} is out of range", value),
               fmt::format("expected {}", field_range(f))};
}

}  // namespace

std::string field_range(const Field& f) {
  return fmt::format("{} to {}{}{}", bound_text(f, f.min), bound_text(f, f.max),
                     f.unit.empty() ? "" : " ", f.unit);
}

Result<double> check_field(const Field& f, double value, std::string_view given_as) {
  if (!std::isfinite(value)) {
    return fail(std::string(given_as), fmt::format("{} is not a finite number", value),
                fmt::format("expected {}", field_range(f)));
  }
  if (f.integer && value != std::floor(value)) {
    return fail(std::string(given_as), fmt::format("{:g} is not a whole number", value),
                fmt::format("expected {}", field_range(f)));
  }
  if (value < f.min || value > f.max) {
    const bool whole = f.integer && std::fabs(value) < 9e15;
    return std::unexpected(out_of_range(
        f, whole ? grouped(std::llround(value)) : fmt::format("{:g}", value), given_as));
  }
  return value;
}

Result<int64_t> check_count(const Field& f, int64_t value, std::string_view given_as) {
  if (static_cast<double>(value) < f.min || static_cast<double>(value) > f.max) {
    return std::unexpected(out_of_range(f, std::to_string(value), given_as));
  }
  return value;
}

}  // namespace gpuplan
