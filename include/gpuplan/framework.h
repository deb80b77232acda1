// The training software a run uses, and what it changes about the run.
//
// Two runs of the same model on the same machines differ by their software: which attention
// kernels it calls, how it keeps mixed-precision state, whether it hides gradient reduction behind
// the backward pass, how its pipeline engine moves activations, how ZeRO-3 / FSDP gathers
// weights. These are facts a user knows about their own job ("Megatron-Core, 2024"), so they are
// an input, not a per-row knob: each framework is one data file (data/frameworks/<id>.toml) whose
// defaults carry the year they arrived, and a run names its framework and year. Every run of a
// framework gets the same parameters. docs/FORMULAS.md#frameworks.
#ifndef GPUPLAN_FRAMEWORK_H_
#define GPUPLAN_FRAMEWORK_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuplan/result.h"

namespace gpuplan {

// How a pipeline engine schedules and moves activations between stages.
enum class PipelineEngine {
  // Megatron-LM: 1F1B or interleaved (the layers per stage must divide into the virtual stages),
  // and with tensor parallelism but no sequence parallelism each rank sends 1/t of a boundary
  // activation and the next stage all-gathers it (Narayanan et al. 2021, sec. 4.1).
  kMegatron,
  // DeepSpeed's PipelineEngine: 1F1B only; every tensor-parallel rank sends the whole activation.
  kDeepSpeed,
  // A custom engine that balances uneven stages and interleaves them freely (Llama 3's).
  kCustom,
};

std::string_view pipeline_engine_name(PipelineEngine e);
Result<PipelineEngine> parse_pipeline_engine(std::string_view name);

// How a micro-batch's weight gradients are added to the earlier micro-batches' while every rank
// keeps its gradients whole (ZeRO below the gradient-sharding stage): the kernels, and so the HBM
// bytes per trained parameter and micro-batch (docs/FORMULAS.md#gradient-accumulation).
enum class GradAccumulation {
  // The weight-gradient GEMM adds its product into the fp32 buffer in its epilogue (Megatron's
  // gradient accumulation fusion): no pass of its own.
  kFused,
  // Autograd adds the new gradient into .grad, in the parameters' format: reads both, writes
  // .grad; the first micro-batch's is stored as it comes.
  kAutograd,
  // A backward hook adds the 16-bit gradient into the fp32 main_grad and frees it (Megatron
  // 2021): reads 2 + 4 bytes, writes 4, every micro-batch.
  kHook,
  // The 16-bit gradient is cast to an fp32 temporary, which is then added into the fp32
  // gradients (DeepSpeed's BF16_Optimizer.update_hp_grads): 2 + 4 + 4 + 4 + 4 bytes.
  kFp32Copy,
};

std::string_view grad_accumulation_name(GradAccumulation g);
Result<GradAccumulation> parse_grad_accumulation(std::string_view name);

struct Framework {
  std::string id;  // "megatron-lm"
  std::string name;
  PipelineEngine pipeline = PipelineEngine::kMegatron;
  // Bytes per trained parameter in mixed precision (16-bit compute): the resident weights, the
  // gradient buffer (also the format gradients are reduced in) and the fp32 master weights the
  // optimizer keeps beside its moments. Megatron: 2 + 4 (fp32 main_grad) + 4; DeepSpeed: 2 + 2 +
  // 4; FSDP: the fp32 shard is the master, 4 + 4 + 0.
  double weight_bytes = 2;
  double gradient_bytes = 4;
  double master_bytes = 4;
  // The gradient buffer in bf16 (and fp8) runs where it differs: DeepSpeed's BF16_Optimizer keeps
  // and reduces fp32 gradients where its fp16 optimizer keeps 16-bit ones.
  std::optional<double> gradient_bytes_bf16;
  // The lowest ZeRO stage that shards the gradients: 2 as ZeRO defines its stages; 1 where the
  // framework's sharded data parallelism always shards gradients with the optimizer states.
  int64_t gradient_sharding_stage = 2;
  // The year each behaviour became the framework's default; 0: never.
  int64_t fused_attention_since = 0;       // FlashAttention-class kernels, not eager softmax
  int64_t overlap_grad_reduce_since = 0;   // DP gradient reduction hidden behind the backward
  int64_t overlap_param_gather_since = 0;  // ZeRO-1/2 weight all-gather hidden in the forward
  int64_t tp_comm_overlap_since = 0;       // TP collectives overlapped with their GEMMs
  // MoE token all-to-alls hidden behind another micro-batch's compute (Megatron-Core's batch-level
  // overlap, which with pipeline parallelism needs interleaved stages).
  int64_t ep_comm_overlap_since = 0;
  int64_t zero3_prefetch_since = 0;  // ZeRO-3 gathers the next layer while computing
  // Layouts the framework can run, from the year it first could (0: never): Megatron's sequence
  // parallelism beside tensor parallelism (Korthikanti et al. 2022), context parallelism (ring
  // attention over the cp ranks) and selective recompute.
  int64_t sequence_parallel_since = 0;
  int64_t context_parallel_since = 0;
  // Selective activation recompute (the attention core only, Korthikanti et al. 2022).
  int64_t selective_recompute_since = 0;
  // The year ZeRO stage 1, 2 and 3 (or the framework's equivalent: Megatron's distributed
  // optimizer, FSDP's sharding strategies) first ran, 0 where never; nullopt where the framework
  // file does not say, and any stage may run.
  std::optional<std::array<int64_t, 3>> zero_since;
  // Megatron's pipeline may count the embedding and the loss as one layer each when it splits the
  // layers into (virtual) stages (account_for_embedding_in_pipeline_split and ..._loss_...): the
  // first and last stage then hold one transformer layer fewer, and a model interleaves where
  // its layers + 2 divide into pp x v chunks, as well as where its layers do.
  int64_t pipeline_embedding_layers_since = 0;
  // Megatron's custom pipeline layout (--pipeline-model-parallel-layout): any split of the layers,
  // the embedding and the loss into pp x v chunks, each chunk holding at least one of them, so a
  // model interleaves wherever pp x v <= layers + 2.
  int64_t custom_pipeline_layout_since = 0;
  // How gradients accumulate over micro-batches, in bf16 where that differs; from the year the
  // weight-gradient GEMM took over the fp32 main_grad hook (0: never).
  GradAccumulation grad_accumulation = GradAccumulation::kFused;
  std::optional<GradAccumulation> grad_accumulation_bf16;
  int64_t grad_accumulation_fused_since = 0;
  // ZeRO-3 / FSDP: parameters per gathered bucket; 0 gathers one transformer layer at a time
  // (FSDP wraps each block as a unit).
  double zero3_bucket_params = 0;
  // ZeRO-3: most gathered parameters alive at once; prefetching the next layer needs two layers
  // alive, so a layer of more than half of this is never prefetched. 0: no limit.
  double zero3_max_live_params = 0;
  // The year its fused attention first ran kernels written for an architecture (FlashAttention-3
  // or cuDNN's on "hopper", cuDNN's on "blackwell"), by the architecture's name as data/gpus/
  // writes it; an architecture not listed: never.
  std::vector<std::pair<std::string, int64_t>> native_attention_since;
  std::string source;
  std::string file;

  // native_attention_since's year for `architecture`; 0: never.
  int64_t native_attention_year(std::string_view architecture) const;
};

// A run's software: its framework and the year it was measured or is planned for. `year` decides
// which of the framework's defaults apply.
struct Software {
  const Framework* framework = nullptr;
  int64_t year = 0;

  bool since(int64_t first_year) const { return first_year > 0 && year >= first_year; }
  bool fused_attention() const { return since(framework->fused_attention_since); }
  bool native_attention(std::string_view architecture) const {
    return since(framework->native_attention_year(architecture));
  }
  bool overlap_grad_reduce() const { return since(framework->overlap_grad_reduce_since); }
  bool overlap_param_gather() const { return since(framework->overlap_param_gather_since); }
  bool tp_comm_overlap() const { return since(framework->tp_comm_overlap_since); }
  bool ep_comm_overlap() const { return since(framework->ep_comm_overlap_since); }
  bool zero3_prefetch() const { return since(framework->zero3_prefetch_since); }
  bool sequence_parallel() const { return since(framework->sequence_parallel_since); }
  bool context_parallel() const { return since(framework->context_parallel_since); }
  bool selective_recompute() const { return since(framework->selective_recompute_since); }
  // Whether ZeRO stage `stage` (1 to 3) runs: always where the framework does not say.
  bool zero_stage(int64_t stage) const {
    return !framework->zero_since ||
           since((*framework->zero_since)[static_cast<size_t>(stage - 1)]);
  }
  bool pipeline_embedding_layers() const {
    return framework != nullptr && since(framework->pipeline_embedding_layers_since);
  }
  bool custom_pipeline_layout() const {
    return framework != nullptr && since(framework->custom_pipeline_layout_since);
  }
  // The pipeline engine; without a framework, Megatron's.
  PipelineEngine pipeline() const {
    return framework != nullptr ? framework->pipeline : PipelineEngine::kMegatron;
  }
};

// The year a run is planned for when none is given: every default a framework has is on.
inline constexpr int64_t kCurrentYear = 2026;

// The framework a job uses when none is named (train, scale, plan; docs/FORMULAS.md#frameworks).
inline constexpr std::string_view kDefaultFramework = "megatron-lm";

}  // namespace gpuplan

#endif  // GPUPLAN_FRAMEWORK_H_
