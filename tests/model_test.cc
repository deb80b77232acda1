#include "gpuplan/model.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "gpuplan/catalog.h"
#include "gpuplan/model_loader.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

class ModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { catalog_ = &shipped_catalog(); }
  static Model model(const char* id) {
    Result<Model> m = catalog_->model(id);
    EXPECT_TRUE(m.has_value()) << id;
    return *m;
  }
  static const Catalog* catalog_;
};
const Catalog* ModelTest::catalog_ = nullptr;

TEST_F(ModelTest, BuiltInModelsMatchPublishedTotals) {
  // Totals as the publishers' Hugging Face model cards and safetensors indexes print them.
  const std::pair<const char*, int64_t> cases[] = {
      {"llama-3.1-8b", 8'030'261'248},
      {"llama-3.1-70b", 70'553'706'496},
      {"llama-3.1-405b", 405'853'388'800},
      {"mistral-7b", 7'241'732'096},
      {"mixtral-8x7b", 46'702'792'704},
      {"llama-2-7b", 6'738'415'616},
      {"llama-2-13b", 13'015'864'320},
      {"llama-2-70b", 68'976'648'192},
      {"bloom-176b", 176'247'271'424},
      {"qwen2.5-7b", 7'615'616'512},
      // Phi-4: 40 x 340,797,440 + 2 x 100352 x 5120 + 5120 (ReadsPhi3GemmaAndGraniteAsLlamas).
      {"phi-4", 14'659'507'200},
      // Nemotron-4 340B: the report's 9.4 B embedding and 331.6 B other parameters
      // (ReadsStarcoder2AndNemotronPlainMlps), and its two final LayerNorm1P vectors.
      {"nemotron-4-340b", 341'029'195'776},
  };
  for (const auto& [id, total] : cases) {
    EXPECT_EQ(count_parameters(model(id)).total, total) << id;
  }
}

TEST_F(ModelTest, CountsLlama8bPieceByPiece) {
  // h 4096, 32 layers, 32 heads of 128, 8 KV heads, MLP 14336, vocab 128256, untied:
  // per layer q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 + MLP 3*4096*14336 + 2 norms of 4096
  //   = 16,777,216 + 8,388,608 + 16,777,216 + 176,160,768 + 8,192 = 218,112,000;
  // embedding = lm_head = 128256*4096 = 525,336,576; final norm 4096.
  const ParameterCount c = count_parameters(model("llama-3.1-8b"));
  EXPECT_EQ(layer_parameters(model("llama-3.1-8b"), 0).total(), 218'112'000);
  EXPECT_EQ(c.embedding, 525'336'576);
  EXPECT_EQ(c.lm_head, 525'336'576);
  EXPECT_EQ(c.total, 32 * 218'112'000LL + 2 * 525'336'576LL + 4096);
}

TEST_F(ModelTest, MixtureOfExpertsCountsActiveParameters) {
  // Mixtral 8x7B: a token visits 2 of 8 experts. Each expert is 3*4096*14336 = 176,160,768;
  // the 6 unvisited experts of each of 32 layers are 32*6*176,160,768 = 33,822,867,456.
  const ParameterCount c = count_parameters(model("mixtral-8x7b"));
  EXPECT_EQ(c.active_per_token, 46'702'792'704LL - 33'822'867'456LL);
}

TEST_F(ModelTest, DeepSeekV3CountsLatentAttentionAndSharedExperts) {
  // Per layer, MLA: q_a 7168*1536 + q_b 1536*128*192 + kv_a 7168*576 + kv_b 512*128*256
  //   + o 16384*7168 + latent norms 1536 + 512 = 187,107,328; 2 layer norms 14,336.
  // Dense MLP (first 3 layers): 3*7168*18432 = 396,361,728.
  // MoE layer (58): 257 experts of 3*7168*2048 = 44,040,192 each, router 256*7168 and a
  //   256-entry bias: 11,318,329,344 + 1,835,008 + 256.
  // Embedding and untied head 2*129280*7168; final norm 7168.
  // 3 * (187,107,328 + 14,336 + 396,361,728) + 58 * (187,107,328 + 14,336 + 11,320,164,608)
  //   + 1,853,358,080 + 7,168 = 671,026,419,200: the published 671 B (MTP module not counted).
  const ParameterCount c = count_parameters(model("deepseek-v3"));
  EXPECT_EQ(c.total, 671'026'419'200LL);
  // Active: the same with 8 routed experts instead of 256 per MoE layer: 37.55 B (published 37 B).
  EXPECT_EQ(c.active_per_token, 671'026'419'200LL - 58LL * 248 * 44'040'192);
}

TEST_F(ModelTest, GptJCountsItsParallelBlockAndBiasedHead) {
  // data/models/gpt-j-6b.json, per layer: one LayerNorm 2*4096; q, k, v and out 4*4096^2 without
  // biases; fc_in 4096*16384 + 16384 and fc_out 16384*4096 + 4096: 201,355,264. Embedding
  // 50400*4096, final LayerNorm 8192, untied head 4096*50400 + its 50,400 biases:
  // 28 * 201,355,264 + 206,438,400 + 8,192 + 206,488,800 = 6,050,882,784 (the model card says
  // 6,053,381,344, 0.04 % more).
  const ParameterCount c = count_parameters(model("gpt-j-6b"));
  EXPECT_EQ(c.total, 6'050'882'784LL);
  EXPECT_EQ(c.active_per_token, c.total);
}

TEST_F(ModelTest, QwenMoeCountsSharedExpertsGatesAndQkNorms) {
  // Qwen3-30B-A3B (h 2048, 48 layers, 32 heads and 4 KV heads of 128, 128 experts of 768, 8 per
  // token, vocab 151936, untied): per layer q 2048 x 4096 + k, v 2 x 2048 x 512 + o 4096 x 2048 =
  // 18,874,368; experts 128 x 3 x 2048 x 768 = 603,979,776; router 2048 x 128 = 262,144; norms
  // 2 x 2048 + q_norm and k_norm 2 x 128 = 4,352. Layers 48 x 623,120,640 = 29,909,790,720,
  // plus embedding and head 2 x 151936 x 2048 and the final norm: 30,532,122,624 (published
  // "30.5 B"). Active: 8 of the 128 experts.
  const ParameterCount q3 = count_parameters(model("qwen3-30b-a3b"));
  EXPECT_EQ(q3.total, 30'532'122'624);
  const int64_t active_layer = 18'874'368 + 8 * 3 * 2048 * 768 + 262'144 + 4'352;
  EXPECT_EQ(q3.active_per_token, 48 * active_layer + 2 * 151936 * 2048 + 2048);
  // Qwen2-57B-A14B adds one shared expert of 20480 with a 3584-wide sigmoid gate, and biases Q,
  // K and V: published 57.4 B total.
  const ParameterCount q2 = count_parameters(model("qwen2-57b-a14b"));
  EXPECT_NEAR(static_cast<double>(q2.total), 57.4e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(q2.active_per_token), 14.2e9, 0.1e9);
}

TEST(ModelLoader, ReadsDeepSeekV2LiteWithQueriesProjectedDirectly) {
  // DeepSeek-V2-Lite's config.json (q_lora_rank null: no query compression). h 2048, 16 heads.
  // Attention: q 2048 x 16 x 192 = 6,291,456; kv_a 2048 x (512 + 64) = 1,179,648; its norm 512;
  //   kv_b 512 x 16 x (128 + 128) = 2,097,152; o 16 x 128 x 2048 = 4,194,304: 13,763,072, plus
  //   2 layer norms of 2048.
  // Layer 0 dense: 3 x 2048 x 10944 = 67,239,936. Layers 1-26: 64 routed and 2 shared experts of
  //   3 x 2048 x 1408 = 8,650,752, a 64 x 2048 router and no router bias (greedy routing).
  // Embedding and untied head 2 x 102400 x 2048; final norm 2048:
  //   81,007,104 + 26 x 584,847,872 + 419,430,400 + 2048 = 15,706,484,224 (published: 15.7 B).
  const char* json = R"({"model_type": "deepseek_v2", "hidden_size": 2048,
    "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 10944, "vocab_size": 102400, "q_lora_rank": null, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64,
    "n_shared_experts": 2, "num_experts_per_tok": 6, "moe_intermediate_size": 1408,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "topk_method": "greedy",
    "tie_word_embeddings": false})";
  Result<Model> m = parse_model_config(json, "lite.json", "deepseek-v2-lite");
  ASSERT_TRUE(m.has_value()) << m.error().message();
  const ParameterCount c = count_parameters(*m);
  EXPECT_EQ(c.total, 15'706'484'224);
  // Active: 6 of the 64 routed experts per MoE layer.
  EXPECT_EQ(c.active_per_token, 15'706'484'224 - 26LL * 58 * 8'650'752);
  EXPECT_EQ(m->kv_heads, 16);  // latent attention caches one latent per token, not per head
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token(*m, 2.0), 27.0 * (512 + 64) * 2);

  // MoE on every other layer is refused, as for Qwen's decoder_sparse_step.
  std::string every_second = json;
  every_second.replace(every_second.find("\"moe_layer_freq\": 1"), 19, "\"moe_layer_freq\": 2");
  Result<Model> refused = parse_model_config(every_second, "lite.json", "x");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message(),
            "lite.json:6: MoE every 2 layers is not supported; gpuplan models MoE in every layer "
            "after an optional dense prefix");
}

TEST_F(ModelTest, KimiK2AndGlm45AirCountAsTheirPublishersCountThem) {
  // Kimi K2 is DeepSeek-V3's architecture under model_type kimi_k2 (Moonshot's deployment
  // guide), with 64 heads, 384 routed experts and one dense layer: published "1 T total,
  // 32 B activated". Per layer MLA q_a 7168 x 1536 + q_b 1536 x 64 x 192 + kv_a 7168 x 576 +
  // kv_b 512 x 64 x 256 + o 8192 x 7168 + latent norms = 101,124,096, 2 layer norms 14,336;
  // dense MLP 396,361,728;
  // MoE layer 385 experts of 44,040,192 + router 384 x 7168 + bias 384; embeddings
  // 2 x 163840 x 7168; final norm: 1,026,408,232,448.
  const Model k2 = model("kimi-k2");
  EXPECT_EQ(count_parameters(k2).total, 1'026'408'232'448);
  EXPECT_NEAR(static_cast<double>(count_parameters(k2).active_per_token), 32.9e9, 0.05e9);

  // GLM-4.5-Air: grouped-query attention (96 heads of 128, 8 KV heads) whose attention_bias
  // biases Q, K and V, DeepSeek-style experts (128 routed of 1408, one shared, the first layer
  // dense) and a router bias. Per layer q 4096 x 12288 + k, v 2 x 4096 x 1024 + o 12288 x 4096
  // + biases 12288 + 2048 + norms 8192 = 109,074,432; dense MLP 3 x 4096 x 10944; MoE layer 129
  // experts of 17,301,504 + router 128 x 4096 + bias 128; embeddings 2 x 151552 x 4096:
  // 106,852,251,264 — published "106 B total, 12 B active" (the active figure without the
  // 1.24 B of embeddings). The MTP layer is not counted, as for DeepSeek-V3.
  const Model glm = model("glm-4.5-air");
  const ParameterCount c = count_parameters(glm);
  EXPECT_EQ(c.total, 106'852'251'264);
  EXPECT_NEAR(static_cast<double>(c.active_per_token - 2 * 151552 * 4096), 12.2e9, 0.05e9);
  EXPECT_EQ(glm.extra_prediction_layers, 1);
  EXPECT_EQ(kv_cache_bytes_per_token(glm, 2.0), 2.0 * 46 * 8 * 128 * 2);
}

TEST(SlidingWindow, HeldContextAndAttendedKeysInClosedForm) {
  // 4 layers, 2 of them over the last 8 tokens.
  Model m;
  m.layers = 4;
  m.window = {.tokens = 8, .layers = 2};
  // Within the window every layer holds everything; past it the windowed half holds 8:
  // (2 x 20 + 2 x 8) / 4 = 14.
  EXPECT_DOUBLE_EQ(held_context(m, 5), 5.0);
  EXPECT_DOUBLE_EQ(held_context(m, 20), 14.0);
  // Its inverse: 14 tokens of every layer hold a context of 20; 5 hold 5.
  EXPECT_EQ(context_held_in(m, 14.0), 20);
  EXPECT_EQ(context_held_in(m, 5.0), 5);
  // 6 queries after 4 positions (5 ... 10): full layers 6 x 4 + 21 = 45 pairs; windowed ones
  // 5 + 6 + 7 + 8 + 8 + 8 = 42; the average over layers (2 x 45 + 2 x 42) / 4 = 43.5.
  EXPECT_DOUBLE_EQ(attended_keys(m, 4, 6), 43.5);
  // Queries all past the window: 3 after 20 see 8 each in windowed layers (24); full layers
  // 3 x 20 + 6 = 66; (2 x 66 + 2 x 24) / 4 = 45.
  EXPECT_DOUBLE_EQ(attended_keys(m, 20, 3), 45.0);
  // A whole sequence of 16: full 136 pairs, windowed 36 + 8 x 8 = 100: share (136 + 100) / 272.
  EXPECT_DOUBLE_EQ(attended_share(m, 16), (136.0 + 100.0) / 272.0);
  // Every layer windowed: the cache stops at the window, whatever the context it serves.
  m.window.layers = 4;
  EXPECT_DOUBLE_EQ(held_context(m, 1000), 8.0);
  EXPECT_EQ(context_held_in(m, 8.0), 8);
  EXPECT_EQ(context_held_in(m, 9.0), std::numeric_limits<int64_t>::max());
  // No window: the plain causal count.
  m.window = {};
  EXPECT_DOUBLE_EQ(attended_keys(m, 4, 6), 45.0);
  EXPECT_DOUBLE_EQ(attended_share(m, 16), 1.0);
}

TEST(ModelLoader, ReadsEachFamilysSlidingWindow) {
  const std::string llama = R"("hidden_size": 256, "num_hidden_layers": 6,
    "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000,
    "max_position_embeddings": 32768)";
  auto read = [&](const std::string& type, const std::string& extra) {
    Result<Model> m = parse_model_config(
        "{\"model_type\": \"" + type + "\", " + llama + extra + "}", "cfg.json", "x");
    EXPECT_TRUE(m.has_value()) << type << extra << ": " << m.error().message();
    return m.has_value() ? m->window : SlidingWindow{};
  };
  // Mistral 7B v0.1: every layer; v0.2 on: null, none.
  EXPECT_EQ(read("mistral", R"(, "sliding_window": 4096)").layers, 6);
  EXPECT_EQ(read("mistral", R"(, "sliding_window": null)").layers, 0);
  // Gemma 2: layers 0, 2, 4 of 6.
  const SlidingWindow gemma = read("gemma2", R"(, "sliding_window": 4096)");
  EXPECT_EQ(gemma.layers, 3);
  EXPECT_EQ(gemma.tokens, 4096);
  // Qwen: only with use_sliding_window, from max_window_layers on (4 and 5 of 6).
  EXPECT_EQ(read("qwen2", R"(, "sliding_window": 4096, "use_sliding_window": false)").layers, 0);
  EXPECT_EQ(read("qwen2", R"(, "sliding_window": 4096, "use_sliding_window": true,
                              "max_window_layers": 4)")
                .layers,
            2);
  // A window as long as the context is no window (Qwen2.5's 131072 over 32768).
  EXPECT_EQ(read("mistral", R"(, "sliding_window": 32768)").layers, 0);
  // layer_types wins over the family's rule.
  EXPECT_EQ(read("gemma2", R"(, "sliding_window": 512, "layer_types": ["sliding_attention",
      "full_attention", "full_attention", "full_attention", "full_attention",
      "sliding_attention"])")
                .layers,
            2);
  Result<Model> bad = parse_model_config(
      "{\"model_type\": \"llama\", " + llama +
          R"(, "sliding_window": 64, "layer_types": ["sliding_attention", "chunked_attention"]})",
      "cfg.json", "x");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().what, "key 'layer_types' must list the 6 layers");
}

TEST_F(ModelTest, GptOssCountsItsBiasesSinksAndWindow) {
  // gpt-oss-20b (data/models/gpt-oss-20b.json, its config.json): h 2880, 24 layers, 64 heads of 64
  // and 8 KV heads, 32 experts of 2880 (4 per token), vocab 201088, untied, layers alternating a
  // 128-token window and full attention. Per layer: q 2880 x 4096 + k, v 2 x 2880 x 512 + o 4096 x
  // 2880 = 26,542,080, biases 4096 + 1024 + 2880, 64 sinks; experts 32 x (3 x 2880 x 2880 + 2 x
  // 2880 + 2880) = 796,538,880; router 2880 x 32 + 32; 2 norms of 2880: 823,186,976 in all. 24
  // layers + embeddings 2 x 201088 x 2880 + final norm 2880 = 20,914,757,184: the 20.91 B of
  // OpenAI's model card (116.83 B for gpt-oss-120b's 36 layers of 128 experts).
  const Model m = model("gpt-oss-20b");
  EXPECT_EQ(layer_parameters(m, 0).total(), 823'186'976);
  const ParameterCount c = count_parameters(m);
  EXPECT_EQ(c.total, 20'914'757'184);
  // Active without the input embedding: OpenAI's 3.61 B.
  EXPECT_NEAR(static_cast<double>(c.active_per_token - 201088 * 2880), 3.61e9, 0.01e9);
  EXPECT_EQ(m.window.tokens, 128);
  EXPECT_EQ(m.window.layers, 12);
  // gpt-oss-120b: 36 such layers of 128 experts.
  EXPECT_EQ(count_parameters(model("gpt-oss-120b")).total, 116'829'156'672);
}

// quantization_config: the format the checkpoint is published in. gpt-oss's config
// (huggingface.co/openai/gpt-oss-120b) names MXFP4 and keeps attention, router, embeddings and
// head out of it; MXFP4 is 32 E2M1 values of 4 bits and one E8M0 scale byte, 0.5 + 1/32 bytes a
// weight (OCP Microscaling Formats v1.0, sec. 5). DeepSeek-V3's names fp8 with a float32 scale
// per 128 x 128 block: 1 + 4 / 16,384 bytes.
TEST_F(ModelTest, ReadsTheFormatTheCheckpointIsPublishedIn) {
  const Model oss = model("gpt-oss-120b");
  ASSERT_TRUE(oss.released.has_value());
  EXPECT_TRUE(oss.released->understood);
  EXPECT_EQ(oss.released->method, "mxfp4");
  EXPECT_EQ(oss.released->precision, Precision::kFp4);
  EXPECT_DOUBLE_EQ(oss.released->bytes, 0.53125);
  EXPECT_TRUE(oss.released->experts_only);

  const Model ds = model("deepseek-v3");
  ASSERT_TRUE(ds.released.has_value());
  EXPECT_EQ(ds.released->precision, Precision::kFp8);
  EXPECT_DOUBLE_EQ(ds.released->bytes, 1.0 + 4.0 / 16384.0);
  EXPECT_FALSE(ds.released->experts_only);

  EXPECT_FALSE(model("llama-3.1-8b").released.has_value());

  // The integer and compressed-tensors forms, on a small GPT-2 config.
  const std::string head =
      "{\n  \"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4,\n"
      "  \"vocab_size\": 100, \"n_positions\": 64,\n  \"quantization_config\": ";
  auto released = [&](const std::string& config) {
    Result<Model> r = parse_model_config(head + config + "\n}", "cfg.json", "x");
    EXPECT_TRUE(r.has_value()) << config;
    return r && r->released ? *r->released : ReleasedWeights{};
  };
  // AWQ and GPTQ, 4 bits: a 16-bit scale and a 4-bit zero per group of 128 weights.
  ReleasedWeights awq = released(R"({"quant_method": "awq", "bits": 4, "group_size": 128})");
  EXPECT_TRUE(awq.understood);
  EXPECT_EQ(awq.precision, Precision::kInt4);
  EXPECT_DOUBLE_EQ(awq.bytes, 0.5 + 2.5 / 128);
  // GPTQ per channel (group_size -1): one scale a row, counted as none; 8 bits is int8.
  ReleasedWeights gptq = released(R"({"quant_method": "gptq", "bits": 8, "group_size": -1})");
  EXPECT_EQ(gptq.precision, Precision::kInt8);
  EXPECT_DOUBLE_EQ(gptq.bytes, 1.0);
  // llm-compressor's fp8 (per channel) and NVFP4 (groups of 16, E4M3 scales).
  ReleasedWeights fp8 = released(
      R"({"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {)"
      R"("group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}})");
  EXPECT_TRUE(fp8.understood);
  EXPECT_EQ(fp8.precision, Precision::kFp8);
  EXPECT_DOUBLE_EQ(fp8.bytes, 1.0);
  ReleasedWeights nvfp4 = released(
      R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": )"
      R"({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}})");
  EXPECT_EQ(nvfp4.precision, Precision::kFp4);
  EXPECT_DOUBLE_EQ(nvfp4.bytes, 0.5625);
  // NVIDIA Model Optimizer's NVFP4 checkpoints (nvidia/*-FP4): E2M1 values with an E4M3 scale
  // per 16, and the fp8 KV cache their kv_cache_quant_algo names.
  ReleasedWeights modelopt = released(
      R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", )"
      R"("group_size": 16, "ignore": ["lm_head"]})");
  EXPECT_TRUE(modelopt.understood);
  EXPECT_EQ(modelopt.precision, Precision::kFp4);
  EXPECT_DOUBLE_EQ(modelopt.bytes, 0.5625);
  ASSERT_TRUE(modelopt.kv.has_value());
  EXPECT_EQ(*modelopt.kv, Precision::kFp8);
  // Kept out of a dense model, attention is a split gpuplan does not count: not understood,
  // as a method it does not read (bitsandbytes) or 3-bit integers are.
  EXPECT_FALSE(
      released(R"({"quant_method": "mxfp4", "modules_to_not_convert": ["self_attn"]})").understood);
  EXPECT_FALSE(released(R"({"quant_method": "bitsandbytes", "load_in_4bit": true})").understood);
  EXPECT_FALSE(released(R"({"quant_method": "gptq", "bits": 3, "group_size": 128})").understood);
  EXPECT_EQ(released(R"({"quant_method": "bitsandbytes"})").method, "bitsandbytes");
  // A malformed block is an error naming the key's line.
  Result<Model> block = parse_model_config(
      head + "{\"quant_method\": \"fp8\", \"weight_block_size\": [128]}\n}", "cfg.json", "x");
  ASSERT_FALSE(block.has_value());
  EXPECT_EQ(block.error().message(),
            "cfg.json:4: quantization_config.weight_block_size must be two positive integers; "
            "found [128]; DeepSeek-V3 gives [128, 128]");
  Result<Model> text = parse_model_config(head + "\"fp8\"\n}", "cfg.json", "x");
  ASSERT_FALSE(text.has_value());
  EXPECT_EQ(text.error().message(),
            "cfg.json:4: key 'quantization_config' must be an object; found \"fp8\"");
  Result<Model> method = parse_model_config(head + "{\"bits\": 4}\n}", "cfg.json", "x");
  ASSERT_FALSE(method.has_value());
  EXPECT_EQ(method.error().where, "cfg.json:4");
}

TEST(ModelLoader, ReadsGemma3TextWithItsLocalLayers) {
  // Gemma 3 1B's config.json (gemma3_text): h 1152, 26 layers, 4 heads of 256 and 1 KV head,
  // GeGLU of 6912, vocab 262144 tied. Per layer: q 1152 x 1024 + k, v 2 x 1152 x 256 + o 1024 x
  // 1152 = 2,949,120; MLP 3 x 1152 x 6912 = 23,887,872; 4 norms of 1152 and the q and k norms of
  // 256: 26,842,112. 26 layers + embedding 262144 x 1152 + final norm: 999,885,952, the 1 B of
  // Google's model card. Every 6th layer is global (5, 11, 17, 23): 22 of 26 slide
  // over 512 tokens.
  const char* json = R"({"model_type": "gemma3_text", "hidden_size": 1152,
    "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
    "intermediate_size": 6912, "vocab_size": 262144, "max_position_embeddings": 32768,
    "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 512,
    "sliding_window_pattern": 6})";
  Result<Model> m = parse_model_config(json, "gemma-3-1b.json", "gemma-3-1b");
  ASSERT_TRUE(m.has_value()) << m.error().message();
  EXPECT_EQ(layer_parameters(*m, 0).total(), 26'842'112);
  EXPECT_EQ(count_parameters(*m).total, 999'885'952);
  EXPECT_EQ(m->window.layers, 22);
  EXPECT_EQ(m->window.tokens, 512);
  // The multimodal checkpoints (gemma3) nest it beside a vision encoder: refused, with the way.
  Result<Model> mm =
      parse_model_config(R"({"model_type": "gemma3", "text_config": {}})", "gemma-3-27b.json", "x");
  ASSERT_FALSE(mm.has_value());
  EXPECT_NE(mm.error().hint.find("model_type 'gemma3_text'"), std::string::npos);
  // So are the others that nest a language model gpuplan reads (Mistral Small 3.1's mistral3).
  Result<Model> mistral3 = parse_model_config(
      R"({"model_type": "mistral3", "text_config": {"model_type": "mistral"}})", "m.json", "x");
  ASSERT_FALSE(mistral3.has_value());
  EXPECT_EQ(mistral3.error().message(),
            "m.json:1: model_type 'mistral3' nests a 'mistral' language model beside other "
            "encoders, which gpuplan does not model; give its text_config as a config.json of "
            "model_type 'mistral' (the other encoders' weights are then left out)");
}

// Reads `json` as a config.json, failing the test if it does not load.
Model parse_or_fail(const std::string& json, const char* id) {
  Result<Model> m = parse_model_config(json, std::string(id) + ".json", id);
  EXPECT_TRUE(m.has_value()) << id << ": " << (m.has_value() ? "" : m.error().message());
  return m.has_value() ? *m : Model{};
}

TEST(ModelLoader, ReadsPhi3GemmaAndGraniteAsLlamas) {
  // microsoft/Phi-3-mini-4k-instruct's config.json: h 3072, 32 layers of 32 heads (no grouping),
  // MLP 8192, vocab 32064, untied. Per layer: 4 x 3072^2 + 3 x 3072 x 8192 + 2 norms of 3072 =
  // 113,252,352; + embedding and head 2 x 32064 x 3072 + final norm: 3,821,079,552, the count
  // Hugging Face prints for it. Its 2047-token window covers every layer (transformers' Phi3
  // attention passes config.sliding_window).
  const Model phi3 = parse_or_fail(R"({"model_type": "phi3", "hidden_size": 3072,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "intermediate_size": 8192, "vocab_size": 32064, "max_position_embeddings": 4096,
    "sliding_window": 2047, "tie_word_embeddings": false, "resid_pdrop": 0.0})",
                                   "phi-3-mini-4k");
  EXPECT_EQ(layer_parameters(phi3, 0).total(), 113'252'352);
  EXPECT_EQ(count_parameters(phi3).total, 3'821'079'552);
  EXPECT_EQ(phi3.window.layers, 32);
  EXPECT_EQ(phi3.window.tokens, 2047);
  // microsoft/phi-4 (phi3 too): h 5120, 40 layers of 40 heads, 10 KV heads, MLP 17920, vocab
  // 100352: 40 x 340,797,440 + 2 x 513,802,240 + 5120 = 14,659,507,200, the 14.7 B of its card.
  const Model phi4 = parse_or_fail(R"({"model_type": "phi3", "hidden_size": 5120,
    "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 10,
    "intermediate_size": 17920, "vocab_size": 100352, "max_position_embeddings": 16384,
    "tie_word_embeddings": false})",
                                   "phi-4");
  EXPECT_EQ(count_parameters(phi4).total, 14'659'507'200);
  EXPECT_FALSE(phi4.has_window());
  // google/gemma-7b (gemma): heads of 256 by default, 2 norms a layer (Gemma 2's 4 came later),
  // the head tied by default. h 3072, 28 layers, 16 heads: q, k, v, o 4 x 3072 x 4096 +
  // GeGLU 3 x 3072 x 24576 + 2 x 3072 = 276,830,208; 28 layers + 256000 x 3072 + 3072 =
  // 8,537,680,896, the 8.54 B Google publishes.
  const Model gemma = parse_or_fail(R"({"model_type": "gemma", "hidden_size": 3072,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 24576, "vocab_size": 256000, "hidden_act": "gelu"})",
                                    "gemma-7b");
  EXPECT_EQ(gemma.head_dim, 256);
  EXPECT_EQ(layer_parameters(gemma, 0).total(), 276'830'208);
  EXPECT_EQ(count_parameters(gemma).total, 8'537'680'896);
  // ibm-granite/granite-3.0-8b-base (granite; its multipliers scale activations, not weights):
  // h 4096, 40 layers, 32 heads, 8 KV heads, MLP 12800, vocab 49155, tied: 40 x 199,237,632 +
  // 49155 x 4096 + 4096 = 8,170,848,256, the 8.17 B of its card.
  const Model granite = parse_or_fail(R"({"model_type": "granite", "hidden_size": 4096,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 12800, "vocab_size": 49155, "tie_word_embeddings": true,
    "embedding_multiplier": 12.0, "residual_multiplier": 0.22})",
                                      "granite-3.0-8b");
  EXPECT_EQ(count_parameters(granite).total, 8'170'848'256);
}

TEST(ModelLoader, ReadsOlmo2AndCohereNormsAsPublished) {
  // allenai/OLMo-2-1124-7B (olmo2): RMSNorm after attention and after the MLP (2 a layer), and
  // over the whole query and key projections, 4096 + 4096. h 4096, 32 layers, MLP 11008, vocab
  // 100352, untied: per layer 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 + 8192 = 202,391,552;
  // total 32 x 202,391,552 + 2 x 100352 x 4096 + 4096 = 7,298,617,344 (published 7.3 B).
  const Model olmo = parse_or_fail(R"({"model_type": "olmo2", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "intermediate_size": 11008, "vocab_size": 100352, "tie_word_embeddings": false})",
                                   "olmo-2-7b");
  EXPECT_EQ(olmo.qk_norm, QkNorm::kPerProjection);
  EXPECT_EQ(layer_parameters(olmo, 0).total(), 202'391'552);
  EXPECT_EQ(count_parameters(olmo).total, 7'298'617'344);
  // CohereForAI/c4ai-command-r-v01 (cohere): attention and MLP in parallel off one LayerNorm
  // without a bias, the head tied. h 8192, 40 layers, 64 heads, MLP 22528, vocab 256000: per
  // layer 4 x 8192^2 + 3 x 8192 x 22528 + 8192 = 822,091,776; total 40 layers + 256000 x 8192 +
  // 8192 = 34,980,831,232 (published 35 B).
  const Model r = parse_or_fail(R"({"model_type": "cohere", "hidden_size": 8192,
    "num_hidden_layers": 40, "num_attention_heads": 64, "num_key_value_heads": 64,
    "intermediate_size": 22528, "vocab_size": 256000, "use_qk_norm": false})",
                                "command-r");
  EXPECT_EQ(r.norms_per_layer, 1);
  EXPECT_EQ(layer_parameters(r, 0).total(), 822'091'776);
  EXPECT_EQ(count_parameters(r).total, 34'980'831'232);
  // c4ai-command-r-plus: use_qk_norm, a LayerNorm weight per query and key element, (96 + 8) x
  // 128 = 13,312 a layer. h 12288, 64 layers, 96 heads, 8 KV heads, MLP 33792: per layer
  // 12288 x (12288 + 2048 + 12288) + 3 x 12288 x 33792 + 12288 + 13,312 = 1,572,889,600; total
  // 64 layers + 256000 x 12288 + 12288 = 103,810,674,688 (published 104 B).
  const Model plus = parse_or_fail(R"({"model_type": "cohere", "hidden_size": 12288,
    "num_hidden_layers": 64, "num_attention_heads": 96, "num_key_value_heads": 8,
    "intermediate_size": 33792, "vocab_size": 256000, "use_qk_norm": true})",
                                   "command-r-plus");
  EXPECT_EQ(layer_parameters(plus, 0).total(), 1'572'889'600);
  EXPECT_EQ(count_parameters(plus).total, 103'810'674'688);
  // Command A (cohere2): the same block without Q/K norms, h 12288, 64 layers, MLP 36864; all
  // but every 4th layer over 4096 tokens: 48 of 64. 64 x 1,686,122,496 + 256000 x 12288 + 12288
  // = 111,057,580,032 (published 111 B).
  const Model a = parse_or_fail(R"({"model_type": "cohere2", "hidden_size": 12288,
    "num_hidden_layers": 64, "num_attention_heads": 96, "num_key_value_heads": 8,
    "intermediate_size": 36864, "vocab_size": 256000, "max_position_embeddings": 131072,
    "sliding_window": 4096, "sliding_window_pattern": 4})",
                                "command-a");
  EXPECT_EQ(count_parameters(a).total, 111'057'580'032);
  EXPECT_EQ(a.window.layers, 48);
  EXPECT_EQ(a.window.tokens, 4096);
  // A pattern of 0 would divide by zero: refused, naming the key.
  Result<Model> zero = parse_model_config(R"({"model_type": "cohere2", "hidden_size": 64,
    "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 128,
    "vocab_size": 100, "sliding_window": 16, "sliding_window_pattern": 0})",
                                          "cfg.json", "x");
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().what, "key 'sliding_window_pattern' must be a positive integer");
}

TEST(ModelLoader, ReadsStarcoder2AndNemotronPlainMlps) {
  // bigcode/starcoder2-3b (starcoder2): a GELU MLP of 2 matrices, biases on every projection
  // (use_bias), LayerNorms with biases, the head tied. h 3072, 30 layers, 24 heads, 2 KV heads
  // of 128, MLP 12288, vocab 49152. Per layer: attention 3072 x (3072 + 512 + 3072) + biases
  // 3072 + 512 + 3072; MLP 2 x 3072 x 12288 + biases 12288 + 3072; 2 norms of 2 x 3072:
  // 95,979,008. Total 30 layers + 49152 x 3072 + 6144 = 3,030,371,328 (published 3.03 B).
  // Its 4096-token window covers every layer.
  const Model coder = parse_or_fail(R"({"model_type": "starcoder2", "hidden_size": 3072,
    "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2,
    "intermediate_size": 12288, "vocab_size": 49152, "max_position_embeddings": 16384,
    "sliding_window": 4096, "use_bias": true, "hidden_act": "gelu_pytorch_tanh"})",
                                    "starcoder2-3b");
  EXPECT_FALSE(coder.gated_mlp);
  EXPECT_EQ(layer_parameters(coder, 0).total(), 95'979'008);
  EXPECT_EQ(count_parameters(coder).total, 3'030'371'328);
  EXPECT_EQ(coder.window.layers, 30);
  // Nemotron-4 340B as its report's Table 1 gives it (NVIDIA 2024, arXiv 2406.11704), in the
  // keys of transformers' NemotronConfig: 96 layers, h 18432, 96 heads, 8 KV heads, squared-ReLU
  // MLP of 73728, vocab 256000, untied, no biases, LayerNorm1P (weight and bias). Per layer:
  // 18432 x (18432 + 3072 + 18432) + 2 x 18432 x 73728 + 2 x 2 x 18432 = 3,454,083,072.
  // Embedding and head 2 x 256000 x 18432 = 9,437,184,000 (the report: "9.4 billion embedding
  // parameters"); the layers 331,591,974,912 ("331.6 billion non-embedding").
  const Model nemotron = parse_or_fail(R"({"model_type": "nemotron", "hidden_size": 18432,
    "num_hidden_layers": 96, "num_attention_heads": 96, "num_key_value_heads": 8,
    "intermediate_size": 73728, "vocab_size": 256000, "max_position_embeddings": 4096,
    "hidden_act": "relu2", "partial_rotary_factor": 0.5, "tie_word_embeddings": false})",
                                       "nemotron-4-340b");
  const ParameterCount c = count_parameters(nemotron);
  EXPECT_EQ(layer_parameters(nemotron, 0).total(), 3'454'083'072);
  EXPECT_EQ(c.embedding + c.lm_head, 9'437'184'000);
  EXPECT_EQ(c.layers, 331'591'974'912);
  EXPECT_EQ(c.total, 331'591'974'912 + 9'437'184'000 + 2 * 18432);
}

TEST(ModelLoader, RefusesMoeLayersItCannotPlace) {
  // MoE every second layer is not a leading dense block: refused, not approximated.
  Result<Model> m = parse_model_config(
      R"({"model_type": "qwen2_moe", "hidden_size": 1024, "num_hidden_layers": 4,
          "num_attention_heads": 8, "intermediate_size": 4096, "vocab_size": 1000,
          "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
          "decoder_sparse_step": 2})",
      "cfg.json", "x");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().message(),
            "cfg.json:4: MoE every 2 layers is not supported; gpuplan models MoE in every layer "
            "after an optional dense prefix");
}

TEST_F(ModelTest, KvCacheOfLlama3_70bIs320KiBPerTokenInFp16) {
  // 2 (K and V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 bytes (research notes).
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token(model("llama-3.1-70b"), 2.0), 327'680.0);
}

TEST(ModelLoader, ReadsGpt2StyleConfigsFromValidationFiles) {
  // KOR22-22B of the validation set: 48 layers of 12h^2 + 13h, embedding 51200 x 6144,
  // positions 2048 x 6144, final norm 2h: 21,743,271,936 + 48*79,872 + ... = 22.07 B.
  const char* json = R"({"model_type": "gpt2", "n_embd": 6144, "n_layer": 48, "n_head": 64,
    "n_inner": 24576, "vocab_size": 51200, "n_positions": 2048,
    "activation_function": "gelu_new", "tie_word_embeddings": true})";
  Result<Model> m = parse_model_config(json, "row", "kor22-22b");
  ASSERT_TRUE(m.has_value()) << m.error().message();
  const int64_t h = 6144;
  const int64_t expected = 48 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h;
  EXPECT_EQ(count_parameters(*m).total, expected);
}

TEST(ModelLoader, ReadsMptFromItsOwnKeys) {
  // MPT-7B with its 50,432-token vocabulary: 6,649,286,656 parameters (Hugging Face card).
  const char* json = R"({"model_type": "mpt", "d_model": 4096, "n_layers": 32, "n_heads": 32,
    "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432})";
  Result<Model> m = parse_model_config(json, "mpt.json", "mpt-7b");
  ASSERT_TRUE(m.has_value()) << m.error().message();
  EXPECT_EQ(count_parameters(*m).total, 6'649'286'656);
}

TEST(ModelLoader, ErrorsNameTheFileLineAndKey) {
  const char* missing = "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096\n}";
  Result<Model> a = parse_model_config(missing, "cfg.json", "x");
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(),
            "cfg.json: missing key 'num_hidden_layers'; a config.json of this model_type must give "
            "it");

  const char* negative = "{\n  \"model_type\": \"gpt2\",\n  \"n_embd\": -5\n}";
  Result<Model> b = parse_model_config(negative, "cfg.json", "x");
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().message(), "cfg.json:3: key 'n_embd' must be a positive integer; found -5");

  Result<Model> c = parse_model_config("{\"model_type\": \"lama\"}", "cfg.json", "x");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message(),
            "cfg.json:1: unsupported model_type 'lama'; did you mean 'llama'?");

  Result<Model> d = parse_model_config("{\n\"model_type\": ", "cfg.json", "x");
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().where, "cfg.json:2");

  // A key of the wrong type is an error, not its default: a routing method given as a number
  // would otherwise drop DeepSeek-V3's router bias without a word.
  const char* number =
      "{\n  \"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4,\n"
      "  \"vocab_size\": 100, \"n_positions\": 64,\n  \"activation_function\": 1\n}";
  Result<Model> e = parse_model_config(number, "cfg.json", "x");
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().message(), "cfg.json:4: key 'activation_function' must be a string; found 1");
}

TEST(ModelLoader, RejectsHeadsThatDoNotGroup) {
  const char* json = R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2,
    "num_attention_heads": 32, "num_key_value_heads": 5, "intermediate_size": 11008,
    "vocab_size": 32000})";
  Result<Model> m = parse_model_config(json, "cfg.json", "x");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().what, "32 attention heads are not a multiple of 5 key/value heads");
}

}  // namespace
}  // namespace gpuplan
