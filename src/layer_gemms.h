// The weight GEMMs of one transformer layer on one GPU (private to the time models).
//
// Training (training_compute.cc) times each of them forward and, from the same shapes, backward;
// serving (inference.cc) times them forward for the tokens of one iteration. Both time them with
// gemm_time() (gemm.h), so a GEMM costs the same in a training step and in a serving iteration,
// and a recalibrated tile model or sustained rate moves both. docs/FORMULAS.md#gemm.
#ifndef GPUPLAN_SRC_LAYER_GEMMS_H_
#define GPUPLAN_SRC_LAYER_GEMMS_H_

#include <array>
#include <cstdint>

#include "gpuplan/gemm.h"
#include "gpuplan/model.h"

namespace gpuplan::detail {

// How a layer's matrices are split over GPUs: tensor parallelism over the attention and dense
// MLP, and for routed experts `ep` ranks that each hold E / ep of them, every expert split over
// `etp` ranks (serving: ep 1, etp = tp).
struct GemmSplit {
  int64_t tp = 1;
  int64_t ep = 1;
  int64_t etp = 1;
};

// Routed token copies that reach one GPU's experts per token of the layer: each token goes to
// k experts, every rank holding a share of a chosen expert (etp of them) gets the copy, and the
// t tensor-parallel ranks share the layer's tokens: k etp / t. The experts' GEMMs, the
// all-to-alls that carry the copies and the kernels that sort them all scale with it.
double routed_per_token(const Model& m, const GemmSplit& split);

// The GEMMs, each `rows` (of its own) x out over in; a grouped GEMM over routed experts has
// `batch` > 1. At most seven: the experts' up and down projections, a shared expert's two, the
// router, and attention's two (MLA's projections count as one).
struct LayerGemms {
  std::array<GemmShape, 7> shapes{};
  int count = 0;
  int routed = 0;  // the first `routed` shapes are the routed experts' (0 in a dense layer)

  void add(int64_t rows, int64_t out, int64_t in, int64_t batch = 1) {
    if (rows > 0 && out > 0 && in > 0) {
      shapes[static_cast<size_t>(count++)] = GemmShape{rows, out, in, batch};
    }
  }
  const GemmShape* begin() const { return shapes.data(); }
  const GemmShape* end() const { return shapes.data() + count; }
};

// The weight GEMMs of layer `layer` of `m` for `rows` tokens on one GPU. Routed tokens spread
// evenly over the experts; where few tokens pick among many experts (a decode step), only the
// experts some token picked run: of L local experts receiving r routed tokens, L (1 - (1 -
// 1/L)^r) in expectation.
LayerGemms layer_gemms(const Model& m, int64_t layer, int64_t rows, const GemmSplit& split);

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_LAYER_GEMMS_H_
