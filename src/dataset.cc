#include "gpuplan/dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "gpuplan/fields.h"
#include "gpuplan/suggest.h"
#include "loaders.h"

namespace gpuplan {
namespace {

// The probabilities parametric forms are tabulated at: every 2.5 %, and 99 %, 99.9 % and the
// ends, as the data set files are.
std::vector<double> table_probabilities() {
  std::vector<double> p = {0.0};
  for (int k = 1; k < 40; ++k) {
    p.push_back(k / 40.0);
  }
  p.insert(p.end(), {0.99, 0.999, 1.0});
  return p;
}

// The standard normal quantile, by bisection on its distribution function (erfc).
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

LengthDistribution::LengthDistribution(std::vector<double> probabilities,
                                       std::vector<double> tokens)
    : probabilities_(std::move(probabilities)), tokens_(std::move(tokens)) {
  GPUPLAN_CHECK(probabilities_.size() == tokens_.size() && probabilities_.size() >= 2 &&
                    probabilities_.front() == 0 && probabilities_.back() == 1 &&
                    std::is_sorted(probabilities_.begin(), probabilities_.end()) &&
                    std::is_sorted(tokens_.begin(), tokens_.end()) && tokens_.front() >= 1,
                "a length distribution is a rising quantile table from 0 to 1");
}

int64_t LengthDistribution::at(double u) const {
  const auto hi = std::upper_bound(probabilities_.begin(), probabilities_.end(), u);
  const size_t k =
      std::min<size_t>(static_cast<size_t>(hi - probabilities_.begin()), probabilities_.size() - 1);
  const double p0 = probabilities_[k - 1], p1 = probabilities_[k];
  const double t = p1 > p0 ? (u - p0) / (p1 - p0) : 0.0;
  const double tokens = tokens_[k - 1] + t * (tokens_[k] - tokens_[k - 1]);
  return std::max<int64_t>(1, std::llround(tokens));
}

double LengthDistribution::mean() const {
  double sum = 0;
  for (size_t k = 0; k + 1 < tokens_.size(); ++k) {
    sum += (probabilities_[k + 1] - probabilities_[k]) * 0.5 * (tokens_[k] + tokens_[k + 1]);
  }
  return sum;
}

int64_t LengthDistribution::max() const {
  return std::max<int64_t>(1, std::llround(tokens_.back()));
}

Result<LengthDistribution> parametric_lengths(std::string_view kind, double mean, double sd,
                                              const std::string& where) {
  if (!(mean >= 1 && mean <= 16'777'216)) {
    return fail(where, fmt::format("a mean of {} tokens is out of range", mean),
                "expected 1 to 16,777,216 tokens");
  }
  if (!(sd >= 0 && sd <= 16'777'216)) {
    return fail(where, fmt::format("a standard deviation of {} tokens is out of range", sd),
                "expected 0 to 16,777,216 tokens");
  }
  const std::vector<double> p = table_probabilities();
  std::vector<double> tokens;
  // The normal and lognormal tails are cut at 0.05 % and 99.95 %.
  auto z = [&](double q) { return normal_quantile(std::clamp(q, 0.0005, 0.9995)); };
  for (double q : p) {
    double t = 0;
    if (kind == "uniform") {
      t = mean + sd * std::sqrt(3.0) * (2 * q - 1);
    } else if (kind == "normal") {
      t = mean + sd * z(q);
    } else if (kind == "lognormal") {
      const double s2 = std::log1p(sd * sd / (mean * mean));
      t = std::exp(std::log(mean) - 0.5 * s2 + std::sqrt(s2) * z(q));
    } else {
      return fail(where, fmt::format("unknown distribution '{}'", kind),
                  suggestion_hint(kind, {"uniform", "normal", "lognormal"}));
    }
    tokens.push_back(std::max(1.0, t));
  }
  return LengthDistribution(p, tokens);
}

double request_uniform(uint64_t seed, int64_t request, int side) {
  const uint64_t h = splitmix64(splitmix64(seed ^ 0x6a09e667f3bcc909ULL) +
                                static_cast<uint64_t>(request) * 2 + static_cast<uint64_t>(side));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace gpuplan

namespace gpuplan::detail {

Result<Dataset> load_dataset(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");
  std::string id, name, source;
  GPUPLAN_ASSIGN_OR_RETURN(id, checked_id(r));
  GPUPLAN_ASSIGN_OR_RETURN(name, r.text("name"));
  int64_t samples = 0;
  GPUPLAN_ASSIGN_OR_RETURN(samples, r.integer("samples", 1, int64_t{1} << 30));
  std::vector<double> p, in, out;
  GPUPLAN_ASSIGN_OR_RETURN(p, r.number_list("probabilities", 0, 1));
  GPUPLAN_ASSIGN_OR_RETURN(in, r.number_list("input_tokens", 1, 16'777'216));
  GPUPLAN_ASSIGN_OR_RETURN(out, r.number_list("output_tokens", 1, 16'777'216));
  std::optional<int64_t> beams;
  GPUPLAN_ASSIGN_OR_RETURN(beams, r.optional_count("beams", fields::kBeams));
  GPUPLAN_ASSIGN_OR_RETURN(source, r.text("source"));
  if (p.size() < 2 || p.front() != 0 || p.back() != 1 ||
      std::adjacent_find(p.begin(), p.end(), std::greater_equal<>()) != p.end()) {
    return fail(r.where("probabilities"), "the probabilities must rise from 0 to 1", "");
  }
  for (const auto& [key, v] : {std::pair{"input_tokens", &in}, std::pair{"output_tokens", &out}}) {
    if (v->size() != p.size()) {
      return fail(r.where(key), fmt::format("{} values for {} probabilities", v->size(), p.size()),
                  "one token count per probability");
    }
    if (!std::is_sorted(v->begin(), v->end())) {
      return fail(r.where(key), "the token counts must not fall", "they are quantiles");
    }
  }
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return Dataset{std::move(id),
                 std::move(name),
                 samples,
                 LengthDistribution(p, in),
                 LengthDistribution(p, out),
                 beams.value_or(1),
                 std::move(source),
                 path};
}

}  // namespace gpuplan::detail
