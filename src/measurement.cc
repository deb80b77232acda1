#include "gpuplan/measurement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "json_reader.h"

namespace gpuplan {
namespace {

using Json = nlohmann::json;

}  // namespace

double bus_factor(const std::string& op, int n) {
  const double f = static_cast<double>(n - 1) / static_cast<double>(n);
  if (op == "all_reduce") {
    return 2.0 * f;
  }
  if (op == "broadcast") {
    return 1.0;
  }
  return f;
}

Result<Measurement> read_measurement(const std::string& path) {
  Json doc;
  GPUPLAN_ASSIGN_OR_RETURN(
      doc, detail::read_json_file(path, "give a file written by 'gpuplan measure ... --json'"));
  Measurement m;
  m.file = path;
  // Every value is checked against its physical range here, so the fits that divide by
  // bandwidths, times and rank counts never see a zero, and an empty sweep is refused.
  constexpr double kMostBytes = 1e15;   // 1 PB: far beyond any message or GPU memory
  constexpr double kMostSeconds = 1e6;  // about 11.6 days for one timed operation
  constexpr double kMostRate = 1e18;    // bytes/s or FLOP/s: 1000x any machine of 2026
  constexpr double kLeast = 1e-300;     // positive: a divisor
  const detail::JsonFields f(doc, path);
  std::string kind;
  GPUPLAN_ASSIGN_OR_RETURN(kind, f.text("kind"));
  if (kind == "collectives") {
    CollectiveRun& c = m.collectives;
    GPUPLAN_ASSIGN_OR_RETURN(c.op, f.text("op"));
    GPUPLAN_ASSIGN_OR_RETURN(c.backend, f.text("backend"));
    int64_t ranks = 0;
    GPUPLAN_ASSIGN_OR_RETURN(ranks, f.integer("ranks", 2, 1 << 20));
    c.ranks = static_cast<int>(ranks);
    std::vector<detail::JsonFields> points;
    GPUPLAN_ASSIGN_OR_RETURN(points, f.objects("points", 1));
    for (const detail::JsonFields& p : points) {
      CollectivePoint q;
      GPUPLAN_ASSIGN_OR_RETURN(q.bytes, p.number("bytes", 1, kMostBytes));
      GPUPLAN_ASSIGN_OR_RETURN(q.median_s, p.number("median_s", kLeast, kMostSeconds));
      GPUPLAN_ASSIGN_OR_RETURN(q.busbw, p.number("busbw_bytes_per_s", kLeast, kMostRate));
      GPUPLAN_ASSIGN_OR_RETURN(q.wrong, p.integer("wrong", 0, INT64_MAX));
      c.points.push_back(q);
    }
  } else if (kind == "gemm") {
    m.kind = MeasurementKind::kGemm;
    GPUPLAN_ASSIGN_OR_RETURN(m.gemm.backend, f.text("backend"));
    std::vector<detail::JsonFields> points;
    GPUPLAN_ASSIGN_OR_RETURN(points, f.objects("points", 1));
    for (const detail::JsonFields& p : points) {
      GemmPoint g;
      GPUPLAN_ASSIGN_OR_RETURN(g.n, p.integer("n", 1, 1 << 20));
      GPUPLAN_ASSIGN_OR_RETURN(g.flops_per_s, p.number("flops_per_s", kLeast, kMostRate));
      m.gemm.points.push_back(g);
      if (g.flops_per_s > m.gemm.best_flops_per_s) {
        m.gemm.best_flops_per_s = g.flops_per_s;
        m.gemm.best_n = g.n;
      }
    }
  } else if (kind == "memory") {
    m.kind = MeasurementKind::kMemory;
    GPUPLAN_ASSIGN_OR_RETURN(m.memory.backend, f.text("backend"));
    GPUPLAN_ASSIGN_OR_RETURN(m.memory.bytes, f.number("bytes", 1, kMostBytes));
    GPUPLAN_ASSIGN_OR_RETURN(m.memory.bytes_per_s, f.number("bytes_per_s", kLeast, kMostRate));
  } else if (kind == "train") {
    m.kind = MeasurementKind::kTrain;
    m.is_train = true;
    TrainRun& t = m.train;
    GPUPLAN_ASSIGN_OR_RETURN(t.backend, f.text("backend"));
    int64_t ranks = 0;
    GPUPLAN_ASSIGN_OR_RETURN(ranks, f.integer("ranks", 1, 1 << 20));
    t.ranks = static_cast<int>(ranks);
    GPUPLAN_ASSIGN_OR_RETURN(t.hidden, f.integer("hidden", 1, 1 << 20));
    GPUPLAN_ASSIGN_OR_RETURN(t.layers, f.integer("layers", 1, 1 << 16));
    GPUPLAN_ASSIGN_OR_RETURN(t.seq, f.integer("seq", 1, 1 << 24));
    GPUPLAN_ASSIGN_OR_RETURN(t.per_worker_batch, f.integer("per_worker_batch", 1, 1 << 24));
    GPUPLAN_ASSIGN_OR_RETURN(t.overlap, f.boolean("overlap"));
    GPUPLAN_ASSIGN_OR_RETURN(t.tokens_per_step, f.number("tokens_per_step", 1, 1e15));
    GPUPLAN_ASSIGN_OR_RETURN(t.flops_per_step, f.number("flops_per_step_per_rank", 1, 1e24));
    GPUPLAN_ASSIGN_OR_RETURN(t.gradient_bytes, f.number("gradient_bytes", 0, kMostBytes));
    GPUPLAN_ASSIGN_OR_RETURN(t.step_median_s, f.number("step_median_s", kLeast, kMostSeconds));
    GPUPLAN_ASSIGN_OR_RETURN(t.step_p90_s, f.number("step_p90_s", kLeast, kMostSeconds));
    GPUPLAN_ASSIGN_OR_RETURN(t.compute_median_s, f.number("compute_median_s", 0, kMostSeconds));
    GPUPLAN_ASSIGN_OR_RETURN(t.exposed_median_s,
                             f.number("exposed_comm_median_s", 0, kMostSeconds));
    GPUPLAN_ASSIGN_OR_RETURN(t.update_median_s, f.number("update_median_s", 0, kMostSeconds));
  } else {
    return fail(path, fmt::format("unknown kind '{}'", kind),
                "expected 'collectives', 'gemm', 'memory' or 'train'");
  }
  return m;
}

AlphaBeta fit_alpha_beta(const CollectiveRun& run) {
  // Linear least squares t = alpha + x / busbw with x = S * factor.
  const double factor = bus_factor(run.op, std::max(2, run.ranks));
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const CollectivePoint& p : run.points) {
    const double x = p.bytes * factor;
    n += 1;
    sx += x;
    sy += p.median_s;
    sxx += x * x;
    sxy += x * p.median_s;
  }
  AlphaBeta ab;
  const double det = n * sxx - sx * sx;
  if (n < 2 || det <= 0) {
    return ab;
  }
  const double slope = (n * sxy - sx * sy) / det;
  ab.alpha_s = std::max(0.0, (sy - slope * sx) / n);
  // The bandwidth term is best seen at the largest message, where latency no longer matters.
  ab.busbw = slope > 0 ? 1.0 / slope : 0.0;
  if (ab.busbw <= 0 && !run.points.empty()) {
    ab.busbw = run.points.back().busbw;
  }
  return ab;
}

std::vector<GemmSample> gemm_samples(const GemmRun& run) {
  std::vector<GemmSample> out;
  for (const GemmPoint& p : run.points) {
    if (p.n > 0 && p.flops_per_s > 0) {
      out.push_back({GemmShape{p.n, p.n, p.n, 1}, FlopsPerSecond(p.flops_per_s)});
    }
  }
  return out;
}

Result<std::vector<GemmSample>> read_gemm_sweep(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(path, "cannot open the file",
                "give a CSV sweep such as data/gemm/h100-sxm-bf16.csv");
  }
  std::vector<GemmSample> out;
  std::string line;
  int number = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty() || line[0] == '#') {
      continue;
    }
    const std::string where = fmt::format("{}:{}", path, number);
    if (!header) {
      if (line != "batch,m,n,k,TFLOP/s") {
        return fail(where, fmt::format("header '{}' is not 'batch,m,n,k,TFLOP/s'", line),
                    "a sweep lists one GEMM per line after that header");
      }
      header = true;
      continue;
    }
    std::istringstream fields(line);
    std::string cell;
    std::vector<double> v;
    while (std::getline(fields, cell, ',')) {
      size_t used = 0;
      double x = 0;
      try {
        x = std::stod(cell, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != cell.size() || !std::isfinite(x) || x <= 0) {
        return fail(where, fmt::format("'{}' is not a positive number", cell),
                    "each line is batch,m,n,k (whole numbers) and the rate in TFLOP/s");
      }
      v.push_back(x);
    }
    if (v.size() != 5) {
      return fail(where, fmt::format("{} fields, not 5", v.size()), "batch,m,n,k,TFLOP/s");
    }
    for (size_t i = 0; i < 4; ++i) {
      if (v[i] != std::floor(v[i]) || v[i] > 1e9) {
        return fail(where, fmt::format("'{}' is not a whole dimension up to 1e9", v[i]), "");
      }
    }
    out.push_back({GemmShape{static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]),
                             static_cast<int64_t>(v[3]), static_cast<int64_t>(v[0])},
                   FlopsPerSecond(v[4] * 1e12)});
  }
  if (out.empty()) {
    return fail(path, "no GEMM in the sweep", "list at least one GEMM after the header");
  }
  return out;
}

MeasureReport measure_report(std::vector<TrainRun> runs, const Fabric* fabric,
                             const TrainParams& params) {
  GPUPLAN_CHECK(!runs.empty(), "a report of no runs");
  std::sort(runs.begin(), runs.end(),
            [](const TrainRun& a, const TrainRun& b) { return a.ranks < b.ranks; });
  std::optional<Network> net;
  if (fabric != nullptr) {
    // One node: every rank on the same fabric.
    Cluster c;
    c.gpus = runs.back().ranks;
    c.gpus_per_node = runs.back().ranks;
    c.scale_up = fabric;
    net = cluster_network(c, params);
  }
  MeasureReport report;
  const TrainRun& base = runs.front();
  report.base_ranks = base.ranks;
  // The same dataset: time = dataset / (tokens per step) x step. With equal per-worker batches,
  // efficiency = T_base x N_base / (T_N x N).
  const double base_per_token = base.step_median_s / base.tokens_per_step;
  for (const TrainRun& r : runs) {
    ReportRow row;
    row.run = r;
    row.tokens_per_s = r.tokens_per_step / r.step_median_s;
    const double per_token = r.step_median_s / r.tokens_per_step;
    row.efficiency_pct = 100.0 * base_per_token * base.ranks / (per_token * r.ranks);
    if (net) {
      const Seconds sync = all_reduce_time(Bytes(r.gradient_bytes), Group{r.ranks, r.ranks}, *net);
      const double step = base.compute_median_s + base.update_median_s + sync.si();
      row.predicted_pct =
          100.0 * base_per_token * base.ranks / (step / r.tokens_per_step * r.ranks);
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

}  // namespace gpuplan
