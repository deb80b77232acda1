#include <fmt/format.h>

#include <algorithm>

#include "gpuplan/suggest.h"
#include "loaders.h"

namespace gpuplan::detail {

Result<toml::table> open_catalog_file(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, parse_toml_file(path));
  const toml::node* schema = table.get("schema");
  if (schema == nullptr) {
    return fail(path, "missing key 'schema'", "every catalog file starts with 'schema = 1'");
  }
  if (schema->value<int64_t>() != 1) {
    return fail(
        fmt::format("{}:{}:{}", path, schema->source().begin.line, schema->source().begin.column),
        "unsupported schema", "this gpuplan reads 'schema = 1'");
  }
  return table;
}

Result<std::string> checked_id(TomlReader& r) {
  std::string id;
  GPUPLAN_ASSIGN_OR_RETURN(id, r.text("id"));
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) {
      return fail(r.where("id"), fmt::format("id '{}' has the character '{}'", id, c),
                  "ids are lower case letters, digits, '-' and '.' (e.g. 'h200-sxm')");
    }
  }
  return id;
}

Result<Gpu> load_gpu(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");  // checked by open_catalog_file
  Gpu g;
  g.file = path;
  GPUPLAN_ASSIGN_OR_RETURN(g.id, checked_id(r));
  GPUPLAN_ASSIGN_OR_RETURN(g.name, r.text("name"));
  GPUPLAN_ASSIGN_OR_RETURN(g.vendor, r.text("vendor"));
  GPUPLAN_ASSIGN_OR_RETURN(g.architecture, r.text("architecture"));
  double v = 0;
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("memory", Dimension::kBytes));
  g.memory = Bytes(v);
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("memory_usable", Dimension::kBytes));
  g.memory_usable = Bytes(v);
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("memory_bandwidth", Dimension::kBytesPerSecond));
  g.memory_bandwidth = BytesPerSecond(v);
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("tdp", Dimension::kWatts));
  g.tdp = Watts(v);
  GPUPLAN_ASSIGN_OR_RETURN(g.pcie_gen, r.integer("pcie_gen", 3, 6));
  GPUPLAN_ASSIGN_OR_RETURN(g.scale_up, r.text("scale_up"));
  GPUPLAN_ASSIGN_OR_RETURN(g.scale_up_domain, r.integer("scale_up_domain", 1, 576));
  GPUPLAN_ASSIGN_OR_RETURN(g.source, r.text("source"));
  if (g.memory.si() <= 0 || g.memory_usable.si() <= 0 || g.memory_bandwidth.si() <= 0) {
    return fail(path, "memory, memory_usable and memory_bandwidth must be positive", "");
  }

  std::optional<TomlReader> peak;
  GPUPLAN_ASSIGN_OR_RETURN(peak, r.optional_table("peak"));
  if (!peak) {
    return fail(path, "missing table [peak]",
                "give the dense tensor peak per precision, e.g. bf16 = \"989.5 TFLOP/s\"");
  }
  bool any = false;
  for (int i = 0; i < kPrecisionCount; ++i) {
    const auto p = static_cast<Precision>(i);
    std::optional<double> rate;
    GPUPLAN_ASSIGN_OR_RETURN(
        rate, peak->optional_quantity(std::string(precision_name(p)), Dimension::kFlopsPerSecond));
    if (rate) {
      g.peak[static_cast<size_t>(i)] = FlopsPerSecond(*rate);
      any = true;
    }
  }
  GPUPLAN_RETURN_IF_ERROR(peak->finish());
  if (!any) {
    return fail(r.where("peak"), "table [peak] lists no precision", "e.g. fp16 = \"65 TFLOP/s\"");
  }
  std::optional<TomlReader> eff;
  GPUPLAN_ASSIGN_OR_RETURN(eff, r.optional_table("efficiency"));
  if (eff) {
    Efficiency e;
    GPUPLAN_ASSIGN_OR_RETURN(e.gemm, eff->number("gemm", 0.05, 1.0));
    if (g.peak_for(Precision::kFp8)) {
      GPUPLAN_ASSIGN_OR_RETURN(e.gemm_fp8, eff->number("gemm_fp8", 0.05, 1.0));
    }
    if (g.peak_for(Precision::kFp4)) {
      GPUPLAN_ASSIGN_OR_RETURN(e.gemm_fp4, eff->number("gemm_fp4", 0.05, 1.0));
    }
    GPUPLAN_ASSIGN_OR_RETURN(e.hbm, eff->number("hbm", 0.05, 1.0));
    GPUPLAN_ASSIGN_OR_RETURN(e.attention, eff->number("attention", 0.05, 1.0));
    std::optional<double> native;
    GPUPLAN_ASSIGN_OR_RETURN(native, eff->optional_number("attention_native", 0.05, 1.0));
    e.attention_native = native.value_or(0);
    // Which of these values are estimates: every [efficiency] table says, `[]` when none is.
    GPUPLAN_ASSIGN_OR_RETURN(e.estimated, eff->text_list("estimated"));
    std::vector<std::string> given = {"gemm", "hbm", "attention"};
    if (e.gemm_fp8 > 0)
      given.emplace_back("gemm_fp8");
    if (e.gemm_fp4 > 0)
      given.emplace_back("gemm_fp4");
    if (e.attention_native > 0)
      given.emplace_back("attention_native");
    for (const std::string& key : e.estimated) {
      if (std::find(given.begin(), given.end(), key) == given.end()) {
        return fail(eff->where("estimated"),
                    fmt::format("'{}' is not a value of this [efficiency] table", key),
                    suggestion_hint(key, given));
      }
    }
    GPUPLAN_RETURN_IF_ERROR(eff->text("source"));
    GPUPLAN_RETURN_IF_ERROR(eff->finish());
    g.efficiency = e;
  }
  // The GEMM tile model: the SM count, and the fit (data/gemm/<id>.toml) its library follows;
  // the catalog resolves the fit once every file is read.
  std::optional<TomlReader> gemm;
  GPUPLAN_ASSIGN_OR_RETURN(gemm, r.optional_table("gemm"));
  if (gemm) {
    GPUPLAN_ASSIGN_OR_RETURN(g.sms, gemm->integer("sms", 1, 4096));
    TileModel t;
    GPUPLAN_ASSIGN_OR_RETURN(t.fit, gemm->text("tiles"));
    GPUPLAN_RETURN_IF_ERROR(gemm->text("source"));
    GPUPLAN_RETURN_IF_ERROR(gemm->finish());
    g.tiles = t;
  }
  if (g.efficiency.has_value() != g.tiles.has_value()) {
    return fail(path, "[efficiency] and [gemm] go together",
                "the time model needs both the sustained rates and the GEMM tile model");
  }
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return g;
}

Result<TileModel> load_tile_model(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");
  TileModel t;
  GPUPLAN_ASSIGN_OR_RETURN(t.fit, checked_id(r));
  GPUPLAN_ASSIGN_OR_RETURN(t.loop_efficiency, r.number("loop_efficiency", 0.05, 1.0));
  double v = 0;
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("tile_overhead", Dimension::kSeconds));
  t.tile_overhead = Seconds(v);
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("launch", Dimension::kSeconds));
  t.launch = Seconds(v);
  GPUPLAN_ASSIGN_OR_RETURN(t.square_tile, r.number("square_tile", 0.05, 1.0));
  GPUPLAN_ASSIGN_OR_RETURN(t.narrow_tile, r.number("narrow_tile", 0.05, 1.0));
  // What the fit was made from, kept for people: the sweep file, the part and format it was
  // measured on, and how well the model reproduces it.
  GPUPLAN_RETURN_IF_ERROR(r.text("sweep"));
  GPUPLAN_RETURN_IF_ERROR(r.text("gpu"));
  GPUPLAN_RETURN_IF_ERROR(r.text("precision"));
  GPUPLAN_RETURN_IF_ERROR(r.number("rms_log_error", 0.0, 10.0));
  GPUPLAN_RETURN_IF_ERROR(r.number("median_abs_error", 0.0, 10.0));
  GPUPLAN_ASSIGN_OR_RETURN(t.source, r.text("source"));
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return t;
}

Result<MemoryParams> load_memory_params(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");  // checked by open_catalog_file
  MemoryParams p;
  double v = 0;
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("runtime_reserved", Dimension::kBytes));
  p.runtime_reserved = Bytes(v);
  std::string source;
  GPUPLAN_ASSIGN_OR_RETURN(source, r.text("source"));
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return p;
}

}  // namespace gpuplan::detail

namespace gpuplan::detail {

Result<TrainParams> load_train_params(const std::string& path, const std::string& fit_path) {
  TrainParams p;
  {
    toml::table table;
    GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
    TomlReader r(table, path);
    r.accept("schema");
    GPUPLAN_ASSIGN_OR_RETURN(p.nccl_efficiency, r.number("nccl_efficiency", 0.05, 1.0));
    double v = 0;
    GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("collective_latency", Dimension::kSeconds));
    p.collective_latency = Seconds(v);
    GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("nccl_channel_bytes", Dimension::kBytes));
    p.nccl_channel_bytes = Bytes(v);
    GPUPLAN_ASSIGN_OR_RETURN(p.adam_bytes, r.number("adam_bytes", 1.0, 100.0));
    GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("host_memory_bandwidth", Dimension::kBytesPerSecond));
    p.host_memory_bandwidth = BytesPerSecond(v);
    std::optional<TomlReader> link;
    GPUPLAN_ASSIGN_OR_RETURN(link, r.optional_table("host_link"));
    if (!link) {
      return fail(path, "missing table [host_link]", "give the GPU-host rate per PCIe generation");
    }
    for (int gen = 3; gen <= 6; ++gen) {
      GPUPLAN_ASSIGN_OR_RETURN(
          v, link->quantity(fmt::format("gen{}", gen), Dimension::kBytesPerSecond));
      p.host_link[static_cast<size_t>(gen)] = BytesPerSecond(v);
    }
    GPUPLAN_RETURN_IF_ERROR(link->finish());
    GPUPLAN_RETURN_IF_ERROR(r.text("source"));
    GPUPLAN_RETURN_IF_ERROR(r.finish());
  }
  GPUPLAN_ASSIGN_OR_RETURN(p, load_train_fit(fit_path, p));
  return p;
}

Result<TrainParams> load_train_fit(const std::string& path, TrainParams p) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");
  // Per GPU architecture, and `default` for those no published run informed.
  std::optional<TomlReader> in_situ;
  GPUPLAN_ASSIGN_OR_RETURN(in_situ, r.optional_table("in_situ"));
  if (!in_situ) {
    return fail(path, "missing table [in_situ]", "refit with gpuplan calibrate --validation");
  }
  p.in_situ.clear();
  for (const auto& [key, node] : *table["in_situ"].as_table()) {
    const std::string arch(key.str());
    double v = 0;
    GPUPLAN_ASSIGN_OR_RETURN(v, in_situ->number(arch, 0.1, 1.0));
    if (arch == "default") {
      p.in_situ_default = v;
    } else {
      p.in_situ.push_back({arch, v});
    }
  }
  GPUPLAN_RETURN_IF_ERROR(in_situ->finish());
  if (p.in_situ_default <= 0) {
    return fail(in_situ->where("default"), "[in_situ] needs 'default'",
                "the share for architectures no run informed");
  }
  GPUPLAN_ASSIGN_OR_RETURN(p.elementwise_traffic, r.number("elementwise_traffic", 0.0, 20.0));
  GPUPLAN_ASSIGN_OR_RETURN(p.overlap_slowdown, r.number("overlap_slowdown", 0.0, 1.0));
  double v = 0;
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("kernel_overhead", Dimension::kSeconds));
  p.kernel_overhead = Seconds(v);
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("step_overhead", Dimension::kSeconds));
  p.step_overhead = Seconds(v);
  // What the fit was made from, kept for people.
  GPUPLAN_RETURN_IF_ERROR(r.integer("rows", 0, 1000000));
  GPUPLAN_RETURN_IF_ERROR(r.number("median_abs_error_pct", 0.0, 1e6));
  GPUPLAN_RETURN_IF_ERROR(r.text("source"));
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return p;
}

}  // namespace gpuplan::detail

namespace gpuplan::detail {

Result<InferenceParams> load_inference_params(const std::string& path,
                                              const std::string& fit_path) {
  InferenceParams p;
  {
    toml::table table;
    GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
    TomlReader r(table, path);
    r.accept("schema");
    GPUPLAN_ASSIGN_OR_RETURN(p.engine, r.text("engine"));
    GPUPLAN_ASSIGN_OR_RETURN(p.speed_uncertainty, r.number("speed_uncertainty", 0.0, 0.5));
    GPUPLAN_RETURN_IF_ERROR(r.text("source"));
    GPUPLAN_RETURN_IF_ERROR(r.finish());
  }
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(fit_path));
  TomlReader r(table, fit_path);
  r.accept("schema");
  double v = 0;
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("iteration_overhead", Dimension::kSeconds));
  p.iteration_overhead = Seconds(v);
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("layer_overhead", Dimension::kSeconds));
  p.layer_overhead = Seconds(v);
  GPUPLAN_ASSIGN_OR_RETURN(p.stream_share, r.number("stream_share", 0.1, 1.0));
  GPUPLAN_ASSIGN_OR_RETURN(p.compute_share, r.number("compute_share", 0.1, 1.0));
  GPUPLAN_ASSIGN_OR_RETURN(p.elementwise_traffic, r.number("elementwise_traffic", 0.1, 20.0));
  // The architectures of the results it was fitted to: serve says when a GPU is of none of them.
  GPUPLAN_ASSIGN_OR_RETURN(
      p.fitted_architectures,
      r.text_list("architectures",
                  "the GPU architectures the fit saw: refit with gpuplan calibrate --validation "
                  "FILE, which writes them"));
  // What the fit was made from, kept for people.
  GPUPLAN_RETURN_IF_ERROR(r.integer("entries", 0, 1000000));
  GPUPLAN_RETURN_IF_ERROR(r.number("median_abs_error_pct", 0.0, 1e6));
  GPUPLAN_RETURN_IF_ERROR(r.text("source"));
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return p;
}

}  // namespace gpuplan::detail
