#include "gpuplan/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/suggest.h"
#include "loaders.h"
#include "name_table.h"

namespace gpuplan {

namespace {

bool word_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

}  // namespace

std::optional<EngineProfile::NameSpan> EngineProfile::find_name(std::string_view published) const {
  const std::string text = lowercase(published);
  std::optional<NameSpan> best;
  for (const std::string& a : aliases) {
    const std::string alias = lowercase(a);
    if (alias.empty()) {
      continue;
    }
    // At the start ("vLLM 0.10.0"), or as a word of its own after something else ("Triton +
    // vLLM backend", "NVIDIA NIM (TensorRT-LLM)"), not inside a longer word.
    for (size_t at = text.find(alias); at != std::string::npos; at = text.find(alias, at + 1)) {
      const size_t end = at + alias.size();
      const bool whole = at == 0 || (!word_character(text[at - 1]) &&
                                     (end == text.size() || !word_character(text[end])));
      if (whole) {
        if (!best || at < best->start) {
          best = NameSpan{at, end};
        }
        break;
      }
    }
  }
  return best;
}

bool EngineProfile::names(std::string_view published) const {
  return find_name(published).has_value();
}

std::string EngineProfile::published_version(std::string_view published) const {
  const std::optional<NameSpan> span = find_name(published);
  if (!span) {
    return "";
  }
  std::string_view rest = published.substr(span->end);
  const size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos || start == 0) {
    return "";  // nothing after the name, or the name runs on into a longer word
  }
  rest = rest.substr(start);
  const size_t stop = rest.find_first_not_of("0123456789.");
  if (Result<std::string> version = parse_release(rest.substr(0, stop))) {
    return *version;
  }
  return "";
}

bool EngineProfile::host_waits(std::string_view version) const {
  if (version.empty()) {
    return host_waits_until.empty();  // the current release is past every release listed
  }
  return (host_waits_from.empty() || version_at_least(version, host_waits_from)) &&
         (host_waits_until.empty() || !version_at_least(version, host_waits_until));
}

namespace {

// The dotted numbers of a release ("0.10.0" -> 0, 10, 0); empty where `v` is not one.
std::vector<int64_t> release_numbers(std::string_view v) {
  std::vector<int64_t> numbers;
  if (v.empty() || v.front() == '.' || v.back() == '.') {
    return {};
  }
  int64_t n = 0;
  bool digit = false;
  for (char ch : v) {
    if (ch == '.') {
      if (!digit) {
        return {};
      }
      numbers.push_back(n);
      n = 0;
      digit = false;
    } else if (ch >= '0' && ch <= '9' && n < 1'000'000) {
      n = n * 10 + (ch - '0');
      digit = true;
    } else {
      return {};
    }
  }
  numbers.push_back(n);
  return numbers;
}

}  // namespace

Result<std::string> parse_release(std::string_view text) {
  if (!version_at_least(text, "0")) {
    return fail("", fmt::format("'{}' is not a release number", text),
                "write a release as dotted numbers, e.g. \"0.10.0\"");
  }
  return std::string(text);
}

bool version_at_least(std::string_view version, std::string_view since) {
  const std::vector<int64_t> v = release_numbers(version);
  const std::vector<int64_t> s = release_numbers(since);
  if (v.empty() || s.empty()) {
    return false;
  }
  for (size_t i = 0; i < std::max(v.size(), s.size()); ++i) {
    const int64_t a = i < v.size() ? v[i] : 0;
    const int64_t b = i < s.size() ? s[i] : 0;
    if (a != b) {
      return a > b;
    }
  }
  return true;
}

namespace {

constexpr std::array kKvPolicies = {
    std::pair{KvPolicy::kReserve, std::string_view("reserve")},
    std::pair{KvPolicy::kPaged, std::string_view("paged")},
};

constexpr std::array kPromptSchedulings = {
    std::pair{PromptScheduling::kMixed, std::string_view("mixed")},
    std::pair{PromptScheduling::kPrefillFirst, std::string_view("prefill-first")},
};

// Whether a profile's list of catalog GPU ids names `gpu`.
bool lists(const std::vector<std::string>& ids, const Gpu& gpu) {
  return std::find(ids.begin(), ids.end(), gpu.id) != ids.end();
}

EngineSettings apply(const EngineProfile& e, int64_t max_batch, int64_t max_tokens,
                     bool peak_second, std::string_view version, InferenceParams inference,
                     MemoryParams memory) {
  EngineSettings s;
  // Fitted: the profile's own, or the shared one, fitted with this engine's runs.
  s.host_time_fitted = e.iteration_overhead.has_value() || inference.engine == e.id;
  inference.kv_memory_fraction = e.kv_memory_fraction;
  inference.kv_of_total = e.kv_of_total;
  inference.max_batch = max_batch;
  inference.kv_block_tokens = e.kv_block_tokens;
  inference.prefill_budget_peak_second = peak_second;
  inference.prefill_first = e.scheduling == PromptScheduling::kPrefillFirst;
  inference.engine = e.id;
  if (e.iteration_overhead) {
    inference.iteration_overhead = *e.iteration_overhead;
  }
  inference.sequence_overhead = e.sequence_overhead;
  inference.sequence_overhead_overlapped = !e.host_waits(version);
  memory.inference_chunk_tokens = max_tokens;
  s.inference = inference;
  s.memory = memory;
  s.kv_policy = e.kv_policy;
  return s;
}

}  // namespace

bool EngineTier::applies(const Gpu& gpu) const {
  return gpu.memory_usable.si() >= min_memory.si() && !lists(except_gpus, gpu) &&
         (gpus.empty() || lists(gpus, gpu));
}

EngineSettings engine_settings(const EngineProfile& e, const Gpu& gpu, InferenceParams inference,
                               MemoryParams memory, std::string_view version) {
  int64_t max_batch = e.max_batch;
  int64_t max_tokens = e.max_tokens;
  for (const EngineTier& t : e.tiers) {
    if (t.applies(gpu)) {
      max_batch = t.max_batch;
      max_tokens = t.max_tokens;
    }
  }
  return apply(e, max_batch, max_tokens, lists(e.peak_second_gpus, gpu), version,
               std::move(inference), memory);
}

EngineSettings engine_defaults(const EngineProfile& e, InferenceParams inference,
                               MemoryParams memory) {
  return apply(e, e.max_batch, e.max_tokens, false, {}, std::move(inference), memory);
}

std::string_view kv_policy_name(KvPolicy p) {
  return detail::name_of(kKvPolicies, p);
}

Result<KvPolicy> parse_kv_policy(std::string_view name) {
  return detail::parse_from(kKvPolicies, name, "KV policy");
}

std::vector<std::string> kv_policy_names() {
  return detail::names_in(kKvPolicies);
}

std::string_view prompt_scheduling_name(PromptScheduling s) {
  return detail::name_of(kPromptSchedulings, s);
}

Result<PromptScheduling> parse_prompt_scheduling(std::string_view name) {
  return detail::parse_from(kPromptSchedulings, name, "prompt scheduling");
}

namespace detail {

Result<EngineProfile> load_engine(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");
  EngineProfile e;
  e.file = path;
  GPUPLAN_ASSIGN_OR_RETURN(e.id, checked_id(r));
  GPUPLAN_ASSIGN_OR_RETURN(e.name, r.text("name"));
  GPUPLAN_ASSIGN_OR_RETURN(e.aliases, r.text_list("aliases"));
  std::string policy, basis;
  GPUPLAN_ASSIGN_OR_RETURN(policy, r.text("kv_policy"));
  Result<KvPolicy> kv = parse_kv_policy(policy);
  if (!kv) {
    return fail(r.where("kv_policy"), kv.error().what, kv.error().hint);
  }
  e.kv_policy = *kv;
  std::string kv_cache;
  GPUPLAN_ASSIGN_OR_RETURN(kv_cache, r.text("kv_cache"));
  if (kv_cache != "weights" && kv_cache != "model") {
    return fail(r.where("kv_cache"), fmt::format("'{}' is not a KV cache default", kv_cache),
                "weights (fp8 and fp4 weights bring an fp8 cache) or model (the model's 16-bit "
                "type, an \"auto\" KV dtype)");
  }
  e.kv_cache = kv_cache == "model" ? KvDefault::kModelType : KvDefault::kFollowsWeights;
  std::optional<std::string> scheduling;
  GPUPLAN_ASSIGN_OR_RETURN(scheduling, r.optional_text("scheduling"));
  if (scheduling) {
    Result<PromptScheduling> s = parse_prompt_scheduling(*scheduling);
    if (!s) {
      return fail(r.where("scheduling"), s.error().what, s.error().hint);
    }
    e.scheduling = *s;
  }
  GPUPLAN_ASSIGN_OR_RETURN(basis, r.text("kv_memory_of"));
  if (basis != "free" && basis != "total") {
    return fail(r.where("kv_memory_of"),
                fmt::format("'{}' is not what KV memory is a share of", basis),
                "free (what weights and workspace leave) or total (the whole GPU)");
  }
  e.kv_of_total = basis == "total";
  GPUPLAN_ASSIGN_OR_RETURN(e.kv_memory_fraction, r.number("kv_memory_fraction", 0.05, 1.0));
  GPUPLAN_ASSIGN_OR_RETURN(e.max_batch, r.integer("max_batch", 1, int64_t{1} << 20));
  GPUPLAN_ASSIGN_OR_RETURN(e.max_tokens, r.integer("max_tokens", 1, int64_t{1} << 24));
  GPUPLAN_ASSIGN_OR_RETURN(e.kv_block_tokens, r.integer("kv_block_tokens", 1, 4096));
  if (r.raw("prefill_budget_peak_second_gpus") != nullptr) {
    GPUPLAN_ASSIGN_OR_RETURN(e.peak_second_gpus, r.text_list("prefill_budget_peak_second_gpus"));
  }
  std::optional<double> overhead;
  GPUPLAN_ASSIGN_OR_RETURN(overhead,
                           r.optional_quantity("iteration_overhead", Dimension::kSeconds));
  if (overhead) {
    e.iteration_overhead = Seconds(*overhead);
  }
  GPUPLAN_ASSIGN_OR_RETURN(overhead, r.optional_quantity("sequence_overhead", Dimension::kSeconds));
  if (overhead) {
    // Above a millisecond per sequence, a batch of a thousand would wait a second on the host.
    if (!(*overhead >= 0 && *overhead <= 1e-3)) {
      return fail(r.where("sequence_overhead"),
                  fmt::format("sequence_overhead {:g} us is outside 0 to 1000 us", *overhead * 1e6),
                  "give the host time per sequence per iteration, e.g. \"20 us\"");
    }
    e.sequence_overhead = Seconds(*overhead);
  }
  for (auto [key, release] : {std::pair{"host_waits_from", &e.host_waits_from},
                              std::pair{"host_waits_until", &e.host_waits_until}}) {
    if (r.raw(key) == nullptr) {
      continue;
    }
    std::string text;
    GPUPLAN_ASSIGN_OR_RETURN(text, r.text(key));
    Result<std::string> parsed = parse_release(text);
    if (!parsed) {
      return fail(r.where(key), parsed.error().what, parsed.error().hint);
    }
    *release = *parsed;
  }
  if (!e.host_waits_from.empty() && !e.host_waits_until.empty() &&
      version_at_least(e.host_waits_from, e.host_waits_until)) {
    return fail(r.where("host_waits_until"),
                fmt::format("host_waits_until {} is not after host_waits_from {}",
                            e.host_waits_until, e.host_waits_from),
                "the releases whose GPU waits run from the first to before the second");
  }
  GPUPLAN_ASSIGN_OR_RETURN(e.benchmark_requests,
                           r.optional_integer("benchmark_requests", 1, int64_t{10'000'000}));
  if (r.raw("tier") != nullptr) {
    std::vector<TomlReader> tiers;
    GPUPLAN_ASSIGN_OR_RETURN(tiers, r.table_list("tier"));
    for (TomlReader& t : tiers) {
      EngineTier tier;
      double memory = 0;
      GPUPLAN_ASSIGN_OR_RETURN(memory, t.quantity("min_memory", Dimension::kBytes));
      tier.min_memory = Bytes(memory);
      GPUPLAN_ASSIGN_OR_RETURN(tier.max_batch, t.integer("max_batch", 1, int64_t{1} << 20));
      GPUPLAN_ASSIGN_OR_RETURN(tier.max_tokens, t.integer("max_tokens", 1, int64_t{1} << 24));
      if (t.raw("except_gpus") != nullptr) {
        GPUPLAN_ASSIGN_OR_RETURN(tier.except_gpus, t.text_list("except_gpus"));
      }
      if (t.raw("gpus") != nullptr) {
        GPUPLAN_ASSIGN_OR_RETURN(tier.gpus, t.text_list("gpus"));
      }
      GPUPLAN_RETURN_IF_ERROR(t.finish());
      if (!e.tiers.empty() && tier.min_memory.si() <= e.tiers.back().min_memory.si()) {
        return fail(t.where("min_memory"), "tiers must rise in min_memory", "");
      }
      e.tiers.push_back(std::move(tier));
    }
  }
  GPUPLAN_ASSIGN_OR_RETURN(e.source, r.text("source"));
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return e;
}

}  // namespace detail
}  // namespace gpuplan
