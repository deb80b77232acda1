#include "gpuplan/format.h"

#include <gtest/gtest.h>

namespace gpuplan {
namespace {

TEST(DurationText, PicksTheGrainByLength) {
  // Below 2 minutes in seconds, below 2 hours in minutes, below 2 days in hours, then days.
  EXPECT_EQ(duration_text(Seconds(83.8)), "83.8 s");
  EXPECT_EQ(duration_text(Seconds(120)), "2 min");
  EXPECT_EQ(duration_text(Seconds(45 * 60)), "45 min");
  EXPECT_EQ(duration_text(Seconds(33 * 3600)), "33.0 h");
  EXPECT_EQ(duration_text(Seconds(26.9 * 86400)), "26.9 days");
}

TEST(Grouped, SeparatesThousandsWithCommas) {
  EXPECT_EQ(grouped(70553706496), "70,553,706,496");
  EXPECT_EQ(grouped(-1234), "-1,234");
  EXPECT_EQ(grouped(999), "999");
}

}  // namespace
}  // namespace gpuplan
