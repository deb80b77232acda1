// gpuplan fit MODEL [--gpu ID | --offer ID] --task ... : memory per GPU, itemised, the verdict,
// and the smallest number of each catalog GPU (and each offer) that holds the job.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cmath>
#include <span>

#include "command.h"
#include "flags.h"
#include "gpuplan/fit.h"
#include "gpuplan/json_writer.h"
#include "html.h"
#include "report.h"
#include "train_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "fit";

struct FitFlags {
  std::string model;
  std::string gpu;
  std::string offer;
  std::string task;
  std::string precision;  // empty: the task's default
  std::string kv_precision;
  std::string optimizer = "adam";
  std::string recompute = "none";
  std::string lora_targets = "all-linear";
  std::string attention;  // empty: as the framework does
  std::string framework = std::string(kDefaultFramework);
  bool offload_optimizer = false;
  int64_t seq = 0;
  int64_t micro_batch = 1;
  int64_t batch = 1;
  int64_t context = 0;
  int64_t zero = 0;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dp = 1;
  int64_t virtual_stages = 1;
  int64_t lora_rank = 16;
  int64_t max_gpus = 16384;
  bool sequence_parallel = false;
  bool json = false;
  std::string data;
};

// Turns the flags into a job; enum spellings get "did you mean" errors naming the flag.
Result<MemoryJob> make_job(const FitFlags& f, const Model& model, const Catalog& catalog) {
  MemoryJob job;
  auto flagged = [](const char* flag, const Error& e) {
    return std::unexpected(Error{flag, e.what, e.hint});
  };
  Result<Task> task = parse_task(f.task);
  if (!task)
    return flagged("--task", task.error());
  std::optional<Precision> precision;  // not given: the task's default (choose_weights)
  if (!f.precision.empty()) {
    Result<Precision> p = parse_precision(f.precision);
    if (!p)
      return flagged("--precision", p.error());
    precision = *p;
  }
  std::optional<Precision> kv;
  if (!f.kv_precision.empty()) {
    Result<Precision> k = parse_precision(f.kv_precision);
    if (!k)
      return flagged("--kv-precision", k.error());
    kv = *k;
  }
  Result<Optimizer> optimizer = parse_optimizer(f.optimizer);
  if (!optimizer)
    return flagged("--optimizer", optimizer.error());
  Result<Recompute> recompute = parse_recompute(f.recompute);
  if (!recompute)
    return flagged("--recompute", recompute.error());
  job.task = *task;
  job.optimizer = *optimizer;
  job.recompute = *recompute;
  // fit has no engine: the KV cache the catalog's default engine keeps.
  const WeightChoice weights =
      choose_weights(model, *task, precision, kv, catalog.default_engine().kv_cache);
  job.precision = weights.precision;
  job.kv_precision = weights.kv_precision;
  job.as_released = weights.as_released;
  // The framework decides the state bytes and attention kernels; --attention overrides.
  Result<Software> software = catalog.software(f.framework);
  if (!software)
    return flagged("--framework", software.error());
  apply_software(job, *software);
  if (!f.attention.empty()) {
    Result<bool> flash = parse_flash_attention(f.attention);
    if (!flash)
      return flagged("--attention", flash.error());
    job.flash_attention = *flash;
  }
  job.offload_optimizer = f.offload_optimizer;
  Result<LoraTargets> targets = parse_lora_targets(f.lora_targets);
  if (!targets)
    return flagged("--lora-targets", targets.error());
  job.lora_targets = *targets;
  // Defaults that depend on the model: the longest context it was built for, and for
  // training 4096 tokens or the model's limit if that is shorter.
  const int64_t limit = model.max_positions;
  job.seq = f.seq > 0 ? f.seq : (limit > 0 ? std::min<int64_t>(4096, limit) : 4096);
  job.context = f.context > 0 ? f.context : (limit > 0 ? limit : 4096);
  job.micro_batch = f.micro_batch;
  job.batch = f.batch;
  job.lora_rank = f.lora_rank;
  job.layout = Parallelism{.tp = f.tp,
                           .pp = f.pp,
                           .dp = f.dp,
                           .virtual_stages = f.virtual_stages,
                           .sequence_parallel = f.sequence_parallel,
                           .zero = f.zero};
  if (is_training(job.task)) {
    GPUPLAN_RETURN_IF_ERROR(check_context(model, job.seq, "--seq"));
  }
  if (job.task == Task::kInfer) {
    GPUPLAN_RETURN_IF_ERROR(check_context(model, job.context, "--context"));
  }
  return job;
}

std::string layout_text(const MemoryJob& job, Lang lang = Lang::kEn) {
  const Parallelism& l = job.layout;
  std::string s = fmt::format("tp {} pp {}", l.tp, l.pp);
  if (is_training(job.task)) {
    s += fmt::format(" dp {}", l.dp);
    if (l.zero > 0)
      s += fmt::format(", ZeRO {}", l.zero);
    if (job.recompute != Recompute::kNone) {
      s += lang == Lang::kPt ? (job.recompute == Recompute::kFull ? ", recomputação completa"
                                                                  : ", recomputação seletiva")
                             : fmt::format(", {} recompute", recompute_name(job.recompute));
    }
    if (l.sequence_parallel && l.tp > 1)
      s += ", SP";
    if (l.virtual_stages > 1)
      s += say(lang, ", {} virtual stages", ", {} estágios virtuais", l.virtual_stages);
  }
  return s;
}

std::string job_text(const Model& model, const MemoryJob& job, Lang lang = Lang::kEn) {
  const std::string context = number(static_cast<double>(job.context), 0, lang);
  if (job.task == Task::kInfer) {
    return say(lang, "inference, {} weights, {} KV cache, batch {} x {} tokens of context",
               "inferência, pesos {}, cache KV {}, lote {} x {} tokens de contexto",
               weights_name(model, job.precision, job.as_released).in(lang),
               precision_name(job.kv_precision), job.batch, context);
  }
  const std::string what =
      job.task == Task::kLora    ? say(lang, "LoRA rank {}", "LoRA posto {}", job.lora_rank)
      : job.task == Task::kQlora ? say(lang, "QLoRA rank {}", "QLoRA posto {}", job.lora_rank)
      : job.task == Task::kTrain ? std::string(tr(lang, "pre-training", "pré-treino"))
                                 : std::string(tr(lang, "full fine-tune", "ajuste fino completo"));
  return say(lang, "{}, {} mixed precision, {}, micro-batch {} x {} tokens",
             "{}, precisão mista {}, {}, micro-lote {} x {} tokens", what,
             precision_name(job.precision), optimizer_name(job.optimizer), job.micro_batch,
             number(static_cast<double>(job.seq), 0, lang));
}

// Bytes are whole numbers in JSON.
int64_t whole(Bytes b) {
  return static_cast<int64_t>(std::llround(b.si()));
}

void write_memory_json(JsonWriter& w, const MemoryBreakdown& m) {
  w.begin_object()
      .field("weights_bytes", whole(m.weights))
      .field("gradients_bytes", whole(m.gradients))
      .field("optimizer_bytes", whole(m.optimizer))
      .field("activations_bytes", whole(m.activations))
      .field("kv_cache_bytes", whole(m.kv_cache))
      .field("overhead_bytes", whole(m.overhead))
      .field("total_bytes", whole(m.total()))
      .field("stage", m.stage)
      .field("stage_layers", m.stage_layers)
      .field("parameters", m.parameters)
      .field("trainable_parameters", m.trainable)
      .end_object();
}

void write_layout_json(JsonWriter& w, const MemoryJob& job) {
  const Parallelism& l = job.layout;
  w.begin_object()
      .field("tp", l.tp)
      .field("pp", l.pp)
      .field("dp", l.dp)
      .field("zero", l.zero)
      .field("recompute", recompute_name(job.recompute))
      .field("sequence_parallel", l.sequence_parallel)
      .field("virtual_stages", l.virtual_stages)
      .end_object();
}

void print_json(const Model& model, const FitJob& fj, const FitAnswer& a) {
  const MemoryJob& job = fj.memory;
  const std::optional<FitReport>& report = a.on_gpu;
  const std::optional<FitReport>& fp8 = a.fp8;
  const std::optional<SmallestFit>& offer_fit = a.on_offer;
  const ParameterCount pc = count_parameters(model);
  JsonWriter w;
  w.begin_object();
  w.key("model")
      .begin_object()
      .field("id", model.id)
      .field("params", pc.total)
      .field("active_params", pc.active_per_token);
  if (model.has_window()) {
    // The layers that cache only their window: the KV figures below count them so.
    w.field("sliding_window_tokens", model.window.tokens)
        .field("sliding_window_layers", model.window.layers);
  }
  w.end_object();
  w.key("job")
      .begin_object()
      .field("task", task_name(job.task))
      .field("precision", precision_name(job.precision))
      .field("weights", weights_name(model, job.precision, job.as_released).en)
      .field("kv_precision", precision_name(job.kv_precision))
      .field("optimizer", optimizer_name(job.optimizer))
      .field("seq_tokens", job.seq)
      .field("micro_batch", job.micro_batch)
      .field("batch", job.batch)
      .field("context_tokens", job.context)
      .field("lora_rank", job.lora_rank);
  w.key("layout");
  write_layout_json(w, job);
  w.end_object();
  if (fj.gpu != nullptr && report) {
    w.key("gpu")
        .begin_object()
        .field("id", fj.gpu->id)
        .field("memory_bytes", whole(fj.gpu->memory))
        .field("usable_bytes", whole(fj.gpu->memory_usable))
        .end_object();
    w.key("memory");
    write_memory_json(w, report->memory);
    w.field("fits", report->verdict.fits)
        .field("margin_bytes", whole(report->verdict.margin))
        .field("reason", report->verdict.reason.en);
    if (report->kv) {
      w.key("kv_cache")
          .begin_object()
          .field("bytes_per_token", report->kv->bytes_per_token)
          .field("budget_bytes", whole(report->kv->budget))
          .field("tokens", report->kv->tokens)
          .field("max_context_tokens", report->kv->max_context);
      if (fp8 && fp8->kv) {
        w.field("fp8_weights_bytes", whole(fp8->memory.weights))
            .field("fp8_budget_bytes", whole(fp8->kv->budget))
            .field("fp8_tokens", fp8->kv->tokens);
      }
      w.end_object();
    }
  }
  if (fj.offer != nullptr && offer_fit) {
    w.key("offer")
        .begin_object()
        .field("id", fj.offer->id)
        .field("gpus", fj.offer->gpus_per_node * fj.offer->max_nodes)
        .field("fits", offer_fit->found);
    if (offer_fit->found) {
      w.field("gpus_needed", offer_fit->gpus);
      w.key("layout");
      write_layout_json(w, offer_fit->job);
      w.key("memory");
      write_memory_json(w, offer_fit->report.memory);
    } else {
      w.field("reason", offer_fit->reason.en);
    }
    w.end_object();
  }
  w.key("smallest").begin_array();
  for (const auto& [g, s] : a.smallest) {
    w.begin_object().field("gpu", g->id).field("fits", s.found);
    if (s.found) {
      w.field("gpus", s.gpus)
          .field("per_gpu_bytes", whole(s.report.verdict.required))
          .field("usable_bytes", whole(g->memory_usable));
      w.key("layout");
      write_layout_json(w, s.job);
    } else {
      w.field("reason", s.reason.en);
    }
    w.end_object();
  }
  w.end_array();
  w.key("offers").begin_array();
  for (const OfferFit& o : a.offers) {
    w.begin_object().field("offer", o.offer->id).field("fits", o.holds);
    if (o.holds) {
      w.field("nodes", o.nodes);
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
  emit("{}", w.str());
}

// The format of `bytes`-per-element state: "fp32" for 4, the job's 16-bit format for 2.
std::string state_format(double bytes, const MemoryJob& job) {
  if (bytes >= 4 || job.precision == Precision::kFp32 || job.precision == Precision::kTf32) {
    return "fp32";
  }
  return job.precision == Precision::kFp16 ? "fp16" : "bf16";
}

// Training state in words: "bf16 weights, fp32 gradients, fp32 master copy and moments".
std::string state_text(const MemoryJob& job, Lang lang) {
  if (trains_adapters(job.task)) {
    return tr(lang, "fp32 adapters, their gradients and moments",
              "adaptadores fp32, seus gradientes e momentos");
  }
  return say(lang, "{} weights, {} gradients, {}moments", "pesos {}, gradientes {}, {}momentos",
             state_format(job.weight_bytes, job), state_format(gradient_buffer_bytes(job), job),
             job.master_bytes > 0 ? tr(lang, "fp32 master copy and ", "cópia mestra fp32 e ") : "");
}

void print_memory_table(const Model& model, const MemoryBreakdown& m, const MemoryJob& job,
                        Lang lang) {
  Table t({"item", "GiB", "GB"}, {false, true, true});
  auto row = [&](const std::string& name, Bytes b) {
    t.add({name, number(b / GiB(1), 2, lang), number(b / GB(1), 2, lang)});
  };
  const std::string precision = weights_name(model, job.precision, job.as_released).in(lang);
  const bool full = job.task == Task::kTrain || job.task == Task::kFinetune;
  row(job.task == Task::kQlora
          ? tr(lang, "weights (4-bit NF4 base + adapters)",
               "pesos (base NF4 de 4 bits + adaptadores)")
          : say(lang, "weights ({})", "pesos ({})",
                full && job.precision != Precision::kFp8 ? state_format(job.weight_bytes, job)
                                                         : precision),
      m.weights);
  if (is_training(job.task)) {
    const bool adapters = trains_adapters(job.task);
    row(say(lang, "gradients ({})", "gradientes ({})",
            adapters ? "fp32" : state_format(gradient_buffer_bytes(job), job)),
        m.gradients);
    row(say(lang, "optimizer states ({}{})", "estados do otimizador ({}{})",
            optimizer_name(job.optimizer),
            job.offload_optimizer ? tr(lang, ", in host memory", ", na memória do host") : ""),
        job.offload_optimizer ? m.host : m.optimizer);
    row(tr(lang, "activations", "ativações"), m.activations);
  } else {
    row(say(lang, "KV cache ({})", "cache KV ({})", precision_name(job.kv_precision)), m.kv_cache);
    row(tr(lang, "activations (forward working set)", "ativações (memória de trabalho do forward)"),
        m.activations);
  }
  row(tr(lang, "runtime overhead (CUDA context, workspaces)",
         "reserva do runtime (contexto CUDA, workspaces)"),
      m.overhead);
  row("total", m.total());
  emit("{}", t.str("  "));
}

Table smallest_table(const FitAnswer& a, Lang lang) {
  Table table(
      {"gpu", "GPUs", "layout", tr(lang, "per GPU", "por GPU"), tr(lang, "usable", "utilizável")},
      {false, true, false, true, true});
  for (const auto& [g, s] : a.smallest) {
    if (s.found) {
      table.add({g->id, fmt::format("{}", s.gpus), layout_text(s.job, lang),
                 gib_text(s.report.verdict.required, lang), gib_text(g->memory_usable, lang)});
    } else {
      table.add({g->id, "-",
                 tr(lang, "no layout fits (see --json for the reason)",
                    "nenhum layout cabe (o motivo está em --json)"),
                 "-", gib_text(g->memory_usable, lang)});
    }
  }
  return table;
}

Table offers_table(const FitAnswer& a, Lang lang) {
  Table offers({tr(lang, "offer", "oferta"), "gpu", tr(lang, "per node", "por nó"),
                tr(lang, "nodes needed", "nós necessários"), tr(lang, "price", "preço")},
               {false, false, true, true, true});
  for (const OfferFit& f : a.offers) {
    const Offer& o = *f.offer;
    const std::string nodes =
        f.holds ? fmt::format("{}", f.nodes)
        : f.gpus_needed > 0
            ? fmt::format("{} {} GPUs", tr(lang, "needs", "precisa de"), f.gpus_needed)
            : std::string(tr(lang, "does not fit", "não cabe"));
    std::string price = tr(lang, "not public", "não público");
    if (o.price_per_node_hour) {
      price = lang == Lang::kEn ? fmt::format("{:.2f} {}/h", o.price_per_node_hour->amount,
                                              o.price_per_node_hour->currency)
                                : money_text(*o.price_per_node_hour, lang) + "/h";
    }
    offers.add({o.id, o.gpu, fmt::format("{}", o.gpus_per_node), nodes, price});
  }
  return offers;
}

void print_text(const Model& model, const FitJob& fj, const FitAnswer& a, Lang lang) {
  const MemoryJob& job = fj.memory;
  const std::optional<FitReport>& report = a.on_gpu;
  const std::optional<FitReport>& fp8 = a.fp8;
  const std::optional<SmallestFit>& offer_fit = a.on_offer;
  const ParameterCount pc = count_parameters(model);
  auto count = [&](double n) { return number(n, 0, lang); };
  auto gibs = [&](Bytes b) { return gib_text(b, lang); };
  emit("{}", say(lang, "model   {} ({}): {} parameters", "modelo  {} ({}): {} parâmetros", model.id,
                 model.model_type, count(static_cast<double>(pc.total))));
  if (model.is_moe()) {
    emit("{}", say(lang, ", {} active per token", ", {} ativos por token",
                   count(static_cast<double>(pc.active_per_token))));
  }
  emit("{}", say(lang, ", {} layers\n", ", {} camadas\n", model.layers));
  emit("{} {}\n", tr(lang, "job    ", "tarefa "), job_text(model, job, lang));

  if (fj.gpu != nullptr && report) {
    const Gpu& g = *fj.gpu;
    const MemoryBreakdown& m = report->memory;
    emit("{}", say(lang, "gpu     {}: {} as marketed, {} usable (what the driver reports)\n",
                   "gpu     {}: {} anunciados, {} utilizáveis (o que o driver informa)\n", g.name,
                   number(g.memory / GB(1), 1, lang) + " GB", gibs(g.memory_usable)));
    emit("layout  {}\n\n", layout_text(job, lang));
    emit("{}", say(lang, "memory per GPU ({} of {} stages, {} layers):\n",
                   "memória por GPU (estágio {} de {}, {} camadas):\n", m.stage + 1, job.layout.pp,
                   m.stage_layers));
    print_memory_table(model, m, job, lang);
    emit("\n{}: {}\n", tr(lang, "verdict", "veredito"), report->verdict.reason.in(lang));
    if (job.task == Task::kTrain || job.task == Task::kFinetune) {
      const double per_param = (m.weights + m.gradients + m.optimizer) / Bytes(m.parameters);
      if (job.layout.zero == 0 && !job.offload_optimizer) {
        emit("{}", say(lang,
                       "why:     mixed-precision {} keeps {:.0f} bytes per trained parameter "
                       "({}): {} parameters on this GPU x {:.0f} B = {} before activations\n",
                       "por quê: {} em precisão mista guarda {:.0f} bytes por parâmetro treinado "
                       "({}): {} parâmetros nesta GPU x {:.0f} B = {} antes das ativações\n",
                       optimizer_name(job.optimizer), per_param, state_text(job, lang),
                       lang == Lang::kPt ? number(m.parameters / 1e9, 2, lang) + " bi"
                                         : billions(m.parameters),
                       per_param, gibs(m.weights + m.gradients + m.optimizer)));
      }
    }
    if (report->kv) {
      const KvCapacity& kv = *report->kv;
      emit("{}", say(lang,
                     "\nKV cache room: {} usable - {} weights - {} activations - {} overhead = "
                     "{}\n",
                     "\nespaço do cache KV: {} utilizáveis - {} de pesos - {} de ativações - {} "
                     "de reserva = {}\n",
                     gibs(report->verdict.usable), gibs(m.weights), gibs(m.activations),
                     gibs(m.overhead), gibs(kv.budget)));
      emit("{}", say(lang,
                     "  at {} per token ({}), that holds {} tokens of context: at batch {}, up "
                     "to {} tokens per sequence\n",
                     "  a {} por token ({}), cabem {} tokens de contexto: com lote {}, até {} "
                     "tokens por sequência\n",
                     number(kv.bytes_per_token / 1024.0, 0, lang) + " KiB",
                     precision_name(job.kv_precision), count(static_cast<double>(kv.tokens)),
                     job.batch, count(static_cast<double>(kv.max_context))));
      if (model.has_window()) {
        emit("{}", say(lang,
                       "  ({} of the {} layers attend to the last {} tokens and cache no more: "
                       "tokens above count every layer)\n",
                       "  ({} das {} camadas atendem aos últimos {} tokens e não guardam mais: "
                       "os tokens acima contam todas as camadas)\n",
                       model.window.layers, model.layers,
                       count(static_cast<double>(model.window.tokens))));
      }
      if (fp8 && fp8->kv) {
        emit("{}", say(lang,
                       "  with --precision fp8 weights: {} of weights, {} of KV room = {} "
                       "tokens ({} more)\n",
                       "  com pesos --precision fp8: {} de pesos, {} para o cache KV = {} "
                       "tokens ({} a mais)\n",
                       gibs(fp8->memory.weights), gibs(fp8->kv->budget),
                       count(static_cast<double>(fp8->kv->tokens)),
                       count(static_cast<double>(fp8->kv->tokens - kv.tokens))));
      }
    }
    if (!g.peak_for(job.precision) && job.as_released) {
      emit("{}", say(lang,
                     "note:   {} has no {} tensor cores; engines dequantise these weights into "
                     "16-bit matrix multiplies\n",
                     "nota:   {} não tem tensor cores {}; os motores convertem esses pesos para "
                     "multiplicações de 16 bits\n",
                     g.id, precision_name(job.precision)));
    } else if (!g.peak_for(job.precision)) {
      emit("{}",
           say(lang, "note:   {} has no {} tensor cores; it would run {} math in another format\n",
               "nota:   {} não tem tensor cores {}; faria a conta {} em outro formato\n", g.id,
               precision_name(job.precision), precision_name(job.precision)));
    }
  }
  if (fj.offer != nullptr && offer_fit) {
    const Offer& o = *fj.offer;
    emit("{}", say(lang, "\noffer   {} ({}): {} x {} per node, up to {} node(s)\n",
                   "\noferta  {} ({}): {} x {} por nó, até {} nó(s)\n", o.id, o.name,
                   o.gpus_per_node, o.gpu, o.max_nodes));
    if (offer_fit->found && offer_fit->gpus <= o.gpus_per_node * o.max_nodes) {
      emit("{}",
           say(lang, "verdict: fits on {} GPU(s) with {}: {} per GPU of {} usable\n",
               "veredito: cabe em {} GPU(s) com {}: {} por GPU de {} utilizáveis\n",
               offer_fit->gpus, layout_text(offer_fit->job, lang),
               gibs(offer_fit->report.verdict.required), gibs(offer_fit->report.verdict.usable)));
    } else {
      emit("{}", say(lang, "verdict: does not fit on this offer: {}\n",
                     "veredito: não cabe nesta oferta: {}\n",
                     offer_fit->found ? say(lang, "it needs {} x {}", "precisa de {} x {}",
                                            offer_fit->gpus, o.gpu)
                                      : offer_fit->reason.in(lang)));
    }
  }

  emit("\n{}:\n", tr(lang, "smallest number of each catalog GPU that holds this job",
                     "menor quantidade de cada GPU do catálogo que comporta esta tarefa"));
  emit("{}", smallest_table(a, lang).str("  "));
  emit("\n{}:\n",
       tr(lang, "offers in the catalog that hold it", "ofertas do catálogo que a comportam"));
  emit("{}", offers_table(a, lang).str("  "));
}

// Every catalog GPU's smallest fit, the numbers as programs read them.
void print_csv(const FitAnswer& a) {
  Table t({"gpu", "found", "gpus", "layout", "per_gpu_bytes", "usable_bytes", "reason"});
  for (const auto& [g, s] : a.smallest) {
    t.add({g->id, s.found ? "true" : "false", s.found ? fmt::format("{}", s.gpus) : "",
           s.found ? layout_text(s.job) : "",
           s.found ? fmt::format("{}", whole(s.report.verdict.required)) : "",
           fmt::format("{}", whole(g->memory_usable)), s.found ? "" : s.reason.en});
  }
  emit("{}", t.csv());
}

std::string html_report(const Model& model, const FitJob& fj, const FitAnswer& a, Lang lang) {
  const MemoryJob& job = fj.memory;
  HtmlReport h(fmt::format("gpuplan fit: {}", model.id), lang);
  h.paragraph(fmt::format("{} ({}): {} {}, {} {}", model.id, model.model_type,
                          number(static_cast<double>(count_parameters(model).total), 0, lang),
                          tr(lang, "parameters", "parâmetros"), model.layers,
                          tr(lang, "layers", "camadas")));
  h.paragraph(job_text(model, job, lang));
  std::vector<StackedRow> rows;
  if (fj.gpu != nullptr && a.on_gpu) {
    h.verdict(fmt::format("{}, {}: {}", fj.gpu->id, layout_text(job, lang),
                          a.on_gpu->verdict.reason.in(lang)));
    rows.push_back(memory_row(a.on_gpu->memory, a.on_gpu->verdict.usable,
                              fmt::format("{} {}", fj.gpu->id, precision_name(job.precision)),
                              lang));
    if (a.fp8) {
      rows.push_back(memory_row(a.fp8->memory, a.fp8->verdict.usable, fj.gpu->id + " fp8", lang));
    }
  }
  if (fj.offer != nullptr && a.on_offer) {
    const SmallestFit& f = *a.on_offer;
    const Offer& o = *fj.offer;
    h.verdict(f.found && f.gpus <= o.gpus_per_node * o.max_nodes
                  ? fmt::format("{}: {} {} GPU(s), {}", o.id, tr(lang, "fits on", "cabe em"),
                                f.gpus, layout_text(f.job))
                  : fmt::format("{}: {}", o.id,
                                tr(lang, "does not fit on this offer", "não cabe nesta oferta")));
  }
  for (const auto& [g, s] : a.smallest) {
    if (s.found && (fj.gpu == nullptr || g != fj.gpu)) {
      rows.push_back(memory_row(s.report.memory, s.report.verdict.usable,
                                fmt::format("{} x {}", s.gpus, g->id), lang));
    }
  }
  h.heading(tr(lang, "Memory per GPU", "Memória por GPU"));
  h.figure(stacked_bars_svg(rows, "GiB", lang),
           tr(lang,
              "The heaviest GPU of each layout against the card's usable memory (what the driver "
              "leaves to programs, not the marketed figure); below the first rows, each catalog "
              "GPU at the smallest count that holds the job.",
              "A GPU mais carregada de cada layout contra a memória utilizável da placa (o que o "
              "driver deixa aos programas, não o número de marketing); abaixo das primeiras "
              "linhas, cada GPU do catálogo na menor quantidade que comporta o trabalho."));
  h.heading(
      tr(lang, "Smallest number of each catalog GPU", "Menor quantidade de cada GPU do catálogo"));
  h.table(smallest_table(a, lang));
  h.heading(tr(lang, "Offers that hold it", "Ofertas que comportam"));
  h.table(offers_table(a, lang));
  return h.str();
}

}  // namespace

int run_fit(const std::vector<std::string>& args) {
  CLI::App app(
      "Does the model fit in GPU memory? Itemised memory per GPU, the verdict, and the "
      "smallest number of each catalog GPU that holds the job.",
      args.front());
  FitFlags f;
  app.add_option("model", f.model, "catalog model id or path to a Hugging Face config.json")
      ->required();
  app.add_option("--gpu", f.gpu, "catalog GPU id (gpuplan catalog list gpus)");
  app.add_option("--offer", f.offer, "catalog offer id: its GPU and node size");
  app.add_option("--task", f.task, names_help(task_names()))->required();
  app.add_option("--seq", f.seq,
                 "training sequence length in tokens (default 4096 or the model's limit)")
      ->check(rule(fields::kSeq));
  app.add_option("--micro-batch", f.micro_batch, "training sequences per micro-batch (default 1)")
      ->check(rule(fields::kMicroBatch));
  app.add_option("--precision", f.precision,
                 names_help(precision_names(),
                            "default bf16; inference: the checkpoint's own format where its "
                            "config.json declares one, e.g. gpt-oss's mxfp4 experts"));
  app.add_option("--optimizer", f.optimizer, names_help(optimizer_names(), "default adam"));
  app.add_flag("--offload-optimizer", f.offload_optimizer,
               "keep optimizer states in host memory (ZeRO-Offload)");
  app.add_option("--framework", f.framework,
                 "training software, ID or ID@YEAR: how it keeps state and attention (default "
                 "megatron-lm; gpuplan catalog list frameworks)");
  app.add_option("--zero", f.zero,
                 "ZeRO stage 0..3 (default 0; the GPU-count search tries all unless given)")
      ->check(rule(fields::kZeroStage));
  app.add_option("--recompute", f.recompute,
                 names_help(recompute_names(), "default none; the search tries all unless given"));
  app.add_option("--tp", f.tp, "tensor-parallel size (default 1)")->check(rule(fields::kParallel));
  app.add_option("--pp", f.pp, "pipeline-parallel stages (default 1)")
      ->check(rule(fields::kParallel));
  app.add_option("--dp", f.dp, "data-parallel replicas (default 1)")
      ->check(rule(fields::kParallel));
  app.add_option("--virtual-stages", f.virtual_stages,
                 "interleaved pipeline chunks per stage (default 1)")
      ->check(rule(fields::kVirtualStages));
  app.add_flag("--sequence-parallel", f.sequence_parallel,
               "shard norm/dropout activations over the TP group");
  app.add_option("--batch", f.batch, "inference: sequences served at once (default 1)")
      ->check(rule(fields::kBatch));
  app.add_option("--context", f.context,
                 "inference: tokens per sequence (default: the model's limit)")
      ->check(rule(fields::kSeq));
  app.add_option("--kv-precision", f.kv_precision,
                 "inference KV cache format (default: fp8 and fp16 weights keep theirs, fp4 takes "
                 "fp8, others bf16)");
  app.add_option("--lora-rank", f.lora_rank, "LoRA/QLoRA adapter rank (default 16)")
      ->check(rule(fields::kLoraRank));
  app.add_option(
      "--lora-targets", f.lora_targets,
      names_help(lora_targets_names(), "default all-linear; attention: q, k, v and o only"));
  app.add_option("--attention", f.attention,
                 names_help(attention_kernel_names(),
                            "default: the framework's; eager keeps the attention scores"));
  app.add_option("--max-gpus", f.max_gpus, "largest GPU count the search tries (default 16384)")
      ->check(rule(fields::kMaxGpus));
  app.add_flag("--json", f.json, "print JSON instead of text");
  ReportFlags out;
  add_report_flags(app, out, true);
  app.add_option("--data", f.data, "catalog directory (default $GPUPLAN_DATA or the built-in one)");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  if (std::optional<int> done = finish_report_flags(out, f.json, kName)) {
    return *done;
  }
  // Ranges are checked by the flags' field rules (fields.h); 0 asks train's search for the
  // fastest micro-batch or interleaving, which fit, checking one layout, cannot do.
  for (const auto& [flag, value] : {std::pair{"--micro-batch", f.micro_batch},
                                    std::pair{"--virtual-stages", f.virtual_stages}}) {
    if (value == 0) {
      return report_error(kName,
                          Error{flag, "0 (the fastest) is for train --search", "give 1 or more"},
                          kExitUsage);
    }
  }
  if (!f.gpu.empty() && !f.offer.empty()) {
    return report_error(
        kName, Error{"--gpu", "give --gpu or --offer, not both", "an offer already names its GPU"},
        kExitUsage);
  }
  // A flag of the other kind of job would be ignored without a word: refused instead.
  if (Result<Task> task = parse_task(f.task)) {
    const bool training = is_training(*task);
    const bool lora = trains_adapters(*task);
    static constexpr std::array kTraining{
        "--seq",       "--micro-batch", "--optimizer",      "--offload-optimizer", "--zero",
        "--recompute", "--dp",          "--virtual-stages", "--sequence-parallel"};
    static constexpr std::array kInference{"--batch", "--context", "--kv-precision"};
    static constexpr std::array kLora{"--lora-rank", "--lora-targets"};
    for (const char* flag : training ? std::span<const char* const>(kInference)
                                     : std::span<const char* const>(kTraining)) {
      if (app.count(flag) > 0) {
        return report_error(
            kName,
            Error{flag,
                  training ? fmt::format("is for --task infer, not {}", f.task)
                           : std::string("is for training (--task train, finetune, lora, qlora)"),
                  training ? "training takes --seq and --micro-batch"
                           : "inference takes --context (tokens per sequence) and --batch"},
            kExitUsage);
      }
    }
    for (const char* flag : kLora) {
      if (!lora && app.count(flag) > 0) {
        return report_error(kName,
                            Error{flag, fmt::format("is for --task lora or qlora, not {}", f.task),
                                  "drop it, or fine-tune with --task lora"},
                            kExitUsage);
      }
    }
  }
  Result<Catalog> catalog = load_catalog(f.data);
  if (!catalog)
    return report_error(kName, catalog.error());
  Result<Model> model = catalog->model(f.model);
  if (!model)
    return report_error(kName, model.error());
  Result<MemoryJob> job = make_job(f, *model, *catalog);
  if (!job)
    return report_error(kName, job.error(), kExitUsage);
  FitJob fj;
  fj.memory = *job;
  if (!f.gpu.empty()) {
    Result<const Gpu*> g = catalog->gpu(f.gpu);
    if (!g)
      return report_error(kName, Error{"--gpu", g.error().what, g.error().hint});
    fj.gpu = *g;
  }
  if (!f.offer.empty()) {
    Result<const Offer*> o = catalog->offer(f.offer);
    if (!o)
      return report_error(kName, Error{"--offer", o.error().what, o.error().hint});
    fj.offer = *o;
  }
  fj.search.software = *catalog->software(f.framework);  // make_job read it
  fj.search.max_gpus = f.max_gpus;
  fj.search.vary_zero = app.count("--zero") == 0;
  fj.search.vary_recompute = app.count("--recompute") == 0;
  Result<FitAnswer> answer = fit(*model, fj, *catalog);
  if (!answer) {
    return report_error(kName, answer.error());
  }
  if (!out.html.empty()) {
    if (Result<bool> w = write_html_file(out.html, html_report(*model, fj, *answer, out.lang)); !w)
      return report_error(kName, w.error());
  }
  if (f.json) {
    print_json(*model, fj, *answer);
  } else if (out.csv) {
    print_csv(*answer);
  } else {
    print_text(*model, fj, *answer, out.lang);
    if (const Text note = unread_format_note(*model, fj.memory.task, !f.precision.empty());
        !note.empty()) {
      emit("{}: {}\n", tr(out.lang, "note", "nota"), note.in(out.lang));
    }
  }
  return kExitOk;
}

}  // namespace gpuplan::cli
