// The event-driven serving simulator behind simulate_serving (serving.h).
//
// Between two events of an engine — an arrival that may be admitted, a completion, a chunk of
// a prompt, a preemption — its iterations are alike: every running sequence decodes one token,
// nothing joins or leaves. Such a run is one step: its length is summed in closed form
// (IterationClock::decode_run) and its sequences advance together. A decoding sequence's
// output count is kept relative to its engine's clock (decode iterations so far), so a run
// touches no sequence, and a heap of finishing clocks gives the next completion. An arrival at
// an engine whose queue was empty ends the run at the first iteration boundary after it, where
// the iteration-by-iteration simulator (serving_stepwise.cc) would admit it; arrivals behind a
// queue that cannot be admitted change nothing until a completion frees room. Every other rule
// is the reference's, step for step, so the two give the same result.
#include <algorithm>
#include <deque>
#include <limits>
#include <tuple>

#include "gpuplan/result.h"
#include "serving_sim.h"

namespace gpuplan {
namespace {

using detail::kNever;
using detail::Ticks;

enum class State : uint8_t { kWaiting, kPrefilling, kDecoding };

constexpr int64_t kGone = -1;

struct Request {
  int64_t id = 0;  // the order it was issued in
  int64_t input = 0;
  int64_t output = 0;
  Ticks arrival = 0;
  Ticks first_token = -1;
  int64_t target = 0;     // tokens to prefill: the prompt, or after a preemption the prompt and
                          // the output so far (recomputed)
  int64_t cached = 0;     // of the prompt, found in the prefix cache: never computed
  int64_t prefilled = 0;  // of `target`, in the KV cache
  // Output tokens produced and KV units held (reserve: the whole context); while decoding, as
  // of the engine's clock `joined`: each decode iteration since adds a token and kv_growth()
  // units.
  int64_t generated = 0;
  int64_t kv = 0;
  int64_t joined = 0;
  int64_t finish_clock = 0;  // decoding: the engine's clock at its last token
  int64_t admitted = 0;      // admission number: running order within an engine
  size_t position = 0;       // in its engine's running list
  State state = State::kWaiting;
};

// A decoding sequence's last token, by engine clock, then running order.
struct Finish {
  int64_t clock = 0;
  int64_t admitted = 0;
  int64_t slot = 0;
  auto operator<=>(const Finish&) const = default;
};

// What an engine's instances do: both phases of every request (aggregated serving), or one of
// them in a disaggregated deployment.
enum class Role : uint8_t { kBoth, kPrefill, kDecode };

// The engines of one instance shape: its model, iteration clock and KV cache.
struct Pool {
  const InferenceModel* model = nullptr;
  detail::IterationClock clock;
  int64_t capacity = 0;  // KV units for the requests' own contexts (kv_room)
  Role role = Role::kBoth;
};

struct Engine {
  uint8_t pool = 0;              // its index in Events::pools_
  std::deque<int64_t> waiting;   // request slots, first come first served
  std::vector<int64_t> running;  // slots in admission order; kGone where one left
  int64_t live = 0;              // running slots not gone
  int64_t prompts = 0;           // prompt tokens of the requests waiting or running (least-tokens)
  std::deque<int64_t> prefilling;  // running slots still prefilling, in admission order
  int64_t decoders = 0;
  int64_t context = 0;  // KV units the decoders hold (kv_units of input + generated), summed
  int64_t kv_used = 0;  // KV units the running requests hold
  int64_t clock = 0;    // decode iterations applied
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes;
  int64_t stale = 0;  // entries of finishes left by preempted decoders
  bool busy = false;
  bool batch_open = true;  // static batching: may admit (only between batches)
  // In flight: k alike iterations (k > 1 only for a run) from `start` to `end`.
  Ticks start = 0;
  Ticks end = 0;
  int64_t k = 0;
  bool run = false;         // only decodes, every decoder: k may grow past 1
  int64_t decoded = 0;      // decoders, each decoding a token per iteration
  int64_t run_context = 0;  // their context in the first
  int64_t sequences = 0;    // running in each
  uint64_t version = 0;     // which planned end is current
  std::vector<std::pair<int64_t, int64_t>> chunks;  // prompt tokens per slot, admission order

  int64_t load() const { return static_cast<int64_t>(waiting.size()) + live; }
};

class Events {
 public:
  // Aggregated: s.replicas instances of `m`, each running both phases.
  Events(const InferenceModel& m, const Workload& w, const ServingSetup& s)
      : outcomes(w),
        w_(w),
        s_(s),
        static_batch_(s.batching == Batching::kStatic),
        paged_(s.kv_policy == KvPolicy::kPaged && !static_batch_),
        arrivals_(w) {
    GPUPLAN_CHECK(static_batch_ || m.chunk_tokens() > 0, "an engine needs a token budget");
    add_pool(m, s.replicas, Role::kBoth);
    entry_ = engines_.size();
  }

  // Disaggregated: prefill and decode pools, the KV cache sent from one to the other.
  Events(const InferenceModel& prefill, const InferenceModel& decode, const Workload& w,
         const DisaggregatedSetup& d)
      : outcomes(w),
        w_(w),
        s_{.replicas = d.prefill_replicas + d.decode_replicas, .balancer = d.balancer},
        static_batch_(false),
        paged_(false),
        transfer_(d.transfer),
        arrivals_(w) {
    GPUPLAN_CHECK(prefill.chunk_tokens() > 0 && decode.chunk_tokens() > 0,
                  "an engine needs a token budget");
    add_pool(prefill, d.prefill_replicas, Role::kPrefill);
    entry_ = engines_.size();
    add_pool(decode, d.decode_replicas, Role::kDecode);
    sending_.assign(entry_, 0);
  }

  detail::EngineTotals totals;
  detail::Outcomes outcomes;

  void run() {
    int64_t done = 0;
    Ticks now = 0;
    while (done < w_.requests) {
      const Ticks arrival = arrivals_.empty() ? kNever : arrivals_.next_time();
      const Ticks sent = transfers_.empty() ? kNever : std::get<0>(transfers_.top());
      const Ticks ends = next_end();
      if (arrival <= ends && arrival <= sent && arrival < kNever) {
        now = arrival;
        const int64_t id = arrivals_.pop();
        outcomes.arrived(id, now);
        dispatch(id, new_request(id, now), now, 0, entry_);
      } else if (sent <= ends && sent < kNever) {
        now = sent;
        const auto [end, e, slot] = transfers_.top();
        transfers_.pop();
        received(e, slot, now);
      } else {
        GPUPLAN_CHECK(ends < kNever, "serving simulation stalled");
        now = ends;
        const size_t e = std::get<1>(ends_.top());
        ends_.pop();
        done += complete(e, now);
      }
      // Start idle engines once every arrival at this instant is queued.
      if (arrivals_.empty() || arrivals_.next_time() > now) {
        std::sort(to_start_.begin(), to_start_.end());
        for (size_t e : to_start_) {
          flagged_[e] = 0;
          start(e, now);
        }
        to_start_.clear();
      }
    }
  }

 private:
  void add_pool(const InferenceModel& m, int64_t replicas, Role role) {
    pools_.push_back(Pool{
        .model = &m, .clock = detail::IterationClock(m), .capacity = kv_room(m, w_), .role = role});
    const size_t n = static_cast<size_t>(replicas * m.engines());
    for (size_t i = 0; i < n; ++i) {
      engines_.emplace_back();
      engines_.back().pool = static_cast<uint8_t>(pools_.size() - 1);
    }
    flagged_.resize(engines_.size(), 0);
  }
  Pool& pool(const Engine& e) { return pools_[e.pool]; }

  int64_t generated(const Request& q, const Engine& e) const {
    return q.state == State::kDecoding ? q.generated + (e.clock - q.joined) : q.generated;
  }
  int64_t kv(const Request& q, const Engine& e) {
    return q.state == State::kDecoding && paged_
               ? q.kv + (e.clock - q.joined) * w_.beams * pool(e).model->kv_growth()
               : q.kv;
  }
  // The KV units a request of `e` that generated `generated` tokens counts in the engine's
  // context (detail::decode_units).
  int64_t context_units(const Engine& e, const Request& q, int64_t generated) {
    return detail::decode_units(*pool(e).model, w_, q.input, q.output, generated);
  }
  // Drops the entries at the top of `e.finishes` that preempted decoders left.
  void drop_stale(Engine& e) {
    while (e.stale > 0 && !e.finishes.empty()) {
      const Finish& f = e.finishes.top();
      const Request& q = slots_[static_cast<size_t>(f.slot)];
      if (q.state == State::kDecoding && q.admitted == f.admitted) {
        return;
      }
      e.finishes.pop();
      --e.stale;
    }
  }

  int64_t new_request(int64_t id, Ticks now) {
    int64_t slot = 0;
    if (free_.empty()) {
      slot = static_cast<int64_t>(slots_.size());
      slots_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
      slots_[static_cast<size_t>(slot)] = Request{};
    }
    Request& q = slots_[static_cast<size_t>(slot)];
    const RequestLength l = w_.length(id);
    q.id = id;
    q.input = l.input;
    q.output = l.output;
    q.target = l.input;
    q.cached = w_.cached_tokens(l.input);
    q.prefilled = q.cached;
    q.arrival = now;
    return slot;
  }

  void flag(size_t e) {
    if (flagged_[e] == 0) {
      flagged_[e] = 1;
      to_start_.push_back(e);
    }
  }

  // The earliest current end of an iteration in flight (stale plans dropped), or kNever.
  Ticks next_end() {
    while (!ends_.empty()) {
      const auto& [end, e, version] = ends_.top();
      const Engine& g = engines_[e];
      if (g.busy && g.version == version) {
        return end;
      }
      ends_.pop();
    }
    return kNever;
  }

  void plan_end(size_t e, Ticks end) {
    Engine& g = engines_[e];
    g.end = end;
    ++g.version;
    ends_.emplace(end, e, g.version);
  }

  // Queues request `id` (in `slot`) at one of the engines [first, last).
  void dispatch(int64_t id, int64_t slot, Ticks now, size_t first, size_t last) {
    size_t target = first;
    if (s_.balancer == Balancer::kRoundRobin) {
      target = first + static_cast<size_t>(id % static_cast<int64_t>(last - first));
    } else {
      // Least-loaded by requests, or by their prompt tokens; ties: the lowest engine.
      const bool by_tokens = s_.balancer == Balancer::kLeastTokens;
      auto weight = [&](const Engine& g) { return by_tokens ? g.prompts : g.load(); };
      for (size_t e = first + 1; e < last; ++e) {
        if (weight(engines_[e]) < weight(engines_[target])) {
          target = e;
        }
      }
    }
    detail::IterationClock& clock = pool(engines_[target]).clock;
    Engine& g = engines_[target];
    g.prompts += slots_[static_cast<size_t>(slot)].input;
    const bool head = g.waiting.empty();
    g.waiting.push_back(slot);
    if (!g.busy) {
      flag(target);
    } else if (head && g.k > 1) {
      // The run ends at the first boundary at or after now, where the engine may admit it.
      int64_t low = 1;
      int64_t high = g.k;
      while (low < high) {
        const int64_t mid = low + (high - low) / 2;
        if (g.start + clock.decode_run(g.decoded, g.run_context, mid) >= now) {
          high = mid;
        } else {
          low = mid + 1;
        }
      }
      if (low < g.k) {
        g.k = low;
        plan_end(target, g.start + clock.decode_run(g.decoded, g.run_context, low));
      }
    }
  }

  void leave(Engine& e, Request& q) {
    e.running[q.position] = kGone;
    --e.live;
    e.prompts -= q.input;
    q.state = State::kWaiting;
    if (e.running.size() > 64 && static_cast<size_t>(e.live) * 2 < e.running.size()) {
      std::erase(e.running, kGone);
      for (size_t i = 0; i < e.running.size(); ++i) {
        slots_[static_cast<size_t>(e.running[i])].position = i;
      }
    }
  }

  void finish(Engine& e, Request& q, int64_t slot, Ticks now) {
    leave(e, q);
    outcomes.add(q.id, q.arrival, q.first_token, now, q.output);
    arrivals_.completed(now);
    free_.push_back(slot);
  }

  // A prefill engine finished request `slot`'s prompt at `now`: the request leaves it, and its KV
  // cache, held until sent, goes over the engine's link once the caches before it are sent.
  void hand_off(size_t index, Request& q, int64_t slot, Ticks now) {
    leave(engines_[index], q);
    const Ticks start = std::max(now, sending_[index]);
    // The prompt's own cache, in tokens of every layer (rounded up).
    const InferenceModel& m = *pool(engines_[index]).model;
    const int64_t scale = m.kv_unit_scale();
    const int64_t tokens = (m.kv_units(q.input) - m.kv_units(q.cached) + scale - 1) / scale;
    sending_[index] = start + detail::to_ticks(transfer_.time(tokens).si());
    transfers_.emplace(sending_[index], index, slot);
  }

  // The cache of request `slot` reached the decode pool from prefill engine `index`.
  void received(size_t index, int64_t slot, Ticks now) {
    Engine& e = engines_[index];
    Request& q = slots_[static_cast<size_t>(slot)];
    e.kv_used -= q.kv;
    q.kv = 0;
    if (!e.busy) {
      flag(index);  // room for the prompts waiting there
    }
    dispatch(q.id, slot, now, entry_, engines_.size());
  }

  // A request whose prompt is in `e`'s KV cache decodes from the next iteration on, each of its
  // beams a decoder.
  void join(Engine& e, Request& q, int64_t slot) {
    q.state = State::kDecoding;
    q.joined = e.clock;
    q.finish_clock = e.clock + q.output - q.generated;
    e.decoders += w_.beams;
    e.context += context_units(e, q, q.generated);
    e.finishes.push({.clock = q.finish_clock, .admitted = q.admitted, .slot = slot});
  }

  // Paged KV cache: every decoder needs one more token of cache (kv_growth units) this
  // iteration; while that does not fit, the newest running sequence is preempted to the head of
  // the queue (vLLM).
  void make_room(Engine& e) {
    const int64_t capacity = pool(e).capacity;
    const int64_t growth = pool(e).model->kv_growth();
    while (e.live > 1 && e.kv_used + e.decoders * growth > capacity) {
      while (e.running.back() == kGone) {
        e.running.pop_back();
      }
      const int64_t slot = e.running.back();
      e.running.pop_back();
      --e.live;
      Request& q = slots_[static_cast<size_t>(slot)];
      e.kv_used -= kv(q, e);
      if (q.state == State::kDecoding) {
        q.generated = generated(q, e);
        e.decoders -= w_.beams;
        ++e.stale;
        e.context -= context_units(e, q, q.generated);
      } else {
        GPUPLAN_CHECK(e.prefilling.back() == slot, "the newest prefill is the newest sequence");
        e.prefilling.pop_back();
      }
      q.state = State::kWaiting;
      q.kv = 0;
      q.prefilled = q.cached;                             // the shared prefix stays cached
      q.target = w_.held_tokens({q.input, q.generated});  // the prompt and every beam's output
      e.waiting.push_front(slot);
      ++totals.preemptions;
    }
  }

  // Admits what fits and plans the next iteration, or a run of them; leaves the engine idle when
  // nothing runs.
  void start(size_t index, Ticks now) {
    Engine& e = engines_[index];
    Pool& p = pool(e);
    const InferenceModel& model = *p.model;
    if (static_batch_ && e.live == 0) {
      e.batch_open = true;
    }
    // A decode engine runs every sequence it admits in its next iteration: no more of them than
    // its token budget.
    const int64_t limit = static_batch_
                              ? s_.static_batch
                              : detail::admission_limit(model, w_, p.role == Role::kDecode);
    if (paged_) {
      make_room(e);
    }
    const int64_t growth = paged_ ? e.decoders * model.kv_growth() : 0;
    while (!e.waiting.empty() && e.batch_open && e.live < limit) {
      const int64_t slot = e.waiting.front();
      Request& head = slots_[static_cast<size_t>(slot)];
      // KV cache: a prefill engine holds the prompt, the others the whole context (paged: what
      // is computed so far).
      const RequestLength length{head.input, head.output};
      const int64_t tokens = p.role == Role::kPrefill ? head.input
                             : paged_                 ? head.target
                                                      : w_.held_tokens(length);
      // In units (kv_units): the window part reserved for all the engine will hold.
      const int64_t reserved = p.role == Role::kPrefill ? head.input : w_.held_tokens(length);
      const int64_t need = model.kv_admitted(tokens, reserved, head.cached);
      if (e.kv_used + growth + need > p.capacity) {
        break;  // first come, first served: the head waits for room
      }
      e.waiting.pop_front();
      head.admitted = ++admissions_;
      head.position = e.running.size();
      head.kv = need;
      e.running.push_back(slot);
      ++e.live;
      e.kv_used += need;
      if (p.role == Role::kDecode) {
        join(e, head, slot);
      } else {
        head.state = State::kPrefilling;
        e.prefilling.push_back(slot);
      }
    }
    if (static_batch_ && e.live > 0) {
      e.batch_open = false;
    }
    if (e.live == 0) {
      e.busy = false;
      return;
    }
    int64_t budget = static_batch_ ? std::numeric_limits<int64_t>::max() : model.chunk_tokens();
    e.chunks.clear();
    BatchShape b;
    // Prefill first: an iteration with prompts runs only them, and one without decodes every
    // running sequence, the token budget bounding prompts only.
    const bool first = model.params().prefill_first && !static_batch_;
    if (!first || e.prefilling.empty()) {
      // Mixed, every decoder decodes: a prompt that finishes took at least a token of the
      // budget, so there are never more decoders than the budget holds.
      GPUPLAN_CHECK(first || e.decoders <= budget, "more decoders than the token budget");
      b.decodes = e.decoders;
      b.decode_context = static_cast<double>(e.context);
      budget -= first ? 0 : e.decoders;
    }
    for (int64_t slot : e.prefilling) {
      if (budget <= 0) {
        break;
      }
      const Request& q = slots_[static_cast<size_t>(slot)];
      const int64_t c = std::min(q.target - q.prefilled, budget);
      e.chunks.emplace_back(slot, c);
      b.prefill_tokens += c;
      const double done = static_cast<double>(q.prefilled);
      const double cd = static_cast<double>(c);
      b.prefill_keys += model.prefill_keys(done, cd);
      budget -= c;
      if (q.prefilled + c == q.target) {
        ++b.logits;
      }
    }
    b.logits += b.decodes;
    e.decoded = b.decodes;
    e.run_context = static_cast<int64_t>(b.decode_context);
    e.run = e.chunks.empty() && e.decoded > 0;
    e.k = 1;
    if (e.run) {
      // Alike iterations until the first sequence ends or, paged, the cache has no room for the
      // next token of every decoder.
      drop_stale(e);
      e.k = e.finishes.top().clock - e.clock;
      if (paged_ && model.kv_growth() > 0) {
        e.k = std::min(e.k, (p.capacity - e.kv_used) / (e.decoders * model.kv_growth()));
      }
      GPUPLAN_CHECK(e.k >= 1, "a run of no iterations");
    }
    e.sequences = e.live;
    e.start = now;
    e.busy = true;
    const Ticks t = e.run ? p.clock.decode_run(e.decoded, e.run_context, e.k) : p.clock.time(b);
    GPUPLAN_CHECK(t > 0, "an iteration without a positive time");
    plan_end(index, now + t);
  }

  // Applies the iterations that ended at `now`; returns the requests they finished.
  int64_t complete(size_t index, Ticks now) {
    Engine& e = engines_[index];
    const Ticks span = e.end - e.start;
    totals.iterations += e.k;
    totals.busy += span;
    totals.batch_time += span * e.sequences;
    totals.max_batch = std::max(totals.max_batch, e.sequences);
    // The clock counts decode iterations: one that ran only prompts leaves it.
    e.clock += e.decoded > 0 ? e.k : 0;
    const int64_t growth = pool(e).model->kv_growth();
    e.context += e.decoded * e.k * growth;
    if (paged_) {
      // the tokens just decoded have their keys and values cached
      e.kv_used += e.decoded * e.k * growth;
    }
    int64_t finished = 0;
    while (drop_stale(e), !e.finishes.empty()) {
      const Finish f = e.finishes.top();
      if (f.clock > e.clock) {
        break;
      }
      e.finishes.pop();
      GPUPLAN_CHECK(f.clock == e.clock, "a sequence decoded past its last token");
      Request& q = slots_[static_cast<size_t>(f.slot)];
      e.decoders -= w_.beams;
      e.context -= context_units(e, q, q.output);
      e.kv_used -= kv(q, e);
      finish(e, q, f.slot, now);
      ++finished;
    }
    for (const auto& [slot, c] : e.chunks) {
      Request& q = slots_[static_cast<size_t>(slot)];
      q.prefilled += c;
      if (q.prefilled < q.target) {
        continue;
      }
      GPUPLAN_CHECK(e.prefilling.front() == slot, "prompts finish in admission order");
      e.prefilling.pop_front();
      if (q.first_token < 0) {
        q.first_token = now;
      }
      ++q.generated;
      if (q.generated == q.output) {
        e.kv_used -= q.kv;
        finish(e, q, slot, now);
        ++finished;
        continue;
      }
      if (pool(e).role == Role::kPrefill) {
        hand_off(index, q, slot, now);
        continue;
      }
      join(e, q, slot);
    }
    e.busy = false;
    flag(index);
    return finished;
  }

  const Workload& w_;
  const ServingSetup s_;
  const bool static_batch_;
  const bool paged_;
  const KvTransfer transfer_;
  detail::Arrivals arrivals_;
  std::vector<Pool> pools_;
  std::vector<Engine> engines_;  // by pool; arrivals go to [0, entry_)
  size_t entry_ = 0;
  std::vector<Request> slots_;  // requests in the system; finished slots are reused
  std::vector<int64_t> free_;
  int64_t admissions_ = 0;
  // Planned ends of the iterations in flight: (end, engine, version); ties: the lowest engine.
  std::priority_queue<std::tuple<Ticks, size_t, uint64_t>,
                      std::vector<std::tuple<Ticks, size_t, uint64_t>>, std::greater<>>
      ends_;
  std::vector<size_t> to_start_;  // engines that may have work to start
  std::vector<char> flagged_;
  // Disaggregated: when each prefill engine's link is free, and the KV caches on their way as
  // (arrival at the decode pool, prefill engine, request slot).
  std::vector<Ticks> sending_;
  std::priority_queue<std::tuple<Ticks, size_t, int64_t>,
                      std::vector<std::tuple<Ticks, size_t, int64_t>>, std::greater<>>
      transfers_;
};

}  // namespace

ServingResult simulate_serving(const InferenceModel& model, const Workload& w,
                               const ServingSetup& s) {
  GPUPLAN_CHECK(model.feasible(), "simulating an instance that cannot serve");
  GPUPLAN_CHECK(
      w.requests > 0 && (!w.lengths.empty() || ((w.input_tokens > 0 || w.input_distribution) &&
                                                (w.output_tokens > 0 || w.output_distribution))),
      "a workload needs requests with input and output tokens");
  GPUPLAN_CHECK(s.replicas > 0, "a setup needs an instance");
  GPUPLAN_CHECK(s.batching == Batching::kContinuous || s.static_batch > 0,
                "static batching needs a batch size");
  GPUPLAN_CHECK(w.users >= 0 && (w.users == 0 || w.rate_per_s <= 0),
                "a workload is an open loop (rate) or a closed loop (users), not both");
  ServingResult r = detail::serving_start(model, w);
  if (!r.reason.en.empty()) {
    return r;
  }
  Events sim(model, w, s);
  sim.run();
  return sim.outcomes.summarise(std::move(r), sim.totals);
}

Seconds KvTransfer::time(int64_t tokens) const {
  return latency + Seconds(seconds_per_token * static_cast<double>(tokens));
}

KvTransfer kv_transfer(const InferenceModel& prefill, const InferenceModel& decode,
                       bool crosses_nodes, const Network& net) {
  const Link link = point_to_point(crosses_nodes, net);
  const double bytes = std::max(prefill.kv_bytes_per_token(), decode.kv_bytes_per_token());
  return {link.latency, bytes / link.bandwidth.si()};
}

ServingResult simulate_disaggregated(const InferenceModel& prefill, const InferenceModel& decode,
                                     const Workload& w, const DisaggregatedSetup& s) {
  GPUPLAN_CHECK(prefill.feasible() && decode.feasible(),
                "simulating an instance that cannot serve");
  GPUPLAN_CHECK(prefill.engines() == 1 && decode.engines() == 1,
                "disaggregated pools of one-stage instances");
  GPUPLAN_CHECK(w.requests > 0 && s.prefill_replicas > 0 && s.decode_replicas > 0,
                "a disaggregated setup needs requests and both pools");
  GPUPLAN_CHECK(w.users >= 0 && (w.users == 0 || w.rate_per_s <= 0),
                "a workload is an open loop (rate) or a closed loop (users), not both");
  ServingResult r = detail::serving_start(decode, w);
  if (r.reason.en.empty()) {
    r.reason = detail::prompt_too_small(prefill, w);
  }
  if (!r.reason.en.empty()) {
    return r;
  }
  Events sim(prefill, decode, w, s);
  sim.run();
  return sim.outcomes.summarise(std::move(r), sim.totals);
}

}  // namespace gpuplan
