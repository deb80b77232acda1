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

TEST(MeasureReport, EfficiencyIsTheSourceDocumentsFormulaAndThePredictionOnlyWithAFabric) {
  // 1 rank: 1,000 tokens in 1.0 s; 2 ranks: 2,000 tokens in 1.25 s (given out of order).
  // efficiency = T1 x 1 / (T2 x 2) on the time per token: (1.0 / 1000) / (1.25 / 2000 x 2) = 80 %.
  TrainRun one;
  one.ranks = 1;
  one.tokens_per_step = 1000;
  one.step_median_s = 1.0;
  one.compute_median_s = 0.9;
  one.update_median_s = 0.1;
  one.gradient_bytes = 4e8;
  TrainRun two = one;
  two.ranks = 2;
  two.tokens_per_step = 2000;
  two.step_median_s = 1.25;
  const MeasureReport plain = measure_report({two, one}, nullptr, TrainParams{});
  ASSERT_EQ(plain.rows.size(), 2U);
  EXPECT_EQ(plain.base_ranks, 1);
  EXPECT_EQ(plain.rows[0].run.ranks, 1);
  EXPECT_DOUBLE_EQ(plain.rows[0].efficiency_pct, 100.0);
  EXPECT_DOUBLE_EQ(plain.rows[1].efficiency_pct, 80.0);
  EXPECT_DOUBLE_EQ(plain.rows[1].tokens_per_s, 1600.0);
  EXPECT_FALSE(plain.rows[1].predicted_pct.has_value());

  // Over a 10 GB/s link, 2 ranks all-reduce 400 MB: 2 (n-1)/n x 400 MB / busbw = 40 ms at least
  // (busbw = 10 GB/s x nccl_efficiency 1 here), so the predicted step is over 1.04 s and the
  // efficiency below 1.0 / 1.04 = 96.2 %; one rank needs no all-reduce: 100 %.
  Fabric link;
  link.id = "test-link";
  link.bandwidth = BytesPerSecond(10e9);
  link.latency = Seconds(5e-6);
  TrainParams p;
  p.nccl_efficiency = 1.0;
  const MeasureReport predicted = measure_report({one, two}, &link, p);
  ASSERT_TRUE(predicted.rows[0].predicted_pct && predicted.rows[1].predicted_pct);
  EXPECT_NEAR(*predicted.rows[0].predicted_pct, 100.0, 1e-9);
  EXPECT_LT(*predicted.rows[1].predicted_pct, 96.2);
  EXPECT_GT(*predicted.rows[1].predicted_pct, 90.0);  // and not far below: the link is 10 GB/s
}

}  // namespace
}  // namespace gpuplan
