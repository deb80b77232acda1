#include "gpuplan/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string_view>
#include <thread>

#include "minimize.h"

namespace gpuplan {
namespace {

// The fitted parameters: name, unit in the file, physical range, start, and where each lives in
// its parameter struct (TrainParams or InferenceParams).
template <class Params>
struct Knob {
  std::string name;
  std::string unit;
  double lower, upper, start;
  std::function<void(Params&, double)> set;
  std::function<double(const Params&)> get;
};

// The fitted parameters shared by every run, then one in_situ per GPU architecture among the
// rows fitted (the others take their mean).
std::vector<Knob<TrainParams>> knobs(const std::vector<std::string>& architectures) {
  std::vector<Knob<TrainParams>> k = {
      // The kernels' counted bytes moved once (1) or a few times (caches missed, unfused
      // reductions, the layer norm's statistics).
      {"elementwise_traffic", "", 0.5, 4.0, 1.2,
       [](TrainParams& p, double v) { p.elementwise_traffic = v; },
       [](const TrainParams& p) { return p.elementwise_traffic; }},
      // A kernel launch with its gap and ramp: a few microseconds (research notes sec. 2.2: an
      // empty collective takes 15 us, most of it launch and handshake).
      {"kernel_overhead", "us", 0.0, 20e-6, 3e-6,
       [](TrainParams& p, double v) { p.kernel_overhead = Seconds(v); },
       [](const TrainParams& p) { return p.kernel_overhead.si(); }},
      // Hidden traffic costs between nothing and its own time (more would make overlapping
      // slower than not overlapping).
      {"overlap_slowdown", "", 0.0, 1.0, 0.1,
       [](TrainParams& p, double v) { p.overlap_slowdown = v; },
       [](const TrainParams& p) { return p.overlap_slowdown; }},
      // Per step: up to half a second of data loading, clipping and logging.
      {"step_overhead", "ms", 0.0, 0.5, 0.02,
       [](TrainParams& p, double v) { p.step_overhead = Seconds(v); },
       [](const TrainParams& p) { return p.step_overhead.si(); }},
  };
  for (const std::string& arch : architectures) {
    // GEMMs and attention inside a step run below their isolated microbenchmark rate.
    k.push_back({"in_situ." + arch, "", 0.6, 1.0, 0.9,
                 [arch](TrainParams& p, double v) {
                   for (auto& [a, value] : p.in_situ) {
                     if (a == arch) {
                       value = v;
                       return;
                     }
                   }
                   p.in_situ.emplace_back(arch, v);
                 },
                 [arch](const TrainParams& p) { return p.in_situ_for(arch); }});
  }
  return k;
}

// The parameters `x` of `k` over `base`; in_situ holds exactly the fitted architectures, and the
// default is their mean.
TrainParams with(const TrainParams& base, const std::vector<Knob<TrainParams>>& k,
                 const std::vector<double>& x) {
  TrainParams p = base;
  p.in_situ.clear();
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    k[i].set(p, x[i]);
    if (k[i].name.starts_with("in_situ.")) {
      sum += x[i];
      ++n;
    }
  }
  if (n > 0) {
    p.in_situ_default = sum / n;
  }
  return p;
}

// Runs independent pieces of work on up to `threads` threads, piece i on thread i mod n; each
// piece writes only its own slot, so the answer does not depend on the thread count.
void run_on_threads(const std::vector<std::function<void()>>& work, int threads) {
  const size_t n =
      std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(1, threads)), work.size()));
  std::vector<std::thread> pool;
  for (size_t w = 0; w < n; ++w) {
    pool.emplace_back([&, w] {
      for (size_t i = w; i < work.size(); i += n) {
        work[i]();
      }
    });
  }
  for (std::thread& t : pool) {
    t.join();
  }
}

// The largest of `values`, 0 for none.
double largest(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
}

// The scale from SI to a fitted parameter's unit in its file.
double unit_scale(const std::string& unit) {
  return unit == "ms" ? 1e3 : unit == "us" ? 1e6 : 1.0;
}

// What an entry adds to a fit's loss: |log(predicted / published)|, at most log kFitMissRatio
// (1.3). An entry the model misses by more than 30 % (the bound the project sets for results it
// has not seen), or does not predict at the trial parameters, is missed for a reason the shared
// parameters cannot mend: a benchmark's length or a year of software the row does not carry. It
// counts as one miss whatever its size (a truncated absolute loss), so that it does not pull the
// parameters every other entry shares.
double log_miss(const ValidationEntry& e) {
  const double missed = std::log(kFitMissRatio);
  return e.predicted ? std::min(std::fabs(std::log(*e.predicted / e.published)), missed) : missed;
}

// The distinct `key(row)` of the rows the model can run, in the order they first appear: the
// groups a cross-validation leaves out one at a time.
template <class Row, class Key>
std::vector<std::string> groups_of(const std::vector<Row>& rows, const Key& key) {
  std::vector<std::string> groups;
  for (const Row& r : rows) {
    const std::string g = key(r);
    if (r.reason.empty() && std::find(groups.begin(), groups.end(), g) == groups.end()) {
      groups.push_back(g);
    }
  }
  return groups;
}

// The position of `group` in `groups`, or groups.size() if it is not there.
size_t group_index(const std::vector<std::string>& groups, const std::string& group) {
  return static_cast<size_t>(std::find(groups.begin(), groups.end(), group) - groups.begin());
}

// The fit to every row (first), then one fit without each of `sources`' rows (fit s + 1 leaves
// out sources[s]); the fits are independent, so they run on threads, each writing its own slot.
template <class Fit>
std::vector<Fit> fits_leaving_out(const std::vector<std::string>& sources, int threads,
                                  const std::function<Fit(const std::set<std::string>&)>& fit) {
  std::vector<Fit> fits(sources.size() + 1);
  std::vector<std::function<void()>> work;
  work.push_back([&] { fits[0] = fit({}); });
  for (size_t s = 0; s < sources.size(); ++s) {
    work.push_back([&, s] { fits[s + 1] = fit({sources[s]}); });
  }
  run_on_threads(work, threads);
  return fits;
}

// Adds `c` to `cv` with its in-sample (`a`) and left-out (`b`) predictions, and their |errors|
// to `in` and `out`; when either is missing, the reason is the first missing one's.
void add_cross_validated(CrossValidation& cv, CrossValidatedRow c, const ValidationEntry& a,
                         const ValidationEntry& b, std::vector<double>& in,
                         std::vector<double>& out) {
  c.in_sample = a.predicted;
  c.out_of_sample = b.predicted;
  c.reason = a.predicted ? b.reason : a.reason;
  if (a.predicted) {
    in.push_back(std::fabs(a.error_pct));
  }
  if (b.predicted) {
    out.push_back(std::fabs(b.error_pct));
  }
  cv.rows.push_back(std::move(c));
}

void summarize_cross_validation(CrossValidation& cv, const std::vector<double>& in,
                                const std::vector<double>& out) {
  cv.median_in_pct = median(in);
  cv.max_in_pct = largest(in);
  cv.median_out_pct = median(out);
  cv.max_out_pct = largest(out);
}

// Minimises `loss` over the knobs' box from their starts, with initial steps of 0.15 of each
// range, and writes the values found into `fitted` (the knobs' order).
template <class Params>
detail::Minimum minimize_knobs(const std::vector<Knob<Params>>& k,
                               const std::function<double(const std::vector<double>&)>& loss,
                               int max_evaluations, double tolerance,
                               std::vector<FittedParameter>& fitted) {
  std::vector<double> start;
  std::vector<detail::Bounds> bounds;
  for (const Knob<Params>& knob : k) {
    start.push_back(knob.start);
    bounds.push_back({knob.lower, knob.upper});
  }
  const detail::Minimum best =
      detail::minimize(loss, start, bounds, max_evaluations, tolerance, 0.15);
  for (size_t i = 0; i < k.size(); ++i) {
    fitted[i].value = best.x[i];
  }
  return best;
}

}  // namespace

TrainingFit fit_training(const std::vector<TrainingRow>& rows, const Catalog& catalog,
                         const std::set<std::string>& exclude) {
  std::vector<const TrainingRow*> used;
  for (const TrainingRow& r : rows) {
    if (r.reason.empty() && !exclude.contains(r.source)) {
      used.push_back(&r);
    }
  }
  std::vector<std::string> architectures;
  for (const TrainingRow* r : used) {
    architectures.push_back(r->cluster.gpu->architecture);
  }
  std::sort(architectures.begin(), architectures.end());
  architectures.erase(std::unique(architectures.begin(), architectures.end()), architectures.end());
  const std::vector<Knob<TrainParams>> k = knobs(architectures);
  TrainingFit fit;
  fit.params = catalog.train_params();
  for (const Knob<TrainParams>& knob : k) {
    fit.fitted.push_back({knob.name, knob.get(fit.params), knob.lower, knob.upper, knob.unit});
  }
  if (used.empty()) {
    return fit;
  }
  // Mean log miss (log_miss) over the rows; a row the model cannot time counts as missed.
  auto loss = [&](const std::vector<double>& x) {
    const TrainParams p = with(catalog.train_params(), k, x);
    double sum = 0;
    for (const TrainingRow* r : used) {
      sum += log_miss(predict_training_row(*r, catalog, p));
    }
    return sum / static_cast<double>(used.size());
  };
  const detail::Minimum best = minimize_knobs(k, loss, 3000, 1e-9, fit.fitted);
  fit.params = with(catalog.train_params(), k, best.x);
  fit.evaluations = best.evaluations;
  std::vector<double> errors;
  for (const TrainingRow* r : used) {
    const ValidationEntry e = predict_training_row(*r, catalog, fit.params);
    if (e.predicted) {
      errors.push_back(std::fabs(e.error_pct));
    }
  }
  fit.rows = static_cast<int64_t>(used.size());
  // Fewer than three rows per parameter reproduce themselves but pin little (three is a common
  // floor for a least-squares-like fit to say something about the rows it did not see).
  if (used.size() < 3 * k.size()) {
    fit.caveat = fmt::format(
        "{} rows for {} parameters: too few to pin them; the fit reproduces these rows and says "
        "little about others",
        used.size(), k.size());
  }
  fit.median_abs_error_pct = median(errors);
  fit.max_abs_error_pct = largest(errors);
  return fit;
}

CrossValidation cross_validate_training(const std::vector<TrainingRow>& rows,
                                        const Catalog& catalog, int threads) {
  const std::vector<std::string> sources =
      groups_of(rows, [](const TrainingRow& r) { return r.source; });
  const std::vector<TrainingFit> fits = fits_leaving_out<TrainingFit>(
      sources, threads,
      [&](const std::set<std::string>& exclude) { return fit_training(rows, catalog, exclude); });
  CrossValidation cv;
  cv.sources = static_cast<int64_t>(sources.size());
  std::vector<double> in, out;
  for (const TrainingRow& r : rows) {
    CrossValidatedRow c;
    c.id = r.id;
    c.metric = "step_time_s";
    c.source = r.source;
    c.published = r.published;
    if (!r.reason.empty()) {
      c.reason = r.reason;
      cv.rows.push_back(std::move(c));
      continue;
    }
    const size_t s = group_index(sources, r.source);
    add_cross_validated(cv, std::move(c), predict_training_row(r, catalog, fits[0].params),
                        predict_training_row(r, catalog, fits[s + 1].params), in, out);
  }
  summarize_cross_validation(cv, in, out);
  return cv;
}

std::string fitted_value_text(const FittedParameter& f) {
  if (f.unit.empty()) {
    return fmt::format("{:.4f}", f.value);
  }
  return fmt::format("{:.4g} {}", f.value * unit_scale(f.unit), f.unit);
}

namespace {

// One `name = value    # fitted within lower to upper unit` line: times are quoted strings with
// their unit, shares and ratios bare numbers.
std::string fitted_line(const FittedParameter& f, const std::string& name) {
  const double scale = unit_scale(f.unit);
  const std::string value = fitted_value_text(f);
  return fmt::format("{} = {}    # fitted within {:g} to {:g}{}\n", name,
                     f.unit.empty() ? value : fmt::format("\"{}\"", value), f.lower * scale,
                     f.upper * scale, f.unit.empty() ? "" : " " + f.unit);
}

}  // namespace

std::string training_fit_file(const TrainingFit& fit, const std::string& what) {
  std::string text =
      "schema = 1\n"
      "# The training model's fitted parameters (docs/FORMULAS.md#training-params), written by\n"
      "# gpuplan calibrate --validation; refit them, do not edit them.\n";
  std::string in_situ;
  for (const FittedParameter& f : fit.fitted) {
    const bool per_arch = f.name.starts_with("in_situ.");
    const std::string line = fitted_line(f, per_arch ? f.name.substr(8) : f.name);
    if (per_arch) {
      in_situ += line;
    } else {
      text += line;
    }
  }
  text += fmt::format("rows = {}\nmedian_abs_error_pct = {:.2f}\nsource = \"{}\"\n", fit.rows,
                      fit.median_abs_error_pct, what);
  text += fmt::format(
      "\n# Per GPU architecture; `default`, the mean, for those no published run informed.\n"
      "[in_situ]\n{}default = {:.4f}\n",
      in_situ, fit.params.in_situ_default);
  return text;
}

}  // namespace gpuplan

namespace gpuplan {
namespace {

std::vector<Knob<InferenceParams>> serving_knobs() {
  return {
      // The engine's scheduling, sampling and bookkeeping between iterations: none to 10 ms
      // (vLLM's Python scheduler at its slowest takes a few ms).
      {"iteration_overhead", "ms", 0.0, 10e-3, 1e-3,
       [](InferenceParams& p, double v) { p.iteration_overhead = Seconds(v); },
       [](const InferenceParams& p) { return p.iteration_overhead.si(); }},
      // About ten kernels per layer, each with a launch gap and ramp of 0 to 10 us.
      {"layer_overhead", "us", 0.0, 100e-6, 20e-6,
       [](InferenceParams& p, double v) { p.layer_overhead = Seconds(v); },
       [](const InferenceParams& p) { return p.layer_overhead.si(); }},
      // Decode kernels reading many blocks reach between half and all of the streaming rate.
      {"stream_share", "", 0.5, 1.0, 0.8, [](InferenceParams& p, double v) { p.stream_share = v; },
       [](const InferenceParams& p) { return p.stream_share; }},
      // A loaded GPU computes below its microbenchmark rate (power limit, shared memory system);
      // training's in-situ shares are 0.76 to 0.89 (training-fit.toml).
      {"compute_share", "", 0.6, 1.0, 0.8,
       [](InferenceParams& p, double v) { p.compute_share = v; },
       [](const InferenceParams& p) { return p.compute_share; }},
      // Passes over the bytes of the tensors a token writes in a layer: 2 when each is written
      // by one kernel and read by the next; less where kernels are fused, more where cache
      // misses repeat them.
      {"elementwise_traffic", "", 0.5, 4.0, 2.0,
       [](InferenceParams& p, double v) { p.elementwise_traffic = v; },
       [](const InferenceParams& p) { return p.elementwise_traffic; }},
  };
}

InferenceParams with(const InferenceParams& base, const std::vector<Knob<InferenceParams>>& k,
                     const std::vector<double>& x) {
  InferenceParams p = base;
  for (size_t i = 0; i < k.size(); ++i) {
    k[i].set(p, x[i]);
  }
  return p;
}

// The rows a fit uses: simulable, publication not excluded.
std::vector<const ServingRow*> fitted_rows(const std::vector<ServingRow>& rows,
                                           const std::set<std::string>& exclude) {
  std::vector<const ServingRow*> used;
  for (const ServingRow& r : rows) {
    if (r.reason.empty() && !exclude.contains(publication(r.source))) {
      used.push_back(&r);
    }
  }
  return used;
}

}  // namespace

ServingFit fit_serving(const std::vector<ServingRow>& rows, const Catalog& catalog,
                       const std::set<std::string>& exclude) {
  const std::vector<const ServingRow*> used = fitted_rows(rows, exclude);
  const std::vector<Knob<InferenceParams>> k = serving_knobs();
  ServingFit fit;
  fit.params = catalog.inference_params();
  for (const Knob<InferenceParams>& knob : k) {
    fit.fitted.push_back({knob.name, knob.get(fit.params), knob.lower, knob.upper, knob.unit});
  }
  std::set<std::string> architectures;
  for (const ServingRow* r : used) {
    const int64_t entries =
        std::count_if(r->metrics.begin(), r->metrics.end(),
                      [](const ServingMetric& m) { return predicts_serving_metric(m.name); });
    fit.entries += entries;
    if (entries > 0 && r->instance.gpu != nullptr) {
      architectures.insert(r->instance.gpu->architecture);
    }
  }
  if (fit.entries == 0) {
    return fit;
  }
  // Mean log miss (log_miss) over the entries of metrics gpuplan predicts.
  auto loss = [&](const std::vector<double>& x) {
    const InferenceParams p = with(catalog.inference_params(), k, x);
    double sum = 0;
    for (const ServingRow* r : used) {
      for (const ValidationEntry& e : predict_serving_row(*r, catalog, p)) {
        if (predicts_serving_metric(e.metric)) {
          sum += log_miss(e);
        }
      }
    }
    return sum / static_cast<double>(fit.entries);
  };
  // Each evaluation simulates every row, so the simplex stops once its values agree within
  // 1e-4 (a hundredth of a per cent in the mean log error), or after 300 evaluations.
  const detail::Minimum best = minimize_knobs(k, loss, 300, 1e-4, fit.fitted);
  fit.params = with(catalog.inference_params(), k, best.x);
  fit.params.fitted_architectures.assign(architectures.begin(), architectures.end());
  fit.evaluations = best.evaluations;
  std::vector<double> errors;
  for (const ServingRow* r : used) {
    for (const ValidationEntry& e : predict_serving_row(*r, catalog, fit.params)) {
      if (e.predicted) {
        errors.push_back(std::fabs(e.error_pct));
      }
    }
  }
  if (static_cast<size_t>(fit.entries) < 3 * k.size()) {
    fit.caveat = fmt::format(
        "{} entries for {} parameters: too few to pin them; the fit reproduces these entries and "
        "says little about others",
        fit.entries, k.size());
  }
  fit.median_abs_error_pct = median(errors);
  fit.max_abs_error_pct = largest(errors);
  return fit;
}

CrossValidation cross_validate_serving(const std::vector<ServingRow>& rows, const Catalog& catalog,
                                       int threads) {
  const std::vector<std::string> sources =
      groups_of(rows, [](const ServingRow& r) { return publication(r.source); });
  const std::vector<ServingFit> fits = fits_leaving_out<ServingFit>(
      sources, threads,
      [&](const std::set<std::string>& exclude) { return fit_serving(rows, catalog, exclude); });
  CrossValidation cv;
  cv.sources = static_cast<int64_t>(sources.size());
  std::vector<double> in, out;
  for (const ServingRow& r : rows) {
    const size_t s = group_index(sources, publication(r.source));
    const std::vector<ValidationEntry> a = predict_serving_row(r, catalog, fits[0].params);
    const std::vector<ValidationEntry> b =
        s < sources.size() ? predict_serving_row(r, catalog, fits[s + 1].params) : a;
    for (size_t i = 0; i < a.size(); ++i) {
      CrossValidatedRow c;
      c.id = r.id;
      c.metric = a[i].metric;
      c.source = r.source;
      c.published = a[i].published;
      add_cross_validated(cv, std::move(c), a[i], b[i], in, out);
    }
  }
  summarize_cross_validation(cv, in, out);
  return cv;
}

std::string serving_fit_file(const ServingFit& fit, const std::string& what) {
  std::string text =
      "schema = 1\n"
      "# The serving model's fitted parameters (docs/FORMULAS.md#serving), written by\n"
      "# gpuplan calibrate --validation on a file of serving results; refit them, do not edit\n"
      "# them.\n";
  for (const FittedParameter& f : fit.fitted) {
    text += fitted_line(f, f.name);
  }
  text += "architectures = [";
  for (size_t i = 0; i < fit.params.fitted_architectures.size(); ++i) {
    text += fmt::format("{}\"{}\"", i == 0 ? "" : ", ", fit.params.fitted_architectures[i]);
  }
  text += "]    # of the GPUs the entries ran on\n";
  text += fmt::format("entries = {}\nmedian_abs_error_pct = {:.2f}\nsource = \"{}\"\n", fit.entries,
                      fit.median_abs_error_pct, what);
  return text;
}

}  // namespace gpuplan
