#include "gpuplan/training.h"

#include <gtest/gtest.h>

#include "gpuplan/catalog.h"
#include "gpuplan/model_loader.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

class TrainingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { catalog_ = &shipped_catalog(); }

  // A DGX-A100 cluster of `gpus`.
  static Cluster a100(int64_t gpus, const char* scale_up = "nvlink3") {
    Cluster c;
    c.gpu = *catalog_->gpu("a100-sxm-80gb");
    c.gpus = gpus;
    c.gpus_per_node = 8;
    c.scale_up = *catalog_->fabric(scale_up);
    c.scale_out = *catalog_->fabric("ib-hdr-200g");
    c.nics_per_node = 8;
    return c;
  }
  static TrainJob job(int64_t tp, int64_t pp, int64_t dp, int64_t mb, int64_t global) {
    TrainJob j;
    j.memory.task = Task::kTrain;
    j.memory.seq = 2048;
    j.memory.micro_batch = mb;
    j.memory.layout = Parallelism{tp, pp, dp, 1, tp > 1, 0};
    j.global_batch = global;
    return j;
  }
  static TrainEstimate run(const Model& m, const Cluster& c, const TrainJob& j) {
    return estimate_training(m, c, j, catalog_->memory_params(), catalog_->train_params());
  }
  static Model model(const char* id) { return *catalog_->model(id); }
  static const Catalog* catalog_;
};
const Catalog* TrainingTest::catalog_ = nullptr;

TEST_F(TrainingTest, OneF1BBubbleIsPMinusOneMicroBatchTimes) {
  // Narayanan et al. 2021: the bubble is (p - 1) micro-batch times, i.e. (p-1)/m of the
  // pipeline's busy time; interleaving v chunks divides it by v.
  const Model m = model("llama-2-13b");
  const TrainEstimate e = run(m, a100(32), job(8, 4, 1, 1, 16));
  ASSERT_TRUE(e.feasible) << e.reason;
  const StepTime& s = e.step;
  const double busy = (s.compute + s.tp_comm + s.cp_comm).si();
  EXPECT_NEAR(s.bubble.si(), busy * 3.0 / 16.0, 1e-9);
  EXPECT_GT(s.pp_comm.si(), 0.0);  // stage-to-stage transfers are charged, not forgotten
  TrainJob interleaved = job(8, 4, 1, 1, 16);
  interleaved.memory.layout.virtual_stages = 2;
  const TrainEstimate v = run(m, a100(32), interleaved);
  ASSERT_TRUE(v.feasible) << v.reason;
  EXPECT_NEAR(v.step.bubble.si(), (v.step.compute + v.step.tp_comm).si() * 3.0 / 32.0, 1e-9);
}

TEST_F(TrainingTest, NoPipelineNoBubbleNoTransfers) {
  const TrainEstimate e = run(model("llama-2-7b"), a100(8), job(8, 1, 1, 1, 8));
  ASSERT_TRUE(e.feasible) << e.reason;
  EXPECT_EQ(e.step.bubble.si(), 0.0);
  EXPECT_EQ(e.step.pp_comm.si(), 0.0);
  EXPECT_GT(e.step.tp_comm.si(), 0.0);
}

TEST_F(TrainingTest, ZeroThreeGathersAreChargedOnlyToZeroThree) {
  // A trap of earlier tools: per-micro-batch weight gathers charged to every data-parallel
  // layout. With ZeRO 0-2 the DP traffic is once per step, whatever the micro-batch count;
  // with ZeRO-3 it grows with the micro-batches.
  const Model m = model("llama-2-7b");
  auto dp_traffic = [&](int64_t zero, int64_t global) {
    TrainJob j = job(1, 1, 16, 1, global);
    j.memory.layout.zero = zero;
    j.memory.recompute = Recompute::kFull;
    // No framework: nothing is overlapped, so the traffic is all exposed.
    const TrainEstimate e = run(m, a100(16), j);
    EXPECT_TRUE(e.feasible) << e.reason;
    return e.step.dp_comm.si();
  };
  for (int64_t zero : {0, 1, 2}) {
    EXPECT_DOUBLE_EQ(dp_traffic(zero, 16), dp_traffic(zero, 64)) << zero;
  }
  EXPECT_NEAR(dp_traffic(3, 64), 4 * dp_traffic(3, 16), 1e-9);
  EXPECT_GT(dp_traffic(3, 16), dp_traffic(1, 16));
}

TEST_F(TrainingTest, SelectiveRecomputeIsCountedOncePerLayer) {
  // Another trap: selective recompute counted per layer and again per stage. Here its cost is
  // exactly the attention kernels re-run once per layer: compute(selective) - compute(none)
  // equals the reported recompute, whatever the pipeline split.
  const Model m = model("llama-2-13b");
  for (int64_t pp : {1, 2, 4}) {
    TrainJob none = job(8, pp, 32 / (8 * pp), 1, 64);
    TrainJob selective = none;
    selective.memory.recompute = Recompute::kSelective;
    const TrainEstimate a = run(m, a100(32), none);
    const TrainEstimate b = run(m, a100(32), selective);
    ASSERT_TRUE(a.feasible && b.feasible) << a.reason << b.reason;
    EXPECT_NEAR((b.step.compute - a.step.compute).si(), b.step.recompute.si(), 1e-9) << pp;
    EXPECT_LT(b.step.recompute.si(), 0.1 * b.step.compute.si()) << pp;
  }
}

TEST_F(TrainingTest, DataParallelOverlapIsBoundedAndNotFree) {
  // Megatron-LM reduced gradients after the backward in 2021 and overlaps them since 2023
  // (data/frameworks/megatron-lm.toml). Overlapped, the exposed time is what does not fit under
  // the last backward plus overlap_slowdown x what does: never negative, never more than the
  // sync itself, and above zero (hidden traffic still slows the compute under it).
  const Model m = model("llama-2-7b");
  auto exposed = [&](const char* software) {
    TrainJob j = job(1, 1, 16, 1, 16);
    apply_software(j, *catalog_->software(software));
    return run(m, a100(16), j).step.dp_comm.si();
  };
  const double serial = exposed("megatron-lm@2021");
  const double hidden = exposed("megatron-lm@2023");
  EXPECT_GT(serial, 0.0);
  EXPECT_LT(hidden, serial);
  EXPECT_GE(hidden, catalog_->train_params().overlap_slowdown * serial * (1 - 1e-9));
}

TEST_F(TrainingTest, MoreBandwidthIsNeverSlower) {
  const Model m = model("llama-2-7b");
  const TrainJob j = job(1, 1, 8, 1, 64);
  const TrainEstimate nvlink = run(m, a100(8, "nvlink3"), j);
  const TrainEstimate pcie = run(m, a100(8, "pcie4"), j);
  ASSERT_TRUE(nvlink.feasible && pcie.feasible);
  EXPECT_LE(nvlink.step.total().si(), pcie.step.total().si());
}

TEST_F(TrainingTest, MoreGpusAtFixedPerGpuBatchNeverLowerThroughput) {
  // On the same fabric, doubling data parallelism at a fixed per-GPU batch never lowers the
  // total tokens per second.
  const Model m = model("llama-2-7b");
  double previous = 0;
  for (int64_t n : {8, 16, 32, 64, 128}) {
    const TrainEstimate e = run(m, a100(n), job(1, 1, n, 1, 4 * n));
    ASSERT_TRUE(e.feasible) << e.reason;
    EXPECT_GE(e.tokens_per_s, previous) << n;
    previous = e.tokens_per_s;
  }
}

TEST_F(TrainingTest, ImpossibleLayoutsAreInfeasibleWithAReason) {
  const Model m = model("llama-2-7b");
  EXPECT_EQ(run(m, a100(16), job(8, 1, 1, 1, 8)).reason,
            "tp 8 x pp 1 x dp 1 x cp 1 = 8 GPUs, not the 16 given");
  EXPECT_EQ(run(m, a100(8), job(1, 1, 8, 2, 12)).reason,
            "global batch 12 is not a multiple of dp 8 x micro-batch 2");
  EXPECT_EQ(run(m, a100(8), job(3, 1, 1, 1, 8)).feasible, false);
  TrainJob stages = job(1, 40, 1, 1, 40);
  Cluster forty = a100(40);
  EXPECT_EQ(run(m, forty, stages).reason, "40 pipeline stages exceed the 32 layers of llama-2-7b");
}

TEST_F(TrainingTest, UnevenStagesAreAcceptedAndTheFullestSetsThePace) {
  // Layers need not divide into stages (Llama 3 405B: 126 on 16). 31 layers on 4 stages run
  // 7/8/8/8: the last stage holds 8 layers and the head, as with 32 layers, so the pace is the
  // same.
  const Model m = model("llama-2-7b");  // 32 layers
  const TrainEstimate even = run(m, a100(32), job(8, 4, 1, 1, 16));
  const Model shorter = *parse_model_config(
      R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 31,
          "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000})",
      "test", "llama-31");
  const TrainEstimate uneven = run(shorter, a100(32), job(8, 4, 1, 1, 16));
  ASSERT_TRUE(even.feasible && uneven.feasible);
  EXPECT_NEAR(uneven.step.compute.si(), even.step.compute.si(), 1e-12);
}

TEST_F(TrainingTest, ExpertParallelismSplitsExpertsAndAddsAllToAlls) {
  // Mixtral 8x7B on 64 GPUs, tp 2 pp 4 dp 8: with ep 8 each GPU holds 1 of the 8 experts of its
  // layers (the routed experts are 32 x 8 x 176,160,768 = 45.1 B of the 46.7 B), and every MoE
  // layer adds dispatch and combine all-to-alls forward and backward.
  const Model m = model("mixtral-8x7b");
  TrainJob j = job(2, 4, 8, 1, 64);
  j.memory.layout.zero = 1;
  Cluster c = a100(64);
  const TrainEstimate one = run(m, c, j);
  j.memory.layout.ep = 8;
  const TrainEstimate eight = run(m, c, j);
  ASSERT_TRUE(one.feasible && eight.feasible) << one.reason << eight.reason;
  const double experts_per_gpu = 8.0 * 176'160'768 / 2;  // one stage of 8 layers, tp 2
  EXPECT_NEAR(one.memory.expert_parameters, 8 * experts_per_gpu, 1.0);
  EXPECT_NEAR(eight.memory.expert_parameters, experts_per_gpu, 1.0);
  EXPECT_GT(eight.step.tp_comm.si(), one.step.tp_comm.si());
}

TEST_F(TrainingTest, ModelFlopsFollowSixNPlusAttention) {
  // 6 x (layer matmul weights + output head) + 6 l s a d per token.
  const Model m = model("llama-2-7b");
  const double matmul = 32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008) + 32000.0 * 4096;
  EXPECT_DOUBLE_EQ(model_flops_per_token(m, 2048), 6 * matmul + 6.0 * 32 * 2048 * 4096);
}

}  // namespace
}  // namespace gpuplan
