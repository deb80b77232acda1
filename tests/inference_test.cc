#include "gpuplan/inference.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpuplan/catalog.h"
#include "gpuplan/gemm.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

class InferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { catalog_ = &shipped_catalog(); }

  static InferenceModel make(const char* model, const char* gpu, int64_t tp,
                             Precision p = Precision::kBf16, Precision kv = Precision::kBf16,
                             int64_t pp = 1) {
    Instance in;
    in.gpu = *catalog_->gpu(gpu);
    in.scale_up = *catalog_->fabric(in.gpu->scale_up);
    in.tp = tp;
    in.pp = pp;
    in.precision = p;
    in.kv_precision = kv;
    return InferenceModel(*catalog_->model(model), in, catalog_->memory_params(),
                          catalog_->train_params(), catalog_->inference_params());
  }
  // The bandwidth decode kernels reach: peak x the GPU's streaming efficiency x stream_share.
  static double decode_bandwidth(const char* gpu) {
    const Gpu& g = **catalog_->gpu(gpu);
    return g.memory_bandwidth.si() * g.efficiency->hbm * catalog_->inference_params().stream_share;
  }
  // The bandwidth a memory-bound GEMM streams its operands at (gemm.h): peak x the GPU's
  // streaming efficiency; and the fixed time of one GEMM (its tile model's launch).
  static double gemm_bandwidth(const char* gpu) {
    const Gpu& g = **catalog_->gpu(gpu);
    return g.memory_bandwidth.si() * g.efficiency->hbm;
  }
  static double launch(const char* gpu) { return (*catalog_->gpu(gpu))->tiles->launch.si(); }
  // Seconds 16-bit GEMMs of `shapes` take on `gpu` as serving times them: gemm_time at serving's
  // compute share (data/params/serving-fit.toml).
  static double serving_gemms(const char* gpu, std::initializer_list<GemmShape> shapes) {
    const double in_situ = catalog_->inference_params().compute_share;
    double t = 0;
    for (const GemmShape& s : shapes) {
      t += gemm_time(**catalog_->gpu(gpu), Precision::kBf16, s, in_situ).si();
    }
    return t;
  }
  // One Llama 3.1 8B layer's weight GEMMs for `rows` tokens on one GPU: QKV (4096 + 2 x 1024
  // columns), attention output, the gated MLP's up projections (2 x 14336) and its down
  // projection.
  static double llama_8b_layer(const char* gpu, int64_t rows) {
    return serving_gemms(gpu, {{rows, 4096 + 2 * 1024, 4096},
                               {rows, 4096, 4096},
                               {rows, 2 * 14336, 4096},
                               {rows, 4096, 14336}});
  }
  // The network of `gpus` GPUs of one NVLink 4 node, as the serving model builds it.
  static Network node_network(const char* gpu, int64_t gpus) {
    Cluster c;
    c.gpu = *catalog_->gpu(gpu);
    c.gpus = gpus;
    c.gpus_per_node = gpus;
    c.scale_up = *catalog_->fabric("nvlink4");
    return cluster_network(c, catalog_->train_params());
  }
  // Matrix-multiply weights of all layers of a model.
  static double layer_matmul(const Model& m) {
    double n = 0;
    for (int64_t i = 0; i < m.layers; ++i) {
      n += static_cast<double>(layer_parameters(m, i).matmul);
    }
    return n;
  }
  static const Catalog* catalog_;
};
const Catalog* InferenceTest::catalog_ = nullptr;

TEST_F(InferenceTest, DecodingOneTokenStreamsTheWeightsOnce) {
  // Llama 3.1 8B in bf16 on one H100: a decode step at empty context runs 4 GEMMs per layer
  // (QKV, attention output, gated up projection, down projection) and the 16-bit output head
  // (4096 x 128256), each with one row: every one is bound by reading its weights (2 bytes
  // each) once at the GEMM streaming rate, plus its launch (gemm.h), the row's input and output
  // (a few kB) aside. Their FLOPs (2 per weight) take far less time.
  const Model m = *catalog_->model("llama-3.1-8b");
  const InferenceModel im = make("llama-3.1-8b", "h100-sxm", 1);
  ASSERT_TRUE(im.feasible()) << im.reason().en;
  BatchShape b;
  b.decodes = 1;
  b.logits = 1;
  const double weights = layer_matmul(m) * 2.0 + 4096.0 * 128256.0 * 2.0;
  const double expected = weights / gemm_bandwidth("h100-sxm") + (32 * 4 + 1) * launch("h100-sxm");
  EXPECT_NEAR(im.iteration(b).matmul.si(), expected, 1e-3 * expected);
  // The same GEMMs as training times them: gemm_time of each shape (gemm.h).
  EXPECT_NEAR(im.iteration(b).matmul.si(),
              32 * llama_8b_layer("h100-sxm", 1) + serving_gemms("h100-sxm", {{1, 128256, 4096}}),
              1e-12);
}

// 512 prompt tokens of one prompt that finishes (each attending to 256.5 keys on average,
// causal) beside 64 decodes over 1,000-token contexts: 65 sequences sample a token.
BatchShape a_mixed_iteration() {
  BatchShape mix;
  mix.prefill_tokens = 512;
  mix.prefill_keys = 512.0 * 256.5;
  mix.decodes = 64;
  mix.decode_context = 64.0 * 1000;
  mix.logits = 65;
  return mix;
}

TEST_F(InferenceTest, ATimeScaleStretchesEveryPartOfAnIteration) {
  // time_scale 1.1 (serve's sensitivity): each part of a mixed iteration on 2 GPUs (GEMMs,
  // attention, elementwise, all-reduces, host time), the per-context decode rate and a lone
  // prefill take 1.1 times as long; nothing else about the instance changes.
  const InferenceModel a = make("llama-3.1-8b", "h100-sxm", 2);
  Instance in = a.instance();
  InferenceParams slow = a.params();
  slow.time_scale = 1.1;
  const InferenceModel b(*catalog_->model("llama-3.1-8b"), in, catalog_->memory_params(),
                         catalog_->train_params(), slow);
  ASSERT_TRUE(a.feasible() && b.feasible());
  const BatchShape mix = a_mixed_iteration();
  const IterationTime x = a.iteration(mix);
  const IterationTime y = b.iteration(mix);
  EXPECT_NEAR(y.matmul.si(), 1.1 * x.matmul.si(), 1e-15);
  EXPECT_NEAR(y.attention.si(), 1.1 * x.attention.si(), 1e-15);
  EXPECT_NEAR(y.elementwise.si(), 1.1 * x.elementwise.si(), 1e-15);
  EXPECT_NEAR(y.tp_comm.si(), 1.1 * x.tp_comm.si(), 1e-15);
  EXPECT_NEAR(y.overhead.si(), 1.1 * x.overhead.si(), 1e-15);
  EXPECT_GT(x.tp_comm.si(), 0);
  EXPECT_NEAR(b.decode_context_seconds(), 1.1 * a.decode_context_seconds(), 1e-20);
  EXPECT_NEAR(b.prefill_alone(2000).si(), 1.1 * a.prefill_alone(2000).si(), 1e-12);
  EXPECT_EQ(b.kv_tokens(), a.kv_tokens());
  EXPECT_EQ(b.chunk_tokens(), a.chunk_tokens());
}

TEST_F(InferenceTest, TheEnginesHostTimePerSequenceAddsOncePerSequenceSamplingAToken) {
  // An engine with 21 us per sequence (vLLM's, data/engines/vllm.toml) on the same mixed
  // iteration as above, 64 decodes and one prompt finishing: 65 sequences sample a token, so
  // the host time grows by 65 x 21 us = 1.365 ms and nothing on the GPU changes.
  const InferenceModel a = make("llama-3.1-8b", "h100-sxm", 1);
  InferenceParams per_sequence = a.params();
  per_sequence.sequence_overhead = Seconds(21e-6);
  const InferenceModel b(*catalog_->model("llama-3.1-8b"), a.instance(), catalog_->memory_params(),
                         catalog_->train_params(), per_sequence);
  ASSERT_TRUE(a.feasible() && b.feasible());
  const BatchShape mix = a_mixed_iteration();
  EXPECT_NEAR(b.iteration(mix).overhead.si() - a.iteration(mix).overhead.si(), 1.365e-3, 1e-12);
  EXPECT_EQ(b.iteration(mix).matmul.si(), a.iteration(mix).matmul.si());
  EXPECT_EQ(b.iteration(mix).attention.si(), a.iteration(mix).attention.si());
  // A decode step of 256 sequences waits 256 x 21 us = 5.376 ms more: the gap vLLM's
  // developers measured between two decode steps at that batch (5-6 ms, vLLM issue #10634).
  EXPECT_NEAR(b.decode_step(256, 1000).si() - a.decode_step(256, 1000).si(), 5.376e-3, 1e-12);
}

TEST_F(InferenceTest, OverlappedHostWorkShowsOnlyBeyondTheGpusTime) {
  // The same engine preparing the next iteration while the GPU runs this one: the host time per
  // sequence counts max(0, n x 21 us - GPU time). One decode (21 us) hides behind the GPU's
  // milliseconds of weight reads; a host time per sequence of 1 ms with 256 decodes (256 ms)
  // exceeds them, and the iteration then lasts as long as the host.
  const InferenceModel a = make("llama-3.1-8b", "h100-sxm", 1);
  InferenceParams overlapped = a.params();
  overlapped.sequence_overhead = Seconds(21e-6);
  overlapped.sequence_overhead_overlapped = true;
  const InferenceModel b(*catalog_->model("llama-3.1-8b"), a.instance(), catalog_->memory_params(),
                         catalog_->train_params(), overlapped);
  ASSERT_TRUE(a.feasible() && b.feasible());
  EXPECT_EQ(b.decode_step(1, 1000).si(), a.decode_step(1, 1000).si());
  overlapped.sequence_overhead = Seconds(1e-3);
  const InferenceModel slow_host(*catalog_->model("llama-3.1-8b"), a.instance(),
                                 catalog_->memory_params(), catalog_->train_params(), overlapped);
  BatchShape b256;
  b256.decodes = 256;
  b256.decode_context = 256.0 * 1000;
  b256.logits = 256;
  const IterationTime gpu_only = a.iteration(b256);
  const IterationTime host_bound = slow_host.iteration(b256);
  EXPECT_NEAR(host_bound.total().si(), gpu_only.overhead.si() + 0.256, 1e-12);
}

TEST_F(InferenceTest, ElementwiseKernelsMoveWhatATokenWritesTheFittedPasses) {
  // Llama 3.1 8B (h 4096, 32 heads and 8 KV heads of 128, gated MLP of 14336, 32 layers) on one
  // GPU: a token writes two norm outputs and two residual sums (4h), Q, K, V and the attention
  // output (2 x 4096 + 2 x 1024) and the gated MLP's three intermediate tensors (3 x 14336) per
  // layer, 2 bytes each, moved elementwise_traffic times (fitted, data/params/serving-fit.toml;
  // 2 would be written once and read once), at the decode kernels' bandwidth.
  const InferenceModel im = make("llama-3.1-8b", "h100-sxm", 1);
  ASSERT_TRUE(im.feasible()) << im.reason().en;
  BatchShape b;
  b.prefill_tokens = 1000;
  b.prefill_keys = 1000.0 * 1001.0 / 2.0;
  b.logits = 1;
  const double elements = 4.0 * 4096 + 2.0 * 4096 + 2.0 * 1024 + 3.0 * 14336;
  const double traffic = catalog_->inference_params().elementwise_traffic;
  EXPECT_GT(traffic, 0.0);
  EXPECT_NEAR(im.iteration(b).elementwise.si(),
              1000.0 * 32 * elements * 2.0 * traffic / decode_bandwidth("h100-sxm"), 1e-12);
}

TEST_F(InferenceTest, PrefillIsComputeBound) {
  // 8192 prompt tokens: each weight GEMM (8192 rows; 6144, 4096, 28672 or 4096 columns over
  // 4096 or 14336) is timed as training times it, gemm_time at the loaded GPU's in-situ share
  // (data/params/training-fit.toml, hopper), plus the head's one sampled row.
  const Model m = *catalog_->model("llama-3.1-8b");
  const Gpu& g = **catalog_->gpu("h100-sxm");
  const InferenceModel im = make("llama-3.1-8b", "h100-sxm", 1);
  BatchShape b;
  b.prefill_tokens = 8192;
  b.prefill_keys = 8192.0 * 8193.0 / 2.0;
  b.logits = 1;
  EXPECT_NEAR(
      im.iteration(b).matmul.si(),
      32 * llama_8b_layer("h100-sxm", 8192) + serving_gemms("h100-sxm", {{1, 128256, 4096}}),
      1e-12);
  // Compute-bound: no GEMM runs faster than 2 FLOPs per active weight per token at the
  // sustained bf16 rate (peak x gemm) at serving's compute share, and tile waves (12 waves of 128 x
  // 256 tiles for QKV; more for the MLP) add at most the part of one wave the sustained rate does
  // not cover, a few per cent. The head reads its weights once at the GEMM streaming rate.
  const double in_situ = catalog_->inference_params().compute_share;
  const double rate = g.peak_for(Precision::kBf16)->si() * g.efficiency->gemm * in_situ;
  const double compute = 8192.0 * 2.0 * layer_matmul(m) / rate + 32 * 4 * launch("h100-sxm");
  const double head = 4096.0 * 128256.0 * 2.0 / gemm_bandwidth("h100-sxm") + launch("h100-sxm");
  EXPECT_GE(im.iteration(b).matmul.si(), compute + head);
  EXPECT_LT(im.iteration(b).matmul.si(), 1.03 * (compute + head));
  // Causal attention: 4 x 4096 FLOPs per (query, key) pair per layer, at the Hopper attention
  // kernels' rate (data/gpus/h100-sxm.toml: attention_native of the bf16 peak), at the share.
  const double attention =
      b.prefill_keys * 32 * 4.0 * 4096.0 /
      (g.peak_for(Precision::kBf16)->si() * g.efficiency->attention_native * in_situ);
  EXPECT_NEAR(im.iteration(b).attention.si(), attention, 1e-12);
}

TEST_F(InferenceTest, TensorParallelismSplitsWeightsAndPaysTwoAllReducesPerLayer) {
  const InferenceModel one = make("llama-3.1-70b", "h100-sxm", 2);
  const InferenceModel four = make("llama-3.1-70b", "h100-sxm", 4);
  ASSERT_TRUE(one.feasible() && four.feasible());
  // Half the GPUs per instance: each GPU holds about twice the weights (norms are replicated).
  EXPECT_NEAR(one.weights_per_gpu().si() / four.weights_per_gpu().si(), 2.0, 0.01);
  BatchShape b;
  b.decodes = 64;
  b.decode_context = 64 * 1000.0;
  b.logits = 64;
  // 80 layers x 2 all-reduces of 64 tokens x 8192 x 2 bytes over the 4 GPUs of the node.
  const Network net = node_network("h100-sxm", 4);
  const Seconds one_reduce = all_reduce_time(Bytes(64 * 8192 * 2.0), Group{4, 4}, net);
  EXPECT_NEAR(four.iteration(b).tp_comm.si(), 160 * one_reduce.si(), 1e-12);
}

TEST_F(InferenceTest, Fp8HalvesTheKvCachePerToken) {
  // Llama 3.1 70B: 2 (K and V) x 80 layers x 8 KV heads x 128 dims per token; with tp 2 each
  // GPU keeps 4 of the heads. 2 bytes in bf16, 1 in fp8.
  const InferenceModel bf16 = make("llama-3.1-70b", "h200-sxm", 2);
  const InferenceModel fp8 = make("llama-3.1-70b", "h200-sxm", 2, Precision::kFp8, Precision::kFp8);
  EXPECT_DOUBLE_EQ(bf16.kv_bytes_per_token(), 2.0 * 80 * 4 * 128 * 2);
  EXPECT_DOUBLE_EQ(fp8.kv_bytes_per_token(), 2.0 * 80 * 4 * 128 * 1);
  // The KV cache gets kv_memory_fraction of what is left; tokens = that / bytes per token.
  EXPECT_EQ(fp8.kv_tokens(), static_cast<int64_t>(std::floor(fp8.kv_budget_per_gpu().si() /
                                                             fp8.kv_bytes_per_token())));
  EXPECT_GT(fp8.kv_tokens(), 2 * bf16.kv_tokens());  // smaller weights leave more room, too
}

TEST_F(InferenceTest, MixtureOfExpertsReadsOnlyTheExpertsItsTokensPick) {
  // Mixtral 8x7B (h 4096, 32 heads and 8 KV heads of 128, 8 experts of 14336, top 2): per layer
  // QKV, the attention output, the router and a grouped GEMM per expert projection over the
  // experts some token picked (layer_gemms.h). One token picks 2: ceil(8 (1 - (7/8)^2)) = 2
  // experts of one row each. 256 tokens route 512 rows: all 8 experts run
  // (8 (1 - (7/8)^512) ~ 8), 64 rows each.
  const Model m = *catalog_->model("mixtral-8x7b");
  const InferenceModel im = make("mixtral-8x7b", "h200-sxm", 1);
  ASSERT_TRUE(im.feasible()) << im.reason().en;
  auto layer = [&](int64_t rows, int64_t per_expert, int64_t experts) {
    return serving_gemms("h200-sxm", {{per_expert, 2 * 14336, 4096, experts},
                                      {per_expert, 4096, 14336, experts},
                                      {rows, 8, 4096},
                                      {rows, 4096 + 2 * 1024, 4096},
                                      {rows, 4096, 4096}});
  };
  BatchShape one;
  one.decodes = 1;
  one.logits = 1;
  const double head = serving_gemms("h200-sxm", {{1, 32000, 4096}});
  EXPECT_NEAR(im.iteration(one).matmul.si(), 32 * layer(1, 1, 2) + head, 1e-12);
  BatchShape many = one;
  many.decodes = 256;
  many.logits = 0;
  EXPECT_NEAR(im.iteration(many).matmul.si(), 32 * layer(256, 64, 8), 1e-12);
  // Decode GEMMs are bound by their weights: one token takes at least the dense weights and 2
  // experts per layer read once at the GEMM streaming rate, with a launch per GEMM; 256 tokens
  // read the 6 other experts too (3 x 4096 x 14336 x 2 bytes each), and their 255 more rows
  // (activations, split-K partial sums) add under a tenth to that.
  const double expert = 3.0 * 4096 * 14336 * 2.0;  // gated MLP of one expert, bf16
  const double dense = layer_matmul(m) * 2.0 - 32 * 8 * expert;
  const double floor =
      (dense + 32 * 2 * expert + 4096.0 * 32000.0 * 2.0) / gemm_bandwidth("h200-sxm") +
      (32 * 5 + 1) * launch("h200-sxm");
  EXPECT_GE(im.iteration(one).matmul.si(), floor);
  const double more = im.iteration(many).matmul.si() - (im.iteration(one).matmul.si() - head);
  const double six = 32 * 6 * expert / gemm_bandwidth("h200-sxm");
  EXPECT_GT(more, six);
  EXPECT_LT(more, 1.1 * six);
}

TEST_F(InferenceTest, PublishedMxfp4ExpertsRunDequantisedWhereThereAreNoFp4TensorCores) {
  // gpt-oss-120b as published (model.h, ReleasedWeights): routed experts in MXFP4 (0.53125
  // bytes a weight), attention and router in bf16. One decoding token picks 4 of 128 experts:
  // ceil(128 (1 - (127/128)^4)) = 4 of one row each. Per layer: the experts' grouped up (2 x
  // 2,880) and down projections reading 0.53125-byte weights, the router (128 x 2,880), QKV
  // (64 x 64 + 2 x 8 x 64 columns) and the attention output, then the 16-bit head (201,088 x
  // 2,880). An H100 has no fp4 tensor cores: the experts run as 16-bit GEMMs over the narrow
  // weights (W4A16), as engines' weight-only kernels do, instead of the instance being refused;
  // a B200 runs them on its fp4 rate.
  for (const char* gpu : {"h100-sxm", "b200"}) {
    Instance in;
    in.gpu = *catalog_->gpu(gpu);
    in.scale_up = *catalog_->fabric(in.gpu->scale_up);
    in.precision = Precision::kFp4;
    in.as_released = true;
    const InferenceModel im(*catalog_->model("gpt-oss-120b"), in, catalog_->memory_params(),
                            catalog_->train_params(), catalog_->inference_params());
    ASSERT_TRUE(im.feasible()) << gpu << ": " << im.reason().en;
    const Gpu& g = **catalog_->gpu(gpu);
    const Precision experts = g.peak_for(Precision::kFp4) ? Precision::kFp4 : Precision::kBf16;
    EXPECT_EQ(experts, std::string(gpu) == "b200" ? Precision::kFp4 : Precision::kBf16);
    const double share = catalog_->inference_params().compute_share;
    GemmShape up{1, 2 * 2880, 2880, 4, 0.53125};
    GemmShape down{1, 2880, 2880, 4, 0.53125};
    const double layer =
        gemm_time(g, experts, up, share).si() + gemm_time(g, experts, down, share).si() +
        serving_gemms(gpu, {{1, 128, 2880}, {1, 4096 + 2 * 512, 2880}, {1, 2880, 4096}});
    BatchShape one;
    one.decodes = 1;
    one.logits = 1;
    EXPECT_NEAR(im.iteration(one).matmul.si(), 36 * layer + serving_gemms(gpu, {{1, 201088, 2880}}),
                1e-12)
        << gpu;
  }
  // Not published so, fp4 weights on an H100 have no rate to run at.
  EXPECT_FALSE(make("gpt-oss-120b", "h100-sxm", 1, Precision::kFp4).feasible());
}

TEST_F(InferenceTest, AnInstanceThatCannotServeSaysWhy) {
  // 70B in bf16 is ~141 GB of weights: more than one H100's 79.6 GiB.
  const InferenceModel big = make("llama-3.1-70b", "h100-sxm", 1);
  EXPECT_FALSE(big.feasible());
  EXPECT_NE(big.reason().en.find("leave no room for a KV cache"), std::string::npos)
      << big.reason().en;
  // The same reason for a Portuguese reader, with its sizes in their notation.
  EXPECT_NE(big.reason().pt.find("não deixam espaço para o cache KV"), std::string::npos)
      << big.reason().pt;
  // An HGX H100 links 8 GPUs; 16 cannot form one tensor-parallel instance.
  const InferenceModel wide = make("llama-3.1-70b", "h100-sxm", 16);
  EXPECT_FALSE(wide.feasible());
  EXPECT_NE(wide.reason().en.find("tp 16"), std::string::npos) << wide.reason().en;
  // Llama 3.1 8B has 32 heads: tp 3 does not divide them.
  EXPECT_FALSE(make("llama-3.1-8b", "h100-sxm", 3).feasible());
}

TEST_F(InferenceTest, InstancesTileANodeAndSayWhichWayTheyDoNot) {
  // A GB200 NVL72 rack is one NVLink domain of 72 GPUs (data/gpus/gb200.toml): tp 16 fits in
  // it but leaves 72 - 4 x 16 = 8 GPUs over, and a node of 8 cannot hold tp 16 at all.
  Instance in;
  in.gpu = *catalog_->gpu("gb200");
  in.scale_up = *catalog_->fabric(in.gpu->scale_up);
  in.tp = 16;
  in.precision = Precision::kFp8;
  in.kv_precision = Precision::kFp8;
  in.gpus_per_node = 72;
  auto reason = [&](const Instance& i) {
    return InferenceModel(*catalog_->model("llama-3.1-70b"), i, catalog_->memory_params(),
                          catalog_->train_params(), catalog_->inference_params())
        .reason()
        .en;
  };
  EXPECT_EQ(reason(in), "tp 16 does not divide the 72 GPUs of a node");
  in.gpus_per_node = 8;
  EXPECT_EQ(reason(in), "tp 16 is more than the 8 GPUs of a node");
  in.tp = 8;
  EXPECT_EQ(reason(in), "");  // 70B in fp8 on 8 GPUs of 185 GiB: it serves
}

TEST_F(InferenceTest, LongPromptsArePrefilledInChunksOfTheTokenBudget) {
  // inference_chunk_tokens = 8192: a 20,000-token prompt takes three iterations, the later
  // chunks attending to everything before them; the total is their sum.
  const InferenceModel im = make("llama-3.1-8b", "h100-sxm", 1);
  ASSERT_EQ(im.chunk_tokens(), 8192);
  Seconds sum;
  int64_t done = 0;
  for (int64_t c : {8192, 8192, 3616}) {
    BatchShape b;
    b.prefill_tokens = c;
    const double cd = static_cast<double>(c);
    b.prefill_keys = cd * (static_cast<double>(done) + (cd + 1.0) / 2.0);
    b.logits = done + c == 20000 ? 1 : 0;
    sum += im.iteration(b).total();
    done += c;
  }
  EXPECT_NEAR(im.prefill_alone(20000).si(), sum.si(), 1e-12);
}

TEST_F(InferenceTest, PipelineStagesSplitTheLayersAndHandActivationsOn) {
  // Llama 3.1 70B, tp 2 x pp 2 on one node: each GPU holds about half the layers of a tp 2
  // instance; one batch's pass costs the same per layer plus one hand-off of T x 8192 x 2 bytes
  // between the stages over NVLink; the instance keeps 2 batches in flight, each with half
  // of the KV cache.
  const InferenceModel one = make("llama-3.1-70b", "h200-sxm", 2);
  const InferenceModel two =
      make("llama-3.1-70b", "h200-sxm", 2, Precision::kBf16, Precision::kBf16, 2);
  ASSERT_TRUE(one.feasible() && two.feasible()) << two.reason().en;
  EXPECT_NEAR(two.weights_per_gpu().si() / one.weights_per_gpu().si(), 0.5, 0.02);
  BatchShape b;
  b.decodes = 32;
  b.decode_context = 32 * 2000.0;
  b.logits = 32;
  EXPECT_DOUBLE_EQ(two.iteration(b).matmul.si(), one.iteration(b).matmul.si());
  const Network net = node_network("h200-sxm", 4);
  EXPECT_NEAR(two.iteration(b).pp_comm.si(),
              send_recv_time(Bytes(32 * 8192 * 2.0), false, net).si(), 1e-15);
  EXPECT_EQ(two.engines(), 2);
  EXPECT_EQ(two.engine_kv_tokens(), two.kv_tokens() / 2);
}

TEST_F(InferenceTest, StagesAcrossNodesNeedANetwork) {
  // 405B in bf16 (~810 GB) needs two 8-GPU H100 nodes: tp 8 x pp 2 over InfiniBand.
  Instance in;
  in.gpu = *catalog_->gpu("h100-sxm");
  in.scale_up = *catalog_->fabric("nvlink4");
  in.tp = 8;
  in.pp = 2;
  in.gpus_per_node = 8;
  const Model m = *catalog_->model("llama-3.1-405b");
  const InferenceModel alone(m, in, catalog_->memory_params(), catalog_->train_params(),
                             catalog_->inference_params());
  EXPECT_FALSE(alone.feasible());
  EXPECT_NE(alone.reason().en.find("span 2 nodes but no network"), std::string::npos)
      << alone.reason().en;
  in.scale_out = *catalog_->fabric("ib-ndr-400g");
  in.nics_per_node = 8;
  const InferenceModel linked(m, in, catalog_->memory_params(), catalog_->train_params(),
                              catalog_->inference_params());
  ASSERT_TRUE(linked.feasible()) << linked.reason().en;
  BatchShape b;
  b.decodes = 8;
  b.logits = 8;
  // The one boundary crosses the nodes: 8 tokens x 16384 x 2 bytes over the network.
  Cluster c;
  c.gpu = in.gpu;
  c.gpus = 16;
  c.gpus_per_node = 8;
  c.scale_up = in.scale_up;
  c.scale_out = in.scale_out;
  c.nics_per_node = 8;
  const Network net = cluster_network(c, catalog_->train_params());
  EXPECT_NEAR(linked.iteration(b).pp_comm.si(),
              send_recv_time(Bytes(8 * 16384 * 2.0), true, net).si(), 1e-15);
}

}  // namespace
}  // namespace gpuplan
