#include "gpuplan/catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gpuplan/machines.h"
#include "gpuplan/suggest.h"
#include "loaders.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

std::string fixture(const std::string& name) {
  return std::string(GPUPLAN_TEST_DATA_DIR) + "/catalog/" + name;
}

TEST(Catalog, TheMi325xIsTheMi300xDieWithMoreMemoryAndPower) {
  // research notes hardware-facts.md sec. 1.3: the same CDNA 3 compute die and peaks, 256 GiB of
  // HBM3E at 6.0 TB/s against 192 GiB at 5.3 TB/s, 1000 W against 750 W; the higher limit
  // sustains more of the peak (MAMF bf16 784.9 against 668.4 of 1300 TFLOP/s).
  const Catalog& c = shipped_catalog();
  const Gpu& a = *c.gpu("mi300x").value();
  const Gpu& b = *c.gpu("mi325x").value();
  for (Precision p : {Precision::kBf16, Precision::kFp8}) {
    EXPECT_EQ(b.peak_for(p)->si(), a.peak_for(p)->si()) << precision_name(p);
  }
  EXPECT_EQ(b.memory_usable.si(), 256.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(a.memory_usable.si(), 192.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(b.memory_bandwidth.si() / a.memory_bandwidth.si(), 6.0 / 5.3);
  EXPECT_NEAR(b.efficiency->gemm, 784.9 / 1300, 0.001);
  EXPECT_NEAR(a.efficiency->gemm, 668.4 / 1300, 0.001);
  // fp8: the MI300X's estimate scaled by the measured bf16 ratio, 0.45 x 0.604 / 0.514.
  EXPECT_NEAR(b.efficiency->gemm_fp8, 0.45 * 0.604 / 0.514, 0.001);
  EXPECT_EQ(b.sms, a.sms);
}

TEST(Machines, ANodeIsWhatOneScaleUpFabricJoins) {
  // Without --gpus-per-node a node is a server of 8 GPUs (HGX H100: one NVLink domain of 8; L4
  // cards, domain 1, in a server of 8), or the whole NVLink domain where it is larger: 72 on a
  // GB200 NVL72 rack. Never more than the GPUs asked for.
  const Catalog& c = shipped_catalog();
  auto per_node = [&](const char* gpu, int64_t gpus) {
    MachineSpec spec;
    spec.gpu = gpu;
    spec.gpus = gpus;
    spec.scale_out = "ib-ndr-400g";
    Result<Machines> m = resolve_machines(c, spec);
    EXPECT_TRUE(m.has_value()) << m.error().message();
    return m ? m->cluster.gpus_per_node : 0;
  };
  EXPECT_EQ(per_node("h100-sxm", 64), 8);
  EXPECT_EQ(per_node("l4", 16), 8);
  EXPECT_EQ(per_node("gb200", 144), 72);
  EXPECT_EQ(per_node("gb200", 16), 16);
  EXPECT_EQ(per_node("h100-sxm", 4), 4);
}

TEST(Catalog, TheB300IsBlackwellUltraAtItsPowerLimit) {
  // data/gpus/b300.toml. HGX B300: 105 PFLOP/s of dense fp4 over 8 GPUs, 13,125 TFLOP/s each,
  // against the B200's 9,000; the same 2,250 bf16 and 4,500 fp8. A B300 SXM6 AC has 7,680
  // usable bits of HBM3e bus at 8 Gb/s per pin: 7.68 TB/s. Its shares are those measured at its
  // 1,100 W limit (docs/FORMULAS.md#gemm): cuBLASLt at 16,384 on every side, 1,568 of 2,250 bf16
  // and 2,637 of 4,500 fp8 TFLOP/s, below MAMF's short runs (1,769.0 and 3,353.3). Its HBM share
  // is its read:write sweep at a triad's 2:1 mix, between 7.12 TB/s at 3:1 and 6.82 at 5:3:
  // 6.82 + (2/3 - 5/8) / (3/4 - 5/8) x 0.30 = 6.92 TB/s, 0.90 of 7.68.
  const Catalog& c = shipped_catalog();
  const Gpu& b300 = *c.gpu("b300").value();
  const Gpu& b200 = *c.gpu("b200").value();
  EXPECT_DOUBLE_EQ(b300.peak_for(Precision::kFp4)->si(), 105e15 / 8);
  EXPECT_EQ(b300.peak_for(Precision::kBf16)->si(), b200.peak_for(Precision::kBf16)->si());
  EXPECT_EQ(b300.peak_for(Precision::kFp8)->si(), b200.peak_for(Precision::kFp8)->si());
  EXPECT_FALSE(b300.peak_for(Precision::kInt8).has_value());  // published figures disagree
  EXPECT_DOUBLE_EQ(b300.memory_bandwidth.si(), 7680.0 / 8 * 8e9);
  EXPECT_EQ(b300.sms, b200.sms);
  const Efficiency& e = *b300.efficiency;
  EXPECT_NEAR(e.gemm, 1568.0 / 2250, 0.001);
  EXPECT_NEAR(e.gemm_fp8, 2637.0 / 4500, 0.001);
  EXPECT_LT(e.gemm, 1769.0 / 2250);
  EXPECT_LT(e.gemm_fp8, 3353.3 / 4500);
  EXPECT_NEAR(e.hbm, (6.82 + (2.0 / 3 - 5.0 / 8) / (3.0 / 4 - 5.0 / 8) * 0.30) / 7.68, 0.005);
  EXPECT_EQ(e.estimated, (std::vector<std::string>{"gemm_fp4", "attention", "attention_native"}));
  EXPECT_EQ(b300.scale_up_domain, 8);
}

TEST(Catalog, TheH100NvlIsAnH200NvlComputeWithLessMemoryAndAPairBridge) {
  // research notes sec. 1.1-1.2: the NVL parts share their dense peaks (835.5 TFLOP/s bf16);
  // the H100 NVL has 94 GB at 3.9 TB/s (NVML: 99,961,274,368 B) against 141 GB at 4.8 TB/s,
  // and a bridge of 600 GB/s per GPU (300 per direction) joining pairs, not up to four cards.
  const Catalog& c = shipped_catalog();
  const Gpu& h100 = *c.gpu("h100-nvl").value();
  const Gpu& h200 = *c.gpu("h200-nvl").value();
  EXPECT_EQ(h100.peak_for(Precision::kBf16)->si(), h200.peak_for(Precision::kBf16)->si());
  EXPECT_NEAR(h100.memory_usable.si(), 99961274368.0, 1024.0 * 1024.0);
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth.si(), 3.9e12);
  EXPECT_EQ(h100.scale_up_domain, 2);
  EXPECT_DOUBLE_EQ(c.fabric("nvlink4-bridge-pair").value()->bandwidth.si(), 300e9);
}

// The best rate at which a decode attention kernel streamed its KV cache on `gpu`, from the
// rows of data/attention/cudnn-decode-sweep.csv: every key and value read once, batch x kv_len
// x kv_heads x head_dim x 2 (K and V) x 2 bytes (bf16) over the time.
double best_decode_stream(const std::string& gpu) {
  std::ifstream in(std::string(GPUPLAN_DATA_DIR) + "/attention/cudnn-decode-sweep.csv");
  EXPECT_TRUE(in.good());
  std::string line;
  double best = 0;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    if (header) {  // gpu,batch,kv_len,q_heads,kv_heads,head_dim,time_ms
      EXPECT_EQ(line, "gpu,batch,kv_len,q_heads,kv_heads,head_dim,time_ms");
      header = false;
      continue;
    }
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string v; std::getline(fields, v, ',');) {
      f.push_back(v);
    }
    EXPECT_EQ(f.size(), 7u) << line;
    if (f.size() != 7 || f[0] != gpu) {
      continue;
    }
    const double bytes = std::stod(f[1]) * std::stod(f[2]) * std::stod(f[4]) * std::stod(f[5]) * 4;
    best = std::max(best, bytes / (std::stod(f[6]) * 1e-3));
  }
  return best;
}

TEST(Catalog, BlackwellsHbmSharesAgreeWithTheRateCudnnsDecodeAttentionStreams) {
  // Memory-bound work runs at bandwidth x hbm (docs/FORMULAS.md). H200's hbm is measured
  // (BabelStream triad, 4.15 of 4.8 TB/s: 0.86); B200's and GB200's (0.85) had no measurement of
  // their own. cuDNN 9.27's decode attention, timed on all three by NVIDIA (data/attention/),
  // streams at best 4,503 GB/s on H200 (batch 128 x 131,072 keys: 68.7 GB in 15.26 ms), 1.091 x
  // 4.8 TB/s x 0.86; 7,238 GB/s on B200, 1.106 x 7.7 TB/s x 0.85; 7,536 GB/s on GB200, 1.108 x
  // 8 TB/s x 0.85. Were the kernel to stream the same multiple of bandwidth x hbm on every
  // part, B200's share would be 0.862 and GB200's 0.864: 0.85 is within 1.4 and 1.6 %, not
  // optimistic, and the check allows 3 %.
  const Catalog& c = shipped_catalog();
  auto ratio = [&](const std::string& id) {
    const Gpu& g = *c.gpu(id).value();
    return best_decode_stream(id) / (g.memory_bandwidth.si() * g.efficiency->hbm);
  };
  const double h200 = ratio("h200-sxm");
  EXPECT_NEAR(h200, 4503.2e9 / (4.8e12 * 0.86), 0.001);
  for (const char* id : {"b200", "gb200"}) {
    EXPECT_NEAR(ratio(id) / h200, 1.0, 0.03) << id;
    const Efficiency& e = *c.gpu(id).value()->efficiency;
    EXPECT_EQ(std::count(e.estimated.begin(), e.estimated.end(), "hbm"), 0) << id;
  }
}

TEST(Catalog, LoadsTheBuiltInDataWithTheIdsScriptsUse) {
  Result<Catalog> c = Catalog::load(GPUPLAN_DATA_DIR);
  ASSERT_TRUE(c.has_value()) << c.error().message();
  for (const char* id : {"h200-sxm", "h200-nvl", "h100-sxm", "h100-pcie", "a100-sxm-40gb",
                         "a100-sxm-80gb", "a100-pcie-80gb", "l4", "l40s", "t4", "t10", "b200",
                         "gb200", "h100-nvl", "mi300x", "mi325x"}) {
    EXPECT_TRUE(c->gpu(id).has_value()) << id;
  }
  for (const char* id :
       {"nvlink3", "nvlink4", "nvlink4-bridge-pair", "nvlink5", "pcie3", "pcie4", "pcie5",
        "ib-hdr-200g", "ib-ndr-400g", "roce-200g", "roce-400g", "opa-100g", "ethernet-100g"}) {
    EXPECT_TRUE(c->fabric(id).has_value()) << id;
  }
  for (const char* id :
       {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-2-7b", "llama-2-13b",
        "llama-2-70b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-7b", "qwen2.5-72b",
        "gemma-2-27b", "falcon-180b", "bloom-176b", "gpt3-175b", "deepseek-v3"}) {
    EXPECT_TRUE(c->model(id).has_value()) << id;
  }
  for (const char* id : {"eveo-hgx-8xh200", "eveo-h200", "eveo-l4", "eveo-2xt10"}) {
    Result<const Offer*> o = c->offer(id);
    ASSERT_TRUE(o.has_value()) << id;
    EXPECT_FALSE((*o)->price_per_node_hour.has_value()) << id << ": the price is not public";
    EXPECT_EQ((*o)->sites.size(), 5U) << id << ": SP1, SP2, PR1, CE1, FL1";
  }
  // The H200 carries both the marketed figure and what the driver reports.
  const Gpu& h200 = **c->gpu("h200-sxm");
  EXPECT_DOUBLE_EQ(h200.memory.si(), 141e9);
  EXPECT_DOUBLE_EQ(h200.memory_usable.si(), 143771.0 * 1048576);
}

TEST(Catalog, LookupsSuggestTheClosestId) {
  Result<Catalog> c = Catalog::load(GPUPLAN_DATA_DIR);
  ASSERT_TRUE(c.has_value());
  Result<const Gpu*> g = c->gpu("h100sxm");
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().message(),
            "unknown gpu 'h100sxm'; did you mean 'h100-sxm'? (gpuplan catalog list gpus)");
  Result<Model> m = c->model("mixtral-8x7");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().hint, "did you mean 'mixtral-8x7b'? (gpuplan catalog list models)");
}

TEST(Catalog, AnIdThatBeginsAnotherIsSuggestedBeforeOneAsFarAway) {
  // "h100" is 2 edits from "b200" and contains in "h100-sxm" (counted at the limit, 2): at the
  // same distance, the id that contains the word wins.
  EXPECT_EQ(closest_match("h100", {"b200", "h100-sxm"}), "h100-sxm");
  // `catalog show` looks among every kind: five ids contain "h100", too many to list, so those
  // that begin with it are named (an offer "azure-nd96isr-h100-v5" does not).
  EXPECT_EQ(suggestion_hint("h100", {"b200", "h100-nvl", "h100-pcie", "h100-sxm",
                                     "h100-sxm-96gb-hbm2e", "azure-nd96isr-h100-v5"}),
            "did you mean one of 'h100-nvl', 'h100-pcie', 'h100-sxm', 'h100-sxm-96gb-hbm2e'?");
}

TEST(Catalog, AWordThatContainsANameSuggestsIt) {
  // "inference" is 4 edits from "infer", past the limit max(2, 9 / 3) = 3, and "training" 3
  // from "train", past max(2, 8 / 3) = 2: each holds the name whole, which finds it.
  const std::vector<std::string> tasks = {"train", "finetune", "lora", "qlora", "infer"};
  EXPECT_EQ(closest_match("inference", tasks), "infer");
  EXPECT_EQ(closest_match("training", tasks), "train");
  // A name of two letters is no guess: "ab" in "tabular" is chance.
  EXPECT_EQ(closest_match("tabular", {"ab", "zzzzzzzz"}), "");
}

// The built-in catalog loaded from a copy in which `file` (under data/) has `pattern` replaced by
// `replacement`; `path` is set to the edited file's path in the copy.
Result<Catalog> load_edited(const std::string& file, const std::string& pattern,
                            const std::string& replacement, std::string* path) {
  namespace fs = std::filesystem;
  // One directory per process and file: tests of this binary run as processes side by side.
  std::string name = "gpuplan-catalog-" + std::to_string(::getpid()) + "-" + file;
  std::replace(name.begin(), name.end(), '/', '-');
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::copy(GPUPLAN_DATA_DIR, dir, fs::copy_options::recursive);
  const fs::path edited = dir / file;
  std::ifstream in(edited);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::ofstream(edited) << std::regex_replace(text, std::regex(pattern), replacement);
  Result<Catalog> c = Catalog::load(dir.string());
  fs::remove_all(dir);
  *path = edited.string();
  return c;
}

TEST(Catalog, AnEngineTierMustNameGpusTheCatalogHas) {
  // A copy of the built-in data whose LMDeploy profile lists 'h100sxm' among its tier's GPUs:
  // the tier would never apply, so the catalog does not load.
  std::string engine;
  Result<Catalog> c = load_edited("engines/lmdeploy.toml", "\"h100-sxm\"", "\"h100sxm\"", &engine);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message(), engine +
                                     ": tier: unknown gpu 'h100sxm'; did you mean 'h100-sxm'? "
                                     "(gpuplan catalog list gpus)");
}

TEST(Catalog, AnEnginesBenchmarkLengthIsAtLeastOneRequest) {
  // The TensorRT-LLM profile with a serving benchmark of 0 requests: no run has that length, so
  // the catalog does not load, naming the file, line and key.
  std::string engine;
  Result<Catalog> c = load_edited("engines/tensorrt-llm.toml", "benchmark_requests = 500",
                                  "benchmark_requests = 0", &engine);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find(engine + ":"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("key 'benchmark_requests' = 0 is out of range"),
            std::string::npos)
      << c.error().message();
}

TEST(Catalog, AServingFitMustSayWhichArchitecturesItSaw) {
  // serving-fit.toml without its 'architectures' line (one written before the fit recorded
  // them): serve could not tell a GPU the fit never saw, so the catalog does not load, and the
  // error names the file and the command that writes the key. A misspelt key is named as such.
  std::string fit;
  Result<Catalog> c = load_edited("params/serving-fit.toml", "architectures = [^\n]*\n", "", &fit);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message(),
            fit +
                ":1:1: missing key 'architectures'; the GPU architectures the fit saw: refit "
                "with gpuplan calibrate --validation FILE, which writes them");
  c = load_edited("params/serving-fit.toml", "\\narchitectures", "\narchitecture", &fit);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("unknown key 'architecture'; did you mean 'architectures'?"),
            std::string::npos)
      << c.error().message();
  // A value that is not a list of names is refused too.
  c = load_edited("params/serving-fit.toml", "architectures = [^\n]*", "architectures = 3", &fit);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("architectures"), std::string::npos) << c.error().message();
}

// The vLLM profile with `from` replaced by `to` does not load, and says so naming its file and
// the problem (`says`); the catalog error gives the line and key.
void expect_vllm_refused(const char* from, const char* to, const char* says) {
  std::string engine;
  Result<Catalog> c = load_edited("engines/vllm.toml", from, to, &engine);
  ASSERT_FALSE(c.has_value()) << to;
  EXPECT_NE(c.error().message().find(engine + ":"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find(says), std::string::npos) << c.error().message();
}

TEST(Catalog, AnEnginesHostTimePerSequenceIsNeitherNegativeNorAboveAMillisecond) {
  // vLLM's 21 us per sequence turned into -21 us, then into 2 ms: a negative host time would
  // shorten every iteration, and 2 ms per sequence would make a batch of 1,024 wait two seconds
  // for its host; both are refused.
  expect_vllm_refused("\"21 us\"", "\"-21 us\"", "key 'sequence_overhead': '-21 us' is negative");
  expect_vllm_refused("\"21 us\"", "\"2 ms\"", "sequence_overhead 2000 us is outside 0 to 1000 us");
}

TEST(Catalog, AnEnginesReleasesAreDottedNumbersInOrder) {
  // "v0.14" is how release tags are written, not a release number the rows' "vLLM 0.10.0" can
  // be compared with; and a range that ends where it starts holds no release. Both are refused.
  expect_vllm_refused("host_waits_until = \"0.14\"", "host_waits_until = \"v0.14\"",
                      "'v0.14' is not a release number");
  expect_vllm_refused("host_waits_until = \"0.14\"", "host_waits_until = \"0.8\"",
                      "host_waits_until 0.8 is not after host_waits_from 0.8");
}

TEST(GpuLoader, ReadsAGoodFile) {
  Result<Gpu> g = detail::load_gpu(fixture("good-gpu.toml"));
  ASSERT_TRUE(g.has_value()) << g.error().message();
  EXPECT_DOUBLE_EQ(g->memory.si(), 80e9);
  EXPECT_DOUBLE_EQ(g->peak_for(Precision::kBf16)->si(), 312e12);
  EXPECT_FALSE(g->peak_for(Precision::kFp8).has_value());
}

TEST(GpuLoader, ErrorsNameFileLineKeyAndHint) {
  struct Case {
    const char* file;
    const char* message;  // after "<fixture dir>/"
  };
  const Case cases[] = {
      {"unknown-key.toml",
       "unknown-key.toml:10:1: unknown key 'clock'; expected one of: schema, id, name, vendor, "
       "architecture, "
       "memory, memory_usable, memory_bandwidth, tdp, pcie_gen, scale_up, scale_up_domain, "
       "source, peak, efficiency, gemm"},
      {"bare-number.toml",
       "bare-number.toml:6:10: key 'memory' = 80 has no unit; write a size as a string with its "
       "unit, e.g. 'memory = \"80 GB\"'"},
      {"negative-size.toml",
       "negative-size.toml:6:10: key 'memory': '-80 GB' is negative; a physical quantity is >= 0"},
      {"missing-source.toml",
       "missing-source.toml:1:1: missing key 'source'; every entry must give it"},
      {"peak-typo.toml", "peak-typo.toml:16:1: unknown key 'peak.bf61'; did you mean 'bf16'?"},
      {"wrong-schema.toml",
       "wrong-schema.toml:1:10: unsupported schema; this gpuplan reads 'schema = 1'"},
      // `estimated` names keys of its own [efficiency] table (data/gpus/h100-sxm.toml has no
      // gemm_fp16; its 16-bit share is `gemm`).
      {"estimated-typo.toml",
       "estimated-typo.toml:32:13: 'gemm_fp16' is not a value of this [efficiency] table; did "
       "you mean 'gemm_fp8'?"},
  };
  for (const Case& c : cases) {
    Result<Gpu> g = detail::load_gpu(fixture(c.file));
    ASSERT_FALSE(g.has_value()) << c.file;
    EXPECT_EQ(g.error().message(), fixture("") + c.message) << c.file;
  }
}

TEST(GpuLoader, ReportsSyntaxErrorsWithTheirPosition) {
  Result<Gpu> g = detail::load_gpu(fixture("syntax-error.toml"));
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().where.rfind(fixture("syntax-error.toml:3:"), 0), 0U) << g.error().message();
}

TEST(FrameworkLoader, RejectsAStageOrEngineItDoesNotKnow) {
  // Gradients are sharded from ZeRO-2, or from ZeRO-1 in some frameworks: never from 3 alone.
  Result<Framework> stage = detail::load_framework(fixture("framework-bad-stage.toml"));
  ASSERT_FALSE(stage.has_value());
  EXPECT_EQ(stage.error().message(),
            fixture("framework-bad-stage.toml:8:27: key 'gradient_sharding_stage' = 3 is out of "
                    "range; expected 1 to 2"));
  Result<Framework> engine = detail::load_framework(fixture("framework-bad-engine.toml"));
  ASSERT_FALSE(engine.has_value());
  EXPECT_NE(engine.error().message().find("framework-bad-engine.toml:4:12:"), std::string::npos)
      << engine.error().message();
  EXPECT_NE(engine.error().message().find("'megatorn'"), std::string::npos)
      << engine.error().message();
}

TEST(FrameworkLoader, ReadsTheBf16GradientBufferWhereItDiffers) {
  // data/frameworks/megatron-deepspeed.toml: 2-byte gradients, 4 in bf16 (BF16_Optimizer);
  // torchtitan's FSDP states none, its fp32 gradients serving both. A buffer of no bytes is
  // refused.
  const Catalog& c = shipped_catalog();
  const Framework& ds = *c.software("megatron-deepspeed")->framework;
  EXPECT_EQ(ds.gradient_bytes, 2.0);
  EXPECT_EQ(ds.gradient_bytes_bf16, 4.0);
  EXPECT_FALSE(c.software("torchtitan")->framework->gradient_bytes_bf16.has_value());
  Result<Framework> zero = detail::load_framework(fixture("framework-bad-bf16-gradients.toml"));
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().message(),
            fixture("framework-bad-bf16-gradients.toml:7:23: key 'gradient_bytes_bf16' = 0 is "
                    "out of range; expected 1 to 8"));
}

TEST(FrameworkLoader, ReadsZeroStagesByNumber) {
  // data/frameworks/megatron-lm.toml: zero_since = { 1 = 2022, 2 = 2025, 3 = 2025 };
  // llm-foundry.toml leaves stage 1 out (never); nemo.toml gives no table (any stage).
  const Catalog& c = shipped_catalog();
  const std::array<int64_t, 3> megatron{2022, 2025, 2025};
  EXPECT_EQ(c.software("megatron-lm")->framework->zero_since, megatron);
  const std::array<int64_t, 3> foundry{0, 2023, 2023};
  EXPECT_EQ(c.software("llm-foundry")->framework->zero_since, foundry);
  EXPECT_FALSE(c.software("nemo")->framework->zero_since.has_value());
  EXPECT_TRUE(c.software("nemo@2021")->zero_stage(3));
  // A stage ZeRO does not have is an error naming the file, the line and the key.
  Result<Framework> four = detail::load_framework(fixture("framework-bad-zero-stage.toml"));
  ASSERT_FALSE(four.has_value());
  EXPECT_EQ(four.error().message(), fixture("framework-bad-zero-stage.toml:9:26: unknown key "
                                            "'zero_since.4'; did you mean '1'?"));
}

TEST(FrameworkLoader, RequiresAKnownWayOfAccumulatingGradients) {
  // Every framework says how its micro-batches' gradients are added up (docs/FORMULAS.md,
  // gradient accumulation): a missing key and a misspelt one are errors naming file, line, key.
  Result<Framework> none = detail::load_framework(fixture("framework-no-accumulation.toml"));
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().message(),
            fixture("framework-no-accumulation.toml:1:1: missing key 'grad_accumulation'; every "
                    "entry must give it"));
  Result<Framework> typo = detail::load_framework(fixture("framework-bad-accumulation.toml"));
  ASSERT_FALSE(typo.has_value());
  EXPECT_EQ(typo.error().message(),
            fixture("framework-bad-accumulation.toml:9:26: unknown gradient accumulation "
                    "'fp32copy'; did you mean 'fp32-copy'?"));
}

TEST(Software, ReadsIdAndYearAndAppliesTheDefaultsOfThatYear) {
  // data/frameworks/megatron-lm.toml: fused attention and overlapped gradient reduction since
  // 2023, Hopper's own attention kernels and TP communication overlap since 2024, Blackwell's
  // since 2025.
  const Catalog& c = shipped_catalog();
  Result<Software> old = c.software("megatron-lm@2021");
  ASSERT_TRUE(old.has_value()) << old.error().message();
  EXPECT_EQ(old->year, 2021);
  EXPECT_FALSE(old->fused_attention());
  EXPECT_FALSE(old->overlap_grad_reduce());
  Result<Software> mid = c.software("megatron-lm@2023");
  EXPECT_TRUE(mid->fused_attention() && mid->overlap_grad_reduce());
  EXPECT_FALSE(mid->native_attention("hopper") || mid->tp_comm_overlap());
  Result<Software> today = c.software("megatron-lm");
  EXPECT_EQ(today->year, kCurrentYear);
  EXPECT_TRUE(today->native_attention("hopper") && today->tp_comm_overlap());
  EXPECT_FALSE(c.software("megatron-lm@2024")->native_attention("blackwell"));
  EXPECT_TRUE(c.software("megatron-lm@2025")->native_attention("blackwell"));
  EXPECT_FALSE(today->native_attention("ampere"));
  // Megatron-DeepSpeed's FlashAttention is an opt-in flag: never its default.
  EXPECT_FALSE(c.software("megatron-deepspeed")->fused_attention());
  EXPECT_EQ(c.software("megatron-lm@21").error().message(),
            "'21' is not a year from 2015 to 2026; write the framework as ID or ID@YEAR, e.g. "
            "'megatron-lm@2022'");
  // As publications write them.
  EXPECT_EQ(c.software("Megatron-LM@2023")->framework->id, "megatron-lm");
  EXPECT_EQ(c.software("LLM Foundry")->framework->id, "llm-foundry");
  EXPECT_EQ(c.software("megatorn-lm").error().message(),
            "unknown framework 'megatorn-lm'; did you mean 'megatron-lm'? (gpuplan catalog list "
            "frameworks)");
}

TEST(OfferLoader, RejectsAPriceWithoutCurrencyAndPeriod) {
  Result<Offer> o = detail::load_offer(fixture("bad-price.toml"));
  ASSERT_FALSE(o.has_value());
  EXPECT_EQ(o.error().message(),
            fixture("bad-price.toml:9:9: key 'price': '55 dollars' is not a price per h; write a "
                    "currency code and the unit, e.g. '55.04 USD/h'"));
}

TEST(Catalog, TheReadmeCountsWhatTheCatalogShips) {
  // README.md's first paragraph names the size of the catalog a new user gets ("a catalog of 18
  // GPUs, 18 interconnects, ..."); each count is read back here and compared with the catalog
  // data/ loads, so adding a GPU or an engine without the README fails this test.
  std::ifstream in(std::string(GPUPLAN_DATA_DIR) + "/../README.md");
  ASSERT_TRUE(in) << "README.md next to data/";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(text.begin(), text.end(), '\n', ' ');
  const std::regex sentence(
      "a catalog of (\\d+) GPUs, (\\d+) interconnects, (\\d+) models, (\\d+) training "
      "frameworks, (\\d+) serving engines, (\\d+) request-length data sets and (\\d+) offers");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, sentence)) << "the README's catalog sentence";
  const Catalog& c = shipped_catalog();
  EXPECT_EQ(std::stoul(m[1]), c.gpus().size()) << "GPUs";
  EXPECT_EQ(std::stoul(m[2]), c.fabrics().size()) << "interconnects";
  EXPECT_EQ(std::stoul(m[3]), c.models().size()) << "models";
  EXPECT_EQ(std::stoul(m[4]), c.frameworks().size()) << "training frameworks";
  EXPECT_EQ(std::stoul(m[5]), c.engines().size()) << "serving engines";
  EXPECT_EQ(std::stoul(m[6]), c.datasets().size()) << "data sets";
  EXPECT_EQ(std::stoul(m[7]), c.offers().size()) << "offers";
}

}  // namespace
}  // namespace gpuplan
