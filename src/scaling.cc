#include "gpuplan/scaling.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuplan {
namespace {

Cluster at(const Cluster& node, int64_t gpus) {
  Cluster c = node;
  c.gpus = gpus;
  c.gpus_per_node = std::min(node.gpus_per_node, gpus);
  return c;
}

// The fastest layout that fits at this count: data parallel first, adding ZeRO, recomputation
// and then tensor parallelism inside a node only when memory demands it.
TrainEstimate fastest(const Model& m, const Cluster& c, TrainJob job, const MemoryParams& mp,
                      const TrainParams& p) {
  TrainEstimate best;
  // A precision the job or the GPU cannot train in fails every layout for that reason.
  std::optional<std::string> precision = precision_problem(job.memory);
  if (!precision) {
    precision = training_precision_problem(*c.gpu, job.memory);
  }
  if (precision) {
    best.why = Why::kCalibration;
    best.reason = *precision;
    return best;
  }
  best.why = Why::kMemory;
  best.reason = "no layout fits in memory";
  for (int64_t tp = 1; tp <= std::min<int64_t>(c.gpus, c.gpus_per_node); tp *= 2) {
    if (c.gpus % tp != 0) {
      continue;
    }
    for (int64_t zero : {0, 1, 2, 3}) {
      for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        job.memory.layout = Parallelism{.tp = tp,
                                        .pp = 1,
                                        .dp = c.gpus / tp,
                                        .virtual_stages = 1,
                                        .sequence_parallel = tp > 1,
                                        .zero = zero};
        job.memory.recompute = r;
        job.memory.micro_batch = 0;
        if (layout_problem(m, job.memory) || (zero > 0 && c.gpus / tp == 1)) {
          continue;
        }
        TrainEstimate e = best_training(m, c, job, mp, p);
        if (!e.feasible || !e.fits_memory) {
          continue;
        }
        if (!best.feasible || e.step.total() < best.step.total()) {
          best = std::move(e);
        }
      }
    }
    if (best.feasible) {
      break;  // tensor parallelism only when data parallelism cannot hold it
    }
  }
  return best;
}

// The base point's per-GPU setup at `gpus`: its tensor parallelism, micro-batch, recomputation
// and ZeRO stage, the rest data parallel.
TrainEstimate same_setup(const Model& m, const Cluster& c, TrainJob job, const TrainJob& base,
                         const MemoryParams& mp, const TrainParams& p) {
  const Parallelism& b = base.memory.layout;
  const int64_t dp = c.gpus / b.tp;
  job.memory.layout = Parallelism{.tp = b.tp,
                                  .pp = 1,
                                  .dp = dp,
                                  .virtual_stages = 1,
                                  .sequence_parallel = b.sequence_parallel,
                                  .zero = dp > 1 ? b.zero : 0};
  job.memory.recompute = base.memory.recompute;
  job.memory.micro_batch = base.memory.micro_batch;
  return estimate_training(m, c, job, mp, p);
}

// What the point's layout `b` changes from the base's `a`, in words: "no recompute (the base:
// full)".
std::string difference(const TrainJob& a, const TrainJob& b) {
  const MemoryJob& x = a.memory;
  const MemoryJob& y = b.memory;
  auto recompute = [](Recompute r) {
    return r == Recompute::kNone ? std::string("no") : std::string(recompute_name(r));
  };
  if (x.recompute != y.recompute) {
    return fmt::format("{} recompute (the base: {})", recompute(y.recompute),
                       recompute(x.recompute));
  }
  if (x.layout.tp != y.layout.tp) {
    return fmt::format("tensor parallelism {} (the base: {})", y.layout.tp, x.layout.tp);
  }
  if (x.micro_batch != y.micro_batch) {
    return fmt::format("micro-batch {} (the base: {})", y.micro_batch, x.micro_batch);
  }
  if (x.layout.zero != y.layout.zero) {
    return fmt::format("ZeRO {} (the base: {})", y.layout.zero, x.layout.zero);
  }
  return "";
}

}  // namespace

ScaleCurve scale_training(const Model& m, const Cluster& node, const ScaleJob& job,
                          const MemoryParams& mp, const TrainParams& p) {
  ScaleCurve curve;
  std::vector<TrainJob> jobs;
  for (int64_t n : job.counts) {
    TrainJob j = job.base;
    j.global_batch = job.global_batch > 0 ? job.global_batch : job.per_gpu_batch * n;
    jobs.push_back(j);
  }
  curve.points.reserve(job.counts.size());  // `base` points into it
  const TrainEstimate* base = nullptr;
  for (size_t i = 0; i < job.counts.size(); ++i) {
    const int64_t n = job.counts[i];
    const Cluster c = at(node, n);
    ScalePoint pt;
    pt.gpus = n;
    if (base == nullptr || job.best) {
      pt.estimate = fastest(m, c, jobs[i], mp, p);
    } else {
      pt.estimate = same_setup(m, c, jobs[i], base->job, mp, p);
      if (!pt.estimate.feasible || !pt.estimate.fits_memory) {
        // The setup cannot run here (a batch that does not divide): its own fastest instead.
        pt.note = fmt::format("the {}-GPU setup does not run here ({}); own fastest layout",
                              base->job.memory.layout.gpus(),
                              pt.estimate.feasible ? "memory" : pt.estimate.reason);
        pt.estimate = fastest(m, c, jobs[i], mp, p);
      }
    }
    if (pt.estimate.feasible) {
      const StepTime& s = pt.estimate.step;
      pt.seconds_per_token =
          s.total().si() / static_cast<double>(jobs[i].global_batch * jobs[i].memory.seq);
      pt.comm_share = s.communication().si() / s.total().si();
    }
    curve.points.push_back(std::move(pt));
    if (base == nullptr && curve.points.back().estimate.feasible) {
      base = &curve.points.back().estimate;
      curve.base_gpus = n;
    }
  }
  const ScalePoint* b = nullptr;
  for (const ScalePoint& pt : curve.points) {
    if (pt.gpus == curve.base_gpus) {
      b = &pt;
    }
  }
  for (ScalePoint& pt : curve.points) {
    if (b == nullptr || !pt.estimate.feasible) {
      continue;
    }
    // efficiency = T_base x N_base / (T_N x N) on the time per token of the whole job.
    pt.efficiency_pct = 100.0 * b->seconds_per_token * static_cast<double>(b->gpus) /
                        (pt.seconds_per_token * static_cast<double>(pt.gpus));
    pt.superlinear = pt.efficiency_pct > 100.05;
    if (pt.superlinear && pt.note.empty()) {
      const std::string d = difference(b->estimate.job, pt.estimate.job);
      pt.note = d.empty() ? "faster per GPU than the base at the same setup"
                          : fmt::format(
                                "above 100 % because this count runs {}: the {}-GPU base "
                                "needed {} to fit, and the formula credits the memory the "
                                "extra GPUs free",
                                d, b->gpus, train_setup_text(b->estimate.job));
    }
  }
  curve.caveats = training_caveats(m, *node.gpu, job.base, p);
  return curve;
}

std::string train_setup_text(const TrainJob& job) {
  const MemoryJob& m = job.memory;
  return fmt::format("tp {}, micro-batch {}, {}, ZeRO {}", m.layout.tp, m.micro_batch,
                     m.recompute == Recompute::kNone
                         ? std::string("no recompute")
                         : fmt::format("{} recompute", recompute_name(m.recompute)),
                     m.layout.zero);
}

}  // namespace gpuplan
