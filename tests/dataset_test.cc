#include "gpuplan/dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "gpuplan/catalog.h"
#include "gpuplan/serving.h"
#include "loaders.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

TEST(LengthDistribution, IsPiecewiseLinearBetweenItsQuantiles) {
  // Quantiles 10 at p = 0, 20 at 0.5, 60 at 1: the median is 20, p = 0.75 halfway to 60 (40),
  // and the mean the trapezoids' 0.5 x 15 + 0.5 x 40 = 27.5.
  const LengthDistribution d({0.0, 0.5, 1.0}, {10.0, 20.0, 60.0});
  EXPECT_EQ(d.at(0.0), 10);
  EXPECT_EQ(d.at(0.5), 20);
  EXPECT_EQ(d.at(0.75), 40);
  EXPECT_EQ(d.at(0.999999), 60);
  EXPECT_DOUBLE_EQ(d.mean(), 27.5);
  EXPECT_EQ(d.max(), 60);
}

TEST(LengthDistribution, ParametricFormsKeepTheirMeanAndSpread) {
  // Uniform with mean 500 and sd 100 spans 500 +- 100 sqrt(3) = 326.8 .. 673.2, its mean exact.
  const LengthDistribution u = *parametric_lengths("uniform", 500, 100, "t");
  EXPECT_NEAR(u.mean(), 500, 1e-9);
  EXPECT_EQ(u.at(0.0), 327);
  EXPECT_EQ(u.max(), 673);
  // Normal: symmetric, its median the mean; cut at 0.05 % and 99.95 % (z = 3.29).
  const LengthDistribution n = *parametric_lengths("normal", 500, 100, "t");
  EXPECT_EQ(n.at(0.5), 500);
  EXPECT_NEAR(n.mean(), 500, 1.0);
  EXPECT_EQ(n.max(), std::lround(500 + 3.2905 * 100));
  // Lognormal with mean 400 and sd 300: sigma^2 = ln(1 + 300^2/400^2) = 0.446, median
  // 400 / sqrt(1.5625) = 320; the quantile table's mean is within 2 % of 400 (its tails cut).
  const LengthDistribution l = *parametric_lengths("lognormal", 400, 300, "t");
  EXPECT_EQ(l.at(0.5), 320);
  EXPECT_NEAR(l.mean(), 400, 8.0);
  Result<LengthDistribution> bad = parametric_lengths("lognormall", 400, 300, "--input-dist");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(),
            "--input-dist: unknown distribution 'lognormall'; did you mean 'lognormal'?");
}

TEST(Dataset, MlperfSetsLoadWithTheirSourcesMeans) {
  // data/datasets: the Llama 2 70B set's outputs are scaled to the 294.45 tokens MLPerf's
  // accuracy check asks of the model's answers; its prompts keep the data set's mean (222.8).
  const Catalog& c = shipped_catalog();
  const Dataset& d = **c.dataset("mlperf-llama2-70b-openorca");
  EXPECT_EQ(d.samples, 24576);
  EXPECT_NEAR(d.output.mean(), 294.45, 0.1);
  EXPECT_NEAR(d.input.mean(), 222.8, 0.1);
  EXPECT_EQ(d.output.max(), 1024);
  EXPECT_FALSE(c.dataset("mlperf-llama2-70b").has_value());
  // The Llama 3.1 8B set (MLPerf v5.1, CNN/DailyMail): 13,368 prompts of mean 870.0 tokens as
  // scripts/dataset-quantiles read them (the trapezoids' mean over the quantiles; the samples'
  // own mean is 870.7), every answer the 128 tokens the v5.1 results generate per sample.
  const Dataset& cnn = **c.dataset("mlperf-llama3.1-8b-cnn-dailymail");
  EXPECT_EQ(cnn.samples, 13368);
  EXPECT_NEAR(cnn.input.mean(), 870.0, 0.1);
  EXPECT_EQ(cnn.input.max(), 2540);
  EXPECT_DOUBLE_EQ(cnn.output.mean(), 128.0);
  EXPECT_EQ(cnn.output.max(), 128);
}

TEST(Dataset, GptJSetIsTheEightBArticlesUnderGptJsPromptWithFourBeams) {
  // data/datasets/mlperf-gptj-cnn-dailymail.toml (scripts/dataset-quantiles): the 8B set's
  // 13,368 prompts + 23 tokens of GPT-J's longer template, cut at the 1,919 GPT-J's harness
  // keeps: the 8B quantiles' mean of 870.0 becomes 887.1 (+23, less what the cut takes off the
  // longest 2.5 %, whose 8B prompts run from 1,931.8 to 2,540). Outputs: 69.0 tokens on average,
  // MLPerf's count per GPT-J sample, from 30 to 128; 4 beams, the benchmark's beam search.
  const Catalog& c = shipped_catalog();
  const Dataset& gptj = **c.dataset("mlperf-gptj-cnn-dailymail");
  const Dataset& llama = **c.dataset("mlperf-llama3.1-8b-cnn-dailymail");
  EXPECT_EQ(gptj.samples, llama.samples);
  EXPECT_EQ(gptj.beams, 4);
  EXPECT_EQ(llama.beams, 1);
  EXPECT_EQ(gptj.input.max(), 1919);
  EXPECT_NEAR(gptj.input.mean(), 887.1, 0.05);
  EXPECT_LT(gptj.input.mean(), llama.input.mean() + 23);
  // Below the cut, each quantile is the 8B one + 23: the median 784 -> 807.
  EXPECT_EQ(gptj.input.at(0.5), llama.input.at(0.5) + 23);
  EXPECT_NEAR(gptj.output.mean(), 69.0, 0.05);
  EXPECT_EQ(gptj.output.at(0.0), 30);
  EXPECT_EQ(gptj.output.max(), 128);
}

TEST(Dataset, ShareGptChatHasShortPromptsAndLongAnswers) {
  // data/datasets/sharegpt-vicuna-conversations.toml: performance-dashboard's 81,494 ShareGPT
  // conversations less the 819 with an empty side (80,675); cl100k tokens, the source's IQR cut
  // keeping prompts to 614 and answers to 3,333. scripts/dataset-quantiles' trapezoid means:
  // prompts 123.1, answers 1,221.0; the median prompt (p = 0.5) is 73 tokens.
  const Dataset& d = **shipped_catalog().dataset("sharegpt-vicuna-conversations");
  EXPECT_EQ(d.samples, 80675);
  EXPECT_NEAR(d.input.mean(), 123.1, 0.05);
  EXPECT_NEAR(d.output.mean(), 1221.0, 0.05);
  EXPECT_EQ(d.input.at(0.5), 73);
  EXPECT_EQ(d.input.max(), 614);
  EXPECT_EQ(d.output.max(), 3333);
  EXPECT_GE(d.input.at(0.0), 1);  // no empty prompt: every request has one
  EXPECT_GE(d.output.at(0.0), 1);
}

TEST(Dataset, DeepSeekR1ReasonsAtLengthUpToTheHarnesssCap) {
  // data/datasets/mlperf-deepseek-r1.toml: MLCommons' 4,388 samples; prompts mean 804.6 tokens,
  // DeepSeek-R1's reference outputs capped at the v5.1 harness's 20,000 (mean 3,885). The
  // v5.1 Offline runs on 8 B200 generated 3,650-3,744 tokens per sample (33,379 tokens/s over
  // 8.93431 samples/s is 3,736 for NVIDIA's): the cap keeps the references within 5 % of that.
  const Dataset& d = **shipped_catalog().dataset("mlperf-deepseek-r1");
  EXPECT_EQ(d.samples, 4388);
  EXPECT_NEAR(d.input.mean(), 804.6, 0.05);
  EXPECT_NEAR(d.output.mean(), 3885.3, 0.05);  // from the quantiles as written, to 0.1 token
  EXPECT_EQ(d.output.max(), 20000);
  EXPECT_NEAR(d.output.mean() / (33379 / 8.93431), 1.0, 0.05);
}

// What loading `text` as the data set file `name` gives: "" where it loads, else its error,
// the file's path in front left out ("6:16: ..."; an error naming no such path stays whole).
std::string load_error(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  Result<Dataset> d = detail::load_dataset(path);
  std::remove(path.c_str());
  if (d.has_value()) {
    return "";
  }
  const std::string message = d.error().message();
  return message.starts_with(path + ":") ? message.substr(path.size() + 1) : message;
}

TEST(Dataset, AFileWhoseQuantilesFallIsRefusedWithItsLine) {
  EXPECT_EQ(load_error("falling.toml",
                       "schema = 1\nid = \"falling\"\nname = \"x\"\nsamples = 10\n"
                       "probabilities = [0, 0.5, 1]\ninput_tokens = [10, 30, 20]\n"
                       "output_tokens = [1, 2, 3]\nsource = \"test\"\n"),
            "6:16: the token counts must not fall; they are quantiles");
}

TEST(Dataset, ABeamWidthOutOfRangeIsRefusedWithItsLine) {
  EXPECT_EQ(load_error("beams.toml",
                       "schema = 1\nid = \"beams\"\nname = \"x\"\nsamples = 10\nbeams = 0\n"
                       "probabilities = [0, 1]\ninput_tokens = [10, 20]\n"
                       "output_tokens = [1, 2]\nsource = \"test\"\n"),
            "5:9: key 'beams': 0 is out of range; expected 1 to 64 beams per request");
}

TEST(Dataset, ARequestDrawsTheSameLengthsInEveryRun) {
  // Lengths are a function of the seed and the request's order, so any two simulations of one
  // workload serve the same requests; over many, the draws' mean is the distribution's.
  Workload w;
  w.input_distribution = *parametric_lengths("uniform", 300, 50, "t");
  w.output_distribution = *parametric_lengths("normal", 100, 20, "t");
  Workload again = w;
  double in = 0, out = 0;
  constexpr int kRequests = 20000;
  for (int i = 0; i < kRequests; ++i) {
    const RequestLength a = w.length(i), b = again.length(i);
    EXPECT_EQ(a.input, b.input);
    EXPECT_EQ(a.output, b.output);
    in += static_cast<double>(a.input);
    out += static_cast<double>(a.output);
  }
  // The standard error of a mean of 20,000 draws of sd 50 is 0.35: within 1.5 tokens.
  EXPECT_NEAR(in / kRequests, 300, 1.5);
  EXPECT_NEAR(out / kRequests, 100, 1.5);
  EXPECT_NEAR(w.mean_context(), 400, 0.5);
  Workload other = w;
  other.seed = 2;
  EXPECT_NE(other.length(0).input, w.length(0).input);
}

}  // namespace
}  // namespace gpuplan
