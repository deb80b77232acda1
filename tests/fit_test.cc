#include "gpuplan/fit.h"

#include <gtest/gtest.h>

#include "gpuplan/catalog.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

class FitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_ = &shipped_catalog();
    model_ = *catalog_->model("llama-3.1-70b");
    h200_ = *catalog_->gpu("h200-sxm");
  }
  const Catalog* catalog_ = nullptr;
  Model model_;
  const Gpu* h200_ = nullptr;
};

TEST_F(FitTest, Llama70bWeightsFillAnH200) {
  // 70,553,706,496 parameters x 2 bytes (bf16) = 141.1 GB = 131.4 GiB of weights, against the
  // 143,771 MiB = 140.4 GiB the driver reports.
  MemoryJob job;
  job.task = Task::kInfer;
  job.context = 4096;
  const FitReport r = fit_on_gpu(model_, job, *h200_, catalog_->memory_params());
  EXPECT_DOUBLE_EQ(r.memory.weights.si(), 70'553'706'496.0 * 2);
  EXPECT_DOUBLE_EQ(r.verdict.usable.si(), 143771.0 * 1048576);
  ASSERT_TRUE(r.kv.has_value());
  // The KV room is what the weights, the working set and the runtime leave; 320 KiB a token.
  const double room = r.verdict.usable.si() - r.memory.weights.si() - r.memory.activations.si() -
                      r.memory.overhead.si();
  EXPECT_DOUBLE_EQ(r.kv->budget.si(), room);
  EXPECT_EQ(r.kv->tokens, static_cast<int64_t>(room / 327'680));
  EXPECT_TRUE(r.verdict.fits);  // a 4,096-token context fits in that room

  // fp8 linear weights halve the 68,451,041,280 matmul parameters of the 80 layers (embedding,
  // head and norms stay bf16): 68,451,041,280 bytes more room = exactly 208,896 tokens more.
  job.precision = Precision::kFp8;
  const FitReport q = fit_on_gpu(model_, job, *h200_, catalog_->memory_params());
  EXPECT_NEAR(static_cast<double>(q.kv->tokens - r.kv->tokens), 208'896.0, 1.0);
}

TEST_F(FitTest, FullContextDoesNotFitOneH200) {
  // 131,072 tokens x 327,680 bytes = 40 GiB of KV cache on top of 131.4 GiB of weights.
  MemoryJob job;
  job.task = Task::kInfer;
  job.context = 131072;
  const FitReport r = fit_on_gpu(model_, job, *h200_, catalog_->memory_params());
  EXPECT_DOUBLE_EQ(r.memory.kv_cache.si(), 131072.0 * 327680);
  EXPECT_FALSE(r.verdict.fits);
  EXPECT_LT(r.kv->max_context, 131072);
}

TEST_F(FitTest, TrainingLlama70bNeedsSixteenH200) {
  // Mixed-precision Adam keeps 18 bytes per parameter: 1,269,966,716,928 bytes for 70.55 B.
  // Spread over 8 GPUs (ZeRO-3 or tp 8) that is 158.7 GB = 147.8 GiB per GPU before any
  // activation, above the 140.4 GiB usable: 8 H200 (1,128 GB as marketed) cannot train it.
  // 16 can (tp 8 pp 2).
  MemoryJob job;
  job.task = Task::kTrain;
  job.seq = 4096;
  const FitReport one = fit_on_gpu(model_, job, *h200_, catalog_->memory_params());
  const MemoryBreakdown& m = one.memory;
  EXPECT_DOUBLE_EQ((m.weights + m.gradients + m.optimizer).si(), 18.0 * 70'553'706'496);
  EXPECT_FALSE(one.verdict.fits);

  const SmallestFit s = smallest_fit(model_, job, *h200_, catalog_->memory_params(), FitSearch{});
  ASSERT_TRUE(s.found) << s.reason.en;
  EXPECT_EQ(s.gpus, 16);
  EXPECT_TRUE(s.report.verdict.fits);
  EXPECT_EQ(s.job.layout.gpus(), 16);
}

TEST_F(FitTest, SearchReportsWhyNothingFits) {
  // A micro-batch of 4096 sequences of 4096 tokens cannot fit on any L4 count: the logits alone
  // of one micro-batch on the last stage are 4 x 4096 x 4096 x 128256 / 8 bytes = 1 TB.
  MemoryJob job;
  job.task = Task::kTrain;
  job.micro_batch = 4096;
  FitSearch search;
  search.max_gpus = 64;
  const SmallestFit s =
      smallest_fit(model_, job, **catalog_->gpu("l4"), catalog_->memory_params(), search);
  EXPECT_FALSE(s.found);
  EXPECT_NE(s.reason.en.find("no layout of up to 64 x l4 fits"), std::string::npos) << s.reason.en;
  EXPECT_NE(s.reason.pt.find("nenhum layout de até 64 x l4 cabe"), std::string::npos)
      << s.reason.pt;
}

TEST_F(FitTest, TheFitAnswerSizesEveryOfferFromItsGpusSmallestFit) {
  // Serving 70B at its full context (131.4 GiB of weights + 40 GiB of KV cache, above) needs 2
  // H200 (2 x 140.4 GiB): one HGX node of 8 holds it; one 15 GiB T4 (aws-g4dn.xlarge, one GPU,
  // one node) cannot.
  FitJob j;
  j.memory.task = Task::kInfer;
  j.memory.context = 131072;
  j.gpu = h200_;
  j.offer = *catalog_->offer("eveo-hgx-8xh200");
  const Result<FitAnswer> a = fit(model_, j, *catalog_);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  ASSERT_TRUE(a->on_gpu && a->fp8 && a->on_offer);
  EXPECT_FALSE(a->on_gpu->verdict.fits);
  EXPECT_TRUE(a->on_offer->found);
  EXPECT_EQ(a->on_offer->gpus, 2);
  ASSERT_EQ(a->smallest.size(), catalog_->gpus().size());
  ASSERT_EQ(a->offers.size(), catalog_->offers().size());
  for (const OfferFit& o : a->offers) {
    if (o.offer->id == "eveo-hgx-8xh200") {
      EXPECT_TRUE(o.holds);
      EXPECT_EQ(o.nodes, 1);
      EXPECT_EQ(o.gpus_needed, 2);
    }
    if (o.offer->id == "aws-g4dn.xlarge") {
      EXPECT_FALSE(o.holds);
      EXPECT_GT(o.gpus_needed, 1);  // T4s do hold it, but more than the offer's one
    }
  }
}

TEST_F(FitTest, TheSearchTriesOnlyLayoutsTheFrameworkRanThatYear) {
  // Training Llama 3.1 70B on H200 (16 GPUs, tp 8, as above): with today's Megatron-LM the fit
  // keeps sequence parallelism on beside tp 8; Megatron-LM as of 2021 had none (from 2022,
  // data/frameworks/megatron-lm.toml), nor ZeRO or selective recompute, so its fit uses none.
  MemoryJob job;
  job.task = Task::kTrain;
  job.seq = 4096;
  FitSearch search;
  search.software = *catalog_->software("megatron-lm");
  const SmallestFit today = smallest_fit(model_, job, *h200_, catalog_->memory_params(), search);
  ASSERT_TRUE(today.found) << today.reason.en;
  EXPECT_TRUE(today.job.layout.sequence_parallel);
  search.software = *catalog_->software("megatron-lm@2021");
  apply_software(job, search.software);
  const SmallestFit old = smallest_fit(model_, job, *h200_, catalog_->memory_params(), search);
  ASSERT_TRUE(old.found) << old.reason.en;
  EXPECT_FALSE(old.job.layout.sequence_parallel);
  EXPECT_EQ(old.job.layout.zero, 0);
  EXPECT_NE(old.job.recompute, Recompute::kSelective);
  // A layout given by hand that the software did not have is an error at "layout".
  FitJob j;
  j.memory = job;
  j.memory.layout.dp = 8;
  j.memory.layout.zero = 2;
  j.search = search;
  const Result<FitAnswer> a = fit(model_, j, *catalog_);
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().where, "layout");
  EXPECT_EQ(a.error().what, "megatron-lm as of 2021 has no ZeRO-2 (it came in 2025)");
}

TEST_F(FitTest, AnImpossibleLayoutIsAnErrorAtLayout) {
  FitJob j;
  j.memory.task = Task::kInfer;
  j.memory.layout.tp = 3;  // does not divide 64 heads
  const Result<FitAnswer> a = fit(model_, j, *catalog_);
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().where, "layout");
}

}  // namespace
}  // namespace gpuplan
