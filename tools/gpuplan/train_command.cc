// gpuplan train MODEL --gpu ID --gpus N --tp T --pp P ... : the step time of one training layout,
// where it goes, throughput, MFU, and the time, GPU-hours, energy and cost of a token budget.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <thread>

#include "command.h"
#include "flags.h"
#include "gpuplan/search.h"
#include "gpuplan/validation.h"
#include "html.h"
#include "report.h"
#include "train_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "train";

struct SearchSettings {
  int64_t tp, pp, dp, cp, ep, etp, micro_batch, virtual_stages, zero;
  bool sp;
  int64_t top;
  int threads;
  bool tp_across_nodes;
  bool json;
  const ReportFlags* out;
};

// "llama-3.1-8b: 8,030,261,248 parameters, global batch 512 x 4,096 tokens".
std::string model_line(const Model& model, const TrainJob& base, Lang lang) {
  return say(lang, "{}: {} parameters, global batch {} x {} tokens",
             "{}: {} parâmetros, lote global {} x {} tokens", model.id,
             number(static_cast<double>(count_parameters(model).total), 0, lang), base.global_batch,
             number(static_cast<double>(base.memory.seq), 0, lang));
}

std::string cluster_line(const Cluster& c, Lang lang) {
  return say(lang, "{} x {} ({} per node on {}{})", "{} x {} ({} por nó em {}{})", c.gpus,
             c.gpu->id, c.gpus_per_node, c.scale_up->id,
             c.scale_out ? say(lang, ", {} x {} per node between nodes",
                               ", {} x {} por nó entre nós", c.nics_per_node, c.scale_out->id)
                         : std::string());
}

int run_search(const CLI::App& app, const Catalog& catalog, const Model& model,
               const Cluster& cluster, const TrainJob& base, Recompute recompute,
               const SearchSettings& s) {
  const Precision precision = base.memory.precision;
  SearchOptions o;
  auto fixed = [&](const char* flag, int64_t v) {
    return app.count(flag) > 0 ? std::optional<int64_t>(v) : std::nullopt;
  };
  o.tp = fixed("--tp", s.tp);
  o.pp = fixed("--pp", s.pp);
  o.dp = fixed("--dp", s.dp);
  o.cp = fixed("--cp", s.cp);
  o.ep = fixed("--ep", s.ep);
  o.etp = fixed("--etp", s.etp);
  o.micro_batch = s.micro_batch > 0 ? std::optional<int64_t>(s.micro_batch) : std::nullopt;
  o.virtual_stages = s.virtual_stages > 0 && app.count("--virtual-stages") > 0
                         ? fixed("--virtual-stages", s.virtual_stages)
                         : std::nullopt;
  o.zero = fixed("--zero", s.zero);
  if (app.count("--recompute") > 0)
    o.recompute = recompute;
  if (app.count("--sequence-parallel") > 0)
    o.sequence_parallel = s.sp;
  o.top = std::max<int64_t>(1, s.top);
  o.threads = std::max(1, s.threads);
  o.tp_across_nodes = s.tp_across_nodes;
  const SearchResult r =
      search_layouts(model, cluster, base, catalog.memory_params(), catalog.train_params(), o);
  const std::optional<PublishedMfu> ceiling =
      catalog_mfu_ceiling(catalog, cluster.gpu->id, precision);
  auto mfu_note = [&](const TrainEstimate& e) -> std::string {
    if (ceiling && e.mfu > ceiling->mfu) {
      return fmt::format("above {}: optimistic",
                         published_mfu_text(*ceiling, cluster.gpu->id, Lang::kEn));
    }
    return "";
  };
  const Lang lang = s.out->lang;
  Table t({tr(lang, "rank", "posição"), "layout", tr(lang, "step (s)", "passo (s)"), "tokens/s",
           "MFU (%)", "GiB/GPU", ""},
          {true, false, true, true, true, true, false});
  for (size_t i = 0; i < r.top.size(); ++i) {
    const TrainEstimate& e = r.top[i];
    const double step = e.step.total().si();
    t.add({fmt::format("{}", i + 1), train_layout_text(e.job, lang),
           lang == Lang::kEn ? fmt::format("{:.4g}", step) : number(step, step < 10 ? 3 : 2, lang),
           number(std::round(e.tokens_per_s), 0, lang), number(e.mfu * 100, 1, lang),
           number(e.memory.total() / GiB(1), 1, lang), mfu_note(e)});
  }
  if (!s.out->html.empty()) {
    HtmlReport h(fmt::format("gpuplan train --search: {}", model.id), s.out->lang);
    h.paragraph(model_line(model, base, s.out->lang));
    h.paragraph(cluster_line(cluster, s.out->lang));
    if (r.top.empty()) {
      h.verdict(tr(s.out->lang, "no layout can run: ", "nenhum layout roda: ") + r.reason);
    } else {
      h.verdict(fmt::format("{}: {}", tr(s.out->lang, "best layout", "melhor layout"),
                            train_layout_text(r.top.front().job, s.out->lang)));
      h.table(t);
      add_train_html(h, r.top.front());
    }
    if (Result<bool> w = write_html_file(s.out->html, h.str()); !w)
      return report_error(kName, w.error());
  }
  if (s.out->csv) {
    Table c({"rank", "layout", "step_s", "tokens_per_s", "mfu", "memory_per_gpu_bytes",
             "fits_memory", "mfu_note"});
    for (size_t i = 0; i < r.top.size(); ++i) {
      const TrainEstimate& e = r.top[i];
      c.add({fmt::format("{}", i + 1), train_layout_text(e.job),
             fmt::format("{:.6g}", e.step.total().si()), fmt::format("{:.6g}", e.tokens_per_s),
             fmt::format("{:.4g}", e.mfu), fmt::format("{:.0f}", e.memory.total().si()),
             e.fits_memory ? "true" : "false", mfu_note(e)});
    }
    emit("{}", c.csv());
    return kExitOk;
  }
  if (s.json) {
    JsonWriter w;
    w.begin_object()
        .field("model", model.id)
        .field("gpu", cluster.gpu->id)
        .field("gpus", cluster.gpus);
    w.key("search")
        .begin_object()
        .field("space", r.space)
        .field("layouts_evaluated", r.evaluated)
        .end_object();
    if (ceiling) {
      w.key("published_mfu_ceiling")
          .begin_object()
          .field("id", ceiling->id)
          .field("mfu", ceiling->mfu)
          .end_object();
    }
    w.key("top").begin_array();
    for (const TrainEstimate& e : r.top) {
      w.begin_object();
      write_train_json(w, e);
      const std::string note = mfu_note(e);
      if (!note.empty())
        w.field("mfu_note", note);
      w.end_object();
    }
    w.end_array();
    if (r.top.empty())
      w.field("reason", r.reason);
    w.end_object();
    emit("{}", w.str());
    return kExitOk;
  }
  emit("{} {}\n", tr(lang, "model  ", "modelo "), model_line(model, base, lang));
  emit("cluster {} x {}\n", cluster.gpus, cluster.gpu->id);
  emit("{}", say(lang, "search  {} layouts in the space, {} evaluated\n",
                 "busca   {} layouts no espaço, {} avaliados\n",
                 number(static_cast<double>(r.space), 0, lang),
                 number(static_cast<double>(r.evaluated), 0, lang)));
  if (r.top.empty()) {
    emit("{}", say(lang, "verdict: no layout can run: {}\n", "veredito: nenhum layout roda: {}\n",
                   r.reason));
    return kExitOk;
  }
  emit("\n{}\n{}:\n", t.str(), tr(lang, "best layout", "melhor layout"));
  print_train_text(r.top.front(), s.out->lang);
  return kExitOk;
}

}  // namespace

int run_train(const std::vector<std::string>& args) {
  CLI::App app("Step time, throughput, MFU and where the time goes for one training layout.",
               args.front());
  std::string model_id;
  MachineSpec cf;
  int64_t tp = 1, pp = 1, dp = 0, cp = 1, ep = 1, etp = 0, micro_batch = 0, virtual_stages = 1,
          zero = 0;
  int64_t global_batch = 0, seq = 0;
  double tokens = 0;
  std::string recompute = "none", precision = "bf16", attention, price_text, data;
  std::string framework = std::string(kDefaultFramework), optimizer = "adam";
  bool offload = false;
  bool sp = false, json = false, search = false, tp_across_nodes = false;
  int64_t top = 10;
  int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  app.add_option("model", model_id, "catalog model id or path to a config.json")->required();
  app.add_option("--gpu", cf.gpu, "catalog GPU id");
  app.add_option("--offer", cf.offer, "catalog offer: GPU, node size, fabrics and price");
  app.add_option("--gpus", cf.gpus, "total GPUs")->required()->check(rule(fields::kGpus));
  app.add_option("--gpus-per-node", cf.gpus_per_node,
                 "GPUs per node (default: the offer's, else 8, or the GPU's NVLink domain where it "
                 "spans more: 72 on GB200)")
      ->check(rule(fields::kGpusPerNode));
  app.add_option("--scale-up", cf.scale_up, "fabric inside a node (default: the GPU's)");
  app.add_option("--scale-out", cf.scale_out, "fabric between nodes (per NIC)");
  app.add_option("--nics-per-node", cf.nics_per_node, "NICs per node (default one per GPU)")
      ->check(rule(fields::kNicsPerNode));
  app.add_option("--tp", tp, "tensor-parallel size (default 1)")->check(rule(fields::kParallel));
  app.add_option("--pp", pp, "pipeline stages (default 1)")->check(rule(fields::kParallel));
  app.add_option("--dp", dp, "data-parallel size (default: GPUs / (tp pp cp))")
      ->check(rule(fields::kParallel));
  app.add_option("--cp", cp, "context-parallel size (default 1)")->check(rule(fields::kParallel));
  app.add_option("--ep", ep,
                 "expert-parallel size for MoE models: ep x etp divides tp x cp x dp (default 1)")
      ->check(rule(fields::kParallel));
  app.add_option("--etp", etp, "expert tensor-parallel size (default: as --tp)")
      ->check(rule(fields::kParallel));
  app.add_option("--micro-batch", micro_batch,
                 "sequences per micro-batch (default 0: the fastest that fits)")
      ->check(rule(fields::kMicroBatch));
  app.add_option("--global-batch", global_batch, "sequences per optimizer step")
      ->required()
      ->check(rule(fields::kGlobalBatch));
  app.add_option("--seq", seq, "tokens per sequence")->required()->check(rule(fields::kSeq));
  app.add_option("--recompute", recompute, names_help(recompute_names(), "default none"));
  app.add_option("--zero", zero, "ZeRO stage 0..3 (default 0)")->check(rule(fields::kZeroStage));
  app.add_flag("--sequence-parallel", sp, "sequence parallelism with TP");
  app.add_option("--virtual-stages", virtual_stages,
                 "interleaved chunks per stage (default 1; 0: the fastest)")
      ->check(rule(fields::kVirtualStages));
  app.add_option("--precision", precision, names_help(training_precision_names(), "default bf16"));
  app.add_option("--attention", attention,
                 names_help(attention_kernel_names(), "default: the framework's"));
  app.add_option("--framework", framework,
                 "training software, ID or ID@YEAR (default megatron-lm as of today; gpuplan "
                 "catalog list frameworks)");
  app.add_option("--optimizer", optimizer, names_help(optimizer_names(), "default adam"));
  app.add_flag("--offload-optimizer", offload,
               "optimizer states in host memory, updated on the CPU (ZeRO-Offload)");
  app.add_option("--tokens", tokens, "token budget for time-to-train, e.g. 1e12")
      ->check(rule(fields::kTokens));
  app.add_option("--price", price_text,
                 "price per GPU-hour, e.g. '2.5 USD/h' (default: the offer's)");
  app.add_flag("--search", search,
               "search every layout; flags you give (--tp, --zero, ...) stay fixed");
  app.add_option("--top", top, "with --search: how many layouts to list (default 10)")
      ->check(rule(fields::kTop));
  app.add_option("--threads", threads, "with --search: worker threads (default: all cores)")
      ->check(rule(fields::kThreads));
  app.add_flag("--tp-across-nodes", tp_across_nodes,
               "with --search: allow tensor parallelism beyond one NVLink domain");
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
  if (out.csv && !search) {
    return report_error(kName,
                        Error{"--csv", "is the ranking of --search", "add --search, or drop --csv"},
                        kExitUsage);
  }
  // The search's own settings would be ignored by one layout: refused instead.
  for (const char* flag : {"--top", "--threads", "--tp-across-nodes"}) {
    if (!search && app.count(flag) > 0) {
      return report_error(
          kName, Error{flag, "goes with --search", "add --search, or drop the flag"}, kExitUsage);
    }
  }
  // Ranges are checked by the flags' field rules (fields.h) as they are parsed.
  std::optional<bool> flash_attention;
  if (!attention.empty()) {
    Result<bool> flash = parse_flash_attention(attention);
    if (!flash)
      return report_error(kName, Error{"--attention", flash.error().what, flash.error().hint},
                          kExitUsage);
    flash_attention = *flash;
  }
  Result<Recompute> rc = parse_recompute(recompute);
  if (!rc)
    return report_error(kName, Error{"--recompute", rc.error().what, rc.error().hint}, kExitUsage);
  Result<Precision> pr = parse_precision(precision);
  if (!pr)
    return report_error(kName, Error{"--precision", pr.error().what, pr.error().hint}, kExitUsage);
  Result<Optimizer> opt = parse_optimizer(optimizer);
  if (!opt)
    return report_error(kName, Error{"--optimizer", opt.error().what, opt.error().hint},
                        kExitUsage);

  Result<Catalog> catalog = load_catalog_with_profile(data, profile, json);
  if (!catalog)
    return report_error(kName, catalog.error());
  Result<Model> model = catalog->model(model_id);
  if (!model)
    return report_error(kName, model.error());
  if (Result<int64_t> c = check_context(*model, seq, "--seq"); !c)
    return report_error(kName, c.error(), kExitUsage);
  Result<Machines> machines = resolve_machines(*catalog, cf);
  if (!machines)
    return report_error(kName, machines.error());
  const Cluster* cluster = &machines->cluster;
  std::optional<Money> price = machines->price_per_gpu_hour;
  if (!price_text.empty()) {
    Result<Money> p = parse_price(price_text);
    if (!p)
      return report_error(kName, p.error(), kExitUsage);
    price = *p;
  }
  Result<Software> software = catalog->software(framework);
  if (!software)
    return report_error(kName, Error{"--framework", software.error().what, software.error().hint});
  // What the job is, whatever the layout: the software's defaults, then the explicit flags.
  TrainJob base;
  base.memory.task = Task::kTrain;
  base.memory.precision = *pr;
  base.memory.optimizer = *opt;
  base.memory.seq = seq;
  base.global_batch = global_batch;
  base.tokens = tokens;
  base.price_per_gpu_hour = price;
  apply_software(base, *software);
  if (flash_attention) {
    base.memory.flash_attention = *flash_attention;
  }
  base.memory.offload_optimizer = offload;
  if (search) {
    return run_search(app, *catalog, *model, *cluster, base, *rc,
                      SearchSettings{tp, pp, dp, cp, ep, etp, micro_batch, virtual_stages, zero, sp,
                                     top, threads, tp_across_nodes, json, &out});
  }
  TrainJob job = base;
  job.memory.recompute = *rc;
  job.memory.micro_batch = micro_batch;
  job.memory.layout = Parallelism{.tp = tp,
                                  .pp = pp,
                                  .dp = dp,
                                  .virtual_stages = virtual_stages,
                                  .sequence_parallel = sp,
                                  .zero = zero,
                                  .ep = ep,
                                  .cp = cp,
                                  .etp = etp};
  Result<TrainEstimate> answer =
      train_layout(*model, *cluster, job, catalog->memory_params(), catalog->train_params());
  if (!answer) {
    return report_error(kName, answer.error());
  }
  const TrainEstimate& e = *answer;
  if (!out.html.empty()) {
    HtmlReport h(fmt::format("gpuplan train: {}", model->id), out.lang);
    h.paragraph(model_line(*model, base, out.lang));
    h.paragraph(cluster_line(*cluster, out.lang));
    add_train_html(h, e);
    if (Result<bool> w = write_html_file(out.html, h.str()); !w)
      return report_error(kName, w.error());
  }
  if (json) {
    JsonWriter w;
    w.begin_object()
        .field("model", model->id)
        .field("gpu", cluster->gpu->id)
        .field("gpus", cluster->gpus)
        .field("gpus_per_node", cluster->gpus_per_node)
        .field("scale_up", cluster->scale_up->id)
        .field("scale_out", cluster->scale_out ? cluster->scale_out->id : std::string());
    write_train_json(w, e);
    w.end_object();
    emit("{}", w.str());
    return kExitOk;
  }
  emit("{} {}\n", tr(out.lang, "model  ", "modelo "), model_line(*model, base, out.lang));
  emit("cluster {}\n", cluster_line(*cluster, out.lang));
  print_train_text(e, out.lang);
  return kExitOk;
}

}  // namespace gpuplan::cli
