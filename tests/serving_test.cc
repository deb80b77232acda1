#include "gpuplan/serving.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>

#include "gpuplan/catalog.h"
#include "gpuplan/dataset.h"
#include "serving_sim.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

class ServingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    catalog_ = &shipped_catalog();
    Instance in;
    in.gpu = *catalog_->gpu("h100-sxm");
    in.scale_up = *catalog_->fabric("nvlink4");
    model_ = new InferenceModel(*catalog_->model("llama-3.1-8b"), in, catalog_->memory_params(),
                                catalog_->train_params(), catalog_->inference_params());
    ASSERT_TRUE(model_->feasible()) << model_->reason().en;
  }
  static void TearDownTestSuite() { delete model_; }
  // The decode steps of one request alone after its prompt of `input` tokens: output - 1 steps
  // of a batch of one, at a context of input + g tokens (g generated so far).
  static double lone_decode(int64_t input, int64_t output) {
    double decode = 0;
    for (int64_t g = 1; g < output; ++g) {
      decode += model_->decode_step(1, static_cast<double>(input + g)).si();
    }
    return decode;
  }
  // Llama 3.1 8B on tp x pp H100s of one NVLink node.
  static InferenceModel llama_8b(int64_t tp, int64_t pp = 1) {
    Instance in;
    in.gpu = *catalog_->gpu("h100-sxm");
    in.scale_up = *catalog_->fabric("nvlink4");
    in.tp = tp;
    in.pp = pp;
    return InferenceModel(*catalog_->model("llama-3.1-8b"), in, catalog_->memory_params(),
                          catalog_->train_params(), catalog_->inference_params());
  }
  static Workload work(int64_t requests, int64_t in, int64_t out, double rate = 0) {
    Workload w;
    w.requests = requests;
    w.input_tokens = in;
    w.output_tokens = out;
    w.rate_per_s = rate;
    return w;
  }
  static const Catalog* catalog_;
  static InferenceModel* model_;
};
const Catalog* ServingTest::catalog_ = nullptr;
InferenceModel* ServingTest::model_ = nullptr;

TEST_F(ServingTest, ALoneRequestIsItsPrefillThenOneDecodeStepPerToken) {
  // One request of 1,000 prompt tokens and 50 output tokens on an idle instance: the prefill
  // iteration gives the first token; each of the other 49 is one decode step of a batch of one
  // at a context of 1,000 + g tokens (g generated so far).
  const ServingResult r = simulate_serving(*model_, work(1, 1000, 50), ServingSetup{});
  ASSERT_TRUE(r.feasible) << r.reason.en;
  const double prefill = model_->prefill_alone(1000).si();
  const double decode = lone_decode(1000, 50);
  EXPECT_NEAR(r.ttft.mean, prefill, 1e-12);
  EXPECT_NEAR(r.e2e.mean, prefill + decode, 1e-9);
  EXPECT_NEAR(r.tpot.mean, decode / 49, 1e-12);
  EXPECT_NEAR(r.output_tokens_per_s, 50 / (prefill + decode), 1e-6);
  EXPECT_EQ(r.iterations, 50);
}

TEST_F(ServingTest, ALoneRequestsBeamsEachDecodeAndHoldTheirOwnOutput) {
  // The same request with beam search of 4 (serving.h, Workload::beams): its prompt is computed
  // once, so the first token comes when it did alone; each of the 49 decode steps is a batch of
  // 4 sequences at a context of 1,000 + g tokens each; the output counted is one beam's 50.
  Workload w = work(1, 1000, 50);
  w.beams = 4;
  const ServingResult r = simulate_serving(*model_, w, ServingSetup{});
  ASSERT_TRUE(r.feasible) << r.reason.en;
  const double prefill = model_->prefill_alone(1000).si();
  double decode = 0;
  for (int64_t g = 1; g < 50; ++g) {
    decode += model_->decode_step(4, static_cast<double>(1000 + g)).si();
  }
  EXPECT_NEAR(r.ttft.mean, prefill, 1e-12);
  EXPECT_NEAR(r.e2e.mean, prefill + decode, 1e-9);
  EXPECT_NEAR(r.output_tokens_per_s, 50 / (prefill + decode), 1e-6);
  EXPECT_GT(decode, lone_decode(1000, 50));  // four sequences read four caches
  EXPECT_NEAR(lone_decode_step(*model_, w, 1000).si(), model_->decode_step(4, 1000).si(), 1e-15);
  // Its KV cache holds the prompt once and each beam's output, 1,000 + 4 x 50 = 1,200 tokens
  // against 1,050 with one beam (each plus the engine's partly filled last block): an instance
  // holds fewer such requests in that ratio.
  const double waste = static_cast<double>(model_->kv_block_waste());
  EXPECT_EQ(w.held_tokens({1000, 50}), 1200);
  EXPECT_NEAR(sequences_in_kv(*model_, w) * (1200 + waste),
              sequences_in_kv(*model_, work(1, 1000, 50)) * (1050 + waste), 1e-6);
}

TEST_F(ServingTest, MoreBeamsThanAnIterationsTokensAreRefused) {
  // Every beam of a decoding request is a token of each iteration: an engine running 48 tokens
  // an iteration cannot decode a request of 64 beams, and says so.
  MemoryParams mp = catalog_->memory_params();
  mp.inference_chunk_tokens = 48;
  Instance in;
  in.gpu = *catalog_->gpu("h100-sxm");
  in.scale_up = *catalog_->fabric("nvlink4");
  const InferenceModel narrow(*catalog_->model("llama-3.1-8b"), in, mp, catalog_->train_params(),
                              catalog_->inference_params());
  Workload w = work(10, 100, 10);
  w.beams = 64;
  const ServingResult r = simulate_serving(narrow, w, ServingSetup{});
  EXPECT_FALSE(r.feasible);
  EXPECT_EQ(r.reason.en,
            "a request's 64 beams are more than the 48 tokens an iteration of the "
            "engine runs");
  w.beams = 48;  // one request's beams fill an iteration
  EXPECT_TRUE(simulate_serving(narrow, w, ServingSetup{}).feasible);
}

TEST_F(ServingTest, BelowCapacityThroughputFollowsTheOfferedLoad) {
  // 2 requests/s of 200 -> 100 tokens, far below what one H100 serves: every request is
  // served as it comes, so the completed rate is the arrival rate. 2,000 Poisson arrivals span
  // N / rate = 1,000 s with a relative standard deviation of 1 / sqrt(N) = 2.2 %: within 3
  // of those (6.7 %) unless requests are lost or held back.
  const ServingResult r = simulate_serving(*model_, work(2000, 200, 100, 2.0), ServingSetup{});
  ASSERT_TRUE(r.feasible);
  EXPECT_NEAR(r.requests_per_s, 2.0, 0.067 * 2.0);
  // Lightly loaded, TTFT stays near the prefill of one prompt (a few steps of decoding may
  // share an iteration with it).
  EXPECT_LT(r.ttft.p50, 3 * model_->prefill_alone(200).si());
}

TEST_F(ServingTest, AboveCapacityThroughputSaturatesAtTheOfflineRate) {
  // Offered 5x what the instance can do, completions run at the offline (all queued) rate
  // while the queue grows; the two runs differ only by the ramp at the start.
  const Workload offline = work(4000, 200, 100);
  const ServingResult ceiling = simulate_serving(*model_, offline, ServingSetup{});
  const ServingResult over =
      simulate_serving(*model_, work(4000, 200, 100, 5 * ceiling.requests_per_s), ServingSetup{});
  EXPECT_NEAR(over.requests_per_s, ceiling.requests_per_s, 0.05 * ceiling.requests_per_s);
  EXPECT_GT(over.ttft.p99, 10 * model_->prefill_alone(200).si());  // queueing, not service
}

TEST_F(ServingTest, TheKvCacheAndMaxBatchBoundTheBatch) {
  // 8,000-token contexts: the KV cache holds kv_tokens / 8000 of them at once, fewer than
  // max_batch; no iteration may run more.
  const ServingResult r = simulate_serving(*model_, work(300, 7000, 1000), ServingSetup{});
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.kv_sequences, model_->kv_tokens() / 8000);
  EXPECT_LT(r.kv_sequences, catalog_->inference_params().max_batch);
  EXPECT_EQ(r.max_batch, r.kv_sequences);
  // A context longer than the whole cache can never be admitted: an answer, not a hang.
  const ServingResult never =
      simulate_serving(*model_, work(1, model_->kv_tokens(), 1), ServingSetup{});
  EXPECT_FALSE(never.feasible);
  EXPECT_NE(never.reason.en.find("more than the KV cache"), std::string::npos) << never.reason.en;
}

TEST_F(ServingTest, SlidingWindowLayersLetTheKvCacheHoldMoreRequests) {
  // The same 8B model with half its 32 layers over the last 1,024 tokens: an 8,000-token
  // context holds (16 x 8000 + 16 x 1024) / 32 = 4,512 tokens of every layer, so the cache that
  // held kv_tokens / 8000 such requests holds kv_tokens / 4512, and the batch reaches it.
  Model half = *catalog_->model("llama-3.1-8b");
  half.window = {.tokens = 1024, .layers = 16};
  Instance in;
  in.gpu = *catalog_->gpu("h100-sxm");
  in.scale_up = *catalog_->fabric("nvlink4");
  const InferenceModel windowed(half, in, catalog_->memory_params(), catalog_->train_params(),
                                catalog_->inference_params());
  ASSERT_EQ(windowed.kv_tokens(), model_->kv_tokens());  // the same memory, the same room
  const ServingResult r = simulate_serving(windowed, work(300, 7000, 1000), ServingSetup{});
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.kv_sequences, windowed.kv_tokens() / 4512);
  EXPECT_EQ(r.max_batch, r.kv_sequences);
  // Each decode step reads the cache the sequences hold: at one sequence of 8,000 tokens, the
  // KV part of the step is 4512 / 8000 of full attention's.
  const double kv_part = model_->decode_step(1, 8000).si() - model_->decode_step(1, 0).si();
  const double windowed_part = windowed.decode_step(1, 8000).si() - windowed.decode_step(1, 0).si();
  EXPECT_NEAR(windowed_part, kv_part * 4512.0 / 8000.0, 1e-12);
}

TEST_F(ServingTest, StaticBatchesPrefillTogetherAndDecodeToTheEnd) {
  // 64 sequences of 128 -> 128 tokens in one static batch: one prefill iteration of 8,192
  // tokens gives every first token, then 127 decode steps of all 64. Every request sees the
  // same TTFT; throughput is 64 x 128 tokens over the batch's time.
  ServingSetup s;
  s.batching = Batching::kStatic;
  s.static_batch = 64;
  const ServingResult r = simulate_serving(*model_, work(64, 128, 128), s);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.iterations, 128);
  EXPECT_DOUBLE_EQ(r.ttft.p50, r.ttft.max);
  EXPECT_NEAR(r.output_tokens_per_s, 64.0 * 128 / r.duration.si(), 1e-6);
}

TEST_F(ServingTest, IdenticalReplicasBehindRoundRobinDoubleTheThroughput) {
  // Offline, 2 replicas and twice the requests: round-robin gives each the same work as the
  // single instance, so the fleet finishes in the same time with twice the tokens.
  const ServingResult one = simulate_serving(*model_, work(500, 300, 200), ServingSetup{});
  ServingSetup two;
  two.replicas = 2;
  two.balancer = Balancer::kRoundRobin;
  const ServingResult both = simulate_serving(*model_, work(1000, 300, 200), two);
  EXPECT_NEAR(both.output_tokens_per_s, 2 * one.output_tokens_per_s,
              1e-9 * one.output_tokens_per_s);
}

TEST_F(ServingTest, LeastTokensWeighsTheQueuesByTheirPromptsLeastLoadedByTheirRequests) {
  // Four requests at t = 0 on 2 replicas, each answered with one token: a prompt of 1,000
  // tokens, then three of 10. Least-loaded counts requests (ties: the first replica): 1,000 and
  // 10 share replica 0, 10 and 10 replica 1. Least-tokens counts prompt tokens: the 1,000 is
  // alone on replica 0 and the three short prompts all go to replica 1 (10, 20, 30 < 1,000).
  // Each replica prefills what it holds in one iteration (30 ... 1,010 tokens are within the
  // 8,192-token budget); a prompt of c tokens adds c (c + 1) / 2 causal keys. The first token
  // ends each request, so TTFT is the length of its replica's iteration.
  Workload w = work(4, 0, 0);
  w.lengths = {{1000, 1}, {10, 1}, {10, 1}, {10, 1}};
  auto prefill = [](std::initializer_list<int64_t> prompts) {
    BatchShape b;
    for (int64_t c : prompts) {
      b.prefill_tokens += c;
      b.prefill_keys += static_cast<double>(c * (c + 1) / 2);
      ++b.logits;
    }
    return model_->iteration(b).total().si();
  };
  ServingSetup s;
  s.replicas = 2;
  s.balancer = Balancer::kLeastLoaded;
  const ServingResult requests = simulate_serving(*model_, w, s);
  EXPECT_NEAR(requests.ttft.mean, (2 * prefill({1000, 10}) + 2 * prefill({10, 10})) / 4, 1e-9);
  s.balancer = Balancer::kLeastTokens;
  const ServingResult tokens = simulate_serving(*model_, w, s);
  EXPECT_NEAR(tokens.ttft.mean, (prefill({1000}) + 3 * prefill({10, 10, 10})) / 4, 1e-9);
  EXPECT_LT(tokens.ttft.mean, requests.ttft.mean);
  // The iteration-by-iteration reference routes the same way.
  EXPECT_EQ(detail::simulate_serving_stepwise(*model_, w, s).ttft.mean, tokens.ttft.mean);
}

TEST(RunDifference, NamesTheMeasureTwoRunsDisagreeOnMost) {
  // Two runs alike but for TPOT p50 (20 against 21 ms) and throughput (1,000 against 1,010
  // tokens/s): the TPOT median is (1 ms - 0.03 ms) / 21 ms = 4.62 % apart, throughput
  // 10 / 1,010 = 0.99 %. Past a 3 % tolerance the runs disagree; within 5 % they agree.
  ServingResult a;
  a.output_tokens_per_s = 1000;
  a.ttft = {.mean = 0.05, .p50 = 0.04, .p90 = 0.08, .p99 = 0.1, .max = 0.2};
  a.tpot = {.mean = 0.02, .p50 = 0.020, .p90 = 0.025, .p99 = 0.03, .max = 0.04};
  a.e2e = {.mean = 2, .p50 = 2, .p90 = 2.5, .p99 = 3, .max = 4};
  ServingResult b = a;
  b.output_tokens_per_s = 1010;
  b.tpot.p50 = 0.021;
  const RunDifference d = widest_difference(a, b);
  EXPECT_EQ(d.measure, "TPOT p50");
  EXPECT_TRUE(d.latency);
  EXPECT_DOUBLE_EQ(d.first, 0.020);
  EXPECT_DOUBLE_EQ(d.second, 0.021);
  EXPECT_NEAR(d.apart, (0.001 - 3e-5) / 0.021, 1e-12);
  EXPECT_FALSE(runs_agree(a, b, 0.03));
  EXPECT_TRUE(runs_agree(a, b, 0.05));
  // Latencies 0.03 ms apart are equal: only throughput differs then.
  b.tpot.p50 = 0.02003;
  EXPECT_EQ(widest_difference(a, b).measure, "throughput");
  EXPECT_NEAR(widest_difference(a, b).apart, 10.0 / 1010, 1e-12);
}

TEST_F(ServingTest, SameSeedSameResultOtherSeedOtherArrivals) {
  const Workload w = work(500, 300, 100, 10.0);
  const ServingResult a = simulate_serving(*model_, w, ServingSetup{});
  const ServingResult b = simulate_serving(*model_, w, ServingSetup{});
  EXPECT_EQ(a.ttft.mean, b.ttft.mean);
  EXPECT_EQ(a.e2e.p99, b.e2e.p99);
  Workload other = w;
  other.seed = 2;
  EXPECT_NE(simulate_serving(*model_, other, ServingSetup{}).ttft.mean, a.ttft.mean);
}

TEST_F(ServingTest, CapacityIsTheHighestRateThatMeetsTheObjective) {
  Slo slo;
  slo.tpot_p99 = Seconds(0.025);
  const Capacity c = capacity_under_slo(*model_, work(600, 500, 200), ServingSetup{}, slo);
  ASSERT_TRUE(c.feasible) << c.reason.en;
  EXPECT_TRUE(meets_slo(c.at_max, slo));
  EXPECT_LE(c.max_rate_per_s, c.offline.requests_per_s);
  // The rate found holds in the steady state, however long the run (SteadyState{}: doubling
  // from 2,000 requests until two runs agree, at most 256,000).
  const Workload at = work(600, 500, 200, c.max_rate_per_s);
  EXPECT_TRUE(meets_slo(simulate_settled(*model_, at, ServingSetup{}, SteadyState{}).result, slo));
  // 5 % more load (past the bisection's 1 % resolution), run until it settles as the search's
  // runs do (kSearchRun: doubling from 1,000 requests to at most 16,000), misses it.
  Workload more = work(600, 500, 200, c.max_rate_per_s * 1.05);
  Text why;
  EXPECT_FALSE(
      meets_slo(simulate_settled(*model_, more, ServingSetup{}, kSearchRun).result, slo, &why));
  // The workload's own request count plays no part in the search.
  const Capacity longer = capacity_under_slo(*model_, work(6000, 500, 200), ServingSetup{}, slo);
  EXPECT_EQ(longer.max_rate_per_s, c.max_rate_per_s);
  EXPECT_NE(why.en.find("p99 TPOT"), std::string::npos);
  EXPECT_NE(why.pt.find("p99 TPOT de"), std::string::npos);
  // An objective below one sequence's own decode step cannot be met at any rate.
  Slo impossible;
  impossible.tpot_p99 = Seconds(model_->decode_step(1, 500).si() / 2);
  const Capacity none =
      capacity_under_slo(*model_, work(600, 500, 200), ServingSetup{}, impossible);
  EXPECT_FALSE(none.feasible);
  EXPECT_NE(none.reason.en.find("even a light load"), std::string::npos) << none.reason.en;
  EXPECT_NE(none.reason.pt.find("mesmo uma carga leve"), std::string::npos) << none.reason.pt;
}

TEST_F(ServingTest, TheCeilingIsTheSaturatedRateWithoutFillUpAndDrain) {
  // 8,000-token contexts: each engine runs what its KV cache holds, kv_tokens / 8,000 sequences
  // (TheKvCacheAndMaxBatchBoundTheBatch), and two replicas twice that.
  const Workload w = work(1, 7000, 1000);
  ServingSetup two;
  two.replicas = 2;
  const int64_t held = model_->kv_tokens() / 8000;
  EXPECT_EQ(sequences_at_once(*model_, w, ServingSetup{}), held);
  EXPECT_EQ(sequences_at_once(*model_, w, two), 2 * held);
  EXPECT_EQ(offline_requests(held), std::max<int64_t>(kSearchRun.first, 8 * held));
  // An offline run of N requests takes T(N) = fill + N / R + drain, R the saturated rate and
  // fill and drain what its start and end take beyond their share of N / R (either sign: a
  // start in step can beat the mixed steady state), so N / T(N) misses R by them, and runs of N
  // and 2N differ by N / R alone.
  // The ceiling is R measured inside one run of 2 N, N twice the sequences at once, between the
  // first tokens of its middle half's first and last request (Outcomes): the same R, within
  // 1 %, that runs of 4 N and 8 N give by their difference.
  const Workload short_prompts = work(1, 2000, 300);
  const Capacity c = capacity_under_slo(*model_, short_prompts, ServingSetup{}, Slo{});
  ASSERT_TRUE(c.feasible) << c.reason.en;
  const int64_t n = 2 * sequences_at_once(*model_, short_prompts, ServingSetup{});
  auto run = [&](int64_t requests) {
    return simulate_serving(*model_, work(requests, 2000, 300), ServingSetup{});
  };
  const ServingResult four = run(4 * n);
  const ServingResult eight = run(8 * n);
  const double later = static_cast<double>(4 * n) / (eight.duration.si() - four.duration.si());
  EXPECT_NEAR(c.offline.requests_per_s, later, 0.01 * later);
  EXPECT_EQ(c.max_rate_per_s, c.offline.requests_per_s);  // no objective: the ceiling
  // Measured whole, a run's rate N / T(N) = R / (1 + (fill + drain) R / N) nears R as N grows:
  // the run of kSearchRun.first requests is off by more than the one of 8 N.
  const double first_off = std::abs(run(kSearchRun.first).requests_per_s - later);
  const double eight_off = std::abs(eight.requests_per_s - later);
  EXPECT_GT(first_off, 2 * eight_off) << first_off << " " << eight_off << " " << later;
}

TEST_F(ServingTest, TheCeilingOfALongTailIsMeasuredWhileTheQueueLasts) {
  // Outputs drawn from a long tail (lognormal, mean 1,200, sd 900 tokens), 500-token prompts.
  // A run's drain lasts as long as the longest requests of its last batch, a matter of chance
  // here, so two runs' difference in time (what the ceiling once took) swung by +-10 % between
  // runs of 1,000 and 2,000 requests. The ceiling is now measured inside one run, from the
  // first token of its middle half's first request to that of its last, while the queue lasts.
  Workload tail = work(1, 500, 1);
  tail.output_distribution = *parametric_lengths("lognormal", 1200, 900, "test");
  const Capacity c = capacity_under_slo(*model_, tail, ServingSetup{}, Slo{});
  ASSERT_TRUE(c.feasible) << c.reason.en;
  // The window's requests are a sample of the tail, their mean output some % off 1,200; the
  // token rate is not, and the requests per second are it over the workload's mean output.
  EXPECT_NEAR(c.offline.requests_per_s * tail.mean_output(), c.offline.output_tokens_per_s,
              1e-9 * c.offline.output_tokens_per_s);
  // Against one run of 64,000 requests measured whole: N / T(N) = R / (1 + (fill + drain) R / N),
  // its fill and drain (each about one turn of the batch, ~200 requests' worth) 0.6 % of N.
  Workload longest = tail;
  longest.requests = 64'000;
  const ServingResult whole = simulate_serving(*model_, longest, ServingSetup{});
  EXPECT_NEAR(c.offline.requests_per_s, whole.requests_per_s, 0.02 * whole.requests_per_s);
  EXPECT_NEAR(c.offline.output_tokens_per_s, whole.output_tokens_per_s,
              0.02 * whole.output_tokens_per_s);
}

TEST_F(ServingTest, TheCeilingsLatenciesAreTheSaturatedMiddleOfItsLongerRun) {
  // 2,000-token prompts, outputs of 100 to 500 tokens in turn: requests end at different times.
  Workload mixed = work(1, 2000, 300);
  for (int64_t out = 100; out <= 500; out += 100) {
    mixed.lengths.push_back(RequestLength{2000, out});
  }
  const int64_t at_once = sequences_at_once(*model_, mixed, ServingSetup{});
  // The ceiling's run: eight times the sequences at once, within four search runs and
  // SteadyState's longest.
  const int64_t n = std::clamp<int64_t>(8 * at_once, 4 * kSearchRun.first, SteadyState{}.most);
  // Every request queued at once leaves no time between arrivals: warm-up and cool-down then
  // pick whose latencies count, and the throughput is that between the first tokens of the first
  // and the last measured request, a window inside the run.
  Workload whole = mixed;
  whole.requests = n;
  Workload middle = whole;
  middle.warmup = n / 4;
  middle.cooldown = n / 4;
  const ServingResult a = simulate_serving(*model_, whole, ServingSetup{});
  const ServingResult b = simulate_serving(*model_, middle, ServingSetup{});
  EXPECT_EQ(a.requests, n);
  EXPECT_EQ(b.requests, n / 2);
  EXPECT_LT(b.duration.si(), a.duration.si());
  // The window holds no fill-up and no drain (whose batch runs empty): it runs at least the
  // whole run's rate.
  EXPECT_GT(b.output_tokens_per_s, a.output_tokens_per_s);
  // The first `at_once` requests start together: all their prompts are prefilled in the first
  // iterations, each chunk stalling every sequence already decoding, so the slowest TPOTs are
  // theirs; the middle half is admitted a few at a time, as others finish.
  EXPECT_LT(b.tpot.p99, a.tpot.p99);
  // The ceiling is that middle half (Capacity::offline).
  const Capacity c = capacity_under_slo(*model_, mixed, ServingSetup{}, Slo{});
  ASSERT_TRUE(c.feasible) << c.reason.en;
  EXPECT_EQ(c.offline.requests, n / 2);
  EXPECT_EQ(c.offline.tpot.p99, b.tpot.p99);
  EXPECT_EQ(c.offline.itl_mean, b.itl_mean);
  EXPECT_EQ(c.offline.output_tokens_per_s, b.output_tokens_per_s);
  // Saturated, the engine runs about what its KV cache holds of the mean request: its mean
  // batch, the sequences decoding averaged over the window, is near that number.
  EXPECT_NEAR(c.offline.mean_batch, static_cast<double>(at_once),
              0.1 * static_cast<double>(at_once));
  EXPECT_GT(c.offline.mean_batch, a.mean_batch);  // the whole run's counts its drain
}

TEST_F(ServingTest, APrefixCacheHitSkipsThatPartOfThePrefillAndSharesItsKvCache) {
  // Half of each 2,000-token prompt is in the prefix cache: floor(0.5 x 2,000) = 1,000 tokens.
  Workload w = work(1, 2000, 50);
  w.prefix_hit = 0.5;
  EXPECT_EQ(w.cached_tokens(2000), 1000);
  // At least the last prompt token is computed: a full hit leaves one.
  Workload full = w;
  full.prefix_hit = 1.0;
  EXPECT_EQ(full.cached_tokens(2000), 1999);
  EXPECT_EQ(full.cached_tokens(1), 0);
  // A lone request prefills only the other 1,000 tokens, which attend to the cached 1,000 too:
  // its TTFT is prefill_alone(2000, 1000), and shorter than the whole prompt's.
  const ServingResult alone = simulate_serving(*model_, w, ServingSetup{});
  ASSERT_TRUE(alone.feasible) << alone.reason.en;
  const double cached_prefill = model_->prefill_alone(2000, 1000).si();
  EXPECT_NEAR(alone.ttft.mean, cached_prefill, 1e-12);
  EXPECT_LT(cached_prefill, model_->prefill_alone(2000).si());
  EXPECT_GT(cached_prefill, model_->prefill_alone(1000).si());  // attends to 2,000 keys, not 1,000
  // The KV cache keeps the shared prefix once (1,000 tokens per engine) and each request's own
  // 1,000 + 50, plus half a KV block left unused (16 tokens: TensorRT-LLM's 32-token blocks,
  // data/engines/tensorrt-llm.toml): (kv_tokens - 1,000) / 1,066 requests at once, against
  // kv_tokens / 2,066.
  const auto kv = static_cast<double>(model_->kv_tokens());
  ASSERT_EQ(model_->kv_block_waste(), 16);
  EXPECT_EQ(w.prefix_store(), 1000);
  EXPECT_NEAR(sequences_in_kv(*model_, w), (kv - 1000) / 1066, 1e-9);
  EXPECT_NEAR(sequences_in_kv(*model_, work(1, 2000, 50)), kv / 2066, 1e-9);
  // Offline, 4,000 such requests finish sooner: less prefill work and more of them at once.
  Workload many = work(4000, 2000, 50);
  const ServingResult plain = simulate_serving(*model_, many, ServingSetup{});
  many.prefix_hit = 0.5;
  const ServingResult hit = simulate_serving(*model_, many, ServingSetup{});
  EXPECT_GT(hit.requests_per_s, 1.2 * plain.requests_per_s);
  // The prefix is held once, in the shared store, and not again in the request: a request as
  // long as the whole cache (less its last block's unused half) fits with a hit as without one,
  // and one token more fits in neither.
  const int64_t room = model_->engine_kv_tokens() - model_->kv_block_waste();
  for (double h : {0.0, 0.5}) {
    Workload edge = work(1, room - 1, 1);
    edge.prefix_hit = h;
    EXPECT_TRUE(kv_too_small(*model_, edge).en.empty())
        << h << ": " << kv_too_small(*model_, edge).en;
    edge.input_tokens = room;
    EXPECT_FALSE(kv_too_small(*model_, edge).en.empty()) << h;
  }
}

TEST_F(ServingTest, AClosedLoopUserSendsTheNextRequestWhenTheLastEndsAndThinks) {
  // One user, 400 requests of 300 -> 50 tokens, thinking 2 s on average (exponential) before
  // each: every request runs alone, so the run, from the first arrival to the last completion,
  // is 400 lone requests and the 399 thinks between them, whose mean is 2 s within 3 standard
  // deviations (2 s / sqrt(399): 0.3 s); every TTFT is the prefill of one prompt.
  const ServingResult alone = simulate_serving(*model_, work(1, 300, 50), ServingSetup{});
  Workload w = work(400, 300, 50);
  w.users = 1;
  w.think_time = Seconds(2.0);
  const ServingResult r = simulate_serving(*model_, w, ServingSetup{});
  ASSERT_TRUE(r.feasible);
  const double thinking = r.duration.si() - 400 * alone.e2e.mean;
  EXPECT_NEAR(thinking / 399, 2.0, 0.3);
  EXPECT_NEAR(r.ttft.max, model_->prefill_alone(300).si(), 1e-12);
  EXPECT_EQ(r.max_batch, 1);
  // Eight users without thinking keep eight sequences in flight.
  w.users = 8;
  w.requests = 64;
  w.think_time = Seconds(0);
  EXPECT_EQ(simulate_serving(*model_, w, ServingSetup{}).max_batch, 8);
}

TEST_F(ServingTest, UserCapacityIsTheMostUsersThatMeetTheObjective) {
  // 500 -> 200 tokens and p99 TPOT <= 20 ms: the bisection's answer meets it and one more
  // user does not (unless the answer is already every sequence the instance runs at once),
  // each measured as the search measures it (kSearchRun).
  Slo slo;
  slo.tpot_p99 = Seconds(0.020);
  const UserCapacity c = users_under_slo(*model_, work(200, 500, 200), ServingSetup{}, slo);
  ASSERT_TRUE(c.feasible) << c.reason.en;
  EXPECT_TRUE(meets_slo(c.at_max, slo));
  ASSERT_LT(c.max_users, c.at_once);
  Workload more = work(200, 500, 200);
  more.users = c.max_users + 1;
  EXPECT_FALSE(meets_slo(
      simulate_serving(*model_, steady_run(more, kSearchRun.first, kSearchRun), ServingSetup{}),
      slo));
  // The workload's own request count plays no part in the search.
  EXPECT_EQ(users_under_slo(*model_, work(7000, 500, 200), ServingSetup{}, slo).max_users,
            c.max_users);
}

TEST_F(ServingTest, RequestLengthsComeFromATraceFile) {
  const std::string dir = std::string(GPUPLAN_TEST_DATA_DIR) + "/serving/";
  Result<std::vector<RequestLength>> l = load_request_lengths(dir + "lengths.csv");
  ASSERT_TRUE(l.has_value()) << l.error().message();
  ASSERT_EQ(l->size(), 2U);  // the comment and the blank line are skipped
  EXPECT_EQ((*l)[1].input, 2000);
  EXPECT_EQ((*l)[1].output, 200);
  Result<std::vector<RequestLength>> header = load_request_lengths(dir + "bad-header.csv");
  ASSERT_FALSE(header.has_value());
  EXPECT_EQ(header.error().where, dir + "bad-header.csv:1");
  Result<std::vector<RequestLength>> line = load_request_lengths(dir + "bad-line.csv");
  ASSERT_FALSE(line.has_value());
  EXPECT_EQ(line.error().message(),
            dir +
                "bad-line.csv:3: '300,x' is not two token counts; each line is "
                "input_tokens,output_tokens, both positive integers");
  // Ten requests take the two lengths in turn: 5 x 20 + 5 x 200 output tokens.
  Workload w = work(10, 0, 0);
  w.lengths = *l;
  const ServingResult r = simulate_serving(*model_, w, ServingSetup{});
  ASSERT_TRUE(r.feasible) << r.reason.en;
  EXPECT_NEAR(r.output_tokens_per_s * r.duration.si(), 5 * 20 + 5 * 200, 1e-6);
  EXPECT_DOUBLE_EQ(w.mean_context(), (120 + 2200) / 2.0);
  EXPECT_EQ(w.max_context(), 2200);
}

TEST_F(ServingTest, APipelineKeepsOneBatchInFlightPerStage) {
  // Two requests arriving together on a tp 1 x pp 2 instance go to the two batches in flight,
  // one each, so each runs as a lone request would; on pp 1 they share one batch of two.
  const InferenceModel two = llama_8b(1, 2);
  ASSERT_TRUE(two.feasible()) << two.reason().en;
  const ServingResult lone = simulate_serving(two, work(1, 400, 30), ServingSetup{});
  const ServingResult pair = simulate_serving(two, work(2, 400, 30), ServingSetup{});
  EXPECT_NEAR(pair.e2e.max, lone.e2e.mean, 1e-12);
  EXPECT_EQ(pair.max_batch, 1);
  EXPECT_EQ(simulate_serving(*model_, work(2, 400, 30), ServingSetup{}).max_batch, 2);
}

TEST_F(ServingTest, APagedCacheHoldsMoreSequencesAndPreemptsWhenOutputsGrow) {
  // Llama 3.1 70B in fp8 on one H100 leaves room for few 2,176-token contexts. Reserving each
  // whole context caps the batch at what fits at once; a paged cache admits on the prompt, so
  // more sequences run while their outputs are short, and the newest are preempted (and later
  // recomputed) when the outputs fill the cache. Every request still completes.
  Instance in;
  in.gpu = *catalog_->gpu("h100-sxm");
  in.scale_up = *catalog_->fabric("nvlink4");
  in.precision = Precision::kFp8;
  in.kv_precision = Precision::kFp8;
  const InferenceModel m(*catalog_->model("llama-3.1-70b"), in, catalog_->memory_params(),
                         catalog_->train_params(), catalog_->inference_params());
  ASSERT_TRUE(m.feasible()) << m.reason().en;
  const Workload w = work(120, 128, 2048);
  ServingSetup reserve;
  ServingSetup paged;
  paged.kv_policy = KvPolicy::kPaged;
  const ServingResult r = simulate_serving(m, w, reserve);
  const ServingResult p = simulate_serving(m, w, paged);
  ASSERT_TRUE(r.feasible && p.feasible);
  EXPECT_EQ(r.max_batch, m.kv_tokens() / (128 + 2048));
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_GT(p.max_batch, r.max_batch);
  EXPECT_GT(p.preemptions, 0);
  EXPECT_GT(p.output_tokens_per_s, r.output_tokens_per_s);
  EXPECT_NEAR(p.output_tokens_per_s * p.duration.si(), 120 * 2048, 1e-6);
  // Short requests never fill the cache: both policies run the same iterations.
  const ServingResult short_r = simulate_serving(*model_, work(100, 200, 100), reserve);
  const ServingResult short_p = simulate_serving(*model_, work(100, 200, 100), paged);
  EXPECT_EQ(short_p.preemptions, 0);
  EXPECT_EQ(short_p.iterations, short_r.iterations);
  EXPECT_DOUBLE_EQ(short_p.e2e.mean, short_r.e2e.mean);
}

// Every field of two results, compared exactly: the two simulators keep time in integer ticks, so
// any difference is a difference in what they did.
void expect_same(const ServingResult& a, const ServingResult& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.feasible, b.feasible);
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.duration.si(), b.duration.si());
  EXPECT_EQ(a.output_tokens_per_s, b.output_tokens_per_s);
  EXPECT_EQ(a.goodput_per_s, b.goodput_per_s);
  for (const auto& [x, y] : {std::pair{a.ttft, b.ttft}, {a.tpot, b.tpot}, {a.e2e, b.e2e}}) {
    EXPECT_EQ(x.mean, y.mean);
    EXPECT_EQ(x.p50, y.p50);
    EXPECT_EQ(x.p90, y.p90);
    EXPECT_EQ(x.p99, y.p99);
    EXPECT_EQ(x.max, y.max);
  }
  EXPECT_EQ(a.itl_mean, b.itl_mean);
  EXPECT_EQ(a.mean_batch, b.mean_batch);
  EXPECT_EQ(a.max_batch, b.max_batch);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.preemptions, b.preemptions);
}

TEST_F(ServingTest, PrefillFirstRunsPromptsAloneAndTheDecodersWait) {
  // SGLang's scheduler (data/engines/sglang.toml): an iteration with prompt tokens to compute
  // runs only those. Two requests of 600 -> 3 tokens queued at once, a budget of 1,000 tokens
  // per iteration:
  //   1: A's 600 prompt tokens and 400 of B's: A's first token at T1;
  //   2: B's last 200 (A, decoding, waits): B's first token at T1 + T2;
  //   3, 4: both decode (contexts 601 + 601, then 602 + 602): the last tokens at T1 + ... + T4.
  // Mixed, as TensorRT-LLM, iteration 2 also decodes A's second token: A's E2E is one
  // iteration shorter and B's TTFT includes a decode.
  MemoryParams mp = catalog_->memory_params();
  mp.inference_chunk_tokens = 1000;
  InferenceParams ip = catalog_->inference_params();
  ip.prefill_first = true;
  Instance in = model_->instance();
  const InferenceModel first(*catalog_->model("llama-3.1-8b"), in, mp, catalog_->train_params(),
                             ip);
  ASSERT_TRUE(first.feasible()) << first.reason().en;
  auto seconds = [&](const BatchShape& b) { return first.iteration(b).total().si(); };
  // Causal keys: a chunk of c tokens after p computed ones attends to c p + c (c + 1) / 2.
  const double t1 = seconds(
      {.prefill_tokens = 1000, .prefill_keys = 600.0 * 601 / 2 + 400.0 * 401 / 2, .logits = 1});
  const double t2 =
      seconds({.prefill_tokens = 200, .prefill_keys = 200.0 * 400 + 200.0 * 201 / 2, .logits = 1});
  const double t3 = seconds({.decodes = 2, .decode_context = 1202, .logits = 2});
  const double t4 = seconds({.decodes = 2, .decode_context = 1204, .logits = 2});
  const Workload w = work(2, 600, 3);
  const ServingResult r = simulate_serving(first, w, ServingSetup{});
  ASSERT_TRUE(r.feasible) << r.reason.en;
  // Tick rounding (1e-15 s per iteration) only.
  EXPECT_NEAR(r.ttft.mean, (t1 + (t1 + t2)) / 2, 1e-12);
  EXPECT_NEAR(r.e2e.max, t1 + t2 + t3 + t4, 1e-12);
  EXPECT_NEAR(r.e2e.mean, t1 + t2 + t3 + t4, 1e-12);
  // A: (T2 + T3 + T4) / 2 per token after its first; B: (T3 + T4) / 2.
  EXPECT_NEAR(r.tpot.mean, ((t2 + t3 + t4) / 2 + (t3 + t4) / 2) / 2, 1e-12);
  EXPECT_EQ(r.iterations, 4);
  // The reference simulator agrees.
  const ServingResult steps = detail::simulate_serving_stepwise(first, w, ServingSetup{});
  EXPECT_EQ(steps.e2e.mean, r.e2e.mean);
  EXPECT_EQ(steps.tpot.mean, r.tpot.mean);
  // Mixed, A's second token rides with B's last 200 prompt tokens: A ends an iteration sooner.
  ip.prefill_first = false;
  const InferenceModel mixed(*catalog_->model("llama-3.1-8b"), in, mp, catalog_->train_params(),
                             ip);
  const ServingResult m = simulate_serving(mixed, w, ServingSetup{});
  EXPECT_LT(m.e2e.p50, r.e2e.p50);
  EXPECT_GT(m.ttft.max, t1 + t2);
}

TEST_F(ServingTest, TheEventDrivenSimulatorDoesWhatTheStepwiseOneDoes) {
  // Random workloads, each simulated iteration by iteration (the reference) and by events:
  // open loops from light to overloaded, offline runs and closed loops; fixed lengths and
  // random traces, with and without prefix-cache hits and beam search; reserved and paged KV
  // caches,
  // continuous and static batching; 1 to 3
  // replicas behind either balancer; prompts mixed with decodes or run first. Four engines are
  // small on purpose, so that every rule is reached: a KV cache of a few dozen requests (blocked
  // admissions, preemptions), a token budget below the batch (decoders left out of an
  // iteration, prompts in chunks, or with prompts first more decoders than the budget), a
  // pipeline of two batches in flight; two more give half or all of their layers a sliding
  // window.
  const Model llama = *catalog_->model("llama-3.1-8b");
  Instance in;
  in.gpu = *catalog_->gpu("h100-sxm");
  in.scale_up = *catalog_->fabric("nvlink4");
  MemoryParams small_mp = catalog_->memory_params();
  small_mp.inference_chunk_tokens = 96;
  InferenceParams small_ip = catalog_->inference_params();
  small_ip.max_batch = 160;
  small_ip.kv_memory_fraction = 0.05;  // about 23,000 tokens: 8B on H100 holds 455,000 at 1
  Instance piped = in;
  piped.pp = 2;
  const InferenceModel small(llama, in, small_mp, catalog_->train_params(), small_ip);
  const InferenceModel pipeline(llama, piped, small_mp, catalog_->train_params(), small_ip);
  InferenceParams first_ip = small_ip;
  first_ip.prefill_first = true;
  const InferenceModel small_first(llama, in, small_mp, catalog_->train_params(), first_ip);
  const InferenceModel pipeline_first(llama, piped, small_mp, catalog_->train_params(), first_ip);
  // Sliding windows (held_context): half the layers over the last 64 tokens, counted in
  // 1/32-token units that grow by 16 per decoded token; and every layer windowed, whose cache
  // stops growing at the window (growth 0).
  Model half = llama;
  half.window = {.tokens = 64, .layers = 16};
  Model all = llama;
  all.window = {.tokens = 48, .layers = 32};
  const InferenceModel half_window(half, in, small_mp, catalog_->train_params(), small_ip);
  const InferenceModel all_window(all, in, small_mp, catalog_->train_params(), small_ip);
  ASSERT_EQ(half_window.kv_growth(), 16);
  ASSERT_EQ(all_window.kv_growth(), 0);
  ASSERT_TRUE(small.feasible() && pipeline.feasible() && half_window.feasible() &&
              all_window.feasible());
  const InferenceModel* models[] = {model_,          &small,       &pipeline,  &small_first,
                                    &pipeline_first, &half_window, &all_window};
  std::mt19937_64 gen(20261202);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  };
  for (int i = 0; i < 210; ++i) {
    const InferenceModel& m = *models[i % 7];
    // Short chat turns, medium and long requests.
    const int64_t scale = std::array{1, 10, 50}[static_cast<size_t>(pick(0, 2))];
    Workload w = work(pick(1, 400), pick(1, 60 * scale), pick(1, 30 * scale));
    if (pick(0, 1) == 1) {
      for (int64_t j = pick(1, 20); j > 0; --j) {
        w.lengths.push_back({pick(1, 60 * scale), pick(1, 30 * scale)});
      }
    }
    w.seed = static_cast<uint64_t>(pick(1, 1000));
    const int64_t load = pick(0, 3);
    if (load == 1) {
      w.rate_per_s = std::uniform_real_distribution<double>(0.5, 200.0)(gen);
    } else if (load == 2) {
      w.users = pick(1, 150);
      w.think_time = Seconds(pick(0, 1) == 1 ? 0.0 : 0.5);
    } else if (load == 3) {
      w.rate_per_s = 1e4;  // far past capacity: the queue only grows
    }
    if (pick(0, 2) == 0) {
      // A measured window: warm-up and cool-down left out.
      w.warmup = pick(0, w.requests / 3);
      w.cooldown = pick(0, w.requests / 3);
    }
    if (pick(0, 2) == 0) {
      w.prefix_hit = std::uniform_real_distribution<double>(0.0, 1.0)(gen);
    }
    if (pick(0, 3) == 0) {
      w.beams = pick(2, 4);  // beam search: each request several decoding sequences
    }
    if (pick(0, 1) == 1) {
      w.goodput.ttft_p99 = Seconds(std::uniform_real_distribution<double>(0.01, 2.0)(gen));
      w.goodput.tpot_p99 = Seconds(std::uniform_real_distribution<double>(0.005, 0.05)(gen));
    }
    ServingSetup s;
    s.replicas = pick(1, 3);
    s.balancer = std::array{Balancer::kRoundRobin, Balancer::kLeastLoaded,
                            Balancer::kLeastTokens}[static_cast<size_t>(pick(0, 2))];
    s.kv_policy = pick(0, 1) == 1 ? KvPolicy::kPaged : KvPolicy::kReserve;
    if (pick(0, 5) == 0) {
      s.batching = Batching::kStatic;
      s.static_batch = pick(1, 64);
    }
    const std::string what = fmt::format(
        "case {}: model {}, {} requests, rate {}, users {}, {} lengths, seed {}, {} "
        "replicas, {}, {}, static {}, prefix hit {}, {} beams",
        i, i % 7, w.requests, w.rate_per_s, w.users, w.lengths.size(), w.seed, s.replicas,
        balancer_name(s.balancer), kv_policy_name(s.kv_policy), s.static_batch, w.prefix_hit,
        w.beams);
    const ServingResult events = simulate_serving(m, w, s);
    const ServingResult steps = detail::simulate_serving_stepwise(m, w, s);
    expect_same(events, steps, what);
    if (::testing::Test::HasFailure()) {
      break;
    }
  }
}

TEST_F(ServingTest, ASteadyRunLeavesOutTheUsersSynchronisedStart) {
  // 64 users with no think time all send their first request at t = 0: the first round's
  // prompts queue behind each other, after which the users drift apart. Measured in its steady
  // state (the first requests, and at least one per user, left out), the run's p99 TTFT is
  // below the whole run's, and it settles.
  Workload w = work(2000, 1000, 200);
  w.users = 64;
  const ServingResult whole = simulate_serving(*model_, w, ServingSetup{});
  const SettledResult steady = simulate_settled(*model_, w, ServingSetup{});
  ASSERT_TRUE(steady.settled);
  EXPECT_GE(steady.runs, 2);
  EXPECT_LT(steady.result.ttft.p99, whole.ttft.p99);
  // The warm-up counts as simulated, not measured.
  EXPECT_GT(steady.result.simulated, steady.result.requests);
  // Throughput is the output generated while the measured requests arrive: a closed loop of 64
  // users holds 64 in flight, so rate x E2E = 64 within the run-to-run tolerance.
  EXPECT_NEAR(steady.result.requests_per_s * steady.result.e2e.mean, 64.0, 64.0 * 0.05);
  EXPECT_FALSE(steady.result.filling);  // a closed loop's warm-up is its users' first round
}

TEST_F(ServingTest, AnUnsettledLoadSaysWhetherItsQueueGrows) {
  // A tolerance no two runs meet and a cap of 4,000 requests: every load ends unsettled after
  // runs of 2,000 and 4,000. At twice the offline rate the queue grows by the offline rate every
  // second of arrivals: the 4,000-request run's arrivals last twice as long, and its measured
  // requests (the middle 80 %) wait about twice as long as the 2,000-request run's. At a tenth
  // of the offline rate nothing queues: both runs wait a prefill, their ratio about 1, under
  // the geometric midpoint sqrt(2).
  const SteadyState never{.first = 2'000, .most = 4'000, .tolerance = 0.0};
  const ServingResult offline = simulate_serving(*model_, work(4000, 500, 100), ServingSetup{});
  const double ceiling = offline.requests_per_s;
  const SettledResult over =
      simulate_settled(*model_, work(1, 500, 100, 2 * ceiling), ServingSetup{}, never);
  EXPECT_FALSE(over.settled);
  EXPECT_EQ(over.runs, 2);
  EXPECT_TRUE(over.growing);
  const SettledResult light =
      simulate_settled(*model_, work(1, 500, 100, 0.1 * ceiling), ServingSetup{}, never);
  EXPECT_FALSE(light.settled);
  EXPECT_FALSE(light.growing);
  // Settled loads never grow.
  const SettledResult settled =
      simulate_settled(*model_, work(1, 500, 100, 0.1 * ceiling), ServingSetup{}, SteadyState{});
  EXPECT_TRUE(settled.settled);
  EXPECT_FALSE(settled.growing);
}

TEST_F(ServingTest, AShortRunPastCapacityMeasuresTheTokensItsWindowGenerates) {
  // 200 requests of 500 -> 500 tokens arrive at 1,000 per second: the measured 160 (the first
  // and last 20 left out, steady_run's 10 %) arrive within about 0.16 s, while one request
  // alone needs 499 decode steps of at least model_->decode_step(1, 500) each (about 7 ms on
  // one H100: more than 3 s). No request completes in the window, yet the engine computes
  // prompts and decodes all through it: its throughput is the tokens generated there.
  const Workload w = steady_run(work(200, 500, 500, 1000.0), 200, kSearchRun);
  ASSERT_EQ(w.warmup, 20);
  const ServingResult r = simulate_serving(*model_, w, ServingSetup{});
  ASSERT_TRUE(r.feasible) << r.reason.en;
  EXPECT_LT(r.duration.si(), 499 * model_->decode_step(1, 500).si());
  EXPECT_GT(r.output_tokens_per_s, 0);
  // Every request asks 500 tokens, so the requests' shares of their output generated in the
  // window, over the window, are its tokens/s over 500.
  EXPECT_NEAR(r.requests_per_s * 500, r.output_tokens_per_s, 1e-9 * r.output_tokens_per_s);
  // The window opened 0.02 s after the first arrival, before any request could finish: not yet
  // steady. What a benchmark of the same 200 requests reports is the run without a window.
  EXPECT_TRUE(r.filling);
  Workload whole = w;
  whole.warmup = 0;
  whole.cooldown = 0;
  const ServingResult all = simulate_serving(*model_, whole, ServingSetup{});
  EXPECT_DOUBLE_EQ(r.run_tokens_per_s, all.output_tokens_per_s);
  EXPECT_FALSE(all.filling);
  // Long enough, the window sees what the engine completes with every request queued: at twice
  // the offline rate, run until it settles or 16,000 requests (kSearchRun), within 5 % of it
  // (the bound of AboveCapacityThroughputSaturatesAtTheOfflineRate). Its warm-up, 1,600
  // requests at twice about 20 per second, outlasts a request's decode of 499 steps.
  const ServingResult offline = simulate_serving(*model_, work(4000, 500, 500), ServingSetup{});
  const ServingResult settled =
      simulate_settled(*model_, work(4000, 500, 500, 2 * offline.requests_per_s), ServingSetup{},
                       kSearchRun)
          .result;
  EXPECT_FALSE(settled.filling);
  EXPECT_NEAR(settled.output_tokens_per_s, offline.output_tokens_per_s,
              0.05 * offline.output_tokens_per_s);
}

TEST_F(ServingTest, DisaggregatedPoolsPrefillThenSendTheCacheThenDecode) {
  // One request of 1,000 prompt tokens and 50 output tokens on idle pools: the prefill instance
  // computes the prompt and samples the first token (TTFT: the prefill alone, as aggregated); the
  // KV cache then takes 2 ms + 1,000 x 1 us = 3 ms to reach the decode instance, whose 49 decode
  // steps follow at a context of 1,000 + g tokens (g generated so far), as aggregated.
  DisaggregatedSetup s;
  s.transfer = {Seconds(2e-3), 1e-6};
  const ServingResult r = simulate_disaggregated(*model_, *model_, work(1, 1000, 50), s);
  ASSERT_TRUE(r.feasible) << r.reason.en;
  const double prefill = model_->prefill_alone(1000).si();
  const double decode = lone_decode(1000, 50);
  EXPECT_NEAR(r.ttft.mean, prefill, 1e-12);
  EXPECT_NEAR(r.e2e.mean, prefill + 3e-3 + decode, 1e-9);
  EXPECT_NEAR(r.tpot.mean, (3e-3 + decode) / 49, 1e-12);
  EXPECT_EQ(r.iterations, 50);  // one prefill, 49 decodes
}

TEST_F(ServingTest, APrefillInstanceSendsOneCacheAtATime) {
  // Two requests of 1,000 -> 2 tokens, both queued at t = 0 on one prefill instance: one
  // iteration prefills both prompts (2,000 tokens, within the 8,192-token budget) and ends at T.
  // Their caches leave one after the other over the instance's link, 1 s each (1 ms per token),
  // so they reach the decode instance at T + 1 s and T + 2 s, where each decodes its second token
  // alone in d = one decode step at 1,001 tokens of context: E2E T + 1 + d and T + 2 + d.
  DisaggregatedSetup s;
  s.transfer = {Seconds(0), 1e-3};
  const ServingResult r = simulate_disaggregated(*model_, *model_, work(2, 1000, 2), s);
  ASSERT_TRUE(r.feasible) << r.reason.en;
  BatchShape both;
  both.prefill_tokens = 2000;
  both.prefill_keys = 2 * (1000.0 * 1001.0 / 2);
  both.logits = 2;
  const double t = model_->iteration(both).total().si();
  const double d = model_->decode_step(1, 1001).si();
  EXPECT_NEAR(r.ttft.max, t, 1e-12);
  EXPECT_NEAR(r.e2e.max, t + 2 + d, 1e-9);
  EXPECT_NEAR(r.e2e.mean, t + 1.5 + d, 1e-9);
}

TEST_F(ServingTest, DisaggregatedPoolsKeepLittlesLaw) {
  // A closed loop of 32 users with no think time keeps 32 requests in the pools or on their way
  // between them, so completions/s x mean E2E = 32 in the steady state (Little's law), within
  // the steady state's 5 % run-to-run tolerance; the transfer of 2 ms + 1,000 x 0.1 us is part
  // of every request's time.
  Workload w = work(4000, 1000, 100);
  w.users = 32;
  DisaggregatedSetup s;
  s.prefill_replicas = 1;
  s.decode_replicas = 2;
  s.transfer = {Seconds(2e-3), 1e-7};
  const ServingResult r = simulate_disaggregated(*model_, *model_, steady_run(w, 4000, {}), s);
  ASSERT_TRUE(r.feasible) << r.reason.en;
  EXPECT_NEAR(r.requests_per_s * r.e2e.mean, 32.0, 32.0 * 0.05);
  EXPECT_GT(r.e2e.mean - r.ttft.mean, 2.1e-3);
}

TEST_F(ServingTest, TheKvTransferIsEachGpusShareOverItsOwnLink) {
  // Inside a node: the GPU's NVLink bus bandwidth (intra_busbw) and its latency plus the
  // software's per pass; each GPU of a tp 1 instance holds the whole cache, kv_bytes_per_token.
  Cluster c;
  c.gpu = *catalog_->gpu("h100-sxm");
  c.scale_up = *catalog_->fabric("nvlink4");
  const Network net = cluster_network(c, catalog_->train_params());
  const KvTransfer t = kv_transfer(*model_, *model_, false, net);
  EXPECT_DOUBLE_EQ(t.latency.si(), (net.base_latency + net.intra_latency).si());
  EXPECT_DOUBLE_EQ(t.seconds_per_token, model_->kv_bytes_per_token() / net.intra_busbw.si());
  EXPECT_DOUBLE_EQ(t.time(1000).si(), t.latency.si() + 1000 * t.seconds_per_token);
}

TEST_F(ServingTest, EachPoolRefusesWhatItsKvCacheCannotHold) {
  // The prefill pool holds prompts only, the decode pool whole contexts. A tp 2 instance holds
  // more than twice the tokens of a tp 1 one (half the weights per GPU, twice the GPUs).
  const InferenceModel wide = llama_8b(2);
  ASSERT_GT(wide.engine_kv_tokens(), 2 * model_->engine_kv_tokens());
  // A prompt of what tp 1 holds plus 10 tokens: tp 2 decodes it, tp 1 cannot prefill it.
  const Workload w = work(1, model_->engine_kv_tokens() + 10, 10);
  const ServingResult refused = simulate_disaggregated(*model_, wide, w, DisaggregatedSetup{});
  EXPECT_FALSE(refused.feasible);
  EXPECT_NE(refused.reason.en.find("prompt"), std::string::npos) << refused.reason.en;
  EXPECT_NE(refused.reason.en.find("prefill instance"), std::string::npos) << refused.reason.en;
  EXPECT_TRUE(simulate_disaggregated(wide, wide, w, DisaggregatedSetup{}).feasible);
  // The other way round the decode instance cannot hold the context.
  const ServingResult small = simulate_disaggregated(wide, *model_, w, DisaggregatedSetup{});
  EXPECT_FALSE(small.feasible);
  EXPECT_NE(small.reason.en.find("context"), std::string::npos) << small.reason.en;
}

TEST(ServingDistribution, PercentilesAreExactThenWithinTheBucketWidth) {
  // Up to kExactValues the percentiles are the values themselves (nearest rank); past it a
  // histogram of 1,024 buckets per octave keeps each within half a bucket: 2^-11 relative.
  detail::Distribution d;
  for (int i = 1; i <= 100; ++i) {
    d.add(i * 0.001);
  }
  Percentiles p = d.summary();
  EXPECT_DOUBLE_EQ(p.p50, 0.050);
  EXPECT_DOUBLE_EQ(p.p99, 0.099);
  EXPECT_DOUBLE_EQ(p.max, 0.100);
  EXPECT_NEAR(p.mean, 0.0505, 1e-15);
  // 2^20 + 2^19 values uniform over (0, 1]: p50 = 0.5, p90 = 0.9, p99 = 0.99.
  detail::Distribution big;
  const int64_t n = (int64_t{1} << 20) + (int64_t{1} << 19);
  for (int64_t i = 1; i <= n; ++i) {
    big.add(static_cast<double>(i) / static_cast<double>(n));
  }
  p = big.summary();
  EXPECT_NEAR(p.p50, 0.5, 0.5 * 0x1.0p-11);
  EXPECT_NEAR(p.p90, 0.9, 0.9 * 0x1.0p-11);
  EXPECT_NEAR(p.p99, 0.99, 0.99 * 0x1.0p-11);
  EXPECT_DOUBLE_EQ(p.max, 1.0);
  EXPECT_NEAR(p.mean, 0.5, 1e-6);
}

TEST_F(ServingTest, BalancerNamesParseWithASuggestion) {
  EXPECT_EQ(*parse_balancer("round-robin"), Balancer::kRoundRobin);
  EXPECT_EQ(balancer_name(Balancer::kLeastLoaded), "least-loaded");
  EXPECT_EQ(*parse_balancer("least-tokens"), Balancer::kLeastTokens);
  Result<Balancer> bad = parse_balancer("least-load");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().hint.find("least-loaded"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
