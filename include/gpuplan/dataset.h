// Request lengths as distributions: a benchmark's data set (data/datasets/, MLPerf's among them)
// or a parametric form (uniform, normal, lognormal by mean and standard deviation).
//
// A distribution is kept as its quantile function, tokens at rising probabilities from 0 to 1,
// piecewise linear between them; a request draws its prompt and its output length each from its
// own, with a uniform number that is a fixed function of the workload's seed and the request's
// order, so the same workload gives every request the same lengths in any simulation.
#ifndef GPUPLAN_DATASET_H_
#define GPUPLAN_DATASET_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/result.h"

namespace gpuplan {

// Tokens per request on one side (prompt or output).
class LengthDistribution {
 public:
  LengthDistribution() : LengthDistribution({0.0, 1.0}, {1.0, 1.0}) {}  // one token, always
  // REQUIRES: probabilities rise from 0 to 1, one token count each, not falling, >= 1.
  LengthDistribution(std::vector<double> probabilities, std::vector<double> tokens);

  // The length at uniform number u in [0, 1), rounded, at least 1 token.
  int64_t at(double u) const;
  double mean() const;  // of the piecewise linear quantile function
  int64_t max() const;  // the longest it gives

  const std::vector<double>& probabilities() const { return probabilities_; }
  const std::vector<double>& tokens() const { return tokens_; }

 private:
  std::vector<double> probabilities_;
  std::vector<double> tokens_;
};

// The parametric forms, by name, each given by its mean and standard deviation in tokens:
// uniform (mean +- sd x sqrt(3)), normal and lognormal, the last two cut at their 0.05 % and
// 99.95 % points (and at 1 token); an unknown name or a mean or sd out of range is an Error
// naming `where`.
Result<LengthDistribution> parametric_lengths(std::string_view kind, double mean, double sd,
                                              const std::string& where);

// A benchmark's request lengths (data/datasets/<id>.toml).
struct Dataset {
  std::string id;
  std::string name;
  int64_t samples = 0;  // requests in the data set the quantiles come from
  LengthDistribution input;
  LengthDistribution output;
  // Beam search the benchmark asks of every request (Workload::beams); 1: none.
  int64_t beams = 1;
  std::string source;
  std::string file;
};

// A uniform number in [0, 1) for request `request`, side `side` (0 prompt, 1 output), from
// `seed`: SplitMix64 of the three, 53 bits.
double request_uniform(uint64_t seed, int64_t request, int side);

}  // namespace gpuplan

#endif  // GPUPLAN_DATASET_H_
