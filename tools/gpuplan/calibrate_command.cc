// gpuplan calibrate RESULTS.json... -o profile.toml: folds measurements into a profile that
// train, scale and plan use (--profile) instead of the catalog's defaults.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>

#include "command.h"
#include "flags.h"
#include "gpuplan/collective.h"
#include "gpuplan/measurement.h"
#include "report.h"

namespace gpuplan::cli {

int run_calibrate(const std::vector<std::string>& args) {
  constexpr const char* kName = "calibrate";
  CLI::App app("Fit measurements (gpuplan measure ... --json) into a calibration profile.",
               args.front());
  std::vector<std::string> files;
  std::string out, fabric, gpu, data, precision = "bf16";
  app.add_option("files", files, "JSON files from gpuplan measure")->required();
  app.add_option("-o,--output", out, "profile to write (TOML)")->required();
  app.add_option("--fabric", fabric, "catalog fabric the collectives ran over");
  app.add_option("--gpu", gpu, "catalog GPU the training loop ran on (GPU backends only)");
  app.add_option("--precision", precision, "precision of the GPU training loop (default bf16)");
  app.add_option("--data", data, "catalog directory");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  Result<Catalog> catalog = load_catalog(data);
  if (!catalog)
    return report_error(kName, catalog.error());
  std::string body;
  std::vector<std::string> used;
  // What was measured of each GPU; 0 where not measured.
  struct GpuEntry {
    double gemm = 0;       // large-GEMM efficiency
    double gemm_half = 0;  // roll-off, FLOPs
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
        fmt::print("{}: a CPU {} measurement; no catalog GPU to calibrate\n", f,
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
        double e = std::min(1.0, m->gemm.best_flops_per_s / peak->si());
        fmt::print("{}: best GEMM {:.1f} TFLOP/s at n = {} = {:.1f} % of the bf16 peak\n", f,
                   m->gemm.best_flops_per_s / 1e12, m->gemm.best_n, 100 * e);
        // With several sizes, the model's own roll-off: the large-GEMM rate and the size that
        // reaches half of it.
        if (const std::optional<GemmRolloff> fit = fit_gemm_rolloff(m->gemm)) {
          e = std::min(1.0, fit->rate / peak->si());
          gpu_entries[gpu].gemm_half = fit->half_flops;
          fmt::print(
              "{}: roll-off fitted over {} sizes: {:.1f} TFLOP/s for large GEMMs = {:.1f} % of "
              "the peak, half of it at {:.3g} GFLOP\n",
              f, m->gemm.points.size(), fit->rate / 1e12, 100 * e, fit->half_flops / 1e9);
        }
        gpu_entries[gpu].gemm = e;
      } else {
        const double e = std::min(1.0, m->memory.bytes_per_s / (*g)->memory_bandwidth.si());
        gpu_entries[gpu].hbm = e;
        fmt::print("{}: copy at {:.0f} GB/s = {:.1f} % of the {:.0f} GB/s peak\n", f,
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
      fmt::print("{}: {} on {} ranks -> bus bandwidth {:.2f} GB/s, latency {:.1f} us\n", f, c.op,
                 c.ranks, ab.busbw / 1e9, ab.alpha_s * 1e6);
    } else {
      const TrainRun& t = m->train;
      const double achieved = t.flops_per_step / t.compute_median_s;
      if (t.backend == "mpi") {
        fmt::print(
            "{}: CPU training loop at {:.1f} GFLOP/s per rank; no catalog GPU to calibrate\n", f,
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
      fmt::print("{}: {:.1f} TFLOP/s = {:.1f} % of the {} peak\n", f, achieved / 1e12,
                 100 * achieved / peak->si(), precision);
    }
  }
  for (const auto& [id, e] : gpu_entries) {
    body += fmt::format("\n[[gpu]]\nid = \"{}\"\n", id);
    if (e.gemm > 0)
      body += fmt::format("gemm = {:.4f}\n", e.gemm);
    if (e.gemm_half > 0)
      body += fmt::format("gemm_half = \"{:.4g} GFLOP\"\n", e.gemm_half / 1e9);
    if (e.hbm > 0)
      body += fmt::format("hbm = {:.4f}\n", e.hbm);
  }
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const std::string text = fmt::format(
      "schema = 1\n# A calibration profile: use it with --profile on train, scale, serve and "
      "plan.\n"
      "source = \"gpuplan calibrate on {} from {}\"\n{}",
      date, fmt::join(used, ", "), body);
  std::ofstream o(out, std::ios::binary);
  o << text;
  if (!o)
    return report_error(kName, Error{out, "cannot write the file", ""});
  fmt::print("wrote {}\n", out);
  return kExitOk;
}

}  // namespace gpuplan::cli
