// gpuplan scale MODEL --gpu ID --fabric nvlink4,pcie5 --gpus 1,2,4,8 : the scaling curve, with
// the source document's efficiency = T1 / (TN x N) x 100 on the time to process a fixed token
// budget, side by side per fabric, and the share of the step lost to communication.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "command.h"
#include "flags.h"
#include "report.h"
#include "train_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "scale";

struct Point {
  int64_t gpus = 0;
  TrainEstimate estimate;
  double seconds_per_token = 0;  // for the whole job: step / tokens per step
  double efficiency = 0;         // % against the smallest count that runs
  double comm_share = 0;         // exposed communication / step
};

// The fastest layout that fits at this count: data parallel first, adding ZeRO, recomputation
// and then tensor parallelism inside a node only when memory demands it.
TrainEstimate fastest(const Model& m, const Cluster& c, TrainJob job, const Catalog& cat) {
  TrainEstimate best;
  best.reason = "no layout fits in memory";
  for (int64_t tp = 1; tp <= std::min<int64_t>(c.gpus, c.gpus_per_node); tp *= 2) {
    if (c.gpus % tp != 0)
      continue;
    for (int64_t zero : {0, 1, 2, 3}) {
      for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        job.memory.layout = Parallelism{tp, 1, c.gpus / tp, 1, tp > 1, zero};
        job.memory.recompute = r;
        job.memory.micro_batch = 0;
        if (layout_problem(m, job.memory) || (zero > 0 && c.gpus / tp == 1))
          continue;
        TrainEstimate e = best_training(m, c, job, cat.memory_params(), cat.train_params());
        if (!e.feasible || !e.fits_memory)
          continue;
        if (!best.feasible || e.step.total() < best.step.total())
          best = std::move(e);
      }
    }
    if (best.feasible)
      break;  // tensor parallelism only when data parallelism cannot hold it
  }
  return best;
}

std::string bar(double pct) {
  const int n = static_cast<int>(std::lround(std::clamp(pct, 0.0, 100.0) / 2.5));
  return std::string(static_cast<size_t>(n), '#');
}

}  // namespace

int run_scale(const std::vector<std::string>& args) {
  CLI::App app("Scaling efficiency from 1 to N GPUs, side by side per fabric.", args.front());
  std::string model_id, gpu, scale_out = "ib-ndr-400g", precision = "bf16", data;
  std::vector<std::string> fabrics;
  std::vector<int64_t> counts;
  int64_t per_gpu_batch = 0, global_batch = 0, seq = 0, gpus_per_node = 8, nics_per_node = 8;
  bool json = false;
  app.add_option("model", model_id, "catalog model id or path to a config.json")->required();
  app.add_option("--gpu", gpu, "catalog GPU id")->required();
  app.add_option("--fabric", fabrics,
                 "GPU-to-GPU fabrics inside a node to compare, e.g. nvlink4,pcie5")
      ->delimiter(',')
      ->required();
  app.add_option("--gpus", counts, "GPU counts, e.g. 1,2,4,8,16")->delimiter(',')->required();
  app.add_option("--per-gpu-batch", per_gpu_batch,
                 "sequences per GPU per step (weak scaling; default 8)");
  app.add_option("--global-batch", global_batch,
                 "sequences per step for every count (strong scaling)");
  app.add_option("--seq", seq, "tokens per sequence (default 4096 or the model's limit)");
  app.add_option("--precision", precision, "bf16 | fp16 | fp8 (default bf16)");
  app.add_option("--gpus-per-node", gpus_per_node, "GPUs per node (default 8)");
  app.add_option("--scale-out", scale_out, "fabric between nodes (default ib-ndr-400g)");
  app.add_option("--nics-per-node", nics_per_node, "NICs per node (default 8)");
  app.add_flag("--json", json, "print JSON");
  app.add_option("--data", data, "catalog directory");
  std::string profile;
  app.add_option("--profile", profile, "calibration profile from gpuplan calibrate");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  if (per_gpu_batch > 0 && global_batch > 0) {
    return report_error(
        kName,
        Error{"--per-gpu-batch", "give --per-gpu-batch or --global-batch, not both",
              "weak scaling keeps the per-GPU batch, strong scaling the global one"},
        kExitUsage);
  }
  for (int64_t n : counts) {
    if (n <= 0) {
      return report_error(kName, Error{"--gpus", fmt::format("count {} must be positive", n), ""},
                          kExitUsage);
    }
  }
  if (per_gpu_batch == 0 && global_batch == 0)
    per_gpu_batch = 8;
  Result<Precision> pr = parse_precision(precision);
  if (!pr)
    return report_error(kName, Error{"--precision", pr.error().what, pr.error().hint}, kExitUsage);
  Result<Catalog> catalog = load_catalog_with_profile(data, profile, json);
  if (!catalog)
    return report_error(kName, catalog.error());
  Result<Model> model = catalog->model(model_id);
  if (!model)
    return report_error(kName, model.error());
  if (seq == 0)
    seq = model->max_positions > 0 ? std::min<int64_t>(4096, model->max_positions) : 4096;

  JsonWriter w;
  w.begin_object().field("model", model->id).field("gpu", gpu).field("seq_tokens", seq);
  w.key("fabrics").begin_array();
  std::string text;
  for (const std::string& fabric : fabrics) {
    std::vector<Point> points;
    for (int64_t n : counts) {
      ClusterFlags cf{gpu, "", fabric, scale_out, n, std::min(gpus_per_node, n), nics_per_node};
      Result<Cluster> cl = make_cluster(*catalog, cf, nullptr);
      if (!cl)
        return report_error(kName, cl.error());
      if (global_batch > 0 && global_batch % n != 0) {
        return report_error(
            kName,
            Error{"--global-batch",
                  fmt::format("{} sequences do not divide over {} GPUs", global_batch, n), ""},
            kExitUsage);
      }
      TrainJob job;
      job.memory.task = Task::kTrain;
      job.memory.precision = *pr;
      job.memory.seq = seq;
      job.global_batch = global_batch > 0 ? global_batch : per_gpu_batch * n;
      Point p;
      p.gpus = n;
      p.estimate = fastest(*model, *cl, job, *catalog);
      if (p.estimate.feasible) {
        const StepTime& s = p.estimate.step;
        p.seconds_per_token = s.total().si() / static_cast<double>(job.global_batch * seq);
        p.comm_share = (s.tp_comm + s.pp_comm + s.dp_comm + s.cp_comm).si() / s.total().si();
      }
      points.push_back(std::move(p));
    }
    // efficiency = T_base x N_base / (T_N x N): against the smallest count that runs.
    const Point* base = nullptr;
    for (const Point& p : points) {
      if (p.estimate.feasible && base == nullptr)
        base = &p;
    }
    for (Point& p : points) {
      if (base != nullptr && p.estimate.feasible) {
        p.efficiency = 100.0 * base->seconds_per_token * static_cast<double>(base->gpus) /
                       (p.seconds_per_token * static_cast<double>(p.gpus));
      }
    }
    w.begin_object().field("fabric", fabric).key("points").begin_array();
    Table t({"GPUs", "layout", "step (s)", "tokens/s", "efficiency (%)", "comm share (%)", ""},
            {true, false, true, true, true, true, false});
    for (const Point& p : points) {
      w.begin_object().field("gpus", p.gpus);
      if (!p.estimate.feasible) {
        w.field("feasible", false).field("reason", p.estimate.reason).end_object();
        t.add({fmt::format("{}", p.gpus), "does not fit: " + p.estimate.reason});
        continue;
      }
      w.field("feasible", true)
          .field("step_s", p.estimate.step.total().si())
          .field("tokens_per_s", p.estimate.tokens_per_s)
          .field("efficiency_pct", p.efficiency)
          .field("comm_share", p.comm_share)
          .field("layout", train_layout_text(p.estimate.job))
          .end_object();
      t.add({fmt::format("{}", p.gpus), train_layout_text(p.estimate.job),
             fmt::format("{:.3g}", p.estimate.step.total().si()),
             grouped(std::llround(p.estimate.tokens_per_s)), fmt::format("{:.1f}", p.efficiency),
             fmt::format("{:.1f}", 100 * p.comm_share), bar(p.efficiency)});
    }
    w.end_array().end_object();
    std::string note;
    for (const Point& p : points) {
      const bool needs_less =
          base != nullptr && p.estimate.feasible &&
          (base->estimate.job.memory.recompute != p.estimate.job.memory.recompute);
      if (p.efficiency > 102.0 && needs_less && note.empty()) {
        note = fmt::format(
            "  note: above 100 % because {} GPU(s) must run '{}' to fit in memory and {} GPUs need "
            "not recompute as much; the formula compares job times, so it credits the memory "
            "too.\n",
            base->gpus, train_layout_text(base->estimate.job), p.gpus);
      }
    }
    text += fmt::format("\n{} inside a node{}:\n{}", fabric,
                        counts.back() > gpus_per_node
                            ? fmt::format(", {} x {} between nodes", nics_per_node, scale_out)
                            : "",
                        t.str("  ")) +
            note;
  }
  w.end_array().end_object();
  if (json) {
    fmt::print("{}", w.str());
    return kExitOk;
  }
  fmt::print("scaling of {} training on {}, {} x {} tokens per {}\n", model->id, gpu,
             global_batch > 0 ? global_batch : per_gpu_batch, grouped(seq),
             global_batch > 0 ? "step (strong scaling)" : "GPU per step (weak scaling)");
  fmt::print(
      "efficiency = T1 / (TN x N) x 100 on the time to process the same tokens; the bar is "
      "efficiency, # = 2.5 %\n{}",
      text);
  return kExitOk;
}

}  // namespace gpuplan::cli
