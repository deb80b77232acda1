#include "gpuplan/search.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <tuple>

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

 private:
  size_t k_;
  std::vector<TrainEstimate> best_;
};

struct WorkerResult {
  std::vector<TrainEstimate> top;
  int64_t space = 0;
  int64_t evaluated = 0;
  Why last_why = Why::kNone;
  std::string last_reason;
};

void search_outer(const Model& m, const Cluster& c, const TrainJob& base, const MemoryParams& mp,
                  const TrainParams& tp, const SearchOptions& o, const Outer& x, TopK& top,
                  WorkerResult& out) {
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
  for (int64_t zero : zeros) {
    for (bool sp : sps) {
      for (Recompute r : recomputes) {
        for (size_t i = 0; i < mbs.size(); ++i) {
          const int64_t mb = mbs[i];
          if (per_replica % mb != 0) {
            continue;
          }
          bool any_fits = false;
          for (int64_t v : vs_of[i]) {
            job.memory.layout = Parallelism{.tp = x.tp,
                                            .pp = x.pp,
                                            .dp = x.dp,
                                            .virtual_stages = v,
                                            .sequence_parallel = sp,
                                            .zero = zero,
                                            .ep = x.ep,
                                            .cp = x.cp,
                                            .etp = x.etp};
            job.memory.recompute = r;
            job.memory.micro_batch = mb;
            ++out.evaluated;
            TrainEstimate e = estimate_training(m, c, job, mp, tp, /*skip_over_memory=*/true);
            if (!e.feasible) {
              out.last_why = e.why;
              out.last_reason = e.reason;
              continue;
            }
            any_fits = true;
            top.offer(std::move(e));
          }
          // Memory never shrinks with a larger micro-batch: once none fits, stop.
          if (!any_fits) {
            break;
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
  const auto start = std::chrono::steady_clock::now();
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
      search_outer(m, c, base, mp, tp, o, outers[i], top, results[static_cast<size_t>(w)]);
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
    if (result.reason.empty()) {
      result.why = r.last_why;
      result.reason = r.last_reason;
    }
  }
  result.top = std::move(merged.items());
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
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace gpuplan
