#include "gpuplan/engine.h"

#include <gtest/gtest.h>

#include "gpuplan/catalog.h"
#include "gpuplan/inference.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

const EngineProfile& engine(const char* id) {
  return **shipped_catalog().engine(id);
}

EngineSettings on(const char* engine_id, const char* gpu_id) {
  const Catalog& c = shipped_catalog();
  return engine_settings(engine(engine_id), **c.gpu(gpu_id), c.inference_params(),
                         c.memory_params());
}

TEST(EngineTest, TheCatalogDefaultsAreTheDefaultEnginesAndItsHostTimeIsFitted) {
  // params/inference.toml names tensorrt-llm; its 2,048 sequences and 8,192 tokens
  // (data/engines/tensorrt-llm.toml) are what serve uses without --engine.
  const Catalog& c = shipped_catalog();
  EXPECT_EQ(c.default_engine().id, "tensorrt-llm");
  EXPECT_EQ(c.inference_params().engine, "tensorrt-llm");
  EXPECT_EQ(c.inference_params().max_batch, 2048);
  EXPECT_EQ(c.memory_params().inference_chunk_tokens, 8192);
  EXPECT_FALSE(c.inference_params().kv_of_total);
  EXPECT_TRUE(on("tensorrt-llm", "h100-sxm").host_time_fitted);
  EXPECT_EQ(on("tensorrt-llm", "h100-sxm").kv_policy, KvPolicy::kReserve);
  // No vLLM or SGLang run was fitted: the shared host time stands in, and serve says so.
  EXPECT_FALSE(on("vllm", "h100-sxm").host_time_fitted);
  EXPECT_EQ(on("vllm", "h100-sxm").inference.iteration_overhead.si(),
            c.inference_params().iteration_overhead.si());
}

TEST(EngineTest, OnlyVllmAddsHostTimePerSequence) {
  // data/engines/vllm.toml: 5.5 ms between two decode steps at 256 sequences (vLLM issue
  // #10634) = 21 us per sequence sampling a token. TensorRT-LLM's per-request work is inside
  // its fitted host time; SGLang overlaps it with the forward pass; TGI and LMDeploy publish no
  // measurement of it.
  EXPECT_NEAR(engine("vllm").sequence_overhead.si(), 21e-6, 1e-12);
  EXPECT_NEAR(on("vllm", "h100-sxm").inference.sequence_overhead.si(), 21e-6, 1e-12);
  for (const char* id : {"tensorrt-llm", "sglang", "tgi", "lmdeploy"}) {
    EXPECT_EQ(on(id, "h100-sxm").inference.sequence_overhead.si(), 0.0) << id;
  }
  EXPECT_EQ(shipped_catalog().inference_params().sequence_overhead.si(), 0.0);
}

TEST(EngineTest, VllmWaitsForItsHostWorkFromRelease08UntilRelease014) {
  // data/engines/vllm.toml: V1, whose gap was measured, is the default engine from 0.8 (its
  // v0.8.0 release notes), async scheduling from 0.14 (v0.14.0). A row's "vLLM 0.10.0" waits
  // for the host; 0.6.5 (V0, which overlapped its output processing), 0.14.0, 0.15 and the
  // current release (no version) do that work while the GPU computes; TensorRT-LLM's profile
  // has no such work and names no releases.
  const Catalog& c = shipped_catalog();
  const auto overlapped = [&](const char* id, std::string_view version) {
    return engine_settings(engine(id), **c.gpu("h100-sxm"), c.inference_params(), c.memory_params(),
                           version)
        .inference.sequence_overhead_overlapped;
  };
  EXPECT_FALSE(overlapped("vllm", "0.8.0"));
  EXPECT_FALSE(overlapped("vllm", "0.10.0"));
  EXPECT_FALSE(overlapped("vllm", "0.13.9"));
  EXPECT_TRUE(overlapped("vllm", "0.6.5"));
  EXPECT_TRUE(overlapped("vllm", "0.14.0"));
  EXPECT_TRUE(overlapped("vllm", "0.15"));
  EXPECT_TRUE(overlapped("vllm", ""));
  EXPECT_TRUE(engine("tensorrt-llm").host_waits(""));
  EXPECT_FALSE(overlapped("tensorrt-llm", "0.17"));
}

TEST(EngineTest, APublishedEngineNameGivesTheReleaseAfterItsAlias) {
  EXPECT_EQ(engine("vllm").published_version("vLLM 0.10.0"), "0.10.0");
  EXPECT_EQ(engine("vllm").published_version("vLLM 0.6.5 (AMD MLPerf harness, v5.1; V0 engine)"),
            "0.6.5");
  EXPECT_EQ(engine("tensorrt-llm").published_version("TensorRT-LLM 0.17 + Triton"), "0.17");
  // No release after the alias, or none that is dotted numbers.
  EXPECT_EQ(engine("tensorrt-llm").published_version("TensorRT-LLM (NVIDIA MLPerf harness)"), "");
  EXPECT_EQ(engine("vllm").published_version("vLLM"), "");
  EXPECT_EQ(engine("vllm").published_version("vLLM v1"), "");
}

TEST(EngineTest, AJobNamesAnEngineAndOptionallyItsRelease) {
  // "ID" is the current release, "ID@RELEASE" an older one's behaviour (as frameworks take
  // "ID@YEAR"); a release that is not dotted numbers, or an unknown id, is refused with a hint.
  const Catalog& c = shipped_catalog();
  const Result<EngineChoice> current = c.engine_choice("vllm");
  ASSERT_TRUE(current) << current.error().message();
  EXPECT_EQ(current->profile->id, "vllm");
  EXPECT_EQ(current->release, "");
  // No engine named: the catalog's default one (params/inference.toml), at its current release.
  const Result<EngineChoice> unnamed = c.engine_choice("");
  ASSERT_TRUE(unnamed) << unnamed.error().message();
  EXPECT_EQ(unnamed->profile, &c.default_engine());
  EXPECT_EQ(unnamed->release, "");
  const Result<EngineChoice> old = c.engine_choice("vllm@0.10.0");
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_EQ(old->profile->id, "vllm");
  EXPECT_EQ(old->release, "0.10.0");
  const Result<EngineChoice> tag = c.engine_choice("vllm@v0.10.0");
  ASSERT_FALSE(tag);
  EXPECT_EQ(tag.error().what, "'v0.10.0' is not a release number");
  EXPECT_EQ(tag.error().hint, "write the engine as ID or ID@RELEASE, e.g. 'vllm@0.10.0'");
  const Result<EngineChoice> typo = c.engine_choice("vlm@0.10.0");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().what, "unknown engine 'vlm'");
  EXPECT_TRUE(parse_release("0.14"));
  EXPECT_FALSE(parse_release("0.14-rc1"));
}

TEST(EngineTest, ReleasesCompareNumberByNumber) {
  // 0.10 is later than 0.9 (numbers, not text); a missing number counts as 0.
  EXPECT_TRUE(version_at_least("0.10.0", "0.9"));
  EXPECT_FALSE(version_at_least("0.9.2", "0.14"));
  EXPECT_TRUE(version_at_least("0.14", "0.14.0"));
  EXPECT_TRUE(version_at_least("1", "0.14"));
  for (const char* bad : {"", ".", "0..1", "1.", ".1", "0.1a", "v0.14"}) {
    EXPECT_FALSE(version_at_least(bad, "0")) << bad;
  }
}

TEST(EngineTest, EachEngineGivesItsServingBenchmarksLengthOrNone) {
  // TensorRT-LLM's serving tables were measured with 500 requests per load (perf-overview.md);
  // vLLM's benchmark_serving.py, SGLang's bench_serving.py and LMDeploy's profile_restful_api.py
  // send 1,000 by default; TGI's own benchmark times static batches and gives no such length.
  EXPECT_EQ(engine("tensorrt-llm").benchmark_requests, 500);
  EXPECT_EQ(engine("vllm").benchmark_requests, 1000);
  EXPECT_EQ(engine("sglang").benchmark_requests, 1000);
  EXPECT_EQ(engine("lmdeploy").benchmark_requests, 1000);
  EXPECT_FALSE(engine("tgi").benchmark_requests.has_value());
}

TEST(EngineTest, OnlySGLangRunsPromptsBeforeDecodes) {
  // SGLang's scheduler runs a new prefill batch before the running batch's decode unless
  // --enable-mixed-chunk (off by default); TensorRT-LLM, vLLM and TGI (with prefill chunking,
  // its default on flashinfer) put both into one iteration, and LMDeploy's profile names no
  // scheduling, which is mixed. The profile reaches the simulators through
  // InferenceParams::prefill_first.
  EXPECT_EQ(engine("sglang").scheduling, PromptScheduling::kPrefillFirst);
  EXPECT_TRUE(on("sglang", "h100-sxm").inference.prefill_first);
  for (const char* id : {"tensorrt-llm", "vllm", "tgi", "lmdeploy"}) {
    EXPECT_EQ(engine(id).scheduling, PromptScheduling::kMixed) << id;
    EXPECT_FALSE(on(id, "h100-sxm").inference.prefill_first) << id;
  }
  EXPECT_FALSE(shipped_catalog().inference_params().prefill_first);
  EXPECT_EQ(parse_prompt_scheduling("prefill-first"), PromptScheduling::kPrefillFirst);
  const Result<PromptScheduling> bad = parse_prompt_scheduling("prefil-first");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().what, "unknown prompt scheduling 'prefil-first'");
}

TEST(EngineTest, LimitsFollowTheGpusMemoryAsEachEngineSetsThem) {
  // vLLM: 1,024 sequences and 8,192 tokens from 70 GiB (H100 SXM reports 79.6 GiB), except on
  // A100s; 256 and 2,048 below (L40S, 45 GiB).
  EXPECT_EQ(on("vllm", "h100-sxm").inference.max_batch, 1024);
  EXPECT_EQ(on("vllm", "h100-sxm").memory.inference_chunk_tokens, 8192);
  EXPECT_EQ(on("vllm", "a100-sxm-80gb").inference.max_batch, 256);
  EXPECT_EQ(on("vllm", "a100-sxm-80gb").memory.inference_chunk_tokens, 2048);
  EXPECT_EQ(on("vllm", "l40s").memory.inference_chunk_tokens, 2048);
  EXPECT_EQ(on("vllm", "l40s").kv_policy, KvPolicy::kPaged);
  EXPECT_EQ(on("vllm", "l40s").inference.kv_block_tokens, 16);
  // SGLang's prefill chunk: 2,048 below 35 GiB (L4, 22.5 GiB), 8,192 below 160 GiB (H200,
  // 140.4 GiB), 16,384 above (B200, 179.1 GiB).
  EXPECT_EQ(on("sglang", "l4").memory.inference_chunk_tokens, 2048);
  EXPECT_EQ(on("sglang", "h200-sxm").memory.inference_chunk_tokens, 8192);
  EXPECT_EQ(on("sglang", "b200").memory.inference_chunk_tokens, 16384);
  // LMDeploy goes by the card's name (lmdeploy/utils.py get_max_batch_size): 384 sequences on
  // any A100, 1,024 on H100 and H200, 128 on every other card, however much memory it has
  // (L40S 45 GiB, B200 179.1 GiB); 8,192 tokens and 64-token blocks everywhere.
  for (const auto& [gpu, batch] :
       {std::pair{"a100-sxm-40gb", 384}, std::pair{"a100-pcie-80gb", 384},
        std::pair{"h100-pcie", 1024}, std::pair{"h200-sxm", 1024}, std::pair{"l40s", 128},
        std::pair{"b200", 128}}) {
    EXPECT_EQ(on("lmdeploy", gpu).inference.max_batch, batch) << gpu;
  }
  EXPECT_EQ(on("lmdeploy", "b200").memory.inference_chunk_tokens, 8192);
  EXPECT_EQ(on("lmdeploy", "h100-sxm").inference.kv_block_tokens, 64);
  EXPECT_EQ(on("lmdeploy", "h100-sxm").kv_policy, KvPolicy::kPaged);
  // TGI sizes its prefill budget by the card where its launcher knows the card (H100 SXM),
  // else 4,096 tokens (B200).
  EXPECT_TRUE(on("tgi", "h100-sxm").inference.prefill_budget_peak_second);
  EXPECT_FALSE(on("tgi", "b200").inference.prefill_budget_peak_second);
  EXPECT_EQ(on("tgi", "b200").memory.inference_chunk_tokens, 4096);
  EXPECT_EQ(on("tgi", "b200").inference.max_batch, 128);
}

TEST(EngineTest, TgisPrefillBudgetIsASecondOfTheInstancesPeak) {
  // Llama 3.1 8B passes a token through 218.1 M matrix weights per layer (q and o 4096 x 4096,
  // k and v 4096 x 1024, gate, up and down 3 x 4096 x 14336), 6.979 G over 32 layers: 13.96
  // GFLOP. One H100 SXM's 989.5 TFLOP/s (bf16 dense) computes 70,887 such tokens a second; two
  // would compute 141,774, more than the model's 131,072-token context, which bounds it.
  const Catalog& c = shipped_catalog();
  const Model llama = *c.model("llama-3.1-8b");
  const EngineSettings tgi = on("tgi", "h100-sxm");
  Instance in;
  in.gpu = *c.gpu("h100-sxm");
  in.scale_up = *c.fabric("nvlink4");
  const InferenceModel one(llama, in, tgi.memory, c.train_params(), tgi.inference);
  in.tp = 2;
  const InferenceModel two(llama, in, tgi.memory, c.train_params(), tgi.inference);
  ASSERT_TRUE(one.feasible() && two.feasible());
  EXPECT_EQ(one.chunk_tokens(), 70887);
  EXPECT_EQ(two.chunk_tokens(), 131072);
  // The same engine where the launcher does not know the card keeps 4,096.
  const InferenceModel fixed(llama, in, tgi.memory, c.train_params(), on("tgi", "b200").inference);
  EXPECT_EQ(fixed.chunk_tokens(), 4096);
}

TEST(EngineTest, AShareOfTheWholeGpuLeavesTheKvCacheWhatWeightsAndWorkLeaveOfIt) {
  // Llama 3.1 8B on one H100 SXM. TensorRT-LLM gives the KV cache 90 % of the free memory F
  // (usable less weights, working memory and runtime); vLLM gives everything 90 % of the usable
  // memory U, so its cache is F - 10 % of U, F taken with vLLM's own working set (1,024
  // sequences' logits, not 2,048): the same settings with all of F given to the cache.
  const Catalog& c = shipped_catalog();
  const Model llama = *c.model("llama-3.1-8b");
  Instance in;
  in.gpu = *c.gpu("h100-sxm");
  in.scale_up = *c.fabric("nvlink4");
  const EngineSettings trt = on("tensorrt-llm", "h100-sxm");
  const EngineSettings vllm = on("vllm", "h100-sxm");
  const InferenceModel a(llama, in, trt.memory, c.train_params(), trt.inference);
  const InferenceModel b(llama, in, vllm.memory, c.train_params(), vllm.inference);
  ASSERT_TRUE(a.feasible() && b.feasible());
  InferenceParams all_free = vllm.inference;
  all_free.kv_of_total = false;
  all_free.kv_memory_fraction = 1.0;
  const InferenceModel f(llama, in, vllm.memory, c.train_params(), all_free);
  const double usable = b.usable_per_gpu().si();
  EXPECT_NEAR(b.kv_budget_per_gpu().si(), f.kv_budget_per_gpu().si() - 0.1 * usable, 1.0);
  EXPECT_LT(b.kv_budget_per_gpu().si(), a.kv_budget_per_gpu().si());
  // Half a block per request goes unused: 16 tokens of TensorRT-LLM's 32, 8 of vLLM's 16.
  EXPECT_EQ(a.kv_block_waste(), 16);
  EXPECT_EQ(b.kv_block_waste(), 8);
}

TEST(EngineTest, PublishedNamesPickTheirEngine) {
  // Validation rows name the engine as their source does (data/validation/inference.json).
  const Catalog& c = shipped_catalog();
  EXPECT_EQ(c.engine_named("TensorRT-LLM 0.14 + Triton")->id, "tensorrt-llm");
  EXPECT_EQ(c.engine_named("FasterTransformer")->id, "tensorrt-llm");
  EXPECT_EQ(c.engine_named("vllm 0.6.3")->id, "vllm");
  EXPECT_EQ(c.engine_named("SGLang v0.4")->id, "sglang");
  EXPECT_EQ(c.engine_named("TensorRT LLM 1.1")->id, "tensorrt-llm");  // the 2025 spelling
  EXPECT_EQ(c.engine_named("LMDeploy 0.6 (TurboMind)")->id, "lmdeploy");
  EXPECT_EQ(c.engine_named("TGI 3.0.1")->id, "tgi");
  EXPECT_EQ(c.engine_named("text-generation-inference 2.4")->id, "tgi");
  EXPECT_EQ(c.engine_named("DeepSpeed-MII"), nullptr);
  // A name may mention its engine after another word; the first engine mentioned counts, and
  // an alias inside a longer word ("vllmx") does not.
  EXPECT_EQ(c.engine_named("Triton + vLLM backend")->id, "vllm");
  EXPECT_EQ(c.engine_named("NVIDIA NIM (TensorRT-LLM 0.12)")->id, "tensorrt-llm");
  EXPECT_EQ(c.engine_named("Ray Serve with SGLang, not vLLM")->id, "sglang");
  EXPECT_EQ(c.engine_named("myvllmx 2"), nullptr);
  EXPECT_EQ(engine("tensorrt-llm").published_version("NVIDIA NIM (TensorRT-LLM 0.12)"), "0.12");
  EXPECT_FALSE(c.engine("vlm").has_value());
  EXPECT_NE(c.engine("vlm").error().hint.find("vllm"), std::string::npos);
  // A name people use for an engine suggests it, before an id merely spelled alike ("tgi").
  EXPECT_EQ(c.engine("trt").error().hint,
            "did you mean 'tensorrt-llm'? (gpuplan catalog list engines)");
  EXPECT_EQ(c.engine("TurboMind").error().hint,
            "did you mean 'lmdeploy'? (gpuplan catalog list engines)");
}

}  // namespace
}  // namespace gpuplan
