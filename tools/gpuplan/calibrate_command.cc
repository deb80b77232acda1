// gpuplan calibrate RESULTS.json... -o profile.toml: folds measurements into a profile that
// train, scale and plan use (--profile) instead of the catalog's defaults.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include "command.h"
#include "flags.h"
#include "gpuplan/calibration.h"
#include "gpuplan/collective.h"
#include "gpuplan/gemm.h"
#include "gpuplan/measurement.h"
#include "report.h"

namespace gpuplan::cli {

namespace {

constexpr const char* kName = "calibrate";

// What the --validation fits minimise, for the file's source line (calibration.h).
std::string fit_loss_text() {
  return fmt::format("least absolute log error, each at most log {:g}", kFitMissRatio);
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  o << text;
  return static_cast<bool>(o);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

// --gemm-sweep: fits the GEMM tile model to a published sweep and writes it as a catalog file
// (data/gemm/<id>.toml), so that anyone can refit it.
int run_gemm_sweep(const Catalog& catalog, const std::string& sweep, const std::string& gpu_id,
                   const std::string& precision_text, const std::string& hold,
                   const std::string& out) {
  if (gpu_id.empty()) {
    return report_error(kName,
                        Error{"--gpu", "--gemm-sweep needs the catalog GPU it was measured on",
                              "e.g. --gpu h100-sxm"},
                        kExitUsage);
  }
  Result<const Gpu*> g = catalog.gpu(gpu_id);
  if (!g)
    return report_error(kName, Error{"--gpu", g.error().what, g.error().hint});
  Result<Precision> p = parse_precision(precision_text);
  if (!p)
    return report_error(kName, Error{"--precision", p.error().what, p.error().hint}, kExitUsage);
  if (!(*g)->efficiency || (*g)->sms <= 0 || !gemm_rate(**g, *p)) {
    return report_error(kName, Error{"--gpu",
                                     fmt::format("{} has no sustained {} rate or SM count", gpu_id,
                                                 precision_name(*p)),
                                     "give its [efficiency] and [gemm] tables first"});
  }
  Result<std::vector<GemmSample>> samples = read_gemm_sweep(sweep);
  if (!samples)
    return report_error(kName, samples.error());
  const TileModel* held = nullptr;
  TileModel hold_model;
  if (!hold.empty()) {
    Result<const Gpu*> h = catalog.gpu(hold);
    if (!h || !(*h)->tiles)
      return report_error(
          kName,
          Error{"--hold-shapes", fmt::format("'{}' is no catalog GPU with a tile model", hold),
                "name a GPU whose tile shapes to keep, e.g. h100-sxm"});
    hold_model = *(*h)->tiles;
    held = &hold_model;
  }
  if (samples->size() < min_tile_fit_samples(held != nullptr)) {
    return report_error(
        kName, Error{sweep, fmt::format("{} GEMMs are too few to fit", samples->size()),
                     fmt::format("a fit needs {} ({} with --hold-shapes)",
                                 min_tile_fit_samples(false), min_tile_fit_samples(true))});
  }
  const TileFit fit = fit_gemm_tiles(**g, *p, *samples, held);
  const std::string id = std::filesystem::path(out).stem().string();
  const std::string file = std::filesystem::path(sweep).filename().string();
  const TileModel& t = fit.model;
  const std::string text = fmt::format(
      "schema = 1\n"
      "# A GEMM tile model (docs/FORMULAS.md#gemm), written by gpuplan calibrate --gemm-sweep;\n"
      "# refit it, do not edit it.\n"
      "id = \"{}\"\nloop_efficiency = {:.4f}\ntile_overhead = \"{:.4g} us\"\nlaunch = \"{:.4g} "
      "us\"\n"
      "square_tile = {:.4f}\nnarrow_tile = {:.4f}\nsweep = \"{}\"\ngpu = \"{}\"\nprecision = "
      "\"{}\"\n"
      "rms_log_error = {:.4f}\nmedian_abs_error = {:.4f}\n"
      "source = \"gpuplan calibrate --gemm-sweep on {}: {} GEMMs of {} (where they were measured: "
      "its header){}\"\n",
      id, t.loop_efficiency, t.tile_overhead.si() * 1e6, t.launch.si() * 1e6, t.square_tile,
      t.narrow_tile, file, gpu_id, precision_name(*p), fit.rms_log_error, fit.median_abs_error,
      today(), samples->size(), file,
      held ? fmt::format("; tile shapes held at {}'s", hold) : std::string());
  if (!write_text(out, text))
    return report_error(kName, Error{out, "cannot write the file", ""});
  emit(
      "{}: {} GEMMs on {} ({}): k-loop {:.3f} of the per-SM peak, {:.2f} us per tile, {:.2f} us "
      "per launch, 128x128 tiles {:.3f}, 64x128 tiles {:.3f}; median |error| {:.1f} %, rms log "
      "error {:.3f}\nwrote {}\n",
      sweep, samples->size(), gpu_id, precision_name(*p), t.loop_efficiency,
      t.tile_overhead.si() * 1e6, t.launch.si() * 1e6, t.square_tile, t.narrow_tile,
      100 * fit.median_abs_error, fit.rms_log_error, out);
  return kExitOk;
}

// Writes a fit's file `text` to `out` and says what was fitted: each parameter, then how many
// `items` ("rows", "entries") informed it and how well it reproduces them.
int write_fit(const std::string& out, const std::string& text,
              const std::vector<FittedParameter>& fitted, int64_t count, const char* items,
              int evaluations, double median_pct, double max_pct, const std::string& caveat) {
  if (!write_text(out, text))
    return report_error(kName, Error{out, "cannot write the file", ""});
  for (const FittedParameter& f : fitted) {
    emit("{:22} {}\n", f.name, fitted_value_text(f));
  }
  emit("fitted to {} {} in {} evaluations: median |error| {:.1f} %, max {:.1f} %\nwrote {}\n",
       count, items, evaluations, median_pct, max_pct, out);
  if (!caveat.empty()) {
    emit("warning: {}\n", caveat);
  }
  return kExitOk;
}

// --validation on serving results: fits the serving model's free parameters and writes
// serving-fit.toml.
int run_serving_fit(const Catalog& catalog, const std::string& file, const std::string& out) {
  Result<std::vector<ServingRow>> rows = read_serving_rows(file, catalog);
  if (!rows)
    return report_error(kName, rows.error());
  const ServingFit fit = fit_serving(*rows, catalog);
  if (fit.entries == 0) {
    return report_error(kName, Error{file, "no row can be simulated", "nothing to fit to"});
  }
  const std::string what =
      fmt::format("gpuplan calibrate --validation {} on {}: {} (row, metric) entries, {}", file,
                  today(), fit.entries, fit_loss_text());
  return write_fit(out, serving_fit_file(fit, what), fit.fitted, fit.entries, "entries",
                   fit.evaluations, fit.median_abs_error_pct, fit.max_abs_error_pct, fit.caveat);
}

// --validation: fits the training model's free parameters to published runs and writes
// training-fit.toml; a file of serving results goes to run_serving_fit.
int run_validation_fit(const Catalog& catalog, const std::string& file, const std::string& out) {
  Result<ValidationKind> kind = validation_kind(file);
  if (!kind)
    return report_error(kName, kind.error());
  if (*kind == ValidationKind::kInference) {
    return run_serving_fit(catalog, file, out);
  }
  Result<std::vector<TrainingRow>> rows = read_training_rows(file, catalog);
  if (!rows)
    return report_error(kName, rows.error());
  const TrainingFit fit = fit_training(*rows, catalog);
  if (fit.rows == 0) {
    return report_error(kName, Error{file, "no row can be predicted", "nothing to fit to"});
  }
  const std::string what = fmt::format("gpuplan calibrate --validation {} on {}: {} rows, {}", file,
                                       today(), fit.rows, fit_loss_text());
  return write_fit(out, training_fit_file(fit, what), fit.fitted, fit.rows, "rows", fit.evaluations,
                   fit.median_abs_error_pct, fit.max_abs_error_pct, fit.caveat);
}

}  // namespace

int run_calibrate(const std::vector<std::string>& args) {
  CLI::App app(
      "Fit measurements into a calibration profile (measure ... --json files), a published GEMM "
      "sweep into a tile model (--gemm-sweep), or published runs into the training or serving "
      "model's parameters (--validation).",
      args.front());
  std::vector<std::string> files;
  std::string out, fabric, gpu, data, precision = "bf16", sweep, hold;
  app.add_option("files", files, "JSON files from gpuplan measure");
  app.add_option("-o,--output", out, "file to write (TOML)")->required();
  app.add_option("--fabric", fabric, "catalog fabric the collectives ran over");
  app.add_option("--gpu", gpu, "catalog GPU the runs were measured on (GPU backends, sweeps)");
  app.add_option("--precision", precision, "precision of the GPU runs or sweep (default bf16)");
  app.add_option("--gemm-sweep", sweep,
                 "a published GEMM sweep (CSV: batch,m,n,k,TFLOP/s) to fit the tile model to");
  app.add_option("--hold-shapes", hold,
                 "with --gemm-sweep: keep this GPU's tile-shape ratios (for small sweeps)");
  std::string validation;
  app.add_option("--validation", validation,
                 "a validation file to fit the training model's parameters (training runs) or the "
                 "serving model's (serving results) to");
  app.add_option("--data", data, "catalog directory");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  Result<Catalog> catalog = load_catalog(data);
  if (!catalog)
    return report_error(kName, catalog.error());
  if (!validation.empty()) {
    if (!files.empty() || !sweep.empty())
      return report_error(
          kName, Error{"--validation", "give measurement files, a sweep or --validation, one", ""},
          kExitUsage);
    return run_validation_fit(*catalog, validation, out);
  }
  if (!sweep.empty()) {
    if (!files.empty())
      return report_error(kName,
                          Error{"--gemm-sweep", "give measurement files or a sweep, not both", ""},
                          kExitUsage);
    return run_gemm_sweep(*catalog, sweep, gpu, precision, hold, out);
  }
  if (files.empty()) {
    return report_error(
        kName,
        Error{"files", "nothing to calibrate",
              "give files from gpuplan measure ... --json, --gemm-sweep FILE or --validation FILE"},
        kExitUsage);
  }
  std::string body;
  std::vector<std::string> used;
  // What was measured of each GPU; 0 where not measured.
  struct GpuEntry {
    double gemm = 0;  // sustained share of the bf16 peak
    std::optional<TileModel> tiles;
    double hbm = 0;
  };
  std::map<std::string, GpuEntry> gpu_entries;
  for (const std::string& f : files) {
    Result<Measurement> m = read_measurement(f);
    if (!m)
      return report_error(kName, m.error());
    used.push_back(f);
    if (m->kind == MeasurementKind::kGemm || m->kind == MeasurementKind::kMemory) {
      const bool gemm = m->kind == MeasurementKind::kGemm;
      const std::string& backend = gemm ? m->gemm.backend : m->memory.backend;
      if (backend == "mpi") {
        emit("{}: a CPU {} measurement; no catalog GPU to calibrate\n", f,
             gemm ? "GEMM" : "memory");
        continue;
      }
      if (gpu.empty()) {
        return report_error(kName,
                            Error{"--gpu", fmt::format("{} holds a GPU measurement", f),
                                  "name the catalog GPU, e.g. --gpu h200-sxm"},
                            kExitUsage);
      }
      Result<const Gpu*> g = catalog->gpu(gpu);
      if (!g)
        return report_error(kName, Error{"--gpu", g.error().what, g.error().hint});
      if (gemm) {
        const auto peak = (*g)->peak_for(Precision::kBf16);
        if (!peak) {
          return report_error(kName, Error{"--gpu", fmt::format("{} has no bf16 peak", gpu), ""});
        }
        const double e = std::min(1.0, m->gemm.best_flops_per_s / peak->si());
        emit("{}: best GEMM {:.1f} TFLOP/s at n = {} = {:.1f} % of the bf16 peak\n", f,
             m->gemm.best_flops_per_s / 1e12, m->gemm.best_n, 100 * e);
        gpu_entries[gpu].gemm = e;
        // With several sizes, the tile model's k-loop, tile and launch times; square sizes cannot
        // tell tile shapes apart, so those keep the catalog's ratios.
        const std::vector<GemmSample> samples = gemm_samples(m->gemm);
        if (samples.size() >= min_tile_fit_samples(true) && (*g)->tiles) {
          Gpu measured = **g;
          measured.efficiency->gemm = e;
          const TileFit fit = fit_gemm_tiles(measured, Precision::kBf16, samples, &*(*g)->tiles);
          gpu_entries[gpu].tiles = fit.model;
          emit(
              "{}: tile model fitted over {} sizes: k-loop {:.3f} of the per-SM peak, {:.2f} us "
              "per tile, {:.2f} us per launch (median error {:.1f} %)\n",
              f, samples.size(), fit.model.loop_efficiency, fit.model.tile_overhead.si() * 1e6,
              fit.model.launch.si() * 1e6, 100 * fit.median_abs_error);
        }
      } else {
        const double e = std::min(1.0, m->memory.bytes_per_s / (*g)->memory_bandwidth.si());
        gpu_entries[gpu].hbm = e;
        emit("{}: copy at {:.0f} GB/s = {:.1f} % of the {:.0f} GB/s peak\n", f,
             m->memory.bytes_per_s / 1e9, 100 * e, (*g)->memory_bandwidth.si() / 1e9);
      }
      continue;
    }
    if (!m->is_train) {
      if (fabric.empty()) {
        return report_error(kName,
                            Error{"--fabric", fmt::format("{} holds collectives", f),
                                  "name the catalog fabric they ran over, e.g. --fabric nvlink4"},
                            kExitUsage);
      }
      Result<const Fabric*> fab = catalog->fabric(fabric);
      if (!fab)
        return report_error(kName, Error{"--fabric", fab.error().what, fab.error().hint});
      const CollectiveRun& c = m->collectives;
      for (const CollectivePoint& p : c.points) {
        if (p.wrong > 0) {
          return report_error(
              kName, Error{f, "has wrong results", "fix the run before calibrating on it"});
        }
      }
      const AlphaBeta ab = fit_alpha_beta(c);
      // The fitted latency is the whole collective's. The model charges each pass a software
      // base (collective_latency) plus the fabric's latency per link level (collective.h), so
      // the fabric's share is what is left after the base, per level.
      const double passes = c.op == "all_reduce" ? 2.0 : 1.0;
      const double base = catalog->train_params().collective_latency.si();
      const double levels = static_cast<double>(std::max<int64_t>(1, latency_levels(c.ranks)));
      const double link = std::max(0.0, ab.alpha_s / passes - base) / levels;
      body += fmt::format(
          "\n[[fabric]]\nid = \"{}\"\nmeasured_busbw = \"{:.4g} GB/s\"\nlatency = \"{:.4g} us\"\n"
          "measured_note = \"{} on {} ranks ({}), {} sizes from {:.0f} B to {:.0f} B: fitted by "
          "gpuplan calibrate\"\n",
          fabric, ab.busbw / 1e9, link * 1e6, c.op, c.ranks, c.backend, c.points.size(),
          c.points.front().bytes, c.points.back().bytes);
      emit("{}: {} on {} ranks -> bus bandwidth {:.2f} GB/s, latency {:.1f} us\n", f, c.op, c.ranks,
           ab.busbw / 1e9, ab.alpha_s * 1e6);
    } else {
      const TrainRun& t = m->train;
      const double achieved = t.flops_per_step / t.compute_median_s;
      if (t.backend == "mpi") {
        emit("{}: CPU training loop at {:.1f} GFLOP/s per rank; no catalog GPU to calibrate\n", f,
             achieved / 1e9);
        continue;
      }
      if (gpu.empty()) {
        return report_error(kName,
                            Error{"--gpu", fmt::format("{} holds a GPU training run", f),
                                  "name the catalog GPU, e.g. --gpu h200-sxm"},
                            kExitUsage);
      }
      Result<const Gpu*> g = catalog->gpu(gpu);
      if (!g)
        return report_error(kName, Error{"--gpu", g.error().what, g.error().hint});
      Result<Precision> p = parse_precision(precision);
      if (!p)
        return report_error(kName, Error{"--precision", p.error().what, p.error().hint},
                            kExitUsage);
      const auto peak = (*g)->peak_for(*p);
      if (!peak)
        return report_error(kName, Error{"--precision", "the GPU has no such peak", ""},
                            kExitUsage);
      if (gpu_entries[gpu].gemm == 0) {
        gpu_entries[gpu].gemm = std::min(1.0, achieved / peak->si());
      }
      emit("{}: {:.1f} TFLOP/s = {:.1f} % of the {} peak\n", f, achieved / 1e12,
           100 * achieved / peak->si(), precision);
    }
  }
  for (const auto& [id, e] : gpu_entries) {
    body += fmt::format("\n[[gpu]]\nid = \"{}\"\n", id);
    if (e.gemm > 0)
      body += fmt::format("gemm = {:.4f}\n", e.gemm);
    if (e.tiles) {
      body += fmt::format("loop_efficiency = {:.4f}\ntile_overhead = \"{:.4g} us\"\n",
                          e.tiles->loop_efficiency, e.tiles->tile_overhead.si() * 1e6);
      body += fmt::format("launch = \"{:.4g} us\"\n", e.tiles->launch.si() * 1e6);
    }
    if (e.hbm > 0)
      body += fmt::format("hbm = {:.4f}\n", e.hbm);
  }
  const std::string text = fmt::format(
      "schema = 1\n# A calibration profile: use it with --profile on train, scale, serve and "
      "plan.\n"
      "source = \"gpuplan calibrate on {} from {}\"\n{}",
      today(), fmt::join(used, ", "), body);
  if (!write_text(out, text))
    return report_error(kName, Error{out, "cannot write the file", ""});
  emit("wrote {}\n", out);
  return kExitOk;
}

}  // namespace gpuplan::cli
