// Does a job fit in GPU memory, and if not, what does it take?
//
// fit_on_gpu() compares the memory of the heaviest GPU of a layout (memory.h) with what the
// driver leaves to programs on that GPU (Gpu::memory_usable, not the marketing figure) and
// gives the verdict with its margin; for inference it also says how much memory is left for
// the KV cache and how many tokens of context that holds. smallest_fit() searches layouts for
// the fewest GPUs of one type that hold the job.
#ifndef GPUPLAN_FIT_H_
#define GPUPLAN_FIT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/hardware.h"
#include "gpuplan/lang.h"
#include "gpuplan/memory.h"
#include "gpuplan/model.h"

namespace gpuplan {

struct FitVerdict {
  bool fits = false;
  Bytes usable;    // what the driver reports on one GPU
  Bytes required;  // the heaviest GPU's total
  Bytes margin;    // usable - required (negative when it does not fit)
  Text reason;     // one sentence, for people
};

// KV-cache room on one GPU for inference.
struct KvCapacity {
  double bytes_per_token = 0;  // KV bytes one token of context takes on this GPU
  Bytes budget;                // usable - weights - activations - overhead (may be negative)
  int64_t tokens = 0;          // tokens of context (summed over sequences) the budget holds
  int64_t max_context = 0;     // longest context per sequence at the job's batch
};

struct FitReport {
  MemoryBreakdown memory;
  FitVerdict verdict;
  std::optional<KvCapacity> kv;  // inference only
};

// REQUIRES: !layout_problem(model, job).
FitReport fit_on_gpu(const Model& model, const MemoryJob& job, const Gpu& gpu,
                     const MemoryParams& params);

// Which layout knobs the search may change. Knobs the user fixed stay as given in the job.
struct FitSearch {
  int64_t max_gpus = 16384;
  int64_t max_tp = 8;          // tensor parallelism stays inside one 8-GPU node
  bool vary_zero = true;       // try ZeRO 0..3 (training)
  bool vary_recompute = true;  // try none, selective, full (training)
  // The training software: a layout it could not run in its year (software_layout_problem) is
  // not tried, and sequence parallelism only where it had it. No framework: every layout.
  Software software;
};

struct SmallestFit {
  bool found = false;
  int64_t gpus = 0;
  MemoryJob job;  // the job with the layout that fits
  FitReport report;
  Text reason;  // when not found: why not, for people
  int64_t layouts_evaluated = 0;
};

// Searches GPU counts 1..8, then multiples of 8 (whole nodes), up to search.max_gpus, and
// returns the first count with a layout that fits. At that count the preferred layout is the
// first that fits in this order: less recomputation, lower ZeRO stage, fewer pipeline stages,
// less tensor parallelism — so the answer is deterministic and as simple as it can be.
// Inference uses tp * pp GPUs (one replica); training fills the rest with data parallelism.
SmallestFit smallest_fit(const Model& model, const MemoryJob& job, const Gpu& gpu,
                         const MemoryParams& params, const FitSearch& search);

// The fit answer (`gpuplan fit`): the verdict on one GPU (and, for 16-bit inference, with fp8
// weights), on one offer, and the smallest count of every catalog GPU and offer that holds the
// job.
struct FitJob {
  MemoryJob memory;
  const Gpu* gpu = nullptr;      // the verdict on this GPU; null: none asked
  const Offer* offer = nullptr;  // and on this offer (its GPU, up to its nodes)
  FitSearch search;              // for every catalog GPU
};

struct OfferFit {
  const Offer* offer = nullptr;
  bool holds = false;       // its GPU's smallest fit is within its nodes
  int64_t nodes = 0;        // nodes needed, when it holds
  int64_t gpus_needed = 0;  // its GPU's smallest fit; 0 when no layout fits
};

struct FitAnswer {
  std::optional<FitReport> on_gpu;
  std::optional<FitReport> fp8;         // on_gpu with fp8 weights, for 16-bit inference
  std::optional<SmallestFit> on_offer;  // the fewest of the offer's GPUs that hold it
  std::vector<std::pair<const Gpu*, SmallestFit>> smallest;  // every catalog GPU, by id
  std::vector<OfferFit> offers;                              // every catalog offer, by id
};

// An impossible layout (layout_problem), or one the training software could not run in its year
// (software_layout_problem with job.search.software), is an Error at "layout".
Result<FitAnswer> fit(const Model& model, const FitJob& job, const Catalog& catalog);

}  // namespace gpuplan

#endif  // GPUPLAN_FIT_H_
