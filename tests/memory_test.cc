#include "gpuplan/memory.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "gpuplan/catalog.h"
#include "gpuplan/model_loader.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

// The GPT models of Korthikanti et al. 2022 (Table 3), in the GPT-2 config format.
Model gpt(int64_t hidden, int64_t layers, int64_t heads) {
  const std::string json = "{\"model_type\": \"gpt2\", \"n_embd\": " + std::to_string(hidden) +
                           ", \"n_layer\": " + std::to_string(layers) +
                           ", \"n_head\": " + std::to_string(heads) +
                           ", \"vocab_size\": 51200, \"n_positions\": 2048}";
  Result<Model> m = parse_model_config(json, "test", "gpt");
  EXPECT_TRUE(m.has_value());
  return *m;
}

constexpr double kGiB = 1073741824.0;
const MemoryParams kNoOverhead{Bytes(0), 8192};

MemoryJob megatron_job(int64_t tp, int64_t pp, int64_t micro_batch, Recompute r, bool sp) {
  MemoryJob job;
  job.task = Task::kTrain;
  job.precision = Precision::kFp16;
  job.seq = 2048;
  job.micro_batch = micro_batch;
  job.recompute = r;
  job.layout.tp = tp;
  job.layout.pp = pp;
  job.layout.sequence_parallel = sp;
  job.flash_attention = false;  // 2022 Megatron stored the attention scores
  return job;
}

// The names help texts list are the names the parsers take, one table each: every listed name
// parses and prints back as itself. The training precisions are those precision_problem lets
// through for a training task: not fp4 (no NVFP4 training recipe is modelled) nor int8 or int4
// (quantised weights are not trained; QLoRA has its own task).
TEST(Names, ListedNamesAreTheParsedOnes) {
  for (const std::string& n : precision_names()) {
    ASSERT_TRUE(parse_precision(n)) << n;
    EXPECT_EQ(precision_name(*parse_precision(n)), n);
  }
  for (const std::string& n : task_names()) {
    EXPECT_EQ(task_name(*parse_task(n)), n);
  }
  for (const std::string& n : optimizer_names()) {
    EXPECT_EQ(optimizer_name(*parse_optimizer(n)), n);
  }
  for (const std::string& n : recompute_names()) {
    EXPECT_EQ(recompute_name(*parse_recompute(n)), n);
  }
  EXPECT_EQ(training_precision_names(),
            (std::vector<std::string>{"fp32", "tf32", "fp16", "bf16", "fp8"}));
  EXPECT_EQ(precision_names().size(), 8u);
  EXPECT_EQ(attention_kernel_names(), (std::vector<std::string>{"flash", "eager"}));
  EXPECT_TRUE(*parse_flash_attention("flash"));
  EXPECT_FALSE(*parse_flash_attention("eager"));
  EXPECT_EQ(*parse_lora_targets("attention"), LoraTargets::kAttention);
  EXPECT_EQ(*parse_lora_targets("all-linear"), LoraTargets::kAllLinear);
  EXPECT_FALSE(parse_lora_targets("mlp"));
}

TEST(Activations, MatchKorthikanti22bAtTp8) {
  // Korthikanti et al. 2022, Fig. 1 (22B: h 6144, a 64, 48 layers, s 2048, b 4, t 8):
  // no recompute and no SP: s b h (10 + 24/t + 5 a s/(h t)) per layer = 59.25 GiB in all;
  // SP + selective recompute: 34 s b h / t per layer = 9.56 GiB.
  const Model m = gpt(6144, 48, 64);
  const Bytes none = layer_activation_bytes(m, megatron_job(8, 1, 4, Recompute::kNone, false));
  const Bytes selective =
      layer_activation_bytes(m, megatron_job(8, 1, 4, Recompute::kSelective, true));
  EXPECT_NEAR(none.si() * 48 / kGiB, 59.25, 0.01);
  EXPECT_NEAR(selective.si() * 48 / kGiB, 9.56, 0.01);
}

TEST(Activations, MatchKorthikanti175bFirstStageWithInterleaving) {
  // 175B (h 12288, a 96, 96 layers) at t 8, p 8, b 1 with 3 interleaved chunks per stage: the
  // first stage keeps p micro-batches of its 12 layers, times 1 + (p-1)/(p v) = 31/24:
  // 66.84 GiB without recompute, 12.35 GiB with SP + selective (Fig. 1).
  const Model m = gpt(12288, 96, 96);
  for (const auto& [r, sp, expected] : {std::tuple{Recompute::kNone, false, 66.84},
                                        std::tuple{Recompute::kSelective, true, 12.35}}) {
    MemoryJob job = megatron_job(8, 8, 1, r, sp);
    job.layout.virtual_stages = 3;
    const std::vector<MemoryBreakdown> stages = memory_per_stage(m, job, kNoOverhead);
    EXPECT_NEAR(stages.front().activations.si() / kGiB, expected, 0.01);
  }
}

TEST(TrainingState, MatchesKorthikantiParametersAndOptimizer) {
  // Fig. 1 counts 18 bytes per parameter (fp16 weights, fp32 gradients, fp32 master weights and
  // two Adam moments) over the 12 l h^2 / (t p) layer weights of a GPU: 45.56 GiB for 175B at
  // t 8, p 8. A middle stage also holds the biases and norms (12 x (7h/8 + 6h) parameters,
  // 0.02 GiB), so it reads 45.58 GiB.
  const Model m = gpt(12288, 96, 96);
  const MemoryJob job = megatron_job(8, 8, 1, Recompute::kSelective, true);
  const MemoryBreakdown middle = memory_per_stage(m, job, kNoOverhead)[3];
  const double state = (middle.weights + middle.gradients + middle.optimizer).si() / kGiB;
  const double h = 12288;
  const double biases_and_norms = 12 * (7 * h / 8 + 6 * h) * 18 / kGiB;
  EXPECT_NEAR(state, 45.56 + biases_and_norms, 0.01);
}

TEST(TrainingState, ZeroStagesShardOverDataParallel) {
  // ZeRO-1 divides the optimizer by dp, ZeRO-2 also the gradients, ZeRO-3 also the weights, and
  // then holds the gathered 16-bit weights of the layer it computes and of the one it prefetches:
  // 2 layers x 2 B x (12 h^2 + 13 h) parameters of a GPT layer.
  const Model m = gpt(4096, 32, 32);
  const double h = 4096;
  const double gathered = 2 * 2 * (12 * h * h + 13 * h);
  MemoryJob job = megatron_job(1, 1, 1, Recompute::kFull, false);
  job.layout.dp = 8;
  const MemoryBreakdown z0 = memory_per_gpu(m, job, kNoOverhead);
  for (int64_t zero = 1; zero <= 3; ++zero) {
    job.layout.zero = zero;
    const MemoryBreakdown z = memory_per_gpu(m, job, kNoOverhead);
    EXPECT_DOUBLE_EQ(z.optimizer.si(), z0.optimizer.si() / 8) << zero;
    EXPECT_DOUBLE_EQ(z.gradients.si(), zero >= 2 ? z0.gradients.si() / 8 : z0.gradients.si());
    EXPECT_DOUBLE_EQ(z.weights.si(), zero >= 3 ? z0.weights.si() / 8 + gathered : z0.weights.si());
  }
}

TEST(TrainingState, FollowsTheFrameworksMixedPrecisionRule) {
  // Per parameter with Adam: Megatron 2 (weights) + 4 (fp32 main_grad) + 4 (master) + 8
  // (moments) = 18 B; DeepSpeed 2 + 2 + 4 + 8 = 16 B; FSDP 4 (fp32 shard) + 4 + 0 + 8 = 16 B
  // (data/frameworks/). A middle stage of the 175B model at t 8, p 8 holds 12 h^2 / 8 weights
  // per layer plus 12 x (7h/8 + 6h) biases and norms, 12 layers.
  const Model m = gpt(12288, 96, 96);
  MemoryJob job = megatron_job(8, 8, 1, Recompute::kSelective, true);
  const double h = 12288;
  const double params = 12 * (12 * h * h / 8 + 7 * h / 8 + 6 * h);
  auto state = [&](double weights, double grads, double master) {
    job.weight_bytes = weights;
    job.gradient_bytes = grads;
    job.master_bytes = master;
    const MemoryBreakdown b = memory_per_stage(m, job, kNoOverhead)[3];
    return (b.weights + b.gradients + b.optimizer).si() / params;
  };
  EXPECT_NEAR(state(2, 4, 4), 18.0, 1e-9);
  EXPECT_NEAR(state(2, 2, 4), 16.0, 1e-9);
  EXPECT_NEAR(state(4, 4, 0), 16.0, 1e-9);
}

TEST(TrainingState, Bf16RunsKeepTheFrameworksBf16GradientBuffer) {
  // Megatron-DeepSpeed and Megatron-LM (data/frameworks/): fp16 runs keep 16-bit gradients,
  // 2 + 2 + 4 + 8 = 16 B per parameter with Adam; bf16 (and fp8) runs keep an fp32 buffer
  // (BF16_Optimizer's; Megatron's main_grad, which bf16 forces), 2 + 4 + 4 + 8 = 18 B. The same
  // middle stage of the 175B model as above.
  const Model m = gpt(12288, 96, 96);
  const double h = 12288;
  const double params = 12 * (12 * h * h / 8 + 7 * h / 8 + 6 * h);
  auto state = [&](const char* software, Precision p) {
    MemoryJob job = megatron_job(8, 8, 1, Recompute::kSelective, true);
    apply_software(job, *shipped_catalog().software(software));
    job.precision = p;
    const MemoryBreakdown b = memory_per_stage(m, job, kNoOverhead)[3];
    return (b.weights + b.gradients + b.optimizer).si() / params;
  };
  EXPECT_NEAR(state("megatron-deepspeed@2022", Precision::kFp16), 16.0, 1e-9);
  EXPECT_NEAR(state("megatron-deepspeed@2022", Precision::kBf16), 18.0, 1e-9);
  EXPECT_NEAR(state("megatron-deepspeed@2022", Precision::kFp8), 18.0, 1e-9);
  EXPECT_NEAR(state("megatron-lm@2022", Precision::kFp16), 16.0, 1e-9);
  EXPECT_NEAR(state("megatron-lm@2022", Precision::kBf16), 18.0, 1e-9);
}

TEST(TrainingState, AFrameworkCanShardGradientsFromZeroOne) {
  // ZeRO-1 shards only the optimizer states; a framework whose sharded data parallelism always
  // shards the gradients too (Meta's FSDP, data/frameworks/meta-internal.toml) keeps 1/dp of
  // them at ZeRO-1 as at ZeRO-2.
  const Model m = gpt(4096, 32, 32);
  MemoryJob job = megatron_job(1, 1, 1, Recompute::kFull, false);
  job.layout.dp = 8;
  job.layout.zero = 1;
  const MemoryBreakdown zero1 = memory_per_gpu(m, job, kNoOverhead);
  job.gradient_sharding_stage = 1;
  const MemoryBreakdown sharded = memory_per_gpu(m, job, kNoOverhead);
  EXPECT_NEAR(sharded.gradients.si(), zero1.gradients.si() / 8, 1e-6);
  EXPECT_DOUBLE_EQ(sharded.optimizer.si(), zero1.optimizer.si());
  job.layout.zero = 0;  // nothing sharded at ZeRO 0, whatever the framework
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, job, kNoOverhead).gradients.si(), zero1.gradients.si());
  // The catalog's Meta framework says so; Megatron-LM does not.
  MemoryJob meta;
  apply_software(meta, *shipped_catalog().software("meta-internal@2024"));
  EXPECT_EQ(meta.gradient_sharding_stage, 1);
  MemoryJob megatron;
  apply_software(megatron, *shipped_catalog().software("megatron-lm@2024"));
  EXPECT_EQ(megatron.gradient_sharding_stage, 2);
}

TEST(TrainingState, EightBitAdamAndOffload) {
  // 8-bit Adam keeps two 1-byte moments and an fp32 maximum per block of 2048 for each:
  // 2 + 8/2048 bytes instead of Adam's 8 (Dettmers et al. 2022). Offloading moves the
  // optimizer (master weights and moments) to host memory, out of the GPU's total.
  const Model m = gpt(4096, 32, 32);
  MemoryJob job = megatron_job(1, 1, 1, Recompute::kFull, false);
  const MemoryBreakdown adam = memory_per_gpu(m, job, kNoOverhead);
  job.optimizer = Optimizer::kAdam8bit;
  const MemoryBreakdown eight = memory_per_gpu(m, job, kNoOverhead);
  const double params = adam.parameters;
  EXPECT_NEAR((adam.optimizer - eight.optimizer).si() / params, 8.0 - (2.0 + 8.0 / 2048), 1e-9);
  job.offload_optimizer = true;
  const MemoryBreakdown off = memory_per_gpu(m, job, kNoOverhead);
  EXPECT_EQ(off.optimizer.si(), 0.0);
  EXPECT_DOUBLE_EQ(off.host.si(), eight.optimizer.si());
  EXPECT_DOUBLE_EQ((eight.total() - off.total()).si(), eight.optimizer.si());
}

TEST(TrainingState, ExpertsSplitOverTheExpertGroup) {
  // Mixtral-like: 8 experts of width 14336 in 32 layers, 3 x 4096 x 14336 each. At tp 2, dp 16
  // with ep 8: each GPU holds 1 expert split over etp = tp = 2 ranks; with etp 1 and ep 8 it
  // holds one whole expert. Either way the expert group (ep x etp) must divide tp x cp x dp = 32.
  Result<Model> m = parse_model_config(
      R"({"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
          "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2})",
      "test", "mixtral");
  ASSERT_TRUE(m.has_value());
  MemoryJob job = megatron_job(2, 1, 1, Recompute::kFull, true);
  job.layout.dp = 16;
  job.layout.ep = 8;
  const double expert = 3.0 * 4096 * 14336;
  EXPECT_NEAR(memory_per_gpu(*m, job, kNoOverhead).expert_parameters, 32 * expert / 2, 1.0);
  job.layout.etp = 1;
  EXPECT_NEAR(memory_per_gpu(*m, job, kNoOverhead).expert_parameters, 32 * expert, 1.0);
  EXPECT_FALSE(layout_problem(*m, job).has_value());
  job.layout.ep = 64;  // more expert shares than experts, and than the 32 ranks
  EXPECT_EQ(*layout_problem(*m, job),
            "ep 64 x etp 1 must divide tp 2 x cp 1 x dp 16, ep the 8 experts and etp their MLP "
            "width 14336");
}

TEST(Activations, FusedAttentionKeepsNoScores) {
  // With FlashAttention the 5 a s score term is gone, as with selective recompute.
  const Model m = gpt(6144, 48, 64);
  MemoryJob job = megatron_job(8, 1, 4, Recompute::kNone, true);
  const Bytes eager = layer_activation_bytes(m, job);
  job.flash_attention = true;
  const Bytes fused = layer_activation_bytes(m, job);
  job.flash_attention = false;
  job.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(fused.si(), layer_activation_bytes(m, job).si());
  // The dropped term: 5 a s per token / t (SP) = 5 * 64 * 2048 / 8 bytes x 8192 tokens.
  EXPECT_DOUBLE_EQ(eager.si() - fused.si(), 5.0 * 64 * 2048 / 8 * 8192);
}

TEST(StageLayers, TakesUnevenLayersFromTheOuterStages) {
  // Llama 3 405B: 126 layers on 16 stages = 8 per stage, less one on the first and the last.
  const std::vector<int64_t> s = stage_layers(126, 16);
  EXPECT_EQ(s.front(), 7);
  EXPECT_EQ(s.back(), 7);
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    EXPECT_EQ(s[i], 8) << i;
  }
  EXPECT_EQ(stage_layers(10, 4), (std::vector<int64_t>{2, 3, 3, 2}));
}

TEST(StageLayers, TheBreaksFindEveryShapeOfStage) {
  // Every stage that is not a break has the layers (count, dense ones) and the ends (embedding,
  // head) of the stage before it, for every catalog model (DeepSeek V3 keeps its first 3 layers
  // dense) and every stage count; the breaks' first layers are the running sums of the counts.
  for (const Model& m : shipped_catalog().models()) {
    const int64_t dense_end = m.is_moe() ? std::min(m.moe.dense_layers, m.layers) : m.layers;
    for (int64_t pp = 1; pp <= m.layers; ++pp) {
      const std::vector<int64_t> counts = stage_layers(m.layers, pp);
      std::vector<bool> is_break(static_cast<size_t>(pp), false);
      for (const StageSpan& b : stage_breaks(m, pp)) {
        is_break[static_cast<size_t>(b.stage)] = true;
        int64_t first = 0;
        for (int64_t s = 0; s < b.stage; ++s) {
          first += counts[static_cast<size_t>(s)];
        }
        EXPECT_EQ(b.first, first) << m.id << " pp " << pp << " stage " << b.stage;
        EXPECT_EQ(b.count, counts[static_cast<size_t>(b.stage)]);
      }
      ASSERT_TRUE(is_break[0]) << m.id << " pp " << pp;
      int64_t first = 0;
      for (int64_t s = 0; s < pp; ++s) {
        const int64_t count = counts[static_cast<size_t>(s)];
        EXPECT_EQ(stage_layer_count(m.layers, pp, s), count);
        if (s > 0 && !is_break[static_cast<size_t>(s)]) {
          const int64_t before = counts[static_cast<size_t>(s - 1)];
          const int64_t dense = std::clamp<int64_t>(dense_end - first, 0, count);
          const int64_t dense_before = std::clamp<int64_t>(dense_end - (first - before), 0, before);
          EXPECT_EQ(count, before) << m.id << " pp " << pp << " stage " << s;
          EXPECT_EQ(dense, dense_before) << m.id << " pp " << pp << " stage " << s;
          EXPECT_NE(s, pp - 1) << m.id << " pp " << pp;
        }
        first += count;
      }
    }
  }
}

TEST(StageLayers, TheHeaviestGpuIsTheHeaviestOfAllStages) {
  // memory_per_gpu sizes only the first stage of each shape; it must still be the heaviest of
  // memory_per_stage (the earliest of equals), with micro-batches in flight limited or not.
  const Catalog& c = shipped_catalog();
  int checked = 0;
  for (const char* id : {"llama-3.1-405b", "deepseek-v3", "gpt3-175b", "mixtral-8x7b"}) {
    const Model m = *c.model(id);
    for (int64_t pp : {1, 2, 3, 5, 7, 16, 31}) {
      for (int64_t micro_batches : {0, 2, 64}) {
        MemoryJob job = megatron_job(1, pp, 1, Recompute::kSelective, false);
        job.micro_batches = micro_batches;
        job.layout.ep = m.is_moe() ? m.moe.experts : 1;
        job.layout.dp = job.layout.ep;
        if (layout_problem(m, job)) {
          continue;
        }
        const std::vector<MemoryBreakdown> all = memory_per_stage(m, job, c.memory_params());
        const MemoryBreakdown heaviest = *std::max_element(
            all.begin(), all.end(), [](const MemoryBreakdown& a, const MemoryBreakdown& b) {
              return a.total() < b.total();
            });
        const MemoryBreakdown gpu = memory_per_gpu(m, job, c.memory_params());
        EXPECT_EQ(gpu.stage, heaviest.stage) << id << " pp " << pp;
        EXPECT_EQ(gpu.total().si(), heaviest.total().si()) << id << " pp " << pp;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 7 * 3);  // every layout above is valid
}

TEST(LayoutProblem, NamesTheReason) {
  const Model m = gpt(4096, 32, 32);
  MemoryJob job = megatron_job(3, 1, 1, Recompute::kNone, false);
  EXPECT_EQ(layout_problem(m, job), "tp 3 does not divide the 32 attention heads of gpt");
  job.layout.tp = 1;
  job.layout.pp = 33;
  EXPECT_EQ(layout_problem(m, job), "33 pipeline stages exceed the 32 layers of gpt");
  job.layout.pp = 1;
  job.precision = Precision::kInt4;
  EXPECT_EQ(layout_problem(m, job),
            "int4 weights cannot be trained; use --task qlora for 4-bit base weights");
  job.precision = Precision::kFp4;
  EXPECT_EQ(layout_problem(m, job),
            "fp4 training (NVFP4 recipes, with their 16-bit layers and scaling) is not modelled; "
            "train in fp8 or bf16");
  job.precision = Precision::kBf16;
  EXPECT_EQ(layout_problem(m, job), std::nullopt);
}

TEST(Precisions, ReadInAnyCaseAndByTheNamesEnginesUse) {
  // Published results write "FP8", "BF16"; quantised checkpoints are named by their weights and
  // activations (W4A16: AWQ and GPTQ, gpuplan's int4; W8A8: int8) or their format (NVFP4).
  EXPECT_EQ(*parse_precision("FP8"), Precision::kFp8);
  EXPECT_EQ(*parse_precision("Bf16"), Precision::kBf16);
  EXPECT_EQ(*parse_precision("W4A16"), Precision::kInt4);
  EXPECT_EQ(*parse_precision("w8a8"), Precision::kInt8);
  EXPECT_EQ(*parse_precision("NVFP4"), Precision::kFp4);
  Result<Precision> bad = parse_precision("FP6");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().what, "unknown precision 'FP6'");
}

TEST(Precisions, NvFp4StoresHalfAByteAndABlockScalePerSixteen) {
  // NVFP4: a 4-bit E2M1 value per element, one E4M3 byte per block of 16: 0.5 + 1/16 bytes.
  Result<Precision> fp4 = parse_precision("fp4");
  ASSERT_TRUE(fp4.has_value());
  EXPECT_EQ(precision_name(*fp4), "fp4");
  EXPECT_DOUBLE_EQ(precision_bytes(*fp4), 0.5625);
  EXPECT_DOUBLE_EQ(quantized_weight_bytes(*fp4), 0.5625);
  // One KV default for fit, serve and plan: fp4 weights come with an fp8 cache, fp8 and fp16
  // keep theirs, the others (bf16, fp32, int8, int4) bf16.
  EXPECT_EQ(default_kv_precision(Precision::kFp4), Precision::kFp8);
  EXPECT_EQ(default_kv_precision(Precision::kFp8), Precision::kFp8);
  EXPECT_EQ(default_kv_precision(Precision::kFp16), Precision::kFp16);
  for (Precision p : {Precision::kBf16, Precision::kFp32, Precision::kInt8, Precision::kInt4}) {
    EXPECT_EQ(default_kv_precision(p), Precision::kBf16) << precision_name(p);
  }
}

// Inference with no precision given takes the checkpoint's published format. gpt-oss-120b:
// 114,701,598,720 routed-expert parameters (36 layers x 128 experts x (3 x 2,880 x 2,880 + 8,640
// biases)) at MXFP4's 0.53125 bytes, the other 2,127,557,952 (attention, router, norms,
// embeddings and head) at 2 bytes: 65,190,340,224 B = 60.71 GiB, as OpenAI's model card gives
// the checkpoint (arXiv 2508.10925, Table 1: 60.8 GiB; gpt-oss-20b 12.8 GiB).
constexpr KvDefault kTrt = KvDefault::kFollowsWeights;  // TensorRT-LLM's rule

TEST(Inference, WeightsAsPublishedUnlessAPrecisionIsGiven) {
  const Catalog& c = shipped_catalog();
  const Model oss = *c.model("gpt-oss-120b");
  const WeightChoice published =
      choose_weights(oss, Task::kInfer, std::nullopt, std::nullopt, kTrt);
  EXPECT_EQ(published.precision, Precision::kFp4);
  EXPECT_TRUE(published.as_released);
  EXPECT_EQ(published.kv_precision, Precision::kBf16);  // engines' "auto": the model's 16 bits
  MemoryJob job;
  job.task = Task::kInfer;
  job.precision = published.precision;
  job.as_released = published.as_released;
  const double weights = memory_per_gpu(oss, job, kNoOverhead).weights.si();
  EXPECT_DOUBLE_EQ(weights, 114701598720.0 * 0.53125 + 2127557952.0 * 2);
  EXPECT_NEAR(weights / kGiB, 60.8, 0.1);
  EXPECT_EQ(weights_name(oss, job.precision, true).en, "published mxfp4 experts, bf16 attention");

  const Model small = *c.model("gpt-oss-20b");
  EXPECT_NEAR(memory_per_gpu(small, job, kNoOverhead).weights.si() / kGiB, 12.8, 0.1);

  // The published format's own class names it ("mxfp4" reads as the fp4 class); another
  // precision given wins, with its own KV default; training ignores the published format.
  const WeightChoice named =
      choose_weights(oss, Task::kInfer, *parse_precision("MXFP4"), std::nullopt, kTrt);
  EXPECT_TRUE(named.as_released);
  EXPECT_EQ(named.kv_precision, Precision::kBf16);
  const WeightChoice given = choose_weights(oss, Task::kInfer, Precision::kFp8, std::nullopt, kTrt);
  EXPECT_EQ(given.precision, Precision::kFp8);
  EXPECT_FALSE(given.as_released);
  EXPECT_EQ(given.kv_precision, Precision::kFp8);
  const WeightChoice train = choose_weights(oss, Task::kTrain, std::nullopt, std::nullopt, kTrt);
  EXPECT_EQ(train.precision, Precision::kBf16);
  EXPECT_FALSE(train.as_released);
  const WeightChoice dense =
      choose_weights(*c.model("llama-3.1-8b"), Task::kInfer, std::nullopt, Precision::kFp8, kTrt);
  EXPECT_EQ(dense.precision, Precision::kBf16);
  EXPECT_EQ(dense.kv_precision, Precision::kFp8);
  // With no KV cache named, the engine's: fp8 weights bring an fp8 cache in TensorRT-LLM
  // (default_kv_precision) and keep the model's 16 bits in vLLM ("auto"), fp16 with fp16.
  const Model llama = *c.model("llama-3.1-8b");
  EXPECT_EQ(choose_weights(llama, Task::kInfer, Precision::kFp8, std::nullopt, kTrt).kv_precision,
            Precision::kFp8);
  EXPECT_EQ(
      choose_weights(llama, Task::kInfer, Precision::kFp8, std::nullopt, KvDefault::kModelType)
          .kv_precision,
      Precision::kBf16);
  EXPECT_EQ(
      choose_weights(llama, Task::kInfer, Precision::kFp16, std::nullopt, KvDefault::kModelType)
          .kv_precision,
      Precision::kFp16);
  // A checkpoint that names its KV format (Model Optimizer's kv_cache_quant_algo FP8) keeps it
  // where the engine's cache follows the checkpoint (TensorRT-LLM), not under vLLM's "auto".
  Result<Model> fp4 = parse_model_config(
      R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100,)"
      R"( "n_positions": 64, "quantization_config": {"quant_method": "modelopt",)"
      R"( "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}})",
      "cfg.json", "x");
  ASSERT_TRUE(fp4.has_value()) << fp4.error().message();
  const WeightChoice trt = choose_weights(*fp4, Task::kInfer, std::nullopt, std::nullopt, kTrt);
  EXPECT_TRUE(trt.as_released);
  EXPECT_EQ(trt.precision, Precision::kFp4);
  EXPECT_EQ(trt.kv_precision, Precision::kFp8);
  EXPECT_EQ(choose_weights(*fp4, Task::kInfer, std::nullopt, std::nullopt, KvDefault::kModelType)
                .kv_precision,
            Precision::kBf16);
  // The shipped engines say which they keep (data/engines/).
  EXPECT_EQ((*c.engine("tensorrt-llm"))->kv_cache, KvDefault::kFollowsWeights);
  for (const char* id : {"vllm", "sglang", "tgi", "lmdeploy"}) {
    EXPECT_EQ((*c.engine(id))->kv_cache, KvDefault::kModelType) << id;
  }
}

TEST(Inference, KvCacheScalesWithBatchAndContextAndShardsOverTp) {
  // KV per GPU = batch x context x 2 x layers x (kv_heads / tp) x head_dim x bytes.
  const Model m = gpt(4096, 32, 32);
  MemoryJob job;
  job.task = Task::kInfer;
  job.batch = 4;
  job.context = 1000;
  const double expected = 4.0 * 1000 * 2 * 32 * 32 * 128 * 2;
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, job, kNoOverhead).kv_cache.si(), expected);
  job.layout.tp = 4;
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, job, kNoOverhead).kv_cache.si(), expected / 4);
}

TEST(Inference, SlidingWindowLayersKeepOnlyTheirWindow) {
  // Gemma 2 27B (data/models/gemma-2-27b.json): 23 of its 46 layers attend to the last 4,096
  // tokens. At its full 8,192-token context they hold half as much: (23 x 8192 + 23 x 4096) /
  // (46 x 8192) = 0.75 of full attention's cache; within the window, all of it.
  const Model gemma = *shipped_catalog().model("gemma-2-27b");
  ASSERT_EQ(gemma.window.layers, 23);
  Model full = gemma;
  full.window = {};
  MemoryJob job;
  job.task = Task::kInfer;
  job.batch = 2;
  job.context = 8192;
  const double windowed = memory_per_gpu(gemma, job, kNoOverhead).kv_cache.si();
  EXPECT_DOUBLE_EQ(windowed, 0.75 * memory_per_gpu(full, job, kNoOverhead).kv_cache.si());
  job.context = 4096;
  EXPECT_DOUBLE_EQ(memory_per_gpu(gemma, job, kNoOverhead).kv_cache.si(),
                   memory_per_gpu(full, job, kNoOverhead).kv_cache.si());
}

}  // namespace
}  // namespace gpuplan
