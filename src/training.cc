#include "gpuplan/training.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpuplan {
namespace {

// Time of one GEMM of `flops` at `peak` x the GPU's large-GEMM efficiency, rolled off for small
// GEMMs as f / (f + f_half) (docs/FORMULAS.md#compute).
Seconds gemm_time(double flops, FlopsPerSecond peak, double efficiency, Flops half) {
  if (flops <= 0) {
    return Seconds(0);
  }
  const double rolloff = flops / (flops + half.si());
  return Flops(flops) / (peak * (efficiency * rolloff));
}

// Compute time of one layer's forward pass for one micro-batch on one GPU, split by kind.
struct LayerTimes {
  Seconds gemm;       // matrix multiplies
  Seconds attention;  // attention core (scores and weighted values)
  Seconds memory;     // memory-bound elementwise work
};

LayerTimes layer_forward(const Model& m, int64_t layer, const Gpu& gpu, const TrainJob& job,
                         const TrainParams& p) {
  const MemoryJob& mj = job.memory;
  const Efficiency& e = *gpu.efficiency;
  const bool fp8 = mj.precision == Precision::kFp8 && gpu.peak_for(Precision::kFp8);
  const Precision half_precision =
      gpu.peak_for(Precision::kBf16) ? Precision::kBf16 : Precision::kFp16;
  const Precision compute = mj.precision == Precision::kFp32 || mj.precision == Precision::kTf32
                                ? mj.precision
                                : half_precision;
  const FlopsPerSecond peak16 = gpu.peak_for(compute).value_or(FlopsPerSecond(0));
  const FlopsPerSecond gemm_peak = fp8 ? *gpu.peak_for(Precision::kFp8) : peak16;
  const double gemm_eff = fp8 ? e.gemm_fp8 : e.gemm;
  const double t = static_cast<double>(mj.layout.tp);
  const double tokens =
      static_cast<double>(mj.micro_batch * mj.seq) / static_cast<double>(job.context_parallel);
  const double h = static_cast<double>(m.hidden);

  LayerTimes out;
  auto gemm = [&](double flops) { out.gemm += gemm_time(flops, gemm_peak, gemm_eff, e.gemm_half); };
  const LayerParameters lp = layer_parameters(m, layer);
  const bool moe_layer = m.is_moe() && layer >= m.moe.dense_layers;
  const double q = static_cast<double>(m.heads * m.head_dim);
  const double kv = static_cast<double>(m.kv_heads * m.head_dim);
  double mlp_weights = 0;  // matmul weights of the MLP a token passes through
  if (moe_layer) {
    const double expert =
        (m.gated_mlp ? 3.0 : 2.0) * h * static_cast<double>(m.moe.expert_intermediate);
    // Routed tokens spread evenly: each of the E / ep local experts gets tokens * k * ep / E
    // rows (tokens arrive from the whole EP group).
    const int64_t ep = mj.layout.ep;
    const double per_expert = tokens * static_cast<double>(m.moe.experts_per_token * ep) /
                              static_cast<double>(m.moe.experts);
    for (int64_t x = 0; x < m.moe.experts / ep; ++x) {
      gemm(2.0 * per_expert * expert / t);
    }
    for (int64_t x = 0; x < m.moe.shared_experts; ++x) {
      gemm(2.0 * tokens * expert / t);
    }
    const double router = h * static_cast<double>(m.moe.experts);
    gemm(2.0 * tokens * router);
    mlp_weights =
        static_cast<double>(m.moe.experts_per_token + m.moe.shared_experts) * expert + router;
  } else {
    const double i = static_cast<double>(m.intermediate);
    gemm(2.0 * tokens * h * i * (m.gated_mlp ? 2.0 : 1.0) / t);
    gemm(2.0 * tokens * i * h / t);
    mlp_weights = (m.gated_mlp ? 3.0 : 2.0) * h * i;
  }
  if (m.is_latent_attention()) {
    // MLA's down- and up-projections, as one GEMM of the layer's attention weights.
    gemm(2.0 * tokens * (static_cast<double>(lp.active_matmul) - mlp_weights) / t);
  } else {
    gemm(2.0 * tokens * h * (q + 2.0 * kv) / t);
    gemm(2.0 * tokens * q * h / t);
  }
  // Attention core: QK^T and scores x V, 2 x 2 x s x (a d) per query token; fused causal
  // kernels skip the masked half, the eager kernels of 2021-22 computed it.
  const double causal = mj.flash_attention ? 0.5 : 1.0;
  const double attention_flops = 4.0 * tokens * static_cast<double>(mj.seq) * q * causal / t;
  out.attention = Flops(attention_flops) / (peak16 * (e.gemm * p.attention_efficiency));
  // Memory-bound work: norms, activation functions, dropout, residuals, softmax. Their traffic
  // scales with the activations a layer stores.
  MemoryJob stored = mj;
  stored.recompute = Recompute::kNone;
  const Bytes act = layer_activation_bytes(m, stored) / static_cast<double>(job.context_parallel);
  Bytes traffic = act * p.elementwise_traffic;
  if (fp8) {
    // fp8 GEMMs (TransformerEngine) cast their 16-bit inputs every pass: read 2 bytes, write 1,
    // for the activations entering the GEMMs and for this rank's weights.
    const double inputs =
        moe_layer ? 2.0 * h + q : 2.0 * h + q + static_cast<double>(m.intermediate) / t;
    const double weights = static_cast<double>(lp.active_matmul) / t;
    traffic += Bytes(3.0 * (tokens * inputs + weights));
  }
  if (mj.task == Task::kQlora) {
    // QLoRA dequantises its 4-bit weights before every GEMM: read ~0.5 bytes, write 2.
    traffic += Bytes(2.5 * static_cast<double>(lp.matmul) / t);
  }
  out.memory = traffic / (gpu.memory_bandwidth * e.hbm);
  return out;
}

// Which GPUs of a group share a node, for groups placed TP innermost, then CP, DP, PP.
Group place(int64_t ranks, int64_t stride, int64_t gpus_per_node) {
  // Ranks of the group are `stride` apart; a node of G GPUs holds max(1, G / stride) of them.
  const int64_t per_node = std::max<int64_t>(1, gpus_per_node / std::max<int64_t>(1, stride));
  return Group{ranks, std::min(ranks, per_node)};
}

std::string gib_text(Bytes b) {
  return fmt::format("{:.1f} GiB", b / GiB(1));
}

}  // namespace

double model_flops_per_token(const Model& m, int64_t seq) {
  double matmul = 0;
  for (const LayerSpan& span : layer_spans(m)) {
    matmul += static_cast<double>(span.count) *
              static_cast<double>(layer_parameters(m, span.first).active_matmul);
  }
  matmul += static_cast<double>(m.vocab * m.hidden);  // the output head (tied or not)
  const double attention = 6.0 * static_cast<double>(m.layers * seq * m.heads * m.head_dim);
  return 6.0 * matmul + attention;
}

Network cluster_network(const Cluster& c, const TrainParams& p) {
  Network n;
  n.gpus_per_node = c.gpus_per_node;
  const Fabric& up = *c.scale_up;
  n.intra_busbw = up.measured_busbw.value_or(up.bandwidth * p.nccl_efficiency);
  n.base_latency = p.collective_latency;
  n.intra_latency = up.latency;
  if (c.scale_out != nullptr) {
    const Fabric& out = *c.scale_out;
    n.nics_per_node = c.nics_per_node;
    n.nic_bandwidth = out.measured_busbw.value_or(out.bandwidth * p.nccl_efficiency);
    n.inter_latency = out.latency;
  }
  return n;
}

TrainEstimate estimate_training(const Model& m, const Cluster& c, const TrainJob& job,
                                const MemoryParams& mp, const TrainParams& p,
                                bool skip_over_memory) {
  TrainEstimate est;
  est.job = job;
  const MemoryJob& mj = job.memory;
  const Parallelism& l = mj.layout;
  const Gpu& gpu = *c.gpu;
  GPUPLAN_CHECK(gpu.efficiency.has_value(), "GPU without efficiency calibration");
  GPUPLAN_CHECK(mj.micro_batch > 0 && l.virtual_stages > 0, "unresolved micro-batch");
  auto infeasible = [&](std::string reason) {
    est.feasible = false;
    est.reason = std::move(reason);
    return est;
  };
  const int64_t cp = job.context_parallel;
  if (l.tp * l.pp * l.dp * cp != c.gpus) {
    return infeasible(fmt::format("tp {} x pp {} x dp {} x cp {} = {} GPUs, not the {} given", l.tp,
                                  l.pp, l.dp, cp, l.tp * l.pp * l.dp * cp, c.gpus));
  }
  if (auto problem = layout_problem(m, mj)) {
    return infeasible(*problem);
  }
  if (mj.seq % cp != 0) {
    return infeasible(
        fmt::format("context parallel {} does not divide the sequence of {} tokens", cp, mj.seq));
  }
  if (job.global_batch % (l.dp * mj.micro_batch) != 0) {
    return infeasible(fmt::format("global batch {} is not a multiple of dp {} x micro-batch {}",
                                  job.global_batch, l.dp, mj.micro_batch));
  }
  const int64_t micro_batches = job.global_batch / (l.dp * mj.micro_batch);
  est.micro_batches = micro_batches;
  if (l.virtual_stages > 1 && micro_batches % l.pp != 0) {
    return infeasible(
        fmt::format("the interleaved schedule needs the {} micro-batches to be a multiple of pp {}",
                    micro_batches, l.pp));
  }

  // Memory, with the pipeline's real number of micro-batches in flight.
  MemoryJob memory_job = mj;
  memory_job.micro_batches = micro_batches;
  memory_job.seq = mj.seq / cp;  // each CP rank keeps the activations of its share
  est.memory = memory_per_gpu(m, memory_job, mp);
  est.usable = gpu.memory_usable;
  est.fits_memory = est.memory.total() <= gpu.memory_usable;
  if (!est.fits_memory && skip_over_memory) {
    return infeasible("does not fit in memory");
  }
  if (!est.fits_memory) {
    est.memory_note =
        fmt::format("the memory model says it needs {} per GPU, {} has {} usable",
                    gib_text(est.memory.total()), gpu.id, gib_text(gpu.memory_usable));
  }

  const Network net = cluster_network(c, p);
  const std::vector<int64_t> layers = stage_layers(m.layers, l.pp);
  const double tokens_mb = static_cast<double>(mj.micro_batch * mj.seq / cp);
  const double t = static_cast<double>(l.tp);

  // Per micro-batch time of the slowest stage: forward + backward (2x forward) + recompute.
  const Group tp_group = place(l.tp, 1, c.gpus_per_node);
  const Bytes tp_bytes = Bytes(tokens_mb * static_cast<double>(m.hidden) * 2.0);
  const Seconds tp_collective = all_reduce_time(tp_bytes, tp_group, net);
  const double tp_per_layer = mj.recompute == Recompute::kFull ? 6.0 : 4.0;  // fwd, bwd, refwd
  const Group cp_group = place(cp, l.tp, c.gpus_per_node);
  // Expert parallelism: dispatch and combine all-to-alls of the routed tokens, forward and
  // backward (and again in a full recompute), per MoE layer; counted with the TP traffic.
  const Group ep_group = place(l.ep, l.tp * cp, c.gpus_per_node);
  const Seconds ep_exchange =
      m.is_moe() && l.ep > 1
          ? all_to_all_time(Bytes(tokens_mb * static_cast<double>(m.moe.experts_per_token) *
                                  static_cast<double>(m.hidden) * 2.0),
                            ep_group, net) *
                (mj.recompute == Recompute::kFull ? 6.0 : 4.0)
          : Seconds(0);
  // Per layer of each kind, once: every layer of a span costs the same.
  struct SpanCost {
    LayerSpan span;
    Seconds fwd, bwd, recompute, cp_comm, ep_comm;
  };
  std::vector<SpanCost> costs;
  for (const LayerSpan& span : layer_spans(m)) {
    const LayerTimes f = layer_forward(m, span.first, gpu, job, p);
    SpanCost sc;
    sc.span = span;
    sc.fwd = f.gemm + f.attention + f.memory;
    // Backward: two GEMMs per forward GEMM (input and weight gradients; LoRA's frozen weights
    // need only the input gradient), ~2.5x the attention forward (FlashAttention-2), twice the
    // elementwise traffic.
    const bool adapters = mj.task == Task::kLora || mj.task == Task::kQlora;
    sc.bwd = f.gemm * (adapters ? 1.0 : 2.0) + f.attention * 2.5 + f.memory * 2.0;
    if (mj.recompute == Recompute::kFull) {
      sc.recompute = sc.fwd;
    } else if (mj.recompute == Recompute::kSelective) {
      sc.recompute = f.attention;
    }
    if (cp > 1) {
      // Ring attention exchanges K and V: an all-gather forward, a reduce-scatter backward,
      // hidden behind the attention kernels (forward and backward) when they are long enough.
      const double kv_gpu =
          static_cast<double>(m.head_dim) * std::max(1.0, static_cast<double>(m.kv_heads) / t);
      const Bytes kv_bytes = Bytes(2.0 * tokens_mb * static_cast<double>(cp) * kv_gpu * 2.0);
      const Seconds exchange = all_gather_time(kv_bytes, cp_group, net) * 2.0;
      sc.cp_comm = Seconds(std::max(0.0, (exchange - f.attention * 3.5).si()));
    }
    const bool moe_span = m.is_moe() && span.first >= m.moe.dense_layers;
    sc.ep_comm = moe_span ? ep_exchange : Seconds(0);
    costs.push_back(sc);
  }
  // Output head and its backward on the last stage: 3 x 2 T h V / t.
  const Efficiency& eff = *gpu.efficiency;
  const FlopsPerSecond head_peak =
      gpu.peak_for(Precision::kBf16)
          .value_or(gpu.peak_for(Precision::kFp16).value_or(FlopsPerSecond(1)));
  const Seconds head = gemm_time(2.0 * tokens_mb * static_cast<double>(m.hidden * m.vocab) / t,
                                 head_peak, eff.gemm, eff.gemm_half);

  Seconds slowest_compute;
  Seconds slowest_recompute;
  Seconds slowest_tp;
  Seconds slowest_cp;
  Seconds slowest_backward;
  int64_t first = 0;
  for (size_t s = 0; s < layers.size(); ++s) {
    Seconds compute;
    Seconds recompute;
    Seconds backward;
    Seconds cp_comm;
    Seconds tp_comm = tp_collective * (tp_per_layer * static_cast<double>(layers[s]));
    for (const SpanCost& sc : costs) {
      const double n = static_cast<double>(layers_in_span(sc.span, first, layers[s]));
      compute += (sc.fwd + sc.bwd + sc.recompute) * n;
      recompute += sc.recompute * n;
      backward += sc.bwd * n;
      cp_comm += sc.cp_comm * n;
      tp_comm += sc.ep_comm * n;
    }
    if (s + 1 == layers.size()) {
      compute += head * 3.0;
      backward += head * 2.0;
    }
    if ((compute + tp_comm + cp_comm) > (slowest_compute + slowest_tp + slowest_cp)) {
      slowest_compute = compute;
      slowest_recompute = recompute;
      slowest_tp = tp_comm;
      slowest_cp = cp_comm;
      slowest_backward = backward;
    }
    first += layers[s];
  }
  const double m_count = static_cast<double>(micro_batches);
  const Seconds per_mb = slowest_compute + slowest_tp + slowest_cp;
  StepTime& st = est.step;
  st.compute = slowest_compute * m_count;
  st.recompute = slowest_recompute * m_count;
  st.tp_comm = slowest_tp * m_count;
  st.cp_comm = slowest_cp * m_count;
  // Pipeline: bubble (p-1)/v micro-batch times (Narayanan et al. 2021, sec. 2.2); one send and
  // one receive per micro-batch and stage boundary, v times as many boundaries interleaved.
  if (l.pp > 1) {
    const double v = static_cast<double>(l.virtual_stages);
    st.bubble = per_mb * (static_cast<double>(l.pp - 1) / v);
    const Bytes boundary =
        Bytes(tokens_mb * static_cast<double>(m.hidden) * 2.0 / (l.sequence_parallel ? t : 1.0));
    const bool crosses = l.tp * cp * l.dp >= c.gpus_per_node;
    const Seconds hop = send_recv_time(boundary, crosses, net);
    st.pp_comm = hop * (2.0 * v * (m_count + static_cast<double>(l.pp - 1)));
  }
  // Data parallelism.
  // Routed experts synchronise over dp / ep ranks, everything else over dp; LoRA synchronises
  // and updates its adapters only.
  const bool adapters = mj.task == Task::kLora || mj.task == Task::kQlora;
  const double params_gpu =
      adapters ? est.memory.trainable : est.memory.parameters - est.memory.expert_parameters;
  const double expert_params = adapters ? 0.0 : est.memory.expert_parameters;
  const Group expert_dp = place(l.dp / l.ep, l.tp * cp * l.ep, c.gpus_per_node);
  const Group dp_group = place(l.dp, l.tp * cp, c.gpus_per_node);
  const double grad_bytes = mj.precision == Precision::kFp16 ? 2.0 : 4.0;
  if (l.dp > 1) {
    if (l.zero <= 2) {
      Seconds sync;
      auto sync_of = [&](double params, const Group& g) {
        if (l.zero == 0) {
          return all_reduce_time(Bytes(params * grad_bytes), g, net);
        }
        // Distributed optimizer: reduce-scatter the gradients, all-gather the new weights.
        return reduce_scatter_time(Bytes(params * grad_bytes), g, net) +
               all_gather_time(Bytes(params * 2.0), g, net);
      };
      sync = sync_of(params_gpu, dp_group) + sync_of(expert_params, expert_dp);
      const Seconds hidden = slowest_backward * p.dp_overlap;
      st.dp_comm = Seconds(std::max(0.0, (sync - hidden).si()));
    } else {
      // ZeRO-3 / FSDP: weights gathered for the forward, again for the backward (and the
      // recompute), gradients reduce-scattered, for every micro-batch.
      const double gathers = mj.recompute == Recompute::kFull ? 3.0 : 2.0;
      // Each rank gathers and scatters over its own rail: a GPU's traffic is limited to its
      // share of the node's NICs (docs/FORMULAS.md#zero3).
      const Group rail{l.dp, 1};
      const Group& z3 = dp_group.nodes() > 1 ? rail : dp_group;
      // Every resident weight is gathered (LoRA's frozen base too); only the trained ones have
      // gradients to scatter.
      const double gathered = est.memory.parameters;
      const double trained = params_gpu + expert_params;
      const Seconds per_mb_comm = all_gather_time(Bytes(gathered * 2.0), z3, net) * gathers +
                                  reduce_scatter_time(Bytes(trained * grad_bytes), z3, net);
      const Seconds traffic = per_mb_comm * m_count;
      const Seconds hidden = st.compute * p.zero3_overlap;
      st.dp_comm = Seconds(std::max(0.0, (traffic - hidden).si()));
    }
  }
  // Optimizer: Adam reads and writes fp32 master weights, two moments and the gradient, and
  // writes the 16-bit weights: ~30 bytes per parameter it owns.
  const double owned =
      l.zero >= 1 ? params_gpu / static_cast<double>(l.dp) +
                        expert_params * static_cast<double>(l.ep) / static_cast<double>(l.dp)
                  : params_gpu + expert_params;
  st.optimizer = Bytes(owned * 30.0) / (gpu.memory_bandwidth * gpu.efficiency->hbm);
  st.overhead = p.step_overhead;

  const Seconds step = st.total();
  const double tokens_step = static_cast<double>(job.global_batch * mj.seq);
  est.tokens_per_s = tokens_step / step.si();
  // LoRA trains no base weight: its backward computes input gradients only, 2/3 of the work.
  const double model_flops =
      model_flops_per_token(m, mj.seq) * tokens_step * (adapters ? 2.0 / 3.0 : 1.0);
  const double gpus = static_cast<double>(c.gpus);
  est.model_flops_per_gpu = Flops(model_flops / gpus) / step;
  const double recompute_share = (st.compute.si() > 0) ? st.recompute / st.compute : 0.0;
  est.hardware_flops_per_gpu =
      est.model_flops_per_gpu * (1.0 / std::max(1e-9, 1.0 - recompute_share));
  const Precision peak_precision =
      mj.precision == Precision::kFp8 && gpu.peak_for(Precision::kFp8)
          ? Precision::kFp8
          : (gpu.peak_for(Precision::kBf16) ? Precision::kBf16 : Precision::kFp16);
  const double peak = gpu.peak_for(peak_precision)->si();
  est.mfu = est.model_flops_per_gpu.si() / peak;
  est.hfu = est.hardware_flops_per_gpu.si() / peak;
  if (job.tokens > 0) {
    est.time_to_train = step * (job.tokens / tokens_step);
    est.gpu_hours = est.time_to_train.si() / 3600.0 * gpus;
    est.energy_joules = est.time_to_train.si() * gpu.tdp.si() * gpus;
    if (job.price_per_gpu_hour) {
      est.cost =
          Money{job.price_per_gpu_hour->amount * est.gpu_hours, job.price_per_gpu_hour->currency};
    }
  }
  est.feasible = true;
  return est;
}

TrainEstimate best_training(const Model& m, const Cluster& c, const TrainJob& job,
                            const MemoryParams& mp, const TrainParams& p, MemoryPolicy policy) {
  const Parallelism& l = job.memory.layout;
  std::vector<int64_t> micro_batches;
  if (job.memory.micro_batch > 0) {
    micro_batches.push_back(job.memory.micro_batch);
  } else {
    const int64_t per_replica = l.dp > 0 ? job.global_batch / l.dp : 0;
    for (int64_t b = 1; b <= std::max<int64_t>(1, per_replica); ++b) {
      if (per_replica % b == 0) {
        micro_batches.push_back(b);
      }
    }
  }
  std::vector<int64_t> virtual_stages;
  if (l.virtual_stages > 0) {
    virtual_stages.push_back(l.virtual_stages);
  } else {
    virtual_stages.push_back(1);
    for (int64_t v = 2; l.pp > 1 && l.pp * v <= m.layers; ++v) {
      virtual_stages.push_back(v);
    }
  }
  TrainEstimate best;
  best.reason = "no micro-batch size divides the batch";
  for (int64_t b : micro_batches) {
    for (int64_t v : virtual_stages) {
      TrainJob candidate = job;
      candidate.memory.micro_batch = b;
      candidate.memory.layout.virtual_stages = v;
      TrainEstimate e = estimate_training(m, c, candidate, mp, p);
      if (!e.feasible) {
        if (!best.feasible) {
          best.reason = e.reason;
          best.job = candidate;
        }
        continue;
      }
      // kRequire: a candidate that fits in memory beats one that does not, then the faster
      // wins. kReport: the faster wins; the memory verdict is only reported.
      const bool faster = e.step.total() < best.step.total();
      const bool better =
          !best.feasible ||
          (policy == MemoryPolicy::kReport ? faster
                                           : (e.fits_memory && !best.fits_memory) ||
                                                 (e.fits_memory == best.fits_memory && faster));
      if (better) {
        best = std::move(e);
      }
    }
  }
  return best;
}

}  // namespace gpuplan
