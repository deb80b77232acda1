#include "gpuplan/validation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "shipped_catalog.h"

namespace gpuplan {
namespace {

std::string fixture(const char* name) {
  return std::string(GPUPLAN_TEST_DATA_DIR) + "/validation/" + name;
}

// A file of data/holdout/.
std::string holdout(const char* name) {
  return (std::filesystem::path(GPUPLAN_DATA_DIR) / "holdout" / name).string();
}

class ValidationTest : public ::testing::Test {
 protected:
  void SetUp() override { catalog_ = &shipped_catalog(); }
  const Catalog* catalog_ = nullptr;
};

// data/validation/ must hold exactly the rows of the shared validation files, unchanged: a copy
// that adds fields of its own to some rows measures nothing. Skipped where ../shared is absent.
TEST(ValidationData, IsExactlyTheSharedFiles) {
  const std::filesystem::path shared = std::filesystem::path(GPUPLAN_SHARED_DIR) / "validation";
  if (!std::filesystem::is_directory(shared)) {
    GTEST_SKIP() << "no " << shared.string();
  }
  for (const char* name : {"training.json", "inference.json"}) {
    auto read = [](const std::filesystem::path& p) {
      std::ifstream in(p, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    const std::string ours = read(std::filesystem::path(GPUPLAN_DATA_DIR) / "validation" / name);
    ASSERT_FALSE(ours.empty()) << name;
    EXPECT_EQ(ours, read(shared / name)) << name << " differs from " << shared.string();
  }
}

// The rows of a file of data/holdout/ as `read` (read_training_rows or read_serving_rows) gives
// them, every one resolved against the catalog (none kept a reason); a file that cannot be read
// fails the test and gives none.
template <typename Row>
std::vector<Row> resolved_holdout(const char* name,
                                  Result<std::vector<Row>> (*read)(const std::string&,
                                                                   const Catalog&)) {
  Result<std::vector<Row>> rows = read(holdout(name), shipped_catalog());
  if (!rows.has_value()) {
    ADD_FAILURE() << name << ": " << rows.error().message();
    return {};
  }
  for (const Row& row : *rows) {
    EXPECT_TRUE(row.reason.empty()) << row.id << ": " << row.reason;
  }
  return std::move(*rows);
}

// How many of `rows` have `property`.
template <typename Row, typename Property>
int64_t rows_where(const std::vector<Row>& rows, Property property) {
  return std::count_if(rows.begin(), rows.end(), property);
}

// What a file of data/holdout/ must be: in the shared format, every row read, resolved against
// the catalog (its GPU, engine and data set) and simulable, with each metric it publishes. The
// errors are for `gpuplan validate`, not for a test.
struct HoldoutFile {
  const char* name;
  size_t rows;
  size_t metrics;
  const char* engine;  // every row's engine profile, or nullptr where they differ
  int64_t max_output;  // the longest output its data sets generate
};

void expect_serving_holdout(const HoldoutFile& f) {
  SCOPED_TRACE(f.name);
  const std::vector<ServingRow> rows = resolved_holdout(f.name, read_serving_rows);
  ASSERT_EQ(rows.size(), f.rows);
  size_t metrics = 0;
  for (const ServingRow& row : rows) {
    ASSERT_NE(row.engine, nullptr) << row.id;
    if (f.engine != nullptr) {
      EXPECT_EQ(row.engine->id, f.engine) << row.id;
    }
    EXPECT_EQ(row.workload.max_output(), f.max_output) << row.id;
    metrics += row.metrics.size();
  }
  EXPECT_EQ(metrics, f.metrics);
}

TEST(HoldoutData, EveryServingRowResolvesAgainstTheCatalog) {
  // data/holdout/README.md, file by file; an offline row publishes 1 metric, a loaded one 5.
  // Llama 3.1 8B: 17 fp8 results of seven systems and 22 NVFP4 results of nine B200s, 7 + 9
  // offline and 10 + 13 loaded, on TensorRT-LLM and vLLM; the MLPerf set generates 128 tokens.
  expect_serving_holdout({"inference-mlperf-v5.1.json", 39, 16 + 23 * 5, nullptr, 128});
  // AMD Instinct: two 8 x MI300X systems (10 results) and eight 8 x MI325X ones (31), 17
  // offline and 24 loaded, all vLLM; OpenOrca and the Mixtral set generate to the end of
  // sequence, at most 1,024 tokens (their TOML files).
  expect_serving_holdout({"inference-mlperf-v5.1-instinct.json", 41, 17 + 24 * 5, "vllm", 1024});
  // The NVIDIA harness on Llama 2 70B and Mixtral: 25 single-node systems of 14 submitters
  // (H200, H200 NVL, B200, a GB200 tray), 27 offline and 33 loaded.
  expect_serving_holdout(
      {"inference-mlperf-v5.1-70b-moe.json", 60, 27 + 33 * 5, "tensorrt-llm", 1024});
  // GPT-J on NVIDIA's DGX-H100 and HGX H200 (v4.1): Offline and Server on each; a Server row
  // publishes throughput and four latency percentiles; the GPT-J set generates at most 128.
  expect_serving_holdout({"inference-mlperf-v4.1-gptj.json", 4, 2 + 2 * 5, "tensorrt-llm", 128});
}

// Each of `rows`, entries of a TensorRT-LLM offline table: that engine at `release` (empty where
// the source names none), one throughput metric, an fp8 KV cache.
void expect_tensorrt_llm_table(const std::vector<ServingRow>& rows, const char* release) {
  for (const ServingRow& row : rows) {
    ASSERT_NE(row.engine, nullptr) << row.id;
    EXPECT_EQ(row.engine->id, "tensorrt-llm") << row.id;
    EXPECT_EQ(row.engine_version, release) << row.id;
    EXPECT_EQ(row.metrics.size(), 1U) << row.id;
    EXPECT_EQ(row.instance.kv_precision, Precision::kFp8) << row.id;
  }
}

// TensorRT-LLM 1.0's offline throughput tables (data/holdout/README.md): Llama 3.1 8B on H100 and
// H200, Llama 3.3 70B and Llama 3.1 405B on H100, H200, B200 and GB200, ten lengths each: 100
// entries less the two the shared set holds (V10, V11), one throughput metric each. The 40
// Blackwell entries run NVFP4 weights, the Hopper ones fp8; every KV cache is fp8.
TEST(HoldoutData, EveryTensorRtLlmTableEntryResolvesWithItsLayout) {
  const std::vector<ServingRow> rows =
      resolved_holdout("inference-trtllm-1.0.json", read_serving_rows);
  ASSERT_EQ(rows.size(), 98U);
  expect_tensorrt_llm_table(rows, "1.0");
  EXPECT_EQ(
      rows_where(rows, [](const ServingRow& r) { return r.instance.precision == Precision::kFp4; }),
      40);
}

// Azure's TensorRT-LLM tables on ND GB200 v6 (data/holdout/README.md): six lengths each of Llama
// 3.1 8B on one GB200 and Llama 3 70B on four, fp8 weights, and the fp8 KV cache trtllm-bench's
// build forces with them. The release is not published, so each row models the current one.
TEST(HoldoutData, EveryAzureGb200EntryResolvesWithItsLayout) {
  const std::vector<ServingRow> rows =
      resolved_holdout("inference-azure-gb200.json", read_serving_rows);
  ASSERT_EQ(rows.size(), 12U);
  expect_tensorrt_llm_table(rows, "");
  EXPECT_EQ(rows_where(rows,
                       [](const ServingRow& r) {
                         return r.instance.gpu->id == "gb200" &&
                                r.instance.precision == Precision::kFp8;
                       }),
            12);
  EXPECT_EQ(rows_where(rows, [](const ServingRow& r) { return r.instance.tp == 4; }), 6);
}

TEST(HoldoutData, EveryTrainingRowResolvesAgainstTheCatalog) {
  // data/holdout/README.md: 11 torchtitan and 18 Megatron-Bridge (8 on H100 and B200, 7 on GB200,
  // and GPT OSS 120B on each of the three).
  EXPECT_EQ(resolved_holdout("training-2024-2025.json", read_training_rows).size(), 29U);
}

// Megatron-Bridge's 26.08 summary (data/holdout/README.md): its four mixture-of-experts rows on
// DGX-GB200, in MXFP8, as NeMo 2026 runs them, expert parallelism 8 to 64.
TEST(HoldoutData, EveryMegatronBridge2608RowIsAnExpertParallelNemo2026Run) {
  const std::vector<TrainingRow> rows =
      resolved_holdout("training-megatron-bridge-26.08.json", read_training_rows);
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows_where(rows,
                       [](const TrainingRow& r) {
                         return r.job.software.year == 2026 && r.job.memory.layout.ep >= 8 &&
                                r.job.memory.precision == Precision::kFp8;
                       }),
            4);
}

// NVIDIA's DGX Cloud recipes (data/holdout/README.md): 10 Llama 3.1 8B, 12 70B, 12 405B (6 of
// them NVIDIA's proxies with 7, 21 or 42 of its layers), 16 Nemotron-4 15B and 10 340B, half in
// bf16 and half in fp8.
TEST(HoldoutData, EveryDgxCloudRowResolvesWithItsContextParallelism) {
  const std::vector<TrainingRow> rows =
      resolved_holdout("training-dgxc-2024.json", read_training_rows);
  ASSERT_EQ(rows.size(), 60U);
  // The Llama recipes split each sequence over 2 GPUs (CP 2); Nemotron's does not.
  EXPECT_EQ(rows_where(rows, [](const TrainingRow& r) { return r.job.memory.layout.cp > 1; }), 34);
}

// The NeMo 24.07 performance summary's other pretraining rows (data/holdout/README.md): GPT-3 5B,
// 20B and 175B on 128 GPUs, Llama 2 13B and 70B, Nemotron 8B, 22B and 340B, every one in fp8.
// Five interleave their pipeline (VP 6, 10, 20, 10 and 12), as the table gives them.
TEST(HoldoutData, EveryNemoSummaryRowKeepsItsInterleaving) {
  const std::vector<TrainingRow> rows =
      resolved_holdout("training-nemo-24.07.json", read_training_rows);
  ASSERT_EQ(rows.size(), 8U);
  EXPECT_EQ(
      rows_where(rows,
                 [](const TrainingRow& r) { return r.job.memory.precision == Precision::kFp8; }),
      8);
  EXPECT_EQ(
      rows_where(rows, [](const TrainingRow& r) { return r.job.memory.layout.virtual_stages > 1; }),
      5);
}

// LLM Foundry's MPT tables (data/holdout/README.md): every row but the four the shared set holds,
// read with llm-foundry's own MPTConfig defaults (biases, learned positions, no ALiBi), so that
// each model is the size the table prints.
TEST(HoldoutData, EveryLlmFoundryRowIsTheModelItsTablePrints) {
  const std::vector<TrainingRow> rows =
      resolved_holdout("training-llm-foundry.json", read_training_rows);
  // 76 rows on A100 40 GB, 61 on A100 80 GB, 68 in bf16 and 7 in fp8 on H100.
  ASSERT_EQ(rows.size(), 212U);
  // FULL_SHARD everywhere but the six 1B and 3B runs of the large-scale H100 table
  // (SHARD_GRAD_OP, ZeRO-2).
  EXPECT_EQ(rows_where(rows, [](const TrainingRow& r) { return r.job.memory.layout.zero == 3; }),
            206);
  // MPT-7B at 2,048 tokens, d 4,096, 32 layers, vocabulary 50,368, tied head: a layer holds
  // Wqkv 3h^2 + 3h, the output h^2 + h, the MLP 4h^2 + 4h and 4h^2 + h, two LayerNorms 4h:
  // 12h^2 + 13h = 201,379,840; x 32 = 6,444,154,880, + 206,307,328 token and 8,388,608
  // position embeddings + the final norm's 8,192 = 6,658,859,008, the table's NumParams.
  const auto mpt7b = std::find_if(rows.begin(), rows.end(), [](const TrainingRow& row) {
    return row.id == "FDRY-7B-H100-2048-512";
  });
  ASSERT_NE(mpt7b, rows.end());
  EXPECT_EQ(count_parameters(mpt7b->model).total, 6'658'859'008);
}

TEST(Median, OfOddEvenAndNoValues) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);  // (2 + 3) / 2
  EXPECT_EQ(median({}), 0.0);
}

void expect_group(const GroupSummary& got, const GroupSummary& want) {
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.rows, want.rows) << want.name;
  EXPECT_EQ(got.predicted, want.predicted) << want.name;
  EXPECT_DOUBLE_EQ(got.median_abs_error_pct, want.median_abs_error_pct) << want.name;
  EXPECT_DOUBLE_EQ(got.max_abs_error_pct, want.max_abs_error_pct) << want.name;
}

TEST(Summarize, OverAllEntriesPerMetricAndPerArchitectureInTheOrderTheyAppear) {
  // Metric a: errors -10, +20, +30 % -> |error| 10, 20, 30: median 20, max 30. Metric b: one
  // entry not predicted and one at -5 %: 1 of 2 predicted, median and max 5. Over all four
  // predicted: 5, 10, 20, 30 -> median (10 + 20) / 2 = 15, max 30. By architecture, leaving out
  // the entry whose GPU the catalog lacks (b at -5 %): hopper -10 % and one not predicted, 1 of
  // 2, median and max 10; blackwell +20 and +30 %, median 25, max 30.
  ValidationReport r;
  auto entry = [](const char* metric, std::optional<double> error, const char* architecture) {
    ValidationEntry e;
    e.metric = metric;
    e.architecture = architecture;
    e.published = 100;
    if (error) {
      e.predicted = 100 + *error;
      e.error_pct = *error;
    }
    return e;
  };
  r.entries = {entry("a", -10.0, "hopper"), entry("b", std::nullopt, "hopper"),
               entry("a", 20.0, "blackwell"), entry("b", -5.0, ""), entry("a", 30.0, "blackwell")};
  summarize(r);
  EXPECT_EQ(r.predicted, 4);
  EXPECT_DOUBLE_EQ(r.median_abs_error_pct, 15.0);
  EXPECT_DOUBLE_EQ(r.max_abs_error_pct, 30.0);
  ASSERT_EQ(r.by_metric.size(), 2U);
  expect_group(r.by_metric[0], {"a", 3, 3, 20.0, 30.0});
  expect_group(r.by_metric[1], {"b", 2, 1, 5.0, 5.0});
  ASSERT_EQ(r.by_architecture.size(), 2U);
  expect_group(r.by_architecture[0], {"hopper", 2, 1, 10.0, 10.0});
  expect_group(r.by_architecture[1], {"blackwell", 2, 2, 25.0, 30.0});
  // Summarising again starts over.
  summarize(r);
  EXPECT_EQ(r.by_metric.size(), 2U);
  EXPECT_EQ(r.by_metric[0].rows, 3);
  EXPECT_EQ(r.by_architecture[0].rows, 2);
}

// A predicted MFU is checked against the best published run on the same tensor cores: the GPU's
// own runs and those of GPUs of the same architecture with the same dense peak in the precision
// (data/gpus/: h100-sxm and h200-sxm both hopper at 989.5 TFLOP/s bf16 and 1979 fp8; a100-sxm-40gb
// and -80gb both ampere at 312; h100-pcie hopper at 756.5, h200-nvl at 835.5). fp16 and bf16
// count as one class.
TEST_F(ValidationTest, PublishedMfuCeilingIsTheBestOnTheSameTensorCores) {
  const std::vector<PublishedMfu> runs = {{"A", "h100-sxm", Precision::kBf16, 0.40},
                                          {"B", "a100-sxm-80gb", Precision::kFp16, 0.55},
                                          {"C", "h200-sxm", Precision::kFp8, 0.30},
                                          {"D", "a100-sxm-40gb", Precision::kBf16, 0.49}};
  auto best = [&](const char* gpu, Precision p) {
    const std::optional<PublishedMfu> r = best_published_mfu(runs, *catalog_, gpu, p);
    return r ? r->id : std::string("none");
  };
  EXPECT_EQ(best("h200-sxm", Precision::kBf16), "A");       // no h200 bf16 run: the H100's counts
  EXPECT_EQ(best("h100-sxm", Precision::kFp8), "C");        // and the other way round
  EXPECT_EQ(best("a100-sxm-40gb", Precision::kBf16), "B");  // 0.55 on the 80 GB part beats 0.49
  EXPECT_EQ(best("h100-pcie", Precision::kBf16), "none");   // hopper, but 756.5 TFLOP/s
  EXPECT_EQ(best("h200-nvl", Precision::kFp8), "none");     // hopper, but 1670.5 TFLOP/s
  EXPECT_EQ(best("b200", Precision::kBf16), "none");        // no blackwell run
  EXPECT_EQ(best("h200-sxm", Precision::kFp4), "none");     // no fp4 rate, no fp4 run

  // The text names the run's GPU when it is another one.
  EXPECT_EQ(published_mfu_text(runs[0], "h100-sxm", Lang::kEn),
            "the best published h100-sxm bf16 run (40.0 %, A)");
  EXPECT_EQ(published_mfu_text(runs[0], "h200-sxm", Lang::kEn),
            "the best published bf16 run on the same tensor cores (h100-sxm, 40.0 %, A)");
  EXPECT_EQ(published_mfu_text(runs[0], "h200-sxm", Lang::kPt),
            "a melhor execução publicada com bf16 nos mesmos tensor cores (h100-sxm, 40,0 %, A)");
}

TEST_F(ValidationTest, PredictsKnownRowsAndExplainsTheOthers) {
  Result<ValidationReport> r = run_validation(fixture("small-training.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->kind, "training");
  EXPECT_EQ(r->rows, 3);
  EXPECT_EQ(r->predicted, 2);
  ASSERT_EQ(r->entries.size(), 3U);
  for (int i = 0; i < 2; ++i) {
    const ValidationEntry& e = r->entries[static_cast<size_t>(i)];
    ASSERT_TRUE(e.predicted.has_value()) << e.id << ": " << e.reason;
    // error_pct = (predicted - published) / published x 100.
    EXPECT_DOUBLE_EQ(e.error_pct, (*e.predicted - e.published) / e.published * 100.0);
  }
  const ValidationEntry& unknown = r->entries[2];
  EXPECT_FALSE(unknown.predicted.has_value());
  EXPECT_EQ(unknown.reason,
            "unknown gpu 'h300-sxm'; did you mean 'h100-sxm'? (gpuplan catalog list gpus)");
  // The summary covers the predicted rows only: the larger |error| is the max.
  const double a = std::fabs(r->entries[0].error_pct);
  const double b = std::fabs(r->entries[1].error_pct);
  EXPECT_DOUBLE_EQ(r->max_abs_error_pct, std::max(a, b));
  EXPECT_DOUBLE_EQ(r->median_abs_error_pct, (a + b) / 2);
}

// A published global batch that dp x micro-batch does not divide is predicted at the nearest one
// that it does, and the row says so; an unknown framework loses only its row.
TEST_F(ValidationTest, RoundsAGlobalBatchAloudAndNamesAnUnknownFramework) {
  const std::string path = fixture("rounded-batch-and-unknown-framework.json");
  Result<ValidationReport> r = run_validation(path, *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 2U);
  const ValidationEntry& rounded = r->entries[0];
  ASSERT_TRUE(rounded.predicted.has_value()) << rounded.reason;
  // dp 8 x micro-batch 2 = 16 sequences per step unit: 30 lies 14 above 16 and 2 below 32.
  EXPECT_EQ(rounded.note,
            "global batch 30 rounded to 32, the nearest multiple of dp 8 x micro-batch 2");
  ASSERT_TRUE(rounded.training.has_value());
  EXPECT_EQ(rounded.training->job.global_batch, 32);
  const ValidationEntry& misspelt = r->entries[1];
  EXPECT_FALSE(misspelt.predicted.has_value());
  EXPECT_EQ(misspelt.reason, path +
                                 ": row 1 'KOR22-MISSPELT-FRAMEWORK': software: unknown framework "
                                 "'megatorn-lm'; did you mean 'megatron-lm'? (gpuplan catalog "
                                 "list frameworks)");
}

TEST_F(ValidationTest, APublishedLayoutIsTimedWhereTheFrameworkFileSaysItCouldNotRun) {
  // Sequence parallelism with Megatron-LM as of 2021, before it came (2022,
  // data/frameworks/megatron-lm.toml): train and search refuse such a layout, but a published run
  // did run, so validate times it and says that the framework file disagrees.
  Result<ValidationReport> r =
      run_validation(fixture("layout-the-framework-lacked.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 1U);
  const ValidationEntry& e = r->entries[0];
  ASSERT_TRUE(e.predicted.has_value()) << e.reason;
  EXPECT_EQ(e.note,
            "megatron-lm as of 2021 has no sequence parallelism (it came in 2022) in its framework "
            "file; timed as published");
  ASSERT_TRUE(e.training.has_value());
  EXPECT_TRUE(e.training->job.memory.layout.sequence_parallel);
}

TEST_F(ValidationTest, AnUnreadableModelMakesTheRowUnpredictable) {
  Result<ValidationReport> r = run_validation(fixture("unknown-family.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 1U);
  EXPECT_FALSE(r->entries[0].predicted.has_value());
  EXPECT_EQ(r->entries[0].reason,
            "model:1: unsupported model_type 'rwkv'; expected one of: gpt2, "
            "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, phi3, "
            "granite, olmo2, cohere, cohere2, starcoder2, nemotron, gpt_neox, bloom, mpt, falcon, "
            "gptj, gemma3_text, deepseek_v2, deepseek_v3, kimi_k2, glm4_moe, gpt_oss");
}

TEST_F(ValidationTest, ASingleNodeRowNeedsNoNetworkAndABadLayoutOnlyLosesItsRow) {
  Result<ValidationReport> r =
      run_validation(fixture("single-node-and-bad-layout.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 2U);
  EXPECT_TRUE(r->entries[0].predicted.has_value()) << r->entries[0].reason;
  EXPECT_FALSE(r->entries[1].predicted.has_value());
  EXPECT_NE(r->entries[1].reason.find("key 'virtual_stages' must be an integer from 0 to 16777216"),
            std::string::npos)
      << r->entries[1].reason;
}

TEST_F(ValidationTest, AMultiNodeRowWithoutItsNicsGetsOnePerGpuAndSaysSo) {
  // TITAN-L31-8B-H200-32 twice: as published (8 NICs per 8-GPU node), and with nics_per_node
  // null, which the CLI's default reads as one per GPU: the same network, the same prediction.
  Result<ValidationReport> r = run_validation(fixture("unpublished-nics.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 2U);
  ASSERT_TRUE(r->entries[0].predicted && r->entries[1].predicted) << r->entries[1].reason;
  EXPECT_TRUE(std::isfinite(*r->entries[1].predicted));
  EXPECT_DOUBLE_EQ(*r->entries[1].predicted, *r->entries[0].predicted);
  EXPECT_EQ(r->entries[0].note, "");
  EXPECT_EQ(r->entries[1].note, "nics_per_node not published: one per GPU (8)");
}

TEST_F(ValidationTest, InferenceRowsGetOneEntryPerMetric) {
  Result<ValidationReport> r = run_validation(fixture("small-inference.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  // LAT: two metrics, DIST, PP and W4 one each; LAT's TTFT and PP's TPOT are predicted, LAT's
  // goodput is no metric gpuplan knows, DIST has no lengths, and W4's precision is unknown,
  // which loses the row, not the file.
  ASSERT_EQ(r->entries.size(), 5U);
  EXPECT_EQ(r->rows, 5);
  EXPECT_EQ(r->predicted, 2);
  EXPECT_NE(r->entries[4].reason.find("serving.precision: unknown precision 'int3'"),
            std::string::npos)
      << r->entries[4].reason;
  const ValidationEntry& ttft = r->entries[1];  // metrics come in key order: goodput, ttft
  EXPECT_EQ(ttft.metric, "ttft_ms_mean");
  ASSERT_TRUE(ttft.predicted.has_value()) << ttft.reason;
  ASSERT_TRUE(ttft.serving.has_value());
  // A batch of one: the TTFT is the prefill of its 512 tokens, the whole simulation.
  EXPECT_NEAR(*ttft.predicted, ttft.serving->ttft.mean * 1e3, 1e-9);
  EXPECT_NEAR(ttft.error_pct, (*ttft.predicted - 50) / 50 * 100, 1e-9);
  EXPECT_NE(r->entries[0].reason.find("'goodput' is not a serving metric"), std::string::npos);
  EXPECT_NE(r->entries[2].reason.find("only as a distribution"), std::string::npos);
  // PP: two stages of 16 layers on one node; the pipeline hands activations from stage to stage.
  ASSERT_TRUE(r->entries[3].predicted.has_value()) << r->entries[3].reason;
  EXPECT_EQ(r->entries[3].metric, "tpot_ms_mean");
}

TEST_F(ValidationTest, ATtftIsPredictedWhereTheLoadSettles) {
  // Llama 3.1 8B on one H100, 467 -> 256 tokens, under TGI, whose profile gives no length of a
  // serving benchmark: the saturated engine completes some tens of requests/s (gpuplan serve
  // llama-3.1-8b --gpu h100-sxm --engine tgi --input 467 --output 256). At 2 requests/s the
  // queue stays short and the runs settle: the TTFT is the steady state's. At 1,000 requests/s
  // the queue grows as long as the benchmark sends, and offline every request waits for all
  // before it: with no length, neither TTFT is a property of the system.
  Result<ValidationReport> r = run_validation(fixture("loads.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 3U);
  ASSERT_TRUE(r->entries[0].predicted.has_value()) << r->entries[0].reason;
  ASSERT_TRUE(r->entries[0].serving.has_value());
  EXPECT_NEAR(*r->entries[0].predicted, r->entries[0].serving->ttft.mean * 1e3, 1e-9);
  EXPECT_FALSE(r->entries[1].predicted.has_value());
  EXPECT_NE(r->entries[1].reason.find("are at or past the simulated capacity"), std::string::npos)
      << r->entries[1].reason;
  EXPECT_FALSE(r->entries[2].predicted.has_value());
  EXPECT_NE(r->entries[2].reason.find("TTFT of an offline run is queueing time"), std::string::npos)
      << r->entries[2].reason;
}

TEST_F(ValidationTest, ALatencyUnderLoadIsPredictedForTheEnginesBenchmarkLength) {
  // The offline row of loads.json measured by TensorRT-LLM's serving benchmark (500 requests,
  // data/engines/tensorrt-llm.toml) and by vLLM's (benchmark_serving.py, 1,000): each run is
  // that many requests, every one measured, as the benchmark clients report them.
  Result<ValidationReport> r = run_validation(fixture("benchmark-length.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 8U);
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(r->entries[i].predicted.has_value()) << r->entries[i].reason;
    ASSERT_TRUE(r->entries[i].serving.has_value());
  }
  const ServingResult& trt = *r->entries[0].serving;
  const ServingResult& vllm = *r->entries[3].serving;
  EXPECT_EQ(trt.requests, 500);
  EXPECT_EQ(trt.simulated, 500);
  EXPECT_EQ(vllm.requests, 1000);
  EXPECT_EQ(r->entries[0].note,
            "a run of 500 requests, all measured: the length of tensorrt-llm's serving benchmark "
            "(the row gives none)");
  // Measured from the first arrival (t = 0) to the last completion: the tokens/s over the run's
  // duration are all 500 x 256 output tokens.
  EXPECT_NEAR(trt.output_tokens_per_s * trt.duration.si(), 500.0 * 256, 1e-6 * 500 * 256);
  // Entries in key order: itl, output tokens/s, ttft.
  EXPECT_EQ(r->entries[2].metric, "ttft_ms_mean");
  EXPECT_NEAR(*r->entries[2].predicted, trt.ttft.mean * 1e3, 1e-9);
  // Twice the requests queued at once wait behind twice the prompts: the mean TTFT grows with
  // the benchmark's length (more than 1.5 times, as the second half queues behind the first).
  EXPECT_GT(vllm.ttft.mean, 1.5 * trt.ttft.mean);
  // A row that names an MLPerf data set ran LoadGen (at least ten minutes): the steady state,
  // where an offline TTFT is still the run's length, and is not predicted.
  EXPECT_FALSE(r->entries[6].predicted.has_value());
  EXPECT_NE(r->entries[6].reason.find("TTFT of an offline run is queueing time"), std::string::npos)
      << r->entries[6].reason;
  // Poisson arrivals are a serving client's, throughput alone included: 1,000 requests at 2 per
  // second arrive over ~500 s, and the client divides their 1,000 x 256 tokens by the time to
  // the last completion, a few seconds more: below the 2 x 256 = 512 tokens/s that arrive.
  const ValidationEntry& poisson = r->entries[7];
  ASSERT_TRUE(poisson.predicted.has_value()) << poisson.reason;
  EXPECT_EQ(poisson.serving->requests, 1000);
  EXPECT_NEAR(*poisson.predicted * poisson.serving->duration.si(), 1000.0 * 256, 1e-6 * 256'000);
  EXPECT_LT(*poisson.predicted, 512.0);
  EXPECT_GT(*poisson.predicted, 0.9 * 512);
}

TEST_F(ValidationTest, ARowRunsOnTheEngineItNamesOrOnTheDefaultOneSayingSo) {
  // engines.json: the LAT row of small-inference.json on "vLLM 0.6.0", which
  // data/engines/vllm.toml names; on "MyEngine 2", which no profile names; on "TensorRT-LLM",
  // the default engine (data/params/inference.toml); and on "Triton + vLLM 0.6.0 backend", which
  // names vLLM after another word.
  Result<ValidationReport> r = run_validation(fixture("engines.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 4U);
  for (const ValidationEntry& e : r->entries) {
    ASSERT_TRUE(e.predicted.has_value()) << e.id << ": " << e.reason;
  }
  const ValidationEntry& vllm = r->entries[0];
  const ValidationEntry& other = r->entries[1];
  const ValidationEntry& trt = r->entries[2];
  const ValidationEntry& triton = r->entries[3];
  // The unnamed engine runs as TensorRT-LLM does, to the byte, and the row says so.
  EXPECT_EQ(*other.predicted, *trt.predicted);
  EXPECT_NE(other.note.find("no engine profile (data/engines) names 'MyEngine 2 (test fixture)': "
                            "modelled as tensorrt-llm, the engine the serving parameters were "
                            "fitted with"),
            std::string::npos)
      << other.note;
  EXPECT_EQ(trt.note.find("no engine profile"), std::string::npos) << trt.note;
  // The Triton row is vLLM 0.6.0 again (EngineTest.PublishedNamesPickTheirEngine checks which
  // profile such names pick).
  EXPECT_EQ(*triton.predicted, *vllm.predicted);
  EXPECT_EQ(triton.note, vllm.note);
}

TEST_F(ValidationTest, ARowOnTheGptJSetDecodesFourBeamsOfItsOutputs) {
  // gptj-dataset.json: GPT-J 6B on 8 H100s, lengths from mlperf-gptj-cnn-dailymail, whose
  // requests ask for beam search of 4. The row's workload takes the set's lengths and beams; it
  // is predicted, its requests drawing the set's outputs (69.0 tokens on average: output tokens
  // over requests near 69; 2,000 or more draws from 30 to 128 tokens keep within 2).
  Result<std::vector<ServingRow>> rows = read_serving_rows(fixture("gptj-dataset.json"), *catalog_);
  ASSERT_TRUE(rows.has_value()) << rows.error().message();
  ASSERT_EQ(rows->size(), 1U);
  EXPECT_EQ((*rows)[0].workload.beams, 4);
  EXPECT_EQ((*rows)[0].workload.max_input(), 1919);
  Result<ValidationReport> r = run_validation(fixture("gptj-dataset.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 1U);
  const ValidationEntry& e = r->entries[0];
  ASSERT_TRUE(e.predicted.has_value()) << e.reason;
  ASSERT_TRUE(e.serving.has_value());
  EXPECT_NEAR(e.serving->output_tokens_per_s / e.serving->requests_per_s, 69.0, 2.0);
}

TEST_F(ValidationTest, ARowInAModelsPublishedFormatIsServedAsPublished) {
  // gpt-oss-120b on one H100 "in mxfp4": its config publishes MXFP4 experts (choose_weights), so
  // the row runs them as the engines do on Hopper, dequantised into 16-bit GEMMs, with the bf16
  // cache engines keep for it. The same row with the quantization_config removed asks for fp4
  // weights the H100 has no tensor cores for, and is not predicted.
  Result<ValidationReport> r = run_validation(fixture("published-format.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 2U);
  EXPECT_TRUE(r->entries[0].predicted.has_value()) << r->entries[0].reason;
  EXPECT_EQ(r->entries[0].note, "kv_precision not published: bf16");
  EXPECT_FALSE(r->entries[1].predicted.has_value());
  EXPECT_NE(r->entries[1].reason.find("no fp4 tensor-core rate"), std::string::npos)
      << r->entries[1].reason;
}

TEST_F(ValidationTest, ASizeARowLeavesNullIsWhatItsGpusLeave) {
  // Eight H100s, tp x pp x replicas = 8: tp null with 2 replicas of one stage is tp 4; pp and
  // replicas null with tp 2 is one stage and 4 replicas; pp null with tp 2 and 2 replicas is
  // 2 stages. 3 replicas do not divide 8 GPUs, and a size of 0 is no size: those rows alone are
  // lost. fp8 weights with kv_precision null get the fp8 cache they come with (memory.h).
  Result<ValidationReport> r = run_validation(fixture("partial-layouts.json"), *catalog_);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->entries.size(), 6U);
  ASSERT_TRUE(r->entries[5].predicted.has_value()) << r->entries[5].reason;
  EXPECT_EQ(r->entries[5].note, "kv_precision not published: fp8");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(r->entries[i].predicted.has_value()) << r->entries[i].reason;
  }
  EXPECT_EQ(r->entries[0].note, "tp not published: 8 GPUs / (pp 1 x 2 replicas) = tp 4");
  EXPECT_EQ(r->entries[1].note,
            "pp not published: 1; replicas not published: 8 GPUs / (tp 2 x pp 1) = 4");
  EXPECT_EQ(r->entries[2].note, "pp not published: 8 GPUs / (tp 2 x 2 replicas) = pp 2");
  EXPECT_FALSE(r->entries[3].predicted.has_value());
  EXPECT_NE(r->entries[3].reason.find("serving tp is null, and the other sizes (3) do not divide "
                                      "the row's 8 GPUs"),
            std::string::npos)
      << r->entries[3].reason;
  EXPECT_FALSE(r->entries[4].predicted.has_value());
  EXPECT_NE(r->entries[4].reason.find("serving.pp is 0"), std::string::npos)
      << r->entries[4].reason;
  // A batch of one prompt: four GPUs of tensor parallelism prefill it faster than two.
  ASSERT_TRUE(r->entries[0].predicted && r->entries[1].predicted);
  EXPECT_LT(*r->entries[0].predicted, *r->entries[1].predicted);
}

TEST(ServingMetrics, TheFormatsNamesAndTheirPercentiles) {
  // The shared format's six names, and the same families at p50 and p90, end-to-end latency in
  // seconds and completed requests per second; a unit the family does not use is no metric.
  for (const char* name :
       {"output_tokens_per_s", "ttft_ms_mean", "ttft_ms_p99", "tpot_ms_mean", "tpot_ms_p99",
        "itl_ms_mean", "ttft_ms_p50", "tpot_ms_p90", "e2e_s_mean", "e2e_s_p99", "requests_per_s"}) {
    EXPECT_TRUE(predicts_serving_metric(name)) << name;
  }
  for (const char* name : {"goodput", "e2e_ms_mean", "ttft_ms_p95", "ttft_ms_", "itl_ms_p99"}) {
    EXPECT_FALSE(predicts_serving_metric(name)) << name;
  }
}

TEST_F(ValidationTest, MalformedFilesAreErrors) {
  Result<ValidationReport> a = run_validation(fixture("no-rows.json"), *catalog_);
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().what, "missing array 'rows'");
  Result<ValidationReport> b = run_validation(fixture("missing-layout.json"), *catalog_);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().message(), fixture("missing-layout.json") +
                                     ": row 0 'R1': key 'layout' must be an object; see the "
                                     "format README");
  Result<ValidationReport> c = run_validation(fixture("absent.json"), *catalog_);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().what, "cannot open the file");
}

}  // namespace
}  // namespace gpuplan
