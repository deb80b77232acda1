#include "layer_gemms.h"

#include <algorithm>
#include <cmath>

namespace gpuplan::detail {

double routed_per_token(const Model& m, const GemmSplit& split) {
  return static_cast<double>(m.moe.experts_per_token * split.etp) / static_cast<double>(split.tp);
}

LayerGemms layer_gemms(const Model& m, int64_t layer, int64_t rows, const GemmSplit& split) {
  LayerGemms g;
  const int64_t t = split.tp;
  const int64_t h = m.hidden;
  const int64_t gate = m.gated_mlp ? 2 : 1;
  const int64_t matrices = m.gated_mlp ? 3 : 2;
  int64_t mlp_weights = 0;  // matmul weights of the MLP one token passes through
  if (m.is_moe() && layer >= m.moe.dense_layers) {
    const MixtureOfExperts& e = m.moe;
    const int64_t ep = split.ep;
    const int64_t etp = split.etp;
    // This GPU holds E / ep experts, each split over etp ranks, and does 1/t of the layer's
    // expert work: rows x k x etp / t routed tokens reach its experts.
    const int64_t local = e.experts / ep;
    const double routed = static_cast<double>(rows) * routed_per_token(m, split);
    const double l = static_cast<double>(local);
    const int64_t touched = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(l * (1.0 - std::pow(1.0 - 1.0 / l, routed)) - 1e-9)), 1,
        local);
    // rows x k x ep x etp / (E t) rows for each expert when all of them run.
    const int64_t per_expert =
        std::max<int64_t>(1, rows * e.experts_per_token * ep * etp / (t * ep * touched));
    g.add(per_expert, e.expert_intermediate * gate / etp, h, touched);
    g.add(per_expert, h, e.expert_intermediate / etp, touched);
    g.routed = g.count;
    const int64_t shared = shared_expert_width(m);
    if (shared > 0) {
      g.add(rows, shared * gate / t, h);
      g.add(rows, h, shared / t);
    }
    g.add(rows, e.experts, h);  // the router, on every rank
    mlp_weights =
        matrices * h * (e.experts_per_token * e.expert_intermediate + shared) + h * e.experts;
  } else {
    g.add(rows, m.intermediate * gate / t, h);
    g.add(rows, h, m.intermediate / t);
    mlp_weights = matrices * h * m.intermediate;
  }
  if (m.is_latent_attention()) {
    // MLA's down- and up-projections, as one GEMM of the layer's attention weights.
    const int64_t weights = layer_parameters(m, layer).active_matmul - mlp_weights;
    g.add(rows, std::max<int64_t>(1, weights / (h * t)), h);
  } else {
    const int64_t q = m.heads * m.head_dim / t;
    const int64_t kv = std::max<int64_t>(1, m.kv_heads / t) * m.head_dim;  // replicated if t > k
    g.add(rows, q + 2 * kv, h);
    g.add(rows, h, q);
  }
  return g;
}

}  // namespace gpuplan::detail
