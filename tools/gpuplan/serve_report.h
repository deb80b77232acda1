// What `gpuplan serve` found, and its two writers: a text report for people and JSON for
// programs, from the same answer.
#ifndef GPUPLAN_TOOLS_SERVE_REPORT_H_
#define GPUPLAN_TOOLS_SERVE_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/hardware.h"
#include "gpuplan/serving.h"

namespace gpuplan::cli {

// One instance shape (tp, and pp when given), evaluated: how much it serves — requests/s
// (open loop) or users (closed loop) — within the objective, or at most without one.
struct ServeOption {
  int64_t tp = 0;
  int64_t gpus = 0;    // tp x pp
  std::string name;    // "tp 4", "tp 8 pp 2"
  std::string reason;  // why it cannot serve
  std::optional<InferenceModel> model;
  double amount = 0;        // requests/s or users
  double per_gpu = 0;       // amount per GPU
  double tokens_per_s = 0;  // output tokens/s at that capacity
  ServingResult offline;    // every request queued at once
};

// The replicas a target needs, checked by simulating them behind the balancer.
struct ServeFleet {
  int64_t replicas = 0;
  ServingResult result;
  bool met = false;
};

struct ServeAnswer {
  std::string model;  // catalog id or file
  const Gpu* gpu = nullptr;
  const Offer* offer = nullptr;  // when the hardware came from an offer
  Instance base;                 // precisions, pp and node; tp varies by option
  Workload workload;
  ServingSetup setup;
  Slo slo;
  bool closed = false;      // users in a closed loop rather than an arrival rate
  std::string per_request;  // "467 -> 256 tokens per request", or the trace
  std::string load;         // the load, for people
  std::string load_kind;    // "offline", "poisson", "static_batch", "closed_loop"
  int64_t input = 0;        // tokens (the means, for a trace)
  int64_t output = 0;
  std::vector<ServeOption> options;
  const ServeOption* best = nullptr;  // most per GPU; null when none serves
  std::optional<ServingResult> run;   // the requested load on the best option
  std::optional<ServeFleet> fleet;
  double target = 0;           // requests/s or users the fleet is sized for; 0: no fleet
  std::optional<Money> price;  // per GPU-hour
  int64_t max_batch = 0;       // the engine's limits, for the footnote
  int64_t chunk_tokens = 0;
};

void print_serve_text(const ServeAnswer& a);
void print_serve_json(const ServeAnswer& a);

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_SERVE_REPORT_H_
