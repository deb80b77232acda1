#include <fmt/format.h>

#include <array>
#include <string>

#include "gpuplan/framework.h"
#include "gpuplan/suggest.h"
#include "loaders.h"
#include "name_table.h"

namespace gpuplan {
namespace {

constexpr std::array<std::pair<PipelineEngine, std::string_view>, 3> kEngines = {{
    {PipelineEngine::kMegatron, "megatron"},
    {PipelineEngine::kDeepSpeed, "deepspeed"},
    {PipelineEngine::kCustom, "custom"},
}};

constexpr std::array<std::pair<GradAccumulation, std::string_view>, 4> kAccumulations = {{
    {GradAccumulation::kFused, "fused"},
    {GradAccumulation::kAutograd, "autograd"},
    {GradAccumulation::kHook, "hook"},
    {GradAccumulation::kFp32Copy, "fp32-copy"},
}};

}  // namespace

std::string_view pipeline_engine_name(PipelineEngine e) {
  return detail::name_of(kEngines, e);
}

Result<PipelineEngine> parse_pipeline_engine(std::string_view name) {
  return detail::parse_from(kEngines, name, "pipeline engine");
}

std::string_view grad_accumulation_name(GradAccumulation g) {
  return detail::name_of(kAccumulations, g);
}

Result<GradAccumulation> parse_grad_accumulation(std::string_view name) {
  return detail::parse_from(kAccumulations, name, "gradient accumulation");
}

int64_t Framework::native_attention_year(std::string_view architecture) const {
  for (const auto& [arch, year] : native_attention_since) {
    if (arch == architecture) {
      return year;
    }
  }
  return 0;
}

}  // namespace gpuplan

namespace gpuplan::detail {

Result<Framework> load_framework(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");
  Framework f;
  f.file = path;
  GPUPLAN_ASSIGN_OR_RETURN(f.id, checked_id(r));
  GPUPLAN_ASSIGN_OR_RETURN(f.name, r.text("name"));
  std::string engine;
  GPUPLAN_ASSIGN_OR_RETURN(engine, r.text("pipeline"));
  Result<PipelineEngine> e = parse_pipeline_engine(engine);
  if (!e) {
    return fail(r.where("pipeline"), e.error().what, e.error().hint);
  }
  f.pipeline = *e;
  GPUPLAN_ASSIGN_OR_RETURN(f.weight_bytes, r.number("weight_bytes", 1.0, 8.0));
  GPUPLAN_ASSIGN_OR_RETURN(f.gradient_bytes, r.number("gradient_bytes", 1.0, 8.0));
  GPUPLAN_ASSIGN_OR_RETURN(f.gradient_bytes_bf16,
                           r.optional_number("gradient_bytes_bf16", 1.0, 8.0));
  GPUPLAN_ASSIGN_OR_RETURN(f.master_bytes, r.number("master_bytes", 0.0, 8.0));
  std::optional<int64_t> grad_stage;
  GPUPLAN_ASSIGN_OR_RETURN(grad_stage, r.optional_integer("gradient_sharding_stage", 1, 2));
  f.gradient_sharding_stage = grad_stage.value_or(2);
  // How gradients accumulate over micro-batches: every framework states it, in bf16 where that
  // differs.
  auto accumulation = [&](const char* key, const std::string& text) -> Result<GradAccumulation> {
    Result<GradAccumulation> g = parse_grad_accumulation(text);
    if (!g) {
      return fail(r.where(key), g.error().what, g.error().hint);
    }
    return *g;
  };
  std::string how;
  GPUPLAN_ASSIGN_OR_RETURN(how, r.text("grad_accumulation"));
  GPUPLAN_ASSIGN_OR_RETURN(f.grad_accumulation, accumulation("grad_accumulation", how));
  std::optional<std::string> how_bf16;
  GPUPLAN_ASSIGN_OR_RETURN(how_bf16, r.optional_text("grad_accumulation_bf16"));
  if (how_bf16) {
    GPUPLAN_ASSIGN_OR_RETURN(f.grad_accumulation_bf16,
                             accumulation("grad_accumulation_bf16", *how_bf16));
  }
  // Years: absent means the behaviour was never the default.
  for (auto [key, field] :
       {std::pair{"fused_attention_since", &f.fused_attention_since},
        std::pair{"overlap_grad_reduce_since", &f.overlap_grad_reduce_since},
        std::pair{"overlap_param_gather_since", &f.overlap_param_gather_since},
        std::pair{"tp_comm_overlap_since", &f.tp_comm_overlap_since},
        std::pair{"ep_comm_overlap_since", &f.ep_comm_overlap_since},
        std::pair{"zero3_prefetch_since", &f.zero3_prefetch_since},
        std::pair{"pipeline_embedding_layers_since", &f.pipeline_embedding_layers_since},
        std::pair{"custom_pipeline_layout_since", &f.custom_pipeline_layout_since},
        std::pair{"grad_accumulation_fused_since", &f.grad_accumulation_fused_since},
        std::pair{"sequence_parallel_since", &f.sequence_parallel_since},
        std::pair{"context_parallel_since", &f.context_parallel_since},
        std::pair{"selective_recompute_since", &f.selective_recompute_since}}) {
    std::optional<int64_t> year;
    GPUPLAN_ASSIGN_OR_RETURN(year, r.optional_integer(key, 2015, kCurrentYear));
    *field = year.value_or(0);
  }
  // By architecture: the catalog checks that each names one of its GPUs' (check_references).
  std::optional<TomlReader> native;
  GPUPLAN_ASSIGN_OR_RETURN(native, r.optional_table("native_attention_since"));
  if (native) {
    for (const std::string& arch : native->keys()) {
      std::optional<int64_t> year;
      GPUPLAN_ASSIGN_OR_RETURN(year, native->optional_integer(arch, 2015, kCurrentYear));
      f.native_attention_since.emplace_back(arch, *year);
    }
    GPUPLAN_RETURN_IF_ERROR(native->finish());
  }
  // ZeRO stages by number; a stage the table leaves out never ran.
  std::optional<TomlReader> zero;
  GPUPLAN_ASSIGN_OR_RETURN(zero, r.optional_table("zero_since"));
  if (zero) {
    std::array<int64_t, 3> years{};
    for (size_t stage = 0; stage < years.size(); ++stage) {
      std::optional<int64_t> year;
      GPUPLAN_ASSIGN_OR_RETURN(
          year, zero->optional_integer(std::to_string(stage + 1), 2015, kCurrentYear));
      years[stage] = year.value_or(0);
    }
    GPUPLAN_RETURN_IF_ERROR(zero->finish());
    f.zero_since = years;
  }
  std::optional<double> bucket;
  GPUPLAN_ASSIGN_OR_RETURN(bucket, r.optional_number("zero3_bucket_params", 1e3, 1e12));
  f.zero3_bucket_params = bucket.value_or(0);
  std::optional<double> live;
  GPUPLAN_ASSIGN_OR_RETURN(live, r.optional_number("zero3_max_live_params", 1e3, 1e13));
  f.zero3_max_live_params = live.value_or(0);
  GPUPLAN_ASSIGN_OR_RETURN(f.source, r.text("source"));
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return f;
}

}  // namespace gpuplan::detail
