// Physical quantities with their unit in the type.
//
// Every quantity inside gpuplan is a double in an SI base unit (bytes, seconds, FLOPs, watts)
// wrapped in a Quantity<Tag>, so that `Seconds t = GiB(1);` does not compile and a bandwidth
// cannot be added to a size. Unit strings ("141 GB", "4.8 TB/s", "989.5 TFLOP/s", "2 us") are
// parsed only at the edges of the program, by parse_quantity() below. GB = 1e9 bytes and
// GiB = 2^30 bytes, always.
#ifndef GPUPLAN_UNITS_H_
#define GPUPLAN_UNITS_H_

#include <compare>
#include <string>
#include <string_view>

#include "gpuplan/result.h"

namespace gpuplan {

// A value held in the SI base unit of its dimension (Tag).
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() : si_(0) {}
  constexpr explicit Quantity(double si) : si_(si) {}
  constexpr double si() const { return si_; }
  constexpr auto operator<=>(const Quantity&) const = default;

  constexpr Quantity operator+(Quantity o) const { return Quantity(si_ + o.si_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(si_ - o.si_); }
  constexpr Quantity& operator+=(Quantity o) {
    si_ += o.si_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    si_ -= o.si_;
    return *this;
  }
  constexpr Quantity operator*(double k) const { return Quantity(si_ * k); }
  constexpr Quantity operator/(double k) const { return Quantity(si_ / k); }
  // The ratio of two quantities of the same dimension is a plain number.
  constexpr double operator/(Quantity o) const { return si_ / o.si_; }

 private:
  double si_;
};

template <class Tag>
constexpr Quantity<Tag> operator*(double k, Quantity<Tag> q) {
  return q * k;
}

using Bytes = Quantity<struct BytesTag>;
using Seconds = Quantity<struct SecondsTag>;
using Flops = Quantity<struct FlopsTag>;
using BytesPerSecond = Quantity<struct BytesPerSecondTag>;
using FlopsPerSecond = Quantity<struct FlopsPerSecondTag>;
using Watts = Quantity<struct WattsTag>;

// The physically meaningful cross-unit operations, and no others.
constexpr Seconds operator/(Bytes b, BytesPerSecond bw) {
  return Seconds(b.si() / bw.si());
}
constexpr Seconds operator/(Flops f, FlopsPerSecond r) {
  return Seconds(f.si() / r.si());
}
constexpr BytesPerSecond operator/(Bytes b, Seconds t) {
  return BytesPerSecond(b.si() / t.si());
}
constexpr FlopsPerSecond operator/(Flops f, Seconds t) {
  return FlopsPerSecond(f.si() / t.si());
}
constexpr Bytes operator*(BytesPerSecond bw, Seconds t) {
  return Bytes(bw.si() * t.si());
}
constexpr Flops operator*(FlopsPerSecond r, Seconds t) {
  return Flops(r.si() * t.si());
}

constexpr Bytes GB(double n) {
  return Bytes(n * 1e9);
}
constexpr Bytes GiB(double n) {
  return Bytes(n * 1073741824.0);
}
constexpr Bytes MiB(double n) {
  return Bytes(n * 1048576.0);
}

// The dimension a unit string must have where it is parsed.
enum class Dimension { kBytes, kSeconds, kBytesPerSecond, kFlops, kFlopsPerSecond, kWatts };

// Parses "<number> <unit>" (the space is optional) into the SI value of `dimension`.
// Accepted units: bytes B kB MB GB TB PB KiB MiB GiB TiB; seconds s ms us ns min h d;
// bandwidth B/s kB/s MB/s GB/s TB/s MiB/s GiB/s and bit rates Mb/s Gb/s Tb/s (÷8);
// work FLOP GFLOP TFLOP PFLOP; compute FLOP/s GFLOP/s ... PFLOP/s, and OP/s ... POP/s for integer
// ops; power W kW. A bare number, an unknown unit, a value that is negative, not finite (nan,
// inf) or too large for a double, and a zero rate (bandwidth, compute) are errors naming the text
// and suggesting a unit of the right dimension.
Result<double> parse_quantity(std::string_view text, Dimension dimension);

// The name of a dimension for messages ("a size", "a bandwidth", ...).
std::string_view dimension_name(Dimension dimension);

}  // namespace gpuplan

#endif  // GPUPLAN_UNITS_H_
