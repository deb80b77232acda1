// Serving engines (data/engines/<id>.toml): the defaults an engine starts with when nobody tunes
// it — how much memory it gives the KV cache and of what, how many sequences and tokens one
// iteration takes, the KV block size, whether it reserves a request's whole context or pages it
// in and preempts, and the host time it adds to every iteration where that was fitted.
//
// A profile is applied to the shared serving parameters (params.h) for one GPU: engines pick
// larger batch and token limits on GPUs with more memory, so the numbers depend on the card.
#ifndef GPUPLAN_ENGINE_H_
#define GPUPLAN_ENGINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/hardware.h"
#include "gpuplan/memory.h"
#include "gpuplan/params.h"
#include "gpuplan/result.h"
#include "gpuplan/units.h"

namespace gpuplan {

// How an engine gives out its KV cache.
enum class KvPolicy {
  kReserve,  // a request's whole context (prompt + output) at admission; nothing is evicted
             // (TensorRT-LLM's GUARANTEED_NO_EVICT)
  kPaged,    // blocks as the sequence grows; when the cache runs out, the newest sequence is
             // preempted and later recomputes its prompt and output so far (vLLM)
};
std::string_view kv_policy_name(KvPolicy p);
Result<KvPolicy> parse_kv_policy(std::string_view name);
std::vector<std::string> kv_policy_names();  // every name parse_kv_policy takes, in order

// How an engine puts prompts and decoding sequences into its iterations.
enum class PromptScheduling {
  kMixed,         // every running sequence decodes each iteration and prompt chunks fill the
                  // rest of the token budget (TensorRT-LLM, vLLM, TGI with prefill chunking)
  kPrefillFirst,  // while prompts wait or are in progress, an iteration runs only them and the
                  // decoding sequences wait (SGLang without --enable-mixed-chunk)
};
std::string_view prompt_scheduling_name(PromptScheduling s);
Result<PromptScheduling> parse_prompt_scheduling(std::string_view name);

// Limits an engine picks on GPUs with at least `min_memory` (the capacity the driver reports),
// except the GPUs listed; where `gpus` lists some (an engine that goes by the card's name), only
// on those.
struct EngineTier {
  Bytes min_memory;
  int64_t max_batch = 0;
  int64_t max_tokens = 0;
  std::vector<std::string> except_gpus;  // catalog GPU ids
  std::vector<std::string> gpus;         // catalog GPU ids; empty: any

  bool applies(const Gpu& gpu) const;
};

struct EngineProfile {
  std::string id;
  std::string name;
  // How published results name the engine: a row's engine text that starts with one of these
  // (any case) ran this engine.
  std::vector<std::string> aliases;
  KvPolicy kv_policy = KvPolicy::kReserve;
  // The KV cache's precision when none is named (memory.h: choose_weights).
  KvDefault kv_cache = KvDefault::kFollowsWeights;
  PromptScheduling scheduling = PromptScheduling::kMixed;
  // The KV cache's share of the GPU's whole memory, less what weights and working memory take
  // (vLLM, SGLang); or of the memory those leave (TensorRT-LLM).
  bool kv_of_total = false;
  double kv_memory_fraction = 0;
  int64_t max_batch = 0;          // sequences per iteration
  int64_t max_tokens = 0;         // tokens per iteration: the chunked-prefill budget
  std::vector<EngineTier> tiers;  // by rising min_memory; the last that applies wins
  int64_t kv_block_tokens = 1;
  // On these GPUs the prefill budget is a second of the instance's 16-bit peak in tokens
  // (InferenceParams::prefill_budget_peak_second); elsewhere max_tokens.
  std::vector<std::string> peak_second_gpus;
  // Host time per iteration, where published runs of this engine fitted it; absent: the shared
  // fitted value (params/inference.toml), which only TensorRT-LLM rows informed.
  std::optional<Seconds> iteration_overhead;
  // Host time per sequence that samples a token in an iteration, beyond the shared host time:
  // the per-request work (input preparation, output processing) a Python engine does between
  // two forward passes while the GPU waits. Zero where the engine's per-request work is in its
  // fitted host time (TensorRT-LLM) or no measurement of it was published.
  Seconds sequence_overhead;
  // The releases whose GPU waits for that work, from `host_waits_from` (empty: the first) up to
  // and without `host_waits_until` (empty: to the current one). Other releases do it while the
  // GPU runs the iteration before, so it costs only what it takes beyond the GPU's time (vLLM
  // waits from 0.8, whose V1 engine measured it, until 0.14 and its async scheduling).
  std::string host_waits_from;
  std::string host_waits_until;
  // Requests in a run of the engine's own serving benchmark, where a published result does not
  // say how many (its client's default, or the count its publisher states for its serving
  // tables); absent: the engine has no such client. What a run that queues reports depends on
  // it: the time to first token grows with the requests still waiting, and the batch, hence the
  // time between tokens, thins as the last of them drain.
  std::optional<int64_t> benchmark_requests;
  std::string source;
  std::string file;

  // Whether a published engine name names this engine: one of its aliases, in any case, at
  // the start ("TensorRT-LLM 0.17 + Triton") or as a word of its own further on ("Triton +
  // vLLM backend", "NVIDIA NIM (TensorRT-LLM)").
  bool names(std::string_view published) const;
  // Where the earliest alias in the name stands, [start, end); nullopt where none names this
  // engine.
  struct NameSpan {
    size_t start = 0;
    size_t end = 0;
  };
  std::optional<NameSpan> find_name(std::string_view published) const;
  // The release a published engine name gives right after the alias that names the engine
  // ("vLLM 0.10.0" -> "0.10.0"); empty where it gives none.
  std::string published_version(std::string_view published) const;
  // Whether the GPU waits for the per-sequence host work in release `version` (empty: the
  // current release).
  bool host_waits(std::string_view version) const;
};

// What an engine runs with on one GPU.
struct EngineSettings {
  InferenceParams inference;
  MemoryParams memory;
  KvPolicy kv_policy = KvPolicy::kReserve;
  // Whether the host time per iteration was fitted to this engine's published runs (its own, or
  // the shared one when `inference` came from the catalog and this is its default engine).
  bool host_time_fitted = true;
};

// A serving engine as a job names it, "ID" or "ID@RELEASE" (Catalog::engine_choice): its
// profile, and the release whose behaviour applies (empty: the engine's current release).
struct EngineChoice {
  const EngineProfile* profile = nullptr;
  std::string release;
};

// `text` as an engine release: dotted numbers ("0.10.0"), or an error saying so.
Result<std::string> parse_release(std::string_view text);

// Whether release `version` ("0.10.0") is `since` ("0.14") or later, comparing the dotted
// numbers in turn (a missing one counts as 0). False where either is not such a number.
bool version_at_least(std::string_view version, std::string_view since);

// The shared parameters with the profile's values on `gpu`, for the engine's release `version`
// (empty: its current release); engine_defaults: with the values it takes on a GPU no tier
// names.
EngineSettings engine_settings(const EngineProfile& e, const Gpu& gpu, InferenceParams inference,
                               MemoryParams memory, std::string_view version = {});
EngineSettings engine_defaults(const EngineProfile& e, InferenceParams inference,
                               MemoryParams memory);

}  // namespace gpuplan

#endif  // GPUPLAN_ENGINE_H_
