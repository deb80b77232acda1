// How much GPU memory a job needs, per GPU, itemised.
//
// A job is a model, a task (pre-training, full fine-tune, LoRA, QLoRA, inference), the number
// formats, the optimizer, activation recomputation and a parallel layout (tensor, pipeline and
// data parallel sizes, ZeRO stage, sequence parallelism, interleaved pipeline stages). The
// result is the memory of the heaviest GPU — pipeline stages differ: the first holds the
// embedding and the most micro-batches in flight, the last the output head and the logits —
// split into weights, gradients, optimizer states, activations, KV cache and runtime overhead.
// Every formula is stated with its source in docs/FORMULAS.md.
#ifndef GPUPLAN_MEMORY_H_
#define GPUPLAN_MEMORY_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/framework.h"
#include "gpuplan/hardware.h"
#include "gpuplan/lang.h"
#include "gpuplan/model.h"
#include "gpuplan/params.h"
#include "gpuplan/result.h"
#include "gpuplan/units.h"

namespace gpuplan {

enum class Task { kTrain, kFinetune, kLora, kQlora, kInfer };
// Adam keeps two fp32 moments; 8-bit Adam keeps them block-quantised in one byte each (Dettmers et
// al. 2022, "8-bit Optimizers via Block-wise Quantization"); SGD one momentum; Adafactor a
// factored second moment, O(rows + cols).
enum class Optimizer { kAdam, kAdam8bit, kSgd, kAdafactor };
enum class Recompute { kNone, kSelective, kFull };

std::string_view task_name(Task t);
std::string_view optimizer_name(Optimizer o);
std::string_view recompute_name(Recompute r);
Result<Task> parse_task(std::string_view name);
Result<Optimizer> parse_optimizer(std::string_view name);
Result<Recompute> parse_recompute(std::string_view name);
// Every name the parsers above take, in order; and the precisions a model can be trained in
// (those precision_problem lets through for a training task).
std::vector<std::string> task_names();
std::vector<std::string> optimizer_names();
std::vector<std::string> recompute_names();
std::vector<std::string> training_precision_names();
// The attention kernel a name means: true for "flash" (fused, no score matrices kept), false for
// "eager"; and those names.
Result<bool> parse_flash_attention(std::string_view name);
std::vector<std::string> attention_kernel_names();

inline bool is_training(Task t) {
  return t != Task::kInfer;
}
// LoRA and QLoRA train adapters only: the base weights are frozen, so they have no gradients or
// optimizer state and their weight-gradient GEMMs do not run.
inline bool trains_adapters(Task t) {
  return t == Task::kLora || t == Task::kQlora;
}

// How a job is spread over GPUs: tp * cp * pp * dp GPUs in all, placed TP innermost, then CP,
// DP, PP outermost (as Megatron-LM places them). Routed experts are split over an expert group
// carved from the tp x cp x dp ranks: each expert's matrices over etp ranks, the experts over ep
// such groups, and the rest replicate them (Megatron-Core's expert-tensor and expert
// parallelism), so ep x etp must divide tp x cp x dp.
struct Parallelism {
  int64_t tp = 1;              // tensor parallel
  int64_t pp = 1;              // pipeline parallel stages
  int64_t dp = 1;              // data parallel replicas
  int64_t virtual_stages = 1;  // interleaved pipeline chunks per stage (1: plain 1F1B)
  bool sequence_parallel = false;
  int64_t zero = 0;  // ZeRO stage 0..3 (FSDP full shard = 3)
  int64_t ep = 1;    // expert parallel: routed experts split over ep groups of etp ranks
  int64_t cp = 1;    // context parallel: each sequence split over cp ranks
  int64_t etp = 0;   // expert tensor parallel; 0: as tp

  int64_t gpus() const { return tp * cp * pp * dp; }
  int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  // Ranks that hold the same routed experts (they reduce their gradients together).
  int64_t expert_dp() const { return tp * cp * dp / (ep * expert_tp()); }
};

// LoRA adapter placement.
enum class LoraTargets { kAttention, kAllLinear };
// LoRA's targets by name: "attention" (q, k, v, o) or "all-linear"; and those names.
Result<LoraTargets> parse_lora_targets(std::string_view name);
std::vector<std::string> lora_targets_names();

struct MemoryJob {
  Task task = Task::kTrain;
  Precision precision = Precision::kBf16;     // weights and compute
  Precision kv_precision = Precision::kBf16;  // inference KV cache
  // Inference: the weights are the checkpoint's as published (Model::released: its bytes and
  // which matrices), `precision` the class of its quantised matrices.
  bool as_released = false;
  Optimizer optimizer = Optimizer::kAdam;
  Recompute recompute = Recompute::kNone;
  Parallelism layout;
  int64_t seq = 4096;       // training: tokens per sequence
  int64_t micro_batch = 1;  // training: sequences per micro-batch
  // Training: micro-batches per optimizer step per pipeline; 0 when unknown, taken as >= pp
  // (the pipeline is full, the worst case for activation memory).
  int64_t micro_batches = 0;
  int64_t batch = 1;       // inference: sequences served at once
  int64_t context = 4096;  // inference: tokens per sequence (prompt + output)
  int64_t lora_rank = 16;
  LoraTargets lora_targets = LoraTargets::kAllLinear;
  // Fused attention (FlashAttention, PyTorch SDPA) never stores the s x s score matrices;
  // the eager kernels of 2021-22 Megatron did (the 5 a s term of Korthikanti et al.).
  bool flash_attention = true;
  // Bytes per trained parameter in mixed precision as the training software keeps them
  // (framework.h): resident weights, gradient buffer, fp32 master weights. Megatron's defaults.
  double weight_bytes = 2;
  double gradient_bytes = 4;
  double master_bytes = 4;
  double gradient_bytes_bf16 = 4;       // the gradient buffer in bf16 and fp8 runs
  int64_t gradient_sharding_stage = 2;  // the lowest ZeRO stage that shards gradients
  // Optimizer states and master weights live in host memory and the update runs on the CPU
  // (ZeRO-Offload, Ren et al. 2021): the GPU keeps weights and gradients only.
  bool offload_optimizer = false;
};

// Memory of one GPU, by what it holds.
struct MemoryBreakdown {
  Bytes weights;
  Bytes gradients;
  Bytes optimizer;
  Bytes activations;
  Bytes kv_cache;
  Bytes overhead;            // runtime reserve (CUDA context, workspaces, communication buffers)
  Bytes host;                // optimizer state offloaded to host memory (not in total())
  int64_t stage = 0;         // the pipeline stage this GPU serves
  int64_t stage_layers = 0;  // transformer layers on that stage
  double parameters = 0;     // parameters resident on this GPU (before ZeRO-3 sharding)
  double expert_parameters = 0;  // of which routed experts (data-parallel over dp / ep ranks)
  double trainable = 0;          // of which trained (LoRA: the adapters)

  Bytes total() const {
    return weights + gradients + optimizer + activations + kv_cache + overhead;
  }
};

// Sets what the training software decides about a job's memory: its mixed-precision state bytes
// and whether its attention kernels store the scores (framework.h). Front ends call this, then
// apply explicit overrides.
void apply_software(MemoryJob& job, const Software& software);

// Whether the job's 16-bit format is bf16, where a framework's bf16 rules apply: bf16 runs and
// fp8 ones, which keep bf16 beside their fp8 GEMMs.
bool bf16_mixed_precision(const MemoryJob& job);

// Bytes per trained parameter of the gradient buffer the job keeps, and reduces over its
// data-parallel group, in mixed precision: gradient_bytes, or gradient_bytes_bf16 in bf16 and
// fp8 runs.
double gradient_buffer_bytes(const MemoryJob& job);

// Why a layout cannot run this model at all (tp not dividing the heads, more stages than
// layers, ...; and precision_problem), or nullopt when it can. Infeasible is an answer, not an
// error.
std::optional<std::string> layout_problem(const Model& model, const MemoryJob& job);

// Why the job's task cannot run at its precision (8- or 4-bit weights trained other than by
// QLoRA, fp4 training), or nullopt: the part of layout_problem that no layout changes.
std::optional<std::string> precision_problem(const MemoryJob& job);

// Why a training layout does not use exactly `gpus` GPUs (tp x pp x dp x cp), or nullopt.
std::optional<std::string> gpus_problem(const Parallelism& layout, int64_t gpus);

// Transformer layers on each of `pp` pipeline stages. When they do not divide evenly, the
// first and last stages give up layers first (they also hold the embedding and the output
// head), as Llama 3 405B's 126 layers on 16 stages do (Dubey et al. 2024, sec. 3.3.2).
std::vector<int64_t> stage_layers(int64_t layers, int64_t pp);

// The same count for one stage, without building the list. REQUIRES: 0 <= stage < pp <= layers.
int64_t stage_layer_count(int64_t layers, int64_t pp, int64_t stage);

// One pipeline stage: its index, and its layers [first, first + count).
struct StageSpan {
  int64_t stage = 0;
  int64_t first = 0;
  int64_t count = 0;
};

// The stages where a pipeline's stages may change shape, in order: the first, the second, the
// last, where the layer count changes, and around the last dense layer of a model whose first
// layers are dense. Every other stage has as many layers, as many of them dense, and holds the
// embedding or the head exactly as the stage before it; so the first stage of each shape is one
// of these (at most 8), and a model sizes or times a pipeline by them alone.
class StageBreaks {
 public:
  const StageSpan* begin() const { return spans_.data(); }
  const StageSpan* end() const { return spans_.data() + size_; }
  void add(StageSpan s);

 private:
  std::array<StageSpan, 8> spans_;  // the first size_ are set
  size_t size_ = 0;
};
// REQUIRES: 1 <= pp <= model.layers.
StageBreaks stage_breaks(const Model& model, int64_t pp);

// Activation bytes one transformer layer keeps for the backward pass, per micro-batch, on one
// GPU (Korthikanti et al. 2022, sec. 4, generalised to GQA and gated MLPs).
Bytes layer_activation_bytes(const Model& model, const MemoryJob& job);

// The heaviest GPU of the layout. REQUIRES: !layout_problem(model, job).
MemoryBreakdown memory_per_gpu(const Model& model, const MemoryJob& job,
                               const MemoryParams& params);
// The same, with the layout's stage_breaks(model, job.layout.pp) and the model's
// count_parameters already at hand.
MemoryBreakdown memory_per_gpu(const Model& model, const MemoryJob& job, const MemoryParams& params,
                               const StageBreaks& breaks, const ParameterCount& parameters);

// Every pipeline stage, first to last. REQUIRES: !layout_problem(model, job).
std::vector<MemoryBreakdown> memory_per_stage(const Model& model, const MemoryJob& job,
                                              const MemoryParams& params);

// Bytes per parameter of the optimizer's moments: Adam 8 (two fp32), 8-bit Adam 2 plus its block
// scales, SGD 4 (momentum), Adafactor ~0 (factored).
double optimizer_moment_bytes(Optimizer o);

// Bytes per matrix-multiply weight stored in precision `p`, quantisation scales included
// (int4: 4-bit values and one 16-bit scale per group of 128, the GPTQ/AWQ layout).
double quantized_weight_bytes(Precision p);

// KV cache precision when none is given (fit, serve, plan): fp8 and fp16 weights keep their
// format, fp4 (NVFP4) weights come with an fp8 cache (TensorRT Model Optimizer's quantisation
// default), the others bf16.
Precision default_kv_precision(Precision weights);

// The weights and KV cache of a job, from what the user gave (nullopt: not given). Inference
// with no precision: the checkpoint's format where its config declares one gpuplan reads
// (Model::released; gpt-oss's MXFP4 experts, DeepSeek-V3's block-scaled fp8) with a 16-bit KV
// cache unless one is given, as engines' "auto" KV format keeps the model's activation type, or
// the one the checkpoint names (Model Optimizer's kv_cache_quant_algo) where the engine's cache
// follows the checkpoint.
// A precision given that is the published format's class (fp4 for gpt-oss, fp8 for
// DeepSeek-V3) is that format too. Otherwise the precision given or bf16, and
// default_kv_precision unless the KV one is given. One rule for fit, serve, plan and validate.
// With no KV precision named, the cache is the engine's (EngineProfile::kv_cache): the
// weights' (default_kv_precision: TensorRT-LLM with Model Optimizer checkpoints) or the
// model's 16-bit type whatever the weights ("auto" in vLLM, SGLang and TGI; LMDeploy's
// quant_policy 0): fp16 with fp16 weights, else bf16.
enum class KvDefault { kFollowsWeights, kModelType };
struct WeightChoice {
  Precision precision = Precision::kBf16;
  Precision kv_precision = Precision::kBf16;
  bool as_released = false;
};
WeightChoice choose_weights(const Model& m, Task task, std::optional<Precision> weights,
                            std::optional<Precision> kv, KvDefault engine);

// What an inference answer says when the checkpoint declares a format gpuplan does not read
// (bitsandbytes, a 3-bit GPTQ) and no precision was given: the weights were counted in bf16.
// Empty otherwise.
Text unread_format_note(const Model& m, Task task, bool precision_given);

// Bytes per weight of the quantised matrices and whether only routed experts are quantised, of
// an inference job's weights: the checkpoint's (as_released) or quantized_weight_bytes.
struct QuantisedWeights {
  double bytes = 2;
  bool experts_only = false;
};
QuantisedWeights quantised_weights(const Model& m, Precision precision, bool as_released);

// How the answers name a job's weights: "published mxfp4 experts, bf16 attention", "published
// fp8", "published awq (int4)", or the precision's name.
Text weights_name(const Model& m, Precision precision, bool as_released);

// Bytes of KV cache per token on one GPU of the layout (tp shards heads; pp splits layers).
double kv_bytes_per_token_per_gpu(const Model& model, const MemoryJob& job, int64_t stage_layers);

}  // namespace gpuplan

#endif  // GPUPLAN_MEMORY_H_
