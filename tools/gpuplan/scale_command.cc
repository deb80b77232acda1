// gpuplan scale MODEL --gpu ID --fabric nvlink4,pcie5 --gpus 1,2,4,8 : the scaling curve, with
// the source document's efficiency = T1 / (TN x N) x 100 on the time to process a fixed token
// budget, side by side per fabric, and the share of the step lost to communication.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "command.h"
#include "flags.h"
#include "gpuplan/scaling.h"
#include "report.h"
#include "train_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "scale";

std::string bar(double pct) {
  const int n = static_cast<int>(std::lround(std::clamp(pct, 0.0, 100.0) / 2.5));
  return std::string(static_cast<size_t>(n), '#');
}

}  // namespace

int run_scale(const std::vector<std::string>& args) {
  CLI::App app("Scaling efficiency from 1 to N GPUs, side by side per fabric.", args.front());
  std::string model_id, gpu, scale_out = "ib-ndr-400g", precision = "bf16", data;
  std::string framework = std::string(kDefaultFramework);
  std::vector<std::string> fabrics;
  std::vector<int64_t> counts;
  int64_t per_gpu_batch = 0, global_batch = 0, seq = 0, gpus_per_node = 8, nics_per_node = 8;
  bool json = false, best = false;
  app.add_option("model", model_id, "catalog model id or path to a config.json")->required();
  app.add_option("--gpu", gpu, "catalog GPU id")->required();
  app.add_option("--fabric", fabrics,
                 "GPU-to-GPU fabrics inside a node to compare, e.g. nvlink4,pcie5")
      ->delimiter(',')
      ->required();
  app.add_option("--gpus", counts, "GPU counts, e.g. 1,2,4,8,16")
      ->delimiter(',')
      ->required()
      ->check(rule(fields::kGpus));
  app.add_option("--per-gpu-batch", per_gpu_batch,
                 "sequences per GPU per step (weak scaling; default 8)")
      ->check(rule(fields::kPerGpuBatch));
  app.add_option("--global-batch", global_batch,
                 "sequences per step for every count (strong scaling)")
      ->check(rule(fields::kGlobalBatch));
  app.add_option("--seq", seq, "tokens per sequence (default 4096 or the model's limit)")
      ->check(rule(fields::kSeq));
  app.add_option("--precision", precision, "bf16 | fp16 | fp8 (default bf16)");
  app.add_option("--framework", framework,
                 "training software, ID or ID@YEAR (default megatron-lm as of today)");
  app.add_flag("--best", best,
               "each count's own fastest layout, not the smallest count's setup at every count");
  app.add_option("--gpus-per-node", gpus_per_node, "GPUs per node (default 8)")
      ->check(rule(fields::kGpusPerNode));
  app.add_option("--scale-out", scale_out, "fabric between nodes (default ib-ndr-400g)");
  app.add_option("--nics-per-node", nics_per_node, "NICs per node (default 8)")
      ->check(rule(fields::kNicsPerNode));
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
    if (global_batch > 0 && global_batch % n != 0) {
      return report_error(
          kName,
          Error{"--global-batch",
                fmt::format("{} sequences do not divide over {} GPUs", global_batch, n), ""},
          kExitUsage);
    }
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
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
  Result<Software> software = catalog->software(framework);
  if (!software)
    return report_error(kName, Error{"--framework", software.error().what, software.error().hint});
  if (seq == 0)
    seq = model->max_positions > 0 ? std::min<int64_t>(4096, model->max_positions) : 4096;
  if (Result<int64_t> c = check_context(*model, seq, "--seq"); !c)
    return report_error(kName, c.error(), kExitUsage);

  ScaleJob sj;
  sj.base.memory.task = Task::kTrain;
  sj.base.memory.precision = *pr;
  sj.base.memory.seq = seq;
  apply_software(sj.base, *software);
  sj.counts = counts;
  sj.per_gpu_batch = per_gpu_batch;
  sj.global_batch = global_batch;
  sj.best = best;

  JsonWriter w;
  w.begin_object()
      .field("model", model->id)
      .field("gpu", gpu)
      .field("seq_tokens", seq)
      .field("framework", software->framework->id)
      .field("framework_year", software->year)
      .field("layouts", best ? "best" : "same setup");
  w.key("fabrics").begin_array();
  std::string text;
  for (const std::string& fabric : fabrics) {
    // The node the curve grows: the largest count's nodes, each of up to --gpus-per-node GPUs.
    MachineSpec spec;
    spec.gpu = gpu;
    spec.scale_up = fabric;
    spec.scale_out = scale_out;
    spec.gpus = counts.back();
    spec.gpus_per_node = std::min(gpus_per_node, counts.back());
    spec.nics_per_node = nics_per_node;
    Result<Machines> machines = resolve_machines(*catalog, spec);
    if (!machines)
      return report_error(kName, machines.error());
    Cluster* node = &machines->cluster;
    node->gpus_per_node = gpus_per_node;
    const ScaleCurve curve =
        scale_training(*model, *node, sj, catalog->memory_params(), catalog->train_params());
    w.begin_object().field("fabric", fabric).key("points").begin_array();
    Table t({"GPUs", "layout", "step (s)", "tokens/s", "efficiency (%)", "comm share (%)", ""},
            {true, false, true, true, true, true, false});
    std::string notes;
    for (const ScalePoint& p : curve.points) {
      w.begin_object().field("gpus", p.gpus);
      if (!p.estimate.feasible) {
        w.field("feasible", false).field("reason", p.estimate.reason).end_object();
        t.add({fmt::format("{}", p.gpus), "does not fit: " + p.estimate.reason});
        continue;
      }
      w.field("feasible", true)
          .field("step_s", p.estimate.step.total().si())
          .field("tokens_per_s", p.estimate.tokens_per_s)
          .field("efficiency_pct", p.efficiency_pct)
          .field("comm_share", p.comm_share)
          .field("superlinear", p.superlinear)
          .field("layout", train_layout_text(p.estimate.job));
      if (!p.note.empty())
        w.field("note", p.note);
      w.end_object();
      t.add({fmt::format("{}", p.gpus), train_layout_text(p.estimate.job),
             fmt::format("{:.3g}", p.estimate.step.total().si()),
             grouped(std::llround(p.estimate.tokens_per_s)),
             fmt::format("{:.1f}", p.efficiency_pct), fmt::format("{:.1f}", 100 * p.comm_share),
             bar(p.efficiency_pct) + (p.superlinear ? " *" : "")});
      if (!p.note.empty())
        notes += fmt::format("  {} GPUs{}: {}\n", p.gpus, p.superlinear ? " *" : "", p.note);
    }
    w.end_array().end_object();
    text += fmt::format("\n{} inside a node{}:\n{}", fabric,
                        counts.back() > gpus_per_node
                            ? fmt::format(", {} x {} between nodes", nics_per_node, scale_out)
                            : "",
                        t.str("  ")) +
            notes;
  }
  w.end_array().end_object();
  if (json) {
    emit("{}", w.str());
    return kExitOk;
  }
  emit("scaling of {} training on {}, {} x {} tokens per {}, {}\n", model->id, gpu,
       global_batch > 0 ? global_batch : per_gpu_batch, grouped(seq),
       global_batch > 0 ? "step (strong scaling)" : "GPU per step (weak scaling)",
       software_text(sj.base));
  emit(
      "efficiency = T1 / (TN x N) x 100 on the time to process the same tokens; {}; the bar is "
      "efficiency, # = 2.5 %\n{}",
      best ? "each count's own fastest layout (--best)"
           : "every count keeps the smallest count's per-GPU setup",
      text);
  return kExitOk;
}

}  // namespace gpuplan::cli
