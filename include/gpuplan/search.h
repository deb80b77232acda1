// Layout search: every valid way to train a model on a cluster, ranked by step time.
//
// The space is every combination of tensor, context, pipeline, data and expert parallel sizes
// that multiplies to the GPU count, ZeRO stage, sequence parallelism, recomputation mode,
// micro-batch size and interleaved virtual stages. Constraints prune early: tp divides the
// heads and stays inside one scale-up domain (unless allowed), pp does not exceed the layers,
// the global batch divides into dp x micro-batch, memory fits (a larger micro-batch never needs
// less, so the first that does not fit ends its loop). Work is split over threads by the outer
// sizes; each keeps its best layouts and the merge orders them by step time, then by the layout
// itself, so the answer is the same for any number of threads.
#ifndef GPUPLAN_SEARCH_H_
#define GPUPLAN_SEARCH_H_

#include <optional>
#include <vector>

#include "gpuplan/training.h"

namespace gpuplan {

// Knobs the user fixed stay fixed; nullopt means "search it".
struct SearchOptions {
  std::optional<int64_t> tp, pp, dp, cp, ep, etp, micro_batch, virtual_stages, zero;
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel;
  bool tp_across_nodes = false;  // allow tensor parallelism beyond one scale-up domain
  int64_t max_cp = 16;           // largest context-parallel size tried
  int64_t top = 10;              // how many layouts to keep
  int threads = 1;               // worker threads (results do not depend on it)
};

struct SearchResult {
  std::vector<TrainEstimate> top;  // best first
  int64_t space = 0;               // layouts enumerated (before memory pruning of larger mbs)
  int64_t evaluated = 0;           // layouts whose memory or time was computed
  Why why = Why::kNone;            // when nothing is feasible: the kind of reason
  std::string reason;              // and why, for people
};

// REQUIRES: c.gpu has an efficiency calibration.
SearchResult search_layouts(const Model& model, const Cluster& c, const TrainJob& base,
                            const MemoryParams& mp, const TrainParams& tp,
                            const SearchOptions& options);

// Orders two feasible estimates: faster first, then by layout (tp, cp, pp, dp, ep, etp, zero,
// SP, recompute, micro-batch, virtual stages) so that ties are broken the same way everywhere.
bool better_layout(const TrainEstimate& a, const TrainEstimate& b);

}  // namespace gpuplan

#endif  // GPUPLAN_SEARCH_H_
