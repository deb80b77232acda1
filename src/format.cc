#include "gpuplan/format.h"

#include <fmt/format.h>

namespace gpuplan {

std::string grouped(int64_t n) {
  std::string digits = fmt::format("{}", n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string duration_text(Seconds t) {
  const double s = t.si();
  if (s < 120) {
    return fmt::format("{:.1f} s", s);
  }
  if (s < 2 * 3600) {
    return fmt::format("{:.0f} min", s / 60);
  }
  if (s < 2 * 86400) {
    return fmt::format("{:.1f} h", s / 3600);
  }
  return fmt::format("{:.1f} days", s / 86400);
}

}  // namespace gpuplan
