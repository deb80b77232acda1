#include "gpuplan/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gpuplan/format.h"
#include "gpuplan/result.h"

namespace gpuplan {
namespace {

int64_t norm_parameters(const Model& m) {
  return m.norm == NormKind::kLayerNorm ? 2 * m.hidden : m.hidden;
}

// Parameters of the attention block, split for tensor parallelism. Column-parallel matrices
// (Q, K, V) and their biases are sharded; the row-parallel output projection is sharded but
// its bias is kept whole on every rank (Megatron's RowParallelLinear).
void add_attention(const Model& m, LayerParameters& p) {
  const int64_t h = m.hidden;
  if (m.is_latent_attention()) {
    // DeepSeek-V2/V3 MLA (DeepSeek-AI 2024, sec. 2.1.2): down-projections to the latent,
    // their norms, up-projections back to the heads, and the output projection.
    const LatentAttention& a = m.mla;
    const int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    int64_t q = 0;
    if (a.q_lora_rank > 0) {
      q = h * a.q_lora_rank + a.q_lora_rank * m.heads * qk_head;
      p.replicated += a.q_lora_rank;  // q_a_layernorm
    } else {
      q = h * m.heads * qk_head;
    }
    const int64_t kv_down = h * (a.kv_lora_rank + a.qk_rope_head_dim);
    const int64_t kv_up = a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
    const int64_t out = m.heads * a.v_head_dim * h;
    p.replicated += a.kv_lora_rank;  // kv_a_layernorm
    p.sharded += q + kv_down + kv_up + out;
    p.matmul += q + kv_down + kv_up + out;
    p.active_matmul += q + kv_down + kv_up + out;
    return;
  }
  const int64_t q_dim = m.heads * m.head_dim;
  const int64_t kv_dim = m.kv_heads * m.head_dim;
  const int64_t matrices = h * q_dim + 2 * h * kv_dim + q_dim * h;
  p.sharded += matrices;
  p.matmul += matrices;
  p.active_matmul += matrices;
  if (m.qkv_bias) {
    p.sharded += q_dim + 2 * kv_dim;
  }
  if (m.out_bias) {
    p.replicated += h;
  }
  if (m.attention_sinks) {
    p.sharded += m.heads;  // each head's sink goes with the head
  }
}

// Weights of one MLP of width `width`: up (and gate) projections and the down projection.
int64_t mlp_matrices(const Model& m, int64_t width) {
  return (m.gated_mlp ? 3 : 2) * m.hidden * width;
}

void add_dense_mlp(const Model& m, LayerParameters& p) {
  const int64_t w = mlp_matrices(m, m.intermediate);
  p.sharded += w;
  p.matmul += w;
  p.active_matmul += w;
  if (m.mlp_bias) {
    p.sharded += (m.gated_mlp ? 2 : 1) * m.intermediate;  // column-parallel biases
    p.replicated += m.hidden;                             // row-parallel bias
  }
}

void add_moe_mlp(const Model& m, LayerParameters& p) {
  const MixtureOfExperts& e = m.moe;
  const int64_t expert = mlp_matrices(m, e.expert_intermediate);
  const int64_t router = m.hidden * e.experts;
  const int64_t shared = mlp_matrices(m, shared_expert_width(m));
  p.sharded += e.experts * expert + shared;
  p.routed_experts += e.experts * expert;
  p.matmul += e.experts * expert + shared;
  p.active_matmul += e.experts_per_token * expert + shared + router;
  // The router is small and every rank needs all its scores; so is the shared expert's gate.
  p.replicated += router + (e.router_bias ? e.experts : 0) + (e.shared_gate ? m.hidden : 0);
  p.matmul += e.shared_gate ? m.hidden : 0;
  p.active_matmul += e.shared_gate ? m.hidden : 0;
  p.matmul += router;
  if (m.mlp_bias) {
    // gpt-oss: every routed expert's up (and gate) and down projections have biases.
    const int64_t biases = e.experts * ((m.gated_mlp ? 2 : 1) * e.expert_intermediate + m.hidden);
    p.sharded += biases;
    p.routed_experts += biases;
  }
}

}  // namespace

LayerParameters layer_parameters(const Model& model, int64_t index) {
  GPUPLAN_CHECK(index >= 0 && index < model.layers, "layer index out of range");
  LayerParameters p;
  add_attention(model, p);
  if (model.is_moe() && index >= model.moe.dense_layers) {
    add_moe_mlp(model, p);
  } else {
    add_dense_mlp(model, p);
  }
  p.replicated += model.norms_per_layer * norm_parameters(model);
  if (model.qk_norm == QkNorm::kPerHead) {
    p.replicated += 2 * model.head_dim;  // q_norm and k_norm, shared by all heads
  } else if (model.qk_norm == QkNorm::kPerProjection) {
    // Over the whole projections (every rank keeps them whole, as vLLM's OLMo 2 gathers its
    // queries and keys to normalise them).
    p.replicated += (model.heads + model.kv_heads) * model.head_dim;
  }
  return p;
}

LayerSpans layer_spans(const Model& model) {
  const int64_t dense =
      model.is_moe() ? std::min(model.moe.dense_layers, model.layers) : model.layers;
  LayerSpans spans;
  if (dense > 0) {
    spans.push_back({0, dense});
  }
  if (dense < model.layers) {
    spans.push_back({dense, model.layers - dense});
  }
  return spans;
}

int64_t layers_in_span(const LayerSpan& span, int64_t first, int64_t count) {
  const int64_t lo = std::max(first, span.first);
  const int64_t hi = std::min(first + count, span.first + span.count);
  return std::max<int64_t>(0, hi - lo);
}

ParameterCount count_parameters(const Model& model) {
  ParameterCount c;
  c.embedding = model.vocab * model.hidden;
  c.position = model.position == PositionKind::kLearned ? model.max_positions * model.hidden : 0;
  c.lm_head = model.tied_embeddings ? 0 : model.vocab * model.hidden;
  if (model.lm_head_bias) {
    c.lm_head += model.vocab;
  }
  c.norms_outside_layers = norm_parameters(model) * (model.embedding_norm ? 2 : 1);
  // Layers come in at most two kinds (DeepSeek's leading dense layers, then MoE layers), so
  // one layer of each kind, times its count, is the sum.
  int64_t active_layers = 0;
  for (const LayerSpan& span : layer_spans(model)) {
    const LayerParameters p = layer_parameters(model, span.first);
    c.layers += span.count * p.total();
    active_layers += span.count * (p.total() - (p.matmul - p.active_matmul));
  }
  const int64_t outside = c.embedding + c.position + c.lm_head + c.norms_outside_layers;
  c.total = c.layers + outside;
  c.active_per_token = active_layers + outside;
  return c;
}

int64_t shared_expert_width(const Model& m) {
  if (!m.is_moe() || m.moe.shared_experts == 0) {
    return 0;
  }
  return m.moe.shared_intermediate > 0 ? m.moe.shared_intermediate
                                       : m.moe.shared_experts * m.moe.expert_intermediate;
}

double kv_cache_bytes_per_token(const Model& model, double bytes_per_element) {
  if (model.is_latent_attention()) {
    // MLA caches the compressed latent and the shared rotary key, not per-head K and V.
    return static_cast<double>(model.layers) *
           static_cast<double>(model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) *
           bytes_per_element;
  }
  return 2.0 * static_cast<double>(model.layers * model.kv_heads * model.head_dim) *
         bytes_per_element;
}

double held_context(const Model& model, double context) {
  if (!model.has_window()) {
    return context;
  }
  const double layers = static_cast<double>(model.layers);
  const double windowed = static_cast<double>(model.window.layers);
  const double w = static_cast<double>(model.window.tokens);
  return ((layers - windowed) * context + windowed * std::min(context, w)) / layers;
}

int64_t context_held_in(const Model& model, double held) {
  const double w = static_cast<double>(model.window.tokens);
  if (!model.has_window() || held <= w) {
    return static_cast<int64_t>(std::floor(held));
  }
  const int64_t full = model.layers - model.window.layers;
  if (full == 0) {
    return std::numeric_limits<int64_t>::max();
  }
  // held = w + (context - w) x full / layers past the window.
  const double context =
      w + (held - w) * static_cast<double>(model.layers) / static_cast<double>(full);
  return context >= 9e18 ? std::numeric_limits<int64_t>::max()
                         : static_cast<int64_t>(std::floor(context));
}

double attended_keys(const Model& model, double done, double queries) {
  const double full = queries * done + queries * (queries + 1.0) / 2.0;
  if (!model.has_window()) {
    return full;
  }
  // Positions done + 1 ... done + queries: those up to the window see all before them, the
  // rest the window.
  const double w = static_cast<double>(model.window.tokens);
  const double first = done + 1.0;
  const double last = done + queries;
  double window_keys = 0;
  if (first <= w) {
    const double top = std::min(last, w);
    window_keys += (first + top) * (top - first + 1.0) / 2.0;
  }
  window_keys += std::max(0.0, last - std::max(first - 1.0, w)) * w;
  const double layers = static_cast<double>(model.layers);
  const double windowed = static_cast<double>(model.window.layers);
  return ((layers - windowed) * full + windowed * window_keys) / layers;
}

double attended_share(const Model& model, int64_t seq) {
  if (!model.has_window() || seq <= 0) {
    return 1.0;
  }
  const double s = static_cast<double>(seq);
  return attended_keys(model, 0, s) / (s * (s + 1.0) / 2.0);
}

Result<int64_t> check_context(const Model& model, int64_t tokens, std::string_view given_as) {
  if (model.max_positions > 0 && tokens > model.max_positions) {
    return fail(std::string(given_as),
                fmt::format("{} tokens exceed the {}-token context of {}", grouped(tokens),
                            grouped(model.max_positions), model.id),
                "use shorter sequences or a model with a longer context");
  }
  return tokens;
}

}  // namespace gpuplan
