// gpuplan scale MODEL --gpu ID --fabric nvlink4,pcie5 --gpus 1,2,4,8 : the scaling curve, with
// the source document's efficiency = T1 / (TN x N) x 100 on the time to process a fixed token
// budget, side by side per fabric, and the share of the step lost to communication.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

#include "command.h"
#include "flags.h"
#include "gpuplan/scaling.h"
#include "html.h"
#include "report.h"
#include "train_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "scale";

std::string bar(double pct) {
  const int n = static_cast<int>(std::lround(std::clamp(pct, 0.0, 100.0) / 2.5));
  return std::string(static_cast<size_t>(n), '#');
}

// What scale found: one curve per fabric inside the node.
struct FabricCurve {
  std::string fabric;
  std::string between;  // ", 8 x ib-ndr-400g between nodes", when the counts span nodes
  ScaleCurve curve;
};

struct ScaleReport {
  std::string model;
  std::string gpu;
  int64_t seq = 0;
  int64_t batch = 0;  // sequences per step (strong) or per GPU per step (weak)
  bool strong = false;
  bool best = false;
  TrainJob base;
  std::vector<FabricCurve> fabrics;
};

void print_json(const ScaleReport& r) {
  JsonWriter w;
  w.begin_object()
      .field("model", r.model)
      .field("gpu", r.gpu)
      .field("seq_tokens", r.seq)
      .field("framework", r.base.software.framework->id)
      .field("framework_year", r.base.software.year)
      .field("layouts", r.best ? "best" : "same setup");
  w.key("fabrics").begin_array();
  for (const FabricCurve& f : r.fabrics) {
    w.begin_object().field("fabric", f.fabric).key("points").begin_array();
    for (const ScalePoint& p : f.curve.points) {
      w.begin_object().field("gpus", p.gpus);
      if (!p.estimate.feasible) {
        w.field("feasible", false).field("reason", p.estimate.reason).end_object();
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
    }
    w.end_array().end_object();
  }
  w.end_array();
  if (!r.fabrics.empty() && !r.fabrics.front().curve.caveats.empty())
    write_texts(w, "caveats", r.fabrics.front().curve.caveats);
  w.end_object();
  emit("{}", w.str());
}

// The curve of one fabric as a table, with the efficiency bar in text (`bars`).
Table curve_table(const FabricCurve& f, Lang lang, bool bars) {
  Table t({"GPUs", tr(lang, "layout", "layout"), tr(lang, "step (s)", "passo (s)"),
           tr(lang, "tokens/s", "tokens/s"), tr(lang, "efficiency (%)", "eficiência (%)"),
           tr(lang, "comm share (%)", "comunicação (%)"), ""},
          {true, false, true, true, true, true, false});
  for (const ScalePoint& p : f.curve.points) {
    if (!p.estimate.feasible) {
      t.add({fmt::format("{}", p.gpus),
             (p.estimate.why == Why::kMemory ? tr(lang, "does not fit: ", "não cabe: ")
                                             : tr(lang, "cannot run: ", "não roda: ")) +
                 p.estimate.reason});
      continue;
    }
    const double step = p.estimate.step.total().si();
    t.add({fmt::format("{}", p.gpus), train_layout_text(p.estimate.job, lang),
           lang == Lang::kEn ? fmt::format("{:.3g}", step) : number(step, step < 10 ? 2 : 1, lang),
           number(std::round(p.estimate.tokens_per_s), 0, lang), number(p.efficiency_pct, 1, lang),
           number(100 * p.comm_share, 1, lang),
           bars ? bar(p.efficiency_pct) + (p.superlinear ? " *" : "") : p.note});
  }
  return t;
}

// The architecture whose own attention kernels the curves' estimates ran, or "": every point is
// on the same GPU.
std::string native_kernels(const ScaleReport& r) {
  for (const FabricCurve& f : r.fabrics) {
    for (const ScalePoint& p : f.curve.points) {
      if (!p.estimate.native_attention.empty()) {
        return p.estimate.native_attention;
      }
    }
  }
  return "";
}

std::string headline(const ScaleReport& r, Lang lang) {
  if (lang == Lang::kPt) {
    return fmt::format(
        "escalonamento do treino de {} em {}, {} x {} tokens por {}, {}", r.model, r.gpu, r.batch,
        number(static_cast<double>(r.seq), 0, lang),
        r.strong ? "passo (escalonamento forte)" : "GPU por passo (escalonamento fraco)",
        software_text(r.base, native_kernels(r), lang));
  }
  return fmt::format("scaling of {} training on {}, {} x {} tokens per {}, {}", r.model, r.gpu,
                     r.batch, grouped(r.seq),
                     r.strong ? "step (strong scaling)" : "GPU per step (weak scaling)",
                     software_text(r.base, native_kernels(r), lang));
}

std::string method(const ScaleReport& r, Lang lang) {
  if (lang == Lang::kPt) {
    return fmt::format(
        "eficiência = T1 / (TN x N) x 100 sobre o tempo para processar os mesmos tokens; {}",
        r.best ? "cada contagem com o seu layout mais rápido (--best)"
               : "toda contagem mantém a configuração por GPU da menor contagem");
  }
  return fmt::format("efficiency = T1 / (TN x N) x 100 on the time to process the same tokens; {}",
                     r.best ? "each count's own fastest layout (--best)"
                            : "every count keeps the smallest count's per-GPU setup");
}

void print_text(const ScaleReport& r, Lang lang) {
  emit("{}\n{}; {}\n", headline(r, lang), method(r, lang),
       tr(lang, "the bar is efficiency, # = 2.5 %", "a barra é a eficiência, # = 2,5 %"));
  for (const FabricCurve& f : r.fabrics) {
    emit("\n{} {}{}:\n{}", f.fabric, tr(lang, "inside a node", "dentro do nó"), f.between,
         curve_table(f, lang, true).str("  "));
    for (const ScalePoint& p : f.curve.points) {
      if (p.estimate.feasible && !p.note.empty())
        emit("  {} GPUs{}: {}\n", p.gpus, p.superlinear ? " *" : "", p.note);
    }
  }
  if (!r.fabrics.empty()) {
    for (const Text& c : r.fabrics.front().curve.caveats)
      emit("\n{}{}\n", tr(lang, "caveat: ", "ressalva: "), c.in(lang));
  }
}

// One row per fabric and count, the numbers as programs read them.
void print_csv(const ScaleReport& r) {
  Table t({"fabric", "gpus", "feasible", "layout", "step_s", "tokens_per_s", "efficiency_pct",
           "comm_share_pct", "superlinear", "note"});
  for (const FabricCurve& f : r.fabrics) {
    for (const ScalePoint& p : f.curve.points) {
      if (!p.estimate.feasible) {
        t.add({f.fabric, fmt::format("{}", p.gpus), "false", "", "", "", "", "", "",
               p.estimate.reason});
        continue;
      }
      t.add({f.fabric, fmt::format("{}", p.gpus), "true", train_layout_text(p.estimate.job),
             fmt::format("{:.6g}", p.estimate.step.total().si()),
             fmt::format("{:.6g}", p.estimate.tokens_per_s),
             fmt::format("{:.4g}", p.efficiency_pct), fmt::format("{:.4g}", 100 * p.comm_share),
             p.superlinear ? "true" : "false", p.note});
    }
  }
  emit("{}", t.csv());
}

std::string html_report(const ScaleReport& r, Lang lang) {
  HtmlReport h(tr(lang, "gpuplan scale: ", "gpuplan scale: ") + r.model + " / " + r.gpu, lang);
  h.verdict(headline(r, lang));
  h.paragraph(method(r, lang));
  if (!r.fabrics.empty()) {
    for (const Text& c : r.fabrics.front().curve.caveats)
      h.paragraph(tr(lang, "caveat: ", "ressalva: ") + c.in(lang));
  }
  std::vector<Series> series;
  for (const FabricCurve& f : r.fabrics) {
    Series s{f.fabric, {}};
    for (const ScalePoint& p : f.curve.points) {
      if (p.estimate.feasible)
        s.points.emplace_back(static_cast<double>(p.gpus), p.efficiency_pct);
    }
    series.push_back(std::move(s));
  }
  h.figure(
      line_chart_svg(series, Axis{"GPUs", true},
                     Axis{tr(lang, "scaling efficiency (%)", "eficiência de escala (%)"), false},
                     {Reference{tr(lang, "ideal: 100 %", "ideal: 100 %"), 100, 100},
                      Reference{tr(lang, "the source document's claim: 90-95 %",
                                   "o que o documento de origem promete: 90-95 %"),
                                90, 95}},
                     lang),
      tr(lang,
         "Efficiency against the smallest count that runs, per fabric inside the node. "
         "Above 100 % the larger count gained something besides GPUs (see the notes).",
         "Eficiência em relação à menor contagem que roda, por interconexão dentro do nó. "
         "Acima de 100 % a contagem maior ganhou algo além de GPUs (veja as notas)."));
  for (const FabricCurve& f : r.fabrics) {
    h.heading(f.fabric + " " + tr(lang, "inside a node", "dentro do nó") + f.between);
    h.table(curve_table(f, lang, false));
  }
  return h.str();
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
  app.add_option("--precision", precision, names_help(training_precision_names(), "default bf16"));
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
  ReportFlags out;
  add_report_flags(app, out, true);
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  if (std::optional<int> done = finish_report_flags(out, json, kName)) {
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

  ScaleReport report;
  report.model = model->id;
  report.gpu = gpu;
  report.seq = seq;
  report.strong = global_batch > 0;
  report.batch = report.strong ? global_batch : per_gpu_batch;
  report.best = best;
  report.base = sj.base;
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
    report.fabrics.push_back(FabricCurve{
        fabric,
        counts.back() > gpus_per_node ? fmt::format(", {} x {} {}", nics_per_node, scale_out,
                                                    tr(out.lang, "between nodes", "entre nós"))
                                      : "",
        scale_training(*model, *node, sj, catalog->memory_params(), catalog->train_params())});
  }
  if (!out.html.empty()) {
    if (Result<bool> w = write_html_file(out.html, html_report(report, out.lang)); !w)
      return report_error(kName, w.error());
  }
  if (json) {
    print_json(report);
  } else if (out.csv) {
    print_csv(report);
  } else {
    print_text(report, out.lang);
  }
  return kExitOk;
}

}  // namespace gpuplan::cli
