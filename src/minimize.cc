#include "minimize.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gpuplan/result.h"

namespace gpuplan::detail {
namespace {

std::vector<double> clamp_into(std::vector<double> x, const std::vector<Bounds>& b) {
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::clamp(x[i], b[i].lo, b[i].hi);
  }
  return x;
}

// x0 + t (x1 - x0).
std::vector<double> along(const std::vector<double>& x0, const std::vector<double>& x1, double t) {
  std::vector<double> out(x0.size());
  for (size_t i = 0; i < x0.size(); ++i) {
    out[i] = x0[i] + t * (x1[i] - x0[i]);
  }
  return out;
}

// One descent of the simplex from `start`, counting its evaluations into `out`.
void descend(const std::function<double(const std::vector<double>&)>& f,
             const std::vector<double>& start, const std::vector<Bounds>& bounds,
             int max_evaluations, double tolerance, double step_share, Minimum& out) {
  const size_t n = start.size();
  auto eval = [&](const std::vector<double>& x) {
    ++out.evaluations;
    const double v = f(x);
    return std::isfinite(v) ? v : 1e300;
  };
  // The simplex: the start and one step along each axis (inward from an upper bound).
  std::vector<std::vector<double>> pts{clamp_into(start, bounds)};
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> x = pts[0];
    const double step = step_share * (bounds[i].hi - bounds[i].lo);
    x[i] = x[i] + step <= bounds[i].hi ? x[i] + step : x[i] - step;
    pts.push_back(clamp_into(x, bounds));
  }
  std::vector<double> vals;
  for (const auto& p : pts) {
    vals.push_back(eval(p));
  }
  std::vector<size_t> order(n + 1);
  while (out.evaluations < max_evaluations) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return vals[a] < vals[b]; });
    const size_t best = order.front();
    const size_t worst = order.back();
    const size_t second = order[n - 1];
    if (std::fabs(vals[worst] - vals[best]) <= tolerance * (1.0 + std::fabs(vals[best]))) {
      break;
    }
    std::vector<double> centroid(n, 0.0);
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      for (size_t j = 0; j < n; ++j) {
        centroid[j] += pts[order[i]][j] / static_cast<double>(n);
      }
    }
    // Reflect the worst point through the centroid; expand, contract or shrink.
    const std::vector<double> reflected = clamp_into(along(pts[worst], centroid, 2.0), bounds);
    const double fr = eval(reflected);
    if (fr < vals[best]) {
      const std::vector<double> expanded = clamp_into(along(pts[worst], centroid, 3.0), bounds);
      const double fe = eval(expanded);
      pts[worst] = fe < fr ? expanded : reflected;
      vals[worst] = std::min(fe, fr);
    } else if (fr < vals[second]) {
      pts[worst] = reflected;
      vals[worst] = fr;
    } else {
      const std::vector<double> contracted = along(pts[worst], centroid, 0.5);
      const double fc = eval(contracted);
      if (fc < vals[worst]) {
        pts[worst] = contracted;
        vals[worst] = fc;
      } else {
        for (size_t i = 0; i < pts.size(); ++i) {
          if (i != best) {
            pts[i] = along(pts[best], pts[i], 0.5);
            vals[i] = eval(pts[i]);
          }
        }
      }
    }
  }
  const size_t best =
      static_cast<size_t>(std::min_element(vals.begin(), vals.end()) - vals.begin());
  out.x = pts[best];
  out.value = vals[best];
}

}  // namespace

Minimum minimize(const std::function<double(const std::vector<double>&)>& f,
                 const std::vector<double>& start, const std::vector<Bounds>& bounds,
                 int max_evaluations, double tolerance, double step_share) {
  GPUPLAN_CHECK(!start.empty() && start.size() == bounds.size(), "minimize: bad dimensions");
  Minimum out;
  descend(f, start, bounds, max_evaluations, tolerance, step_share, out);
  // A simplex can collapse onto a line or a face and stop short of the minimum (the loss here is
  // a sum of maxima and minima, not smooth). Restarting from the point found, with a fresh
  // simplex, is the usual remedy (Press et al., Numerical Recipes, sec. 10.5): again until a
  // restart no longer improves the value by more than the tolerance.
  while (out.evaluations < max_evaluations) {
    Minimum again;
    again.evaluations = out.evaluations;
    descend(f, out.x, bounds, max_evaluations, tolerance, step_share, again);
    const bool better = again.value < out.value - tolerance * (1.0 + std::fabs(out.value));
    if (again.value < out.value) {
      out.x = again.x;
      out.value = again.value;
    }
    out.evaluations = again.evaluations;
    if (!better) {
      break;
    }
  }
  return out;
}

}  // namespace gpuplan::detail
