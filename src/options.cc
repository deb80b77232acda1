// Names of the enumerations in output and their parsers for input.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "gpuplan/hardware.h"
#include "gpuplan/memory.h"
#include "gpuplan/suggest.h"
#include "name_table.h"

namespace gpuplan {
namespace {

using detail::name_of;
using detail::parse_from;

constexpr std::array kPrecisions = {
    std::pair{Precision::kFp32, std::string_view("fp32")},
    std::pair{Precision::kTf32, std::string_view("tf32")},
    std::pair{Precision::kFp16, std::string_view("fp16")},
    std::pair{Precision::kBf16, std::string_view("bf16")},
    std::pair{Precision::kFp8, std::string_view("fp8")},
    std::pair{Precision::kInt8, std::string_view("int8")},
    std::pair{Precision::kInt4, std::string_view("int4")},
    std::pair{Precision::kFp4, std::string_view("fp4")},
};
constexpr std::array kTasks = {
    std::pair{Task::kTrain, std::string_view("train")},
    std::pair{Task::kFinetune, std::string_view("finetune")},
    std::pair{Task::kLora, std::string_view("lora")},
    std::pair{Task::kQlora, std::string_view("qlora")},
    std::pair{Task::kInfer, std::string_view("infer")},
};
constexpr std::array kOptimizers = {
    std::pair{Optimizer::kAdam, std::string_view("adam")},
    std::pair{Optimizer::kAdam8bit, std::string_view("adam8bit")},
    std::pair{Optimizer::kSgd, std::string_view("sgd")},
    std::pair{Optimizer::kAdafactor, std::string_view("adafactor")},
};
constexpr std::array kRecomputes = {
    std::pair{Recompute::kNone, std::string_view("none")},
    std::pair{Recompute::kSelective, std::string_view("selective")},
    std::pair{Recompute::kFull, std::string_view("full")},
};
// The attention kernels a job may name: fused (FlashAttention: no score matrices kept) or eager.
constexpr std::array kAttentionKernels = {
    std::pair{true, std::string_view("flash")},
    std::pair{false, std::string_view("eager")},
};
// The linear layers LoRA adapts: q, k, v and o, or every linear layer.
constexpr std::array kLoraTargets = {
    std::pair{LoraTargets::kAttention, std::string_view("attention")},
    std::pair{LoraTargets::kAllLinear, std::string_view("all-linear")},
};
constexpr std::array kFabricKinds = {
    std::pair{FabricKind::kNvlink, std::string_view("nvlink")},
    std::pair{FabricKind::kPcie, std::string_view("pcie")},
    std::pair{FabricKind::kInfiniband, std::string_view("infiniband")},
    std::pair{FabricKind::kRoce, std::string_view("roce")},
    std::pair{FabricKind::kOmniPath, std::string_view("omnipath")},
    std::pair{FabricKind::kEthernet, std::string_view("ethernet")},
    std::pair{FabricKind::kXgmi, std::string_view("xgmi")},
};

}  // namespace

std::string_view precision_name(Precision p) {
  return name_of(kPrecisions, p);
}
Result<Precision> parse_precision(std::string_view name) {
  // Names as engines and papers write them, in any case: W4A16 is 4-bit integer weights
  // multiplied in 16 bits (AWQ, GPTQ: gpuplan's int4), W8A8 8-bit integer weights and
  // activations (int8), NVFP4 the 4-bit float with 16-element blocks (fp4). MXFP4 is the
  // 4-bit float class too: a model published in it is counted in its own blocks of 32
  // (choose_weights), another with NVFP4's.
  constexpr std::array kAliases = {
      std::pair{Precision::kInt4, std::string_view("w4a16")},
      std::pair{Precision::kInt8, std::string_view("w8a8")},
      std::pair{Precision::kFp4, std::string_view("nvfp4")},
      std::pair{Precision::kFp4, std::string_view("mxfp4")},
  };
  const std::string lower = lowercase(name);
  for (const auto& [p, alias] : kAliases) {
    if (lower == alias) {
      return p;
    }
  }
  Result<Precision> p = parse_from(kPrecisions, lower, "precision");
  if (!p) {
    p.error().what = fmt::format("unknown precision '{}'", name);  // as the user wrote it
  }
  return p;
}
double precision_bytes(Precision p) {
  switch (p) {
    case Precision::kFp32:
    case Precision::kTf32:
      return 4.0;
    case Precision::kFp16:
    case Precision::kBf16:
      return 2.0;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1.0;
    case Precision::kInt4:
      return 0.5;
    case Precision::kFp4:
      // NVFP4: a 4-bit value per element and one 8-bit E4M3 scale per block of 16 (NVIDIA,
      // "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025); the
      // per-tensor fp32 scale is negligible.
      return 0.5 + 1.0 / 16.0;
  }
  return 0.0;
}

std::string_view fabric_kind_name(FabricKind k) {
  return name_of(kFabricKinds, k);
}
Result<FabricKind> parse_fabric_kind(std::string_view name) {
  return parse_from(kFabricKinds, name, "fabric kind");
}

std::string_view task_name(Task t) {
  return name_of(kTasks, t);
}
std::string_view optimizer_name(Optimizer o) {
  return name_of(kOptimizers, o);
}
std::string_view recompute_name(Recompute r) {
  return name_of(kRecomputes, r);
}
Result<Task> parse_task(std::string_view name) {
  return parse_from(kTasks, name, "task");
}
Result<Optimizer> parse_optimizer(std::string_view name) {
  return parse_from(kOptimizers, name, "optimizer");
}
Result<Recompute> parse_recompute(std::string_view name) {
  return parse_from(kRecomputes, name, "recompute mode");
}

Result<bool> parse_flash_attention(std::string_view name) {
  return parse_from(kAttentionKernels, name, "attention kernel");
}
std::vector<std::string> attention_kernel_names() {
  return detail::names_in(kAttentionKernels);
}

Result<LoraTargets> parse_lora_targets(std::string_view name) {
  return parse_from(kLoraTargets, name, "LoRA targets");
}
std::vector<std::string> lora_targets_names() {
  return detail::names_in(kLoraTargets);
}

std::vector<std::string> precision_names() {
  return detail::names_in(kPrecisions);
}
std::vector<std::string> training_precision_names() {
  std::vector<std::string> names;
  for (const auto& [p, name] : kPrecisions) {
    MemoryJob job;
    job.task = Task::kTrain;
    job.precision = p;
    if (!precision_problem(job)) {
      names.emplace_back(name);
    }
  }
  return names;
}
std::vector<std::string> task_names() {
  return detail::names_in(kTasks);
}
std::vector<std::string> optimizer_names() {
  return detail::names_in(kOptimizers);
}
std::vector<std::string> recompute_names() {
  return detail::names_in(kRecomputes);
}

}  // namespace gpuplan
