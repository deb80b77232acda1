// The parts the two serving simulators share: time in integer ticks, iteration times in those
// ticks, the arrival process, and the record of finished requests.
//
// simulate_serving (serving.h) advances by events: a run of identical decode iterations between
// two events is one step, its length summed in closed form. simulate_serving_stepwise walks
// every iteration and every sequence in it, as the first simulator did; it is kept as the
// reference the event-driven one is tested against. Both keep time as an integer count of
// femtoseconds, so that a run of k iterations summed in one step equals the k iterations added
// one by one, exactly, and the two give the same result to the bit.
#ifndef GPUPLAN_SRC_SERVING_SIM_H_
#define GPUPLAN_SRC_SERVING_SIM_H_

#include <cstdint>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "gpuplan/inference.h"
#include "gpuplan/serving.h"

namespace gpuplan::detail {

// Simulated time in femtoseconds. 128 bits: a run of 10^7 requests at 10^-6 requests/s spans
// 10^28 fs, past what 64 bits hold.
__extension__ using Ticks = __int128;

inline constexpr double kTicksPerSecond = 1e15;
// Later than any event.
__extension__ inline constexpr Ticks kNever =
    static_cast<Ticks>(~static_cast<unsigned __int128>(0) >> 1);

Ticks to_ticks(double seconds);  // rounded to the nearest tick
double to_seconds(Ticks t);

// Iteration times in ticks. An iteration that only decodes takes fixed(decodes) plus
// per_token x the decoding sequences' context (InferenceModel::iteration is affine in that
// context), each rounded to a tick once, so k consecutive decode iterations, each adding one
// token to every sequence, sum in closed form to exactly what adding them one by one gives.
class IterationClock {
 public:
  explicit IterationClock(const InferenceModel& model);

  // One iteration of `b`. REQUIRES: a decode-only shape has logits == decodes and an integer
  // decode_context.
  Ticks time(const BatchShape& b);
  // One iteration decoding `decodes` sequences holding `context` KV units in all
  // (InferenceModel::kv_units).
  Ticks decode(int64_t decodes, int64_t context);
  // k consecutive such iterations, the context growing by `decodes` x kv_growth() units after
  // each: k x fixed + per_token x (k x context + growth x decodes x k(k-1)/2).
  Ticks decode_run(int64_t decodes, int64_t context, int64_t k);

 private:
  Ticks fixed(int64_t decodes);

  const InferenceModel& model_;
  Ticks per_token_ = 0;       // per KV unit
  std::vector<Ticks> fixed_;  // by decodes; -1: not computed yet
};

// The workload's requests as they arrive, each with its id (the order requests are issued in,
// which picks its lengths) and its arrival time. Open loop: Poisson, drawn one ahead, or all at
// t = 0. Closed loop: each user's first request after a think time, the next one when
// `completed` reports the end of one. Draws come from one seeded 64-bit Mersenne Twister in a
// fixed order, so the same workload gives the same arrivals.
class Arrivals {
 public:
  explicit Arrivals(const Workload& w);

  bool empty() const;
  Ticks next_time() const;  // REQUIRES: !empty()
  int64_t pop();            // the id of the earliest arrival (ties: the lower id)
  // Closed loop: a request ended at `now`, so its user's next request (if any is left) arrives
  // after a think time.
  void completed(Ticks now);

 private:
  void draw_next_open();

  const Workload& w_;
  std::mt19937_64 gen_;
  int64_t issued_ = 0;   // ids handed out or scheduled
  double clock_ = 0;     // open loop: the last arrival, in seconds, as the gaps add up
  Ticks open_next_ = 0;  // open loop: the next arrival
  std::priority_queue<std::pair<Ticks, int64_t>, std::vector<std::pair<Ticks, int64_t>>,
                      std::greater<>>
      pending_;  // closed loop
};

// A distribution of per-request values (seconds) whose memory stays bounded: the values
// themselves up to kExactValues, exact percentiles; past that, a histogram of buckets 2^-10 of
// an octave wide, whose midpoints are within 0.05 % of any value in them.
class Distribution {
 public:
  static constexpr size_t kExactValues = size_t{1} << 20;

  void add(double v);
  Percentiles summary() const;

 private:
  void to_histogram();

  std::vector<double> exact_;
  std::vector<int64_t> buckets_;  // empty while exact
  int64_t count_ = 0;
  double sum_ = 0;  // in the order values came
  double max_ = 0;
};

// What the engines did, summed over the run.
struct EngineTotals {
  int64_t iterations = 0;
  int64_t preemptions = 0;
  int64_t max_batch = 0;
  Ticks busy = 0;        // iteration time
  Ticks batch_time = 0;  // iteration time x sequences running in it
};

// The record of finished requests, folded as they finish: those of the workload's measured
// window (Workload::warmup, cooldown) for latencies, and the tokens every request generated
// between the window's first and last arrival for throughput (a request's first token at its
// first-token time, the rest evenly to its end). With every request queued at once there is no
// time between arrivals: the window then runs from the first token of the first measured
// request to that of the last, while the queue still holds the cool-down's requests, so that
// the engines are saturated throughout and neither the joint start nor the drain counts.
class Outcomes {
 public:
  explicit Outcomes(const Workload& w);
  // Request `id` arrived at `now`.
  void arrived(int64_t id, Ticks now);
  // Request `id` finished at `finish`.
  void add(int64_t id, Ticks arrival, Ticks first_token, Ticks finish, int64_t output);
  // Fills the measured fields of `r`, which holds the reason and kv_sequences already.
  ServingResult summarise(ServingResult r, const EngineTotals& totals) const;

 private:
  Slo goodput_;
  int64_t good_ = 0;  // within goodput_, measured or not
  int64_t from_ = 0;  // measured ids: [from_, to_)
  int64_t to_ = 0;
  bool windowed_ = false;
  bool open_ = false;        // Poisson arrivals
  bool queued_ = false;      // every request queued at once, with a measured window
  Ticks start_ = -1;         // the first arrival
  Ticks end_ = 0;            // the last completion
  double all_tokens_ = 0;    // output of every request, measured or not
  Ticks window_start_ = -1;  // arrival of from_ (queued_: its first token)
  Ticks window_end_ = -1;    // arrival of to_ - 1 (queued_: its first token)
  // What the requests generated within a window: tokens, and each request as the share of its
  // own output generated there (within goodput or not).
  struct WindowSums {
    double tokens = 0;
    double requests = 0;
    double good = 0;
    // A request whose first token came at `first_token`, its last at `finish`, within [from, to].
    void add(Ticks first_token, Ticks finish, int64_t output, bool within_goodput, Ticks from,
             Ticks to);
  };
  WindowSums window_;
  // queued_: every request's (first token, finish, output, within goodput), for the window
  // known only once its last request has its first token.
  struct Span {
    Ticks first_token;
    Ticks finish;
    int64_t output;
    bool good;
  };
  std::vector<Span> spans_;
  int64_t simulated_ = 0;
  int64_t count_ = 0;
  Ticks gaps_ = 0;  // finish - first token, summed over requests of 2 or more tokens
  int64_t gap_count_ = 0;
  Distribution ttft_;
  Distribution tpot_;
  Distribution e2e_;
};

// The most requests a continuous-batching engine of `model` admits: its batch limit and, with
// beam search or where every admitted request decodes in the next iteration (a decode engine),
// no more than whose beams fit its token budget per iteration.
int64_t admission_limit(const InferenceModel& model, const Workload& w, bool every_one_decodes);

// The KV units (InferenceModel::kv_units) a decoding request of `input` -> `output` tokens that
// generated `generated` so far counts in an iteration's decode context: each beam reads the
// prompt's keys and values and its own, the window part reserved for the request's length.
int64_t decode_units(const InferenceModel& model, const Workload& w, int64_t input, int64_t output,
                     int64_t generated);

// The reason no request of `w` can be served on `model` (one context larger than an engine's
// KV cache), or an empty text; and the result both simulators start from.
ServingResult serving_start(const InferenceModel& model, const Workload& w);

// Why the longest prompt of `w` does not fit in the KV cache of a prefill engine, or an empty
// text.
Text prompt_too_small(const InferenceModel& model, const Workload& w);

// The first simulator, iteration by iteration: the reference for simulate_serving.
ServingResult simulate_serving_stepwise(const InferenceModel& model, const Workload& w,
                                        const ServingSetup& s);

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_SERVING_SIM_H_
