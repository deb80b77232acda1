#include "gpuplan/serve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpuplan {
namespace {

// The workload that searches simulate: at most kMostSearchRequests requests.
Workload searched(const Workload& w) {
  Workload s = w;
  s.requests = std::min(w.requests, kMostSearchRequests);
  return s;
}

// One instance shape: its capacity within the objective (requests/s, or users for a closed
// loop), or the most it serves without one.
ServeOption evaluate_shape(const Model& model, const ServeJob& job, int64_t tp, int64_t pp,
                           const MemoryParams& mp, const TrainParams& trp,
                           const InferenceParams& ip) {
  ServeOption o;
  o.tp = tp;
  o.pp = pp;
  o.gpus = tp * pp;
  Instance in = job.base;
  in.tp = tp;
  in.pp = pp;
  o.model.emplace(model, in, mp, trp, ip);
  if (!o.model->feasible()) {
    o.why = o.model->why();
    o.reason = o.model->reason();
    return o;
  }
  ServingSetup one = job.setup;
  one.replicas = 1;
  Workload open = searched(job.workload);
  open.users = 0;
  const Capacity cap = capacity_under_slo(*o.model, open, one, job.closed() ? Slo{} : job.slo);
  o.offline = cap.offline;
  o.amount = cap.max_rate_per_s;
  o.reason = cap.reason;
  // Steady state: the rate times the mean output.
  o.tokens_per_s = cap.max_rate_per_s * open.mean_output();
  if (job.closed() && cap.feasible) {
    const UserCapacity u = users_under_slo(*o.model, searched(job.workload), one, job.slo);
    o.amount = static_cast<double>(job.slo.any() ? u.max_users : u.at_once);
    o.reason = u.reason;
    o.tokens_per_s = job.slo.any() ? u.at_max.output_tokens_per_s : cap.offline.output_tokens_per_s;
  }
  o.per_gpu = o.amount / static_cast<double>(o.gpus);
  if (!o.serves()) {
    o.why = kv_too_small(*o.model, job.workload).en.empty() ? Why::kObjective : Why::kMemory;
  }
  return o;
}

// See ServeFleet.
ServeFleet size_fleet(const ServeOption& b, const ServeJob& job) {
  ServeFleet f;
  f.replicas = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(job.target / b.amount)));
  for (int tries = 0; tries < 8; ++tries) {
    Workload share = searched(job.workload);
    if (job.closed()) {
      share.users = static_cast<int64_t>(std::ceil(job.target / static_cast<double>(f.replicas)));
      share.requests = closed_loop_requests(share, share.users);
      f.share = static_cast<double>(share.users);
    } else {
      share.rate_per_s = job.target / static_cast<double>(f.replicas);
      f.share = share.rate_per_s;
    }
    ServingSetup one = job.setup;
    one.replicas = 1;
    f.result = simulate_serving(*b.model, share, one);
    f.met = meets_slo(f.result, job.slo);
    if (f.met) {
      break;
    }
    ++f.replicas;
  }
  f.gpus = f.replicas * b.gpus;
  f.output_tokens_per_s = f.result.output_tokens_per_s * static_cast<double>(f.replicas);
  return f;
}

// See ServeJob::sweep and SweepPoint.
std::vector<SweepPoint> sweep(const ServeOption& b, const ServeJob& job) {
  std::vector<SweepPoint> points;
  // What the replicas complete with every request queued at once.
  const double ceiling = b.offline.requests_per_s * static_cast<double>(job.setup.replicas);
  for (double load : job.sweep) {
    Workload w = job.workload;
    SweepPoint p;
    if (job.closed()) {
      w.users = std::max<int64_t>(1, std::llround(load));
      w.requests = closed_loop_requests(w, w.users);
      p.load = static_cast<double>(w.users);
    } else {
      w.rate_per_s = load;
      p.load = load;
      p.overload = load > ceiling;
    }
    w.goodput = job.slo;
    if (p.overload) {
      p.result = simulate_serving(*b.model, w, job.setup);
    } else {
      // The steady state, whatever the job's request count: a sweep compares loads.
      SettledResult s = simulate_settled(*b.model, w, job.setup);
      p.result = std::move(s.result);
      p.settled = s.settled;
    }
    points.push_back(std::move(p));
  }
  if (points.empty() || points.front().result.requests == 0) {
    return points;
  }
  const double base = points.front().result.ttft.p99;
  size_t knee = points.size();
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    if (p.overload || p.result.ttft.p99 > 2.0 * base) {
      break;
    }
    knee = i;
  }
  const bool turns = knee + 1 < points.size();
  if (knee < points.size() && turns) {
    points[knee].knee = true;
  }
  return points;
}

}  // namespace

std::string shape_name(const ServeOption& o) {
  return o.pp > 1 ? fmt::format("tp {} pp {}", o.tp, o.pp) : fmt::format("tp {}", o.tp);
}

Precision default_kv_precision(Precision weights) {
  return weights == Precision::kFp8 || weights == Precision::kFp16 ? weights : Precision::kBf16;
}

ServeAnswer serve(const Model& model, const ServeJob& job_in, const MemoryParams& mp,
                  const TrainParams& tp, const InferenceParams& ip, ServeShapeCache* cache) {
  // Tensor parallelism: powers of two up to the GPU's NVLink domain, or up to max_tp cards over
  // PCIe, and never past the node (the domain, or max_tp PCIe cards, when none is given).
  ServeJob job = job_in;
  const Gpu& gpu = *job.base.gpu;
  const int64_t domain = gpu.scale_up_domain > 1 ? gpu.scale_up_domain : job.max_tp;
  if (job.base.gpus_per_node == 0) {
    job.base.gpus_per_node = domain;
  }
  const int64_t widest = std::min(domain, job.base.gpus_per_node);
  auto evaluate = [&](int64_t t, int64_t p) {
    if (cache == nullptr) {
      return evaluate_shape(model, job, t, p, mp, tp, ip);
    }
    // What a shape runs on: the node's GPUs and links, and the network between nodes only when
    // its stages span them.
    const Instance& b = job.base;
    const std::string key = fmt::format(
        "{}/{}/{}/{}/{}/{}", b.gpu->id, b.scale_up->id, b.gpus_per_node, t, p,
        p > 1 && b.scale_out != nullptr ? fmt::format("{}x{}", b.scale_out->id, b.nics_per_node)
                                        : "");
    auto it = cache->find(key);
    if (it == cache->end()) {
      it = cache->emplace(key, evaluate_shape(model, job, t, p, mp, tp, ip)).first;
    }
    return it->second;
  };
  ServeAnswer a;
  a.max_batch = ip.max_batch;
  a.chunk_tokens = mp.inference_chunk_tokens;
  const int64_t stages = job.pp > 0 ? job.pp : 1;
  for (int64_t t = job.tp > 0 ? job.tp : 1; t <= (job.tp > 0 ? job.tp : widest); t *= 2) {
    a.options.push_back(evaluate(t, stages));
  }
  // A model one node cannot hold: whole-node stages across the nodes' network, doubling until a
  // shape has room.
  if (job.pp == 0 && job.tp == 0 && job.base.scale_out != nullptr) {
    // More stages help only a shape that failed for room: the weights, or one request's context.
    for (int64_t pp = 2;
         pp <= std::min(job.max_pp, model.layers) && a.options.back().why == Why::kMemory;
         pp *= 2) {
      a.options.push_back(evaluate(widest, pp));
    }
  }
  for (size_t i = 0; i < a.options.size(); ++i) {
    const ServeOption& o = a.options[i];
    if (o.serves() && (a.best < 0 || o.per_gpu > a.best_option()->per_gpu * 1.0000001)) {
      a.best = static_cast<int>(i);
    }
  }
  const ServeOption* best = a.best_option();
  if (best == nullptr) {
    return a;
  }
  if (job.simulate_load) {
    Workload w = job.workload;
    if (job.closed()) {
      w.requests = closed_loop_requests(w, w.users);
    }
    a.requests = w.requests;
    a.run = simulate_serving(*best->model, w, job.setup);
  }
  if (job.target > 0) {
    a.fleet = size_fleet(*best, job);
  }
  if (!job.sweep.empty()) {
    a.sweep = sweep(*best, job);
  }
  for (int64_t i = 1; i <= job.curve_points && best->amount > 0; ++i) {
    const double n = static_cast<double>(job.curve_points);
    Workload w = searched(job.workload);
    ServingSetup one = job.setup;
    one.replicas = 1;
    LoadPoint p;
    p.load = best->amount * 1.5 * static_cast<double>(i) / n;
    if (job.closed()) {
      w.users = std::max<int64_t>(1, std::llround(p.load));
      w.requests = closed_loop_requests(w, w.users);
      p.load = static_cast<double>(w.users);
    } else {
      w.rate_per_s = p.load;
    }
    p.result = simulate_serving(*best->model, w, one);
    a.curve.push_back(std::move(p));
  }
  return a;
}

}  // namespace gpuplan
