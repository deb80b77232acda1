// gpuplan catalog list [KIND] [--json] and gpuplan catalog show [KIND] ID [--json], for every
// kind of catalog entry.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "command.h"
#include "flags.h"
#include "gpuplan/json_writer.h"
#include "gpuplan/memory.h"
#include "gpuplan/suggest.h"
#include "report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "catalog";

// One entry as the JSON object `show --json` prints, through its kind's writer.
template <typename Entry>
void emit_json(void (*write)(JsonWriter&, const Entry&), const Entry& entry) {
  JsonWriter w;
  write(w, entry);
  emit("{}", w.str());
}

std::string tflops(const Gpu& g, Precision p) {
  const auto peak = g.peak_for(p);
  return peak ? fmt::format("{:g}", peak->si() / 1e12) : "-";
}

void list_gpus(const Catalog& c) {
  Table t(
      {"id", "memory", "usable", "bandwidth", "bf16 (TFLOP/s)", "fp8 (TFLOP/s)", "TDP", "scale-up"},
      {false, true, true, true, true, true, true, false});
  for (const Gpu& g : c.gpus()) {
    t.add({g.id, gb(g.memory), gib(g.memory_usable),
           fmt::format("{:g} GB/s", g.memory_bandwidth.si() / 1e9),
           g.peak_for(Precision::kBf16) ? tflops(g, Precision::kBf16)
                                        : tflops(g, Precision::kFp16) + " (fp16)",
           tflops(g, Precision::kFp8), fmt::format("{:g} W", g.tdp.si()),
           fmt::format("{} x{}", g.scale_up, g.scale_up_domain)});
  }
  emit("{}", t.str());
}

void list_fabrics(const Catalog& c) {
  Table t({"id", "kind", "bandwidth per dir", "latency", "measured busbw", "name"},
          {false, false, true, true, true, false});
  for (const Fabric& f : c.fabrics()) {
    t.add({f.id, std::string(fabric_kind_name(f.kind)),
           fmt::format("{:g} GB/s", f.bandwidth.si() / 1e9),
           fmt::format("{:g} us", f.latency.si() * 1e6),
           f.measured_busbw ? fmt::format("{:g} GB/s", f.measured_busbw->si() / 1e9) : "-",
           f.name});
  }
  emit("{}", t.str());
}

// "2023" or "-" for a behaviour a framework never made its default.
std::string since_text(int64_t year) {
  return year > 0 ? fmt::format("{}", year) : "-";
}

// "hopper 2024, blackwell 2025", or "-" where the framework has none.
std::string native_attention_text(const Framework& f) {
  std::vector<std::string> parts;
  for (const auto& [arch, year] : f.native_attention_since) {
    parts.push_back(fmt::format("{} {}", arch, year));
  }
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

// How the framework adds up its micro-batches' gradients: "autograd; bf16 hook, fused from 2022".
std::string accumulation_text(const Framework& f) {
  std::string s(grad_accumulation_name(f.grad_accumulation));
  if (f.grad_accumulation_bf16) {
    s += fmt::format("; bf16 {}", grad_accumulation_name(*f.grad_accumulation_bf16));
  }
  if (f.grad_accumulation_fused_since > 0) {
    s += fmt::format(", fused from {}", f.grad_accumulation_fused_since);
  }
  return s;
}

// The mixed-precision state, bytes per parameter: "2+2+4", "2+2(bf16: 4)+4".
std::string state_text(const Framework& f) {
  const std::string grads =
      f.gradient_bytes_bf16
          ? fmt::format("{:g}(bf16: {:g})", f.gradient_bytes, *f.gradient_bytes_bf16)
          : fmt::format("{:g}", f.gradient_bytes);
  return fmt::format("{:g}+{}+{:g}", f.weight_bytes, grads, f.master_bytes);
}

void list_frameworks(const Catalog& c) {
  Table t({"id", "pipeline", "state (B/param)", "fused attn", "native attn", "grad overlap",
           "TP overlap", "ZeRO-3 prefetch", "grad accumulation", "name"},
          {false, false, true, true, true, true, true, true, false, false});
  for (const Framework& f : c.frameworks()) {
    t.add({f.id, std::string(pipeline_engine_name(f.pipeline)), state_text(f),
           since_text(f.fused_attention_since), native_attention_text(f),
           since_text(f.overlap_grad_reduce_since), since_text(f.tp_comm_overlap_since),
           since_text(f.zero3_prefetch_since), accumulation_text(f), f.name});
  }
  emit("{}", t.str());
  emit(
      "years: when the behaviour became the framework's default (-: never); a run names "
      "ID@YEAR\n");
}

void list_datasets(const Catalog& c) {
  Table t({"id", "requests", "prompt mean", "prompt max", "output mean", "output max", "name"},
          {false, true, true, true, true, true, false});
  for (const Dataset& d : c.datasets()) {
    t.add({d.id, grouped(d.samples), grouped(std::llround(d.input.mean())), grouped(d.input.max()),
           grouped(std::llround(d.output.mean())), grouped(d.output.max()), d.name});
  }
  emit("{}", t.str());
  emit("tokens per request; serve --dataset ID draws each request's lengths from one\n");
}

// A tier's limits as "1024 seq, 8192 tok from 70 GiB (not a100-sxm-80gb)", or "(only h100-sxm)".
std::string engine_limits(const Catalog& c, const EngineProfile& e) {
  std::string s = fmt::format("{} seq, {} tok", e.max_batch, e.max_tokens);
  if (!e.peak_second_gpus.empty()) {
    s += fmt::format(" (on {}: a second of the 16-bit peak in tokens)",
                     fmt::join(e.peak_second_gpus, ", "));
  }
  for (const EngineTier& t : e.tiers) {
    s += fmt::format("; {} seq, {} tok from {}", t.max_batch, t.max_tokens,
                     gib_text(t.min_memory, Lang::kEn));
    if (!t.gpus.empty()) {
      s += fmt::format(" (only {})", fmt::join(t.gpus, ", "));
    }
    if (!t.except_gpus.empty()) {
      s += fmt::format(" (not {})", fmt::join(t.except_gpus, ", "));
    }
  }
  if (&e == &c.default_engine()) {
    s += "; default";
  }
  return s;
}

// An engine's KV memory: "90 % of what is free" or "90 % of the GPU".
std::string kv_memory_text(const EngineProfile& e) {
  return fmt::format("{:.0f} % of {}", e.kv_memory_fraction * 100,
                     e.kv_of_total ? "the GPU" : "what is free");
}

// Whether the host time an engine runs with was fitted to its published runs.
bool host_time_fitted(const Catalog& c, const EngineProfile& e) {
  return engine_defaults(e, c.inference_params(), c.memory_params()).host_time_fitted;
}

void list_engines(const Catalog& c) {
  Table t({"id", "KV cache", "KV memory", "block", "prompts", "limits per iteration", "host time",
           "benchmark"},
          {false, false, false, true, false, false, false, true});
  for (const EngineProfile& e : c.engines()) {
    t.add({e.id, std::string(kv_policy_name(e.kv_policy)), kv_memory_text(e),
           fmt::format("{}", e.kv_block_tokens), std::string(prompt_scheduling_name(e.scheduling)),
           engine_limits(c, e),
           fmt::format("{}{}", host_time_fitted(c, e) ? "fitted" : "shared (not fitted)",
                       e.sequence_overhead.si() > 0
                           ? fmt::format(" + {:g} us/sequence", e.sequence_overhead.si() * 1e6)
                           : std::string()),
           e.benchmark_requests ? fmt::format("{} requests", *e.benchmark_requests) : "-"});
  }
  emit("{}", t.str());
  emit(
      "serve --engine ID and plan --engine ID apply one; a validation row's engine text picks "
      "its own. prompts: mixed (each iteration decodes every sequence, prompts fill the rest of "
      "its budget) or prefill-first (an iteration with prompts runs only them). benchmark: the "
      "requests of the engine's own serving benchmark, which validate "
      "runs a row a serving client measured for\n");
}

void write_engine_json(JsonWriter& w, const EngineProfile& e) {
  w.begin_object()
      .field("id", e.id)
      .field("kind", "engine")
      .field("name", e.name)
      .field("kv_policy", std::string(kv_policy_name(e.kv_policy)))
      .field("kv_cache", e.kv_cache == KvDefault::kModelType ? "model" : "weights")
      .field("scheduling", std::string(prompt_scheduling_name(e.scheduling)))
      .field("kv_memory_of", e.kv_of_total ? "total" : "free")
      .field("kv_memory_fraction", e.kv_memory_fraction)
      .field("max_batch", e.max_batch)
      .field("max_tokens", e.max_tokens)
      .field("kv_block_tokens", e.kv_block_tokens);
  w.key("prefill_budget_peak_second_gpus").begin_array();
  for (const std::string& g : e.peak_second_gpus)
    w.value(g);
  w.end_array();
  w.key("tiers").begin_array();
  for (const EngineTier& t : e.tiers) {
    w.begin_object()
        .field("min_memory_bytes", t.min_memory.si())
        .field("max_batch", t.max_batch)
        .field("max_tokens", t.max_tokens);
    w.key("except_gpus").begin_array();
    for (const std::string& g : t.except_gpus)
      w.value(g);
    w.end_array();
    w.key("gpus").begin_array();
    for (const std::string& g : t.gpus)
      w.value(g);
    w.end_array().end_object();
  }
  w.end_array();
  if (e.iteration_overhead) {
    w.field("iteration_overhead_s", e.iteration_overhead->si());
  } else {
    w.key("iteration_overhead_s").null();
  }
  w.field("sequence_overhead_s", e.sequence_overhead.si());
  for (auto [key, release] : {std::pair{"host_waits_from", &e.host_waits_from},
                              std::pair{"host_waits_until", &e.host_waits_until}}) {
    if (release->empty()) {
      w.key(key).null();
    } else {
      w.field(key, *release);
    }
  }
  if (e.benchmark_requests) {
    w.field("benchmark_requests", *e.benchmark_requests);
  } else {
    w.key("benchmark_requests").null();
  }
  w.field("source", e.source).field("file", e.file).end_object();
}

void write_dataset_json(JsonWriter& w, const Dataset& d) {
  w.begin_object()
      .field("id", d.id)
      .field("kind", "dataset")
      .field("name", d.name)
      .field("samples", d.samples)
      .field("input_mean_tokens", d.input.mean())
      .field("input_max_tokens", d.input.max())
      .field("output_mean_tokens", d.output.mean())
      .field("output_max_tokens", d.output.max())
      .field("beams", d.beams)
      .field("source", d.source)
      .end_object();
}

void write_framework_json(JsonWriter& w, const Framework& f) {
  w.begin_object()
      .field("id", f.id)
      .field("kind", "framework")
      .field("name", f.name)
      .field("pipeline", std::string(pipeline_engine_name(f.pipeline)))
      .field("weight_bytes", f.weight_bytes)
      .field("gradient_bytes", f.gradient_bytes)
      .field("gradient_bytes_bf16", f.gradient_bytes_bf16.value_or(f.gradient_bytes))
      .field("master_bytes", f.master_bytes)
      .field("fused_attention_since", f.fused_attention_since)
      .key("native_attention_since")
      .begin_object();
  for (const auto& [arch, year] : f.native_attention_since) {
    w.field(arch, year);
  }
  w.end_object()
      .field("overlap_grad_reduce_since", f.overlap_grad_reduce_since)
      .field("tp_comm_overlap_since", f.tp_comm_overlap_since)
      .field("ep_comm_overlap_since", f.ep_comm_overlap_since)
      .field("zero3_prefetch_since", f.zero3_prefetch_since)
      .field("sequence_parallel_since", f.sequence_parallel_since)
      .field("context_parallel_since", f.context_parallel_since)
      .field("selective_recompute_since", f.selective_recompute_since)
      .key("zero_since");
  if (f.zero_since) {
    w.begin_array();
    for (int64_t year : *f.zero_since) {
      w.value(year);
    }
    w.end_array();
  } else {
    w.null();
  }
  w.field("grad_accumulation", std::string(grad_accumulation_name(f.grad_accumulation)));
  if (f.grad_accumulation_bf16) {
    w.field("grad_accumulation_bf16",
            std::string(grad_accumulation_name(*f.grad_accumulation_bf16)));
  }
  w.field("grad_accumulation_fused_since", f.grad_accumulation_fused_since)
      .field("source", f.source)
      .end_object();
}

void list_models(const Catalog& c) {
  Table t({"id", "type", "params", "active", "layers", "hidden", "heads (kv)", "context"},
          {false, false, true, true, true, true, true, true});
  for (const Model& m : c.models()) {
    const ParameterCount p = count_parameters(m);
    t.add({m.id, m.model_type, billions(static_cast<double>(p.total)),
           billions(static_cast<double>(p.active_per_token)), fmt::format("{}", m.layers),
           fmt::format("{}", m.hidden), fmt::format("{} ({})", m.heads, m.kv_heads),
           m.max_positions > 0 ? grouped(m.max_positions) : "-"});
  }
  emit("{}", t.str());
}

void list_offers(const Catalog& c) {
  Table t({"id", "gpu", "GPUs/node", "max nodes", "price", "sites"},
          {false, false, true, true, true, false});
  for (const Offer& o : c.offers()) {
    std::vector<std::string> sites;
    for (const Site& s : o.sites)
      sites.push_back(fmt::format("{} ({})", s.id, s.country));
    t.add({o.id, o.gpu, fmt::format("{}", o.gpus_per_node), fmt::format("{}", o.max_nodes),
           o.price_per_node_hour ? fmt::format("{:g} {}/h", o.price_per_node_hour->amount,
                                               o.price_per_node_hour->currency)
                                 : "not public",
           fmt::format("{}", fmt::join(sites, ", "))});
  }
  emit("{}", t.str());
}

void write_model_json(JsonWriter& w, const Model& m) {
  const ParameterCount p = count_parameters(m);
  w.begin_object()
      .field("id", m.id)
      .field("kind", "model")
      .field("model_type", m.model_type)
      .field("params", p.total)
      .field("active_params", p.active_per_token)
      .field("embedding_params", p.embedding)
      .field("lm_head_params", p.lm_head)
      .field("layers", m.layers)
      .field("hidden", m.hidden)
      .field("heads", m.heads)
      .field("kv_heads", m.kv_heads)
      .field("head_dim", m.head_dim)
      .field("intermediate", m.intermediate)
      .field("vocab", m.vocab)
      .field("max_positions", m.max_positions)
      .field("gated_mlp", m.gated_mlp)
      .field("tied_embeddings", m.tied_embeddings)
      .field("moe", m.is_moe());
  if (m.is_moe()) {
    w.field("experts", m.moe.experts)
        .field("experts_per_token", m.moe.experts_per_token)
        .field("shared_experts", m.moe.shared_experts)
        .field("expert_intermediate", m.moe.expert_intermediate);
  }
  if (m.has_window()) {
    w.field("sliding_window_tokens", m.window.tokens)
        .field("sliding_window_layers", m.window.layers);
  }
  if (m.released) {
    // The published format (model.h): what inference takes with no precision given.
    w.key("published_weights")
        .begin_object()
        .field("quant_method", m.released->method)
        .field("read", m.released->understood);
    if (m.released->understood) {
      w.field("precision", precision_name(m.released->precision))
          .field("bytes_per_weight", m.released->bytes)
          .field("experts_only", m.released->experts_only);
    }
    w.end_object();
  }
  w.field("kv_cache_bytes_per_token_bf16", kv_cache_bytes_per_token(m, 2.0))
      .field("file", m.file)
      .end_object();
}

void show_model(const Model& m, bool json) {
  const ParameterCount p = count_parameters(m);
  if (json) {
    emit_json(write_model_json, m);
    return;
  }
  emit("model      {} ({})\n", m.id, m.model_type);
  emit("params     {}\n", grouped(p.total));
  if (m.is_moe()) {
    emit("active     {} per token ({} of {} routed experts + {} shared)\n",
         grouped(p.active_per_token), m.moe.experts_per_token, m.moe.experts, m.moe.shared_experts);
  }
  emit("layers     {}, hidden {}, heads {} ({} key/value, head dim {})\n", m.layers, m.hidden,
       m.heads, m.kv_heads, m.head_dim);
  emit("mlp        {} {}\n", m.gated_mlp ? "gated" : "plain",
       m.is_moe() ? fmt::format("experts of width {}", m.moe.expert_intermediate)
                  : fmt::format("width {}", m.intermediate));
  emit("vocab      {} ({} embeddings)\n", grouped(m.vocab), m.tied_embeddings ? "tied" : "untied");
  emit("context    {} tokens\n", m.max_positions > 0 ? grouped(m.max_positions) : "-");
  emit("KV cache   {:g} bytes per token in bf16\n", kv_cache_bytes_per_token(m, 2.0));
  if (m.has_window()) {
    emit("window     {} of {} layers attend to the last {} tokens only\n", m.window.layers,
         m.layers, grouped(m.window.tokens));
  }
  if (m.released) {
    const ReleasedWeights& r = *m.released;
    if (r.understood) {
      emit("weights    {}, {:g} bytes a weight (quantization_config; inference's default)\n",
           weights_name(m, r.precision, true).en, r.bytes);
    } else {
      emit("weights    quant_method '{}', not read: inference counts bf16 unless --precision\n",
           r.method);
    }
  }
  emit("file       {}\n", m.file);
}

// The shares of peak a GPU's [efficiency] table gives, by key, those it has (nonzero).
std::vector<std::pair<std::string, double>> efficiency_values(const Efficiency& e) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [key, value] : {std::pair{"gemm", e.gemm},
                                   {"gemm_fp8", e.gemm_fp8},
                                   {"gemm_fp4", e.gemm_fp4},
                                   {"hbm", e.hbm},
                                   {"attention", e.attention},
                                   {"attention_native", e.attention_native}}) {
    if (value > 0)
      out.emplace_back(key, value);
  }
  return out;
}

void write_gpu_json(JsonWriter& w, const Gpu& g) {
  w.begin_object()
      .field("id", g.id)
      .field("kind", "gpu")
      .field("name", g.name)
      .field("vendor", g.vendor)
      .field("memory_bytes", g.memory.si())
      .field("usable_bytes", g.memory_usable.si())
      .field("memory_bandwidth_bytes_per_s", g.memory_bandwidth.si())
      .field("tdp_w", g.tdp.si())
      .field("pcie_gen", g.pcie_gen)
      .field("scale_up", g.scale_up)
      .field("scale_up_domain", g.scale_up_domain);
  w.key("peak_flops_per_s").begin_object();
  for (int i = 0; i < kPrecisionCount; ++i) {
    const auto p = static_cast<Precision>(i);
    if (g.peak_for(p))
      w.field(precision_name(p), g.peak_for(p)->si());
  }
  w.end_object();
  if (g.efficiency) {
    const Efficiency& e = *g.efficiency;
    w.key("efficiency").begin_object();
    for (const auto& [key, value] : efficiency_values(e))
      w.field(key, value);
    w.key("estimated").begin_array();
    for (const std::string& key : e.estimated)
      w.value(key);
    w.end_array().end_object();
  }
  w.field("source", g.source).field("file", g.file).end_object();
}

void show_gpu(const Gpu& g, bool json) {
  if (json) {
    emit_json(write_gpu_json, g);
    return;
  }
  emit("gpu        {} ({})\n", g.id, g.name);
  emit("memory     {} as marketed, {} usable\n", gb(g.memory), gib(g.memory_usable));
  emit("bandwidth  {:g} GB/s\n", g.memory_bandwidth.si() / 1e9);
  for (int i = 0; i < kPrecisionCount; ++i) {
    const auto p = static_cast<Precision>(i);
    if (g.peak_for(p)) {
      emit("peak {:<5} {:g} TFLOP/s (dense)\n", precision_name(p), g.peak_for(p)->si() / 1e12);
    }
  }
  if (g.efficiency) {
    // The shares of peak the time model uses; "estimate" where the file's source has no
    // measurement.
    std::vector<std::string> parts;
    for (const auto& [key, value] : efficiency_values(*g.efficiency)) {
      const std::vector<std::string>& est = g.efficiency->estimated;
      const bool estimate = std::find(est.begin(), est.end(), key) != est.end();
      parts.push_back(fmt::format("{} {:g}{}", key, value, estimate ? " (estimate)" : ""));
    }
    emit("achieved   {} of peak\n", fmt::join(parts, ", "));
  }
  emit("TDP        {:g} W\nscale-up   {} ({} GPUs), PCIe gen {}\nsource     {}\nfile       {}\n",
       g.tdp.si(), g.scale_up, g.scale_up_domain, g.pcie_gen, g.source, g.file);
}

void write_fabric_json(JsonWriter& w, const Fabric& f) {
  w.begin_object()
      .field("id", f.id)
      .field("kind", "fabric")
      .field("name", f.name)
      .field("fabric_kind", fabric_kind_name(f.kind))
      .field("bandwidth_bytes_per_s", f.bandwidth.si())
      .field("latency_s", f.latency.si());
  if (f.measured_busbw) {
    w.field("measured_busbw_bytes_per_s", f.measured_busbw->si())
        .field("measured_note", f.measured_note);
  }
  w.field("source", f.source).field("file", f.file).end_object();
}

void show_fabric(const Fabric& f, bool json) {
  if (json) {
    emit_json(write_fabric_json, f);
    return;
  }
  emit(
      "fabric     {} ({})\nkind       {}\nbandwidth  {:g} GB/s per direction\nlatency    {:g} us\n",
      f.id, f.name, fabric_kind_name(f.kind), f.bandwidth.si() / 1e9, f.latency.si() * 1e6);
  if (f.measured_busbw) {
    emit("measured   {:g} GB/s all-reduce bus bandwidth: {}\n", f.measured_busbw->si() / 1e9,
         f.measured_note);
  }
  emit("source     {}\nfile       {}\n", f.source, f.file);
}

void write_offer_json(JsonWriter& w, const Offer& o) {
  w.begin_object()
      .field("id", o.id)
      .field("kind", "offer")
      .field("name", o.name)
      .field("provider", o.provider)
      .field("gpu", o.gpu)
      .field("gpus_per_node", o.gpus_per_node)
      .field("max_nodes", o.max_nodes)
      .field("scale_up", o.scale_up)
      .field("scale_out", o.scale_out)
      .field("nics_per_node", o.nics_per_node);
  w.key("sites").begin_array();
  for (const Site& s : o.sites) {
    w.begin_object()
        .field("id", s.id)
        .field("country", s.country)
        .field("location", s.location)
        .end_object();
  }
  w.end_array();
  if (o.price_per_node_hour) {
    w.field("price_per_node_hour", o.price_per_node_hour->amount)
        .field("currency", o.price_per_node_hour->currency)
        .field("price_date", o.price_date);
  } else {
    w.key("price_per_node_hour").null();
  }
  if (o.egress_per_gb)
    w.field("egress_per_gb", o.egress_per_gb->amount);
  w.field("source", o.source).field("notes", o.notes).field("file", o.file).end_object();
}

void show_offer(const Offer& o, bool json) {
  if (json) {
    emit_json(write_offer_json, o);
    return;
  }
  emit("offer      {} ({})\nprovider   {}\nnode       {} x {} on {}\n", o.id, o.name, o.provider,
       o.gpus_per_node, o.gpu, o.scale_up);
  if (!o.scale_out.empty()) {
    emit("network    {} x {}, up to {} nodes\n", o.nics_per_node, o.scale_out, o.max_nodes);
  }
  for (const Site& s : o.sites) {
    emit("site       {} ({}, {})\n", s.id, s.location, s.country);
  }
  if (o.price_per_node_hour) {
    emit("price      {:g} {} per node-hour (read {})\n", o.price_per_node_hour->amount,
         o.price_per_node_hour->currency, o.price_date);
  } else {
    emit("price      not public: give it with --price {}=VALUE/h\n", o.id);
  }
  if (o.egress_per_gb) {
    emit("egress     {:g} {} per GB\n", o.egress_per_gb->amount, o.egress_per_gb->currency);
  }
  emit("notes      {}\nsource     {}\nfile       {}\n", o.notes, o.source, o.file);
}

void show_engine(const Catalog& c, const EngineProfile& e, bool json) {
  if (json) {
    emit_json(write_engine_json, e);
    return;
  }
  emit("engine     {} ({})\naliases    {}\n", e.id, e.name, fmt::join(e.aliases, ", "));
  emit("KV cache   {}, {}, blocks of {} tokens; unless named, {}\n", kv_policy_name(e.kv_policy),
       kv_memory_text(e), e.kv_block_tokens,
       e.kv_cache == KvDefault::kModelType ? "the model's 16-bit type"
                                           : "fp8 with fp8 or fp4 weights, else 16-bit");
  emit("prompts    {}\n",
       e.scheduling == PromptScheduling::kPrefillFirst
           ? "prefill first: an iteration with prompts to compute runs only them; the running "
             "sequences decode in the iterations between"
           : "mixed: every iteration decodes each running sequence and fills the rest of its "
             "token budget with prompts");
  emit("limits     {} per iteration\n", engine_limits(c, e));
  emit("host time  {}\n",
       e.iteration_overhead
           ? fmt::format("{:g} ms per iteration, fitted to this engine's runs",
                         e.iteration_overhead->si() * 1e3)
           : fmt::format("the shared fitted value (params/serving-fit.toml), {} to its runs",
                         host_time_fitted(c, e) ? "fitted" : "not fitted"));
  if (e.sequence_overhead.si() > 0) {
    emit(
        "           + {:g} us per sequence sampling a token in each iteration (measured, see "
        "source){}\n",
        e.sequence_overhead.si() * 1e6,
        e.host_waits_from.empty() && e.host_waits_until.empty()
            ? std::string()
            : fmt::format("; the GPU waits for it in releases {} to before {}, in others only "
                          "what exceeds the GPU's time counts",
                          e.host_waits_from.empty() ? "0" : e.host_waits_from,
                          e.host_waits_until.empty() ? "the current one" : e.host_waits_until));
  }
  emit("benchmark  {}\n",
       e.benchmark_requests
           ? fmt::format("{} requests per run of its own serving benchmark", *e.benchmark_requests)
           : "no serving benchmark of its own");
  emit("source     {}\nfile       {}\n", e.source, e.file);
}

void show_dataset(const Dataset& d, bool json) {
  if (json) {
    emit_json(write_dataset_json, d);
    return;
  }
  emit("dataset    {} ({})\nrequests   {}\n", d.id, d.name, grouped(d.samples));
  emit("prompt     mean {} tokens, at most {}\noutput     mean {} tokens, at most {}\n",
       grouped(std::llround(d.input.mean())), grouped(d.input.max()),
       grouped(std::llround(d.output.mean())), grouped(d.output.max()));
  if (d.beams > 1) {
    emit("beams      {} per request (beam search; serve models each as a decoding sequence)\n",
         d.beams);
  }
  emit("source     {}\nfile       {}\n", d.source, d.file);
}

void show_framework(const Framework& f, bool json) {
  if (json) {
    emit_json(write_framework_json, f);
    return;
  }
  emit("framework  {} ({})\npipeline   {}\n", f.id, f.name, pipeline_engine_name(f.pipeline));
  emit("state      {:g} + {:g} + {:g} bytes per parameter (weights, gradients, fp32 master)\n",
       f.weight_bytes, f.gradient_bytes, f.master_bytes);
  if (f.gradient_bytes_bf16) {
    emit("state      in bf16 and fp8: {:g} + {:g} + {:g} bytes per parameter\n", f.weight_bytes,
         *f.gradient_bytes_bf16, f.master_bytes);
  }
  const std::pair<const char*, int64_t> since[] = {
      {"fused attention", f.fused_attention_since},
      {"gradient reduce overlap", f.overlap_grad_reduce_since},
      {"parameter gather overlap", f.overlap_param_gather_since},
      {"TP communication overlap", f.tp_comm_overlap_since},
      {"EP all-to-all overlap", f.ep_comm_overlap_since},
      {"ZeRO-3 prefetch", f.zero3_prefetch_since}};
  for (const auto& [what, year] : since) {
    emit("since      {}: {}\n", what, year > 0 ? fmt::format("{}", year) : "never by default");
  }
  emit("since      attention kernels written for the GPU's architecture: {}\n",
       f.native_attention_since.empty() ? "never by default" : native_attention_text(f));
  auto runs = [](int64_t year) { return year > 0 ? fmt::format("from {}", year) : "never"; };
  emit("layouts    sequence parallelism {}, context parallelism {}, selective recompute {}\n",
       runs(f.sequence_parallel_since), runs(f.context_parallel_since),
       runs(f.selective_recompute_since));
  if (f.zero_since) {
    const std::array<int64_t, 3>& z = *f.zero_since;
    emit("layouts    ZeRO-1 {}, ZeRO-2 {}, ZeRO-3 {}\n", runs(z[0]), runs(z[1]), runs(z[2]));
  } else {
    emit("layouts    every ZeRO stage (the framework file does not say from when)\n");
  }
  emit("gradients  accumulated over micro-batches: {} (docs/FORMULAS.md#gradient-accumulation)\n",
       accumulation_text(f));
  emit("source     {}\nfile       {}\n", f.source, f.file);
}

// Every kind of catalog entry, in the order `list` prints them: how to list its entries, write
// one as JSON, show the entry with an id (false when the kind has none) and name its ids. One
// table, read by `list`, `list --json` and `show`.
struct Kind {
  std::string_view name;      // as `list` takes it: "gpus"
  std::string_view singular;  // "gpu", also taken
  void (*list)(const Catalog&);
  void (*list_json)(const Catalog&, JsonWriter&);
  bool (*show)(const Catalog&, const std::string& id, bool json);
  std::vector<std::string> (*ids)(const Catalog&);
};

// A kind's entries, as Catalog lists them (`all`), and the one with an id (`find`), for the
// kinds whose show and JSON writers take just the entry.
template <typename Entry, const std::vector<Entry>& (Catalog::*all)() const,
          void (*write)(JsonWriter&, const Entry&)>
void list_json_of(const Catalog& c, JsonWriter& w) {
  for (const Entry& e : (c.*all)())
    write(w, e);
}

template <typename Entry, const std::vector<Entry>& (Catalog::*all)() const>
std::vector<std::string> ids_of(const Catalog& c) {
  std::vector<std::string> ids;
  for (const Entry& e : (c.*all)())
    ids.push_back(e.id);
  return ids;
}

template <typename Entry, Result<const Entry*> (Catalog::*find)(std::string_view) const,
          void (*show)(const Entry&, bool)>
bool show_of(const Catalog& c, const std::string& id, bool json) {
  const Result<const Entry*> e = (c.*find)(id);
  if (e)
    show(**e, json);
  return e.has_value();
}

// A model: an id or a config.json (Catalog::model), held by value.
bool show_model_of(const Catalog& c, const std::string& id, bool json) {
  const Result<Model> m = c.model(id);
  if (m)
    show_model(*m, json);
  return m.has_value();
}

// An engine: by id, or by the name results give it ("TensorRT-LLM 0.17").
bool show_engine_of(const Catalog& c, const std::string& id, bool json) {
  const EngineProfile* e = c.engine(id).value_or(nullptr);
  if (!e)
    e = c.engine_named(id);
  if (e)
    show_engine(c, *e, json);
  return e != nullptr;
}

const Kind kKinds[] = {
    {"gpus", "gpu", list_gpus, list_json_of<Gpu, &Catalog::gpus, write_gpu_json>,
     show_of<Gpu, &Catalog::gpu, show_gpu>, ids_of<Gpu, &Catalog::gpus>},
    {"fabrics", "fabric", list_fabrics, list_json_of<Fabric, &Catalog::fabrics, write_fabric_json>,
     show_of<Fabric, &Catalog::fabric, show_fabric>, ids_of<Fabric, &Catalog::fabrics>},
    {"models", "model", list_models, list_json_of<Model, &Catalog::models, write_model_json>,
     show_model_of, ids_of<Model, &Catalog::models>},
    {"offers", "offer", list_offers, list_json_of<Offer, &Catalog::offers, write_offer_json>,
     show_of<Offer, &Catalog::offer, show_offer>, ids_of<Offer, &Catalog::offers>},
    {"frameworks", "framework", list_frameworks,
     list_json_of<Framework, &Catalog::frameworks, write_framework_json>,
     show_of<Framework, &Catalog::framework, show_framework>,
     ids_of<Framework, &Catalog::frameworks>},
    {"datasets", "dataset", list_datasets,
     list_json_of<Dataset, &Catalog::datasets, write_dataset_json>,
     show_of<Dataset, &Catalog::dataset, show_dataset>, ids_of<Dataset, &Catalog::datasets>},
    {"engines", "engine", list_engines,
     list_json_of<EngineProfile, &Catalog::engines, write_engine_json>, show_engine_of,
     ids_of<EngineProfile, &Catalog::engines>},
};

// The kind `word` names, plural or singular; null for none.
const Kind* find_kind(std::string_view word) {
  for (const Kind& k : kKinds) {
    if (word == k.name || word == k.singular)
      return &k;
  }
  return nullptr;
}

// "unknown kind 'x'" with a suggestion; `where` is the subcommand.
int unknown_kind(std::string_view where, const std::string& word) {
  return report_error(kName,
                      Error{std::string(where), fmt::format("unknown kind '{}'", word),
                            suggestion_hint(word, catalog_kinds())},
                      kExitUsage);
}

int run_list(const Catalog& c, const std::string& kind, bool json) {
  const Kind* only = nullptr;
  if (!kind.empty()) {
    only = find_kind(kind);
    if (!only)
      return unknown_kind("list", kind);
  }
  if (json) {
    if (!only) {
      return report_error(kName,
                          Error{"--json", "lists one kind, not all of them",
                                fmt::format("give one of {}", fmt::join(catalog_kinds(), ", "))},
                          kExitUsage);
    }
    JsonWriter w;
    w.begin_array();
    only->list_json(c, w);
    w.end_array();
    emit("{}", w.str());
    return kExitOk;
  }
  if (only) {
    only->list(c);
    return kExitOk;
  }
  bool first = true;
  for (const Kind& k : kKinds) {
    emit("{}{}:\n", first ? "" : "\n", k.name);
    k.list(c);
    first = false;
  }
  return kExitOk;
}

// `show ID` looks the id up in every kind, in list order; `show KIND ID` in that kind only.
int run_show(const Catalog& c, const std::vector<std::string>& words, bool json) {
  if (words.size() > 2) {
    return report_error(
        kName,
        Error{"show", fmt::format("takes an id, or a kind and an id, not {} words", words.size()),
              "quote an id with spaces: catalog show engine 'vLLM 0.6.0'"},
        kExitUsage);
  }
  const Kind* only = nullptr;
  if (words.size() == 2) {
    only = find_kind(words[0]);
    if (!only)
      return unknown_kind("show", words[0]);
  }
  const std::string& id = words.back();
  if (Catalog::is_model_path(id) && (!only || only->name == "models")) {
    // A config.json: its own error (no such file, a key missing) says more than "unknown id".
    Result<Model> m = c.model(id);
    if (!m)
      return report_error(kName, m.error());
    show_model(*m, json);
    return kExitOk;
  }
  std::vector<std::string> ids;
  for (const Kind& k : kKinds) {
    if (only && &k != only)
      continue;
    if (k.show(c, id, json))
      return kExitOk;
    for (std::string& i : k.ids(c))
      ids.push_back(std::move(i));
  }
  const std::string what = only ? std::string(only->singular) : "id";
  std::string hint = suggestion_hint(id, ids);
  if (!only && hint.starts_with("expected one of")) {
    // Every id of every kind is too long a list for a hint.
    hint = "run 'gpuplan catalog list' to see the ids";
  }
  return report_error(kName, Error{"show", fmt::format("unknown {} '{}'", what, id), hint});
}

}  // namespace

std::vector<std::string> catalog_kinds() {
  std::vector<std::string> names;
  for (const Kind& k : kKinds)
    names.emplace_back(k.name);
  return names;
}

int run_catalog(const std::vector<std::string>& args) {
  CLI::App app(
      "List and show the GPUs, fabrics, models, offers, serving engines, data sets and "
      "training frameworks gpuplan knows.",
      args.front());
  app.require_subcommand(1);
  std::string data;
  app.add_option("--data", data, "catalog directory (default $GPUPLAN_DATA or the built-in one)");
  const std::string kinds = fmt::format("{}", fmt::join(catalog_kinds(), " | "));
  std::string kind;
  CLI::App* list = app.add_subcommand("list", "list the entries of every kind, or of one");
  list->add_option("kind", kind, fmt::format("{} (default: all)", kinds));
  bool list_json = false;
  list->add_flag("--json", list_json, "print one kind as a JSON array");
  list->fallthrough();
  std::vector<std::string> words;
  bool json = false;
  CLI::App* show = app.add_subcommand("show", "show one entry by id: show [KIND] ID");
  show->add_option("id", words,
                   fmt::format("an id of any kind, or a kind ({}) and an id of it", kinds))
      ->required()
      ->expected(1, -1);  // more than two words: run_show says what it takes
  show->add_flag("--json", json, "print JSON");
  show->fallthrough();
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  Result<Catalog> c = load_catalog(data);
  if (!c)
    return report_error(kName, c.error());
  if (list->parsed())
    return run_list(*c, kind, list_json);
  return run_show(*c, words, json);
}

}  // namespace gpuplan::cli
