#include "gpuplan/model_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "gpuplan/suggest.h"
#include "json_reader.h"

namespace gpuplan {
namespace {

using Json = nlohmann::json;

// The largest value any one dimension of a config may have (134,217,728): above every released
// model's vocabulary, context and widths, and small enough that two of them multiply within
// int64. The model as a whole is bounded by kMostParameters (check_shape).
constexpr int64_t kMostDimension = int64_t{1} << 27;
// A quadrillion parameters, about 600x the largest model published by 2026.
constexpr double kMostParameters = 1e15;

// The line of the key in the text, for error locations (nlohmann keeps no source positions).
std::string locate(std::string_view text, const std::string& where, const std::string& key) {
  return detail::json_key_location(text, where, key);
}

// Typed, checked access to the keys of one config object.
class ConfigReader {
 public:
  ConfigReader(const Json& obj, std::string_view text, std::string where)
      : obj_(obj), text_(text), where_(std::move(where)) {}

  bool has(const std::string& key) const { return obj_.contains(key) && !obj_[key].is_null(); }

  // A required positive integer.
  Result<int64_t> count(const std::string& key) const {
    if (!has(key)) {
      return fail(where_, fmt::format("missing key '{}'", key),
                  "a config.json of this model_type must give it");
    }
    return positive(key);
  }
  // An optional positive integer with the default the transformers library applies.
  Result<int64_t> count_or(const std::string& key, int64_t fallback) const {
    return has(key) ? positive(key) : Result<int64_t>(fallback);
  }
  // The first of several alternative names (BLOOM and Falcon accept both spellings).
  Result<int64_t> count_any(std::initializer_list<const char*> keys) const {
    for (const char* k : keys) {
      if (has(k)) {
        return positive(k);
      }
    }
    return fail(where_, fmt::format("missing key '{}'", *keys.begin()),
                "a config.json of this model_type must give it");
  }
  Result<double> number(const std::string& key) const {
    if (!has(key)) {
      return fail(where_, fmt::format("missing key '{}'", key),
                  "a config.json of this model_type must give it");
    }
    const Json& v = obj_[key];
    if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() > kMostDimension) {
      return fail(locate(text_, where_, key),
                  fmt::format("key '{}' must be a positive number up to {}", key, kMostDimension),
                  fmt::format("found {}", v.dump()));
    }
    return v.get<double>();
  }
  Result<bool> flag_or(const std::string& key, bool fallback) const {
    if (!has(key)) {
      return fallback;
    }
    if (!obj_[key].is_boolean()) {
      return fail(locate(text_, where_, key), fmt::format("key '{}' must be true or false", key),
                  fmt::format("found {}", obj_[key].dump()));
    }
    return obj_[key].get<bool>();
  }
  // An optional string; another type is an error, not the fallback.
  Result<std::string> string_or(const std::string& key, const std::string& fallback) const {
    if (!has(key)) {
      return fallback;
    }
    if (!obj_[key].is_string()) {
      return fail(locate(text_, where_, key), fmt::format("key '{}' must be a string", key),
                  fmt::format("found {}", obj_[key].dump()));
    }
    return obj_[key].get<std::string>();
  }
  const Json& raw(const std::string& key) const { return obj_[key]; }
  const std::string& where() const { return where_; }
  std::string where_key(const std::string& key) const { return locate(text_, where_, key); }

 private:
  Result<int64_t> positive(const std::string& key) const {
    const Json& v = obj_[key];
    // An unsigned value above INT64_MAX would read back negative: test it as unsigned.
    const bool too_large = v.is_number_unsigned()
                               ? v.get<uint64_t>() > kMostDimension
                               : v.is_number_integer() && v.get<int64_t>() > kMostDimension;
    if (too_large) {
      return fail(locate(text_, where_, key),
                  fmt::format("key '{}' = {} is too large", key, v.dump()),
                  fmt::format("a dimension is at most {}", kMostDimension));
    }
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
      return fail(locate(text_, where_, key),
                  fmt::format("key '{}' must be a positive integer", key),
                  fmt::format("found {}", v.dump()));
    }
    return v.get<int64_t>();
  }

  const Json& obj_;
  std::string_view text_;
  std::string where_;
};

bool is_gated(const std::string& activation) {
  // GLU variants name themselves so in GPT-style configs; Llama-style families are always gated.
  return activation.find("glu") != std::string::npos;
}

Result<Model> read_gpt2(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.hidden, r.count("n_embd"));
  GPUPLAN_ASSIGN_OR_RETURN(m.layers, r.count("n_layer"));
  GPUPLAN_ASSIGN_OR_RETURN(m.heads, r.count("n_head"));
  GPUPLAN_ASSIGN_OR_RETURN(m.intermediate, r.count_or("n_inner", 4 * m.hidden));
  GPUPLAN_ASSIGN_OR_RETURN(m.vocab, r.count("vocab_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.max_positions, r.count("n_positions"));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", true));
  std::string activation;
  GPUPLAN_ASSIGN_OR_RETURN(activation, r.string_or("activation_function", "gelu_new"));
  m.gated_mlp = is_gated(activation);
  m.kv_heads = m.heads;
  m.position = PositionKind::kLearned;
  m.qkv_bias = m.out_bias = m.mlp_bias = true;
  m.dropout = true;  // GPT2Config defaults resid_pdrop = attn_pdrop = 0.1
  return m;
}

Result<Model> read_gptj(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.hidden, r.count("n_embd"));
  GPUPLAN_ASSIGN_OR_RETURN(m.layers, r.count("n_layer"));
  GPUPLAN_ASSIGN_OR_RETURN(m.heads, r.count("n_head"));
  GPUPLAN_ASSIGN_OR_RETURN(m.intermediate, r.count_or("n_inner", 4 * m.hidden));
  GPUPLAN_ASSIGN_OR_RETURN(m.vocab, r.count("vocab_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.max_positions, r.count_or("n_positions", 2048));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", false));
  m.kv_heads = m.heads;
  m.norms_per_layer = 1;  // attention and MLP run in parallel off one LayerNorm
  m.mlp_bias = true;
  m.lm_head_bias = !m.tied_embeddings;
  return m;
}

// MoE in every layer after the dense prefix is the one pattern gpuplan models: an interval
// `key` (Qwen's decoder_sparse_step, DeepSeek's moe_layer_freq) other than 1 is refused.
Result<int64_t> moe_every_layer(const ConfigReader& r, const char* key) {
  int64_t every = 1;
  GPUPLAN_ASSIGN_OR_RETURN(every, r.count_or(key, 1));
  if (every != 1) {
    return fail(r.where_key(key), fmt::format("MoE every {} layers is not supported", every),
                "gpuplan models MoE in every layer after an optional dense prefix");
  }
  return every;
}

// Qwen2-MoE and Qwen3-MoE: num_experts routed experts of moe_intermediate_size, k per token;
// Qwen2-MoE adds one gated shared expert of shared_expert_intermediate_size. MoE layers every
// decoder_sparse_step layers with mlp_only_layers dense: the model keeps dense layers only as a
// leading block (DeepSeek's first_k_dense), so other patterns are refused.
Result<Model> read_qwen_moe(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts, r.count("num_experts"));
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts_per_token, r.count("num_experts_per_tok"));
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.expert_intermediate, r.count("moe_intermediate_size"));
  int64_t shared = 0;
  GPUPLAN_ASSIGN_OR_RETURN(shared, r.count_or("shared_expert_intermediate_size", 0));
  if (shared > 0) {
    m.moe.shared_experts = 1;
    m.moe.shared_intermediate = shared;
    m.moe.shared_gate = true;
  }
  GPUPLAN_RETURN_IF_ERROR(moe_every_layer(r, "decoder_sparse_step"));
  if (r.has("mlp_only_layers")) {
    const Json& dense = r.raw("mlp_only_layers");
    if (!dense.is_array()) {
      return fail(r.where_key("mlp_only_layers"), "key 'mlp_only_layers' must be a list", "");
    }
    for (size_t i = 0; i < dense.size(); ++i) {
      if (!dense[i].is_number_integer() || dense[i].get<int64_t>() != static_cast<int64_t>(i)) {
        return fail(r.where_key("mlp_only_layers"),
                    fmt::format("dense layers {} are not a leading block", dense.dump()),
                    "gpuplan models dense layers only as the first ones (0, 1, ...)");
      }
    }
    m.moe.dense_layers = static_cast<int64_t>(dense.size());
  }
  return m;
}

// DeepSeek-V2 and V3 attention (multi-head latent attention), which Kimi K2 reuses: Moonshot's
// deployment guide says K2 is DeepseekV3ForCausalLM under its own model_type, so that engines
// can tell the two apart.
bool latent_attention(const std::string& type) {
  return type == "deepseek_v2" || type == "deepseek_v3" || type == "kimi_k2";
}
// DeepSeek-style experts: n_routed_experts of moe_intermediate_size, n_shared_experts always
// on, the first first_k_dense_replace layers dense. GLM-4.5 (glm4_moe) names them the same way.
bool deepseek_experts(const std::string& type) {
  return latent_attention(type) || type == "glm4_moe";
}

// A non-negative integer key that may be absent (0 then).
Result<int64_t> whole_or_zero(const ConfigReader& r, const char* key) {
  if (!r.has(key)) {
    return int64_t{0};
  }
  const Json& v = r.raw(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMostDimension) {
    return fail(r.where_key(key), fmt::format("key '{}' must be an integer >= 0", key),
                fmt::format("found {}", v.dump()));
  }
  return v.get<int64_t>();
}

Result<Model> read_latent_attention(const ConfigReader& r, Model m) {
  if (r.has("q_lora_rank")) {  // null in DeepSeek-V2-Lite: queries are projected directly
    GPUPLAN_ASSIGN_OR_RETURN(m.mla.q_lora_rank, r.count("q_lora_rank"));
  }
  GPUPLAN_ASSIGN_OR_RETURN(m.mla.kv_lora_rank, r.count("kv_lora_rank"));
  GPUPLAN_ASSIGN_OR_RETURN(m.mla.qk_nope_head_dim, r.count("qk_nope_head_dim"));
  GPUPLAN_ASSIGN_OR_RETURN(m.mla.qk_rope_head_dim, r.count("qk_rope_head_dim"));
  GPUPLAN_ASSIGN_OR_RETURN(m.mla.v_head_dim, r.count("v_head_dim"));
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  m.kv_heads = m.heads;
  return m;
}

Result<Model> read_deepseek_moe(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts, r.count("n_routed_experts"));
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts_per_token, r.count("num_experts_per_tok"));
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.shared_experts, whole_or_zero(r, "n_shared_experts"));
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.expert_intermediate, r.count("moe_intermediate_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.dense_layers, whole_or_zero(r, "first_k_dense_replace"));
  GPUPLAN_RETURN_IF_ERROR(moe_every_layer(r, "moe_layer_freq"));
  // The router's per-expert bias of auxiliary-loss-free balancing: DeepSeek-V3 and Kimi K2 name
  // it topk_method "noaux_tc"; GLM-4.5's router always has it (e_score_correction_bias);
  // DeepSeek-V2's greedy routers have none.
  std::string routing;
  GPUPLAN_ASSIGN_OR_RETURN(
      routing, r.string_or("topk_method", m.model_type == "glm4_moe" ? "noaux_tc" : ""));
  m.moe.router_bias = routing == "noaux_tc";
  GPUPLAN_ASSIGN_OR_RETURN(m.extra_prediction_layers, whole_or_zero(r, "num_nextn_predict_layers"));
  return m;
}

// Sliding-window attention, as each family declares it: a `layer_types` list naming
// "sliding_attention" layers (transformers 4.53 on, gpt-oss); else Gemma 2's and gpt-oss's
// even-numbered layers, Gemma 3's all but every sliding_window_pattern-th (Command A's all but
// every fourth), every Mistral, Mixtral, Phi-3 and StarCoder2 layer when `sliding_window` is set,
// and Qwen's layers from `max_window_layers` on when `use_sliding_window` is true. A window as long
// as the model's context changes nothing and is dropped.
Result<Model> read_window(const ConfigReader& r, Model m) {
  int64_t windowed = 0;
  if (r.has("layer_types")) {
    const Json& types = r.raw("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != m.layers) {
      return fail(r.where_key("layer_types"),
                  fmt::format("key 'layer_types' must list the {} layers", m.layers),
                  "one of \"full_attention\" or \"sliding_attention\" per layer");
    }
    for (const Json& t : types) {
      if (t == "sliding_attention") {
        ++windowed;
      } else if (t != "full_attention") {
        return fail(r.where_key("layer_types"),
                    fmt::format("layer type {} is not supported", t.dump()),
                    "gpuplan models \"full_attention\" and \"sliding_attention\" layers");
      }
    }
  } else if (m.model_type == "gemma2" || m.model_type == "gpt_oss") {
    // The even-numbered layers slide, the odd ones see everything (gpt-oss's default
    // layer_types too).
    windowed = r.has("sliding_window") ? (m.layers + 1) / 2 : 0;
  } else if (m.model_type == "gemma3_text") {
    // Every sliding_window_pattern-th layer (default 6) is global, the others slide over
    // sliding_window (default 4096), as transformers' Gemma3TextConfig sets them.
    int64_t pattern = 6;
    GPUPLAN_ASSIGN_OR_RETURN(pattern, r.count_or("sliding_window_pattern", 6));
    windowed = m.layers - m.layers / pattern;
    GPUPLAN_ASSIGN_OR_RETURN(m.window.tokens, r.count_or("sliding_window", 4096));
  } else if (m.model_type == "cohere2") {
    // Every sliding_window_pattern-th layer (default 4) is global, as Cohere2Config sets them.
    int64_t pattern = 4;
    GPUPLAN_ASSIGN_OR_RETURN(pattern, r.count_or("sliding_window_pattern", 4));
    windowed = r.has("sliding_window") ? m.layers - m.layers / pattern : 0;
  } else if (m.model_type == "mistral" || m.model_type == "mixtral" || m.model_type == "phi3" ||
             m.model_type == "starcoder2") {
    windowed = r.has("sliding_window") ? m.layers : 0;
  } else if (m.model_type.starts_with("qwen")) {
    bool use = false;
    GPUPLAN_ASSIGN_OR_RETURN(use, r.flag_or("use_sliding_window", false));
    if (use) {
      int64_t from = m.layers;
      GPUPLAN_ASSIGN_OR_RETURN(from, r.count_or("max_window_layers", m.layers));
      windowed = std::max<int64_t>(0, m.layers - from);
    }
  }
  if (windowed == 0) {
    m.window = {};
    return m;
  }
  if (m.window.tokens == 0) {
    GPUPLAN_ASSIGN_OR_RETURN(m.window.tokens, r.count("sliding_window"));
  }
  if (m.max_positions > 0 && m.window.tokens >= m.max_positions) {
    m.window = {};
    return m;
  }
  m.window.layers = windowed;
  return m;
}

// The sizes every family with Llama's field names gives: width, depth, query and key/value
// heads, MLP width, vocabulary and context (0 where the config gives none).
Result<Model> read_llama_sizes(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.hidden, r.count("hidden_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.layers, r.count("num_hidden_layers"));
  GPUPLAN_ASSIGN_OR_RETURN(m.heads, r.count("num_attention_heads"));
  GPUPLAN_ASSIGN_OR_RETURN(m.kv_heads, r.count_or("num_key_value_heads", m.heads));
  GPUPLAN_ASSIGN_OR_RETURN(m.intermediate, r.count("intermediate_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.vocab, r.count("vocab_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.max_positions, r.count_or("max_position_embeddings", 0));
  return m;
}

// Llama and the families that share its field names: Mistral, Mixtral, Qwen, Gemma 1 to 3,
// Phi-3 (and Phi-4), Granite, OLMo 2, Command R and Command A (cohere, cohere2), DeepSeek and
// GLM-4.5. Defaults are those of each family's configuration class in transformers.
Result<Model> read_llama_like(const ConfigReader& r, Model m) {
  const std::string& t = m.model_type;
  GPUPLAN_ASSIGN_OR_RETURN(m, read_llama_sizes(r, std::move(m)));
  const bool gemma = t == "gemma" || t == "gemma2" || t == "gemma3_text";
  // Command R and A run attention and the MLP in parallel off one LayerNorm without a bias, and
  // tie the head to the embedding.
  const bool cohere = t == "cohere" || t == "cohere2";
  GPUPLAN_ASSIGN_OR_RETURN(m.head_dim, r.count_or("head_dim", gemma ? 256 : m.hidden / m.heads));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", gemma || cohere));
  // Qwen2 and Qwen2-MoE bias Q, K and V but not the output projection.
  // GLM-4.5's attention_bias, like Qwen2's, biases Q, K and V only.
  const bool qwen2 = t == "qwen2" || t == "qwen2_moe";
  const bool glm = t == "glm4_moe";
  GPUPLAN_ASSIGN_OR_RETURN(m.qkv_bias, r.flag_or("attention_bias", qwen2));
  m.out_bias = qwen2 || glm ? false : m.qkv_bias;
  // Qwen3 and Gemma 3 normalise each head's queries and keys with one shared weight; OLMo 2, and
  // Command R+ under use_qk_norm, the whole projections.
  if (t == "qwen3" || t == "qwen3_moe" || t == "gemma3_text") {
    m.qk_norm = QkNorm::kPerHead;
  } else if (t == "olmo2") {
    m.qk_norm = QkNorm::kPerProjection;
  }
  if (glm || cohere) {
    bool use = false;
    GPUPLAN_ASSIGN_OR_RETURN(use, r.flag_or("use_qk_norm", false));
    if (use) {
      m.qk_norm = glm ? QkNorm::kPerHead : QkNorm::kPerProjection;
    }
  }
  GPUPLAN_ASSIGN_OR_RETURN(m.mlp_bias, r.flag_or("mlp_bias", false));
  m.gated_mlp = true;
  m.norm = cohere ? NormKind::kLayerNormNoBias : NormKind::kRmsNorm;
  // Gemma 2 and 3 add post-attention and post-MLP norms to the two before them; OLMo 2 keeps
  // only the two after.
  m.norms_per_layer = t == "gemma2" || t == "gemma3_text" ? 4 : cohere ? 1 : 2;
  if (t == "mixtral") {
    GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts, r.count("num_local_experts"));
    GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts_per_token, r.count("num_experts_per_tok"));
    m.moe.expert_intermediate = m.intermediate;
  }
  if (t == "qwen2_moe" || t == "qwen3_moe") {
    GPUPLAN_ASSIGN_OR_RETURN(m, read_qwen_moe(r, std::move(m)));
  }
  if (latent_attention(t)) {
    GPUPLAN_ASSIGN_OR_RETURN(m, read_latent_attention(r, std::move(m)));
  }
  if (deepseek_experts(t)) {
    GPUPLAN_ASSIGN_OR_RETURN(m, read_deepseek_moe(r, std::move(m)));
  }
  GPUPLAN_ASSIGN_OR_RETURN(m, read_window(r, std::move(m)));
  return m;
}

// The families whose attention reads as Llama's but whose MLP is not gated: StarCoder2 (a GELU
// MLP, biases throughout under use_bias, LayerNorms with biases, the head tied) and Nemotron
// (squared-ReLU MLP, LayerNorm1P's weight and bias, no biases elsewhere, the head untied).
Result<Model> read_plain_mlp(const ConfigReader& r, Model m) {
  const bool starcoder2 = m.model_type == "starcoder2";
  GPUPLAN_ASSIGN_OR_RETURN(m, read_llama_sizes(r, std::move(m)));
  GPUPLAN_ASSIGN_OR_RETURN(m.head_dim, r.count_or("head_dim", m.hidden / m.heads));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", starcoder2));
  if (starcoder2) {
    bool bias = true;
    GPUPLAN_ASSIGN_OR_RETURN(bias, r.flag_or("use_bias", true));
    m.qkv_bias = m.out_bias = m.mlp_bias = bias;
  } else {
    GPUPLAN_ASSIGN_OR_RETURN(m.qkv_bias, r.flag_or("attention_bias", false));
    m.out_bias = m.qkv_bias;
    GPUPLAN_ASSIGN_OR_RETURN(m.mlp_bias, r.flag_or("mlp_bias", false));
  }
  m.gated_mlp = false;
  m.norm = NormKind::kLayerNorm;
  m.norms_per_layer = 2;
  return read_window(r, std::move(m));
}

// OpenAI's gpt-oss (transformers' GptOssConfig): every layer a mixture of num_local_experts
// experts with biases on their projections, a biased router, biased attention with a learned
// sink per head, and layers alternating sliding-window and full attention (layer_types).
Result<Model> read_gpt_oss(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m, read_llama_sizes(r, std::move(m)));
  GPUPLAN_ASSIGN_OR_RETURN(m.head_dim, r.count_or("head_dim", m.hidden / m.heads));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", false));
  GPUPLAN_ASSIGN_OR_RETURN(m.qkv_bias, r.flag_or("attention_bias", true));
  m.out_bias = m.qkv_bias;
  m.attention_sinks = true;
  m.mlp_bias = true;
  m.gated_mlp = true;
  m.norm = NormKind::kRmsNorm;
  m.norms_per_layer = 2;
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts, r.count("num_local_experts"));
  GPUPLAN_ASSIGN_OR_RETURN(m.moe.experts_per_token,
                           r.count_any({"num_experts_per_tok", "experts_per_token"}));
  m.moe.expert_intermediate = m.intermediate;
  m.moe.router_bias = true;
  return read_window(r, std::move(m));
}

Result<Model> read_gpt_neox(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.hidden, r.count("hidden_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.layers, r.count("num_hidden_layers"));
  GPUPLAN_ASSIGN_OR_RETURN(m.heads, r.count("num_attention_heads"));
  GPUPLAN_ASSIGN_OR_RETURN(m.intermediate, r.count_or("intermediate_size", 4 * m.hidden));
  GPUPLAN_ASSIGN_OR_RETURN(m.vocab, r.count("vocab_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.max_positions, r.count_or("max_position_embeddings", 2048));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", false));
  GPUPLAN_ASSIGN_OR_RETURN(m.qkv_bias, r.flag_or("attention_bias", true));
  m.kv_heads = m.heads;
  m.out_bias = m.qkv_bias;
  m.mlp_bias = true;
  return m;
}

Result<Model> read_bloom(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.hidden, r.count_any({"hidden_size", "n_embed"}));
  GPUPLAN_ASSIGN_OR_RETURN(m.layers, r.count_any({"n_layer", "num_hidden_layers"}));
  GPUPLAN_ASSIGN_OR_RETURN(m.heads, r.count_any({"n_head", "num_attention_heads"}));
  GPUPLAN_ASSIGN_OR_RETURN(m.vocab, r.count("vocab_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.max_positions, r.count_or("seq_length", 2048));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", true));
  m.kv_heads = m.heads;
  m.intermediate = 4 * m.hidden;
  m.position = PositionKind::kAlibi;
  m.embedding_norm = true;
  m.qkv_bias = m.out_bias = m.mlp_bias = true;
  return m;
}

Result<Model> read_mpt(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.hidden, r.count("d_model"));
  GPUPLAN_ASSIGN_OR_RETURN(m.layers, r.count("n_layers"));
  GPUPLAN_ASSIGN_OR_RETURN(m.heads, r.count("n_heads"));
  GPUPLAN_ASSIGN_OR_RETURN(m.vocab, r.count("vocab_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.max_positions, r.count_or("max_seq_len", 2048));
  double ratio = 4;
  if (r.has("expansion_ratio")) {
    GPUPLAN_ASSIGN_OR_RETURN(ratio, r.number("expansion_ratio"));
  }
  m.intermediate = static_cast<int64_t>(ratio * static_cast<double>(m.hidden));
  bool no_bias = true;
  GPUPLAN_ASSIGN_OR_RETURN(no_bias, r.flag_or("no_bias", true));
  m.qkv_bias = m.out_bias = m.mlp_bias = !no_bias;
  m.norm = no_bias ? NormKind::kLayerNormNoBias : NormKind::kLayerNorm;
  m.kv_heads = m.heads;
  m.tied_embeddings = true;  // MPT always ties its output head to wte
  // Every released MPT uses ALiBi; a config that turns it off gets learned positions.
  bool alibi = true;
  if (r.has("attn_config") && r.raw("attn_config").is_object() &&
      r.raw("attn_config").contains("alibi")) {
    const Json& v = r.raw("attn_config")["alibi"];
    if (!v.is_boolean()) {
      return fail(r.where_key("alibi"), "key 'attn_config.alibi' must be true or false",
                  fmt::format("found {}", v.dump()));
    }
    alibi = v.get<bool>();
  }
  m.position = alibi ? PositionKind::kAlibi : PositionKind::kLearned;
  return m;
}

Result<Model> read_falcon(const ConfigReader& r, Model m) {
  GPUPLAN_ASSIGN_OR_RETURN(m.hidden, r.count("hidden_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.layers, r.count_any({"num_hidden_layers", "n_layer"}));
  GPUPLAN_ASSIGN_OR_RETURN(m.heads, r.count_any({"num_attention_heads", "n_head"}));
  GPUPLAN_ASSIGN_OR_RETURN(m.vocab, r.count("vocab_size"));
  GPUPLAN_ASSIGN_OR_RETURN(m.max_positions, r.count_or("max_position_embeddings", 2048));
  GPUPLAN_ASSIGN_OR_RETURN(m.intermediate, r.count_or("ffn_hidden_size", 4 * m.hidden));
  GPUPLAN_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag_or("tie_word_embeddings", true));
  bool new_arch = false;
  bool parallel = true;
  bool multi_query = true;
  bool bias = false;
  bool alibi = false;
  GPUPLAN_ASSIGN_OR_RETURN(new_arch, r.flag_or("new_decoder_architecture", false));
  GPUPLAN_ASSIGN_OR_RETURN(parallel, r.flag_or("parallel_attn", true));
  GPUPLAN_ASSIGN_OR_RETURN(multi_query, r.flag_or("multi_query", true));
  GPUPLAN_ASSIGN_OR_RETURN(bias, r.flag_or("bias", false));
  GPUPLAN_ASSIGN_OR_RETURN(alibi, r.flag_or("alibi", false));
  if (new_arch) {
    GPUPLAN_ASSIGN_OR_RETURN(m.kv_heads, r.count_any({"num_kv_heads", "n_head_kv"}));
    GPUPLAN_ASSIGN_OR_RETURN(m.norms_per_layer, r.count_or("num_ln_in_parallel_attn", 2));
  } else {
    m.kv_heads = multi_query ? 1 : m.heads;
    m.norms_per_layer = parallel ? 1 : 2;
  }
  m.qkv_bias = m.out_bias = m.mlp_bias = bias;
  m.position = alibi ? PositionKind::kAlibi : PositionKind::kRotary;
  return m;
}

// An upper bound, in floating point, on the parameters of `m` (every expert dense, every width
// at its largest), so that the exact counts in model.cc, in int64, cannot overflow.
double parameter_bound(const Model& m) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  const double h = d(m.hidden);
  const double heads_width = d(m.heads + m.kv_heads) * d(m.head_dim + m.mla.v_head_dim);
  const double latent = d(m.mla.q_lora_rank + m.mla.kv_lora_rank);
  const double attention = 2 * h * (heads_width + latent) + latent * 2 * heads_width;
  const double mlp_width = d(m.intermediate) +
                           d(m.moe.experts + m.moe.shared_experts) * d(m.moe.expert_intermediate) +
                           d(m.moe.shared_intermediate) + d(m.moe.experts);
  const double layer = attention + 3 * h * mlp_width + d(m.norms_per_layer + 2) * 2 * h;
  return d(m.layers + m.extra_prediction_layers) * layer + 2 * d(m.vocab + m.max_positions) * h;
}

Result<Model> check_shape(Model m, const std::string& where) {
  if (m.head_dim == 0) {
    if (m.hidden % m.heads != 0) {
      return fail(
          where,
          fmt::format("hidden size {} is not a multiple of {} attention heads", m.hidden, m.heads),
          "give 'head_dim' explicitly if the model uses a different head size");
    }
    m.head_dim = m.hidden / m.heads;
  }
  if (m.heads % m.kv_heads != 0) {
    return fail(where,
                fmt::format("{} attention heads are not a multiple of {} key/value heads", m.heads,
                            m.kv_heads),
                "grouped-query attention needs heads divisible by num_key_value_heads");
  }
  if (const double bound = parameter_bound(m); !(bound <= kMostParameters)) {
    return fail(
        where, fmt::format("a model of up to {:.3g} parameters is too large", bound),
        fmt::format("gpuplan models up to {:.0e} parameters; check the sizes", kMostParameters));
  }
  if (m.is_moe() && (m.moe.experts_per_token > m.moe.experts || m.moe.dense_layers > m.layers)) {
    return fail(where,
                fmt::format("{} experts per token out of {} experts, {} dense layers of {}",
                            m.moe.experts_per_token, m.moe.experts, m.moe.dense_layers, m.layers),
                "experts per token must not exceed the experts, nor dense layers the layers");
  }
  return m;
}

}  // namespace

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> kTypes = {
      "gpt2",      "llama",       "mistral",     "mixtral",     "qwen2",   "qwen2_moe", "qwen3",
      "qwen3_moe", "gemma",       "gemma2",      "phi3",        "granite", "olmo2",     "cohere",
      "cohere2",   "starcoder2",  "nemotron",    "gpt_neox",    "bloom",   "mpt",       "falcon",
      "gptj",      "gemma3_text", "deepseek_v2", "deepseek_v3", "kimi_k2", "glm4_moe",  "gpt_oss"};
  return kTypes;
}

// Which matrices a published format quantises, from the modules it keeps in 16 bits
// (modules_to_not_convert, compressed-tensors' ignore): the head and embeddings never count;
// attention kept out of a mixture of experts leaves the routed experts (gpt-oss; the router
// and a shared expert are counted in 16 bits with attention). Attention kept out of a dense
// model, or any other module, is a split gpuplan does not model: nullopt.
std::optional<bool> experts_only(const Json& kept, const Model& m) {
  bool attention = false;
  for (const Json& name : kept) {
    if (!name.is_string()) {
      return std::nullopt;
    }
    std::string_view n = name.get_ref<const std::string&>();
    if (n.ends_with("$")) {
      n.remove_suffix(1);  // compressed-tensors' "re:.*mlp.gate$"
    }
    const auto has = [&](std::string_view part) { return n.find(part) != std::string_view::npos; };
    if (has("attn")) {
      attention = true;
    } else if (!has("lm_head") && !has("embed") && !has("router") && !n.ends_with(".gate") &&
               !has("shared_expert_gate")) {
      return std::nullopt;
    }
  }
  if (attention && !m.is_moe()) {
    return std::nullopt;
  }
  return attention;
}

// A positive integer key of a quantisation block (bits, a group size), or `fallback` when
// absent; nullopt when malformed. -1 (GPTQ's per-channel group) reads as 0: one scale per
// row, negligible.
std::optional<int64_t> quant_count(const Json& q, const char* key, int64_t fallback) {
  if (!q.contains(key) || q[key].is_null()) {
    return fallback;
  }
  const Json& v = q[key];
  if (!v.is_number_integer() || v.get<int64_t>() > kMostDimension) {
    return std::nullopt;
  }
  const int64_t g = v.get<int64_t>();
  if (g == -1) {
    return 0;
  }
  return g > 0 ? std::optional<int64_t>(g) : std::nullopt;
}

// Bytes per weight of `bits`-bit integers with a 16-bit scale (and with `zero_point`, a
// `bits`-bit zero) per group of `group` (0: per row, negligible).
double integer_bytes(int64_t bits, int64_t group, bool zero_point) {
  const double value = static_cast<double>(bits) / 8.0;
  return group > 0 ? value + (2.0 + (zero_point ? value : 0.0)) / static_cast<double>(group)
                   : value;
}

// The checkpoint's own weight format, from `quantization_config` (transformers' quantizer
// configs). Read:
// - "mxfp4" (OCP Microscaling Formats v1.0, sec. 5: blocks of 32 E2M1 values sharing one E8M0
//   scale byte, 4.25 bits a weight);
// - "fp8" (a byte a weight, DeepSeek-V3's float32 scale per weight_block_size block);
// - "awq" and "gptq" with 4 or 8 bits: packed integers, a 16-bit scale and a packed zero per
//   group_size weights (AutoAWQ's and GPTQ's layouts), gpuplan's int4 and int8 classes;
// - "compressed-tensors" with one weight scheme (llm-compressor's checkpoints): 8-bit floats
//   (fp8), 8- or 4-bit integers by group or channel, 4-bit floats in groups of 16 (NVFP4);
// - "modelopt" (NVIDIA's TensorRT Model Optimizer checkpoints, the ones TensorRT-LLM serves):
//   quant_algo FP8 (a byte a weight) or NVFP4 (0.5625), and the KV cache its
//   kv_cache_quant_algo names.
// Modules kept in 16 bits: see experts_only. Any other method, or a scheme outside these, is
// kept by name, not understood: the weights are then 16-bit unless a precision is given, and
// the answers say so. A key of the wrong shape is an error naming the line.
Result<std::optional<ReleasedWeights>> read_released(const Json& obj, std::string_view text,
                                                     const std::string& where, const Model& m) {
  constexpr const char* kKey = "quantization_config";
  if (!obj.contains(kKey) || obj[kKey].is_null()) {
    return std::optional<ReleasedWeights>();
  }
  const Json& q = obj[kKey];
  const std::string at = locate(text, where, kKey);
  if (!q.is_object()) {
    return fail(at, "key 'quantization_config' must be an object",
                fmt::format("found {}", q.dump()));
  }
  if (!q.contains("quant_method") || !q["quant_method"].is_string()) {
    return fail(at, "quantization_config has no quant_method string",
                "as transformers writes it, e.g. \"quant_method\": \"fp8\"");
  }
  ReleasedWeights w;
  w.method = q["quant_method"].get<std::string>();
  if (w.method.size() > 64) {
    return fail(at, "quantization_config.quant_method is longer than 64 characters",
                "as transformers writes it, e.g. \"quant_method\": \"fp8\"");
  }
  // What stays in 16 bits.
  // (Model Optimizer's legacy hf_quant_config.json says exclude_modules, its config.json ignore.)
  const char* kept_key = w.method == "compressed-tensors" ? "ignore"
                         : w.method == "modelopt"
                             ? (q.contains("exclude_modules") ? "exclude_modules" : "ignore")
                             : "modules_to_not_convert";
  std::optional<bool> scope = false;
  if (q.contains(kept_key) && !q[kept_key].is_null()) {
    if (!q[kept_key].is_array()) {
      return fail(at, fmt::format("quantization_config.{} must be a list of names", kept_key),
                  fmt::format("found {}", q[kept_key].dump()));
    }
    scope = experts_only(q[kept_key], m);
  }
  auto read = [&](Precision p, double bytes) {
    w.understood = scope.has_value();
    w.precision = p;
    w.bytes = bytes;
    w.experts_only = scope.value_or(false);
  };
  if (w.method == "mxfp4") {
    read(Precision::kFp4, 0.5 + 1.0 / 32.0);
  } else if (w.method == "fp8") {
    double bytes = 1.0;
    if (q.contains("weight_block_size") && !q["weight_block_size"].is_null()) {
      const Json& block = q["weight_block_size"];
      const auto side = [](const Json& v) {
        return v.is_number_integer() && v.get<int64_t>() > 0 && v.get<int64_t>() <= 65536;
      };
      if (!block.is_array() || block.size() != 2 || !side(block[0]) || !side(block[1])) {
        return fail(at, "quantization_config.weight_block_size must be two positive integers",
                    fmt::format("found {}; DeepSeek-V3 gives [128, 128]", block.dump()));
      }
      bytes += 4.0 / static_cast<double>(block[0].get<int64_t>() * block[1].get<int64_t>());
    }
    read(Precision::kFp8, bytes);
  } else if (w.method == "awq" || w.method == "gptq") {
    // transformers writes bits and group_size; AutoAWQ's own files w_bit and q_group_size.
    const bool old_names = !q.contains("bits") && q.contains("w_bit");
    const std::optional<int64_t> bits = quant_count(q, old_names ? "w_bit" : "bits", 4);
    const std::optional<int64_t> group = quant_count(
        q, !q.contains("group_size") && q.contains("q_group_size") ? "q_group_size" : "group_size",
        128);
    if (!bits || !group) {
      return fail(at, "quantization_config's bits and group_size must be positive integers",
                  "as AutoAWQ and GPTQ write them, e.g. \"bits\": 4, \"group_size\": 128");
    }
    if (*bits == 4 || *bits == 8) {
      // Both store a zero per group (GPTQ's qzeros even when symmetric).
      read(*bits == 4 ? Precision::kInt4 : Precision::kInt8, integer_bytes(*bits, *group, true));
    }
  } else if (w.method == "modelopt") {
    const std::string algo = q.contains("quant_algo") && q["quant_algo"].is_string()
                                 ? q["quant_algo"].get<std::string>()
                                 : "";
    if (algo == "FP8" || algo == "FP8_PER_CHANNEL_PER_TOKEN") {
      read(Precision::kFp8, 1.0);  // per-tensor or per-channel scales: negligible
    } else if (algo == "NVFP4") {
      read(Precision::kFp4, precision_bytes(Precision::kFp4));
    }
    if (q.contains("kv_cache_quant_algo") && q["kv_cache_quant_algo"].is_string() &&
        q["kv_cache_quant_algo"].get<std::string>() == "FP8") {
      w.kv = Precision::kFp8;
    }
  } else if (w.method == "compressed-tensors" && q.contains("config_groups") &&
             q["config_groups"].is_object() && q["config_groups"].size() == 1) {
    const Json& group = q["config_groups"].begin().value();
    const Json* weights =
        group.is_object() && group.contains("weights") ? &group["weights"] : nullptr;
    if (weights != nullptr && weights->is_object() && weights->contains("num_bits") &&
        (*weights)["num_bits"].is_number_integer() && weights->contains("type") &&
        (*weights)["type"].is_string()) {
      const int64_t bits = (*weights)["num_bits"].get<int64_t>();
      const std::string type = (*weights)["type"].get<std::string>();
      const std::string strategy =
          weights->contains("strategy") && (*weights)["strategy"].is_string()
              ? (*weights)["strategy"].get<std::string>()
              : "";
      const std::optional<int64_t> size = quant_count(*weights, "group_size", 0);
      const bool grouped = strategy == "group" || strategy == "tensor_group";
      const bool symmetric = !weights->contains("symmetric") ||
                             !(*weights)["symmetric"].is_boolean() ||
                             (*weights)["symmetric"].get<bool>();
      if (!size) {
        return fail(at, "quantization_config's group_size must be a positive integer",
                    "as llm-compressor writes it, e.g. \"group_size\": 128");
      }
      if (type == "float" && bits == 8 && strategy != "group") {
        read(Precision::kFp8, 1.0);  // per-tensor, -channel or -block scales: negligible
      } else if (type == "float" && bits == 4 && grouped && *size == 16) {
        read(Precision::kFp4, precision_bytes(Precision::kFp4));  // NVFP4
      } else if (type == "int" && (bits == 4 || bits == 8) && (grouped || strategy == "channel")) {
        read(bits == 4 ? Precision::kInt4 : Precision::kInt8,
             integer_bytes(bits, grouped ? *size : 0, !symmetric));
      }
    }
  }
  return std::optional<ReleasedWeights>(w);
}

Result<Model> parse_model_config(std::string_view json_text, const std::string& where,
                                 const std::string& id) {
  Json obj;
  GPUPLAN_ASSIGN_OR_RETURN(
      obj, detail::parse_json(json_text, where, "a config.json is one JSON object"));
  if (!obj.is_object()) {
    return fail(where, "a model config must be a JSON object", "as in a Hugging Face config.json");
  }
  const ConfigReader r(obj, json_text, where);
  if (!r.has("model_type") || !obj["model_type"].is_string()) {
    return fail(where, "missing key 'model_type'",
                fmt::format("one of: {}", fmt::join(supported_model_types(), ", ")));
  }
  Model m;
  m.id = id;
  m.model_type = obj["model_type"].get<std::string>();
  Result<Model> read = [&]() -> Result<Model> {
    const std::string& t = m.model_type;
    if (t == "gpt2")
      return read_gpt2(r, m);
    if (t == "gptj")
      return read_gptj(r, m);
    if (t == "gpt_neox")
      return read_gpt_neox(r, m);
    if (t == "bloom")
      return read_bloom(r, m);
    if (t == "mpt")
      return read_mpt(r, m);
    if (t == "falcon")
      return read_falcon(r, m);
    if (t == "gpt_oss")
      return read_gpt_oss(r, m);
    if (t == "llama" || t == "mistral" || t == "mixtral" || t == "qwen2" || t == "qwen2_moe" ||
        t == "qwen3" || t == "qwen3_moe" || t == "gemma" || t == "gemma2" || t == "gemma3_text" ||
        t == "phi3" || t == "granite" || t == "olmo2" || t == "cohere" || t == "cohere2" ||
        deepseek_experts(t)) {
      return read_llama_like(r, m);
    }
    if (t == "starcoder2" || t == "nemotron")
      return read_plain_mlp(r, m);
    if (t == "gemma3") {
      // The multimodal Gemma 3 checkpoints nest the language model under text_config, beside a
      // vision encoder gpuplan does not model: refused rather than counted short.
      return fail(r.where_key("model_type"),
                  "model_type 'gemma3' is a language model with a vision encoder, which gpuplan "
                  "does not model",
                  "give its text_config as a config.json of model_type 'gemma3_text' (the "
                  "vision encoder's weights, about 0.4 B, are then left out)");
    }
    // Other multimodal checkpoints (Mistral Small 3.1, Qwen2.5-VL, LLaVA) nest their language
    // model the same way: say which part gpuplan can read.
    if (r.has("text_config") && r.raw("text_config").is_object()) {
      const Json& text = r.raw("text_config");
      const std::string inner = text.contains("model_type") && text["model_type"].is_string()
                                    ? text["model_type"].get<std::string>()
                                    : std::string();
      if (std::ranges::find(supported_model_types(), inner) != supported_model_types().end()) {
        return fail(r.where_key("model_type"),
                    fmt::format("model_type '{}' nests a '{}' language model beside other "
                                "encoders, which gpuplan does not model",
                                t, inner),
                    fmt::format("give its text_config as a config.json of model_type '{}' "
                                "(the other encoders' weights are then left out)",
                                inner));
      }
    }
    return fail(r.where_key("model_type"), fmt::format("unsupported model_type '{}'", t),
                suggestion_hint(t, supported_model_types()));
  }();
  if (!read) {
    return read;
  }
  GPUPLAN_ASSIGN_OR_RETURN(read->released, read_released(obj, json_text, where, *read));
  // Dropout probabilities, under whichever names the family uses; absent keys keep the
  // family's default (on for GPT-2, off for the others).
  for (const char* key : {"resid_pdrop", "attn_pdrop", "hidden_dropout", "attention_dropout",
                          "hidden_dropout_prob", "attention_probs_dropout_prob"}) {
    if (obj.contains(key) && obj[key].is_number()) {
      if (obj[key].get<double>() > 0) {
        read->dropout = true;
      } else if (m.model_type == "gpt2") {
        read->dropout = false;
      }
    }
  }
  return check_shape(*read, where);
}

Result<Model> load_model_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(path, "cannot open the file", "check the path");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::filesystem::path p(path);
  std::string id = p.stem().string();
  if (id == "config" && p.has_parent_path()) {
    id = p.parent_path().filename().string();
  }
  Result<Model> m = parse_model_config(buffer.str(), path, id);
  if (m) {
    m->file = path;
  }
  return m;
}

}  // namespace gpuplan
