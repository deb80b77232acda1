#include "gpuplan/training.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "gpuplan/gemm.h"
#include "layer_gemms.h"
#include "training_model.h"

namespace gpuplan {
namespace {

// Which GPUs of a group share a node, for groups placed TP innermost, then CP, DP, PP.
Group place(int64_t ranks, int64_t stride, int64_t gpus_per_node) {
  // Ranks of the group are `stride` apart; a node of G GPUs holds max(1, G / stride) of them.
  const int64_t per_node = std::max<int64_t>(1, gpus_per_node / std::max<int64_t>(1, stride));
  return Group{ranks, std::min(ranks, per_node)};
}

std::string gib_text(Bytes b) {
  return fmt::format("{:.1f} GiB", b / GiB(1));
}

Seconds positive(Seconds s) {
  return Seconds(std::max(0.0, s.si()));
}

// Communication `comm` that the software hides behind `compute`: what does not fit under it is
// exposed, and what does still slows that compute by `slowdown` of its own time
// (docs/FORMULAS.md#overlap).
Seconds overlapped(Seconds comm, Seconds compute, double slowdown) {
  const Seconds hidden = std::min(comm, compute);
  return positive(comm - compute) + hidden * slowdown;
}

// Per micro-batch, on the slowest stage: compute and the exposed communication that sits inside
// the micro-batch (TP, CP, EP, ZeRO-3), split as StepTime reports them.
struct StageCost {
  Seconds compute, recompute, forward, backward;  // forward and backward include recompute
  Seconds accumulate;  // of compute and backward: adding the gradients to the earlier ones'
  Seconds tp, ep, cp, zero3;
  Seconds total() const { return compute + tp + ep + cp + zero3; }
};

// HBM bytes per trained parameter and micro-batch that adding a micro-batch's weight gradients
// to the earlier ones' streams (framework.h, GradAccumulation), over m micro-batches.
double accumulation_bytes(GradAccumulation g, double weight_bytes, double m) {
  constexpr double kSixteenBit = 2.0;  // the gradient the weight-gradient GEMM writes
  constexpr double kFp32 = 4.0;        // an fp32 accumulator or temporary
  switch (g) {
    case GradAccumulation::kFused:
      return 0.0;
    case GradAccumulation::kAutograd:
      // .grad += new, in the parameters' format: both read, .grad written; the first
      // micro-batch's gradient is stored as it comes.
      return 3.0 * weight_bytes * (m - 1.0) / m;
    case GradAccumulation::kHook:
      // main_grad += grad: the 16-bit gradient read, the fp32 main_grad read and written.
      return kSixteenBit + 2.0 * kFp32;
    case GradAccumulation::kFp32Copy:
      // The cast reads the 16-bit gradient and writes an fp32 temporary; the add reads it and
      // reads and writes the fp32 gradient.
      return kSixteenBit + kFp32 + kFp32 + 2.0 * kFp32;
  }
  return 0.0;
}

}  // namespace

void apply_software(TrainJob& job, const Software& software) {
  job.software = software;
  apply_software(job.memory, software);
}

bool ep_comm_overlapped(const TrainJob& job) {
  // Megatron-Core pairs one micro-batch's forward with another's backward to hide the MoE
  // all-to-alls; with pipeline parallelism only in the interleaved schedule.
  const Parallelism& l = job.memory.layout;
  return job.software.framework != nullptr && job.software.ep_comm_overlap() && l.ep > 1 &&
         (l.pp == 1 || l.virtual_stages > 1);
}

GradAccumulation grad_accumulation(const TrainJob& job) {
  const Software& sw = job.software;
  const Framework* f = sw.framework;
  if (f == nullptr || job.memory.layout.zero >= f->gradient_sharding_stage) {
    return GradAccumulation::kFused;
  }
  const GradAccumulation g = bf16_mixed_precision(job.memory) && f->grad_accumulation_bf16
                                 ? *f->grad_accumulation_bf16
                                 : f->grad_accumulation;
  // The fused GEMM epilogue replaces the hook: both add into an fp32 main_grad.
  return g == GradAccumulation::kHook && sw.since(f->grad_accumulation_fused_since)
             ? GradAccumulation::kFused
             : g;
}

AttentionKernels attention_kernels(const Gpu& gpu, const TrainJob& job) {
  if (!job.memory.flash_attention) {
    return AttentionKernels::kEager;
  }
  return job.software.framework != nullptr && job.software.native_attention(gpu.architecture)
             ? AttentionKernels::kNative
             : AttentionKernels::kFused;
}

bool native_attention_kernels(const Gpu& gpu, const TrainJob& job) {
  return native_attention_rate(gpu, attention_kernels(gpu, job));
}

double model_flops_per_token(const Model& m, int64_t seq) {
  double matmul = 0;
  for (const LayerSpan& span : layer_spans(m)) {
    matmul += static_cast<double>(span.count) *
              static_cast<double>(layer_parameters(m, span.first).active_matmul);
  }
  matmul += static_cast<double>(m.vocab * m.hidden);  // the output head (tied or not)
  const double attention =
      6.0 * static_cast<double>(m.layers * seq * m.heads * m.head_dim) * attended_share(m, seq);
  return 6.0 * matmul + attention;
}

namespace {

enum class Interleaving { kRuns, kNeedsStages, kEngineCannot, kUneven, kTooManyChunks };

// Whether Megatron splits the model into pp x v chunks of equal layers: the transformer layers
// alone, or, where the software can count them (Framework::pipeline_embedding_layers_since), with
// the embedding and the loss as one layer each, so that the first and last stage hold one
// transformer layer fewer (stage_layer_count's split of the two missing layers).
bool megatron_chunks(const Model& m, int64_t pp, int64_t v, const Software& sw) {
  const int64_t chunks = pp * v;
  return m.layers % chunks == 0 || (sw.pipeline_embedding_layers() && (m.layers + 2) % chunks == 0);
}

// The interleaving rule: each engine's, once.
Interleaving interleaving_rule(const Model& m, int64_t pp, int64_t v, const Software& sw) {
  if (v <= 1) {
    return Interleaving::kRuns;
  }
  if (pp <= 1) {
    return Interleaving::kNeedsStages;
  }
  switch (sw.pipeline()) {
    case PipelineEngine::kDeepSpeed:
      return Interleaving::kEngineCannot;
    case PipelineEngine::kMegatron:
      if (megatron_chunks(m, pp, v, sw)) {
        return Interleaving::kRuns;
      }
      if (sw.custom_pipeline_layout()) {
        // A custom layout gives each chunk any layers, the embedding or the loss.
        return pp * v > m.layers + 2 ? Interleaving::kTooManyChunks : Interleaving::kRuns;
      }
      return Interleaving::kUneven;
    case PipelineEngine::kCustom:
      return pp * v > m.layers ? Interleaving::kTooManyChunks : Interleaving::kRuns;
  }
  return Interleaving::kRuns;
}

}  // namespace

bool interleaving_allowed(const Model& m, int64_t pp, int64_t v, const Software& sw) {
  return interleaving_rule(m, pp, v, sw) == Interleaving::kRuns;
}

std::optional<std::string> software_layout_problem(const TrainJob& job) {
  const Software& sw = job.software;
  const Parallelism& l = job.memory.layout;
  if (sw.pipeline() == PipelineEngine::kDeepSpeed && l.pp > 1 && l.zero >= 2) {
    // deepspeed/runtime/pipe/engine.py asserts it (since April 2021, DeepSpeed #980).
    return std::string(
        "DeepSpeed's pipeline engine runs ZeRO 0-1 only: ZeRO-2 and ZeRO-3 are incompatible "
        "with pipeline parallelism");
  }
  if (sw.framework == nullptr) {
    return std::nullopt;
  }
  auto missing = [&](std::string_view what, int64_t since) {
    if (since <= 0) {
      return fmt::format("{} has no {}", sw.framework->id, what);
    }
    return fmt::format("{} as of {} has no {} (it came in {})", sw.framework->id, sw.year, what,
                       since);
  };
  if (l.cp > 1 && !sw.context_parallel()) {
    return missing("context parallelism", sw.framework->context_parallel_since);
  }
  if (l.sequence_parallel && l.tp > 1 && !sw.sequence_parallel()) {
    return missing("sequence parallelism", sw.framework->sequence_parallel_since);
  }
  if (job.memory.recompute == Recompute::kSelective && !sw.selective_recompute()) {
    return missing("selective recompute", sw.framework->selective_recompute_since);
  }
  if (l.zero >= 1 && !sw.zero_stage(l.zero)) {
    return missing(fmt::format("ZeRO-{}", l.zero),
                   (*sw.framework->zero_since)[static_cast<size_t>(l.zero - 1)]);
  }
  return std::nullopt;
}

int64_t nearest_global_batch(int64_t given, int64_t unit) {
  const int64_t down = given / unit * unit;
  return down == 0 || given - down > down + unit - given ? down + unit : down;
}

std::optional<std::string> interleaving_problem(const Model& m, int64_t pp, int64_t v,
                                                const Software& sw) {
  switch (interleaving_rule(m, pp, v, sw)) {
    case Interleaving::kRuns:
      return std::nullopt;
    case Interleaving::kNeedsStages:
      return fmt::format("{} virtual stages need more than one pipeline stage", v);
    case Interleaving::kEngineCannot:
      return std::string("DeepSpeed's pipeline engine does not interleave (virtual stages 1)");
    case Interleaving::kUneven:
      if (sw.pipeline_embedding_layers()) {
        return fmt::format(
            "Megatron interleaves only when the {} layers, alone or with the embedding and the "
            "loss, divide into pp {} x {} virtual stages",
            m.layers, pp, v);
      }
      return fmt::format(
          "Megatron interleaves only when the {} layers divide into pp {} x {} virtual stages",
          m.layers, pp, v);
    case Interleaving::kTooManyChunks:
      if (sw.pipeline() == PipelineEngine::kMegatron) {
        return fmt::format(
            "pp {} x {} virtual stages exceed the {} layers with the embedding and the loss", pp, v,
            m.layers);
      }
      return fmt::format("pp {} x {} virtual stages exceed the {} layers", pp, v, m.layers);
  }
  return std::nullopt;
}

TrainEstimate estimate_training(const Model& m, const Cluster& c, const TrainJob& job,
                                const MemoryParams& mp, const TrainParams& p,
                                EstimateOptions options) {
  detail::SearchShortcut none;
  return detail::estimate_training_with(m, c, job, mp, p, options, none);
}

TrainEstimate detail::estimate_training_with(const Model& m, const Cluster& c, const TrainJob& job,
                                             const MemoryParams& mp, const TrainParams& p,
                                             EstimateOptions options, SearchShortcut& shortcut) {
  shortcut.beaten = false;
  std::optional<StepWork>* work = &shortcut.work;
  TrainEstimate est;
  est.job = job;
  const MemoryJob& mj = job.memory;
  const Parallelism& l = mj.layout;
  const Gpu& gpu = *c.gpu;
  if (native_attention_kernels(gpu, job)) {
    est.native_attention = gpu.architecture;
  }
  GPUPLAN_CHECK(gpu.efficiency.has_value() && gpu.tiles.has_value(),
                "GPU without efficiency calibration");
  GPUPLAN_CHECK(mj.micro_batch > 0 && l.virtual_stages > 0, "unresolved micro-batch");
  // Marks the estimate infeasible; the sentence is written only when asked for.
  auto reject = [&](Why why, auto&& words) {
    est.feasible = false;
    est.why = why;
    if (options.reasons) {
      est.reason = words();
    }
  };
  const int64_t cp = l.cp;
  if (auto problem = gpus_problem(l, c.gpus)) {
    reject(Why::kLayout, [&] { return *problem; });
    return est;
  }
  if (auto problem = layout_problem(m, mj)) {
    reject(Why::kLayout, [&] { return *problem; });
    return est;
  }
  if (auto problem = training_precision_problem(gpu, mj)) {
    reject(Why::kCalibration, [&] { return *problem; });
    return est;
  }
  if (options.software_layouts) {
    if (auto problem = software_layout_problem(job)) {
      reject(Why::kLayout, [&] { return *problem; });
      return est;
    }
  }
  const PipelineEngine engine = job.software.pipeline();
  if (!interleaving_allowed(m, l.pp, l.virtual_stages, job.software)) {
    reject(Why::kLayout,
           [&] { return *interleaving_problem(m, l.pp, l.virtual_stages, job.software); });
    return est;
  }
  if (mj.seq % cp != 0) {
    reject(Why::kLayout, [&] {
      return fmt::format("context parallel {} does not divide the sequence of {} tokens", cp,
                         mj.seq);
    });
    return est;
  }
  if (job.global_batch % (l.dp * mj.micro_batch) != 0) {
    reject(Why::kLayout, [&] {
      return fmt::format(
          "global batch {} is not a multiple of dp {} x micro-batch {}; the nearest that is: {}",
          job.global_batch, l.dp, mj.micro_batch,
          nearest_global_batch(job.global_batch, l.dp * mj.micro_batch));
    });
    return est;
  }
  const int64_t micro_batches = job.global_batch / (l.dp * mj.micro_batch);
  est.micro_batches = micro_batches;
  if (l.virtual_stages > 1 && micro_batches % l.pp != 0) {
    reject(Why::kLayout, [&] {
      return fmt::format(
          "the interleaved schedule needs the {} micro-batches to be a multiple of pp {}",
          micro_batches, l.pp);
    });
    return est;
  }

  // A search's bound (SearchShortcut): the slowest stage by compute alone, summed as the stage
  // loop below sums it, times the micro-batches, and the overhead is the least the step takes.
  if (!shortcut.breaks) {
    shortcut.breaks = stage_breaks(m, l.pp);
  }
  const StageBreaks& breaks = *shortcut.breaks;
  auto beaten = [&] {
    if (!(shortcut.bound.si() < std::numeric_limits<double>::infinity())) {
      return false;
    }
    if (!work->has_value()) {
      *work = detail::step_work(m, gpu, job, p);
    }
    Seconds most;
    for (const StageSpan& s : breaks) {
      Seconds compute;
      size_t i = 0;
      for (const LayerSpan& span : layer_spans(m)) {
        compute += (*work)->spans[i++].total() *
                   static_cast<double>(layers_in_span(span, s.first, s.count));
      }
      if (s.stage + 1 == l.pp) {
        compute += (*work)->head.total();
      }
      most = std::max(most, compute);
    }
    const Seconds floor = most * static_cast<double>(micro_batches) + p.step_overhead;
    // A margin for the rounding of sums the step time adds in another order.
    shortcut.beaten = floor > shortcut.bound * (1.0 + 1e-9);
    return shortcut.beaten;
  };
  if (shortcut.bound_before_memory && beaten()) {
    return est;
  }

  // Memory, with the pipeline's real number of micro-batches in flight.
  MemoryJob memory_job = mj;
  memory_job.micro_batches = micro_batches;
  memory_job.seq = mj.seq / cp;  // each CP rank keeps the activations of its share
  if (!shortcut.parameters) {
    shortcut.parameters = count_parameters(m);
  }
  est.memory = memory_per_gpu(m, memory_job, mp, breaks, *shortcut.parameters);
  est.usable = gpu.memory_usable;
  est.fits_memory = est.memory.total() <= gpu.memory_usable;
  if (!est.fits_memory && options.skip_over_memory) {
    reject(Why::kMemory, [] { return std::string("does not fit in memory"); });
    return est;
  }
  if (!est.fits_memory) {
    est.memory_note =
        fmt::format("the memory model says it needs {} per GPU, {} has {} usable",
                    gib_text(est.memory.total()), gpu.id, gib_text(gpu.memory_usable));
  }

  const Software& sw = job.software;
  const bool framework = sw.framework != nullptr;
  const double kappa = p.overlap_slowdown;
  const Network net = cluster_network(c, p);
  const double rows = static_cast<double>(mj.micro_batch * mj.seq / cp);
  const double t = static_cast<double>(l.tp);
  const double h = static_cast<double>(m.hidden);
  const bool recompute_full = mj.recompute == Recompute::kFull;

  // Tensor parallelism: two all-reduces of the layer's activations forward, two backward (and
  // two more in a full recompute); with sequence parallelism the same volume as all-gathers and
  // reduce-scatters.
  const Group tp_group = place(l.tp, 1, c.gpus_per_node);
  const Bytes activation = Bytes(rows * h * 2.0);
  const Seconds tp_collective = l.sequence_parallel
                                    ? all_gather_time(activation, tp_group, net) +
                                          reduce_scatter_time(activation, tp_group, net)
                                    : all_reduce_time(activation, tp_group, net);
  const double tp_passes = recompute_full ? 6.0 : 4.0;
  const bool tp_overlap = framework && sw.tp_comm_overlap();
  const bool ep_overlap = ep_comm_overlapped(job);
  // Context parallelism: ring attention passes K and V around the cp ranks, cp - 1 steps each
  // way, each step hidden behind that step's share of the attention kernels; the backward
  // passes K, V and their gradients (twice the bytes).
  const Group cp_group = place(cp, l.tp, c.gpus_per_node);
  const double kv_width = static_cast<double>(std::max<int64_t>(1, m.kv_heads / l.tp) * m.head_dim);
  const Bytes kv_block = Bytes(2.0 * rows * kv_width * 2.0);
  const bool cp_crosses = cp_group.nodes() > 1;
  const Seconds cp_step = send_recv_time(kv_block, cp_crosses, net);
  // Expert parallelism: dispatch and combine all-to-alls of the routed tokens, forward and
  // backward (and again in a full recompute), per MoE layer, over the ep ranks (etp apart) that
  // hold different experts. Each GPU receives the rows its experts compute: rows x k x etp / t.
  const int64_t etp = l.expert_tp();
  const Group ep_group = place(l.ep, etp, c.gpus_per_node);
  const Seconds ep_exchange =
      m.is_moe() && l.ep > 1
          ? all_to_all_time(Bytes(rows * detail::routed_per_token(m, {l.tp, l.ep, etp}) * h * 2.0),
                            ep_group, net) *
                (recompute_full ? 6.0 : 4.0)
          : Seconds(0);
  // ZeRO-3 / FSDP: per layer, the 16-bit weights are all-gathered for the forward and again
  // for the backward, and the gradients reduce-scattered, over the data-parallel group (all its
  // NICs), in buckets of the framework's size (FSDP: one layer per collective).
  const Group dp_group = place(l.dp * cp, l.tp, c.gpus_per_node);
  const bool zero3 = l.zero >= 3 && l.dp > 1;
  const bool prefetch = framework && sw.zero3_prefetch();
  auto zero3_layer = [&](double params_gpu, double params_layer, Seconds& gather,
                         Seconds& scatter) {
    const double bucket = framework ? sw.framework->zero3_bucket_params : 0.0;
    const double collectives = bucket > 0 ? std::max(1.0, std::ceil(params_layer / bucket)) : 1.0;
    const Bytes weights = Bytes(params_gpu * 2.0 / collectives);
    const Bytes grads = Bytes(params_gpu * gradient_buffer_bytes(mj) / collectives);
    gather = all_gather_time(weights, dp_group, net) * collectives;
    scatter = reduce_scatter_time(grads, dp_group, net) * collectives;
  };

  // Per layer kind, once: every layer of a span costs the same.
  struct SpanCost {
    LayerSpan span;
    detail::LayerWork work;
    Seconds tp, ep, cp, zero3;
  };
  std::array<SpanCost, 2> costs;  // the first `spans` are set
  size_t spans = 0;
  if (!work->has_value()) {
    *work = detail::step_work(m, gpu, job, p);
  }
  if (!shortcut.bound_before_memory && beaten()) {
    return est;
  }
  for (const LayerSpan& span : layer_spans(m)) {
    SpanCost sc;
    sc.span = span;
    sc.work = (*work)->spans[spans];
    const detail::LayerWork& w = sc.work;
    const Seconds tp_comm = tp_collective * tp_passes;
    sc.tp = tp_overlap ? overlapped(tp_comm, w.gemm_forward + w.gemm_backward, kappa) : tp_comm;
    const bool moe_span = m.is_moe() && span.first >= m.moe.dense_layers;
    sc.ep = moe_span ? ep_exchange : Seconds(0);
    if (moe_span && ep_overlap) {
      // Batch-level overlap: one micro-batch's all-to-alls run under another's forward and
      // backward (docs/FORMULAS.md#parallelism).
      sc.ep = overlapped(ep_exchange, w.total(), kappa);
    }
    if (cp > 1) {
      const double steps = static_cast<double>(cp - 1);
      const double share = static_cast<double>(cp);
      const Seconds fwd = overlapped(cp_step, w.attention_forward / share, kappa) * steps;
      const Seconds bwd = overlapped(cp_step * 2.0, w.attention_backward / share, kappa) * steps;
      sc.cp = fwd + bwd + (recompute_full ? fwd : Seconds(0));
    }
    if (zero3) {
      const LayerParameters lp = layer_parameters(m, span.first);
      const double params_layer = static_cast<double>(lp.total());
      const double params_gpu = params_layer / t;
      Seconds gather, scatter;
      zero3_layer(params_gpu, params_layer, gather, scatter);
      const double live = framework ? sw.framework->zero3_max_live_params : 0.0;
      if (prefetch && (live <= 0 || 2.0 * params_layer <= live)) {
        // The next layer's gather runs under this layer's forward; its backward gather and the
        // previous layer's reduce-scatter under this layer's backward.
        sc.zero3 = overlapped(gather, w.forward(), kappa) +
                   overlapped(gather + scatter, w.backward() + w.recompute, kappa);
      } else {
        sc.zero3 = gather * 2.0 + scatter;
      }
    }
    costs[spans++] = sc;
  }
  const detail::LayerWork& head = (*work)->head;

  // Stages of one shape (stage_breaks) cost the same: the slowest sets the pace, and the first
  // of the slowest shape is reported.
  StageCost slowest;
  for (const StageSpan& s : breaks) {
    StageCost st;
    for (size_t i = 0; i < spans; ++i) {
      const SpanCost& sc = costs[i];
      const double n = static_cast<double>(layers_in_span(sc.span, s.first, s.count));
      st.compute += sc.work.total() * n;
      st.recompute += sc.work.recompute * n;
      st.forward += sc.work.forward() * n;
      st.backward += (sc.work.backward() + sc.work.recompute) * n;
      st.tp += sc.tp * n;
      st.ep += sc.ep * n;
      st.cp += sc.cp * n;
      st.zero3 += sc.zero3 * n;
    }
    if (s.stage + 1 == l.pp) {
      st.compute += head.total();
      st.forward += head.forward();
      st.backward += head.backward();
    }
    if (st.total() > slowest.total()) {
      slowest = st;
    }
  }
  const double m_count = static_cast<double>(micro_batches);
  // Gradient accumulation: a pass over the rank's trained parameters in each micro-batch's
  // backward, at the achieved HBM bandwidth, where the framework's own kernels add the new
  // gradients to the earlier ones' (docs/FORMULAS.md#gradient-accumulation).
  const double accumulate_bytes =
      accumulation_bytes(grad_accumulation(job), mj.weight_bytes, m_count);
  if (accumulate_bytes > 0) {
    slowest.accumulate = Bytes(est.memory.trainable * accumulate_bytes) /
                         (gpu.memory_bandwidth * gpu.efficiency->hbm);
    slowest.compute += slowest.accumulate;
    slowest.backward += slowest.accumulate;
  }
  const Seconds per_mb = slowest.total();
  StepTime& step = est.step;
  step.compute = slowest.compute * m_count;
  step.recompute = slowest.recompute * m_count;
  step.grad_accumulation = slowest.accumulate * m_count;
  step.tp_comm = slowest.tp * m_count;
  step.ep_comm = slowest.ep * m_count;
  step.cp_comm = slowest.cp * m_count;
  step.dp_comm = slowest.zero3 * m_count;

  // Pipeline: bubble (p-1)/v micro-batch times (Narayanan et al. 2021, sec. 2.2); one send and
  // one receive per micro-batch and stage boundary, v times as many boundaries interleaved, on
  // the critical path.
  if (l.pp > 1) {
    const double v = static_cast<double>(l.virtual_stages);
    step.bubble = per_mb * (static_cast<double>(l.pp - 1) / v);
    // Megatron scatters a boundary activation over the TP group (each rank sends 1/t, the next
    // stage all-gathers it over NVLink) when sequence parallelism has not split it already;
    // DeepSpeed's engine sends the whole activation from every rank.
    const bool scatter = engine != PipelineEngine::kDeepSpeed && l.tp > 1;
    const Bytes boundary = activation / (l.sequence_parallel || scatter ? t : 1.0);
    const bool crosses = l.tp * cp * l.dp >= c.gpus_per_node;
    Seconds hop = send_recv_time(boundary, crosses, net);
    if (scatter && !l.sequence_parallel) {
      hop += all_gather_time(activation, tp_group, net);
    }
    // Megatron pairs each send with the receive it waits for (send_forward_recv_backward); the
    // DeepSpeed engine runs SendActivation, RecvActivation, SendGrad and RecvGrad as separate
    // blocking instructions, four transfers per micro-batch and boundary instead of two.
    const double per_boundary = engine == PipelineEngine::kDeepSpeed ? 4.0 : 2.0;
    step.pp_comm = hop * (per_boundary * v * (m_count + static_cast<double>(l.pp - 1)));
  }
  // Data parallelism (ZeRO 0-2): the gradients are all-reduced (ZeRO 0) or reduce-scattered and
  // the new weights all-gathered (ZeRO 1, 2) over the dp x cp ranks; routed experts over their
  // own, smaller group. What the software overlaps hides behind the last micro-batch's backward
  // (gradients) and the first one's forward (weights).
  const bool adapters = trains_adapters(mj.task);
  const double params_gpu =
      adapters ? est.memory.trainable : est.memory.parameters - est.memory.expert_parameters;
  const double expert_params = adapters ? 0.0 : est.memory.expert_parameters;
  const Group expert_dp = place(l.expert_dp(), etp * l.ep, c.gpus_per_node);
  if (l.dp * cp > 1 && !zero3) {
    Seconds grads, weights;
    auto sync = [&](double params, const Group& g) {
      if (g.ranks <= 1) {
        return;
      }
      const Bytes gb = Bytes(params * gradient_buffer_bytes(mj));
      if (l.zero == 0) {
        grads += all_reduce_time(gb, g, net);
      } else {
        grads += reduce_scatter_time(gb, g, net);
        weights += all_gather_time(Bytes(params * 2.0), g, net);
      }
    };
    sync(params_gpu, dp_group);
    sync(expert_params, expert_dp);
    const bool hide_grads = framework && sw.overlap_grad_reduce();
    const bool hide_weights = framework && sw.overlap_param_gather();
    step.dp_comm += hide_grads ? overlapped(grads, slowest.backward, kappa) : grads;
    step.dp_comm += hide_weights ? overlapped(weights, slowest.forward, kappa) : weights;
  } else if (zero3) {
    // ZeRO-3 shards the optimizer too: nothing left to synchronise at the step's end but the
    // first layer's gather, which nothing hides.
    const double params_layer = static_cast<double>(layer_parameters(m, 0).total());
    Seconds gather, scatter;
    zero3_layer(params_layer / t, params_layer, gather, scatter);
    step.dp_comm += gather * m_count;
  }
  // Optimizer: Adam streams adam_bytes per parameter the rank owns (fp32 master weights, two
  // moments and the gradient read and written, 16-bit weights written) at the achieved HBM
  // bandwidth; ZeRO >= 1 owns 1 / (dp x cp) of them.
  const double shards = static_cast<double>(l.dp * cp);
  const double owned =
      l.zero >= 1 ? params_gpu / shards + expert_params / static_cast<double>(l.expert_dp())
                  : params_gpu + expert_params;
  // adam_bytes counts two fp32 moments read and written; other optimizers stream their own.
  const double update_bytes = p.adam_bytes - 16.0 + 2.0 * optimizer_moment_bytes(mj.optimizer);
  if (mj.offload_optimizer) {
    // ZeRO-Offload: the gradients go down to the host and the 16-bit weights come back over the
    // GPU's PCIe link, and the update streams through host memory, shared by the node's GPUs.
    const BytesPerSecond link =
        p.host_link[static_cast<size_t>(std::clamp<int64_t>(gpu.pcie_gen, 3, 6))];
    const BytesPerSecond host = p.host_memory_bandwidth / static_cast<double>(c.gpus_per_node);
    step.optimizer = Bytes(owned * (gradient_buffer_bytes(mj) + 2.0)) / link +
                     Bytes(owned * update_bytes) / host;
  } else {
    step.optimizer = Bytes(owned * update_bytes) / (gpu.memory_bandwidth * gpu.efficiency->hbm);
  }
  step.overhead = p.step_overhead;

  const Seconds total = step.total();
  const double tokens_step = static_cast<double>(job.global_batch * mj.seq);
  est.tokens_per_s = tokens_step / total.si();
  // LoRA trains no base weight: its backward computes input gradients only, 2/3 of the work.
  const double model_flops = (*work)->flops_per_token * tokens_step * (adapters ? 2.0 / 3.0 : 1.0);
  const double gpus = static_cast<double>(c.gpus);
  est.model_flops_per_gpu = Flops(model_flops / gpus) / total;
  const Seconds flop_time = step.compute - step.grad_accumulation;
  const double recompute_share = (flop_time.si() > 0) ? step.recompute / flop_time : 0.0;
  est.hardware_flops_per_gpu =
      est.model_flops_per_gpu * (1.0 / std::max(1e-9, 1.0 - recompute_share));
  const Precision peak_precision =
      detail::fp8_gemms(gpu, job)
          ? Precision::kFp8
          : (gpu.peak_for(Precision::kBf16) ? Precision::kBf16 : Precision::kFp16);
  const double peak = gpu.peak_for(peak_precision)->si();
  est.mfu = est.model_flops_per_gpu.si() / peak;
  est.hfu = est.hardware_flops_per_gpu.si() / peak;
  if (job.price_per_gpu_hour) {
    const Money& price = *job.price_per_gpu_hour;
    est.cost_per_million_tokens =
        Money{price.amount * gpus / 3600.0 * (1e6 / est.tokens_per_s), price.currency};
  }
  if (job.tokens > 0) {
    est.time_to_train = total * (job.tokens / tokens_step);
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
      if (interleaving_allowed(m, l.pp, v, job.software)) {
        virtual_stages.push_back(v);
      }
    }
  }
  TrainEstimate best;
  best.why = Why::kLayout;
  best.reason = "no micro-batch size divides the batch";
  for (int64_t b : micro_batches) {
    for (int64_t v : virtual_stages) {
      TrainJob candidate = job;
      candidate.memory.micro_batch = b;
      candidate.memory.layout.virtual_stages = v;
      TrainEstimate e = estimate_training(m, c, candidate, mp, p,
                                          {.software_layouts = policy != MemoryPolicy::kPublished});
      if (!e.feasible) {
        if (!best.feasible) {
          best.why = e.why;
          best.reason = e.reason;
          best.job = candidate;
        }
        continue;
      }
      // A candidate that fits beats one that does not (kReport: only reported); of two that
      // fit, the faster wins; of two that do not, the smaller under kRequire, else the faster.
      const bool faster = e.step.total() < best.step.total();
      const bool smaller = e.memory.total() < best.memory.total();
      bool better = !best.feasible || faster;
      if (best.feasible && policy != MemoryPolicy::kReport) {
        if (e.fits_memory != best.fits_memory) {
          better = e.fits_memory;
        } else if (!e.fits_memory && policy == MemoryPolicy::kRequire) {
          better = smaller;
        }
      }
      if (better) {
        best = std::move(e);
      }
    }
  }
  return best;
}

std::optional<std::string> training_precision_problem(const Gpu& gpu, const MemoryJob& job) {
  if (!is_training(job.task) || gemm_rate(gpu, job.precision)) {
    return std::nullopt;
  }
  if (job.precision == Precision::kFp8) {
    return fmt::format(
        "{} has no fp8 tensor cores: fp8 training (Transformer Engine) needs Hopper or later; "
        "train in bf16",
        gpu.id);
  }
  const char* sixteen = gpu.peak_for(Precision::kBf16) ? "bf16" : "fp16";
  return fmt::format(
      "{} has no {} rate in the catalog (its tensor cores do not run it); train in {}", gpu.id,
      precision_name(job.precision), sixteen);
}

std::vector<Text> training_caveats(const Model& m, const Gpu& gpu, const TrainJob& job,
                                   const TrainParams& p) {
  std::vector<Text> caveats;
  if (m.is_moe()) {
    caveats.push_back(
        {"mixture of experts: the step counts the experts' GEMMs, the router and the tokens' "
         "permutations and all-to-alls, not the host time of per-expert kernels or of the "
         "synchronisation that sizes each all-to-all; published Megatron-Bridge runs of "
         "fine-grained MoE models that nothing was fitted to took 1.3 to 3.3 times the "
         "predicted step with its 2025 software, and came within -20 ... +11 % of it with its "
         "2026 recipes (docs/VALIDATION.md, held-out training)",
         "mistura de especialistas: o passo conta os GEMMs dos especialistas, o roteador e as "
         "permutações e os all-to-alls dos tokens, não o tempo de host dos kernels por "
         "especialista nem o da sincronização que dimensiona cada all-to-all; execuções "
         "publicadas do Megatron-Bridge com MoE de granularidade fina, a que nada foi ajustado, "
         "levaram de 1,3 a 3,3 vezes o passo previsto com o software de 2025 e ficaram entre "
         "-20 e +11 % dele com as receitas de 2026 (docs/VALIDATION.md, treino retido)"});
  }
  if (Text note = estimated_rates_note(
          gpu, estimated_rates(gpu, job.memory.precision, attention_kernels(gpu, job)));
      !note.empty()) {
    caveats.push_back(std::move(note));
  }
  const bool fitted =
      p.in_situ.empty() || std::any_of(p.in_situ.begin(), p.in_situ.end(),
                                       [&](const auto& a) { return a.first == gpu.architecture; });
  if (!fitted) {
    std::vector<std::string> seen;
    for (const auto& [arch, share] : p.in_situ) {
      seen.push_back(arch);
    }
    caveats.push_back(
        {fmt::format("{}: the training model's parameters were fitted to published runs on {} "
                     "GPUs only (data/params/training-fit.toml); on {} the compute share a step "
                     "keeps is their default, unchecked, and docs/VALIDATION.md shows how far off "
                     "held-out runs on such GPUs came out",
                     gpu.id, word_list(seen, " and "), gpu.architecture),
         fmt::format("{}: os parâmetros do modelo de treino foram ajustados a execuções "
                     "publicadas só em GPUs {} (data/params/training-fit.toml); em {} a parcela "
                     "de cômputo que um passo mantém é o padrão deles, sem verificação, e "
                     "docs/VALIDATION.md mostra quanto erraram execuções retidas nessas GPUs",
                     gpu.id, word_list(seen, " e "), gpu.architecture)});
  }
  return caveats;
}

Result<TrainEstimate> train_layout(const Model& m, const Cluster& c, TrainJob job,
                                   const MemoryParams& mp, const TrainParams& p) {
  if (auto problem = precision_problem(job.memory)) {
    return fail("precision", *problem);  // the sentence says what to do instead
  }
  if (auto problem = training_precision_problem(*c.gpu, job.memory)) {
    return fail("precision", *problem);
  }
  Parallelism& l = job.memory.layout;
  if (l.dp == 0) {
    const int64_t others = l.tp * l.pp * l.cp;
    if (c.gpus % others != 0) {
      return fail(
          "layout",
          fmt::format("tp {} x pp {} x cp {} does not divide {} GPUs", l.tp, l.pp, l.cp, c.gpus),
          "choose sizes whose product divides --gpus");
    }
    l.dp = c.gpus / others;
  }
  if (auto problem = gpus_problem(l, c.gpus)) {
    return fail("layout", *problem, "the layout must use every GPU");
  }
  if (auto problem = layout_problem(m, job.memory)) {
    return fail("layout", *problem, "choose sizes that suit the model");
  }
  TrainEstimate e = best_training(m, c, job, mp, p);
  e.caveats = training_caveats(m, *c.gpu, job, p);
  return e;
}

}  // namespace gpuplan
