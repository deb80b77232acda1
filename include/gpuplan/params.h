// The physical parameters the models share, as the catalog loads them from data/params/: the
// memory model's (memory.toml), the training-time model's (training.toml, and the fitted ones in
// training-fit.toml) and the serving model's (inference.toml). They sit here, below every model
// and below the catalog, so that the catalog holds them without depending on the models.
#ifndef GPUPLAN_PARAMS_H_
#define GPUPLAN_PARAMS_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/units.h"

namespace gpuplan {

// Physical parameters of the memory model, read from data/params/memory.toml.
struct MemoryParams {
  Bytes runtime_reserved;  // CUDA context, library workspaces, NCCL buffers, per GPU
  // Most tokens one serving forward pass processes: the engine's (engine.h; the catalog's
  // default engine unless one is applied).
  int64_t inference_chunk_tokens = 0;
};

// Physical parameters of the training-time model, shared by every estimate and every framework
// (data/params/training.toml; those marked fitted are written by gpuplan calibrate --validation
// into data/params/training-fit.toml).
struct TrainParams {
  // Share of their microbenchmark rate that GEMM and attention kernels reach inside a training
  // step, per GPU architecture (fitted: the node's power and memory system are shared with the
  // traffic around them), and for architectures no published run informed.
  std::vector<std::pair<std::string, double>> in_situ;
  double in_situ_default = 0;
  double elementwise_traffic = 0;  // HBM traffic of elementwise kernels over the bytes their
                                   // tensors hold (fitted)
  Seconds kernel_overhead;         // per elementwise kernel: launch gap and ramp (fitted)
  double overlap_slowdown = 0;     // extra compute time per second of hidden communication
                                   // (fitted)
  Seconds step_overhead;           // per optimizer step: data loader, clipping, logging (fitted)
  double nccl_efficiency = 0;      // achieved fraction of a link's rate where no busbw is measured
  Seconds collective_latency;      // software latency of one collective pass (collective.h)
  Bytes nccl_channel_bytes;        // per-rank bytes one NCCL channel needs (collective.h)
  double adam_bytes = 0;           // HBM bytes per owned parameter of one Adam update
  BytesPerSecond host_memory_bandwidth;       // a node's host memory, for an offloaded optimizer
  std::array<BytesPerSecond, 7> host_link{};  // GPU <-> host per PCIe generation (index = gen)

  double in_situ_for(const std::string& architecture) const {
    for (const auto& [arch, v] : in_situ) {
      if (arch == architecture) {
        return v;
      }
    }
    return in_situ_default;
  }
};

// Physical parameters of the serving model (docs/FORMULAS.md#serving), shared by every estimate
// (data/params/inference.toml).
struct InferenceParams {
  // The engine's (engine.h; the catalog's default engine unless one is applied): the share of
  // memory it gives the KV cache, of what weights and workspace leave or (kv_of_total) of the
  // whole GPU less those; the most sequences one instance runs at once; its KV block.
  double kv_memory_fraction = 0;
  bool kv_of_total = false;
  int64_t max_batch = 0;
  int64_t kv_block_tokens = 1;
  // The prefill token budget is what the instance's GPUs compute in one second at their 16-bit
  // peak, a forward pass per token (TGI's default on the cards it knows), instead of
  // MemoryParams::inference_chunk_tokens.
  bool prefill_budget_peak_second = false;
  // An iteration with prompt tokens to compute runs only those; the decoding sequences wait for
  // the next iteration without prompts (PromptScheduling::kPrefillFirst). Otherwise every
  // iteration decodes each running sequence and fills the rest of its token budget with prompts.
  bool prefill_first = false;
  std::string engine;              // the engine's id
  Seconds iteration_overhead;      // host time per iteration the GPUs wait for
  Seconds layer_overhead;          // per layer per iteration: launch gaps and kernel ramp
  Seconds sequence_overhead;       // the engine's, per sequence sampling a token (engine.h)
  double stream_share = 0;         // of the streaming (BabelStream) bandwidth, what the
                                   // memory-bound decode kernels reach
  double compute_share = 0;        // of the microbenchmark tensor-core rate (gemm.h), what a
                                   // serving engine's GEMM and attention kernels reach loaded
  double elementwise_traffic = 0;  // passes over the bytes of the tensors a token writes
                                   // (fitted: engines fuse some of those kernels)
  // The engine does its per-sequence host work while the GPU computes (engine.h).
  bool sequence_overhead_overlapped = false;
  // Every iteration takes this times its modelled time: 1, or 1 + speed_uncertainty for the
  // sensitivity serve reports beside a loaded run.
  double time_scale = 1.0;
  // How far the modelled engine speed may be off, as a share: the serving model's typical error
  // out of sample (params/inference.toml).
  double speed_uncertainty = 0;
  // The GPU architectures ("hopper", ...) of the results the fitted parameters above were
  // fitted to (params/serving-fit.toml), in order; on any other the fit stands in unchecked
  // (serving_fit_note, serve.h).
  std::vector<std::string> fitted_architectures;
};

}  // namespace gpuplan

#endif  // GPUPLAN_PARAMS_H_
