// Sizing a serving deployment: what each instance shape serves under a latency objective, the
// best shape per GPU, the requested load simulated on it, and the replicas a target needs.
//
// Every shape is timed by the iteration model (inference.h) and loaded by the discrete-event
// simulator (serving.h): its capacity is the highest Poisson rate, or for a closed loop the most
// concurrent users, whose p99 latencies meet the objective. `gpuplan serve` prints this answer
// and `gpuplan plan` sizes serving on every offer through the same call, so the two agree.
#ifndef GPUPLAN_SERVE_H_
#define GPUPLAN_SERVE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/inference.h"
#include "gpuplan/serving.h"

namespace gpuplan {

// How a fleet's replica is measured at its share of the load: runs doubling from 2,000
// requests (a closed loop: at least 4 per user) until two agree (SteadyState).
inline constexpr SteadyState kFleetRun{.per_user = 4};
// A fleet is grown from its first estimate one replica at a time, to at most this many sizes.
inline constexpr int64_t kFleetTries = 8;

struct ServeJob {
  Instance base;        // GPU, node, network and precisions; tp and pp are each shape's;
                        // gpus_per_node 0: the NVLink domain, or max_tp PCIe cards
  int64_t tp = 0;       // 0: powers of two up to the widest the node allows
  int64_t pp = 0;       // 0: one stage, or whole-node stages across nodes for a model one
                        // node cannot hold (needs base.scale_out)
  int64_t max_tp = 8;   // without tp, over PCIe: the most cards one instance may span
  int64_t max_pp = 64;  // with pp 0: the most whole-node stages tried
  Workload workload;    // workload.users > 0: a closed loop of users
  ServingSetup setup;   // replicas: the instances `run` simulates
  Slo slo;
  double target = 0;  // requests/s (open loop) or users (closed loop) to size a fleet for; 0: none
  bool simulate_load = true;  // simulate the workload itself on the best shape (`run`)
  // A loaded `run` (Poisson or closed loop, continuous batching) runs until it settles
  // (simulate_settled, SteadyState: the workload's request count aside). false: it simulates
  // exactly workload.requests (a benchmark of that many, `--requests`), checked against the
  // same load run for twice as many.
  bool settle_run = true;
  int64_t curve_points = 0;  // > 0: the best shape's latencies at that many loads (`curve`)
  // Loads to sweep on `setup.replicas` of the best shape (`sweep`), ascending: requests/s over
  // all replicas (open loop) or users (closed loop); the workload's rate or users aside.
  std::vector<double> sweep;
  // > 0: also split this many GPUs into prefill and decode pools (`disaggregated`). Open loop
  // only: the pools are compared on requests/s.
  int64_t disaggregate_gpus = 0;

  bool closed() const { return workload.users > 0; }
};

// One instance shape, evaluated: how much it serves — requests/s (open loop) or users (closed
// loop) — within the objective, or at most without one.
struct ServeOption {
  int64_t tp = 0;
  int64_t pp = 1;
  int64_t gpus = 0;      // tp x pp
  Why why = Why::kNone;  // the kind of reason
  Text reason;           // why it cannot serve; empty when it can
  std::optional<InferenceModel> model;
  double amount = 0;        // requests/s or users
  double per_gpu = 0;       // amount per GPU
  double tokens_per_s = 0;  // output tokens/s at that capacity
  ServingResult offline;    // every request queued at once

  bool serves() const { return reason.empty(); }
};

// The replicas a target needs. Each replica is simulated at its share of the load — the target
// divided over the replicas, rounded up for users — since a least-loaded balancer gives every
// replica the same share of a closed loop, and a Poisson stream split at random is Poisson at
// the shared rate (a least-loaded split does no worse). Grown while the share misses, measured
// in its steady state (kFleetRun), so the fleet does not depend on the workload's request count.
struct ServeFleet {
  int64_t replicas = 0;
  int64_t gpus = 0;
  double share = 0;      // requests/s or users per replica
  ServingResult result;  // one replica at its share, in its steady state
  bool settled = true;   // false: the steady state's cap came first
  bool met = false;
  double output_tokens_per_s = 0;  // the fleet's: replicas x one replica's
  // The replicas the same target needs on engines 1 + speed_uncertainty times slower (as
  // ServeAnswer::run_slower), grown from `replicas`; 0 when the fleet is not met, or not
  // even `replicas` + kFleetTries - 1 meet it then.
  int64_t replicas_if_slower = 0;
  double slower = 0;  // 1 + speed_uncertainty, when replicas_if_slower was sought; else 0
};

// Whether a loaded run reports its steady state: it and the run it is compared with agree within
// SteadyState::tolerance (runs_agree). With ServeJob::settle_run, `other` is the run before it
// in simulate_settled's doubling and `runs` how many it took; with a given request count,
// `other` is the same load run for twice as many (`runs` 2). Where they disagree, `run`'s
// percentiles depend on how long it ran; `growing` tells a queue that grows with the run
// (SettledResult::growing) from percentiles that converge slowly.
struct RunSettling {
  bool settled = true;
  bool growing = false;
  int64_t runs = 0;
  bool doubling = true;  // ServeJob::settle_run: runs doubled until two agreed
  ServingResult other;
  RunDifference widest;  // where `run` and `other` differ most
};

// One point of the load curve: one instance of the best shape at `load` requests/s (open loop)
// or users (closed loop).
struct LoadPoint {
  double load = 0;
  ServingResult result;
};

// One load of a sweep, on the job's replicas of the best shape.
struct SweepPoint {
  double load = 0;  // requests/s over all replicas, or users
  ServingResult result;
  // Arrivals exceed what the replicas complete with every request queued at once: the queue
  // grows without bound. `result` is then the replicas saturated (saturated_serving): they
  // complete the ceiling's requests and tokens per second at the full batch's TPOT and ITL,
  // while TTFT and E2E grow as long as the arrivals last, and are infinite; so is every wait
  // against a TTFT bound, and goodput under one is 0. Every other load runs until it settles
  // (simulate_settled).
  bool overload = false;
  bool settled = true;  // false: SteadyState's cap came first
  // Not settled because the queue grows with the run (SettledResult::growing): arrivals outpace
  // the replicas before the offline ceiling says so, and the figures are the longest run's.
  bool growing = false;
  // The heaviest load before the latency turns up: the last load (not overloaded) whose p99
  // TTFT is at most twice the lightest load's, when a heavier one's is more (or overloads).
  bool knee = false;
};

// One split of the GPUs into a prefill pool and a decode pool, and what it serves: the highest
// Poisson rate within the objective (without one, every request queued at once).
struct PoolSplit {
  int64_t prefill_tp = 0;
  int64_t prefill_replicas = 0;
  int64_t decode_tp = 0;
  int64_t decode_replicas = 0;
  KvTransfer transfer;    // from a prefill to a decode instance
  Seconds mean_transfer;  // of a mean prompt's own cache (past its cached prefix)
  Capacity capacity;

  int64_t gpus() const { return prefill_tp * prefill_replicas + decode_tp * decode_replicas; }
};

// Disaggregated against aggregated serving on the same GPUs, as NVIDIA's AIConfigurator sizes
// Dynamo deployments: every split of the GPUs into prefill instances of one shape and decode
// instances of another (one-stage shapes, tensor parallel within a node), each simulated as one
// system under the load, against the best aggregated shape's replicas on those GPUs.
struct Disaggregation {
  int64_t gpus = 0;
  bool crosses_nodes = false;  // the GPUs span nodes: caches go over the network between them
  Why why = Why::kNone;
  Text reason;  // why no split serves; empty when one does
  // Aggregated: the shape (an index into ServeAnswer::options; -1: none serves) whose replicas
  // on these GPUs serve most, each at its own capacity.
  int aggregated = -1;
  int64_t aggregated_replicas = 0;
  double aggregated_rate = 0;
  std::vector<PoolSplit> splits;  // the simulated splits that serve, most requests/s first
  // The job's own rate on the best split, measured as the splits are (when the job has a rate).
  std::optional<ServingResult> at_load;
  int64_t tried = 0;      // pairs of shapes rate-matched
  int64_t simulated = 0;  // their best splits simulated as whole deployments

  const PoolSplit* best() const { return splits.empty() ? nullptr : &splits.front(); }
};

struct ServeAnswer {
  std::vector<ServeOption> options;  // by pp, then tp, ascending
  int best = -1;                     // the option that serves most per GPU; -1: none serves
  std::optional<ServingResult> run;  // the workload on `setup.replicas` of the best, when asked
  std::optional<ServeFleet> fleet;   // when the job has a target and an option serves
  // With curve_points n: the loads i/n x 3/2 of the best shape's capacity, i = 1..n, so the
  // curve shows where latency turns up past the capacity.
  std::vector<LoadPoint> curve;
  std::vector<SweepPoint> sweep;                // the job's sweep, load by load
  std::optional<Disaggregation> disaggregated;  // with disaggregate_gpus
  int64_t requests = 0;   // simulated in `run` (a closed loop: 4 or more per user), the first
                          // and last 10 % (and a closed loop's first round) not measured
  int64_t max_batch = 0;  // the engine's limits, for people to read
  int64_t chunk_tokens = 0;
  // `run`'s Poisson arrivals exceed what its replicas complete with every request queued (as a
  // sweep's SweepPoint::overload): its queue and TTFT grow as long as the run lasts.
  bool run_overload = false;
  // The sensitivity of a loaded `run` (Poisson or closed loop, continuous batching) to the
  // serving model's own error: the same load on the same replicas with every iteration
  // `slower` times longer (1 + InferenceParams::speed_uncertainty). Near capacity a small error
  // in speed is a large one in latency, which this shows. `slower_overload`: the slower engines'
  // ceiling is below the arrivals (Poisson), and `run_slower` is not simulated.
  double slower = 0;
  std::optional<ServingResult> run_slower;
  bool slower_overload = false;
  // How a loaded, feasible `run` below the offline ceiling reached its steady state; none for
  // any other run (every request queued at once, static batches, overload: nothing to settle).
  std::optional<RunSettling> settling;

  const ServeOption* best_option() const {
    return best < 0 ? nullptr : &options[static_cast<size_t>(best)];
  }
};

// "tp 4", "tp 8 pp 2": a shape for people.
std::string shape_name(const ServeOption& o);

// What `replicas` instances of `o` complete per second with every request queued at once.
// Poisson arrivals faster than that overload them: the queue grows as long as a run lasts.
double offline_ceiling(const ServeOption& o, int64_t replicas);

// Empty where the serving parameters were fitted to results on `gpu`'s architecture
// (InferenceParams::fitted_architectures; no list: nothing to say); else the sentence saying
// that on this GPU they stand in unchecked, for every front end to show beside the answer.
Text serving_fit_note(const Gpu& gpu, const InferenceParams& ip);

// What a serving answer on `gpu` with `weights` leans on that no measurement or fit checked: the
// GPU's estimated rates (estimated_rates_note, the engines' own attention kernels) and
// serving_fit_note; empty when nothing. serve and plan show these beside the answer.
std::vector<Text> serving_caveats(const Gpu& gpu, Precision weights, const InferenceParams& ip);

// Shapes already evaluated for one model, workload, setup and objective, by what they run on:
// `plan` asks serve() about many offers that share a GPU and a node.
using ServeShapeCache = std::map<std::string, ServeOption>;

// The shapes, the best, the requested load on it and the fleet for the target. REQUIRES: the
// workload's context fits the model (check_context), base.gpu and base.scale_up set; a cache
// used only with one model, workload, setup and objective.
ServeAnswer serve(const Model& model, const ServeJob& job, const MemoryParams& mp,
                  const TrainParams& tp, const InferenceParams& ip,
                  ServeShapeCache* cache = nullptr);

}  // namespace gpuplan

#endif  // GPUPLAN_SERVE_H_
