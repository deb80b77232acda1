#include "gpuplan/inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpuplan/fit.h"
#include "gpuplan/gemm.h"
#include "layer_gemms.h"

namespace gpuplan {
namespace {

// Activations between kernels are 16-bit in every engine, fp8 GEMMs included.
constexpr double kActivationBytes = 2.0;

// The tensor-core rate the weight GEMMs run at (gemm.h): fp8 and int8 weights multiply 8-bit
// inputs (W8A8), int4 weights are dequantised into 16-bit GEMMs (W4A16), fp4 (NVFP4) weights
// multiply 4-bit inputs on Blackwell's 4-bit peak (W4A4).
std::optional<double> gemm_rate_of(const Gpu& gpu, Precision p) {
  const std::optional<GemmRate> r = gemm_rate(gpu, p);
  if (!r) {
    return std::nullopt;
  }
  return r->peak.si() * r->sustained;
}

// InferenceParams::prefill_budget_peak_second: the tokens `gpus` GPUs pass forward through the
// layers' matrices (2 FLOPs per active weight) in one second at their 16-bit dense peak, at
// most the model's context; a budget of 100 tokens or fewer is not taken (TGI's launcher
// ignores such a figure as a miscount) and `fallback`, the engine's own, stands.
int64_t peak_second_tokens(const Model& m, const Gpu& gpu, int64_t gpus, int64_t fallback) {
  const std::optional<FlopsPerSecond> peak = gpu.peak_for(Precision::kBf16)
                                                 ? gpu.peak_for(Precision::kBf16)
                                                 : gpu.peak_for(Precision::kFp16);
  double flops_per_token = 0;
  for (const LayerSpan& s : layer_spans(m)) {
    flops_per_token +=
        2.0 * static_cast<double>(layer_parameters(m, s.first).active_matmul * s.count);
  }
  if (!peak || flops_per_token <= 0) {
    return fallback;
  }
  const double tokens = peak->si() * static_cast<double>(gpus) / flops_per_token;
  if (tokens <= 100) {
    return fallback;
  }
  const double most = m.max_positions > 0 ? static_cast<double>(m.max_positions) : tokens;
  return static_cast<int64_t>(std::min(tokens, most));
}

}  // namespace

InferenceModel::InferenceModel(const Model& m, const Instance& in, const MemoryParams& mp,
                               const TrainParams& tp, const InferenceParams& ip)
    : instance_(in),
      params_(ip),
      chunk_tokens_(mp.inference_chunk_tokens),
      model_(m),
      spans_(layer_spans(m)) {
  const Gpu& gpu = *in.gpu;
  if (!gpu.efficiency) {
    why_ = Why::kCalibration;
    reason_ = {fmt::format("gpu '{}' has no [efficiency] calibration", gpu.id),
               fmt::format("a gpu '{}' não tem calibração [efficiency]", gpu.id)};
    return;
  }
  // An NVLink-class domain bounds tensor parallelism; PCIe cards can be grouped as far as the
  // server goes, which the caller knows.
  if (gpu.scale_up_domain > 1 && in.tp > gpu.scale_up_domain) {
    why_ = Why::kLayout;
    reason_ = {fmt::format("tp {} is more GPUs than {} links in one domain ({})", in.tp, gpu.id,
                           gpu.scale_up_domain),
               fmt::format("tp {} são mais GPUs do que a {} liga em um domínio ({})", in.tp, gpu.id,
                           gpu.scale_up_domain)};
    return;
  }
  const int64_t per_node = in.gpus_per_node > 0 ? in.gpus_per_node : in.gpus();
  if (in.tp > per_node) {
    why_ = Why::kLayout;
    reason_ = {fmt::format("tp {} is more than the {} GPUs of a node", in.tp, per_node),
               fmt::format("tp {} é mais do que as {} GPUs de um nó", in.tp, per_node)};
    return;
  }
  if (per_node % in.tp != 0) {
    // Instances tile a node: a share left over would sit idle.
    why_ = Why::kLayout;
    reason_ = {fmt::format("tp {} does not divide the {} GPUs of a node", in.tp, per_node),
               fmt::format("tp {} não divide as {} GPUs de um nó", in.tp, per_node)};
    return;
  }
  const int64_t nodes = (in.gpus() + per_node - 1) / per_node;
  if (nodes > 1 && in.scale_out == nullptr) {
    why_ = Why::kLayout;
    reason_ = {fmt::format("the {} GPUs span {} nodes but no network between them is given",
                           in.gpus(), nodes),
               fmt::format("as {} GPUs ocupam {} nós, mas nenhuma rede entre eles foi informada",
                           in.gpus(), nodes)};
    return;
  }
  boundaries_across_nodes_ = nodes - 1;
  const std::optional<double> sixteen = gemm_rate_of(gpu, Precision::kBf16);
  matmul_precision_ = in.precision;
  if (in.as_released && !gemm_rate_of(gpu, in.precision)) {
    matmul_precision_ = Precision::kBf16;  // weight-only kernels: W4A16, W8A16
  }
  const std::optional<double> rate = gemm_rate_of(gpu, matmul_precision_);
  if (!rate || !sixteen) {
    why_ = Why::kCalibration;
    reason_ = {fmt::format("{} has no {} tensor-core rate in the catalog", gpu.id,
                           precision_name(in.precision)),
               fmt::format("{} não tem taxa de tensor cores {} no catálogo", gpu.id,
                           precision_name(in.precision))};
    return;
  }
  MemoryParams memory = mp;
  if (ip.prefill_budget_peak_second) {
    chunk_tokens_ = peak_second_tokens(m, gpu, in.gpus(), mp.inference_chunk_tokens);
    memory.inference_chunk_tokens = chunk_tokens_;
  }
  MemoryJob mj;
  mj.task = Task::kInfer;
  mj.precision = in.precision;
  mj.as_released = in.as_released;
  mj.kv_precision = in.kv_precision;
  mj.layout.tp = in.tp;
  mj.layout.pp = in.pp;
  // The engine's working set: one iteration of the full token budget, logits for every
  // sequence it may run.
  mj.batch = ip.max_batch;
  mj.context = std::max<int64_t>(1, chunk_tokens_);
  if (std::optional<std::string> problem = layout_problem(m, mj)) {
    why_ = Why::kLayout;
    reason_ = Text{*problem, ""};  // a layout problem, in English (memory.h)
    return;
  }
  const FitReport fit = fit_on_gpu(m, mj, gpu, memory);
  usable_ = fit.verdict.usable;
  weights_ = fit.memory.weights;
  kv_per_token_ = fit.kv->bytes_per_token;
  if (fit.kv->budget.si() <= 0) {
    why_ = Why::kMemory;
    const Bytes working = fit.memory.activations + fit.memory.overhead;
    reason_ = {fmt::format("weights ({}) and working memory ({}) leave no room for a KV cache in "
                           "{} usable per GPU",
                           gib_text(weights_, Lang::kEn), gib_text(working, Lang::kEn),
                           gib_text(usable_, Lang::kEn)),
               fmt::format("pesos ({}) e memória de trabalho ({}) não deixam espaço para o cache "
                           "KV em {} utilizáveis por GPU",
                           gib_text(weights_, Lang::kPt), gib_text(working, Lang::kPt),
                           gib_text(usable_, Lang::kPt))};
    return;
  }
  // A share of what weights and working memory leave (TensorRT-LLM), or of the whole GPU less
  // those (vLLM, SGLang): the engine's (engine.h).
  kv_budget_ = ip.kv_of_total ? fit.kv->budget - usable_ * (1.0 - ip.kv_memory_fraction)
                              : fit.kv->budget * ip.kv_memory_fraction;
  if (kv_budget_.si() <= 0) {
    why_ = Why::kMemory;
    reason_ = {fmt::format("the engine's {:.0f} % of the GPU ({}) is taken by weights and working "
                           "memory: nothing is left for a KV cache",
                           ip.kv_memory_fraction * 100, gib_text(usable_, Lang::kEn)),
               fmt::format("os {:.0f} % da GPU ({}) que o motor usa vão para pesos e memória de "
                           "trabalho: nada sobra para o cache KV",
                           ip.kv_memory_fraction * 100, gib_text(usable_, Lang::kPt))};
    return;
  }
  kv_tokens_ = static_cast<int64_t>(std::floor(kv_budget_.si() / kv_per_token_));

  const Efficiency& e = *gpu.efficiency;
  // A loaded GPU runs its kernels at a share of their microbenchmark rate (the power limit and
  // the memory system are shared): serving's own, fitted to serving rows, as training's in-situ
  // shares are fitted to training steps, whose kernels also run beside overlapped collectives.
  const double share = ip.compute_share;
  const QuantisedWeights quantised = quantised_weights(m, in.precision, in.as_released);
  weight_bytes_ = quantised.bytes;
  experts_only_ = quantised.experts_only;
  sixteen_rate_ = *sixteen * share;
  // Serving engines run attention kernels written for the part's architecture where it has
  // them measured.
  attention_rate_ = gemm_rate(gpu, Precision::kBf16)->peak.si() *
                    attention_share(gpu, AttentionKernels::kNative) * share;
  hbm_rate_ = gpu.memory_bandwidth.si() * e.hbm * ip.stream_share;

  const double t = static_cast<double>(in.tp);
  const double h = static_cast<double>(m.hidden);
  const double q_width = static_cast<double>(m.heads * m.head_dim);
  const double kv_width = static_cast<double>(m.kv_heads * m.head_dim);
  const double mlp_matrices = m.gated_mlp ? 3.0 : 2.0;
  // Attention FLOPs per (query, key) pair per layer: scores 2 x width, weighted values 2 x width.
  const double score_width =
      m.is_latent_attention()
          ? static_cast<double>(m.heads * (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim))
          : q_width;
  const double value_width =
      m.is_latent_attention() ? static_cast<double>(m.heads * m.mla.v_head_dim) : q_width;
  for (int64_t i = 0; i < m.layers; ++i) {
    const bool moe_layer = m.is_moe() && i >= m.moe.dense_layers;
    double width = static_cast<double>(m.intermediate);
    if (moe_layer) {
      width = static_cast<double>(m.moe.experts_per_token * m.moe.expert_intermediate +
                                  shared_expert_width(m));
    }
    attention_flops_ += 2.0 * (score_width + value_width) / t;
    // Tensors a token writes in a layer on one GPU, each read back once (elementwise_traffic;
    // serving's own, not the training fit's, which counts training's kernels):
    // two norm outputs and two residual sums (h each), Q/K/V and the attention output, and the
    // MLP's intermediate tensors (gated: two up projections and their product; plain: the up
    // projection and its activation).
    const double elements =
        4.0 * h + (2.0 * q_width + 2.0 * kv_width) / t + mlp_matrices * width / t;
    activation_bytes_ += elements * kActivationBytes * ip.elementwise_traffic;
  }

  Cluster c;
  c.gpu = &gpu;
  c.gpus = in.gpus();
  c.gpus_per_node = per_node;
  c.scale_up = in.scale_up;
  c.scale_out = nodes > 1 ? in.scale_out : nullptr;
  c.nics_per_node = in.nics_per_node > 0 ? in.nics_per_node : per_node;
  network_ = cluster_network(c, tp);
}

IterationTime InferenceModel::iteration(const BatchShape& b) const {
  IterationTime out;
  const int64_t tokens = b.prefill_tokens + b.decodes;
  if (tokens == 0) {
    return out;
  }
  const double n = static_cast<double>(tokens);
  // The weight GEMMs of every layer for these tokens (layer_gemms.h), the experts only the tokens
  // pick, each timed as training times it (gemm.h: tiles, waves, weights streamed, launch).
  const int64_t t = instance_.tp;
  Seconds matmul;
  for (const LayerSpan& span : spans_) {
    Seconds layer;
    const detail::LayerGemms gemms = detail::layer_gemms(model_, span.first, tokens, {t, 1, t});
    for (int i = 0; i < gemms.count; ++i) {
      GemmShape g = gemms.shapes[static_cast<size_t>(i)];
      if (experts_only_ && i >= gemms.routed) {
        layer += gemm_time(*instance_.gpu, Precision::kBf16, g, params_.compute_share);
        continue;
      }
      g.b_bytes = weight_bytes_;
      layer += gemm_time(*instance_.gpu, matmul_precision_, g, params_.compute_share);
    }
    matmul += layer * static_cast<double>(span.count);
  }
  if (b.logits > 0) {
    // The output head stays 16-bit in the quantised checkpoints engines serve.
    const int64_t vocab = (model_.vocab + t - 1) / t;
    matmul += gemm_time(*instance_.gpu, Precision::kBf16, {b.logits, vocab, model_.hidden},
                        params_.compute_share);
  }
  out.matmul = matmul;
  const double decode_attention = b.decode_context * unscaled_context_seconds();
  out.attention = Seconds(b.prefill_keys * attention_flops_ / attention_rate_ + decode_attention);
  out.elementwise = Seconds(n * activation_bytes_ / hbm_rate_);
  if (instance_.tp > 1) {
    // Attention output and MLP output: one all-reduce each per layer, 16-bit activations.
    const Bytes message(n * static_cast<double>(model_.hidden) * kActivationBytes);
    out.tp_comm = all_reduce_time(message, Group{instance_.tp, instance_.tp}, network_) *
                  (2.0 * static_cast<double>(model_.layers));
  }
  if (instance_.pp > 1) {
    // Each stage hands its 16-bit activations to the next; boundaries between nodes go over
    // the network.
    const Bytes handoff(n * static_cast<double>(model_.hidden) * kActivationBytes);
    const int64_t inside = instance_.pp - 1 - boundaries_across_nodes_;
    out.pp_comm = send_recv_time(handoff, false, network_) * static_cast<double>(inside);
    if (boundaries_across_nodes_ > 0) {
      out.pp_comm +=
          send_recv_time(handoff, true, network_) * static_cast<double>(boundaries_across_nodes_);
    }
  }
  out.overhead =
      params_.iteration_overhead + params_.layer_overhead * static_cast<double>(model_.layers);
  // The engine's work per sequence: between two iterations, or while the GPU computes this one
  // (then only what it takes beyond the GPU's time shows).
  const Seconds per_sequence = params_.sequence_overhead * static_cast<double>(b.logits);
  if (params_.sequence_overhead_overlapped) {
    const Seconds gpu = out.matmul + out.attention + out.elementwise + out.tp_comm + out.pp_comm;
    out.overhead += Seconds(std::max(0.0, per_sequence.si() - gpu.si()));
  } else {
    out.overhead += per_sequence;
  }
  if (params_.time_scale != 1.0) {
    for (Seconds* part : {&out.matmul, &out.attention, &out.elementwise, &out.tp_comm, &out.pp_comm,
                          &out.overhead}) {
      *part = *part * params_.time_scale;
    }
  }
  return out;
}

Seconds InferenceModel::prefill_alone(int64_t prompt, int64_t cached) const {
  // Chunks of the token budget, each attending to everything before it, the cached prefix
  // included.
  const int64_t chunk = std::max<int64_t>(1, chunk_tokens_);
  Seconds total;
  for (int64_t done = cached; done < prompt; done += chunk) {
    const int64_t c = std::min(chunk, prompt - done);
    BatchShape b;
    b.prefill_tokens = c;
    b.prefill_keys = prefill_keys(static_cast<double>(done), static_cast<double>(c));
    b.logits = done + c == prompt ? 1 : 0;
    total += iteration(b).total();
  }
  return total;
}

double InferenceModel::unscaled_context_seconds() const {
  return std::max(kv_per_token_ / hbm_rate_, attention_flops_ / sixteen_rate_) /
         static_cast<double>(kv_unit_scale());
}

int64_t InferenceModel::kv_units(int64_t context, int64_t reserved) const {
  if (!model_.has_window()) {
    return context;
  }
  return kv_growth() * context + model_.window.layers * std::min(reserved, model_.window.tokens);
}

double InferenceModel::decode_context_seconds() const {
  return unscaled_context_seconds() * params_.time_scale;
}

Seconds InferenceModel::decode_step(int64_t batch, double context) const {
  BatchShape b;
  b.decodes = batch;
  b.decode_context = static_cast<double>(batch) * held_context(model_, context) *
                     static_cast<double>(kv_unit_scale());
  b.logits = batch;
  return iteration(b).total();
}

}  // namespace gpuplan
