// Transformer architectures, and the parameter counts that follow from them.
//
// A Model is the normalised form of a Hugging Face `config.json`: whatever the family (GPT-2,
// Llama, Mistral, Mixtral, Qwen, Gemma 1 to 3, Phi-3 and Phi-4, Granite, Command R and A, OLMo 2,
// StarCoder2, Nemotron-4, GPT-NeoX, BLOOM, MPT, Falcon, GPT-J, DeepSeek, GLM-4.5, gpt-oss), it
// becomes one decoder-only transformer description with dense or grouped-query attention (or
// DeepSeek's multi-head latent attention), some layers perhaps over a sliding window, a plain or
// gated MLP, some parallel to attention, and optionally mixture-of-experts layers. Parameter
// counts are exact: for the built-in models they match the totals their publishers print, and tests
// pin them. load_model_config() in model_loader.h reads the files; everything here is arithmetic on
// a validated Model.
#ifndef GPUPLAN_MODEL_H_
#define GPUPLAN_MODEL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/hardware.h"
#include "gpuplan/result.h"

namespace gpuplan {

enum class NormKind {
  kLayerNorm,        // weight and bias: 2h parameters
  kLayerNormNoBias,  // weight only: h parameters (MPT)
  kRmsNorm,          // weight only: h parameters
};

enum class PositionKind { kLearned, kRotary, kAlibi };

// Normalisation of the queries and keys before attention.
enum class QkNorm {
  kNone,
  kPerHead,        // one weight per head dimension, shared by every head: 2 d (Qwen3, Gemma 3)
  kPerProjection,  // a weight per element of the projection: (a + k) d (OLMo 2, Command R+)
};

// DeepSeek multi-head latent attention (MLA) sizes; all zero for ordinary attention.
struct LatentAttention {
  int64_t q_lora_rank = 0;  // 0: queries are not compressed
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// Mixture-of-experts sizes; experts == 0 means every layer is dense.
struct MixtureOfExperts {
  int64_t experts = 0;              // routed experts per MoE layer
  int64_t experts_per_token = 0;    // routed experts each token visits
  int64_t shared_experts = 0;       // experts every token visits (DeepSeek)
  int64_t expert_intermediate = 0;  // MLP width of one expert
  int64_t shared_intermediate = 0;  // MLP width of all shared experts together; 0: shared_experts x
                                    // expert_intermediate (Qwen2-MoE gives it apart)
  int64_t dense_layers = 0;         // the first layers that stay dense (DeepSeek first_k_dense)
  bool router_bias = false;         // per-expert score-correction bias (DeepSeek-V3)
  bool shared_gate = false;         // a sigmoid gate on the shared expert, h parameters (Qwen2-MoE)
};

// The weights' format as the checkpoint is published, where its config declares one
// (`quantization_config`): gpt-oss ships its routed experts in MXFP4, DeepSeek-V3 and Kimi K2
// their matrices in fp8 with a scale per 128 x 128 block. Inference takes it as the weights when
// no precision is given (memory.h: choose_weights); training ignores it.
struct ReleasedWeights {
  std::string method;                      // quant_method as written ("mxfp4", "fp8", "awq")
  bool understood = false;                 // false: a method gpuplan does not read
  Precision precision = Precision::kBf16;  // the class of the quantised matrices (fp4, fp8)
  double bytes = 2;                        // per quantised weight, block scales included
  bool experts_only = false;  // only the routed experts' matrices; attention and router 16-bit
  // The KV cache the checkpoint quantises to (Model Optimizer's kv_cache_quant_algo), which an
  // engine whose cache follows the checkpoint keeps; nullopt: none named.
  std::optional<Precision> kv;
};

// Sliding-window attention: `layers` of the model's layers attend to the last `tokens`
// positions only, and their KV cache keeps no more (Mistral 7B v0.1, Gemma 2 and 3, gpt-oss).
// Which layers they are does not matter to the totals; a pipeline stage is taken to hold its
// share.
struct SlidingWindow {
  int64_t tokens = 0;  // 0: every layer attends to the whole context
  int64_t layers = 0;  // 0 < layers <= Model::layers when tokens > 0
};

struct Model {
  std::string id;          // catalog id ("llama-3.1-8b") or the file it came from
  std::string model_type;  // the Hugging Face model_type it was read as
  std::string file;        // where it was read from; empty for a model built in code
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;      // == heads for multi-head attention, 1 for multi-query
  int64_t head_dim = 0;      // usually hidden / heads; Gemma 2 and some Llamas set it apart
  int64_t intermediate = 0;  // MLP width of a dense layer
  int64_t vocab = 0;
  int64_t max_positions = 0;  // longest context the model was built for (tokens)
  bool gated_mlp = false;     // SwiGLU/GeGLU: three matrices instead of two
  bool tied_embeddings = false;
  NormKind norm = NormKind::kLayerNorm;
  int64_t norms_per_layer = 2;  // 1 for GPT-J / old Falcon parallel blocks, 4 for Gemma 2
  bool embedding_norm = false;  // BLOOM normalises the embeddings
  PositionKind position = PositionKind::kRotary;
  bool qkv_bias = false;
  bool out_bias = false;  // attention output projection bias
  bool mlp_bias = false;
  bool lm_head_bias = false;  // GPT-J
  bool dropout = false;       // trained with dropout, whose masks the backward pass keeps
  QkNorm qk_norm = QkNorm::kNone;
  bool attention_sinks = false;  // a learned sink logit per head and layer (gpt-oss)
  LatentAttention mla;
  MixtureOfExperts moe;
  int64_t extra_prediction_layers = 0;  // DeepSeek MTP modules: not counted in `params`
  SlidingWindow window;
  std::optional<ReleasedWeights> released;  // nullopt: published in 16 bits

  bool is_moe() const { return moe.experts > 0; }
  bool is_latent_attention() const { return mla.kv_lora_rank > 0; }
  bool has_window() const { return window.tokens > 0; }
};

// The parameters of one transformer layer, split by how tensor parallelism treats them.
struct LayerParameters {
  int64_t sharded = 0;         // matrices (and their biases) split across a TP group
  int64_t replicated = 0;      // norms and the row-parallel biases every TP rank keeps whole
  int64_t matmul = 0;          // weights of all matrix multiplies (quantisable in inference)
  int64_t active_matmul = 0;   // matmul weights one token actually uses (MoE: k of n experts)
  int64_t routed_experts = 0;  // of `sharded`, the routed experts' weights (split by EP too)

  int64_t total() const { return sharded + replicated; }
};

// Returns the parameters of layer `index` (0-based); DeepSeek's first layers are dense.
// REQUIRES: 0 <= index < model.layers.
LayerParameters layer_parameters(const Model& model, int64_t index);

// A run of identical layers: [first, first + count). A model has one span, or two for
// DeepSeek-style MoE models whose first layers stay dense.
struct LayerSpan {
  int64_t first = 0;
  int64_t count = 0;
};

// A model's spans, first to last: one or two, held without allocating.
class LayerSpans {
 public:
  void push_back(LayerSpan s) { spans_[size_++] = s; }
  const LayerSpan* begin() const { return spans_.data(); }
  const LayerSpan* end() const { return spans_.data() + size_; }
  size_t size() const { return size_; }

 private:
  std::array<LayerSpan, 2> spans_{};
  size_t size_ = 0;
};
LayerSpans layer_spans(const Model& model);

// How many layers of `span` fall in [first, first + count).
int64_t layers_in_span(const LayerSpan& span, int64_t first, int64_t count);

// Whole-model counts.
struct ParameterCount {
  int64_t total = 0;                 // what publishers print as the model size
  int64_t embedding = 0;             // token embedding matrix (vocab x hidden)
  int64_t position = 0;              // learned position embeddings, 0 for rotary/ALiBi
  int64_t lm_head = 0;               // output projection, 0 when tied to the embedding
  int64_t norms_outside_layers = 0;  // final norm (+ BLOOM's embedding norm)
  int64_t layers = 0;                // sum over all transformer layers
  int64_t active_per_token = 0;      // parameters one token passes through (== total if dense)
};

ParameterCount count_parameters(const Model& model);

// MLP width of the shared experts of a MoE layer together (0 without any).
int64_t shared_expert_width(const Model& model);

// Bytes of key/value cache one token occupies across all layers, per element size
// `bytes_per_element` (2 for fp16/bf16): 2 * layers * kv_heads * head_dim * bytes, or the
// compressed latent (kv_lora_rank + qk_rope_head_dim) per layer for MLA.
double kv_cache_bytes_per_token(const Model& model, double bytes_per_element);

// The KV cache a sequence of `context` tokens holds, in tokens of every layer: `context` itself
// without a sliding window, else (full layers x context + windowed layers x min(context,
// window)) / layers.
double held_context(const Model& model, double context);

// The longest context whose KV cache is `held` tokens of every layer: held_context's inverse
// (unbounded, as INT64_MAX, when every layer is windowed and `held` covers the window).
int64_t context_held_in(const Model& model, double held);

// The (query, key) pairs of `queries` causal queries that follow `done` positions, averaged over
// the layers: queries x done + queries (queries + 1) / 2 without a sliding window; a windowed
// layer's query at position p (1-based) sees min(p, window) keys.
double attended_keys(const Model& model, double done, double queries);

// attended_keys of a whole causal sequence of `seq` tokens as a share of full attention's in
// every layer: 1 without a sliding window.
double attended_share(const Model& model, int64_t seq);

// `tokens` in one sequence (a training sequence, a prompt and its output), or an Error at
// `given_as` when they exceed the context the model was built for: the one context rule of fit,
// train, scale, plan and serve. A model with no known limit takes any length.
Result<int64_t> check_context(const Model& model, int64_t tokens, std::string_view given_as);

}  // namespace gpuplan

#endif  // GPUPLAN_MODEL_H_
