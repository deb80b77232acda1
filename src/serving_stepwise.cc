// The reference serving simulator: every iteration of every engine is an event, and each one
// walks every running sequence. simulate_serving (serving_events.cc) must give the same result;
// tests/serving_test.cc drives random workloads through both.
#include <algorithm>
#include <deque>
#include <limits>

#include "gpuplan/result.h"
#include "serving_sim.h"

namespace gpuplan::detail {
namespace {

struct Request {
  int64_t input = 0;
  int64_t output = 0;
  Ticks arrival = 0;
  int64_t target = 0;     // tokens to prefill: the prompt, or after a preemption the prompt and
                          // the output so far (recomputed)
  int64_t cached = 0;     // of the prompt, found in the prefix cache: never computed
  int64_t prefilled = 0;  // of `target`, in the KV cache
  int64_t generated = 0;  // output tokens produced
  int64_t kv = 0;         // KV units it holds (kv_units; reserve: its whole context)
  Ticks first_token = -1;
};

// One piece of work in an iteration: a decode step or a prompt chunk of one request.
struct Work {
  int64_t request = 0;
  int64_t prefill = 0;  // prompt tokens this iteration; 0 for a decode step
};

struct Engine {
  std::deque<int64_t> waiting;
  std::vector<int64_t> running;  // in admission order
  int64_t kv_used = 0;           // KV units the running requests hold
  bool busy = false;
  bool batch_open = true;  // static batching: may admit (only between batches)
  Ticks end = 0;           // end of the iteration in flight
  std::vector<Work> work;  // the iteration in flight
  int64_t prompts = 0;     // prompt tokens of the requests waiting or running (least-tokens)

  int64_t load() const { return static_cast<int64_t>(waiting.size() + running.size()); }
};

class Stepwise {
 public:
  Stepwise(const InferenceModel& m, const Workload& w, const ServingSetup& s)
      : model_(m),
        w_(w),
        s_(s),
        clock_(m),
        arrivals_(w),
        engines_(static_cast<size_t>(s.replicas * m.engines())),
        requests_(static_cast<size_t>(w.requests)),
        outcomes_(w) {}

  ServingResult run(ServingResult r) {
    int64_t done = 0;
    Ticks now = 0;
    while (done < w_.requests) {
      const Ticks arrival = arrivals_.empty() ? kNever : arrivals_.next_time();
      // The engine whose iteration ends first (ties: the lowest index, for determinism).
      size_t first = engines_.size();
      for (size_t e = 0; e < engines_.size(); ++e) {
        if (engines_[e].busy &&
            (first == engines_.size() || engines_[e].end < engines_[first].end)) {
          first = e;
        }
      }
      const Ticks ends = first < engines_.size() ? engines_[first].end : kNever;
      if (arrival <= ends && arrival < kNever) {
        now = arrival;
        const int64_t id = arrivals_.pop();
        outcomes_.arrived(id, now);
        Request& q = requests_[static_cast<size_t>(id)];
        const RequestLength l = w_.length(id);
        q.input = l.input;
        q.output = l.output;
        q.target = l.input;
        q.cached = w_.cached_tokens(l.input);
        q.prefilled = q.cached;
        q.arrival = now;
        dispatch(id);
      } else {
        GPUPLAN_CHECK(ends < kNever, "serving simulation stalled");
        now = ends;
        done += complete(engines_[first], now);
      }
      // Start idle engines once every arrival at this instant is queued.
      if (arrivals_.empty() || arrivals_.next_time() > now) {
        for (Engine& e : engines_) {
          if (!e.busy) {
            start(e, now);
          }
        }
      }
    }
    return outcomes_.summarise(std::move(r), totals_);
  }

 private:
  void dispatch(int64_t id) {
    size_t target = 0;
    if (s_.balancer == Balancer::kRoundRobin) {
      target = static_cast<size_t>(id % static_cast<int64_t>(engines_.size()));
    } else {
      const bool by_tokens = s_.balancer == Balancer::kLeastTokens;
      auto weight = [&](const Engine& g) { return by_tokens ? g.prompts : g.load(); };
      for (size_t e = 1; e < engines_.size(); ++e) {
        if (weight(engines_[e]) < weight(engines_[target])) {
          target = e;
        }
      }
    }
    engines_[target].waiting.push_back(id);
    engines_[target].prompts += requests_[static_cast<size_t>(id)].input;
  }

  // Paged KV cache: every decoding sequence needs one more token of cache this iteration.
  // While that does not fit, the most recently admitted sequence is preempted, as vLLM does:
  // its cache is freed and it waits at the head of the queue to recompute its prompt and the
  // output so far. Returns the tokens the decoding sequences that stay will add.
  int64_t make_room(Engine& e, int64_t capacity) {
    auto growth = [&] {
      int64_t n = 0;
      for (int64_t id : e.running) {
        const Request& q = requests_[static_cast<size_t>(id)];
        n += q.prefilled == q.target ? w_.beams : 0;  // every beam grows
      }
      return n * model_.kv_growth();
    };
    while (e.running.size() > 1 && e.kv_used + growth() > capacity) {
      const int64_t id = e.running.back();
      e.running.pop_back();
      Request& q = requests_[static_cast<size_t>(id)];
      e.kv_used -= q.kv;
      q.kv = 0;
      q.prefilled = q.cached;                             // the shared prefix stays cached
      q.target = w_.held_tokens({q.input, q.generated});  // the prompt and every beam's output
      e.waiting.push_front(id);
      ++totals_.preemptions;
    }
    return growth();
  }

  // Admits what fits and plans the next iteration; leaves the engine idle when there is
  // nothing to run.
  void start(Engine& e, Ticks now) {
    const bool static_batch = s_.batching == Batching::kStatic;
    if (static_batch && e.running.empty()) {
      e.batch_open = true;
    }
    const int64_t limit =
        static_batch ? s_.static_batch : admission_limit(model_, w_, /*every_one_decodes=*/false);
    const bool paged = s_.kv_policy == KvPolicy::kPaged && !static_batch;
    const int64_t capacity = kv_room(model_, w_);
    const int64_t growth = paged ? make_room(e, capacity) : 0;
    while (!e.waiting.empty() && e.batch_open && static_cast<int64_t>(e.running.size()) < limit) {
      Request& head = requests_[static_cast<size_t>(e.waiting.front())];
      // In units (kv_units): the window part reserved for the whole request.
      const int64_t held = w_.held_tokens({head.input, head.output});
      const int64_t need = model_.kv_admitted(paged ? head.target : held, held, head.cached);
      if (e.kv_used + growth + need > capacity) {
        break;
      }
      e.running.push_back(e.waiting.front());
      e.waiting.pop_front();
      head.kv = need;
      e.kv_used += need;
    }
    if (static_batch && !e.running.empty()) {
      e.batch_open = false;
    }
    int64_t budget = static_batch ? std::numeric_limits<int64_t>::max() : model_.chunk_tokens();
    e.work.clear();
    BatchShape b;
    // Prefill first: an iteration with a prompt to compute runs only prompts; one without runs
    // every decoder, whatever the token budget.
    const bool first = model_.params().prefill_first && !static_batch;
    const bool prompts = std::any_of(e.running.begin(), e.running.end(), [&](int64_t id) {
      const Request& q = requests_[static_cast<size_t>(id)];
      return q.prefilled < q.target;
    });
    for (int64_t id : e.running) {
      const Request& q = requests_[static_cast<size_t>(id)];
      if (q.prefilled == q.target && (first ? !prompts : budget > 0)) {
        // Each beam a token of the iteration, reading the prompt's keys and values and its own.
        e.work.push_back({id, 0});
        b.decodes += w_.beams;
        b.decode_context +=
            static_cast<double>(decode_units(model_, w_, q.input, q.output, q.generated));
        budget -= first ? 0 : w_.beams;
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
        b.prefill_keys += model_.prefill_keys(p, cd);
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
    const Ticks t = clock_.time(b);
    GPUPLAN_CHECK(t > 0, "an iteration without a positive time");
    e.busy = true;
    e.end = now + t;
    const auto running = static_cast<int64_t>(e.running.size());
    ++totals_.iterations;
    totals_.batch_time += t * running;
    totals_.busy += t;
    totals_.max_batch = std::max(totals_.max_batch, running);
  }

  // Applies the iteration that ended at `now`; returns the requests it finished.
  int64_t complete(Engine& e, Ticks now) {
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
        // the token each beam just decoded now has its keys and values in the cache
        q.kv += w_.beams * model_.kv_growth();
        e.kv_used += w_.beams * model_.kv_growth();
      }
      ++q.generated;
      if (q.generated == q.output) {
        ++finished;
        outcomes_.add(k.request, q.arrival, q.first_token, now, q.output);
        arrivals_.completed(now);
      }
    }
    std::erase_if(e.running, [&](int64_t id) {
      const Request& q = requests_[static_cast<size_t>(id)];
      if (q.generated < q.output) {
        return false;
      }
      e.kv_used -= q.kv;
      e.prompts -= q.input;
      return true;
    });
    e.busy = false;
    return finished;
  }

  const InferenceModel& model_;
  const Workload& w_;
  const ServingSetup& s_;
  IterationClock clock_;
  Arrivals arrivals_;
  std::vector<Engine> engines_;
  std::vector<Request> requests_;
  Outcomes outcomes_;
  EngineTotals totals_;
};

}  // namespace

ServingResult simulate_serving_stepwise(const InferenceModel& model, const Workload& w,
                                        const ServingSetup& s) {
  ServingResult r = serving_start(model, w);
  if (!r.reason.en.empty()) {
    return r;
  }
  return Stepwise(model, w, s).run(std::move(r));
}

}  // namespace gpuplan::detail
