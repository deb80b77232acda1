#include "gpuplan/suggest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan {
namespace {

// Levenshtein distance, case-insensitive, with one row of memory.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  bool best_contains = false;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    // A candidate that contains the word ("405b" in "llama-3.1-405b") is a good guess too, and
    // a better one than another at the same distance ("h100": "h100-sxm" before "b200"); so is
    // one the word contains ("infer" in "inference", "train" in "training").
    const bool contains = (word.size() >= 3 && c.find(word) != std::string::npos) ||
                          (c.size() >= 3 && word.find(c) != std::string_view::npos);
    if (contains) {
      d = std::min(d, limit);
    }
    if (d < best_distance || (d == best_distance && contains && !best_contains)) {
      best_distance = d;
      best = c;
      best_contains = contains;
    }
  }
  return best;
}

std::string suggestion_hint(std::string_view word, const std::vector<std::string>& candidates) {
  // Several ids that contain the word ("h200" in "h200-nvl" and "h200-sxm"): name them all.
  std::vector<std::string> containing;
  for (const std::string& c : candidates) {
    if (word.size() >= 2 && c != word && c.find(word) != std::string::npos) {
      containing.push_back(fmt::format("'{}'", c));
    }
  }
  if (containing.size() > 4) {
    // Too many to list: those that begin with the word ("h100-nvl", not "azure-...-h100-v5").
    std::erase_if(containing, [&](const std::string& quoted) {
      return !std::string_view(quoted).substr(1).starts_with(word);
    });
  }
  if (containing.size() > 1 && containing.size() <= 4) {
    return fmt::format("did you mean one of {}?", fmt::join(containing, ", "));
  }
  std::string best = closest_match(word, candidates);
  if (!best.empty()) {
    return fmt::format("did you mean '{}'?", best);
  }
  return fmt::format("expected one of: {}", fmt::join(candidates, ", "));
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool starts_with_any_case(std::string_view text, std::string_view prefix) {
  return lowercase(text).starts_with(lowercase(prefix));
}

}  // namespace gpuplan
