#include "train_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "html.h"
#include "output.h"
#include "report.h"

namespace gpuplan::cli {
namespace {

// "hopper" -> "Hopper", as the architecture is named in prose.
std::string capitalized(std::string_view word) {
  std::string s(word);
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') {
    s[0] = static_cast<char>(s[0] - 'a' + 'A');
  }
  return s;
}

}  // namespace

std::string train_layout_text(const TrainJob& job, Lang lang) {
  const MemoryJob& m = job.memory;
  const Parallelism& l = m.layout;
  std::string s = fmt::format("tp {} pp {} dp {}", l.tp, l.pp, l.dp);
  if (l.cp > 1)
    s += fmt::format(" cp {}", l.cp);
  if (l.ep > 1)
    s += fmt::format(" ep {}", l.ep);
  if (l.etp > 0 && l.etp != l.tp)
    s += fmt::format(" etp {}", l.etp);
  s += say(lang, ", micro-batch {}", ", micro-lote {}", m.micro_batch);
  if (l.virtual_stages > 1)
    s += say(lang, ", {} virtual stages", ", {} estágios virtuais", l.virtual_stages);
  if (l.zero > 0)
    s += fmt::format(", ZeRO {}", l.zero);
  if (l.sequence_parallel && l.tp > 1)
    s += ", SP";
  if (m.recompute != Recompute::kNone) {
    s += lang == Lang::kPt ? (m.recompute == Recompute::kFull ? ", recomputação completa"
                                                              : ", recomputação seletiva")
                           : fmt::format(", {} recompute", recompute_name(m.recompute));
  }
  return s;
}

std::string software_text(const TrainJob& job, std::string_view native_kernels, Lang lang) {
  const Software& s = job.software;
  if (s.framework == nullptr) {
    return tr(lang, "none named (nothing overlapped, eager defaults)",
              "nenhum informado (nada sobreposto, padrões eager)");
  }
  std::string text = say(lang, "{} as of {}", "{} de {}", s.framework->id, s.year);
  std::vector<std::string> parts;
  parts.push_back(job.memory.flash_attention
                      ? (!native_kernels.empty()
                             ? say(lang, "fused attention ({} kernels)",
                                   "atenção fundida (kernels {})", capitalized(native_kernels))
                             : tr(lang, "fused attention", "atenção fundida"))
                      : tr(lang, "eager attention", "atenção eager"));
  if (s.overlap_grad_reduce()) {
    parts.push_back(tr(lang, "overlapped gradient reduction", "redução de gradientes sobreposta"));
  }
  if (s.tp_comm_overlap()) {
    parts.push_back(tr(lang, "overlapped TP communication", "comunicação TP sobreposta"));
  }
  if (ep_comm_overlapped(job)) {
    parts.push_back(tr(lang, "overlapped EP all-to-alls", "all-to-alls EP sobrepostos"));
  }
  // Where the gradients are kept whole, how micro-batches add theirs up, when not in the GEMM.
  switch (grad_accumulation(job)) {
    case GradAccumulation::kFused:
      break;
    case GradAccumulation::kAutograd:
      parts.push_back(
          tr(lang, "gradients accumulated by autograd", "gradientes acumulados pelo autograd"));
      break;
    case GradAccumulation::kHook:
      parts.push_back(tr(lang, "gradients accumulated into fp32 by a hook",
                         "gradientes acumulados em fp32 por um hook"));
      break;
    case GradAccumulation::kFp32Copy:
      parts.push_back(tr(lang, "gradients accumulated through an fp32 copy",
                         "gradientes acumulados por uma cópia fp32"));
      break;
  }
  // The framework's mixed-precision state; the optimizer's moments come on top (fit).
  parts.push_back(
      say(lang, "{:g} + {:g} + {:g} bytes per parameter (weights, gradients, master copy)",
          "{:g} + {:g} + {:g} bytes por parâmetro (pesos, gradientes, cópia mestra)",
          job.memory.weight_bytes, gradient_buffer_bytes(job.memory), job.memory.master_bytes));
  return text + ": " + fmt::format("{}", fmt::join(parts, ", "));
}

void write_train_json(JsonWriter& w, const TrainEstimate& e) {
  const MemoryJob& m = e.job.memory;
  const Parallelism& l = m.layout;
  w.field("feasible", e.feasible);
  if (e.job.software.framework != nullptr) {
    w.key("software")
        .begin_object()
        .field("framework", e.job.software.framework->id)
        .field("year", e.job.software.year)
        .field("fused_attention", m.flash_attention)
        .field("native_attention_kernels", !e.native_attention.empty())
        .end_object();
  }
  if (!e.feasible) {
    w.field("reason", e.reason);
    return;
  }
  w.key("layout")
      .begin_object()
      .field("tp", l.tp)
      .field("pp", l.pp)
      .field("dp", l.dp)
      .field("cp", e.job.memory.layout.cp)
      .field("ep", l.ep)
      .field("etp", l.expert_tp())
      .field("micro_batch", m.micro_batch)
      .field("virtual_stages", l.virtual_stages)
      .field("zero", l.zero)
      .field("sequence_parallel", l.sequence_parallel)
      .field("recompute", recompute_name(m.recompute))
      .field("micro_batches_per_step", e.micro_batches)
      .end_object();
  w.field("fits_memory", e.fits_memory);
  if (!e.fits_memory)
    w.field("memory_note", e.memory_note);
  if (!e.caveats.empty())
    write_texts(w, "caveats", e.caveats);
  w.field("memory_per_gpu_bytes", static_cast<int64_t>(std::llround(e.memory.total().si())))
      .field("usable_bytes", static_cast<int64_t>(std::llround(e.usable.si())));
  const StepTime& s = e.step;
  w.key("step")
      .begin_object()
      .field("total_s", s.total().si())
      .field("compute_s", s.compute.si())
      .field("recompute_s", s.recompute.si())
      .field("grad_accumulation_s", s.grad_accumulation.si())
      .field("tp_comm_s", s.tp_comm.si())
      .field("ep_comm_s", s.ep_comm.si())
      .field("cp_comm_s", s.cp_comm.si())
      .field("pp_comm_s", s.pp_comm.si())
      .field("dp_comm_s", s.dp_comm.si())
      .field("bubble_s", s.bubble.si())
      .field("optimizer_s", s.optimizer.si())
      .field("overhead_s", s.overhead.si())
      .end_object();
  w.field("tokens_per_s", e.tokens_per_s)
      .field("model_flops_per_s_per_gpu", e.model_flops_per_gpu.si())
      .field("hardware_flops_per_s_per_gpu", e.hardware_flops_per_gpu.si())
      .field("mfu", e.mfu)
      .field("hfu", e.hfu);
  if (e.cost_per_million_tokens) {
    w.field("currency", e.cost_per_million_tokens->currency)
        .field("cost_per_million_tokens", e.cost_per_million_tokens->amount);
  }
  if (e.job.tokens > 0) {
    w.field("tokens", e.job.tokens)
        .field("time_to_train_s", e.time_to_train.si())
        .field("gpu_hours", e.gpu_hours)
        .field("energy_at_tdp_j", e.energy_joules);
    if (e.cost) {
      w.field("cost", e.cost->amount);  // in `currency`, above
    } else {
      w.key("cost").null();
    }
  }
}

namespace {

// Significant digits after the point for a step time in Portuguese, as "{:.4g}" gives in English.
int value_digits(double v) {
  const double a = std::fabs(v);
  return a == 0 ? 0 : a < 0.01 ? 5 : a < 0.1 ? 4 : a < 1 ? 3 : a < 10 ? 2 : a < 100 ? 1 : 0;
}

std::string duration(Seconds t) {
  const double s = t.si();
  if (s < 120)
    return fmt::format("{:.1f} s", s);
  if (s < 2 * 3600)
    return fmt::format("{:.1f} min", s / 60);
  if (s < 2 * 86400)
    return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

// What to do about a layout that does not fit: the search keeps the flags given and tries the
// rest; fit itemises the memory.
std::string no_fit_hint(Lang lang) {
  return tr(lang,
            "hint    --search finds the layouts that fit (the flags you give stay fixed); "
            "gpuplan fit itemises the memory",
            "dica    --search encontra os layouts que cabem (as opções dadas ficam fixas); "
            "gpuplan fit detalha a memória");
}

}  // namespace

std::vector<std::pair<std::string, Seconds>> step_items(const StepTime& s, Lang lang) {
  return {
      {tr(lang, "compute (forward + backward)", "cômputo (forward + backward)"),
       s.compute - s.recompute - s.grad_accumulation},
      {tr(lang, "recompute", "recomputação"), s.recompute},
      {tr(lang, "gradient accumulation", "acumulação de gradientes"), s.grad_accumulation},
      {tr(lang, "tensor-parallel communication (exposed)", "comunicação tensor-parallel (exposta)"),
       s.tp_comm},
      {tr(lang, "expert-parallel all-to-alls (exposed)", "all-to-alls expert-parallel (expostos)"),
       s.ep_comm},
      {tr(lang, "context-parallel communication (exposed)",
          "comunicação context-parallel (exposta)"),
       s.cp_comm},
      {tr(lang, "pipeline transfers", "transferências do pipeline"), s.pp_comm},
      {tr(lang, "pipeline bubble", "bolha do pipeline"), s.bubble},
      {tr(lang, "data-parallel communication (exposed)", "comunicação data-parallel (exposta)"),
       s.dp_comm},
      {tr(lang, "optimizer step", "passo do otimizador"), s.optimizer},
      {tr(lang, "fixed per-step overhead", "custo fixo por passo"), s.overhead},
  };
}

StackedRow memory_row(const MemoryBreakdown& m, Bytes usable, const std::string& label, Lang lang) {
  const double g = GiB(1).si();
  StackedRow r;
  r.label = label;
  r.segments = {{tr(lang, "weights", "pesos"), m.weights.si() / g},
                {tr(lang, "gradients", "gradientes"), m.gradients.si() / g},
                {tr(lang, "optimizer states", "estados do otimizador"), m.optimizer.si() / g},
                {tr(lang, "activations", "ativações"), m.activations.si() / g},
                {tr(lang, "KV cache", "cache KV"), m.kv_cache.si() / g},
                {tr(lang, "runtime overhead", "reserva do runtime"), m.overhead.si() / g}};
  std::erase_if(r.segments, [](const Segment& s) { return !(s.value > 0); });
  r.limit = usable.si() / g;
  r.limit_label = fmt::format("{} {}", tr(lang, "usable", "utilizável"), gib_text(usable, lang));
  return r;
}

void add_train_html(HtmlReport& h, const TrainEstimate& e) {
  const Lang lang = h.lang();
  if (!e.feasible) {
    h.verdict(tr(lang, "infeasible: ", "inviável: ") + e.reason);
    return;
  }
  h.paragraph(tr(lang, "software: ", "software: ") +
              software_text(e.job, e.native_attention, lang));
  h.paragraph(fmt::format("layout: {} ({} {})", train_layout_text(e.job, lang), e.micro_batches,
                          tr(lang, "micro-batches per step", "micro-lotes por passo")));
  for (const Text& c : e.caveats) {
    h.paragraph(tr(lang, "caveat: ", "ressalva: ") + c.in(lang));
  }
  h.heading(tr(lang, "Where the step goes", "Para onde vai o passo"));
  std::vector<Bar> bars;
  const Seconds total = e.step.total();
  for (const auto& [name, t] : step_items(e.step, lang)) {
    if (!(t.si() > 0))
      continue;  // the parts this layout does not have
    bars.push_back(Bar{name, t.si(), number(100.0 * t.si() / total.si(), 1, lang) + " %"});
  }
  h.figure(bars_svg(bars, tr(lang, "time per step (s)", "tempo por passo (s)"), lang),
           fmt::format("{}: {} s; {} {} tokens/s, MFU {} %, HFU {} %.",
                       tr(lang, "One step", "Um passo"), number(total.si(), 3, lang),
                       tr(lang, "throughput", "vazão"), number(std::round(e.tokens_per_s), 0, lang),
                       number(e.mfu * 100, 1, lang), number(e.hfu * 100, 1, lang)));
  h.heading(tr(lang, "Memory per GPU", "Memória por GPU"));
  h.figure(
      stacked_bars_svg(
          {memory_row(e.memory, e.usable, tr(lang, "heaviest GPU", "GPU mais carregada"), lang)},
          "GiB", lang),
      e.fits_memory
          ? fmt::format("{} {} {} {}.", gib_text(e.memory.total(), lang), tr(lang, "of", "de"),
                        gib_text(e.usable, lang), tr(lang, "usable: fits", "utilizáveis: cabe"))
          : fmt::format("{} {} {}: {}", gib_text(e.memory.total(), lang),
                        tr(lang, "against", "contra"), gib_text(e.usable, lang),
                        tr(lang,
                           "does not fit; the times are for a layout that "
                           "cannot run",
                           "não cabe; os tempos são de um layout que não roda")));
  if (!e.fits_memory) {
    h.paragraph(no_fit_hint(lang));
  }
  if (e.cost_per_million_tokens) {
    h.paragraph(say(lang, "{} per million tokens at this throughput",
                    "{} por milhão de tokens com esta vazão",
                    number(e.cost_per_million_tokens->amount, 3, lang) + " " +
                        e.cost_per_million_tokens->currency));
  }
  if (e.job.tokens > 0) {
    h.paragraph(fmt::format("{} tokens: {}, {} GPU-{}, {} MWh {}{}", number(e.job.tokens, 0, lang),
                            duration_text(e.time_to_train, lang),
                            number(std::round(e.gpu_hours), 0, lang), tr(lang, "hours", "horas"),
                            number(e.energy_joules / 3.6e9, 1, lang), tr(lang, "at TDP", "no TDP"),
                            e.cost ? ", " + money_text(*e.cost, lang)
                                   : std::string(tr(lang, " (no price)", " (sem preço)"))));
  }
}

void print_train_text(const TrainEstimate& e, Lang lang) {
  if (!e.feasible) {
    emit("{}", say(lang, "verdict: infeasible: {}\n", "veredito: inviável: {}\n", e.reason));
    return;
  }
  emit("software {}\n", software_text(e.job, e.native_attention, lang));
  emit("{}", say(lang, "layout  {} ({} micro-batches per step)\n",
                 "layout  {} ({} micro-lotes por passo)\n", train_layout_text(e.job, lang),
                 e.micro_batches));
  emit("{}", say(lang, "memory  {} of {} usable per GPU: {}\n",
                 "memória {} de {} utilizáveis por GPU: {}\n", gib_text(e.memory.total(), lang),
                 gib_text(e.usable, lang),
                 e.fits_memory ? tr(lang, "fits", "cabe")
                               : tr(lang,
                                    "DOES NOT FIT - the times below are for a layout that cannot "
                                    "run",
                                    "NÃO CABE - os tempos abaixo são de um layout que não roda")));
  if (!e.fits_memory) {
    emit("{}\n", no_fit_hint(lang));
  }
  const StepTime& s = e.step;
  const Seconds total = s.total();
  Table t({tr(lang, "where the step goes", "para onde vai o passo"),
           tr(lang, "time (s)", "tempo (s)"), tr(lang, "share (%)", "parcela (%)")},
          {false, true, true});
  auto row = [&](const std::string& name, Seconds v) {
    t.add({name,
           lang == Lang::kEn ? fmt::format("{:.4g}", v.si())
                             : number(v.si(), value_digits(v.si()), lang),
           number(100.0 * v.si() / total.si(), 1, lang)});
  };
  for (const auto& [name, v] : step_items(s, lang)) {
    row(name, v);
  }
  row(tr(lang, "step", "passo"), total);
  emit("\n{}", t.str());
  const double per_gpu = e.tokens_per_s / static_cast<double>(e.job.memory.layout.gpus());
  emit("{}", say(lang, "\nthroughput  {} tokens/s ({} tokens/s per GPU)\n",
                 "\nvazão       {} tokens/s ({} tokens/s por GPU)\n",
                 number(std::round(e.tokens_per_s), 0, lang), number(per_gpu, 0, lang)));
  emit("{}", say(lang, "per GPU     {} TFLOP/s model, {} TFLOP/s hardware; MFU {} %, HFU {} %\n",
                 "por GPU     {} TFLOP/s do modelo, {} TFLOP/s de hardware; MFU {} %, HFU {} %\n",
                 number(e.model_flops_per_gpu.si() / 1e12, 0, lang),
                 number(e.hardware_flops_per_gpu.si() / 1e12, 0, lang),
                 number(e.mfu * 100, 1, lang), number(e.hfu * 100, 1, lang)));
  if (e.cost_per_million_tokens && e.job.price_per_gpu_hour) {
    const Money& price = *e.job.price_per_gpu_hour;
    const Money cluster{price.amount * static_cast<double>(e.job.memory.layout.gpus()),
                        price.currency};
    if (lang == Lang::kEn) {
      emit(
          "cost        at {:.4g} {} per GPU-hour: the {} GPUs {:.2f} {}/h, {:.3g} {} per million "
          "tokens\n",
          price.amount, price.currency, e.job.memory.layout.gpus(), cluster.amount,
          cluster.currency, e.cost_per_million_tokens->amount, price.currency);
    } else {
      emit("custo       a {} por GPU-hora: as {} GPUs {}/h, {} por milhão de tokens\n",
           money_text(price, lang), e.job.memory.layout.gpus(), money_text(cluster, lang),
           money_text(*e.cost_per_million_tokens, lang));
    }
  }
  for (const Text& c : e.caveats) {
    emit("{}", say(lang, "caveat      {}\n", "ressalva    {}\n", c.in(lang)));
  }
  if (e.job.tokens > 0) {
    emit("{}",
         say(lang, "{:.3g} tokens: {}, {} GPU-hours, {} MWh at TDP",
             "{:.3g} tokens: {}, {} GPU-horas, {} MWh no TDP", e.job.tokens,
             lang == Lang::kEn ? duration(e.time_to_train) : duration_text(e.time_to_train, lang),
             number(std::round(e.gpu_hours), 0, lang), number(e.energy_joules / 3.6e9, 1, lang)));
    if (e.cost) {
      emit(", {}", money_text(*e.cost, lang));
    } else {
      emit("{}", tr(lang, " (no price: give --price VALUE/h per GPU or --offer)",
                    " (sem preço: informe --price VALOR/h por GPU ou --offer)"));
    }
    emit("\n");
  }
}

}  // namespace gpuplan::cli
