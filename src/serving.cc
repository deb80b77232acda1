#include "gpuplan/serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <deque>
#include <fstream>
#include <limits>
#include <optional>
#include <queue>
#include <random>
#include <vector>

#include "gpuplan/fields.h"
#include "gpuplan/suggest.h"

namespace gpuplan {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct Request {
  int64_t input = 0;
  int64_t output = 0;
  double arrival = 0;
  int64_t target = 0;     // tokens to prefill: the prompt, or after a preemption the prompt and
                          // the output so far (recomputed)
  int64_t prefilled = 0;  // of `target`, in the KV cache
  int64_t generated = 0;  // output tokens produced
  int64_t kv = 0;         // tokens of KV cache it holds (reserve: its whole context)
  double first_token = -1;
  double finish = 0;
};

// One piece of work in an iteration: a decode step or a prompt chunk of one request.
struct Work {
  int64_t request = 0;
  int64_t prefill = 0;  // prompt tokens this iteration; 0 for a decode step
};

struct Engine {
  std::deque<int64_t> waiting;
  std::vector<int64_t> running;  // in admission order
  int64_t kv_used = 0;           // tokens of KV cache the running requests hold
  bool busy = false;
  bool batch_open = true;  // static batching: may admit (only between batches)
  double end = 0;          // end of the iteration in flight
  std::vector<Work> work;  // the iteration in flight

  int64_t load() const { return static_cast<int64_t>(waiting.size() + running.size()); }
};

// Arrival times, drawn from a seeded 64-bit Mersenne Twister (its output is fixed by the C++
// standard). Open loop: Poisson, exponential gaps of mean 1 / rate; or all at once. Closed
// loop: each user's first request after an exponential think time, the others unknown
// (kNever) until a request ends.
// An exponential draw of mean `mean` by inversion, -mean ln(1 - u), from 53 random bits.
double exponential(std::mt19937_64& gen, double mean) {
  const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
  return -std::log1p(-u) * mean;
}

std::vector<double> arrivals(const Workload& w, std::mt19937_64& gen) {
  std::vector<double> t(static_cast<size_t>(w.requests), 0.0);
  if (w.users > 0) {
    // Each user thinks before its first request too, so users start apart; without think
    // time they all start at once, as a benchmark at fixed concurrency does.
    for (size_t i = 0; i < t.size(); ++i) {
      const bool first = i < static_cast<size_t>(w.users);
      t[i] = !first ? kNever : w.think_time.si() > 0 ? exponential(gen, w.think_time.si()) : 0.0;
    }
    return t;
  }
  if (w.rate_per_s <= 0) {
    return t;
  }
  double now = 0;
  for (double& a : t) {
    now += exponential(gen, 1.0 / w.rate_per_s);
    a = now;
  }
  return t;
}

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) {
    return p;
  }
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) {
    sum += x;
  }
  // Nearest rank: the smallest value with at least q of the values at or below it.
  auto rank = [&](double q) {
    const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::max<size_t>(k, 1) - 1];
  };
  p.mean = sum / static_cast<double>(v.size());
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = v.back();
  return p;
}

class Simulation {
 public:
  Simulation(const InferenceModel& m, const Workload& w, const ServingSetup& s)
      : model_(m),
        w_(w),
        s_(s),
        engines_(static_cast<size_t>(s.replicas * m.engines())),
        gen_(w.seed) {
    const std::vector<double> t = arrivals(w, gen_);
    requests_.resize(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      const RequestLength l = w.length(static_cast<int64_t>(i));
      requests_[i].input = l.input;
      requests_[i].output = l.output;
      requests_[i].target = l.input;
      requests_[i].arrival = t[i];
      if (t[i] < kNever) {
        pending_.push({t[i], static_cast<int64_t>(i)});
      }
    }
  }

  ServingResult run() {
    ServingResult r;
    const int64_t longest = w_.max_context();
    r.kv_sequences =
        static_cast<int64_t>(static_cast<double>(model_.kv_tokens()) / w_.mean_context());
    if (longest > model_.engine_kv_tokens()) {
      const bool batches = model_.engines() > 1;
      r.reason = {
          fmt::format("one request's context ({} tokens) is more than the KV cache of an "
                      "instance holds ({} tokens{})",
                      longest, model_.engine_kv_tokens(),
                      batches
                          ? fmt::format(" for each of its {} batches in flight", model_.engines())
                          : ""),
          fmt::format("o contexto de uma requisição ({} tokens) é maior do que o cache KV de "
                      "uma instância comporta ({} tokens{})",
                      longest, model_.engine_kv_tokens(),
                      batches ? fmt::format(" para cada um dos seus {} lotes em andamento",
                                            model_.engines())
                              : "")};
      return r;
    }
    int64_t done = 0;
    double now = 0;
    const auto n = static_cast<int64_t>(requests_.size());
    while (done < n) {
      const double arrival = pending_.empty() ? kNever : pending_.top().first;
      // The engine whose iteration ends first (ties: the lowest index, for determinism).
      size_t first = engines_.size();
      for (size_t e = 0; e < engines_.size(); ++e) {
        if (engines_[e].busy &&
            (first == engines_.size() || engines_[e].end < engines_[first].end)) {
          first = e;
        }
      }
      const double ends = first < engines_.size() ? engines_[first].end : kNever;
      if (arrival <= ends && arrival < kNever) {
        now = arrival;
        const int64_t id = pending_.top().second;
        pending_.pop();
        dispatch(id);
      } else {
        GPUPLAN_CHECK(ends < kNever, "serving simulation stalled");
        now = ends;
        done += complete(engines_[first], now);
      }
      // Start idle engines once every arrival at this instant is queued.
      if (pending_.empty() || pending_.top().first > now) {
        for (Engine& e : engines_) {
          if (!e.busy) {
            start(e, now);
          }
        }
      }
    }
    return summarise(r);
  }

 private:
  void dispatch(int64_t id) {
    size_t target = 0;
    if (s_.balancer == Balancer::kRoundRobin) {
      target = static_cast<size_t>(id % static_cast<int64_t>(engines_.size()));
    } else {
      for (size_t e = 1; e < engines_.size(); ++e) {
        if (engines_[e].load() < engines_[target].load()) {
          target = e;
        }
      }
    }
    engines_[target].waiting.push_back(id);
  }

  // Paged KV cache: every decoding sequence needs one more token of cache this iteration.
  // While that does not fit, the most recently admitted sequence is preempted, as vLLM does:
  // its cache is freed and it waits at the head of the queue to recompute its prompt and the
  // output so far.
  // Returns the tokens the decoding sequences that stay will add.
  int64_t make_room(Engine& e, int64_t capacity) {
    auto growth = [&] {
      int64_t n = 0;
      for (int64_t id : e.running) {
        const Request& q = requests_[static_cast<size_t>(id)];
        n += q.prefilled == q.target ? 1 : 0;
      }
      return n;
    };
    while (e.running.size() > 1 && e.kv_used + growth() > capacity) {
      const int64_t id = e.running.back();
      e.running.pop_back();
      Request& q = requests_[static_cast<size_t>(id)];
      e.kv_used -= q.kv;
      q.kv = 0;
      q.prefilled = 0;
      q.target = q.input + q.generated;
      e.waiting.push_front(id);
      ++preemptions_;
    }
    return growth();
  }

  // Admits what fits and plans the next iteration; leaves the engine idle when there is
  // nothing to run.
  void start(Engine& e, double now) {
    const bool static_batch = s_.batching == Batching::kStatic;
    if (static_batch && e.running.empty()) {
      e.batch_open = true;
    }
    const int64_t limit = static_batch ? s_.static_batch : model_.engine_max_batch();
    const bool paged = s_.kv_policy == KvPolicy::kPaged && !static_batch;
    const int64_t capacity = model_.engine_kv_tokens();
    // Paged: the decoding sequences grow by a token each this iteration; room for that first.
    const int64_t growth = paged ? make_room(e, capacity) : 0;
    while (!e.waiting.empty() && e.batch_open && static_cast<int64_t>(e.running.size()) < limit) {
      Request& head = requests_[static_cast<size_t>(e.waiting.front())];
      // Reserve: the whole context, so nothing is ever evicted. Paged: what it prefills now; its
      // output claims blocks as it grows.
      const int64_t need = paged ? head.target : head.input + head.output;
      if (e.kv_used + growth + need > capacity) {
        break;  // first come, first served: the head waits for room
      }
      e.running.push_back(e.waiting.front());
      e.waiting.pop_front();
      head.kv = need;
      e.kv_used += need;
    }
    if (static_batch && !e.running.empty()) {
      e.batch_open = false;
    }
    // Static batches prefill the whole batch in one pass; continuous batching keeps to the
    // token budget, decodes first.
    int64_t budget = static_batch ? std::numeric_limits<int64_t>::max() : model_.chunk_tokens();
    e.work.clear();
    BatchShape b;
    for (int64_t id : e.running) {
      const Request& q = requests_[static_cast<size_t>(id)];
      if (q.prefilled == q.target && budget > 0) {
        e.work.push_back({id, 0});
        ++b.decodes;
        b.decode_context += static_cast<double>(q.input + q.generated);
        --budget;
      }
    }
    for (int64_t id : e.running) {
      const Request& q = requests_[static_cast<size_t>(id)];
      if (q.prefilled < q.target && budget > 0) {
        const int64_t c = std::min(q.target - q.prefilled, budget);
        e.work.push_back({id, c});
        b.prefill_tokens += c;
        const double p = static_cast<double>(q.prefilled);
        const double cd = static_cast<double>(c);
        b.prefill_keys += cd * p + cd * (cd + 1.0) / 2.0;
        budget -= c;
        if (q.prefilled + c == q.target) {
          ++b.logits;
        }
      }
    }
    if (e.work.empty()) {
      e.busy = false;
      return;
    }
    b.logits += b.decodes;
    const double t = model_.iteration(b).total().si();
    GPUPLAN_CHECK(std::isfinite(t) && t > 0, "an iteration without a finite positive time");
    e.busy = true;
    e.end = now + t;
    ++iterations_;
    batch_time_ += t * static_cast<double>(e.running.size());
    busy_time_ += t;
    max_batch_ = std::max(max_batch_, static_cast<int64_t>(e.running.size()));
  }

  // Applies the iteration that ended at `now`; returns the requests it finished.
  int64_t complete(Engine& e, double now) {
    const bool paged = s_.kv_policy == KvPolicy::kPaged && s_.batching != Batching::kStatic;
    int64_t finished = 0;
    for (const Work& k : e.work) {
      Request& q = requests_[static_cast<size_t>(k.request)];
      if (k.prefill > 0) {
        q.prefilled += k.prefill;
        if (q.prefilled < q.target) {
          continue;
        }
        if (q.first_token < 0) {
          q.first_token = now;
        }
      } else if (paged) {
        ++q.kv;  // the token just decoded now has its keys and values in the cache
        ++e.kv_used;
      }
      ++q.generated;
      if (q.generated == q.output) {
        q.finish = now;
        ++finished;
        // Closed loop: the user whose request ended sends the next one after thinking; the
        // j-th completion issues request users + j.
        if (w_.users > 0) {
          const size_t next = static_cast<size_t>(w_.users + completions_++);
          if (next < requests_.size()) {
            const double think = w_.think_time.si();
            requests_[next].arrival = now + (think > 0 ? exponential(gen_, think) : 0.0);
            pending_.push({requests_[next].arrival, static_cast<int64_t>(next)});
          }
        }
      }
    }
    std::erase_if(e.running, [&](int64_t id) {
      const Request& q = requests_[static_cast<size_t>(id)];
      if (q.generated < q.output) {
        return false;
      }
      e.kv_used -= q.kv;
      return true;
    });
    e.busy = false;
    return finished;
  }

  ServingResult summarise(ServingResult r) const {
    r.feasible = true;
    r.requests = static_cast<int64_t>(requests_.size());
    std::vector<double> ttft;
    std::vector<double> tpot;
    std::vector<double> e2e;
    double first = kNever;
    double last = 0;
    double gaps = 0;
    double gap_count = 0;
    double tokens = 0;
    for (const Request& q : requests_) {
      first = std::min(first, q.arrival);
      last = std::max(last, q.finish);
      ttft.push_back(q.first_token - q.arrival);
      e2e.push_back(q.finish - q.arrival);
      tokens += static_cast<double>(q.output);
      if (q.output > 1) {
        tpot.push_back((q.finish - q.first_token) / static_cast<double>(q.output - 1));
        gaps += q.finish - q.first_token;
        gap_count += static_cast<double>(q.output - 1);
      }
    }
    r.duration = Seconds(last - first);
    r.output_tokens_per_s = r.duration.si() > 0 ? tokens / r.duration.si() : 0;
    r.requests_per_s = r.duration.si() > 0 ? static_cast<double>(r.requests) / r.duration.si() : 0;
    r.ttft = percentiles(std::move(ttft));
    r.tpot = percentiles(std::move(tpot));
    r.e2e = percentiles(std::move(e2e));
    if (gap_count > 0) {
      r.itl_mean = gaps / gap_count;
    }
    r.mean_batch = busy_time_ > 0 ? batch_time_ / busy_time_ : 0;
    r.max_batch = max_batch_;
    r.iterations = iterations_;
    r.preemptions = preemptions_;
    return r;
  }

  const InferenceModel& model_;
  const Workload& w_;
  const ServingSetup& s_;
  std::vector<Engine> engines_;
  std::vector<Request> requests_;
  std::mt19937_64 gen_;  // arrivals and think times
  // Arrivals not yet dispatched, earliest first (ties: the lower id).
  std::priority_queue<std::pair<double, int64_t>, std::vector<std::pair<double, int64_t>>,
                      std::greater<>>
      pending_;
  int64_t iterations_ = 0;
  int64_t completions_ = 0;
  int64_t preemptions_ = 0;
  int64_t max_batch_ = 0;
  double batch_time_ = 0;
  double busy_time_ = 0;
};

constexpr std::array kKvPolicies = {
    std::pair{KvPolicy::kReserve, std::string_view("reserve")},
    std::pair{KvPolicy::kPaged, std::string_view("paged")},
};

constexpr std::array kBalancers = {
    std::pair{Balancer::kRoundRobin, std::string_view("round-robin")},
    std::pair{Balancer::kLeastLoaded, std::string_view("least-loaded")},
};

}  // namespace

std::string_view kv_policy_name(KvPolicy p) {
  for (const auto& [value, name] : kKvPolicies) {
    if (value == p) {
      return name;
    }
  }
  return "?";
}

Result<KvPolicy> parse_kv_policy(std::string_view name) {
  std::vector<std::string> names;
  for (const auto& [value, text] : kKvPolicies) {
    if (text == name) {
      return value;
    }
    names.emplace_back(text);
  }
  return fail("", fmt::format("unknown KV policy '{}'", name), suggestion_hint(name, names));
}

std::string_view balancer_name(Balancer b) {
  for (const auto& [value, name] : kBalancers) {
    if (value == b) {
      return name;
    }
  }
  return "?";
}

Result<Balancer> parse_balancer(std::string_view name) {
  std::vector<std::string> names;
  for (const auto& [value, text] : kBalancers) {
    if (text == name) {
      return value;
    }
    names.emplace_back(text);
  }
  return fail("", fmt::format("unknown balancer '{}'", name), suggestion_hint(name, names));
}

ServingResult simulate_serving(const InferenceModel& model, const Workload& w,
                               const ServingSetup& s) {
  GPUPLAN_CHECK(model.feasible(), "simulating an instance that cannot serve");
  GPUPLAN_CHECK(
      w.requests > 0 && (!w.lengths.empty() || (w.input_tokens > 0 && w.output_tokens > 0)),
      "a workload needs requests with input and output tokens");
  GPUPLAN_CHECK(s.replicas > 0, "a setup needs an instance");
  GPUPLAN_CHECK(s.batching == Batching::kContinuous || s.static_batch > 0,
                "static batching needs a batch size");
  GPUPLAN_CHECK(w.users >= 0 && (w.users == 0 || w.rate_per_s <= 0),
                "a workload is an open loop (rate) or a closed loop (users), not both");
  return Simulation(model, w, s).run();
}

bool meets_slo(const ServingResult& r, const Slo& slo, Text* why) {
  auto over = [&](const char* what, double ms, double bound_ms, int decimals) {
    if (why != nullptr) {
      *why = {fmt::format("p99 {} {} ms is over {} ms", what, number(ms, decimals, Lang::kEn),
                          number(bound_ms, decimals, Lang::kEn)),
              fmt::format("p99 {} de {} ms passa de {} ms", what, number(ms, decimals, Lang::kPt),
                          number(bound_ms, decimals, Lang::kPt))};
    }
    return false;
  };
  if (slo.ttft_p99 && r.ttft.p99 > slo.ttft_p99->si()) {
    return over("TTFT", r.ttft.p99 * 1e3, slo.ttft_p99->si() * 1e3, 0);
  }
  if (slo.tpot_p99 && r.tpot.p99 > slo.tpot_p99->si()) {
    return over("TPOT", r.tpot.p99 * 1e3, slo.tpot_p99->si() * 1e3, 1);
  }
  return true;
}

Capacity capacity_under_slo(const InferenceModel& model, const Workload& w, const ServingSetup& s,
                            const Slo& slo) {
  Capacity c;
  Workload offline = w;
  offline.rate_per_s = 0;
  c.offline = simulate_serving(model, offline, s);
  if (!c.offline.feasible) {
    c.reason = c.offline.reason;
    return c;
  }
  const double ceiling = c.offline.requests_per_s;
  if (!slo.any()) {
    c.feasible = true;
    c.max_rate_per_s = ceiling;
    c.at_max = c.offline;
    return c;
  }
  auto run = [&](double rate) {
    Workload p = w;
    p.rate_per_s = rate;
    return simulate_serving(model, p, s);
  };
  // A light load: 2 % of the ceiling. Missing the objective there means no rate meets it.
  double low = ceiling * 0.02;
  ServingResult light = run(low);
  Text why;
  if (!meets_slo(light, slo, &why)) {
    c.reason = {
        fmt::format("even a light load ({:.3g} requests/s) misses the objective: {}", low, why.en),
        fmt::format("mesmo uma carga leve ({} requisições/s) perde o objetivo: {}",
                    number(low, low < 1 ? 3 : 2, Lang::kPt), why.pt)};
    c.at_max = std::move(light);
    return c;
  }
  c.feasible = true;
  c.max_rate_per_s = low;
  c.at_max = std::move(light);
  double high = ceiling;
  while (high - low > 0.01 * low) {
    const double mid = 0.5 * (low + high);
    ServingResult r = run(mid);
    if (meets_slo(r, slo)) {
      low = mid;
      c.max_rate_per_s = mid;
      c.at_max = std::move(r);
    } else {
      high = mid;
    }
  }
  return c;
}

UserCapacity users_under_slo(const InferenceModel& model, const Workload& w, const ServingSetup& s,
                             const Slo& slo) {
  UserCapacity c;
  const int64_t per_engine = std::min(
      model.engine_max_batch(),
      static_cast<int64_t>(static_cast<double>(model.engine_kv_tokens()) / w.mean_context()));
  const int64_t at_once = per_engine * model.engines() * s.replicas;
  if (w.max_context() > model.engine_kv_tokens() || at_once < 1) {
    c.reason = {fmt::format("one request's context ({} tokens) is more than the KV cache of an "
                            "instance holds ({} tokens)",
                            w.max_context(), model.engine_kv_tokens()),
                fmt::format("o contexto de uma requisição ({} tokens) é maior do que o cache KV "
                            "de uma instância comporta ({} tokens)",
                            w.max_context(), model.engine_kv_tokens())};
    return c;
  }
  auto run = [&](int64_t users) {
    Workload p = w;
    p.rate_per_s = 0;
    p.users = users;
    p.requests = closed_loop_requests(w, users);
    return simulate_serving(model, p, s);
  };
  ServingResult one = run(1);
  Text why;
  if (!meets_slo(one, slo, &why)) {
    c.reason = {fmt::format("even one user misses the objective: {}", why.en),
                fmt::format("mesmo um usuário perde o objetivo: {}", why.pt)};
    c.at_max = std::move(one);
    return c;
  }
  c.feasible = true;
  c.max_users = 1;
  c.at_max = std::move(one);
  c.at_once = at_once;
  // Bisection over [1, what the instances run at once]: more users than that only queue.
  int64_t low = 1;
  int64_t high = at_once + 1;  // the first count known (or assumed) to miss
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    ServingResult r = run(mid);
    if (meets_slo(r, slo)) {
      low = mid;
      c.max_users = mid;
      c.at_max = std::move(r);
    } else {
      high = mid;
    }
  }
  return c;
}

int64_t closed_loop_requests(const Workload& w, int64_t users) {
  return std::max(w.requests, 4 * users);
}

RequestLength Workload::length(int64_t request) const {
  if (lengths.empty()) {
    return {input_tokens, output_tokens};
  }
  return lengths[static_cast<size_t>(request) % lengths.size()];
}

double Workload::mean_context() const {
  if (lengths.empty()) {
    return static_cast<double>(input_tokens + output_tokens);
  }
  double sum = 0;
  for (const RequestLength& l : lengths) {
    sum += static_cast<double>(l.input + l.output);
  }
  return sum / static_cast<double>(lengths.size());
}

int64_t Workload::max_context() const {
  int64_t most = lengths.empty() ? input_tokens + output_tokens : 0;
  for (const RequestLength& l : lengths) {
    most = std::max(most, l.input + l.output);
  }
  return most;
}

Result<std::vector<RequestLength>> load_request_lengths(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return fail(path, "cannot open the file", "check the path");
  }
  std::vector<RequestLength> out;
  std::string line;
  int64_t number = 0;
  bool header = false;
  // One positive integer, all of `text`.
  auto count = [](std::string_view text) -> std::optional<int64_t> {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
      text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
      text.remove_suffix(1);
    }
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 1) {
      return std::nullopt;
    }
    return v;
  };
  while (std::getline(in, line)) {
    ++number;
    const std::string where = fmt::format("{}:{}", path, number);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty() || line.front() == '#') {
      continue;
    }
    if (!header) {
      if (line != "input_tokens,output_tokens") {
        return fail(where, fmt::format("the header is '{}'", line),
                    "the first line must be 'input_tokens,output_tokens'");
      }
      header = true;
      continue;
    }
    const size_t comma = line.find(',');
    const std::optional<int64_t> a =
        comma == std::string::npos ? std::nullopt : count(std::string_view(line).substr(0, comma));
    const std::optional<int64_t> b =
        comma == std::string::npos ? std::nullopt : count(std::string_view(line).substr(comma + 1));
    if (!a || !b) {
      return fail(where, fmt::format("'{}' is not two token counts", line),
                  "each line is input_tokens,output_tokens, both positive integers");
    }
    GPUPLAN_RETURN_IF_ERROR(check_count(fields::kRequestTokens, *a, where + " input_tokens"));
    GPUPLAN_RETURN_IF_ERROR(check_count(fields::kRequestTokens, *b, where + " output_tokens"));
    out.push_back({*a, *b});
  }
  if (out.empty()) {
    return fail(path, "no requests", "give a header line and one line per request");
  }
  return out;
}

}  // namespace gpuplan
