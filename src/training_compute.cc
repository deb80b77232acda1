// Compute of a transformer layer for one micro-batch, by GEMM shape (docs/FORMULAS.md#compute).
#include <algorithm>

#include "gpuplan/gemm.h"
#include "layer_gemms.h"
#include "training_model.h"

namespace gpuplan::detail {
namespace {

// FlashAttention-2's backward reaches 63 % of A100 peak against 73 % for its forward (Dao 2023,
// sec. 4.1): per FLOP it runs at 63 / 73 of the forward's rate.
constexpr double kFusedBackwardRate = 63.0 / 73.0;
// The backward of fused attention does 2.5 x the forward's FLOPs (five matmuls for two; Dao 2023,
// sec. 3.1).
constexpr double kFusedBackwardWork = 2.5;

// The GEMMs of one linear layer, rows x in -> rows x out: forward, input gradient and (for
// trained weights) weight gradient.
struct Linear {
  const Gpu& gpu;
  Precision precision;
  // Inside a training step a GEMM computes at `in_situ` (TrainParams::in_situ_for the GPU's
  // architecture) of its microbenchmark rate: gemm_time's compute share (gemm.h).
  double in_situ;
  LayerWork& work;

  void add(int64_t rows, int64_t out, int64_t in, bool trained, int64_t batch = 1) {
    if (rows <= 0 || out <= 0 || in <= 0) {
      return;
    }
    work.gemm_forward += gemm_time(gpu, precision, {rows, out, in, batch}, in_situ);
    work.gemm_backward += gemm_time(gpu, precision, {rows, in, out, batch}, in_situ);
    if (trained) {
      work.gemm_backward += gemm_time(gpu, precision, {in, out, rows, batch}, in_situ);
    }
  }
};

Seconds hbm_time(const Gpu& gpu, double bytes) {
  return Bytes(bytes) / (gpu.memory_bandwidth * gpu.efficiency->hbm);
}

// Elementwise HBM traffic of one layer's forward pass per token on one GPU, bytes, kernel by
// kernel as Megatron-LM and TransformerEngine fuse them (docs/FORMULAS.md#elementwise): each norm
// reads and writes h; the rotary embedding reads and writes this rank's queries and keys; each
// residual add (with its bias and dropout) reads two h and writes one, and dropout writes a 1-byte
// mask; the MLP's activation reads its input(s) and writes its output. Ops outside the
// tensor-parallel region run on every rank unless sequence parallelism splits them.
double elementwise_bytes(const Model& m, const MemoryJob& mj, int64_t q, int64_t kv) {
  const double t = static_cast<double>(mj.layout.tp);
  const double h = static_cast<double>(m.hidden);
  const double norms = static_cast<double>(m.norms_per_layer) * 4.0 * h;
  const double residuals = 2.0 * (6.0 * h + (m.dropout ? h : 0.0));
  const double outside = (norms + residuals) / (mj.layout.sequence_parallel ? t : 1.0);
  const double rotary =
      m.position == PositionKind::kRotary ? 4.0 * static_cast<double>(q + kv) : 0.0;
  double width = static_cast<double>(m.intermediate);
  if (m.is_moe()) {
    width = static_cast<double>(m.moe.experts_per_token * m.moe.expert_intermediate +
                                shared_expert_width(m));
  }
  const double activation = (m.gated_mlp ? 6.0 : 4.0) * width / t;
  return outside + rotary + activation;
}

// Elementwise kernels of one layer's forward pass: the norms, the two residual adds, the MLP's
// activation and (rotary models) the embedding rotation.
double elementwise_kernels(const Model& m) {
  return static_cast<double>(m.norms_per_layer) + 2.0 + 1.0 +
         (m.position == PositionKind::kRotary ? 1.0 : 0.0);
}

// The attention core of one layer: fused kernels (never store the scores, skip the masked half of
// a causal mask), or the eager path of 2021-22 frameworks: batched GEMMs over the full s x s
// scores and a fused scale-mask-softmax (and dropout) through HBM.
void attention(const Model& m, const Gpu& gpu, const TrainJob& job, double in_situ, LayerWork& w) {
  const MemoryJob& mj = job.memory;
  const int64_t t = mj.layout.tp;
  const int64_t heads = m.heads / t;
  const int64_t d =
      m.is_latent_attention() ? m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim : m.head_dim;
  const int64_t queries = mj.seq / mj.layout.cp;  // per sequence on this rank
  const double tokens = static_cast<double>(mj.micro_batch * queries);
  if (mj.flash_attention) {
    // Scores and weighted values: 4 d FLOPs per (query, key) pair per head; causal queries see
    // s / 2 keys on average (load-balanced context parallelism keeps that per rank), fewer in
    // sliding-window layers (attended_share). The eager path below computes the full scores
    // whatever the mask.
    const double flops = 4.0 * static_cast<double>(heads * d) * tokens *
                         static_cast<double>(mj.seq) / 2.0 * attended_share(m, mj.seq);
    const double fwd_rate = gemm_rate(gpu, Precision::kBf16)->peak.si() *
                            attention_share(gpu, attention_kernels(gpu, job)) * in_situ;
    w.attention_forward = Seconds(flops / fwd_rate);
    w.attention_backward = Seconds(kFusedBackwardWork * flops / (fwd_rate * kFusedBackwardRate));
  } else {
    const int64_t batch = mj.micro_batch * heads;
    const Precision sixteen = Precision::kBf16;
    auto bmm = [&](int64_t rows, int64_t cols, int64_t inner) {
      return gemm_time(gpu, sixteen, {rows, cols, inner, batch}, in_situ);
    };
    // Forward: scores Q K^T (queries x keys over d), then P V (queries x d over keys).
    w.attention_forward = bmm(queries, mj.seq, d) + bmm(queries, d, mj.seq);
    // Backward: dP = dO V^T, dV = P^T dO, dS-derived dQ = dS K and dK = dS^T Q.
    w.attention_backward = bmm(queries, mj.seq, d) + bmm(mj.seq, d, queries) +
                           bmm(queries, d, mj.seq) + bmm(mj.seq, d, queries);
    // Softmax over E score elements in 16 bits: forward reads the scores and writes the
    // probabilities (4 E bytes), backward reads probabilities and gradient and writes one
    // (6 E); dropout on the probabilities adds, each way, a read, a write and a 1-byte mask.
    const double e = static_cast<double>(batch * queries) * static_cast<double>(mj.seq);
    const double dropout = m.dropout ? 5.0 : 0.0;
    w.attention_forward += hbm_time(gpu, e * (4.0 + dropout));
    w.attention_backward += hbm_time(gpu, e * (6.0 + dropout));
  }
}

}  // namespace

// Token permutations of one MoE layer's forward pass per token on one GPU, bytes, as
// Megatron-Core's token dispatcher moves the routed copies in 16 bits
// (megatron/core/transformer/moe/token_dispatcher.py; docs/FORMULAS.md#elementwise). Each of
// the rank's t-th of the tokens is copied k times, grouped by expert (read and write k h); with
// experts over ep > 1 ranks holding more than one each, the copies received are sorted by local
// expert before the experts and back after them (read and write k h etp each way); the k outputs
// of each token are read, weighted and summed into one (k h read, h written). The backward moves
// the gradients through the same permutations once.
double permutation_bytes(const Model& m, const Parallelism& layout) {
  const double t = static_cast<double>(layout.tp);
  const double h = static_cast<double>(m.hidden);
  const double k = static_cast<double>(m.moe.experts_per_token);
  const bool sorted = layout.ep > 1 && m.moe.experts / layout.ep > 1;
  const double received = routed_per_token(m, {layout.tp, layout.ep, layout.expert_tp()});
  const double permute = 2.0 * 2.0 * k * h / t;
  const double sort = sorted ? 2.0 * 2.0 * 2.0 * received * h : 0.0;
  const double unpermute = 2.0 * (k + 1.0) * h / t;
  return permute + sort + unpermute;
}

bool fp8_gemms(const Gpu& gpu, const TrainJob& job) {
  return job.memory.precision == Precision::kFp8 && gemm_rate(gpu, Precision::kFp8).has_value();
}

LayerWork layer_work(const Model& m, int64_t layer, const Gpu& gpu, const TrainJob& job,
                     const TrainParams& p) {
  const MemoryJob& mj = job.memory;
  const int64_t t = mj.layout.tp;
  const int64_t rows = mj.micro_batch * mj.seq / mj.layout.cp;
  const bool fp8 = fp8_gemms(gpu, job);
  const bool adapters = trains_adapters(mj.task);
  const bool trained = !adapters;
  LayerWork w;
  const double in_situ = p.in_situ_for(gpu.architecture);
  Linear linear{gpu, fp8 ? Precision::kFp8 : mj.precision, in_situ, w};
  const bool moe_layer = m.is_moe() && layer >= m.moe.dense_layers;
  const int64_t h = m.hidden;
  const int64_t q = m.heads * m.head_dim / t;
  const int64_t kv = std::max<int64_t>(1, m.kv_heads / t) * m.head_dim;  // replicated if t > k
  const GemmSplit split{t, mj.layout.ep, mj.layout.expert_tp()};
  for (const GemmShape& g : layer_gemms(m, layer, rows, split)) {
    linear.add(g.m, g.n, g.k, trained, g.batch);
  }
  attention(m, gpu, job, in_situ, w);
  // Memory-bound work, kernel by kernel; its backward reads saved inputs and gradients and
  // writes gradients, twice the traffic and twice the kernels.
  double traffic =
      static_cast<double>(rows) * elementwise_bytes(m, mj, q, kv) * p.elementwise_traffic;
  if (fp8) {
    // fp8 GEMMs (TransformerEngine): the cast of each GEMM input is fused into the kernel that
    // writes it, and the weights are cast once per step and cached, but Hopper's fp8 GEMMs take
    // only "TN" operands, so every input also gets a transposed fp8 copy for its gradient GEMMs:
    // 2 more bytes written per element (fp8 and fp8 transposed) of the activations entering the
    // GEMMs, and in the backward of the gradients leaving them.
    // A MoE layer's GEMM inputs are the attention's (h and q), each routed copy's (k etp / t
    // rows of h into the experts' first GEMM, of expert_intermediate / etp into their second)
    // and the shared experts'; the router stays in 16 bits.
    double inputs = static_cast<double>(2 * h + q + m.intermediate / t);
    if (moe_layer) {
      const int64_t shared = shared_expert_width(m);
      inputs = static_cast<double>(h + q) +
               routed_per_token(m, split) *
                   static_cast<double>(h + m.moe.expert_intermediate / split.etp) +
               (shared > 0 ? static_cast<double>(h + shared / t) : 0.0);
    }
    traffic += 2.0 * static_cast<double>(rows) * inputs;
  }
  if (mj.task == Task::kQlora) {
    // QLoRA dequantises its 4-bit weights before every GEMM: read ~0.5 bytes, write 2.
    traffic +=
        2.5 * static_cast<double>(layer_parameters(m, layer).matmul) / static_cast<double>(t);
  }
  const Seconds launches = p.kernel_overhead * elementwise_kernels(m);
  w.elementwise_forward = hbm_time(gpu, traffic) + launches;
  w.elementwise_backward = hbm_time(gpu, 2.0 * traffic) + launches * 2.0;
  if (moe_layer) {
    const Seconds permutations =
        hbm_time(gpu, static_cast<double>(rows) * permutation_bytes(m, mj.layout));
    w.elementwise_forward += permutations;
    w.elementwise_backward += permutations;
  }
  if (mj.recompute == Recompute::kFull) {
    w.recompute = w.forward();
  } else if (mj.recompute == Recompute::kSelective) {
    w.recompute = w.attention_forward;
  }
  return w;
}

StepWork step_work(const Model& m, const Gpu& gpu, const TrainJob& job, const TrainParams& p) {
  StepWork w;
  size_t i = 0;
  for (const LayerSpan& span : layer_spans(m)) {
    w.spans[i++] = layer_work(m, span.first, gpu, job, p);
  }
  w.head = head_work(m, gpu, job, p);
  w.flops_per_token = model_flops_per_token(m, job.memory.seq);
  return w;
}

LayerWork head_work(const Model& m, const Gpu& gpu, const TrainJob& job, const TrainParams& p) {
  const MemoryJob& mj = job.memory;
  const int64_t rows = mj.micro_batch * mj.seq / mj.layout.cp;
  LayerWork w;
  // The head stays in 16 bits (TransformerEngine keeps it out of fp8).
  Linear linear{gpu, mj.precision == Precision::kFp8 ? Precision::kBf16 : mj.precision,
                p.in_situ_for(gpu.architecture), w};
  const bool adapters = trains_adapters(mj.task);
  const int64_t vocab = (m.vocab + mj.layout.tp - 1) / mj.layout.tp;
  linear.add(rows, vocab, m.hidden, !adapters);
  // Cross-entropy on fp32 logits: written by the GEMM's epilogue, read by the softmax, and the
  // gradient written back: 3 x 4 bytes per logit.
  w.elementwise_forward =
      hbm_time(gpu, 8.0 * static_cast<double>(rows) * static_cast<double>(vocab));
  w.elementwise_backward =
      hbm_time(gpu, 4.0 * static_cast<double>(rows) * static_cast<double>(vocab));
  return w;  // frameworks do not recompute the head
}

}  // namespace gpuplan::detail
