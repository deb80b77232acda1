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

TEST(ReadGemmSweep, ReadsThePublishedSweep) {
  // data/gemm/h100-sxm-bf16.csv: OpenXLA's full 3 x 5 x 5 x 5 grid; its first line is
  // 1 x 1024 x 2048 x 256 at 139.5 TFLOP/s.
  Result<std::vector<GemmSample>> s =
      read_gemm_sweep(std::string(GPUPLAN_DATA_DIR) + "/gemm/h100-sxm-bf16.csv");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_EQ(s->size(), 375U);
  EXPECT_EQ(s->front().shape.batch, 1);
  EXPECT_EQ(s->front().shape.m, 1024);
  EXPECT_EQ(s->front().shape.n, 2048);
  EXPECT_EQ(s->front().shape.k, 256);
  EXPECT_DOUBLE_EQ(s->front().rate.si(), 139.5e12);
}

TEST(ReadGemmSweep, NamesTheLineOfABadValue) {
  Result<std::vector<GemmSample>> s = read_gemm_sweep(fixture("bad-sweep.csv"));
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(),
            fixture("bad-sweep.csv") +
                ":4: 'fast' is not a positive number; each line is batch,m,n,k (whole numbers) "
                "and the rate in TFLOP/s");
}

TEST(GemmSamples, TurnsSquareRunsIntoShapes) {
  GemmRun run;
  run.points = {{1024, 500e12}, {0, 1.0}};
  const std::vector<GemmSample> s = gemm_samples(run);
  ASSERT_EQ(s.size(), 1U);  // the empty size is dropped
  EXPECT_EQ(s[0].shape.m, 1024);
  EXPECT_EQ(s[0].shape.k, 1024);
  EXPECT_DOUBLE_EQ(s[0].rate.si(), 500e12);
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
