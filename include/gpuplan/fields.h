// The range of every number a user gives gpuplan directly: one rule per field, shared by the
// command line, job files, the web API and Python, so that a value is accepted or refused the
// same way wherever it is given. A given value is used or refused, never replaced by a default.
//
// The bounds are not hardware figures. The lower ones are what the field means (a GPU count is at
// least 1; a rate is positive because it divides); the upper ones sit far beyond any real job and
// keep every product the models form (tokens x layers x widths, users x requests) finite and
// within int64, and the simulations within memory.
#ifndef GPUPLAN_FIELDS_H_
#define GPUPLAN_FIELDS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "gpuplan/result.h"

namespace gpuplan {

struct Field {
  std::string_view name;  // its key in job files and JSON ("gpus_per_node")
  double min = 0;         // smallest accepted value (inclusive)
  double max = 0;         // largest accepted value (inclusive)
  std::string_view unit;  // what it counts, for messages ("GPUs", "tokens", "requests/s")
  bool integer = false;   // whole numbers only
};

// `value` if it is finite, within `field`'s range and (for integer fields) whole; otherwise an
// Error at `given_as` (the flag or key it came from) naming the value and the range.
Result<double> check_field(const Field& field, double value, std::string_view given_as);

// The same for an integer field read as an integer.
Result<int64_t> check_count(const Field& field, int64_t value, std::string_view given_as);

// "1 to 1,048,576 GPUs": the range, for help texts and hints.
std::string field_range(const Field& field);

namespace fields {

// Cluster shape.
inline constexpr Field kGpus{"gpus", 1, 1 << 20, "GPUs", true};
inline constexpr Field kGpusPerNode{"gpus_per_node", 1, 1024, "GPUs per node", true};
inline constexpr Field kNicsPerNode{"nics_per_node", 1, 64, "NICs per node", true};
inline constexpr Field kMaxNodes{"max_nodes", 1, 100000, "nodes", true};
inline constexpr Field kMaxGpus{"max_gpus", 1, 1 << 20, "GPUs", true};

// Parallel layout.
inline constexpr Field kParallel{"parallel size", 1, 1 << 16, "ranks", true};
// 0 asks the search for the fastest (train --virtual-stages 0, --micro-batch 0).
inline constexpr Field kVirtualStages{"virtual_stages", 0, 1024, "stages per rank", true};
inline constexpr Field kZeroStage{"zero", 0, 3, "", true};

// Training job.
inline constexpr Field kSeq{"seq", 1, 1 << 24, "tokens", true};
inline constexpr Field kMicroBatch{"micro_batch", 0, 1 << 20, "sequences", true};
inline constexpr Field kGlobalBatch{"global_batch", 1, 1 << 24, "sequences", true};
inline constexpr Field kPerGpuBatch{"per_gpu_batch", 1, 1 << 20, "sequences", true};
inline constexpr Field kTokens{"tokens", 1, 1e18, "tokens"};
inline constexpr Field kEpochs{"epochs", 1e-6, 1e6, "epochs"};
inline constexpr Field kLoraRank{"lora_rank", 1, 65536, "", true};

// Serving workload.
inline constexpr Field kRequestTokens{"tokens per request", 1, 1 << 24, "tokens", true};
inline constexpr Field kRate{"rate_per_s", 1e-6, 1e9, "requests/s"};
inline constexpr Field kUsers{"users", 1, 1e9, "users", true};
inline constexpr Field kRequests{"requests", 1, 1e7, "requests", true};
inline constexpr Field kReplicas{"replicas", 1, 10000, "instances", true};
inline constexpr Field kBatch{"batch", 1, 1 << 20, "sequences", true};
inline constexpr Field kPrefixHit{"prefix_hit", 0, 1, "of the prompt tokens"};
// Beam search: sequences each request decodes side by side (1: greedy or sampled decoding).
inline constexpr Field kBeams{"beams", 1, 64, "beams per request", true};
// The arrival generator's seed: any 32-bit value (a negative one would wrap around silently).
inline constexpr Field kSeed{"seed", 0, 4294967295.0, "", true};
// GPUs split into prefill and decode pools: at least one of each.
inline constexpr Field kDisaggregateGpus{"disaggregate", 2, 1024, "GPUs", true};

// Money and search.
inline constexpr Field kUsdRate{"usd_rate", 1e-9, 1e9, "units per USD"};
inline constexpr Field kThreads{"threads", 1, 1024, "threads", true};
inline constexpr Field kTop{"top", 1, 100000, "layouts", true};

// Measurement harness.
inline constexpr Field kIterations{"iters", 1, 1e6, "iterations", true};
inline constexpr Field kWarmup{"warmup", 0, 1e6, "iterations", true};
inline constexpr Field kTimeout{"timeout", 1e-3, 1e6, "s"};
inline constexpr Field kSizeFactor{"factor", 1.001, 1024, ""};
// One buffer the harness allocates (a message, a gradient bucket, a copy): 64 GiB, more than
// any one GPU's memory in 2026 and within a large host's.
inline constexpr Field kBufferBytes{"buffer size", 1, 68719476736.0, "bytes", true};
// One side of the square GEMMs `measure gemm` times: three 65536^2 fp32 matrices are 48 GiB.
inline constexpr Field kGemmSize{"matrix size", 1, 65536, "", true};
inline constexpr Field kWidth{"hidden", 1, 1 << 17, "", true};
inline constexpr Field kLayers{"layers", 1, 1 << 14, "layers", true};

}  // namespace fields
}  // namespace gpuplan

#endif  // GPUPLAN_FIELDS_H_
