// Minimising a function of a few bounded parameters (private to the fitting code).
//
// Nelder-Mead's downhill simplex (Nelder and Mead 1965) from a fixed start, with every trial
// point clamped into its box, so that a fit gives the same answer on every machine, and
// restarted with a fresh simplex where a descent stops. Used by the
// GEMM tile fit (gemm.cc) and the fits of the training and serving models to published runs
// (calibration.cc).
#ifndef GPUPLAN_SRC_MINIMIZE_H_
#define GPUPLAN_SRC_MINIMIZE_H_

#include <functional>
#include <vector>

namespace gpuplan::detail {

struct Bounds {
  double lo = 0;
  double hi = 0;
};

struct Minimum {
  std::vector<double> x;
  double value = 0;
  int evaluations = 0;
};

// Minimises f over the box from `start` (inside it), with initial steps of `step_share` of each
// parameter's range. A descent stops when the simplex's values agree within `tolerance`; the
// next starts from its best point, until one gains no more than `tolerance` or the evaluations
// reach `max_evaluations`. REQUIRES: start.size() == bounds.size() > 0.
Minimum minimize(const std::function<double(const std::vector<double>&)>& f,
                 const std::vector<double>& start, const std::vector<Bounds>& bounds,
                 int max_evaluations = 2000, double tolerance = 1e-10, double step_share = 0.1);

}  // namespace gpuplan::detail

#endif  // GPUPLAN_SRC_MINIMIZE_H_
