#include "gpuplan/search.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <thread>
#include <tuple>

#include "training_model.h"

namespace gpuplan {
namespace {

// The outer sizes a worker takes as one unit of work.
struct Outer {
  int64_t tp, cp, pp, dp, ep, etp;
};

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d == 0) {
      out.push_back(d);
      if (d != n / d) {
        out.push_back(n / d);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <class T>
std::vector<T> choices(const std::optional<T>& fixed, std::vector<T> all) {
  return fixed ? std::vector<T>{*fixed} : all;
}

auto layout_key(const TrainEstimate& e) {
  const MemoryJob& m = e.job.memory;
  const Parallelism& l = m.layout;
  return std::make_tuple(l.tp, l.cp, l.pp, l.dp, l.ep, l.etp, l.zero, l.sequence_parallel,
                         static_cast<int>(m.recompute), m.micro_batch, l.virtual_stages);
}

// Keeps the `k` best estimates seen.
class TopK {
 public:
  explicit TopK(size_t k) : k_(k) {}
  void offer(TrainEstimate&& e) {
    if (best_.size() == k_ && !better_layout(e, best_.back())) {
      return;
    }
    best_.insert(std::upper_bound(best_.begin(), best_.end(), e, better_layout), std::move(e));
    if (best_.size() > k_) {
      best_.pop_back();
    }
  }
  std::vector<TrainEstimate>& items() { return best_; }
  // The step time a layout must not exceed to enter: the last entry's, once there are k.
  Seconds bound() const {
    return best_.size() < k_ ? Seconds(std::numeric_limits<double>::infinity())
                             : best_.back().step.total();
  }

 private:
  size_t k_;
  std::vector<TrainEstimate> best_;
};

struct WorkerResult {
  std::vector<TrainEstimate> top;
  int64_t space = 0;
  int64_t evaluated = 0;
  std::optional<TrainJob> last_rejected;  // the last layout that could not run, for its reason
  size_t last_outer = 0;                  // ... and the index of its outer sizes
};

void search_outer(const Model& m, const Cluster& c, const TrainJob& base, const MemoryParams& mp,
                  const TrainParams& tp, const SearchOptions& o, const Outer& x, size_t index,
                  TopK& top, WorkerResult& out) {
  TrainJob job = base;
  job.memory.layout.cp = x.cp;
  const int64_t per_replica = base.global_batch / x.dp;
  const std::vector<int64_t> zeros = choices<int64_t>(
      o.zero, x.dp > 1 ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{0});
  const std::vector<bool> sps = choices<bool>(
      o.sequence_parallel, x.tp > 1 ? std::vector<bool>{true, false} : std::vector<bool>{false});
  const std::vector<Recompute> recomputes =
      choices<Recompute>(o.recompute, {Recompute::kNone, Recompute::kSelective, Recompute::kFull});
  const std::vector<int64_t> mbs = choices<int64_t>(o.micro_batch, divisors(per_replica));
  // The virtual-stage counts each micro-batch size allows (interleaving needs the micro-batches
  // to be a multiple of pp).
  std::vector<std::vector<int64_t>> vs_of(mbs.size());
  int64_t per_setting = 0;
  for (size_t i = 0; i < mbs.size(); ++i) {
    std::vector<int64_t>& vs = vs_of[i];
    vs = {1};
    const bool divides = per_replica % mbs[i] == 0;
    if (o.virtual_stages) {
      vs = {*o.virtual_stages};
    } else if (divides && x.pp > 1 && (per_replica / mbs[i]) % x.pp == 0) {
      for (int64_t v = 2; x.pp * v <= m.layers; ++v) {
        vs.push_back(v);
      }
    }
    per_setting += divides ? static_cast<int64_t>(vs.size()) : 0;
  }
  out.space += per_setting * static_cast<int64_t>(zeros.size() * sps.size() * recomputes.size());
  // What every layout of these outer sizes shares (the stages, the parameter count), and per
  // micro-batch group the compute of a step.
  detail::SearchShortcut shortcut;
  for (bool sp : sps) {
    for (Recompute r : recomputes) {
      // Memory never shrinks with a larger micro-batch: once no layout of a ZeRO stage fits,
      // larger micro-batches are not tried with that stage.
      std::vector<bool> stopped(zeros.size(), false);
      size_t running = zeros.size();
      for (size_t i = 0; i < mbs.size() && running > 0; ++i) {
        const int64_t mb = mbs[i];
        if (per_replica % mb != 0) {
          continue;
        }
        // The compute of a micro-batch does not depend on the ZeRO stage or the interleaving:
        // it is timed once for all of them.
        shortcut.work.reset();
        for (size_t z = 0; z < zeros.size(); ++z) {
          if (stopped[z]) {
            continue;
          }
          // A layout fits if any interleaving does. More virtual stages only keep more
          // activations (and pass no check one stage fails), so where one stage is tried, it
          // alone says whether any fits, and the others may skip their memory when the bound
          // beats them.
          const bool one_says = vs_of[i].front() == 1;
          bool any_fits = false;
          for (int64_t v : vs_of[i]) {
            job.memory.layout = Parallelism{.tp = x.tp,
                                            .pp = x.pp,
                                            .dp = x.dp,
                                            .virtual_stages = v,
                                            .sequence_parallel = sp,
                                            .zero = zeros[z],
                                            .ep = x.ep,
                                            .cp = x.cp,
                                            .etp = x.etp};
            job.memory.recompute = r;
            job.memory.micro_batch = mb;
            ++out.evaluated;
            if (!interleaving_allowed(m, x.pp, v, job.software)) {
              out.last_rejected = job;  // the estimate's own rule, asked without an estimate
              out.last_outer = index;
              continue;
            }
            shortcut.bound = top.bound();
            shortcut.bound_before_memory = one_says && v > 1;
            TrainEstimate e = detail::estimate_training_with(
                m, c, job, mp, tp, {.skip_over_memory = true, .reasons = false}, shortcut);
            if (v == 1 || !one_says) {
              any_fits = any_fits || e.feasible || shortcut.beaten;
            }
            if (shortcut.beaten) {
              continue;  // too slow to rank
            }
            if (!e.feasible) {
              out.last_rejected = job;
              out.last_outer = index;
              continue;
            }
            top.offer(std::move(e));
          }
          if (!any_fits) {
            stopped[z] = true;
            --running;
          }
        }
      }
    }
  }
}

}  // namespace

bool better_layout(const TrainEstimate& a, const TrainEstimate& b) {
  const double ta = a.step.total().si();
  const double tb = b.step.total().si();
  if (ta != tb) {
    return ta < tb;
  }
  return layout_key(a) < layout_key(b);
}

SearchResult search_layouts(const Model& m, const Cluster& c, const TrainJob& base,
                            const MemoryParams& mp, const TrainParams& tp, const SearchOptions& o) {
  SearchResult result;
  const int64_t n = c.gpus;
  const int64_t max_tp = o.tp_across_nodes
                             ? n
                             : std::min(n, c.gpu->scale_up_domain > 1
                                               ? std::min(c.gpus_per_node, c.gpu->scale_up_domain)
                                               : c.gpus_per_node);
  std::vector<Outer> outers;
  for (int64_t t : choices<int64_t>(o.tp, divisors(n))) {
    if (t > max_tp || m.heads % t != 0 ||
        (m.kv_heads >= t ? m.kv_heads % t != 0 : t % m.kv_heads != 0) ||
        (m.is_moe() ? m.moe.expert_intermediate : m.intermediate) % t != 0) {
      continue;
    }
    for (int64_t cp : choices<int64_t>(o.cp, divisors(n / t))) {
      if (cp > o.max_cp || base.memory.seq % (2 * cp) != 0) {
        if (cp != 1)
          continue;
      }
      for (int64_t pp : choices<int64_t>(o.pp, divisors(n / (t * cp)))) {
        if (pp > m.layers)
          continue;
        const int64_t dp = n / (t * cp * pp);
        if (n % (t * cp * pp) != 0 || (o.dp && *o.dp != dp) || base.global_batch % dp != 0) {
          continue;
        }
        // Experts: split over ep x etp of the tp x cp x dp ranks, each expert over etp = tp (0)
        // or, for MoE models with tp > 1, over etp = 1 (expert parallelism across the TP ranks).
        if (!m.is_moe()) {
          outers.push_back({t, cp, pp, dp, 1, 0});
          continue;
        }
        std::vector<int64_t> etps = {0};
        if (o.etp) {
          etps = {*o.etp == t ? 0 : *o.etp};
        } else if (t > 1) {
          etps.push_back(1);
        }
        for (int64_t etp : etps) {
          const int64_t split = etp > 0 ? etp : t;
          if (m.moe.expert_intermediate % split != 0) {
            continue;
          }
          for (int64_t ep : choices<int64_t>(o.ep, divisors(t * cp * dp / split))) {
            if (m.moe.experts % ep == 0 && (t * cp * dp) % (ep * split) == 0) {
              outers.push_back({t, cp, pp, dp, ep, etp});
            }
          }
        }
      }
    }
  }
  const int threads = std::max(1, std::min<int>(o.threads, static_cast<int>(outers.size())));
  std::vector<WorkerResult> results(static_cast<size_t>(threads));
  auto work = [&](int w) {
    TopK top(static_cast<size_t>(std::max<int64_t>(1, o.top)));
    // Interleaved assignment balances the cheap and the expensive outer sizes.
    for (size_t i = static_cast<size_t>(w); i < outers.size(); i += static_cast<size_t>(threads)) {
      search_outer(m, c, base, mp, tp, o, outers[i], i, top, results[static_cast<size_t>(w)]);
    }
    results[static_cast<size_t>(w)].top = std::move(top.items());
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < threads; ++w) {
    pool.emplace_back(work, w);
  }
  work(0);
  for (std::thread& t : pool) {
    t.join();
  }
  TopK merged(static_cast<size_t>(std::max<int64_t>(1, o.top)));
  for (WorkerResult& r : results) {
    result.space += r.space;
    result.evaluated += r.evaluated;
    for (TrainEstimate& e : r.top) {
      merged.offer(std::move(e));
    }
  }
  result.top = std::move(merged.items());
  // Why nothing runs: the search's last rejection in the order of the outer sizes, whichever
  // worker made it, so that the reason is the same for any thread count; in words only now (the
  // search asked for none while it ran).
  const WorkerResult* last = nullptr;
  for (const WorkerResult& r : results) {
    if (r.last_rejected && (last == nullptr || r.last_outer > last->last_outer)) {
      last = &r;
    }
  }
  if (result.top.empty() && last != nullptr) {
    const TrainEstimate e =
        estimate_training(m, c, *last->last_rejected, mp, tp, {.skip_over_memory = true});
    result.why = e.why;
    result.reason = e.reason;
  }
  if (outers.empty()) {
    result.why = Why::kLayout;
    result.reason = "no tensor/pipeline/data split of the GPUs suits the model and the batch";
  } else if (result.top.empty() && result.reason.empty()) {
    result.why = Why::kMemory;
    result.reason = "no layout fits in memory";
  }
  if (!result.top.empty()) {
    result.why = Why::kNone;
  }
  for (TrainEstimate& e : result.top) {
    e.caveats = training_caveats(m, *c.gpu, e.job, tp);
  }
  return result;
}

}  // namespace gpuplan
