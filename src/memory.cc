#include "gpuplan/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace gpuplan {
namespace {

// Bytes per element of 16-bit activations, the format every trainer here stores them in.
constexpr double kActivationBytes = 2.0;

// Bytes per parameter of the trained state (docs/FORMULAS.md#training-state): in mixed precision
// as the training software keeps it (MemoryJob's weight, gradient and master bytes: Megatron 2 +
// 4 + 4, DeepSpeed 2 + 2 + 4, FSDP 4 + 4 + 0), plus the optimizer's moments.
struct StateBytes {
  double weights;
  double gradients;
  double optimizer;
};

double moment_bytes_of(Optimizer o) {
  switch (o) {
    case Optimizer::kAdam:
      return 8.0;  // first and second moments in fp32
    case Optimizer::kAdam8bit:
      // Two 8-bit moments and one fp32 absolute maximum per block of 2048 for each
      // (Dettmers et al. 2022, sec. 2).
      return 2.0 + 2.0 * 4.0 / 2048.0;
    case Optimizer::kSgd:
      return 4.0;  // momentum in fp32
    case Optimizer::kAdafactor:
      return 0.0;  // factored second moment: O(rows + cols), negligible per parameter
  }
  return 8.0;
}

StateBytes full_training_state(const MemoryJob& job) {
  if (job.precision == Precision::kFp32 || job.precision == Precision::kTf32) {
    // fp32 training needs no master copy.
    return {4.0, 4.0, moment_bytes_of(job.optimizer)};
  }
  return {job.weight_bytes, gradient_buffer_bytes(job),
          job.master_bytes + moment_bytes_of(job.optimizer)};
}

// QLoRA's NF4 with double quantisation: 4 bits + 0.127 bits of constants per parameter
// (Dettmers et al. 2023, sec. 3).
constexpr double kNf4Bytes = (4.0 + 0.127) / 8.0;

double in_flight_micro_batches(const MemoryJob& job, int64_t stage) {
  const Parallelism& l = job.layout;
  double n = static_cast<double>(l.pp - stage);
  if (job.micro_batches > 0) {
    n = std::min(n, static_cast<double>(job.micro_batches));
  }
  if (l.virtual_stages > 1) {
    // Interleaving keeps extra chunks alive: x (1 + (p-1)/(p*v)) (Korthikanti et al. 2022,
    // sec. 4.2.3).
    const double p = static_cast<double>(l.pp);
    n *= 1.0 + (p - 1.0) / (p * static_cast<double>(l.virtual_stages));
  }
  return n;
}

// Parameters of layers [first, first + count) on one GPU, and the matmul share of them.
struct StageParams {
  double on_gpu = 0;
  double matmul_on_gpu = 0;
  double lora = 0;     // adapter parameters on this GPU
  double experts = 0;  // routed-expert parameters on this GPU (their DP group is dp / ep)
};

double lora_per_layer(const Model& m, const MemoryJob& job) {
  // LoRA adds r * (d_in + d_out) per adapted matrix (Hu et al. 2021).
  const double r = static_cast<double>(job.lora_rank);
  const double h = static_cast<double>(m.hidden);
  const double q = static_cast<double>(m.heads * m.head_dim);
  const double kv = static_cast<double>(m.kv_heads * m.head_dim);
  double n = r * ((h + q) * 2 + (h + kv) * 2);  // q, o, k, v
  if (job.lora_targets == LoraTargets::kAllLinear) {
    const double matrices = m.gated_mlp ? 3 : 2;
    if (m.is_moe()) {
      // Every routed expert and the shared expert(s), each an adapter per matrix.
      n += static_cast<double>(m.moe.experts) * r *
           (h + static_cast<double>(m.moe.expert_intermediate)) * matrices;
      if (m.moe.shared_experts > 0) {
        n += static_cast<double>(m.moe.shared_experts) * r *
             (h + static_cast<double>(shared_expert_width(m) / m.moe.shared_experts)) * matrices;
      }
    } else {
      n += r * (h + static_cast<double>(m.intermediate)) * matrices;
    }
  }
  return n;
}

// What one layer of each kind holds on one GPU, and keeps for its backward pass: the same on
// every stage, so a job computes it once for all of them.
struct OneLayer {
  double on_gpu = 0;
  double matmul_on_gpu = 0;
  double experts = 0;  // routed-expert parameters of the layer, all of them
  double split = 1;    // the ranks they are split over
};
struct LayerShares {
  OneLayer dense;          // one dense layer (or one layer of a model without experts)
  OneLayer other;          // one layer with routed experts
  double lora = 0;         // lora_per_layer, before the TP split
  double activations = 0;  // layer_activation_bytes
  double rebuilt = 0;      // full recompute: what a layer rebuilds for its backward pass
};

OneLayer one_layer(const Model& m, const MemoryJob& job, int64_t index) {
  const double tp = static_cast<double>(job.layout.tp);
  const LayerParameters p = layer_parameters(m, index);
  OneLayer l;
  // Routed experts are split over the expert group: etp ranks per expert, ep expert shares.
  l.split = static_cast<double>(job.layout.ep * job.layout.expert_tp());
  l.experts = static_cast<double>(p.routed_experts);
  l.on_gpu = (static_cast<double>(p.sharded) - l.experts) / tp + l.experts / l.split +
             static_cast<double>(p.replicated);
  l.matmul_on_gpu =
      std::min(l.on_gpu, (static_cast<double>(p.matmul) - l.experts) / tp + l.experts / l.split);
  return l;
}

LayerShares layer_shares(const Model& m, const MemoryJob& job) {
  LayerShares l;
  // Layers come in at most two kinds (DeepSeek's leading dense layers, then MoE layers).
  const int64_t dense_end = m.is_moe() ? std::min(m.moe.dense_layers, m.layers) : m.layers;
  if (dense_end > 0) {
    l.dense = one_layer(m, job, 0);
  }
  if (dense_end < m.layers) {
    l.other = one_layer(m, job, dense_end);
  }
  l.lora = lora_per_layer(m, job);
  l.activations = layer_activation_bytes(m, job).si();
  if (job.recompute == Recompute::kFull) {
    MemoryJob none = job;
    none.recompute = Recompute::kNone;
    l.rebuilt = layer_activation_bytes(m, none).si();
  }
  return l;
}

StageParams stage_params(const Model& m, const MemoryJob& job, const LayerShares& shares,
                         int64_t first, int64_t count) {
  const double tp = static_cast<double>(job.layout.tp);
  StageParams s;
  const int64_t dense_end = m.is_moe() ? std::min(m.moe.dense_layers, m.layers) : m.layers;
  const int64_t dense = std::max<int64_t>(0, std::min(first + count, dense_end) - first);
  const int64_t other = count - dense;
  auto add = [&](const OneLayer& layer, int64_t n) {
    if (n == 0) {
      return;
    }
    s.on_gpu += static_cast<double>(n) * layer.on_gpu;
    s.experts += static_cast<double>(n) * layer.experts / layer.split;
    s.matmul_on_gpu += static_cast<double>(n) * layer.matmul_on_gpu;
  };
  add(shares.dense, dense);
  add(shares.other, other);
  s.lora = static_cast<double>(count) * shares.lora / tp;
  return s;
}

MemoryBreakdown stage_memory(const Model& m, const ParameterCount& pc, const MemoryJob& job,
                             const MemoryParams& params, const LayerShares& shares, int64_t stage,
                             int64_t first, int64_t count) {
  const Parallelism& l = job.layout;
  const double tp = static_cast<double>(l.tp);
  const double dp = static_cast<double>(l.dp);
  const bool first_stage = stage == 0;
  const bool last_stage = stage == l.pp - 1;

  const StageParams sp = stage_params(m, job, shares, first, count);
  // Embedding and output head: vocab-parallel, so split over TP; kept in 16 bits.
  double outside = 0;
  if (first_stage) {
    outside += static_cast<double>(pc.embedding) / tp + static_cast<double>(pc.position);
  }
  if (last_stage) {
    const double head = m.tied_embeddings ? (l.pp > 1 ? static_cast<double>(pc.embedding) : 0.0)
                                          : static_cast<double>(pc.lm_head);
    outside += head / tp;
  }
  outside += (first_stage || last_stage) ? static_cast<double>(pc.norms_outside_layers) : 0.0;

  MemoryBreakdown b;
  b.stage = stage;
  b.stage_layers = count;
  b.parameters = sp.on_gpu + outside;
  b.expert_parameters = sp.experts;
  b.overhead = params.runtime_reserved;

  if (job.task == Task::kInfer) {
    const QuantisedWeights q = quantised_weights(m, job.precision, job.as_released);
    const double wide = std::max(2.0, precision_bytes(job.precision));
    const double quantised = q.experts_only ? sp.experts : sp.matmul_on_gpu;
    b.weights = Bytes(quantised * q.bytes + (sp.on_gpu - quantised + outside) * wide);
    // Sliding-window layers keep no more than their window (held_context).
    b.kv_cache =
        Bytes(static_cast<double>(job.batch) * held_context(m, static_cast<double>(job.context)) *
              kv_bytes_per_token_per_gpu(m, job, count));
    // Transient working set of one forward pass over a chunk of tokens: hidden states, the MLP
    // intermediate, and fp32 logits of the sequences being sampled.
    const double chunk =
        static_cast<double>(std::min(params.inference_chunk_tokens, job.batch * job.context));
    const double width = static_cast<double>(
        m.is_moe() ? m.moe.expert_intermediate * m.moe.experts_per_token : m.intermediate);
    b.activations =
        Bytes(chunk * (4.0 * static_cast<double>(m.hidden) + 3.0 * width / tp) * kActivationBytes +
              (last_stage ? static_cast<double>(job.batch * m.vocab) / tp * 4.0 : 0));
    return b;
  }

  // Training-like tasks.
  double trainable = 0;
  if (trains_adapters(job.task)) {
    const double base_matmul =
        job.task == Task::kQlora ? kNf4Bytes : quantized_weight_bytes(job.precision);
    const double base_other = std::max(2.0, precision_bytes(job.precision));
    trainable = sp.lora;
    // Adapters are trained in fp32 with Adam: 4 (weights) + 4 (grads) + 8 (moments).
    b.weights = Bytes(sp.matmul_on_gpu * base_matmul +
                      (sp.on_gpu - sp.matmul_on_gpu + outside) * base_other + trainable * 4.0);
    b.gradients = Bytes(trainable * 4.0);
    b.optimizer = Bytes(trainable * moment_bytes_of(job.optimizer));
  } else {
    trainable = b.parameters;
    const StateBytes st = full_training_state(job);
    b.weights = Bytes(trainable * st.weights);
    b.gradients = Bytes(trainable * st.gradients);
    b.optimizer = Bytes(trainable * st.optimizer);
  }
  b.trainable = trainable;
  // ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states over the data-parallel
  // group (dp x cp ranks), stage 2 (or the framework's gradient_sharding_stage) also
  // gradients, stage 3 also weights. Routed experts are
  // replicated over their expert-data-parallel ranks only, so that is their shard count.
  const double expert_share =
      b.parameters > 0 && !trains_adapters(job.task) ? sp.experts / b.parameters : 0.0;
  const double shard = (1.0 - expert_share) / (dp * static_cast<double>(l.cp)) +
                       expert_share / static_cast<double>(l.expert_dp());
  if (l.zero >= 1) {
    b.optimizer = b.optimizer * shard;
  }
  if (l.zero >= job.gradient_sharding_stage) {
    b.gradients = b.gradients * shard;
  }
  if (l.zero >= 3) {
    b.weights = b.weights * shard;
    // The gathered 16-bit weights of the layer being computed and of the one prefetched.
    if (count > 0) {
      b.weights += Bytes(2.0 * 2.0 * sp.on_gpu / static_cast<double>(count));
    }
  }
  if (job.offload_optimizer) {
    // ZeRO-Offload keeps the optimizer (master weights and moments) on the host.
    b.host = b.optimizer;
    b.optimizer = Bytes(0);
  }

  double acts =
      shares.activations * static_cast<double>(count) * in_flight_micro_batches(job, stage);
  if (job.recompute == Recompute::kFull && count > 0) {
    // Recomputing a layer rebuilds its full activations for its backward pass.
    acts += shares.rebuilt;
  }
  if (last_stage) {
    // fp32 logits feeding the cross-entropy, one micro-batch at a time: 4 s b V / t.
    acts += 4.0 * static_cast<double>(job.seq * job.micro_batch * m.vocab) / tp;
  }
  b.activations = Bytes(acts);
  return b;
}

}  // namespace

double quantized_weight_bytes(Precision p) {
  switch (p) {
    case Precision::kInt4:
      // 4-bit values with one 16-bit scale per group of 128 (GPTQ/AWQ layout).
      return 0.5 + 2.0 / 128.0;
    default:
      return precision_bytes(p);
  }
}

WeightChoice choose_weights(const Model& m, Task task, std::optional<Precision> weights,
                            std::optional<Precision> kv, KvDefault engine) {
  WeightChoice c;
  const bool published = task == Task::kInfer && m.released && m.released->understood;
  if (weights) {
    // The published format's own class names it: gpt-oss "in fp4" is its MXFP4 checkpoint.
    c.precision = *weights;
    c.as_released = published && m.released->precision == *weights;
  } else if (published) {
    c.precision = m.released->precision;
    c.as_released = true;
  }
  const Precision sixteen = c.precision == Precision::kFp16 ? Precision::kFp16 : Precision::kBf16;
  const bool follows = engine == KvDefault::kFollowsWeights;
  if (kv) {
    c.kv_precision = *kv;
  } else if (c.as_released) {
    // The checkpoint's own KV format where it names one and the engine follows it, else the
    // model's 16 bits: a published quantisation that names no cache format leaves it alone.
    c.kv_precision = follows && m.released->kv ? *m.released->kv : Precision::kBf16;
  } else {
    c.kv_precision = follows ? default_kv_precision(c.precision) : sixteen;
  }
  return c;
}

Text unread_format_note(const Model& m, Task task, bool precision_given) {
  if (task != Task::kInfer || precision_given || !m.released || m.released->understood) {
    return {};
  }
  const std::string& method = m.released->method;
  return {fmt::format("the config's quantization_config names '{}' in a form gpuplan does not "
                      "read: the weights are counted in bf16; give a precision (--precision, or a "
                      "plan job file's precision; e.g. int4 for a 4-bit format)",
                      method),
          fmt::format("o quantization_config do modelo indica '{}' numa forma que o gpuplan não "
                      "lê: os pesos foram contados em bf16; informe uma precisão (--precision, ou "
                      "precision num arquivo de trabalho do plan; p.ex. int4 para um formato de 4 "
                      "bits)",
                      method)};
}

QuantisedWeights quantised_weights(const Model& m, Precision precision, bool as_released) {
  if (as_released && m.released && m.released->understood) {
    return {m.released->bytes, m.released->experts_only};
  }
  return {quantized_weight_bytes(precision), false};
}

Text weights_name(const Model& m, Precision precision, bool as_released) {
  if (!as_released || !m.released || !m.released->understood) {
    const std::string name(precision_name(precision));
    return {name, name};
  }
  // The method's name, and the class it is where the name does not say ("awq (int4)").
  std::string method = m.released->method;
  if (method != "mxfp4" && method != precision_name(m.released->precision)) {
    method += fmt::format(" ({})", precision_name(m.released->precision));
  }
  if (m.released->experts_only) {
    return {fmt::format("published {} experts, bf16 attention", method),
            fmt::format("especialistas {} publicados, atenção bf16", method)};
  }
  return {fmt::format("published {}", method), fmt::format("{} publicados", method)};
}

Precision default_kv_precision(Precision weights) {
  if (weights == Precision::kFp4) {
    return Precision::kFp8;
  }
  return weights == Precision::kFp8 || weights == Precision::kFp16 ? weights : Precision::kBf16;
}

void apply_software(MemoryJob& job, const Software& software) {
  if (software.framework == nullptr) {
    return;
  }
  const Framework& f = *software.framework;
  job.weight_bytes = f.weight_bytes;
  job.gradient_bytes = f.gradient_bytes;
  job.gradient_bytes_bf16 = f.gradient_bytes_bf16.value_or(f.gradient_bytes);
  job.master_bytes = f.master_bytes;
  job.gradient_sharding_stage = f.gradient_sharding_stage;
  job.flash_attention = software.fused_attention();
}

bool bf16_mixed_precision(const MemoryJob& job) {
  return job.precision == Precision::kBf16 || job.precision == Precision::kFp8;
}

double gradient_buffer_bytes(const MemoryJob& job) {
  return bf16_mixed_precision(job) ? job.gradient_bytes_bf16 : job.gradient_bytes;
}

double optimizer_moment_bytes(Optimizer o) {
  return moment_bytes_of(o);
}

std::vector<int64_t> stage_layers(int64_t layers, int64_t pp) {
  GPUPLAN_CHECK(pp >= 1 && pp <= layers, "stage count must be within 1..layers");
  std::vector<int64_t> out(static_cast<size_t>(pp));
  for (int64_t s = 0; s < pp; ++s) {
    out[static_cast<size_t>(s)] = stage_layer_count(layers, pp, s);
  }
  return out;
}

void StageBreaks::add(StageSpan s) {
  if (size_ > 0 && spans_[size_ - 1].stage >= s.stage) {
    return;  // in order, once
  }
  GPUPLAN_CHECK(size_ < spans_.size(), "more stage breaks than a pipeline has");
  spans_[size_++] = s;
}

StageBreaks stage_breaks(const Model& m, int64_t pp) {
  GPUPLAN_CHECK(pp >= 1 && pp <= m.layers, "stage count must be within 1..layers");
  const int64_t full = (m.layers + pp - 1) / pp;
  const int64_t deficit = full * pp - m.layers;
  // stage_layer_count: the first ceil(deficit / 2) stages and the last floor(deficit / 2) have
  // full - 1 layers, the others full.
  const int64_t left = (deficit + 1) / 2;
  const int64_t right = pp - deficit / 2;
  auto first_layer = [&](int64_t s) {
    return s * full - std::min(s, left) - std::max<int64_t>(0, s - right);
  };
  // The stage holding the last dense layer, and the one after it.
  const int64_t dense_end = m.is_moe() ? std::min(m.moe.dense_layers, m.layers) : m.layers;
  int64_t dense_stage = pp - 1;
  if (dense_end < m.layers) {
    int64_t lo = 0;  // the last stage whose first layer is below dense_end (stage 0 if none)
    int64_t hi = pp - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (first_layer(mid) < dense_end) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    dense_stage = lo;
  }
  // The candidates, sorted by insertion; add() keeps each stage once.
  std::array<int64_t, 7> at{};
  size_t n = 0;
  for (int64_t s : {int64_t{0}, int64_t{1}, left, right, pp - 1, dense_stage, dense_stage + 1}) {
    if (s < 0 || s >= pp) {
      continue;
    }
    size_t i = n++;
    for (; i > 0 && at[i - 1] > s; --i) {
      at[i] = at[i - 1];
    }
    at[i] = s;
  }
  StageBreaks b;
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = at[i];
    b.add({s, first_layer(s), full - (s < left || s >= right ? 1 : 0)});
  }
  return b;
}

int64_t stage_layer_count(int64_t layers, int64_t pp, int64_t stage) {
  const int64_t full = (layers + pp - 1) / pp;
  const int64_t deficit = full * pp - layers;
  // One layer at a time comes off the outermost stages inward: first, last, second, ... so the
  // stage `stage` gives one up when its place in that order is below the deficit.
  const int64_t mirror = pp - 1 - stage;
  const int64_t order = stage <= mirror ? 2 * stage : 2 * mirror + 1;
  return full - (order < deficit ? 1 : 0);
}

Bytes layer_activation_bytes(const Model& m, const MemoryJob& job) {
  const Parallelism& l = job.layout;
  const double t = static_cast<double>(l.tp);
  const double h = static_cast<double>(m.hidden);
  const double tokens = static_cast<double>(job.seq * job.micro_batch);
  if (job.recompute == Recompute::kFull) {
    // Only the layer input is kept: 2 s b h (/ t with sequence parallelism).
    return Bytes(tokens * kActivationBytes * h / (l.sequence_parallel ? t : 1.0));
  }
  // Per token, following Korthikanti et al. 2022 eq. 1-2 term by term (a model with dropout):
  // outside the TP region: two norm inputs (4h), QKV and MLP inputs (2h + 2h), two dropout
  // masks (h + h) = 10h; inside it: Q, K, V, the projection input, the MLP's first-layer output
  // and its activation output (24h for a GPT MLP of 4h); attention scores 5 a s.
  const double q = static_cast<double>(m.heads * m.head_dim);
  const double kv = static_cast<double>(m.kv_heads * m.head_dim);
  double width = static_cast<double>(m.intermediate);
  if (m.is_moe()) {
    width = static_cast<double>(m.moe.expert_intermediate * m.moe.experts_per_token +
                                shared_expert_width(m));
  }
  // Without dropout there are no masks: 8h outside, and of the 5 a s score terms only the
  // softmax output (2 a s) remains.
  const double outside = (m.dropout ? 10.0 : 8.0) * h;
  const double mlp = (m.gated_mlp ? 6.0 : 4.0) * width;  // first-layer output(s) + activation
  const double inside = 2.0 * q + 4.0 * kv + 2.0 * q + mlp;
  // Selective recompute drops the scores (Korthikanti sec. 4.2); fused kernels never keep them.
  const double scores = job.recompute == Recompute::kSelective || job.flash_attention
                            ? 0.0
                            : (m.dropout ? 5.0 : 2.0) * static_cast<double>(m.heads * job.seq);
  const double per_token =
      l.sequence_parallel ? (outside + inside + scores) / t : outside + (inside + scores) / t;
  return Bytes(tokens * per_token);
}

double kv_bytes_per_token_per_gpu(const Model& m, const MemoryJob& job, int64_t layers_on_gpu) {
  const double bytes = precision_bytes(job.kv_precision);
  const double layers = static_cast<double>(layers_on_gpu);
  if (m.is_latent_attention()) {
    // The latent is shared by all heads, so every TP rank keeps all of it.
    return layers * static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * bytes;
  }
  // With tp > kv_heads each rank still holds one whole KV head (replicated).
  const double heads =
      std::max(1.0, static_cast<double>(m.kv_heads) / static_cast<double>(job.layout.tp));
  return 2.0 * layers * heads * static_cast<double>(m.head_dim) * bytes;
}

std::optional<std::string> gpus_problem(const Parallelism& l, int64_t gpus) {
  if (l.tp * l.pp * l.dp * l.cp == gpus) {
    return std::nullopt;
  }
  return fmt::format("tp {} x pp {} x dp {} x cp {} = {} GPUs, not the {} given", l.tp, l.pp, l.dp,
                     l.cp, l.tp * l.pp * l.dp * l.cp, gpus);
}

std::optional<std::string> layout_problem(const Model& m, const MemoryJob& job) {
  const Parallelism& l = job.layout;
  if (l.tp < 1 || l.pp < 1 || l.dp < 1 || l.virtual_stages < 1) {
    return std::string("tp, pp, dp and virtual stages must each be at least 1");
  }
  if (l.zero < 0 || l.zero > 3) {
    return fmt::format("ZeRO stage {} does not exist (0 to 3)", l.zero);
  }
  if (m.heads % l.tp != 0) {
    return fmt::format("tp {} does not divide the {} attention heads of {}", l.tp, m.heads, m.id);
  }
  if (m.kv_heads >= l.tp ? m.kv_heads % l.tp != 0 : l.tp % m.kv_heads != 0) {
    return fmt::format("tp {} and the {} key/value heads of {} neither divide the other", l.tp,
                       m.kv_heads, m.id);
  }
  const int64_t width = m.is_moe() ? m.moe.expert_intermediate : m.intermediate;
  if (width % l.tp != 0) {
    return fmt::format("tp {} does not divide the MLP width {} of {}", l.tp, width, m.id);
  }
  const int64_t etp = l.expert_tp();
  if (l.cp < 1 || l.ep < 1 || etp < 1) {
    return std::string("cp, ep and etp must each be at least 1");
  }
  if ((l.ep > 1 || l.etp > 0) && !m.is_moe()) {
    return fmt::format("expert parallelism (ep {}, etp {}) needs a MoE model; {} has no experts",
                       l.ep, etp, m.id);
  }
  if (m.is_moe() && (m.moe.experts % l.ep != 0 || m.moe.expert_intermediate % etp != 0 ||
                     (l.tp * l.cp * l.dp) % (l.ep * etp) != 0)) {
    return fmt::format(
        "ep {} x etp {} must divide tp {} x cp {} x dp {}, ep the {} experts and etp their MLP "
        "width {}",
        l.ep, etp, l.tp, l.cp, l.dp, m.moe.experts, m.moe.expert_intermediate);
  }
  if (l.pp > m.layers) {
    return fmt::format("{} pipeline stages exceed the {} layers of {}", l.pp, m.layers, m.id);
  }
  if (l.virtual_stages > 1 && (l.pp == 1 || l.pp * l.virtual_stages > m.layers)) {
    return fmt::format("{} virtual stages per pipeline stage need pp > 1 and at least {} layers",
                       l.virtual_stages, l.pp * l.virtual_stages);
  }
  if (job.task == Task::kInfer && l.zero != 0) {
    return std::string("ZeRO shards training state; inference has none (use zero 0)");
  }
  return precision_problem(job);
}

std::optional<std::string> precision_problem(const MemoryJob& job) {
  if (is_training(job.task) && job.precision == Precision::kFp4) {
    return std::string(
        "fp4 training (NVFP4 recipes, with their 16-bit layers and scaling) is not modelled; "
        "train in fp8 or bf16");
  }
  if (is_training(job.task) && job.task != Task::kQlora &&
      (job.precision == Precision::kInt8 || job.precision == Precision::kInt4)) {
    return fmt::format("{} weights cannot be trained; use --task qlora for 4-bit base weights",
                       precision_name(job.precision));
  }
  return std::nullopt;
}

std::vector<MemoryBreakdown> memory_per_stage(const Model& m, const MemoryJob& job,
                                              const MemoryParams& params) {
  GPUPLAN_CHECK(!layout_problem(m, job), "memory of an impossible layout");
  const std::vector<int64_t> layers = stage_layers(m.layers, job.layout.pp);
  const ParameterCount pc = count_parameters(m);
  const LayerShares shares = layer_shares(m, job);
  std::vector<MemoryBreakdown> out;
  int64_t first = 0;
  for (size_t s = 0; s < layers.size(); ++s) {
    out.push_back(
        stage_memory(m, pc, job, params, shares, static_cast<int64_t>(s), first, layers[s]));
    first += layers[s];
  }
  return out;
}

MemoryBreakdown memory_per_gpu(const Model& m, const MemoryJob& job, const MemoryParams& params) {
  GPUPLAN_CHECK(!layout_problem(m, job), "memory of an impossible layout");
  return memory_per_gpu(m, job, params, stage_breaks(m, job.layout.pp), count_parameters(m));
}

MemoryBreakdown memory_per_gpu(const Model& m, const MemoryJob& job, const MemoryParams& params,
                               const StageBreaks& breaks, const ParameterCount& pc) {
  // Stages of one shape (stage_breaks) differ only in the micro-batches they keep in flight,
  // which never grow from one stage to the next: the first of each shape is its heaviest.
  const LayerShares shares = layer_shares(m, job);
  MemoryBreakdown heaviest;
  bool any = false;
  for (const StageSpan& s : breaks) {
    const MemoryBreakdown b = stage_memory(m, pc, job, params, shares, s.stage, s.first, s.count);
    // The heaviest stage; the earliest wins a tie.
    if (!any || b.total() > heaviest.total()) {
      heaviest = b;
      any = true;
    }
  }
  return heaviest;
}

}  // namespace gpuplan
