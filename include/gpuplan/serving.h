// Serving capacity: a discrete-event simulation of requests arriving at model instances behind
// a load balancer, each instance an engine with continuous (or static) batching, and the search
// for the highest request rate that still meets a latency objective.
//
// Each instance runs iterations (inference.h): every running sequence that has its prompt
// decodes one token, and the token budget left over prefills prompts in chunks, in admission
// order. A request is admitted first come, first served when the instance runs fewer than
// `max_batch` sequences and the KV cache has room for it: its whole context, so that nothing is
// ever evicted (TensorRT-LLM's GUARANTEED_NO_EVICT policy), or, with a paged cache, its prompt,
// the newest sequence being preempted when growing outputs fill the cache (vLLM). The first output
// token comes with the iteration that finishes the prompt. Arrivals are Poisson from a seeded
// generator, all at once (offline), or a closed loop of users who each send their next request
// when the last one ends; the same input gives the same result every run.
// Every rule is in docs/FORMULAS.md#serving.
#ifndef GPUPLAN_SERVING_H_
#define GPUPLAN_SERVING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/dataset.h"
#include "gpuplan/engine.h"
#include "gpuplan/inference.h"
#include "gpuplan/result.h"

namespace gpuplan {

enum class Batching {
  kContinuous,  // in-flight batching: sequences join and leave at every iteration
  kStatic,      // a batch is prefilled together and decoded until its last sequence ends
};

enum class Balancer {
  kRoundRobin,   // request i goes to instance i mod R
  kLeastLoaded,  // to the instance with the fewest requests queued or running
  kLeastTokens,  // to the instance whose queued and running requests have the fewest prompt
                 // tokens (NVIDIA's MLPerf harness: isl_load_balancing)
};
std::string_view balancer_name(Balancer b);
Result<Balancer> parse_balancer(std::string_view name);
std::vector<std::string> balancer_names();  // every name parse_balancer takes, in order

// The prompt and output lengths of one request, in tokens.
struct RequestLength {
  int64_t input = 0;
  int64_t output = 0;
};

// Reads request lengths from a CSV file: a header line `input_tokens,output_tokens`, then one
// request per line as two positive integers (a trace of token counts, e.g. from a tokenised
// dataset). Blank lines and lines starting with '#' are skipped. Errors name file:line.
Result<std::vector<RequestLength>> load_request_lengths(const std::string& path);

// A latency objective on the 99th percentiles; an absent bound is not checked.
struct Slo {
  std::optional<Seconds> ttft_p99;
  std::optional<Seconds> tpot_p99;

  bool any() const { return ttft_p99 || tpot_p99; }
};

struct Workload {
  int64_t requests = 1000;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  // Open loop: Poisson arrivals over all instances; 0: all queued at t = 0.
  double rate_per_s = 0;
  uint64_t seed = 1;
  // Closed loop (rate_per_s == 0): this many users, each sending its next request
  // `think_time` after its last one ends, all starting at t = 0; 0: open loop.
  int64_t users = 0;
  Seconds think_time;
  // Per-request lengths, taken in order and repeated; empty: every request has input_tokens
  // and output_tokens, or draws them from these distributions (dataset.h) where given.
  std::vector<RequestLength> lengths;
  std::optional<LengthDistribution> input_distribution;
  std::optional<LengthDistribution> output_distribution;
  // Goodput: the requests whose own TTFT and TPOT are within these bounds (the objective's, read
  // per request) count as good; without bounds, every completed request does.
  Slo goodput;
  // The requests measured, by the order they are issued: all but the first `warmup` (the system
  // filling up) and the last `cooldown` (it draining). With either, throughput is the output
  // generated between the first and the last measured arrival, over that time (a window shorter
  // than a request's latency still sees the engines at work), or, with every request queued at
  // once (no time between arrivals), between their first tokens; with neither, all output over
  // the first arrival to the last completion, as benchmark harnesses report it.
  int64_t warmup = 0;
  int64_t cooldown = 0;
  // Prefix caching: the share of each prompt's tokens whose keys and values an engine already
  // holds from an earlier request with the same prefix (a system prompt, a chat's history), as
  // vLLM's prefix-cache hit rate counts it. Those tokens are not computed again, and the
  // prefixes, kept once per engine, are shared by every request that reads them.
  double prefix_hit = 0;
  // Beam search: each request decodes `beams` sequences side by side, each a row of every
  // decode iteration, and returns one of them, its `output` tokens long. The prompt is computed
  // and cached once, its blocks shared by the beams; each beam caches its own output, and each
  // reads the prompt's keys and values and its own every iteration, as an attention kernel
  // walks one sequence (an L2 cache that served the shared blocks to a request's beams at once
  // would read them less; not modelled). MLPerf's GPT-J benchmark: 4 beams.
  int64_t beams = 1;

  RequestLength length(int64_t request) const;
  // Tokens of KV cache request `l` holds at its end: its prompt once, each beam's output.
  int64_t held_tokens(const RequestLength& l) const { return l.input + beams * l.output; }
  double mean_context() const;  // held_tokens, averaged over the requests (beams: their outputs)
  double mean_input() const;    // prompt tokens, averaged over the requests
  double mean_output() const;   // output tokens, averaged over the requests
  int64_t max_context() const;  // the longest input + output: one sequence's positions
  int64_t max_input() const;    // the longest prompt
  int64_t max_output() const;   // the longest output
  // Of a prompt of `input` tokens, those found in the prefix cache: floor(prefix_hit x input),
  // leaving at least one to compute (the last token's logits are always computed).
  int64_t cached_tokens(int64_t input) const;
  double mean_cached() const;  // cached prompt tokens, averaged over the requests
  // Tokens of KV cache the shared prefixes hold in each engine: the longest prompt's cached
  // part, an upper bound on any one prefix.
  int64_t prefix_store() const;
  // The most KV cache one request holds of its own: its held tokens less its cached prefix.
  int64_t max_own_context() const;
};

struct ServingSetup {
  int64_t replicas = 1;
  Batching batching = Batching::kContinuous;
  int64_t static_batch = 0;  // kStatic: sequences per batch
  Balancer balancer = Balancer::kLeastLoaded;
  KvPolicy kv_policy = KvPolicy::kReserve;  // continuous batching only
};

// A distribution over requests, in seconds.
struct Percentiles {
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

struct ServingResult {
  bool feasible = false;
  Text reason;                     // why not, when infeasible
  int64_t requests = 0;            // measured
  int64_t simulated = 0;           // issued and completed, a warm-up and cool-down included
  Seconds duration;                // a steady run's window, or first arrival to last completion
                                   // (every request queued at once, with a warm-up or cool-down:
                                   // first tokens of the first and last measured request)
  double output_tokens_per_s = 0;  // over all instances
  double requests_per_s = 0;       // completed
  double goodput_per_s = 0;        // completed within the workload's goodput bounds
  Percentiles ttft;                // arrival to first output token
  Percentiles tpot;                // per request: (end - first token) / (output - 1)
  Percentiles e2e;                 // arrival to last token
  double itl_mean = 0;             // over all gaps between consecutive tokens (seconds)
  double mean_batch = 0;           // sequences per iteration, weighted by iteration time (in
                                   // the window of a queued run: sequences decoding)
  int64_t max_batch = 0;           // most sequences any iteration ran
  int64_t kv_sequences = 0;        // requests of this length the KV cache holds at once
  int64_t iterations = 0;          // over all instances
  int64_t preemptions = 0;         // sequences evicted to make room (paged KV cache)
  // A steady run (Workload::warmup or cooldown) counts, in its window from the first measured
  // arrival to the last, the tokens generated there, and each request as the share of its own
  // output generated there. One of Poisson arrivals whose warm-up (first arrival to first
  // measured one) was shorter than a measured request's mean decode (E2E - TTFT, queueing left
  // out) opened its window before the engines had once turned their batch over: `filling`, its
  // throughput low. `run_tokens_per_s` is then what a benchmark of the same requests reports:
  // all output over the first arrival to the last completion.
  bool filling = false;
  double run_tokens_per_s = 0;
};

ServingResult simulate_serving(const InferenceModel& model, const Workload& w,
                               const ServingSetup& s);

// Disaggregated serving, as NVIDIA Dynamo and the prefill/decode disaggregation of vLLM and SGLang
// run it: a pool of prefill instances computes the prompts and samples each request's first
// token; the request's KV cache then goes over the fabric to a pool of decode instances, which
// generate the rest. Each prefill instance sends one request's cache at a time (its link is a
// queue), holding it until it is sent; a decode instance admits a request when its whole context
// fits (nothing is evicted) and decodes it from its next iteration. The prefix cache, where
// there is one, is kept in both pools, and only the part of a prompt not in it is sent.
struct KvTransfer {
  Seconds latency;               // per request
  double seconds_per_token = 0;  // per token of a prompt's KV cache

  Seconds time(int64_t tokens) const;
};

// The KV transfer from a `prefill` to a `decode` instance over `net`: every GPU sends (and
// receives) its share of the cache at once over its own point-to-point link (collective.h), so
// the side whose GPUs hold the larger share sets the time.
KvTransfer kv_transfer(const InferenceModel& prefill, const InferenceModel& decode,
                       bool crosses_nodes, const Network& net);

struct DisaggregatedSetup {
  int64_t prefill_replicas = 1;
  int64_t decode_replicas = 1;
  Balancer balancer = Balancer::kLeastLoaded;  // within each pool
  KvTransfer transfer;
};

// REQUIRES: both models feasible, each with one pipeline stage.
ServingResult simulate_disaggregated(const InferenceModel& prefill, const InferenceModel& decode,
                                     const Workload& w, const DisaggregatedSetup& s);

// The KV cache against a workload. kv_room: units (InferenceModel::kv_units) of one engine's
// cache (a batch in flight of an instance) left for the requests' own contexts once the shared
// prefixes are stored.
// sequences_in_kv: requests of the workload's mean length one instance holds at once.
// kv_too_small: why the longest request does not fit in one engine, or an empty text.
int64_t kv_room(const InferenceModel& model, const Workload& w);
double sequences_in_kv(const InferenceModel& model, const Workload& w);
Text kv_too_small(const InferenceModel& model, const Workload& w);

// One request alone decoding a token after a prompt of `input` tokens: one decode iteration of
// its beams (Workload::beams), each reading the prompt's keys and values. The TPOT floor.
Seconds lone_decode_step(const InferenceModel& model, const Workload& w, int64_t input);

// How a steady load (Poisson arrivals, or a closed loop) is measured: all but the first and last
// `edge` of a run's requests (the system filling up and draining; a closed loop also skips its
// users' first requests, sent together), with runs that double from `first` requests until two
// in a row agree within `tolerance` on throughput and the p50, p90 and p99 of TTFT, TPOT and E2E,
// or `most` requests did not settle.
struct SteadyState {
  int64_t first = 2'000;    // requests in the first run
  int64_t most = 256'000;   // the most one run simulates
  double tolerance = 0.03;  // relative; latencies within 0.03 ms agree
  double edge = 0.1;        // share of a run unmeasured at either end
  int64_t per_user = 10;    // a closed loop: at least this many requests per user in a run
};

// How a search measures each load it tries (a capacity's bisection, a count of users, a
// disaggregated split's pool): a steady run of `first` requests (a closed loop: at least 4 per
// user), its warm-up and drain unmeasured. The rate a capacity's bisection settles on is run
// again at twice the requests, and again, until two runs agree or `most` requests still meet the
// objective (a rate past what the setup sustains grows its queue, which a short run may not yet
// show); where it misses, the bisection goes on below it so measured. The workload's own request
// count (`--requests`, the run a user asked to see) plays no part, so what a search finds does
// not depend on it.
inline constexpr SteadyState kSearchRun{.first = 1'000, .most = 16'000, .per_user = 4};

// `w` with its requests and its measured window set for a steady run of `requests` requests
// (or, for a closed loop, at least steady.per_user per user).
Workload steady_run(const Workload& w, int64_t requests, const SteadyState& steady);

// Where two runs of one load differ most, over what a steady run reports: its output tokens/s
// and the p50, p90 and p99 of TTFT, TPOT and E2E. `measure` names it ("TPOT p50"); `first` and
// `second` are its values in `a` and `b` (seconds, or output tokens/s for "throughput"); `apart`
// is |first - second| over the larger, less 0.03 ms for a latency (below that, latencies are
// equal).
struct RunDifference {
  std::string measure;
  double first = 0;
  double second = 0;
  double apart = 0;
  bool latency = false;
};
RunDifference widest_difference(const ServingResult& a, const ServingResult& b);

// Whether two runs of one load report the same steady state: no measure of widest_difference
// more than `tolerance` apart.
bool runs_agree(const ServingResult& a, const ServingResult& b, double tolerance);

// A simulation of `w` that runs until it settles (SteadyState), the request count of `w` aside;
// an offline or static-batch workload, which has no steady state, is simulated as given.
// `settled` says whether it did; when not, the load is past what the setup sustains (queues
// grow without bound: `growing`) or `most` was too few for a bounded queue whose percentiles
// converge slowly (bursts of requests that start and end together; a p99 from rare waits).
struct SettledResult {
  ServingResult result;
  bool settled = true;
  // Not settled, and the longest run's mean TTFT more than sqrt(2) times that of the run half its
  // length: the geometric midpoint between a bounded queue's (the same wait) and one that grows
  // without bound (twice the wait in twice the time).
  bool growing = false;
  int64_t runs = 0;
  // The run before `result`, on fewer requests: what it was compared with (none after one run).
  std::optional<ServingResult> previous;
};
SettledResult simulate_settled(const InferenceModel& model, const Workload& w,
                               const ServingSetup& s, const SteadyState& steady = {});

// Sequences the instances of `s` run at once on `w`: in each engine, what its KV cache holds of
// the workload's mean request or its batch limit, whichever is fewer.
int64_t sequences_at_once(const InferenceModel& model, const Workload& w, const ServingSetup& s);

// Requests an offline benchmark queues, where a published run does not say how many: enough for
// the engines to turn their batches over several times, eight times the `at_once` sequences they
// run together, at least kSearchRun.first and at most SteadyState's longest run.
int64_t offline_requests(int64_t at_once);

// Requests to simulate for a closed loop of `users`: at least 4 per user, so that the loop
// reaches its steady state, and at least the workload's own count.
int64_t closed_loop_requests(const Workload& w, int64_t users);

// Whether `r` meets `slo`; when not, `why` says which bound it misses.
bool meets_slo(const ServingResult& r, const Slo& slo, Text* why = nullptr);

struct Capacity {
  bool feasible = false;
  Text reason;                // why no rate meets the objective
  double max_rate_per_s = 0;  // requests per second over all of the setup's instances
  ServingResult at_max;       // the simulation at that rate
  // Every request queued at once, in its steady state: the throughput ceiling. One run of N
  // requests fills up, runs saturated and drains; its throughput fields (requests, output tokens
  // and goodput per second, duration, mean batch) are those between the first tokens of its
  // middle half's first and last request, while the last quarter still waits (requests per
  // second: that token rate over the workload's mean output), and its latencies those of that
  // half. N is eight times the instances' sequences_at_once, at least four times
  // kSearchRun.first and at most SteadyState's longest run.
  ServingResult offline;
};

// The setup's engines saturated, as Capacity::offline measures them: every request of `w` queued
// at once, the throughput fields those of the steady state between filling up and draining.
ServingResult saturated_serving(const InferenceModel& model, const Workload& w,
                                const ServingSetup& s);

// The highest Poisson rate at which the setup meets `slo`, by bisection between a light load
// and the offline throughput (to 1 %), each rate measured by kSearchRun's runs. Without an
// objective, the offline throughput.
Capacity capacity_under_slo(const InferenceModel& model, const Workload& w, const ServingSetup& s,
                            const Slo& slo);
// The same for prefill and decode pools: the highest Poisson rate at which they meet `slo`,
// each rate measured by a steady run of `requests` requests (more than one instance's kSearchRun:
// every instance needs its share).
Capacity disaggregated_capacity(const InferenceModel& prefill, const InferenceModel& decode,
                                const Workload& w, const DisaggregatedSetup& s, const Slo& slo,
                                int64_t requests = kSearchRun.first);

struct UserCapacity {
  bool feasible = false;
  Text reason;            // why not even one user meets the objective
  int64_t max_users = 0;  // over all of the setup's instances
  int64_t at_once = 0;    // sequences the instances run at once (KV cache, max_batch)
  ServingResult at_max;   // the simulation with that many users
};

// The most concurrent users (a closed loop, each with one request in flight, plus think time)
// the setup holds within `slo`, by bisection between 1 and what its instances run at once:
// users beyond that only wait in the queue. Each count measured by a kSearchRun.
UserCapacity users_under_slo(const InferenceModel& model, const Workload& w, const ServingSetup& s,
                             const Slo& slo);

}  // namespace gpuplan

#endif  // GPUPLAN_SERVING_H_
