// How long one iteration of a serving engine takes on one model instance.
//
// An instance is one copy of the model on `tp` GPUs of a node (tensor parallel). A serving
// engine with continuous batching (vLLM, TensorRT-LLM, SGLang) runs iterations: each processes
// one new token of every decoding sequence and a chunk of the prompts being prefilled, all in one
// forward pass. Its time is a sum of parts: each layer's weight GEMMs for the iteration's tokens
// are timed by gemm_time() as training times them (tiles, waves, split-K, weights streamed,
// launch: prefill is compute-bound, decode bound by its weights); attention takes the prefill
// FLOPs at the attention-kernel rate plus the KV cache read by the decoding sequences;
// elementwise kernels move their activations through HBM; tensor parallelism pays two
// all-reduces per layer; the host adds a fixed overhead. Every formula is in
// docs/FORMULAS.md#serving.
#ifndef GPUPLAN_INFERENCE_H_
#define GPUPLAN_INFERENCE_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "gpuplan/collective.h"
#include "gpuplan/hardware.h"
#include "gpuplan/lang.h"
#include "gpuplan/memory.h"
#include "gpuplan/model.h"
#include "gpuplan/params.h"
#include "gpuplan/why.h"

namespace gpuplan {

// One model replica: tp x pp GPUs. Pipeline stages hold consecutive layers; an engine keeps pp
// batches in flight, one per stage (vLLM's and TensorRT-LLM's pipeline-parallel serving).
struct Instance {
  const Gpu* gpu = nullptr;
  const Fabric* scale_up = nullptr;  // links between the GPUs of a node
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t gpus_per_node = 0;          // 0: the whole instance in one node
  const Fabric* scale_out = nullptr;  // between nodes, when the stages span nodes
  int64_t nics_per_node = 0;
  Precision precision = Precision::kBf16;     // weights (and GEMM inputs for fp8 / int8)
  Precision kv_precision = Precision::kBf16;  // KV cache
  // The weights are the checkpoint's as published (Model::released, memory.h): its bytes per
  // weight and which matrices are quantised; `precision` is their class. Where the GPU has no
  // tensor-core rate for that class (MXFP4 on Hopper), they are dequantised into 16-bit GEMMs,
  // as engines' weight-only kernels do, instead of the instance being refused.
  bool as_released = false;

  int64_t gpus() const { return tp * pp; }
};

// What one iteration processes.
struct BatchShape {
  int64_t prefill_tokens = 0;  // prompt tokens processed
  double prefill_keys = 0;     // sum over those tokens of the keys each attends to (causal)
  int64_t decodes = 0;         // sequences generating one token each
  double decode_context = 0;   // the decoding sequences' KV cache, InferenceModel::kv_units
  int64_t logits = 0;          // sequences sampling a token at the end of the iteration
};

// Where an iteration's time goes.
struct IterationTime {
  Seconds matmul;       // weight GEMMs and the output head
  Seconds attention;    // prefill attention FLOPs + decode KV reads
  Seconds elementwise;  // norms, activations, residuals, rotary
  Seconds tp_comm;      // tensor-parallel all-reduces
  Seconds pp_comm;      // activations handed from stage to stage
  Seconds overhead;     // host: scheduling, sampling, launches

  Seconds total() const { return matmul + attention + elementwise + tp_comm + pp_comm + overhead; }
};

// The instance's per-iteration cost model, with the constants that do not depend on the batch
// computed once, so that a simulator can evaluate an iteration in constant time.
class InferenceModel {
 public:
  // Checks the instance (tp divides the heads and fits the node, the GPU has a calibration and
  // the precision's peak) and sizes its memory; `feasible` says whether it can serve at all.
  InferenceModel(const Model& model, const Instance& instance, const MemoryParams& mp,
                 const TrainParams& tp, const InferenceParams& ip);

  bool feasible() const { return reason_.empty(); }
  const Text& reason() const { return reason_; }  // why not, when infeasible
  Why why() const { return why_; }                // its kind

  // One batch's pass through every stage: with pp > 1 the instance runs pp such batches at
  // once, one per stage, so each takes this long and the stages stay busy.
  IterationTime iteration(const BatchShape& b) const;

  const Instance& instance() const { return instance_; }
  const Model& model() const { return model_; }
  const InferenceParams& params() const { return params_; }
  // Most tokens one iteration processes (MemoryParams::inference_chunk_tokens): the prefill
  // chunk budget.
  int64_t chunk_tokens() const { return chunk_tokens_; }
  Bytes weights_per_gpu() const { return weights_; }
  Bytes kv_budget_per_gpu() const { return kv_budget_; }
  double kv_bytes_per_token() const { return kv_per_token_; }  // on one GPU, all layers
  int64_t kv_tokens() const { return kv_tokens_; }             // context the instance holds
  // Batches in flight at once (pp) and what each may hold: the instance's KV cache and
  // max_batch, shared evenly.
  int64_t engines() const { return instance_.pp; }
  int64_t engine_kv_tokens() const { return kv_tokens_ / instance_.pp; }
  int64_t engine_max_batch() const {
    return std::max<int64_t>(1, params_.max_batch / instance_.pp);
  }
  Bytes usable_per_gpu() const { return usable_; }
  // Tokens of KV cache a request leaves unused on average: half of its last, partly filled
  // block (InferenceParams::kv_block_tokens).
  int64_t kv_block_waste() const { return params_.kv_block_tokens / 2; }

  // The simulators count the KV cache in whole units: a token of every layer, or with a
  // sliding window (Model::window) 1 / layers of one, so that a sequence's cache, full layers x
  // context + windowed layers x min(context, window), is a whole number of them.
  int64_t kv_unit_scale() const { return model_.has_window() ? model_.layers : 1; }
  // Units of a sequence holding `context` tokens whose windowed layers are counted at
  // min(`reserved`, window): the simulators reserve the window part for the sequence's whole
  // length when they admit it, so that each token it then decodes adds kv_growth() units.
  int64_t kv_units(int64_t context, int64_t reserved) const;
  int64_t kv_units(int64_t context) const { return kv_units(context, context); }
  int64_t kv_growth() const {
    return model_.has_window() ? model_.layers - model_.window.layers : 1;
  }
  // Units a request is admitted with: `tokens` of it to hold (window part reserved for
  // `reserved`), less its cached prefix, plus half a block (kv_block_waste).
  int64_t kv_admitted(int64_t tokens, int64_t reserved, int64_t cached) const {
    return kv_units(tokens, reserved) - kv_units(cached) + kv_block_waste() * kv_unit_scale();
  }
  // The (query, key) pairs of a prompt chunk of `queries` tokens after `done` (attended_keys).
  double prefill_keys(double done, double queries) const {
    return attended_keys(model_, done, queries);
  }

  // Time to prefill one prompt alone, its first `cached` tokens already in the prefix cache, and
  // sample its first token (the TTFT floor); and one decode iteration of `batch` sequences at
  // `context` tokens each.
  Seconds prefill_alone(int64_t prompt, int64_t cached = 0) const;
  Seconds decode_step(int64_t batch, double context) const;
  // Seconds a decode iteration takes per unit of KV cache its sequences hold (kv_units): the
  // slower of reading those keys and values and their attention FLOPs. A decode-only iteration
  // takes its time at zero context plus this times the context (the simulator sums runs of
  // decode iterations in closed form on it).
  double decode_context_seconds() const;

 private:
  double unscaled_context_seconds() const;  // decode_context_seconds before time_scale

  Why why_ = Why::kNone;
  Text reason_;
  Instance instance_;
  InferenceParams params_;
  int64_t chunk_tokens_ = 0;
  Bytes usable_;
  Bytes weights_;
  Bytes kv_budget_;
  double kv_per_token_ = 0;
  int64_t kv_tokens_ = 0;
  // The weight GEMMs, timed by gemm_time() (gemm.h) layer span by layer span, as training times
  // them, in the instance's precision at serving's compute share (params_.compute_share).
  Model model_;
  LayerSpans spans_;                               // layer_spans(model_)
  double weight_bytes_ = 2;                        // bytes per stored weight (int4: dequantised)
  Precision matmul_precision_ = Precision::kBf16;  // the quantised matrices' GEMMs run in it
  bool experts_only_ = false;  // only routed experts are quantised; the other GEMMs 16-bit
  // Rates.
  double sixteen_rate_ = 0;    // FLOP/s of 16-bit GEMMs (decode attention)
  double attention_rate_ = 0;  // FLOP/s of attention kernels
  double hbm_rate_ = 0;        // achieved bytes/s
  // Per GPU, whole model.
  double attention_flops_ = 0;   // per (query token, key) pair, all layers
  double activation_bytes_ = 0;  // elementwise HBM traffic per token, all layers
  Network network_;
  int64_t boundaries_across_nodes_ = 0;  // stage boundaries that cross a node
};

}  // namespace gpuplan

#endif  // GPUPLAN_INFERENCE_H_
