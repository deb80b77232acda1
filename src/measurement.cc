#include "gpuplan/measurement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(path, "cannot open the file",
                "give a file written by 'gpuplan measure ... --json'");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  Json doc;
  try {
    doc = Json::parse(buffer.str());
  } catch (const Json::exception& e) {
    return fail(path, "not valid JSON", "give a file written by 'gpuplan measure ... --json'");
  }
  Measurement m;
  m.file = path;
  try {
    const std::string kind = doc.at("kind").get<std::string>();
    if (kind == "collectives") {
      CollectiveRun& c = m.collectives;
      c.op = doc.at("op").get<std::string>();
      c.backend = doc.at("backend").get<std::string>();
      c.ranks = doc.at("ranks").get<int>();
      for (const Json& p : doc.at("points")) {
        c.points.push_back({p.at("bytes").get<double>(), p.at("median_s").get<double>(),
                            p.at("busbw_bytes_per_s").get<double>(), p.at("wrong").get<int64_t>()});
      }
    } else if (kind == "gemm") {
      m.kind = MeasurementKind::kGemm;
      m.gemm.backend = doc.at("backend").get<std::string>();
      for (const Json& p : doc.at("points")) {
        const GemmPoint g{p.at("n").get<int64_t>(), p.at("flops_per_s").get<double>()};
        m.gemm.points.push_back(g);
        if (g.flops_per_s > m.gemm.best_flops_per_s) {
          m.gemm.best_flops_per_s = g.flops_per_s;
          m.gemm.best_n = g.n;
        }
      }
    } else if (kind == "memory") {
      m.kind = MeasurementKind::kMemory;
      m.memory.backend = doc.at("backend").get<std::string>();
      m.memory.bytes = doc.at("bytes").get<double>();
      m.memory.bytes_per_s = doc.at("bytes_per_s").get<double>();
    } else if (kind == "train") {
      m.kind = MeasurementKind::kTrain;
      m.is_train = true;
      TrainRun& t = m.train;
      t.backend = doc.at("backend").get<std::string>();
      t.ranks = doc.at("ranks").get<int>();
      t.hidden = doc.at("hidden").get<int64_t>();
      t.layers = doc.at("layers").get<int64_t>();
      t.seq = doc.at("seq").get<int64_t>();
      t.per_worker_batch = doc.at("per_worker_batch").get<int64_t>();
      t.overlap = doc.at("overlap").get<bool>();
      t.tokens_per_step = doc.at("tokens_per_step").get<double>();
      t.flops_per_step = doc.at("flops_per_step_per_rank").get<double>();
      t.gradient_bytes = doc.at("gradient_bytes").get<double>();
      t.step_median_s = doc.at("step_median_s").get<double>();
      t.step_p90_s = doc.at("step_p90_s").get<double>();
      t.compute_median_s = doc.at("compute_median_s").get<double>();
      t.exposed_median_s = doc.at("exposed_comm_median_s").get<double>();
      t.update_median_s = doc.at("update_median_s").get<double>();
    } else {
      return fail(path, fmt::format("unknown kind '{}'", kind),
                  "expected 'collectives' or 'train'");
    }
  } catch (const Json::exception& e) {
    return fail(path, fmt::format("missing or malformed field: {}", e.what()),
                "give a file written by 'gpuplan measure ... --json'");
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

}  // namespace gpuplan
