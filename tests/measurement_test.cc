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

TEST(FitGemmRolloff, RecoversTheModelsRolloffFromASizeSweep) {
  // Rates made by the model's own curve, R f / (f + f_half) with R = 800 TFLOP/s and f_half =
  // 30 GFLOP, at n = 1024 ... 8192 (f = 2 n^3): the fit gives R and f_half back.
  GemmRun run;
  for (int64_t n : {1024, 2048, 4096, 8192}) {
    const double f = 2.0 * static_cast<double>(n * n * n);
    run.points.push_back({n, 800e12 * f / (f + 30e9)});
  }
  const std::optional<GemmRolloff> fit = fit_gemm_rolloff(run);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->rate, 800e12, 800e12 * 1e-9);
  EXPECT_NEAR(fit->half_flops, 30e9, 30e9 * 1e-6);
  // One size fixes no curve; rates that fall with size fit no roll-off.
  run.points.resize(1);
  EXPECT_FALSE(fit_gemm_rolloff(run).has_value());
  run.points = {{1024, 500e12}, {8192, 400e12}};
  EXPECT_FALSE(fit_gemm_rolloff(run).has_value());
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
