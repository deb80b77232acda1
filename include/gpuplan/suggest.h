// "Did you mean" suggestions for misspelt keys, ids and option values (the ninja idea).
#ifndef GPUPLAN_SUGGEST_H_
#define GPUPLAN_SUGGEST_H_

#include <string>
#include <string_view>
#include <vector>

namespace gpuplan {

// Returns the candidate closest to `word` by edit distance (case-insensitive), or an empty
// string when none is close enough to be a plausible typo (distance > max(2, |word|/3)).
// Ties go to the candidate listed first, so the answer is deterministic.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// "did you mean 'x'?" when a close candidate exists, else "expected one of: a, b, c".
std::string suggestion_hint(std::string_view word, const std::vector<std::string>& candidates);

// Names as people write them: `text` in ASCII lower case, and whether `text` begins with
// `prefix` in any case ("TensorRT-LLM 0.14" with "tensorrt-llm").
std::string lowercase(std::string_view text);
bool starts_with_any_case(std::string_view text, std::string_view prefix);

}  // namespace gpuplan

#endif  // GPUPLAN_SUGGEST_H_
