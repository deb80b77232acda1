#include "gpuplan/serve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "gpuplan/gemm.h"

namespace gpuplan {
namespace {

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
  Workload open = job.workload;
  open.users = 0;
  const Capacity cap = capacity_under_slo(*o.model, open, one, job.closed() ? Slo{} : job.slo);
  o.offline = cap.offline;
  o.amount = cap.max_rate_per_s;
  o.reason = cap.reason;
  // Steady state: the rate times the mean output.
  o.tokens_per_s = cap.max_rate_per_s * open.mean_output();
  if (job.closed() && cap.feasible) {
    const UserCapacity u = users_under_slo(*o.model, job.workload, one, job.slo);
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

// See ServeFleet: replicas of `m` from `start` up, `gpus` each.
ServeFleet size_fleet(const InferenceModel& m, int64_t gpus, int64_t start, const ServeJob& job) {
  ServeFleet f;
  f.replicas = start;
  for (int64_t tries = 1;; ++tries) {
    Workload share = job.workload;
    if (job.closed()) {
      share.users = static_cast<int64_t>(std::ceil(job.target / static_cast<double>(f.replicas)));
      f.share = static_cast<double>(share.users);
    } else {
      share.rate_per_s = job.target / static_cast<double>(f.replicas);
      f.share = share.rate_per_s;
    }
    ServingSetup one = job.setup;
    one.replicas = 1;
    SettledResult settled = simulate_settled(m, share, one, kFleetRun);
    f.result = std::move(settled.result);
    f.settled = settled.settled;
    f.met = meets_slo(f.result, job.slo);
    if (f.met || tries == kFleetTries) {
      break;  // a fleet that misses keeps the last size it simulated
    }
    ++f.replicas;
  }
  f.gpus = f.replicas * gpus;
  f.output_tokens_per_s = f.result.output_tokens_per_s * static_cast<double>(f.replicas);
  return f;
}

// A load past the ceiling (SweepPoint::overload): every replica runs saturated, completing what
// it completes with every request queued at once, while the queue, and with it each request's
// TTFT and E2E, grows as long as the arrivals outpace it.
ServingResult overloaded(const ServeOption& b, const Workload& w, const ServingSetup& setup) {
  Workload queued = w;
  queued.rate_per_s = 0;
  queued.goodput.ttft_p99.reset();  // every wait outgrows any bound: no request counts (below)
  ServingSetup one = setup;
  one.replicas = 1;
  ServingResult r = saturated_serving(*b.model, queued, one);
  const double n = static_cast<double>(setup.replicas);
  r.output_tokens_per_s *= n;
  r.requests_per_s *= n;
  r.goodput_per_s = w.goodput.ttft_p99 ? 0.0 : r.goodput_per_s * n;
  r.iterations *= setup.replicas;
  r.filling = false;
  constexpr double kGrows = std::numeric_limits<double>::infinity();
  r.ttft = r.e2e = Percentiles{kGrows, kGrows, kGrows, kGrows, kGrows};
  return r;
}

// See ServeJob::sweep and SweepPoint.
std::vector<SweepPoint> sweep(const ServeOption& b, const ServeJob& job) {
  std::vector<SweepPoint> points;
  // Every overloaded load is the same saturated replicas, whatever its rate: simulated once.
  std::optional<ServingResult> saturated;
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
      p.overload = load > offline_ceiling(b, job.setup.replicas);
    }
    w.goodput = job.slo;
    if (p.overload) {
      if (!saturated) {
        saturated = overloaded(b, w, job.setup);
      }
      p.result = *saturated;
    } else {
      // The steady state, whatever the job's request count: a sweep compares loads.
      SettledResult s = simulate_settled(*b.model, w, job.setup);
      p.result = std::move(s.result);
      p.settled = s.settled;
      p.growing = s.growing;
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

// The workload's requests with one output token each: what a prefill instance serves.
Workload prompts_only(const Workload& w) {
  Workload p = w;
  p.output_tokens = 1;
  p.output_distribution.reset();
  p.beams = 1;  // no decode step: the prompt's first token comes from its prefill
  for (RequestLength& l : p.lengths) {
    l.output = 1;
  }
  return p;
}

// What one instance of a pool serves on its own, the other pool never its bottleneck (see
// Disaggregation): requests/s within its part of the objective, or why none.
struct PoolRate {
  double rate = 0;
  Text reason;
};

// A prefill instance: prompts of one output token, within the TTFT bound.
PoolRate prefill_rate(const InferenceModel& pre, const Workload& w, const Slo& slo) {
  Slo ttft;
  ttft.ttft_p99 = slo.ttft_p99;
  const Capacity c = capacity_under_slo(pre, prompts_only(w), ServingSetup{}, ttft);
  return {c.feasible ? c.max_rate_per_s : 0, c.reason};
}

// A decode instance within the TPOT bound, fed by prefill instances that double until one more
// doubling raises what it completes with every request queued at once by less than 10 %.
PoolRate decode_rate(const InferenceModel& pre, const InferenceModel& dec, const Workload& w,
                     const ServeJob& job, const KvTransfer& transfer) {
  DisaggregatedSetup s;
  s.balancer = job.setup.balancer;
  s.transfer = transfer;
  Workload offline = w;
  offline.rate_per_s = 0;
  offline.requests = kSearchRun.first;
  const ServingResult one = simulate_disaggregated(pre, dec, offline, s);
  if (!one.feasible) {
    return {0, one.reason};
  }
  double last = one.requests_per_s;
  for (int64_t feeders = 2; feeders <= 64; feeders *= 2) {
    s.prefill_replicas = feeders;
    const double done = simulate_disaggregated(pre, dec, offline, s).requests_per_s;
    if (done < 1.1 * last) {
      break;
    }
    last = done;
  }
  Slo tpot;
  tpot.tpot_p99 = job.slo.tpot_p99;
  const Capacity c = disaggregated_capacity(pre, dec, w, s, tpot);
  return {c.feasible ? c.max_rate_per_s : 0, c.reason};
}

// Splits checked by simulating the whole deployment: the best by rate matching.
constexpr size_t kSplitsSimulated = 5;
// Requests per instance each of those simulations runs, so that every instance reaches its
// steady state (the measured window leaves out SteadyState::edge at either end), up to a most.
constexpr int64_t kRequestsPerInstance = 400;
constexpr int64_t kMostSplitRequests = 40'000;

int64_t split_requests(const PoolSplit& split) {
  return std::clamp(kRequestsPerInstance * (split.prefill_replicas + split.decode_replicas),
                    kSearchRun.first, kMostSplitRequests);
}

// The shape of `shapes` with `tp` GPUs. REQUIRES: there is one.
const InferenceModel& shape_model(const std::vector<const ServeOption*>& shapes, int64_t tp) {
  const auto it =
      std::find_if(shapes.begin(), shapes.end(), [&](const ServeOption* o) { return o->tp == tp; });
  GPUPLAN_CHECK(it != shapes.end(), "a split of a shape that was not tried");
  return *(*it)->model;
}

DisaggregatedSetup split_setup(const PoolSplit& split, const ServeJob& job) {
  DisaggregatedSetup setup;
  setup.prefill_replicas = split.prefill_replicas;
  setup.decode_replicas = split.decode_replicas;
  setup.balancer = job.setup.balancer;
  setup.transfer = split.transfer;
  return setup;
}

// See Disaggregation.
Disaggregation disaggregate(const ServeAnswer& a, const ServeJob& job, const TrainParams& trp) {
  Disaggregation d;
  d.gpus = job.disaggregate_gpus;
  const Instance& base = job.base;
  d.crosses_nodes = d.gpus > base.gpus_per_node;
  if (job.closed() || job.setup.batching == Batching::kStatic) {
    d.why = Why::kLayout;
    d.reason = {
        "the pools are compared on the request rates continuous batching serves, not on "
        "users or static batches",
        "os pools são comparados nas taxas de requisições que o lote contínuo serve, não "
        "em usuários ou lotes estáticos"};
    return d;
  }
  if (d.crosses_nodes && base.scale_out == nullptr) {
    d.why = Why::kLayout;
    d.reason = {fmt::format("{} GPUs span nodes of {}: the KV caches need the network between "
                            "them (give --scale-out)",
                            d.gpus, base.gpus_per_node),
                fmt::format("{} GPUs ocupam mais de um nó de {}: os caches KV precisam da rede "
                            "entre eles (use --scale-out)",
                            d.gpus, base.gpus_per_node)};
    return d;
  }
  Cluster c;
  c.gpu = base.gpu;
  c.gpus = d.gpus;
  c.gpus_per_node = base.gpus_per_node;
  c.scale_up = base.scale_up;
  c.scale_out = d.crosses_nodes ? base.scale_out : nullptr;
  c.nics_per_node = base.nics_per_node > 0 ? base.nics_per_node : base.gpus_per_node;
  const Network net = cluster_network(c, trp);

  std::vector<const ServeOption*> shapes;
  for (size_t i = 0; i < a.options.size(); ++i) {
    const ServeOption& o = a.options[i];
    if (o.pp == 1 && o.model && o.model->feasible() && o.gpus <= d.gpus) {
      shapes.push_back(&o);
    }
    if (o.pp == 1 && o.serves() && o.gpus <= d.gpus) {
      const int64_t replicas = d.gpus / o.gpus;
      const double rate = static_cast<double>(replicas) * o.amount;
      if (rate > d.aggregated_rate * 1.0000001) {
        d.aggregated = static_cast<int>(i);
        d.aggregated_replicas = replicas;
        d.aggregated_rate = rate;
      }
    }
  }
  Workload w = job.workload;
  w.users = 0;
  // Rate matching: per pair of shapes, the split whose pools serve most, each instance at what
  // it serves alone.
  struct Candidate {
    PoolSplit split;
    double matched = 0;  // requests/s the pools serve together by rate matching
  };
  std::vector<Candidate> candidates;
  Text last_reason;
  std::vector<std::optional<PoolRate>> prefill(shapes.size());  // by shape, once asked
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ServeOption* pre = shapes[i];
    for (const ServeOption* dec : shapes) {
      if (pre->gpus + dec->gpus > d.gpus) {
        continue;
      }
      if (!prefill[i]) {
        prefill[i] = prefill_rate(*pre->model, w, job.slo);
      }
      if (prefill[i]->rate <= 0) {
        last_reason = prefill[i]->reason;
        continue;
      }
      const KvTransfer transfer = kv_transfer(*pre->model, *dec->model, d.crosses_nodes, net);
      // A mean prompt's own cache, in tokens of every layer (held_context).
      const Model& m = pre->model->model();
      const Seconds mean_transfer =
          transfer.latency +
          Seconds(transfer.seconds_per_token *
                  (held_context(m, w.mean_input()) - held_context(m, w.mean_cached())));
      const PoolRate decode = decode_rate(*pre->model, *dec->model, w, job, transfer);
      if (decode.rate <= 0) {
        last_reason = decode.reason;
        continue;
      }
      Candidate best;
      for (int64_t p = 1; p * pre->gpus + dec->gpus <= d.gpus; ++p) {
        const int64_t q = (d.gpus - p * pre->gpus) / dec->gpus;
        const double matched = std::min(static_cast<double>(p) * prefill[i]->rate,
                                        static_cast<double>(q) * decode.rate);
        if (matched > best.matched * 1.0000001) {
          best.matched = matched;
          best.split = PoolSplit{.prefill_tp = pre->tp,
                                 .prefill_replicas = p,
                                 .decode_tp = dec->tp,
                                 .decode_replicas = q,
                                 .transfer = transfer,
                                 .mean_transfer = mean_transfer,
                                 .capacity = {}};
        }
      }
      candidates.push_back(std::move(best));
      ++d.tried;
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& x, const Candidate& y) { return x.matched > y.matched; });
  // The best few, simulated as one deployment: both pools, the transfers and the balancers.
  for (size_t i = 0; i < candidates.size() && i < kSplitsSimulated; ++i) {
    PoolSplit& split = candidates[i].split;
    split.capacity = disaggregated_capacity(
        shape_model(shapes, split.prefill_tp), shape_model(shapes, split.decode_tp), w,
        split_setup(split, job), job.slo, split_requests(split));
    ++d.simulated;
    if (split.capacity.feasible) {
      d.splits.push_back(split);
    } else {
      last_reason = split.capacity.reason;
    }
  }
  std::stable_sort(d.splits.begin(), d.splits.end(), [](const PoolSplit& x, const PoolSplit& y) {
    return std::tuple(-x.capacity.max_rate_per_s, x.gpus()) <
           std::tuple(-y.capacity.max_rate_per_s, y.gpus());
  });
  if (const PoolSplit* best = d.best(); best != nullptr && w.rate_per_s > 0) {
    // The job's own rate, measured as the splits were.
    d.at_load = simulate_disaggregated(
        shape_model(shapes, best->prefill_tp), shape_model(shapes, best->decode_tp),
        steady_run(w, split_requests(*best), kSearchRun), split_setup(*best, job));
  }
  if (d.splits.empty()) {
    d.why = shapes.empty() ? Why::kMemory : Why::kObjective;
    d.reason = shapes.empty()
                   ? Text{fmt::format("no instance of at most {} GPUs holds the model", d.gpus),
                          fmt::format("nenhuma instância de até {} GPUs comporta o modelo", d.gpus)}
                   : last_reason;
  }
  return d;
}

}  // namespace

std::string shape_name(const ServeOption& o) {
  return o.pp > 1 ? fmt::format("tp {} pp {}", o.tp, o.pp) : fmt::format("tp {}", o.tp);
}

Text serving_fit_note(const Gpu& gpu, const InferenceParams& ip) {
  const std::vector<std::string>& seen = ip.fitted_architectures;
  if (seen.empty() || std::find(seen.begin(), seen.end(), gpu.architecture) != seen.end()) {
    return {};
  }
  return {fmt::format("{}: the serving model's host times and compute and streaming shares were "
                      "fitted to published results on {} GPUs only "
                      "(data/params/serving-fit.toml); on {} they stand in unchecked, and "
                      "docs/VALIDATION.md shows how far off held-out results on such GPUs came "
                      "out",
                      gpu.id, word_list(seen, " and "), gpu.architecture),
          fmt::format("{}: os tempos de host e as parcelas de cômputo e de streaming do modelo "
                      "de serviço foram ajustados a resultados publicados só em GPUs {} "
                      "(data/params/serving-fit.toml); em {} valem sem verificação, e "
                      "docs/VALIDATION.md mostra quanto erraram resultados retidos nessas GPUs",
                      gpu.id, word_list(seen, " e "), gpu.architecture)};
}

std::vector<Text> serving_caveats(const Gpu& gpu, Precision weights, const InferenceParams& ip) {
  std::vector<Text> out;
  for (Text note :
       {estimated_rates_note(gpu, estimated_rates(gpu, weights, AttentionKernels::kNative)),
        serving_fit_note(gpu, ip)}) {
    if (!note.empty()) {
      out.push_back(std::move(note));
    }
  }
  return out;
}

double offline_ceiling(const ServeOption& o, int64_t replicas) {
  return o.offline.requests_per_s * static_cast<double>(replicas);
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
  if (job.disaggregate_gpus > 0) {
    a.disaggregated = disaggregate(a, job, tp);
  }
  const ServeOption* best = a.best_option();
  if (best == nullptr) {
    return a;
  }
  a.chunk_tokens = best->model->chunk_tokens();  // an engine may size it by the instance
  // The best shape on engines speed_uncertainty slower (InferenceParams::time_scale), built once
  // for the run's and the fleet's sensitivity.
  const double slower = 1.0 + ip.speed_uncertainty;
  std::optional<InferenceModel> slow_model;
  auto slow = [&]() -> const InferenceModel& {
    if (!slow_model) {
      InferenceParams p = best->model->params();
      p.time_scale = slower;
      slow_model.emplace(model, best->model->instance(), mp, tp, p);
    }
    return *slow_model;
  };
  if (job.simulate_load) {
    Workload w = job.workload;
    if (job.closed()) {
      w.requests = closed_loop_requests(w, w.users);
    }
    if ((w.rate_per_s > 0 || w.users > 0) && job.setup.batching == Batching::kContinuous) {
      // A steady load is measured as the searches measure it: its warm-up and drain (and a
      // closed loop's first round, sent together) simulated, not counted.
      w = steady_run(w, w.requests, kSearchRun);
    }
    const double ceiling = offline_ceiling(*best, job.setup.replicas);
    a.run_overload = !job.closed() && w.rate_per_s > ceiling;
    const bool steady = (w.rate_per_s > 0 || w.users > 0) &&
                        job.setup.batching == Batching::kContinuous && !a.run_overload;
    RunSettling settling;
    if (steady && job.settle_run) {
      // As a sweep measures each of its loads: from SteadyState's first run, doubling.
      SettledResult s = simulate_settled(*best->model, job.workload, job.setup);
      w = steady_run(job.workload, s.result.simulated, SteadyState{});
      a.run = std::move(s.result);
      settling.settled = s.settled;
      settling.growing = s.growing;
      settling.runs = s.runs;
      if (s.previous) {
        settling.other = std::move(*s.previous);
      }
    } else {
      a.run = simulate_serving(*best->model, w, job.setup);
      if (steady && a.run->feasible) {
        // The count asked for, checked against the same load run for twice as many.
        settling.other = simulate_serving(
            *best->model, steady_run(job.workload, 2 * w.requests, kSearchRun), job.setup);
        settling.settled = runs_agree(*a.run, settling.other, kSearchRun.tolerance);
        settling.runs = 2;
        settling.doubling = false;
      }
    }
    a.requests = w.requests;
    const bool loaded = steady && a.run->feasible;
    if (loaded && settling.runs > 1) {
      settling.widest = widest_difference(*a.run, settling.other);
      a.settling = std::move(settling);
    }
    if (loaded && ip.speed_uncertainty > 0) {
      // Every iteration slower by the same factor: the offline ceiling falls by exactly it.
      a.slower = slower;
      a.slower_overload = !job.closed() && w.rate_per_s > ceiling / slower;
      if (!a.slower_overload) {
        a.run_slower = simulate_serving(slow(), w, job.setup);
      }
    }
  }
  if (job.target > 0) {
    const int64_t start =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(job.target / best->amount)));
    a.fleet = size_fleet(*best->model, best->gpus, start, job);
    if (ip.speed_uncertainty > 0 && a.fleet->met) {
      // The same target on the slower engines, from the fleet up (see run_slower).
      const ServeFleet s = size_fleet(slow(), best->gpus, a.fleet->replicas, job);
      a.fleet->replicas_if_slower = s.met ? s.replicas : 0;
      a.fleet->slower = slower;
    }
  }
  if (!job.sweep.empty()) {
    a.sweep = sweep(*best, job);
  }
  for (int64_t i = 1; i <= job.curve_points && best->amount > 0; ++i) {
    const double n = static_cast<double>(job.curve_points);
    Workload w = job.workload;
    ServingSetup one = job.setup;
    one.replicas = 1;
    LoadPoint p;
    p.load = best->amount * 1.5 * static_cast<double>(i) / n;
    if (job.closed()) {
      w.users = std::max<int64_t>(1, std::llround(p.load));
      p.load = static_cast<double>(w.users);
    } else {
      w.rate_per_s = p.load;
    }
    p.result = simulate_serving(*best->model, steady_run(w, kSearchRun.first, kSearchRun), one);
    a.curve.push_back(std::move(p));
  }
  return a;
}

}  // namespace gpuplan
