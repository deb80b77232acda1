#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gpuplan/result.h"
#include "serving_sim.h"

namespace gpuplan::detail {
namespace {

// An exponential draw of mean `mean` by inversion, -mean ln(1 - u), from 53 random bits.
double exponential(std::mt19937_64& gen, double mean) {
  const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
  return -std::log1p(-u) * mean;
}

// Histogram buckets: 1024 per octave over 2^-64 .. 2^64 seconds, values outside clamped.
constexpr int kBucketBits = 10;
constexpr int kLowestExponent = -64;
constexpr int kOctaves = 128;

size_t bucket_of(double v) {
  int e = 0;
  const double m = std::frexp(std::max(v, 0x1.0p-65), &e);  // v = m 2^e, m in [0.5, 1)
  e = std::clamp(e, kLowestExponent, kLowestExponent + kOctaves - 1);
  const auto sub = static_cast<int>((m - 0.5) * 2.0 * (1 << kBucketBits));
  return static_cast<size_t>((e - kLowestExponent) * (1 << kBucketBits) +
                             std::clamp(sub, 0, (1 << kBucketBits) - 1));
}

double bucket_middle(size_t b) {
  const int e = static_cast<int>(b >> kBucketBits) + kLowestExponent;
  const double sub = static_cast<double>(b & ((size_t{1} << kBucketBits) - 1));
  return std::ldexp(0.5 + (sub + 0.5) / (2.0 * (1 << kBucketBits)), e);
}

}  // namespace

Ticks to_ticks(double seconds) {
  return static_cast<Ticks>(std::nearbyint(seconds * kTicksPerSecond));
}

double to_seconds(Ticks t) {
  return static_cast<double>(t) / kTicksPerSecond;
}

IterationClock::IterationClock(const InferenceModel& model)
    : model_(model), per_token_(to_ticks(model.decode_context_seconds())) {}

Ticks IterationClock::fixed(int64_t decodes) {
  const auto i = static_cast<size_t>(decodes);
  if (i >= fixed_.size()) {
    fixed_.resize(std::max(i + 1, fixed_.size() * 2), -1);
  }
  if (fixed_[i] < 0) {
    BatchShape b;
    b.decodes = decodes;
    b.logits = decodes;
    fixed_[i] = to_ticks(model_.iteration(b).total().si());
  }
  return fixed_[i];
}

Ticks IterationClock::time(const BatchShape& b) {
  if (b.prefill_tokens == 0) {
    GPUPLAN_CHECK(b.logits == b.decodes, "a decode iteration samples one token per sequence");
    return decode(b.decodes, static_cast<int64_t>(b.decode_context));
  }
  return to_ticks(model_.iteration(b).total().si());
}

Ticks IterationClock::decode(int64_t decodes, int64_t context) {
  return fixed(decodes) + per_token_ * context;
}

Ticks IterationClock::decode_run(int64_t decodes, int64_t context, int64_t k) {
  const Ticks kk = k;
  return kk * fixed(decodes) +
         per_token_ *
             (kk * context + kk * (kk - 1) / 2 * decodes * static_cast<Ticks>(model_.kv_growth()));
}

Arrivals::Arrivals(const Workload& w) : w_(w), gen_(w.seed) {
  if (w.users > 0) {
    // Each user thinks before its first request too, so users start apart; without think
    // time they all start at once, as a benchmark at fixed concurrency does.
    const int64_t first = std::min(w.users, w.requests);
    for (; issued_ < first; ++issued_) {
      const double think = w.think_time.si() > 0 ? exponential(gen_, w.think_time.si()) : 0.0;
      pending_.emplace(to_ticks(think), issued_);
    }
    return;
  }
  draw_next_open();
}

void Arrivals::draw_next_open() {
  if (w_.rate_per_s > 0) {
    clock_ += exponential(gen_, 1.0 / w_.rate_per_s);
  }
  open_next_ = to_ticks(clock_);
}

bool Arrivals::empty() const {
  return w_.users > 0 ? pending_.empty() : issued_ >= w_.requests;
}

Ticks Arrivals::next_time() const {
  return w_.users > 0 ? pending_.top().first : open_next_;
}

int64_t Arrivals::pop() {
  if (w_.users > 0) {
    const int64_t id = pending_.top().second;
    pending_.pop();
    return id;
  }
  const int64_t id = issued_++;
  if (issued_ < w_.requests) {
    draw_next_open();
  }
  return id;
}

void Arrivals::completed(Ticks now) {
  if (w_.users <= 0 || issued_ >= w_.requests) {
    return;
  }
  const double think = w_.think_time.si();
  pending_.emplace(now + (think > 0 ? to_ticks(exponential(gen_, think)) : 0), issued_++);
}

void Distribution::add(double v) {
  ++count_;
  max_ = count_ == 1 ? v : std::max(max_, v);
  sum_ += v;
  if (buckets_.empty()) {
    exact_.push_back(v);
    if (exact_.size() > kExactValues) {
      to_histogram();
    }
    return;
  }
  ++buckets_[bucket_of(v)];
}

void Distribution::to_histogram() {
  buckets_.assign(static_cast<size_t>(kOctaves) << kBucketBits, 0);
  for (double v : exact_) {
    ++buckets_[bucket_of(v)];
  }
  exact_.clear();
  exact_.shrink_to_fit();
}

Percentiles Distribution::summary() const {
  Percentiles p;
  if (count_ == 0) {
    return p;
  }
  // Nearest rank: the smallest value with at least q of the values at or below it.
  auto rank = [&](double q) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * static_cast<double>(count_))));
  };
  p.mean = sum_ / static_cast<double>(count_);
  p.max = max_;
  if (buckets_.empty()) {
    // The three ranks in turn, each selected among the values above the one before.
    std::vector<double> v = exact_;
    auto from = v.begin();
    for (auto [q, out] : {std::pair{0.50, &p.p50}, {0.90, &p.p90}, {0.99, &p.p99}}) {
      const auto nth = v.begin() + (rank(q) - 1);
      std::nth_element(from, nth, v.end());
      *out = *nth;
      from = nth;
    }
    return p;
  }
  auto at = [&](double q) {
    const int64_t k = rank(q);
    int64_t seen = 0;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      seen += buckets_[b];
      if (seen >= k) {
        return std::min(bucket_middle(b), max_);
      }
    }
    return max_;
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

Outcomes::Outcomes(const Workload& w)
    : goodput_(w.goodput),
      from_(std::min(w.warmup, w.requests)),
      to_(std::max(from_, w.requests - w.cooldown)),
      // Arrivals all at t = 0 leave no window between them: warm-up and cool-down then pick
      // whose latencies count, and the window runs between first tokens (queued_).
      windowed_((w.warmup > 0 || w.cooldown > 0) && (w.rate_per_s > 0 || w.users > 0)),
      open_(w.rate_per_s > 0 && w.users <= 0),
      queued_((w.warmup > 0 || w.cooldown > 0) && w.rate_per_s <= 0 && w.users <= 0) {}

void Outcomes::arrived(int64_t id, Ticks now) {
  if (start_ < 0) {
    start_ = now;
  }
  if (queued_) {
    return;  // its window opens and closes at first tokens (add)
  }
  if (id == from_) {
    window_start_ = now;
  }
  if (id == to_ - 1) {
    window_end_ = now;
  }
}

namespace {

// Of a request's `output` tokens, those generated within [from, to]: the first at
// `first_token`, the other output - 1 evenly over (first_token, finish].
double tokens_within(Ticks first_token, Ticks finish, int64_t output, Ticks from, Ticks to) {
  double tokens = first_token >= from && first_token <= to ? 1.0 : 0.0;
  if (output > 1) {
    const Ticks overlap = std::min(finish, to) - std::max(first_token, from);
    if (overlap > 0) {
      tokens += static_cast<double>(output - 1) * static_cast<double>(overlap) /
                static_cast<double>(finish - first_token);
    }
  }
  return tokens;
}

}  // namespace

void Outcomes::WindowSums::add(Ticks first_token, Ticks finish, int64_t output, bool within_goodput,
                               Ticks from, Ticks to) {
  const double t = tokens_within(first_token, finish, output, from, to);
  const double share = t / static_cast<double>(output);
  tokens += t;
  requests += share;
  good += within_goodput ? share : 0.0;
}

void Outcomes::add(int64_t id, Ticks arrival, Ticks first_token, Ticks finish, int64_t output) {
  ++simulated_;
  all_tokens_ += static_cast<double>(output);
  end_ = std::max(end_, finish);
  const double ttft = to_seconds(first_token - arrival);
  const double tpot =
      output > 1 ? to_seconds(finish - first_token) / static_cast<double>(output - 1) : 0.0;
  const bool good = (!goodput_.ttft_p99 || ttft <= goodput_.ttft_p99->si()) &&
                    (!goodput_.tpot_p99 || tpot <= goodput_.tpot_p99->si());
  if (queued_ && output > 0) {
    spans_.push_back(Span{first_token, finish, output, good});
    if (id == from_) {
      window_start_ = first_token;
    }
    if (id == to_ - 1) {
      window_end_ = first_token;
    }
  }
  if (!queued_ && window_start_ >= 0 && output > 0) {
    // The tokens this request generated while the measured requests arrived. Requests finish
    // in time order, so a window not yet closed ends after `finish`.
    window_.add(first_token, finish, output, good, window_start_,
                window_end_ >= 0 ? window_end_ : finish);
  }
  good_ += good ? 1 : 0;
  if (id < from_ || id >= to_) {
    return;
  }
  ++count_;
  ttft_.add(ttft);
  e2e_.add(to_seconds(finish - arrival));
  if (output > 1) {
    tpot_.add(tpot);
    gaps_ += finish - first_token;
    gap_count_ += output - 1;
  }
}

ServingResult Outcomes::summarise(ServingResult r, const EngineTotals& totals) const {
  r.feasible = true;
  r.requests = count_;
  r.simulated = simulated_;
  r.ttft = ttft_.summary();
  r.tpot = tpot_.summary();
  r.e2e = e2e_.summary();
  WindowSums sums = window_;
  bool window = windowed_;
  double window_batch = -1;
  if (queued_ && window_start_ >= 0 && window_end_ > window_start_) {
    // Between the first tokens of the first and the last measured request (see Outcomes).
    Ticks decoding = 0;  // the sequences' time decoding within the window, summed
    for (const Span& s : spans_) {
      sums.add(s.first_token, s.finish, s.output, s.good, window_start_, window_end_);
      decoding += std::max<Ticks>(
          0, std::min(s.finish, window_end_) - std::max(s.first_token, window_start_));
    }
    window = true;
    window_batch = static_cast<double>(decoding) / static_cast<double>(window_end_ - window_start_);
  }
  if (window) {
    r.duration = Seconds(to_seconds(window_end_ - window_start_));
    const double t = r.duration.si();
    r.output_tokens_per_s = t > 0 ? sums.tokens / t : 0;
    r.requests_per_s = t > 0 ? sums.requests / t : 0;
    r.goodput_per_s = t > 0 ? sums.good / t : 0;
    if (open_ && count_ > 0 && end_ > start_ &&
        to_seconds(window_start_ - start_) < r.e2e.mean - r.ttft.mean) {
      r.filling = true;
      r.run_tokens_per_s = all_tokens_ / to_seconds(end_ - start_);
    }
  } else {
    // The whole run.
    r.duration = Seconds(to_seconds(end_ - start_));
    const double t = r.duration.si();
    r.output_tokens_per_s = t > 0 ? all_tokens_ / t : 0;
    r.requests_per_s = t > 0 ? static_cast<double>(simulated_) / t : 0;
    r.goodput_per_s = t > 0 ? static_cast<double>(good_) / t : 0;
  }
  if (gap_count_ > 0) {
    r.itl_mean = to_seconds(gaps_) / static_cast<double>(gap_count_);
  }
  if (window_batch >= 0) {
    r.mean_batch = window_batch;
  } else if (totals.busy > 0) {
    r.mean_batch = static_cast<double>(totals.batch_time) / static_cast<double>(totals.busy);
  }
  r.max_batch = totals.max_batch;
  r.iterations = totals.iterations;
  r.preemptions = totals.preemptions;
  return r;
}

Text prompt_too_small(const InferenceModel& model, const Workload& w) {
  // input - cached_tokens(input) never falls as the input grows: the longest prompt computes most.
  const int64_t longest = w.max_input() - w.cached_tokens(w.max_input());
  const int64_t scale = model.kv_unit_scale();
  const int64_t room_units = kv_room(model, w) - model.kv_block_waste() * scale;
  if (model.kv_units(w.max_input()) - model.kv_units(w.cached_tokens(w.max_input())) <=
      room_units) {
    return {};
  }
  const int64_t room = room_units / scale;  // in tokens of every layer
  return {fmt::format("one request's prompt ({} tokens) is more than the KV cache of a prefill "
                      "instance holds ({} tokens)",
                      longest, std::max<int64_t>(room, 0)),
          fmt::format("o prompt de uma requisição ({} tokens) é maior do que o cache KV de uma "
                      "instância de prefill comporta ({} tokens)",
                      longest, std::max<int64_t>(room, 0))};
}

int64_t admission_limit(const InferenceModel& model, const Workload& w, bool every_one_decodes) {
  if (!every_one_decodes && w.beams == 1) {
    return model.engine_max_batch();
  }
  return std::min(model.engine_max_batch(), model.chunk_tokens() / w.beams);
}

int64_t decode_units(const InferenceModel& model, const Workload& w, int64_t input, int64_t output,
                     int64_t generated) {
  return w.beams * model.kv_units(input + generated, input + output);
}

ServingResult serving_start(const InferenceModel& model, const Workload& w) {
  ServingResult r;
  r.kv_sequences = static_cast<int64_t>(sequences_in_kv(model, w));
  r.reason = kv_too_small(model, w);
  if (r.reason.en.empty() && admission_limit(model, w, true) == 0) {
    // Every beam of a decoding request is a token of each iteration it runs in: not even one
    // request's beams fit.
    r.reason = {fmt::format("a request's {} beams are more than the {} tokens an iteration of "
                            "the engine runs",
                            w.beams, model.chunk_tokens()),
                fmt::format("os {} feixes de uma requisição são mais do que os {} tokens que "
                            "uma iteração do motor executa",
                            w.beams, model.chunk_tokens())};
  }
  return r;
}

}  // namespace gpuplan::detail

namespace gpuplan {

namespace {

// The units (InferenceModel::kv_units) of the longest request's own context, past its cached
// prefix: what the simulators must admit for it.
int64_t own_units_of_longest(const InferenceModel& model, const Workload& w) {
  if (w.lengths.empty()) {
    // Units never fall as the input grows, nor does input - cached_tokens(input).
    const int64_t input = w.max_input();
    return model.kv_units(w.held_tokens({input, w.max_output()})) -
           model.kv_units(w.cached_tokens(input));
  }
  int64_t most = 0;
  for (const RequestLength& l : w.lengths) {
    most =
        std::max(most, model.kv_units(w.held_tokens(l)) - model.kv_units(w.cached_tokens(l.input)));
  }
  return most;
}

}  // namespace

int64_t kv_room(const InferenceModel& model, const Workload& w) {
  return model.engine_kv_tokens() * model.kv_unit_scale() - model.kv_units(w.prefix_store());
}

double sequences_in_kv(const InferenceModel& model, const Workload& w) {
  // A request of the mean length (with a sliding window, its cache at that length).
  const Model& m = model.model();
  const double per_request =
      std::max(1.0, held_context(m, w.mean_context()) - held_context(m, w.mean_cached()) +
                        static_cast<double>(model.kv_block_waste()));
  const double room =
      static_cast<double>(model.kv_tokens()) -
      static_cast<double>(model.engines()) * held_context(m, static_cast<double>(w.prefix_store()));
  return std::max(0.0, room / per_request);
}

Seconds lone_decode_step(const InferenceModel& model, const Workload& w, int64_t input) {
  return model.decode_step(w.beams, static_cast<double>(input));
}

Text kv_too_small(const InferenceModel& model, const Workload& w) {
  const int64_t longest = w.max_own_context();
  const int64_t scale = model.kv_unit_scale();
  // As the simulators admit: the longest request's own units against the room.
  const int64_t room_units = kv_room(model, w) - model.kv_block_waste() * scale;
  if (own_units_of_longest(model, w) <= room_units) {
    return {};
  }
  const int64_t room = room_units / scale;  // in tokens of every layer
  const bool batches = model.engines() > 1;
  const int64_t store = w.prefix_store();
  return {
      fmt::format(
          "one request's context ({} tokens{}) is more than the KV cache of an "
          "instance holds ({} tokens{}{})",
          longest, store > 0 ? " besides its cached prefix" : "", std::max<int64_t>(room, 0),
          store > 0 ? fmt::format(" once {} tokens of shared prefixes are kept", store) : "",
          batches ? fmt::format(" for each of its {} batches in flight", model.engines()) : ""),
      fmt::format(
          "o contexto de uma requisição ({} tokens{}) é maior do que o cache KV de "
          "uma instância comporta ({} tokens{}{})",
          longest, store > 0 ? " além do seu prefixo em cache" : "", std::max<int64_t>(room, 0),
          store > 0 ? fmt::format(" depois de guardar {} tokens de prefixos comuns", store) : "",
          batches ? fmt::format(" para cada um dos seus {} lotes em andamento", model.engines())
                  : "")};
}

}  // namespace gpuplan
