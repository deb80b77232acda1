#include "gpuplan/units.h"

#include <gtest/gtest.h>

namespace gpuplan {
namespace {

TEST(ParseQuantity, ReadsDecimalAndBinaryPrefixes) {
  struct Case {
    const char* text;
    Dimension dimension;
    double si;
  };
  const Case cases[] = {
      {"141 GB", Dimension::kBytes, 141e9},             // GB = 1e9 bytes
      {"80GiB", Dimension::kBytes, 80.0 * 1073741824},  // GiB = 2^30 bytes
      {"143771 MiB", Dimension::kBytes, 143771.0 * 1048576},
      {"4.8 TB/s", Dimension::kBytesPerSecond, 4.8e12},
      {"400 Gb/s", Dimension::kBytesPerSecond, 50e9},  // bits: 400e9 / 8
      {"989.5 TFLOP/s", Dimension::kFlopsPerSecond, 989.5e12},
      {"1979 TOP/s", Dimension::kFlopsPerSecond, 1979e12},
      {"2 us", Dimension::kSeconds, 2e-6},
      {"0.6 us", Dimension::kSeconds, 0.6e-6},
      {"700 W", Dimension::kWatts, 700.0},
  };
  for (const Case& c : cases) {
    Result<double> v = parse_quantity(c.text, c.dimension);
    ASSERT_TRUE(v.has_value()) << c.text << ": " << v.error().message();
    EXPECT_DOUBLE_EQ(*v, c.si) << c.text;
  }
}

TEST(ParseQuantity, RejectsBareNumbersWithAHint) {
  Result<double> v = parse_quantity("900", Dimension::kBytesPerSecond);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().message(),
            "'900' has no unit; write a bandwidth with its unit, e.g. '450 GB/s' or '400 Gb/s'");
}

TEST(ParseQuantity, RejectsTheWrongDimension) {
  Result<double> v = parse_quantity("80 GB", Dimension::kBytesPerSecond);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().what, "'80 GB' is a size, expected a bandwidth");
}

TEST(ParseQuantity, SuggestsTheClosestUnit) {
  Result<double> v = parse_quantity("80 GIB", Dimension::kBytes);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().message(), "unknown unit 'GIB' in '80 GIB'; did you mean 'GiB'?");
}

TEST(ParseQuantity, RejectsNegativeValues) {
  Result<double> v = parse_quantity("-1 GB", Dimension::kBytes);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().what, "'-1 GB' is negative");
}

TEST(Quantity, CrossUnitArithmeticKeepsSi) {
  // 1 GB over 1 GB/s is one second; 1 TFLOP at 1 TFLOP/s likewise.
  EXPECT_DOUBLE_EQ((GB(1) / BytesPerSecond(1e9)).si(), 1.0);
  EXPECT_DOUBLE_EQ((Flops(1e12) / FlopsPerSecond(1e12)).si(), 1.0);
  EXPECT_DOUBLE_EQ(GiB(1) / MiB(1), 1024.0);
}

}  // namespace
}  // namespace gpuplan
