#include "gpuplan/serve.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/gemm.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

// Llama 3.1 8B on an H100 node: 200 -> 50 tokens, a p99 time per output token of 40 ms.
ServeJob h100_job() {
  const Catalog& c = shipped_catalog();
  ServeJob j;
  j.base.gpu = *c.gpu("h100-sxm");
  j.base.scale_up = *c.fabric("nvlink4");
  j.base.gpus_per_node = 8;
  j.workload.input_tokens = 200;
  j.workload.output_tokens = 50;
  j.slo.tpot_p99 = Seconds(0.04);
  return j;
}

ServeAnswer answer(const char* model, const ServeJob& j) {
  const Catalog& c = shipped_catalog();
  return serve(*c.model(model), j, c.memory_params(), c.train_params(), c.inference_params());
}

// Llama 3.1 8B on one H100 (tp 1), no objective, loaded at `share` of that instance's offline
// ceiling (the rate its replicas complete with every request queued at once).
ServeJob loaded_tp1(double share) {
  ServeJob j = h100_job();
  j.tp = 1;
  j.slo = Slo{};
  j.simulate_load = false;
  const ServeAnswer base = answer("llama-3.1-8b", j);
  j.simulate_load = true;
  j.workload.rate_per_s = share * offline_ceiling(*base.best_option(), 1);
  return j;
}

TEST(ServeTest, SaysWhereTheServingFitSawNoResultOnTheGpusArchitecture) {
  // data/params/serving-fit.toml was fitted to the shared serving rows, which ran on H100, H200
  // (hopper) and A100 (ampere) GPUs only: nothing to say on those, a note on a B200
  // (blackwell) and an MI300X (cdna3), and nothing where no architectures are listed.
  const Catalog& c = shipped_catalog();
  const InferenceParams& ip = c.inference_params();
  EXPECT_EQ(ip.fitted_architectures, (std::vector<std::string>{"ampere", "hopper"}));
  EXPECT_TRUE(serving_fit_note(**c.gpu("h100-sxm"), ip).empty());
  EXPECT_TRUE(serving_fit_note(**c.gpu("a100-sxm-80gb"), ip).empty());
  const Text b200 = serving_fit_note(**c.gpu("b200"), ip);
  EXPECT_EQ(b200.en,
            "b200: the serving model's host times and compute and streaming shares were fitted "
            "to published results on ampere and hopper GPUs only (data/params/serving-fit.toml); "
            "on blackwell they stand in unchecked, and docs/VALIDATION.md shows how far off "
            "held-out results on such GPUs came out");
  EXPECT_NE(b200.pt.find("só em GPUs ampere e hopper"), std::string::npos) << b200.pt;
  EXPECT_NE(serving_fit_note(**c.gpu("mi300x"), ip).en.find("on cdna3"), std::string::npos);
  InferenceParams none = ip;
  none.fitted_architectures.clear();
  EXPECT_TRUE(serving_fit_note(**c.gpu("b200"), none).empty());
}

TEST(ServeTest, ServingCaveatsAreTheEstimatedRatesThenTheFitsArchitecture) {
  // An H100 SXM's rates are all measured and its architecture was fitted: nothing. A B200 with
  // NVFP4 weights leans on its estimated fp4 GEMM share (data/gpus/b200.toml), then on a serving
  // fit that saw no blackwell result.
  const Catalog& c = shipped_catalog();
  const InferenceParams& ip = c.inference_params();
  EXPECT_TRUE(serving_caveats(**c.gpu("h100-sxm"), Precision::kFp8, ip).empty());
  const Gpu& b200 = **c.gpu("b200");
  const std::vector<Text> caveats = serving_caveats(b200, Precision::kFp4, ip);
  ASSERT_EQ(caveats.size(), 2U);
  EXPECT_EQ(caveats[0].en, estimated_rates_note(b200, {"fp4 GEMM"}).en);
  EXPECT_EQ(caveats[1].en, serving_fit_note(b200, ip).en);
}

TEST(ServeTest, TriesPowersOfTwoUpToTheNodeAndPicksTheMostPerGpu) {
  ServeJob j = h100_job();
  j.workload.users = 50;
  const ServeAnswer a = answer("llama-3.1-8b", j);
  ASSERT_EQ(a.options.size(), 4U);  // tp 1, 2, 4, 8 within the 8-GPU NVLink node
  for (size_t i = 0; i < a.options.size(); ++i) {
    EXPECT_EQ(a.options[i].tp, int64_t{1} << i);
    EXPECT_EQ(a.options[i].pp, 1);
  }
  ASSERT_NE(a.best_option(), nullptr);
  for (const ServeOption& o : a.options) {
    if (o.serves()) {
      EXPECT_LE(o.per_gpu, a.best_option()->per_gpu) << "tp " << o.tp;
    }
  }
  ASSERT_TRUE(a.run.has_value());
  // Settling, the closed loop's runs start at SteadyState's 2,000 requests (10 per user: 500)
  // and double: a power-of-two multiple of 2,000.
  EXPECT_EQ(a.requests % 2000, 0);
  EXPECT_EQ(std::popcount(static_cast<uint64_t>(a.requests / 2000)), 1);
  // A given count: at least 4 requests per user, 4 x 50 = 200 < the default 1000.
  j.settle_run = false;
  EXPECT_EQ(answer("llama-3.1-8b", j).requests, 1000);
  EXPECT_FALSE(a.fleet.has_value());  // no target
}

TEST(ServeTest, ALoadedRunShowsWhatASlowerEngineWouldDoToItsLatency) {
  // params/inference.toml: speed_uncertainty 0.10, every iteration 1.1 times longer. tp 1,
  // no objective: the best shape's offline ceiling C; a slower engine's is C / 1.1.
  const Catalog& c = shipped_catalog();
  ASSERT_DOUBLE_EQ(c.inference_params().speed_uncertainty, 0.10);
  // At 60 % of the ceiling both run; the slower engine's queue is longer and its latencies
  // higher, by more than 10 % in TPOT (a larger batch per slower iteration).
  ServeJob j = loaded_tp1(0.6);
  const ServeAnswer a = answer("llama-3.1-8b", j);
  ASSERT_TRUE(a.run && a.run_slower);
  EXPECT_DOUBLE_EQ(a.slower, 1.1);
  EXPECT_FALSE(a.slower_overload);
  EXPECT_GT(a.run_slower->tpot.p99, 1.1 * a.run->tpot.p99);
  EXPECT_GT(a.run_slower->ttft.p99, a.run->ttft.p99);
  // At 95 % of the ceiling the slower engines' ceiling (91 %) is below the arrivals.
  const ServeAnswer near = answer("llama-3.1-8b", loaded_tp1(0.95));
  EXPECT_FALSE(near.run_overload);
  EXPECT_TRUE(near.slower_overload);
  EXPECT_FALSE(near.run_slower.has_value());
  // Every request queued at once is no load to be sensitive at.
  j.workload.rate_per_s = 0;
  EXPECT_EQ(answer("llama-3.1-8b", j).slower, 0);
}

TEST(ServeTest, ALoadedRunRunsUntilItSettlesAsASweepsLoadDoes) {
  // At 60 % of tp 1's ceiling: the run is simulate_settled's (serving.h), the function a sweep
  // measures each load with, so it equals the sweep's point for the same rate, request for
  // request, and ends where two runs in a row agree within 3 %.
  ServeJob j = loaded_tp1(0.6);
  j.sweep = {j.workload.rate_per_s};
  const ServeAnswer a = answer("llama-3.1-8b", j);
  ASSERT_TRUE(a.run && a.settling);
  ASSERT_EQ(a.sweep.size(), 1U);
  EXPECT_TRUE(a.settling->doubling);
  EXPECT_TRUE(a.settling->settled);
  EXPECT_EQ(a.run->simulated, a.sweep[0].result.simulated);
  EXPECT_EQ(a.run->ttft.p99, a.sweep[0].result.ttft.p99);
  EXPECT_EQ(a.run->tpot.p50, a.sweep[0].result.tpot.p50);
  EXPECT_EQ(a.requests, a.run->simulated);
  // Compared with the run before it, half as long (doubling from SteadyState::first, 2,000).
  EXPECT_GE(a.settling->runs, 2);
  EXPECT_EQ(a.settling->other.simulated * 2, a.run->simulated);
  EXPECT_EQ(a.run->simulated, SteadyState{}.first << (a.settling->runs - 1));
  EXPECT_TRUE(runs_agree(*a.run, a.settling->other, SteadyState{}.tolerance));
  EXPECT_LE(a.settling->widest.apart, SteadyState{}.tolerance);
  // The job's request count plays no part.
  j.workload.requests = 5000;
  const ServeAnswer b = answer("llama-3.1-8b", j);
  EXPECT_EQ(b.run->simulated, a.run->simulated);
  EXPECT_EQ(b.run->ttft.p99, a.run->ttft.p99);
}

TEST(ServeTest, ARunOfAGivenCountIsCheckedAgainstOneTwiceAsLong) {
  // A Poisson run of exactly 1,000 requests (ServeJob::settle_run false, `--requests 1000`) at
  // 95 % of tp 1's offline ceiling: the batch is still growing (a load this near capacity takes
  // many mean service times to settle; each request here lasts about 50 decode iterations), so
  // the same load run for 2,000 requests decodes in larger batches, its median TPOT more than
  // 3 % longer, and the run is not steady.
  ServeJob j = loaded_tp1(0.95);
  j.settle_run = false;
  const ServeAnswer near = answer("llama-3.1-8b", j);
  ASSERT_TRUE(near.run && near.settling);
  EXPECT_FALSE(near.settling->doubling);
  EXPECT_EQ(near.run->simulated, 1000);
  EXPECT_EQ(near.settling->other.simulated, 2000);
  EXPECT_GT(near.settling->other.tpot.p50, near.run->tpot.p50 * (1 + kSearchRun.tolerance));
  EXPECT_FALSE(near.settling->settled);
  EXPECT_EQ(near.settling->settled,
            runs_agree(*near.run, near.settling->other, kSearchRun.tolerance));
  EXPECT_GT(near.settling->widest.apart, kSearchRun.tolerance);
  // Every request queued at once has no steady state to reach: nothing to check.
  j.workload.rate_per_s = 0;
  EXPECT_FALSE(answer("llama-3.1-8b", j).settling.has_value());
}

TEST(ServeTest, AFleetSaysWhenEvenMoreReplicasOfSlowerEnginesWouldMissIt) {
  // A p99 TPOT bound 1.2 times what one H100 gives at 0.5 requests/s (about the one-sequence
  // floor F): the fleet meets it, but engines 1.5 times slower take at least 1.5 F per token
  // however many replicas share the load, so replicas_if_slower is 0 (not even kFleetTries - 1
  // more replicas meet it).
  const Catalog& c = shipped_catalog();
  ServeJob j = h100_job();
  j.tp = 1;
  j.slo = Slo{};
  j.workload.rate_per_s = 0.5;
  const ServeAnswer light = answer("llama-3.1-8b", j);
  ASSERT_TRUE(light.run.has_value());
  j.slo.tpot_p99 = Seconds(1.2 * light.run->tpot.p99);
  j.target = 4;
  j.simulate_load = false;
  InferenceParams ip = c.inference_params();
  ip.speed_uncertainty = 0.5;
  const ServeAnswer a = serve(*c.model("llama-3.1-8b"), j, c.memory_params(), c.train_params(), ip);
  ASSERT_TRUE(a.fleet.has_value());
  EXPECT_TRUE(a.fleet->met);
  EXPECT_DOUBLE_EQ(a.fleet->slower, 1.5);
  EXPECT_EQ(a.fleet->replicas_if_slower, 0);
}

TEST(ServeTest, AFleetIsTheTargetOverWhatOneReplicaHoldsEachSimulatedAtItsShare) {
  ServeJob j = h100_job();
  j.workload.users = 1000;
  j.target = 1000;
  j.simulate_load = false;
  const ServeAnswer a = answer("llama-3.1-8b", j);
  ASSERT_NE(a.best_option(), nullptr);
  ASSERT_TRUE(a.fleet.has_value());
  EXPECT_FALSE(a.run.has_value());
  const ServeOption& b = *a.best_option();
  const ServeFleet& f = *a.fleet;
  // One replica holds b.amount users within the objective; ceil(1000 / amount) replicas, each
  // with ceil(1000 / replicas) <= amount users, meet it too (the bisection's own simulation).
  EXPECT_EQ(f.replicas, static_cast<int64_t>(std::ceil(1000 / b.amount)));
  EXPECT_EQ(f.share, std::ceil(1000.0 / static_cast<double>(f.replicas)));
  EXPECT_LE(f.share, b.amount);
  EXPECT_TRUE(f.met);
  EXPECT_EQ(f.gpus, f.replicas * b.gpus);
  EXPECT_DOUBLE_EQ(f.output_tokens_per_s,
                   f.result.output_tokens_per_s * static_cast<double>(f.replicas));
  EXPECT_TRUE(f.settled);
  // On engines 10 % slower (speed_uncertainty) the same target needs at least as many
  // replicas, grown from these; a replica's share of 1,000 users then meets the objective.
  EXPECT_DOUBLE_EQ(f.slower, 1.1);
  EXPECT_GE(f.replicas_if_slower, f.replicas);
  EXPECT_LE(f.replicas_if_slower, f.replicas + 8);
  // The searches measure steady states of their own length (kSearchRun, kFleetRun), so the
  // workload's request count (`--requests`, the run a user asked to see) moves neither the
  // capacity nor the fleet: the same at 600 and at 20,000 requests, closed loop and open.
  for (const int64_t requests : {600, 20'000}) {
    ServeJob k = j;
    k.workload.requests = requests;
    const ServeAnswer other = answer("llama-3.1-8b", k);
    ASSERT_TRUE(other.fleet.has_value());
    EXPECT_EQ(other.best_option()->amount, b.amount) << requests;
    EXPECT_EQ(other.fleet->replicas, f.replicas) << requests;
    EXPECT_EQ(other.fleet->result.tpot.p99, f.result.tpot.p99) << requests;
  }
  ServeJob open = h100_job();
  open.target = 200;  // requests/s
  open.simulate_load = false;
  std::optional<ServeFleet> first;
  for (const int64_t requests : {600, 20'000}) {
    open.workload.requests = requests;
    const ServeAnswer other = answer("llama-3.1-8b", open);
    ASSERT_TRUE(other.fleet.has_value());
    if (!first) {
      first = other.fleet;
      continue;
    }
    EXPECT_EQ(other.fleet->replicas, first->replicas);
    EXPECT_EQ(other.fleet->result.ttft.p99, first->result.ttft.p99);
  }
}

TEST(ServeTest, AModelOneNodeCannotHoldGetsWholeNodeStagesAcrossTheNetwork) {
  // Llama 3.1 405B in bf16: 405.9e9 parameters x 2 bytes = 812 GB, more than 8 x 79.6 GiB
  // (85.5 GB) = 684 GB on one H100 node, less than two nodes' 1,368 GB.
  const Catalog& c = shipped_catalog();
  ServeJob j = h100_job();
  j.workload.users = 10;
  j.slo = Slo{};
  j.base.scale_out = *c.fabric("ib-ndr-400g");
  j.base.nics_per_node = 8;
  const ServeAnswer a = answer("llama-3.1-405b", j);
  ASSERT_EQ(a.options.size(), 5U);  // tp 1, 2, 4, 8, then tp 8 pp 2
  EXPECT_EQ(a.options.back().tp, 8);
  EXPECT_EQ(a.options.back().pp, 2);
  ASSERT_NE(a.best_option(), nullptr);
  EXPECT_EQ(a.best_option()->gpus, 16);
  // Without a network between nodes there is nothing past one node.
  j.base.scale_out = nullptr;
  EXPECT_EQ(answer("llama-3.1-405b", j).options.size(), 4U);
}

TEST(ServeTest, ASweepSimulatesEachLoadAndMarksTheKneeAndTheOverload) {
  // Llama 3.1 8B on one H100 (tp 1), 200 -> 50 tokens: loads from light to past what the
  // instance completes with every request queued at once (its offline ceiling).
  ServeJob j = h100_job();
  j.tp = 1;
  j.simulate_load = false;
  j.workload.requests = 600;
  ServeAnswer probe = answer("llama-3.1-8b", j);
  ASSERT_NE(probe.best_option(), nullptr);
  const double ceiling = probe.best_option()->offline.requests_per_s;
  j.sweep = {0.05 * ceiling, 0.3 * ceiling, 0.6 * ceiling, 0.95 * ceiling, 1.5 * ceiling};
  const ServeAnswer a = answer("llama-3.1-8b", j);
  ASSERT_EQ(a.sweep.size(), 5U);
  int knees = 0;
  for (size_t i = 0; i < a.sweep.size(); ++i) {
    const SweepPoint& p = a.sweep[i];
    EXPECT_DOUBLE_EQ(p.load, j.sweep[i]);
    EXPECT_EQ(p.overload, i == 4) << i;  // only 1.5 x the ceiling exceeds it
    // Goodput counts completed requests within the objective's bounds: never more than done.
    EXPECT_LE(p.result.goodput_per_s, p.result.requests_per_s + 1e-12) << i;
    knees += p.knee ? 1 : 0;
  }
  // Light loads are served as they come. Past the ceiling the instance runs saturated: it
  // completes the ceiling's rate (the capacity's own offline runs: same requests, same seed),
  // while the queue, and TTFT and E2E with it, grows without bound.
  EXPECT_NEAR(a.sweep[0].result.goodput_per_s, a.sweep[0].result.requests_per_s, 1e-12);
  const ServingResult& over = a.sweep[4].result;
  EXPECT_DOUBLE_EQ(over.requests_per_s, ceiling);
  EXPECT_TRUE(std::isinf(over.ttft.p50) && std::isinf(over.ttft.p99)) << over.ttft.p99;
  EXPECT_TRUE(std::isinf(over.e2e.p99)) << over.e2e.p99;
  // The full batch decodes each token no faster than the lightest load's few sequences.
  EXPECT_GE(over.tpot.p50, a.sweep[0].result.tpot.p50);
  EXPECT_GT(over.mean_batch, a.sweep[0].result.mean_batch);
  EXPECT_EQ(knees, 1);
  EXPECT_FALSE(a.sweep[4].knee);
  EXPECT_FALSE(a.run.has_value());
  // Loads below the ceiling are measured in their steady state (simulate_settled), the
  // overloaded one saturated, so the job's request count moves none of them. At 95 % of the
  // ceiling the queue's swings may outlast even the longest run (SteadyState::most), and the
  // point then says it did not settle; settled or not, its run's length is the steady state's,
  // not the job's.
  j.workload.requests = 6000;
  const ServeAnswer longer = answer("llama-3.1-8b", j);
  for (size_t i = 0; i < 5; ++i) {
    if (i < 3) {
      EXPECT_TRUE(a.sweep[i].settled) << i;
    }
    EXPECT_EQ(longer.sweep[i].result.ttft.p99, a.sweep[i].result.ttft.p99) << i;
    EXPECT_EQ(longer.sweep[i].result.tpot.p99, a.sweep[i].result.tpot.p99) << i;
    EXPECT_EQ(longer.sweep[i].result.requests, a.sweep[i].result.requests) << i;
  }
  // Under a TTFT bound no request of an overloaded load counts as good: every wait outgrows it.
  j.slo.ttft_p99 = Seconds(60);
  j.sweep = {1.5 * ceiling};
  const ServeAnswer bounded = answer("llama-3.1-8b", j);
  ASSERT_EQ(bounded.sweep.size(), 1U);
  EXPECT_TRUE(bounded.sweep[0].overload);
  EXPECT_DOUBLE_EQ(bounded.sweep[0].result.requests_per_s, ceiling);
  EXPECT_EQ(bounded.sweep[0].result.goodput_per_s, 0.0);
}

TEST(ServeTest, ASweepPointSaysWhenItsQueueGrowsBelowTheCeiling) {
  // Llama 3.1 70B on 4 H100 (tp 4), 467 -> 256 tokens: an instance bound by its KV cache, whose
  // Poisson runs complete fewer requests than the offline ceiling (every request queued at
  // once). At 99 % of that ceiling the load is not an overload, yet what arrives outpaces what
  // completes: the runs never agree and the longest one's mean TTFT is more than sqrt(2) times
  // the one half its length (SettledResult::growing). The point says so; the lighter points,
  // settled, and the overloaded one, reported as saturated, do not.
  ServeJob j = h100_job();
  j.tp = 4;
  j.simulate_load = false;
  j.workload.input_tokens = 467;
  j.workload.output_tokens = 256;
  ServeAnswer probe = answer("llama-3.1-70b", j);
  ASSERT_NE(probe.best_option(), nullptr);
  const double ceiling = probe.best_option()->offline.requests_per_s;
  j.sweep = {0.3 * ceiling, 0.99 * ceiling, 1.5 * ceiling};
  const ServeAnswer a = answer("llama-3.1-70b", j);
  ASSERT_EQ(a.sweep.size(), 3U);
  EXPECT_TRUE(a.sweep[0].settled);
  EXPECT_FALSE(a.sweep[0].growing);
  const SweepPoint& near = a.sweep[1];
  EXPECT_FALSE(near.overload);
  EXPECT_FALSE(near.settled);
  EXPECT_TRUE(near.growing);
  // A growing queue: fewer requests complete than arrive.
  EXPECT_LT(near.result.requests_per_s, 0.995 * near.load);
  EXPECT_TRUE(a.sweep[2].overload);
  EXPECT_FALSE(a.sweep[2].growing);
}

TEST(ServeTest, DisaggregationSplitsTheGpusIntoPoolsAndComparesWithAggregated) {
  // Llama 3.1 8B on one 8-GPU H100 node, long prompts (2,000 -> 100 tokens), p99 TTFT 1 s and
  // TPOT 20 ms: every split of the 8 GPUs into prefill and decode pools, rate-matched, the best
  // simulated as one deployment, against the best aggregated shape's replicas on the 8 GPUs.
  ServeJob j = h100_job();
  j.workload.input_tokens = 2000;
  j.workload.output_tokens = 100;
  j.workload.requests = 400;
  j.slo.ttft_p99 = Seconds(1);
  j.slo.tpot_p99 = Seconds(0.02);
  j.simulate_load = false;
  j.disaggregate_gpus = 8;
  j.workload.rate_per_s = 2;  // a light load, run on the best split
  const ServeAnswer a = answer("llama-3.1-8b", j);
  ASSERT_TRUE(a.disaggregated.has_value());
  const Disaggregation& d = *a.disaggregated;
  EXPECT_FALSE(d.crosses_nodes);
  // Aggregated: the most (8 / gpus) x capacity over the shapes that serve.
  double most = 0;
  for (const ServeOption& o : a.options) {
    if (o.serves()) {
      most = std::max(most, static_cast<double>(8 / o.gpus) * o.amount);
    }
  }
  EXPECT_DOUBLE_EQ(d.aggregated_rate, most);
  ASSERT_GE(d.aggregated, 0);
  EXPECT_EQ(d.aggregated_replicas, 8 / a.options[static_cast<size_t>(d.aggregated)].gpus);
  // Four shapes fit (tp 1, 2, 4, 8); a pair needs both on 8 GPUs: 16 pairs less (tp 8, any) and
  // (any, tp 8) = 16 - 7 = 9 rate-matched, of which at most 5 simulated.
  EXPECT_EQ(d.tried, 9);
  EXPECT_EQ(d.simulated, 5);
  ASSERT_FALSE(d.splits.empty()) << d.reason.en;
  EXPECT_LE(d.splits.size(), 5U);
  for (size_t i = 0; i < d.splits.size(); ++i) {
    const PoolSplit& s = d.splits[i];
    EXPECT_GE(s.prefill_replicas, 1);
    EXPECT_GE(s.decode_replicas, 1);
    EXPECT_LE(s.gpus(), 8);
    EXPECT_TRUE(s.capacity.feasible);
    EXPECT_TRUE(meets_slo(s.capacity.at_max, j.slo)) << i;
    if (i > 0) {
      EXPECT_LE(s.capacity.max_rate_per_s, d.splits[i - 1].capacity.max_rate_per_s);
    }
  }
  // The job's 2 requests/s on the best split, far below its capacity: served as they come
  // (throughput = the offered rate, within the Poisson count's few per cent over ~2,000
  // requests) and within the objective.
  ASSERT_TRUE(d.at_load.has_value());
  EXPECT_LT(2.0, d.best()->capacity.max_rate_per_s);
  EXPECT_NEAR(d.at_load->requests_per_s, 2.0, 0.2);
  EXPECT_TRUE(meets_slo(*d.at_load, j.slo));
}

TEST(ServeTest, PoolsOverMoreThanOneNodeNeedTheNetworkBetweenThem) {
  ServeJob j = h100_job();
  j.simulate_load = false;
  j.disaggregate_gpus = 16;  // two nodes of 8, no scale-out fabric given
  const ServeAnswer a = answer("llama-3.1-8b", j);
  ASSERT_TRUE(a.disaggregated.has_value());
  EXPECT_TRUE(a.disaggregated->crosses_nodes);
  EXPECT_TRUE(a.disaggregated->splits.empty());
  EXPECT_EQ(a.disaggregated->why, Why::kLayout);
  EXPECT_NE(a.disaggregated->reason.en.find("--scale-out"), std::string::npos);
  // A closed loop is not split: the pools are compared on request rates.
  j.disaggregate_gpus = 8;
  j.workload.users = 10;
  const ServeAnswer users = answer("llama-3.1-8b", j);
  ASSERT_TRUE(users.disaggregated.has_value());
  EXPECT_TRUE(users.disaggregated->splits.empty());
  EXPECT_NE(users.disaggregated->reason.en.find("request rates"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
