#include "gpuplan/measurement.h"

#include <gtest/gtest.h>

namespace gpuplan {
namespace {

std::string fixture(const char* name) {
  return std::string(GPUPLAN_TEST_DATA_DIR) + "/measure/" + name;
}

TEST(FitAlphaBeta, RecoversAKnownLatencyAndBandwidth) {
  // Synthetic all-reduce on 4 ranks: t = 20 us + S x 2(n-1)/n / 100 GB/s, exact for every size.
  CollectiveRun run;
  run.op = "all_reduce";
  run.ranks = 4;
  for (double s = 1e3; s <= 1e9; s *= 4) {
    run.points.push_back({s, 20e-6 + s * 1.5 / 100e9, 0, 0});
  }
  const AlphaBeta ab = fit_alpha_beta(run);
  EXPECT_NEAR(ab.alpha_s, 20e-6, 1e-9);
  EXPECT_NEAR(ab.busbw, 100e9, 1e3);
}

TEST(ReadMeasurement, ReadsBothKinds) {
  Result<Measurement> c = read_measurement(fixture("collectives-np2.json"));
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_FALSE(c->is_train);
  EXPECT_EQ(c->collectives.op, "all_reduce");
  EXPECT_EQ(c->collectives.ranks, 2);
  EXPECT_FALSE(c->collectives.points.empty());
  Result<Measurement> t = read_measurement(fixture("train-np2.json"));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_TRUE(t->is_train);
  EXPECT_EQ(t->train.ranks, 2);
  // 2 ranks x 4 sequences x 128 tokens.
  EXPECT_DOUBLE_EQ(t->train.tokens_per_step, 1024.0);
}

TEST(ReadMeasurement, RejectsOtherFiles) {
  Result<Measurement> m = read_measurement(fixture("profile.toml"));
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().what, "not valid JSON");
}

}  // namespace
}  // namespace gpuplan
