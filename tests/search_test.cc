#include "gpuplan/search.h"

#include <gtest/gtest.h>

#include "gpuplan/catalog.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_ = &shipped_catalog();
    cluster_.gpu = *catalog_->gpu("h100-sxm");
    cluster_.gpus = 256;
    cluster_.gpus_per_node = 8;
    cluster_.scale_up = *catalog_->fabric("nvlink4");
    cluster_.scale_out = *catalog_->fabric("ib-ndr-400g");
    cluster_.nics_per_node = 8;
    base_.memory.seq = 4096;
    base_.global_batch = 512;
  }
  SearchResult search(const char* model, SearchOptions o) {
    return search_layouts(*catalog_->model(model), cluster_, base_, catalog_->memory_params(),
                          catalog_->train_params(), o);
  }
  const Catalog* catalog_ = nullptr;
  Cluster cluster_;
  TrainJob base_;
};

TEST_F(SearchTest, SameAnswerForAnyThreadCount) {
  SearchOptions o;
  o.top = 8;
  o.threads = 1;
  const SearchResult one = search("llama-3.1-70b", o);
  for (int threads : {2, 3, 5}) {
    o.threads = threads;
    const SearchResult many = search("llama-3.1-70b", o);
    EXPECT_EQ(many.space, one.space);
    EXPECT_EQ(many.evaluated, one.evaluated);
    ASSERT_EQ(many.top.size(), one.top.size());
    for (size_t i = 0; i < one.top.size(); ++i) {
      EXPECT_EQ(many.top[i].step.total().si(), one.top[i].step.total().si()) << threads << " " << i;
      EXPECT_FALSE(better_layout(many.top[i], one.top[i]) ||
                   better_layout(one.top[i], many.top[i]));
    }
  }
}

TEST_F(SearchTest, RanksFeasibleLayoutsFastestFirst) {
  SearchOptions o;
  o.top = 10;
  o.threads = 2;
  const SearchResult r = search("llama-3.1-70b", o);
  ASSERT_FALSE(r.top.empty()) << r.reason;
  EXPECT_GE(r.space, r.evaluated);
  for (size_t i = 0; i < r.top.size(); ++i) {
    EXPECT_TRUE(r.top[i].feasible);
    EXPECT_TRUE(r.top[i].fits_memory);
    EXPECT_LE(r.top[i].job.memory.layout.tp, 8);  // inside one NVLink domain
    if (i > 0) {
      EXPECT_FALSE(better_layout(r.top[i], r.top[i - 1])) << i;
    }
    EXPECT_TRUE(r.top[i].caveats.empty()) << i;  // a dense model: nothing known missing
  }
  // A mixture of experts: every ranked layout carries what the model leaves out for it.
  o.top = 3;
  const SearchResult moe = search("qwen3-30b-a3b", o);
  ASSERT_FALSE(moe.top.empty()) << moe.reason;
  for (const TrainEstimate& e : moe.top) {
    ASSERT_EQ(e.caveats.size(), 1U);
    EXPECT_EQ(e.caveats[0].en, training_caveats(*catalog_->model("qwen3-30b-a3b"), *cluster_.gpu,
                                                e.job, catalog_->train_params())[0]
                                   .en);
  }
}

TEST_F(SearchTest, OffersOnlyWhatTheFrameworkRanThatYear) {
  // Llama 3.1 8B at 65,536 tokens per sequence on 256 H100: with today's Megatron-LM the
  // fastest layouts split the sequence (context parallelism); Megatron-LM as of 2022 had none
  // (data/frameworks/megatron-lm.toml: context parallelism from 2023), so none of its layouts
  // may, and its sequence parallelism (from 2022) stays on offer.
  base_.memory.seq = 65536;
  base_.global_batch = 64;
  SearchOptions o;
  o.top = 5;
  o.threads = 2;
  apply_software(base_, *catalog_->software("megatron-lm@2024"));
  const SearchResult today = search("llama-3.1-8b", o);
  ASSERT_FALSE(today.top.empty()) << today.reason;
  EXPECT_GT(today.top[0].job.memory.layout.cp, 1);
  apply_software(base_, *catalog_->software("megatron-lm@2022"));
  const SearchResult old = search("llama-3.1-8b", o);
  ASSERT_FALSE(old.top.empty()) << old.reason;
  for (const TrainEstimate& e : old.top) {
    EXPECT_EQ(e.job.memory.layout.cp, 1);
  }
}

TEST_F(SearchTest, TheBestIsAtLeastAsFastAsAHandPickedLayout) {
  // Megatron's usual choice for 70B on 256 H100: tp 8, pp 4, dp 8, micro-batch 1, SP.
  TrainJob hand = base_;
  hand.memory.micro_batch = 1;
  hand.memory.layout = Parallelism{
      .tp = 8, .pp = 4, .dp = 8, .virtual_stages = 1, .sequence_parallel = true, .zero = 1};
  const TrainEstimate e = estimate_training(*catalog_->model("llama-3.1-70b"), cluster_, hand,
                                            catalog_->memory_params(), catalog_->train_params());
  ASSERT_TRUE(e.feasible && e.fits_memory) << e.reason;
  SearchOptions o;
  o.threads = 2;
  const SearchResult r = search("llama-3.1-70b", o);
  ASSERT_FALSE(r.top.empty());
  EXPECT_LE(r.top.front().step.total().si(), e.step.total().si());
}

TEST_F(SearchTest, FixedKnobsStayFixed) {
  SearchOptions o;
  o.tp = 4;
  o.zero = 1;
  o.recompute = Recompute::kNone;
  o.threads = 2;
  const SearchResult r = search("llama-3.1-70b", o);
  ASSERT_FALSE(r.top.empty()) << r.reason;
  for (const TrainEstimate& e : r.top) {
    EXPECT_EQ(e.job.memory.layout.tp, 4);
    EXPECT_EQ(e.job.memory.layout.zero, 1);
    EXPECT_EQ(e.job.memory.recompute, Recompute::kNone);
  }
}

TEST_F(SearchTest, TheBoundCutsNoLayoutThatRanks) {
  // Once the ranking holds `top` layouts, the search leaves untimed every layout whose compute
  // alone is slower than the last of them. A ranking of every feasible layout (a top larger
  // than the space: the bound never applies) must begin with exactly the top 5 and the top 1
  // that the bounded searches return, for any thread count.
  cluster_.gpus = 16;
  base_.global_batch = 64;
  SearchOptions all;
  all.top = 1'000'000;
  all.threads = 1;
  const SearchResult every = search("llama-3.1-8b", all);
  ASSERT_GT(every.top.size(), 100U);
  for (int64_t top : {1, 5}) {
    for (int threads : {1, 3}) {
      SearchOptions o;
      o.top = top;
      o.threads = threads;
      const SearchResult r = search("llama-3.1-8b", o);
      EXPECT_EQ(r.evaluated, every.evaluated);
      ASSERT_EQ(r.top.size(), static_cast<size_t>(top));
      for (size_t i = 0; i < r.top.size(); ++i) {
        EXPECT_EQ(r.top[i].step.total().si(), every.top[i].step.total().si()) << top << " " << i;
        EXPECT_FALSE(better_layout(r.top[i], every.top[i]) ||
                     better_layout(every.top[i], r.top[i]));
      }
    }
  }
}

TEST_F(SearchTest, SaysWhyNothingFitsTheSameForAnyThreadCount) {
  // 405B on 8 H100 in 2 nodes of 4 with DeepSpeed's engine: no layout holds it, and layouts
  // fail for memory or for interleaving (which the engine cannot do). The reason is the last
  // rejection in the order of the outer sizes, whichever worker met it.
  cluster_.gpus = 8;
  cluster_.gpus_per_node = 4;
  base_.global_batch = 8;
  apply_software(base_, *catalog_->software("deepspeed@2021"));
  SearchOptions o;
  o.tp = 1;
  o.cp = 1;
  o.threads = 1;
  const SearchResult one = search("llama-3.1-405b", o);
  ASSERT_TRUE(one.top.empty());
  // The last outer sizes, pp 8, end on 8 micro-batches of one sequence at 15 virtual stages.
  EXPECT_EQ(one.reason, "DeepSpeed's pipeline engine does not interleave (virtual stages 1)");
  for (int threads : {2, 3, 7}) {
    o.threads = threads;
    const SearchResult many = search("llama-3.1-405b", o);
    EXPECT_EQ(many.reason, one.reason) << threads;
    EXPECT_EQ(many.why, one.why) << threads;
  }
}

TEST_F(SearchTest, SaysWhyNothingFits) {
  // 405B on 8 GPUs: 18 bytes per parameter is 7.3 TB, far beyond 8 x 80 GB.
  cluster_.gpus = 8;
  base_.global_batch = 8;
  SearchOptions o;
  o.threads = 2;
  const SearchResult r = search("llama-3.1-405b", o);
  EXPECT_TRUE(r.top.empty());
  EXPECT_EQ(r.reason, "does not fit in memory");
}

}  // namespace
}  // namespace gpuplan
