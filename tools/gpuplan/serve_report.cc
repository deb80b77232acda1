#include "serve_report.h"

#include <fmt/format.h>

#include <cmath>

#include "gpuplan/gemm.h"
#include "gpuplan/json_writer.h"
#include "html.h"
#include "output.h"
#include "report.h"

namespace gpuplan::cli {
namespace {

std::string ms(double seconds, Lang lang = Lang::kEn) {
  return seconds < 1.0 ? number(seconds * 1e3, 1, lang) + " ms" : number(seconds, 2, lang) + " s";
}

std::string spread(const Percentiles& p, Lang lang) {
  return say(lang, "mean {}, p50 {}, p90 {}, p99 {}", "média {}, p50 {}, p90 {}, p99 {}",
             ms(p.mean, lang), ms(p.p50, lang), ms(p.p90, lang), ms(p.p99, lang));
}

std::string slo_text(const Slo& slo, Lang lang = Lang::kEn) {
  std::string s;
  if (slo.ttft_p99) {
    s += fmt::format("p99 TTFT <= {}", ms(slo.ttft_p99->si(), lang));
  }
  if (slo.tpot_p99) {
    s += fmt::format("{}p99 TPOT <= {}", s.empty() ? "" : ", ", ms(slo.tpot_p99->si(), lang));
  }
  return s;
}

std::string unit(const ServeReport& r) {
  return r.job.closed() ? tr(r.lang, "users", "usuários")
                        : tr(r.lang, "requests/s", "requisições/s");
}

// The table's first cell: "4", or "4 x 2" with pipeline stages.
std::string cell(const ServeOption& o) {
  return o.pp == 1 ? fmt::format("{}", o.tp) : fmt::format("{} x {}", o.tp, o.pp);
}

// What serving costs at a price per GPU-hour: an instance per hour, a million output tokens at
// its capacity, and the fleet per month (kHoursPerMonth).
struct Costs {
  double instance_hour = 0;
  double per_million = 0;
  double fleet_month = 0;
};

Costs costs(const ServeReport& r) {
  const ServeAnswer& a = r.answer;
  const ServeOption& o = *a.best_option();
  Costs k;
  k.instance_hour = r.price->amount * static_cast<double>(o.gpus);
  k.per_million = o.tokens_per_s > 0 ? k.instance_hour / (o.tokens_per_s * 3600.0) * 1e6 : 0;
  k.fleet_month =
      k.instance_hour * static_cast<double>(a.fleet ? a.fleet->replicas : 0) * kHoursPerMonth;
  return k;
}

void print_result(const ServingResult& r, Lang lang) {
  if (r.simulated > r.requests && r.filling) {
    // A steady run too short to be steady: its window opened while the engines still filled.
    emit("{}",
         say(lang,
             "  throughput  {} output tokens/s ({} requests/s) while the {} measured of {} "
             "requests arrived, not yet steady: the warm-up was shorter than a mean decode\n"
             "              a benchmark of these {} requests reports {} output tokens/s, from the "
             "first arrival to the last completion\n",
             "  vazão       {} tokens de saída/s ({} requisições/s) enquanto chegavam {} de {} "
             "requisições, ainda fora do regime: o aquecimento foi mais curto que uma "
             "decodificação média\n"
             "              um benchmark destas {} requisições mede {} tokens de saída/s, da "
             "primeira chegada à última conclusão\n",
             number(std::round(r.output_tokens_per_s), 0, lang), number(r.requests_per_s, 2, lang),
             number(static_cast<double>(r.requests), 0, lang),
             number(static_cast<double>(r.simulated), 0, lang),
             number(static_cast<double>(r.simulated), 0, lang),
             number(std::round(r.run_tokens_per_s), 0, lang)));
  } else if (r.simulated > r.requests) {
    // A steady run: its warm-up and drain simulated, not measured.
    emit("{}",
         say(lang,
             "  throughput  {} output tokens/s ({} requests/s in the steady state: {} of {} "
             "requests measured, the warm-up and drain left out)\n",
             "  vazão       {} tokens de saída/s ({} requisições/s em regime: {} de {} "
             "requisições medidas, sem o aquecimento e o esvaziamento)\n",
             number(std::round(r.output_tokens_per_s), 0, lang), number(r.requests_per_s, 2, lang),
             number(static_cast<double>(r.requests), 0, lang),
             number(static_cast<double>(r.simulated), 0, lang)));
  } else {
    emit("{}",
         say(lang,
             "  throughput  {} output tokens/s ({} requests/s over {}, the last completions "
             "included)\n",
             "  vazão       {} tokens de saída/s ({} requisições/s em {}, contando as últimas "
             "conclusões)\n",
             number(std::round(r.output_tokens_per_s), 0, lang), number(r.requests_per_s, 2, lang),
             duration_text(r.duration, lang)));
  }
  emit("  TTFT        {}\n", spread(r.ttft, lang));
  emit("  TPOT        {}\n", spread(r.tpot, lang));
  emit("{}",
       say(lang, "  ITL         mean {}\n", "  ITL         média {}\n", ms(r.itl_mean, lang)));
  emit("  E2E         {}\n", spread(r.e2e, lang));
  emit("{}", say(lang, "  batch       mean {} sequences, max {}; {} iterations{}\n",
                 "  lote        média de {} sequências, máximo {}; {} iterações{}\n",
                 number(r.mean_batch, 1, lang), r.max_batch,
                 number(static_cast<double>(r.iterations), 0, lang),
                 r.preemptions > 0 ? say(lang, "; {} preemptions", "; {} preempções",
                                         number(static_cast<double>(r.preemptions), 0, lang))
                                   : ""));
}

// The loaded run again on engines ServeAnswer::slower times slower: what the model's own error
// in speed would do to the latencies at this load.
void print_sensitivity(const ServeReport& r) {
  const ServeAnswer& a = r.answer;
  const Lang lang = r.lang;
  if (a.slower <= 0) {
    return;
  }
  const double pct = (a.slower - 1.0) * 100.0;
  if (a.slower_overload) {
    emit("{}",
         say(lang,
             "  if slower   were every iteration {:.0f} % slower than modelled (the model's "
             "typical error out of sample), the replicas would complete {} requests/s at most, "
             "fewer than arrive: the queue would grow without bound\n",
             "  mais lento  se cada iteração fosse {:.0f} % mais lenta que o modelo (o erro "
             "típico dele fora da amostra), as réplicas concluiriam no máximo {} requisições/s, "
             "menos do que chegam: a fila cresceria sem limite\n",
             pct,
             number(offline_ceiling(*a.best_option(), r.job.setup.replicas) / a.slower, 2, lang)));
    return;
  }
  if (!a.run_slower) {
    return;
  }
  const ServingResult& s = *a.run_slower;
  emit("{}", say(lang,
                 "  if slower   were every iteration {:.0f} % slower than modelled (the model's "
                 "typical error out of sample): TTFT p99 {}, TPOT p99 {}, E2E p99 {}, mean batch "
                 "{}\n",
                 "  mais lento  se cada iteração fosse {:.0f} % mais lenta que o modelo (o erro "
                 "típico dele fora da amostra): TTFT p99 {}, TPOT p99 {}, E2E p99 {}, lote médio "
                 "{}\n",
                 pct, ms(s.ttft.p99, lang), ms(s.tpot.p99, lang),
                 duration_text(Seconds(s.e2e.p99), lang), number(s.mean_batch, 1, lang)));
}

// The sweep as a table for people (Lang) and the note on its overloaded loads.
Table sweep_table(const ServeReport& r) {
  const Lang lang = r.lang;
  const bool closed = r.job.closed();
  Table t(
      {closed ? tr(lang, "users", "usuários") : tr(lang, "load (req/s)", "carga (req/s)"),
       tr(lang, "output tok/s", "tokens de saída/s"), tr(lang, "done (req/s)", "feitas (req/s)"),
       tr(lang, "goodput (req/s)", "goodput (req/s)"), "TTFT p50 (ms)", "TTFT p99 (ms)",
       "TPOT p50 (ms)", "TPOT p99 (ms)", "ITL (ms)", "E2E p99 (s)",
       tr(lang, "mean batch", "lote médio"), tr(lang, "measured", "medidas"), ""},
      {true, true, true, true, true, true, true, true, true, true, true, true, false});
  // An overloaded load's TTFT and E2E grow without bound (SweepPoint::overload).
  auto grows = [&](double v, int decimals) {
    return std::isfinite(v) ? number(v, decimals, lang)
                            : std::string(tr(lang, "unbounded", "sem limite"));
  };
  for (const SweepPoint& p : r.answer.sweep) {
    const ServingResult& x = p.result;
    const std::string note = p.overload   ? std::string(tr(lang, "overload", "sobrecarga"))
                             : p.growing  ? std::string(tr(lang, "queue grows", "fila cresce"))
                             : !p.settled ? std::string(tr(lang, "not settled", "não estabilizou"))
                             : p.knee     ? std::string(tr(lang, "<- knee", "<- joelho"))
                                          : std::string();
    t.add({number(p.load, closed ? 0 : 2, lang), number(std::round(x.output_tokens_per_s), 0, lang),
           number(x.requests_per_s, 2, lang), number(x.goodput_per_s, 2, lang),
           grows(x.ttft.p50 * 1e3, 1), grows(x.ttft.p99 * 1e3, 1),
           number(x.tpot.p50 * 1e3, 1, lang), number(x.tpot.p99 * 1e3, 1, lang),
           number(x.itl_mean * 1e3, 1, lang), grows(x.e2e.p99, 2), number(x.mean_batch, 1, lang),
           number(static_cast<double>(x.requests), 0, lang), note});
  }
  return t;
}

void print_sweep(const ServeReport& r) {
  const Lang lang = r.lang;
  const ServeJob& job = r.job;
  const ServeAnswer& a = r.answer;
  const ServeOption& best = *a.best_option();
  emit("{}", say(lang,
                 "\nsweep  {}, {} replica(s) ({}), {}, each load measured in its steady state "
                 "(runs doubling until two agree within {} %; measured: the requests counted)\n",
                 "\nvarredura  {}, {} réplica(s) ({}), {}, cada carga medida em regime "
                 "(simulações dobrando até duas concordarem em {} %; medidas: as requisições "
                 "contadas)\n",
                 shape_name(best), job.setup.replicas, balancer_name(job.setup.balancer),
                 job.closed() ? tr(lang, "a closed loop of users", "ciclo fechado de usuários")
                              : tr(lang, "Poisson arrivals", "chegadas de Poisson"),
                 number(SteadyState{}.tolerance * 100, 0, lang)));
  emit("{}", sweep_table(r).str("  "));
  if (job.slo.any()) {
    emit("{}", say(lang, "  goodput: requests whose own TTFT and TPOT are within {}\n",
                   "  goodput: requisições cujos próprios TTFT e TPOT cabem em {}\n",
                   slo_text(job.slo, lang)));
  }
  const auto over =
      std::find_if(a.sweep.begin(), a.sweep.end(), [](const SweepPoint& p) { return p.overload; });
  if (over != a.sweep.end()) {
    const double ceiling = offline_ceiling(best, job.setup.replicas);
    emit("{}", say(lang,
                   "  overload: from {} requests/s the arrivals exceed what the replicas complete "
                   "with every request queued at once ({} requests/s): they run saturated, at "
                   "that rate, while the queue, and with it TTFT and E2E, grows without bound\n",
                   "  sobrecarga: a partir de {} requisições/s as chegadas passam do que as "
                   "réplicas concluem com todas as requisições na fila ({} requisições/s): elas "
                   "rodam saturadas, nessa taxa, enquanto a fila, e com ela TTFT e E2E, cresce "
                   "sem limite\n",
                   number(over->load, 2, lang), number(ceiling, 2, lang)));
  }
}

// Splits a report lists: the best ones.
constexpr size_t kSplitsShown = 8;
// A split that serves within this share of aggregated serving is called the same: capacities
// are found to 1 % and each simulation's arrivals are random, so smaller gains are noise.
constexpr double kSplitMargin = 0.05;

// "+35", "-12": a change in percent, its sign always shown.
std::string signed_number(double v, int decimals, Lang lang) {
  return fmt::format("{}{}", v >= 0 ? "+" : "", number(v, decimals, lang));
}

// "2 x tp 4": replicas of a shape.
std::string pool_text(int64_t replicas, int64_t tp) {
  return fmt::format("{} x tp {}", replicas, tp);
}

// The best splits of the GPUs into prefill and decode pools, against aggregated serving.
Table split_table(const ServeReport& r) {
  const Lang lang = r.lang;
  const Disaggregation& d = *r.answer.disaggregated;
  Table t({tr(lang, "prefill", "prefill"), tr(lang, "decode", "decode"), tr(lang, "req/s", "req/s"),
           tr(lang, "vs aggregated (%)", "vs agregado (%)"),
           tr(lang, "KV transfer (ms)", "transferência KV (ms)"), "TTFT p99 (ms)", "TPOT p99 (ms)"},
          {false, false, true, true, true, true, true});
  for (size_t i = 0; i < d.splits.size() && i < kSplitsShown; ++i) {
    const PoolSplit& s = d.splits[i];
    const double rate = s.capacity.max_rate_per_s;
    const ServingResult& x = s.capacity.at_max;
    t.add({pool_text(s.prefill_replicas, s.prefill_tp), pool_text(s.decode_replicas, s.decode_tp),
           number(rate, 2, lang),
           d.aggregated_rate > 0 ? signed_number((rate / d.aggregated_rate - 1.0) * 100, 0, lang)
                                 : "-",
           number(s.mean_transfer.si() * 1e3, 2, lang), number(x.ttft.p99 * 1e3, 1, lang),
           number(x.tpot.p99 * 1e3, 1, lang)});
  }
  return t;
}

// The verdict on disaggregation, in a sentence.
std::string split_verdict(const ServeReport& r) {
  const Lang lang = r.lang;
  const Disaggregation& d = *r.answer.disaggregated;
  const PoolSplit* s = d.best();
  if (s == nullptr) {
    return say(lang, "no split of {} GPUs serves this: {}",
               "nenhuma divisão de {} GPUs serve isto: {}", d.gpus, d.reason.in(lang));
  }
  const std::string split = say(lang, "{} prefill + {} decode", "{} prefill + {} decode",
                                pool_text(s->prefill_replicas, s->prefill_tp),
                                pool_text(s->decode_replicas, s->decode_tp));
  const double rate = s->capacity.max_rate_per_s;
  if (d.aggregated < 0) {
    return say(lang,
               "{} serves {} requests/s on {} GPUs, where no aggregated instance meets the "
               "objective",
               "{} serve {} requisições/s em {} GPUs, onde nenhuma instância agregada cumpre o "
               "objetivo",
               split, number(rate, 2, lang), d.gpus);
  }
  const ServeOption& agg = r.answer.options[static_cast<size_t>(d.aggregated)];
  const double gain = (rate / d.aggregated_rate - 1.0) * 100;
  const std::string verdict =
      gain > kSplitMargin * 100 ? say(lang, "disaggregate", "desagregar")
      : gain >= -kSplitMargin * 100
          ? say(lang, "about the same (within {} %): keep the simpler aggregated serving",
                "praticamente igual (dentro de {} %): manter o serviço agregado, mais simples",
                number(kSplitMargin * 100, 0, lang))
          : say(lang, "keep serving aggregated", "manter o serviço agregado");
  return say(lang,
             "{} serves {} requests/s; {} aggregated on the same {} GPUs serves {} ({} %): {}",
             "{} serve {} requisições/s; {} agregado nas mesmas {} GPUs serve {} ({} %): {}", split,
             number(rate, 2, lang), pool_text(d.aggregated_replicas, agg.tp), d.gpus,
             number(d.aggregated_rate, 2, lang), signed_number(gain, 0, lang), verdict);
}

void print_disaggregation(const ServeReport& r) {
  const Lang lang = r.lang;
  const Disaggregation& d = *r.answer.disaggregated;
  const Fabric* link = d.crosses_nodes ? r.job.base.scale_out : r.job.base.scale_up;
  const std::string where =
      link == nullptr ? say(lang, "over more than one node", "em mais de um nó")
      : d.crosses_nodes
          ? say(lang, "KV caches over {}", "caches KV por {}", link->id)
          : say(lang, "in one node, KV caches over {}", "em um nó, caches KV por {}", link->id);
  emit("{}", say(lang,
                 "\ndisaggregated  {} x {} ({}), {}; {} pairs of shapes rate-matched, the best {} "
                 "splits simulated as whole deployments\n",
                 "\ndesagregado  {} x {} ({}), {}; {} pares de formatos casados por taxa, as {} "
                 "melhores divisões simuladas como implantações inteiras\n",
                 d.gpus, r.gpu->id, where,
                 r.job.slo.any() ? slo_text(r.job.slo, lang)
                                 : std::string(tr(lang, "no objective: the most each serves",
                                                  "sem objetivo: o máximo que cada uma serve")),
                 d.tried, d.simulated));
  if (!d.splits.empty()) {
    emit("{}", split_table(r).str("  "));
  }
  emit("  {}\n", split_verdict(r));
  if (d.at_load) {
    const PoolSplit& s = *d.best();
    emit("{}", say(lang, "  at {} requests/s on {} prefill + {} decode:\n",
                   "  a {} requisições/s em {} prefill + {} decode:\n",
                   number(r.job.workload.rate_per_s, 2, lang),
                   pool_text(s.prefill_replicas, s.prefill_tp),
                   pool_text(s.decode_replicas, s.decode_tp)));
    print_result(*d.at_load, lang);
    if (r.job.slo.any()) {
      Text why;
      const bool met = meets_slo(*d.at_load, r.job.slo, &why);
      emit("{}",
           say(lang, "  objective   {}: {}\n", "  objetivo    {}: {}\n", slo_text(r.job.slo, lang),
               met ? std::string(tr(lang, "met", "cumprido"))
                   : tr(lang, "missed, ", "perdido, ") + why.in(lang)));
    }
  }
}

void print_options(const ServeReport& r) {
  const Lang lang = r.lang;
  const ServeJob& job = r.job;
  const ServeAnswer& a = r.answer;
  const bool slo = job.slo.any();
  const bool closed = job.closed();
  const std::string objective = slo_text(job.slo, lang);
  const std::string capacity =
      closed ? (slo ? say(lang, "capacity: the most concurrent users with {}",
                          "capacidade: o máximo de usuários simultâneos com {}", objective)
                    : std::string(tr(lang, "users: the sequences one instance runs at once",
                                     "usuários: as sequências que uma instância roda de uma vez")))
             : (slo ? say(lang, "capacity: the highest Poisson rate with {}",
                          "capacidade: a maior taxa de Poisson com {}", objective)
                    : std::string(tr(lang, "req/s: every request queued at once",
                                     "req/s: todas as requisições na fila de uma vez")));
  emit("{}", say(lang, "instances, one per tensor-parallel size ({})\n",
                 "instâncias, uma por tamanho de tensor parallel ({})\n", capacity));
  const std::string amount =
      closed ? (slo ? tr(lang, "capacity (users)", "capacidade (usuários)")
                    : tr(lang, "users", "usuários"))
             : (slo ? tr(lang, "capacity (req/s)", "capacidade (req/s)") : "req/s");
  bool stages = false;
  for (const ServeOption& o : a.options) {
    stages = stages || o.pp > 1;
  }
  const char* cannot = tr(lang, "cannot serve", "não serve");
  Table t(
      {stages ? "tp x pp" : "tp", tr(lang, "weights/GPU", "pesos/GPU"),
       tr(lang, "KV cache/GPU", "cache KV/GPU"), tr(lang, "requests in KV", "requisições no KV"),
       tr(lang, "TTFT floor", "TTFT mínimo"), tr(lang, "TPOT floor", "TPOT mínimo"),
       tr(lang, "offline tok/s", "tok/s offline"), amount,
       closed ? tr(lang, "users per GPU", "usuários por GPU")
              : tr(lang, "req/s per GPU", "req/s por GPU"),
       ""},
      {true, true, true, true, true, true, true, true, true, false});
  std::vector<std::string> problems;
  for (const ServeOption& o : a.options) {
    if (!o.serves()) {
      problems.push_back(fmt::format("{} {}: {}", shape_name(o), cannot, o.reason.in(lang)));
    }
    if (!o.model->feasible()) {
      t.add({cell(o), "-", "-", "-", "-", "-", "-", "-", "-", cannot});
      continue;
    }
    const InferenceModel& m = *o.model;
    const double in_kv = sequences_in_kv(m, job.workload);
    std::vector<std::string> row = {
        cell(o),
        gib_text(m.weights_per_gpu(), lang),
        gib_text(m.kv_budget_per_gpu(), lang),
        number(std::floor(in_kv), 0, lang),
        ms(m.prefill_alone(r.input, job.workload.cached_tokens(r.input)).si(), lang),
        ms(lone_decode_step(m, job.workload, r.input).si(), lang)};
    if (o.serves()) {
      row.push_back(number(std::round(o.offline.output_tokens_per_s), 0, lang));
      row.push_back(closed ? number(std::round(o.amount), 0, lang) : number(o.amount, 2, lang));
      row.push_back(number(o.per_gpu, closed ? 1 : 2, lang));
      row.push_back(&o == a.best_option() && a.options.size() > 1
                        ? tr(lang, "<- best per GPU", "<- melhor por GPU")
                        : "");
    } else {
      row.insert(row.end(), {"-", "-", "-", cannot});
    }
    t.add(row);
  }
  emit("{}", t.str());
  for (const std::string& line : problems) {
    emit("  {}\n", line);
  }
  const EngineProfile& e = *r.engine;
  const int64_t beams = r.job.workload.beams;
  const std::string decoding =
      beams > 1 ? say(lang, "one request's {} beams decoding",
                      "os {} feixes de uma requisição decodificando", beams)
                : std::string(tr(lang, "one sequence decoding", "uma sequência decodificando"));
  emit("{}",
       say(lang,
           "TTFT floor: one prompt alone. TPOT floor: {}. The engine ({}) "
           "runs at most {} sequences and {} tokens per iteration, KV blocks of {} token{}, {}{} "
           "(data/engines/{}.toml).\n",
           "TTFT mínimo: um prompt sozinho. TPOT mínimo: {}. O motor "
           "({}) roda no máximo {} sequências e {} tokens por iteração, blocos de KV de {} "
           "token{}, {}{} (data/engines/{}.toml).\n",
           decoding, e.name, a.max_batch, a.chunk_tokens, e.kv_block_tokens,
           e.kv_block_tokens == 1 ? "" : "s",
           r.job.setup.kv_policy == KvPolicy::kPaged
               ? tr(lang, "paged KV cache", "cache KV paginado")
               : tr(lang, "whole contexts reserved", "contextos inteiros reservados"),
           e.scheduling == PromptScheduling::kPrefillFirst
               ? tr(lang, ", prompts first (the decoding sequences wait while prompts run)",
                    ", prompts primeiro (as sequências em decodificação esperam enquanto prompts "
                    "rodam)")
               : "",
           e.id));
  if (e.sequence_overhead.si() > 0) {
    const double us = e.sequence_overhead.si() * 1e6;
    const std::string release = r.engine_release.empty()
                                    ? tr(lang, "at its current release", "na versão atual")
                                    : say(lang, "at release {}", "na versão {}", r.engine_release);
    if (e.host_waits(r.engine_release)) {
      emit("{}", say(lang,
                     "note: {} {} waits between iterations for {:.0f} us of host time per "
                     "sequence sampling a token, as measured by its developers "
                     "(data/engines/{}.toml).\n",
                     "nota: o {} {} espera entre iterações {:.0f} us de tempo de host por "
                     "sequência que amostra um token, como medido por seus desenvolvedores "
                     "(data/engines/{}.toml).\n",
                     e.name, release, us, e.id));
    } else {
      emit("{}", say(lang,
                     "note: {} {} prepares each iteration while the GPU runs the one before: "
                     "its {:.0f} us of host time per sequence count only beyond the GPU's time "
                     "(releases {} to before {} wait for it; --engine {}@RELEASE models one; "
                     "data/engines/{}.toml).\n",
                     "nota: o {} {} prepara cada iteração enquanto a GPU roda a anterior: "
                     "seus {:.0f} us de tempo de host por sequência só contam além do tempo da "
                     "GPU (as versões de {} até antes de {} esperam por ele; --engine "
                     "{}@VERSÃO modela uma; data/engines/{}.toml).\n",
                     e.name, release, us, e.host_waits_from.empty() ? "0" : e.host_waits_from,
                     e.host_waits_until.empty() ? "-" : e.host_waits_until, e.id, e.id));
    }
  }
  for (const Text& c : serve_caveats(r)) {
    emit("{}{}.\n", tr(lang, "note: ", "nota: "), c.in(lang));
  }
}

// "one instance (tp 2) serves 3.1 requests/s within p99 TPOT <= 50.0 ms (...); ...".
std::string answer_text(const ServeReport& r) {
  const Lang lang = r.lang;
  const ServeJob& job = r.job;
  const ServeAnswer& a = r.answer;
  const ServeOption& b = *a.best_option();
  const std::string within = job.slo.any()
                                 ? say(lang, " within {}", " dentro de {}", slo_text(job.slo, lang))
                                 : std::string(tr(lang, " at most", " no máximo"));
  const std::string amount = lang == Lang::kEn ? fmt::format("{:.3g}", b.amount)
                             : job.closed()    ? number(b.amount, 0, lang)
                                               : number(b.amount, b.amount < 10 ? 2 : 1, lang);
  const std::string fleet =
      a.fleet ? say(lang, "{} {} take {} GPUs.", "{} {} pedem {} GPUs.",
                    lang == Lang::kEn ? fmt::format("{:.4g}", job.target)
                                      : number(job.target, job.target < 10 ? 2 : 0, lang),
                    unit(r), a.fleet->gpus)
              : say(lang, "add {} to size a fleet.", "acrescente {} para dimensionar uma frota.",
                    job.closed() ? "--target-users" : "--target-rate");
  return say(lang, "one instance ({}) {} {} {}{} ({} output tokens/s); {}",
             "uma instância ({}) {} {} {}{} ({} tokens de saída/s); {}", shape_name(b),
             job.closed() ? tr(lang, "holds", "comporta") : tr(lang, "serves", "serve"), amount,
             unit(r), within, number(std::round(b.tokens_per_s), 0, lang), fleet);
}

void print_answer(const ServeReport& r) {
  const Lang lang = r.lang;
  const ServeAnswer& a = r.answer;
  emit("\n{}  {}\n", tr(lang, "answer", "resposta"), answer_text(r));
  if (r.price) {
    const Costs k = costs(r);
    const std::string& cur = r.price->currency;
    if (lang == Lang::kEn) {
      emit(
          "cost    at {:.4g} {} per GPU-hour: an instance {:.2f} {}/h, {:.3g} {} per million "
          "output tokens at that load{}\n",
          r.price->amount, cur, k.instance_hour, cur, k.per_million, cur,
          a.fleet ? fmt::format(", the fleet {} {} per month", grouped(std::llround(k.fleet_month)),
                                cur)
                  : "");
    } else {
      emit(
          "custo   a {} por GPU-hora: uma instância {}/h, {} por milhão de tokens de saída nessa "
          "carga{}\n",
          money_text(*r.price, lang), money_text(Money{k.instance_hour, cur}, lang),
          money_text(Money{k.per_million, cur}, lang),
          a.fleet ? ", a frota " + money_text(Money{k.fleet_month, cur}, lang) + " por mês" : "");
    }
  } else if (r.offer != nullptr) {
    emit("{}",
         say(lang, "cost    {} has no public price: give --price VALUE/h per GPU\n",
             "custo   {} não tem preço público: informe --price VALOR/h por GPU\n", r.offer->id));
  }
}

void write_percentiles(JsonWriter& w, const char* key, const Percentiles& p) {
  w.key(key)
      .begin_object()
      .field("mean_s", p.mean)
      .field("p50_s", p.p50)
      .field("p90_s", p.p90)
      .field("p99_s", p.p99)
      .field("max_s", p.max)
      .end_object();
}

void write_result(JsonWriter& w, const char* key, const ServingResult& r) {
  w.key(key).begin_object();
  w.field("requests", r.requests)
      .field("simulated_requests", r.simulated)
      .field("duration_s", r.duration.si())
      .field("output_tokens_per_s", r.output_tokens_per_s)
      .field("requests_per_s", r.requests_per_s)
      .field("filling", r.filling);
  if (r.filling) {
    w.field("run_output_tokens_per_s", r.run_tokens_per_s);
  }
  write_percentiles(w, "ttft", r.ttft);
  write_percentiles(w, "tpot", r.tpot);
  write_percentiles(w, "e2e", r.e2e);
  w.field("itl_mean_s", r.itl_mean)
      .field("mean_batch", r.mean_batch)
      .field("max_batch", r.max_batch)
      .field("iterations", r.iterations)
      .field("preemptions", r.preemptions)
      .end_object();
}

void write_sweep(JsonWriter& j, const ServeReport& r) {
  j.key("sweep").begin_array();
  for (const SweepPoint& p : r.answer.sweep) {
    j.begin_object().field(r.job.closed() ? "users" : "rate_per_s", p.load);
    j.field("overload", p.overload)
        .field("settled", p.settled)
        .field("queue_grows", p.growing)
        .field("knee", p.knee)
        .field("goodput_per_s", p.result.goodput_per_s);
    write_result(j, "simulation", p.result);
    j.end_object();
  }
  j.end_array();
}

void write_options(JsonWriter& j, const ServeReport& r) {
  const bool closed = r.job.closed();
  j.key("options").begin_array();
  for (const ServeOption& o : r.answer.options) {
    j.begin_object().field("tp", o.tp).field("pp", o.pp).field("feasible", o.serves());
    if (!o.serves()) {
      j.field("reason", o.reason.en).field("why_kind", std::string(why_name(o.why)));
    }
    if (o.model->feasible()) {
      j.field("weights_per_gpu_bytes", o.model->weights_per_gpu().si())
          .field("kv_cache_per_gpu_bytes", o.model->kv_budget_per_gpu().si())
          .field("kv_tokens", o.model->kv_tokens())
          .field("ttft_floor_s",
                 o.model->prefill_alone(r.input, r.job.workload.cached_tokens(r.input)).si())
          .field("tpot_floor_s", lone_decode_step(*o.model, r.job.workload, r.input).si());
    }
    if (o.serves()) {
      j.field(closed ? "capacity_users" : "capacity_requests_per_s", o.amount)
          .field(closed ? "capacity_users_per_gpu" : "capacity_requests_per_s_per_gpu", o.per_gpu)
          .field("offline_output_tokens_per_s", o.offline.output_tokens_per_s);
    }
    j.end_object();
  }
  j.end_array();
}

void write_disaggregation(JsonWriter& j, const ServeReport& r) {
  const Disaggregation& d = *r.answer.disaggregated;
  j.key("disaggregated")
      .begin_object()
      .field("gpus", d.gpus)
      .field("crosses_nodes", d.crosses_nodes);
  if (d.aggregated >= 0) {
    const ServeOption& agg = r.answer.options[static_cast<size_t>(d.aggregated)];
    j.key("aggregated")
        .begin_object()
        .field("tp", agg.tp)
        .field("replicas", d.aggregated_replicas)
        .field("requests_per_s", d.aggregated_rate)
        .end_object();
  } else {
    j.key("aggregated").null();
  }
  j.field("pairs_rate_matched", d.tried).field("splits_simulated", d.simulated);
  if (d.splits.empty()) {
    j.field("why", std::string(why_name(d.why))).field("reason", d.reason.en);
  }
  j.key("splits").begin_array();
  for (const PoolSplit& s : d.splits) {
    j.begin_object()
        .field("prefill_tp", s.prefill_tp)
        .field("prefill_replicas", s.prefill_replicas)
        .field("decode_tp", s.decode_tp)
        .field("decode_replicas", s.decode_replicas)
        .field("requests_per_s", s.capacity.max_rate_per_s)
        .field("kv_transfer_latency_s", s.transfer.latency.si())
        .field("kv_transfer_s_per_token", s.transfer.seconds_per_token)
        .field("kv_transfer_mean_s", s.mean_transfer.si());
    write_result(j, "at_capacity", s.capacity.at_max);
    j.end_object();
  }
  j.end_array();
  if (d.at_load) {
    write_result(j, "at_load", *d.at_load);
  }
  j.end_object();
}

void write_best(JsonWriter& j, const ServeReport& r) {
  const ServeAnswer& a = r.answer;
  const ServeOption& b = *a.best_option();
  const bool closed = r.job.closed();
  j.field("chosen_tp", b.tp)
      .field("pp", b.pp)
      .field("replicas", r.job.setup.replicas)
      .field("capacity_output_tokens_per_s", b.tokens_per_s);
  if (r.price) {
    const Costs k = costs(r);
    j.key("cost")
        .begin_object()
        .field("currency", r.price->currency)
        .field("per_gpu_hour", r.price->amount)
        .field("instance_per_hour", k.instance_hour)
        .field("per_million_output_tokens", k.per_million);
    if (a.fleet) {
      j.field("fleet_per_month", k.fleet_month);
    }
    j.end_object();
  }
  if (a.run) {
    write_result(j, "simulation", *a.run);
    j.field("simulation_overload", a.run_overload);
    if (a.settling) {
      // The run it was compared with, and where the two differ most (RunSettling).
      const RunSettling& s = *a.settling;
      j.key("settling")
          .begin_object()
          .field("settled", s.settled)
          .field("until_settled", s.doubling)
          .field("runs", s.runs)
          .field("queue_grows", s.growing)
          .field("tolerance", SteadyState{}.tolerance);
      j.key("widest_difference")
          .begin_object()
          .field("measure", s.widest.measure)
          .field(s.widest.latency ? "this_run_s" : "this_run_output_tokens_per_s", s.widest.first)
          .field(s.widest.latency ? "compared_run_s" : "compared_run_output_tokens_per_s",
                 s.widest.second)
          .field("apart", s.widest.apart)
          .end_object();
      write_result(j, "simulation", s.other);
      j.end_object();
    }
    if (a.slower > 0) {
      j.key("sensitivity").begin_object().field("time_scale", a.slower);
      j.field("overload", a.slower_overload);
      if (a.run_slower) {
        write_result(j, "simulation", *a.run_slower);
      }
      j.end_object();
    }
  }
  if (!a.sweep.empty()) {
    write_sweep(j, r);
  }
  if (a.fleet) {
    j.key("fleet")
        .begin_object()
        .field(closed ? "target_users" : "target_requests_per_s", r.job.target)
        .field("replicas", a.fleet->replicas)
        .field("gpus", a.fleet->gpus)
        .field(closed ? "users_per_replica" : "requests_per_s_per_replica", a.fleet->share)
        .field("output_tokens_per_s", a.fleet->output_tokens_per_s)
        .field("meets_objective", a.fleet->met)
        .field("settled", a.fleet->settled)
        .field("replicas_if_slower", a.fleet->replicas_if_slower);
    write_result(j, "replica_simulation", a.fleet->result);
    j.end_object();
  }
}

// Why a loaded run's figures are not its steady state: where it and the run it was compared
// with (RunSettling) differ most.
void print_unsettled(const ServeReport& r) {
  const Lang lang = r.lang;
  const RunSettling& s = *r.answer.settling;
  const RunDifference& d = s.widest;
  auto value = [&](double v) {
    return d.latency ? ms(v, lang)
                     : number(std::round(v), 0, lang) +
                           tr(lang, " output tokens/s", " tokens de saída/s");
  };
  const std::string other = number(static_cast<double>(s.other.simulated), 0, lang);
  const std::string apart = number(100 * d.apart, 1, lang);
  if (!s.doubling) {
    emit("{}",
         say(lang,
             "  not steady  twice the requests ({}) give {} {} against {} here, {} % apart "
             "(a steady run stays within {:.0f} %): the figures above depend on how long "
             "the run lasts (--requests); without --requests it runs until it settles\n",
             "  instável    o dobro de requisições ({}) dá {} {} contra {} aqui, {} % de "
             "diferença (em regime fica dentro de {:.0f} %): os números acima dependem da "
             "duração da simulação (--requests); sem --requests ela segue até estabilizar\n",
             other, d.measure, value(d.second), value(d.first), apart, 100 * kSearchRun.tolerance));
    return;
  }
  const std::string why =
      s.growing ? std::string(tr(lang,
                                 "its queue grows with the run: the load is past what the "
                                 "replicas sustain",
                                 "a fila cresce com a simulação: a carga passa do que as "
                                 "réplicas sustentam"))
                : std::string(tr(lang,
                                 "its queue is bounded but its percentiles converge slowly "
                                 "(rare long waits, or bursts of requests that start and end "
                                 "together)",
                                 "a fila é limitada, mas os percentis convergem devagar (esperas "
                                 "longas raras, ou rajadas de requisições que começam e terminam "
                                 "juntas)"));
  emit("{}",
       say(lang,
           "  not settled  after {} runs, {} requests give {} {} against {} for {}, {} % "
           "apart (a steady run stays within {:.0f} %): {}; the figures above are the "
           "longest run's\n",
           "  instável    após {} simulações, {} requisições dão {} {} contra {} com {}, {} "
           "% de diferença (em regime fica dentro de {:.0f} %): {}; os números acima são "
           "os da mais longa\n",
           s.runs, number(static_cast<double>(r.answer.run->simulated), 0, lang), d.measure,
           value(d.first), value(d.second), other, apart, 100 * SteadyState{}.tolerance, why));
}

}  // namespace

void print_serve_csv(const ServeReport& r) {
  const bool closed = r.job.closed();
  if (!r.answer.sweep.empty()) {
    // A sweep is the answer's table: one row per load, SI units.
    Table t({closed ? "users" : "rate_per_s", "output_tokens_per_s", "requests_per_s",
             "goodput_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "itl_mean_s",
             "e2e_p50_s", "e2e_p99_s", "mean_batch", "measured_requests", "overload", "settled",
             "queue_grows", "knee"});
    // An overloaded load's TTFT and E2E grow without bound: empty cells.
    auto cell = [](double v) {
      return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string();
    };
    for (const SweepPoint& p : r.answer.sweep) {
      const ServingResult& x = p.result;
      t.add({cell(p.load), cell(x.output_tokens_per_s), cell(x.requests_per_s),
             cell(x.goodput_per_s), cell(x.ttft.p50), cell(x.ttft.p99), cell(x.tpot.p50),
             cell(x.tpot.p99), cell(x.itl_mean), cell(x.e2e.p50), cell(x.e2e.p99),
             cell(x.mean_batch), fmt::format("{}", x.requests), p.overload ? "true" : "false",
             p.settled ? "true" : "false", p.growing ? "true" : "false",
             p.knee ? "true" : "false"});
    }
    emit("{}", t.csv());
    return;
  }
  Table t({"tp", "pp", "gpus", "serves", closed ? "capacity_users" : "capacity_requests_per_s",
           closed ? "capacity_users_per_gpu" : "capacity_requests_per_s_per_gpu",
           "output_tokens_per_s", "weights_per_gpu_bytes", "kv_cache_per_gpu_bytes", "best",
           "why_kind", "reason"});
  for (const ServeOption& o : r.answer.options) {
    const bool room = o.model->feasible();
    t.add({fmt::format("{}", o.tp), fmt::format("{}", o.pp), fmt::format("{}", o.gpus),
           o.serves() ? "true" : "false", o.serves() ? fmt::format("{:.6g}", o.amount) : "",
           o.serves() ? fmt::format("{:.6g}", o.per_gpu) : "",
           o.serves() ? fmt::format("{:.6g}", o.tokens_per_s) : "",
           room ? fmt::format("{:.0f}", o.model->weights_per_gpu().si()) : "",
           room ? fmt::format("{:.0f}", o.model->kv_budget_per_gpu().si()) : "",
           &o == r.answer.best_option() ? "true" : "false",
           o.serves() ? "" : std::string(why_name(o.why)), o.reason.en});
  }
  emit("{}", t.csv());
}

std::vector<Text> serve_caveats(const ServeReport& r) {
  std::vector<Text> out;
  if (!r.host_time_fitted) {
    out.push_back(
        {fmt::format("no published {} run informed its host time per iteration; the one fitted "
                     "to TensorRT-LLM runs stands in, so latencies may be low",
                     r.engine->name),
         fmt::format("nenhuma execução publicada do {} informou seu tempo de host por iteração; "
                     "o ajustado a execuções do TensorRT-LLM o substitui, então as latências "
                     "podem sair baixas",
                     r.engine->name)});
  }
  out.insert(out.end(), r.caveats.begin(), r.caveats.end());
  return out;
}

std::string serve_html(const ServeReport& r) {
  const Lang lang = r.lang;
  const ServeJob& job = r.job;
  const ServeAnswer& a = r.answer;
  const bool closed = job.closed();
  HtmlReport h(fmt::format("gpuplan serve: {} / {}", r.model, r.gpu->id), lang);
  h.paragraph(say(lang, "serve {} on {}, {} weights, {} KV cache, {}",
                  "servir {} em {}, pesos {}, cache KV {}, {}", r.model, r.gpu->id,
                  r.weights.in(lang), precision_name(job.base.kv_precision), r.per_request));
  const ServeOption* best = a.best_option();
  if (best == nullptr) {
    h.verdict(fmt::format("{} {} {}.", r.model,
                          tr(lang, "cannot serve this on", "não serve isto em"), r.gpu->id));
  } else {
    h.verdict(answer_text(r));
    // Latency against load with the objective: the job's sweep (on its replicas), or one
    // instance of the best shape up to past its capacity.
    const bool swept = !a.sweep.empty();
    const double replicas = swept ? static_cast<double>(job.setup.replicas) : 1.0;
    std::vector<LoadPoint> points = a.curve;
    if (swept) {
      points.clear();
      for (const SweepPoint& p : a.sweep) {
        points.push_back(LoadPoint{p.load, p.result});
      }
    }
    const std::string load_axis =
        swept    ? (closed ? tr(lang, "concurrent users", "usuários simultâneos")
                           : tr(lang, "requests/s", "requisições/s"))
        : closed ? tr(lang, "concurrent users per instance", "usuários simultâneos por instância")
                 : tr(lang, "requests/s per instance", "requisições/s por instância");
    auto curve = [&](const char* en, const char* pt, auto pick,
                     const std::optional<Seconds>& bound) {
      Series p99{"p99", {}}, p50{"p50", {}};
      for (const LoadPoint& p : points) {
        // Not drawn: an empty run, and an overloaded load's TTFT, which grows without bound.
        if (p.result.requests == 0 || !std::isfinite(pick(p.result).p99))
          continue;
        p99.points.emplace_back(p.load, pick(p.result).p99 * 1e3);
        p50.points.emplace_back(p.load, pick(p.result).p50 * 1e3);
      }
      std::vector<Reference> refs;
      if (bound) {
        refs.push_back(Reference{fmt::format("{} {} ms", tr(lang, "objective", "objetivo"),
                                             number(bound->si() * 1e3, 0, lang)),
                                 bound->si() * 1e3, bound->si() * 1e3});
      }
      refs.push_back(Reference{tr(lang, "capacity", "capacidade"), best->amount * replicas,
                               best->amount * replicas, true});
      h.figure(line_chart_svg({p99, p50}, Axis{load_axis, false},
                              Axis{std::string(tr(lang, en, pt)) + " (ms)", false}, refs, lang),
               fmt::format(
                   "{}, {}: p50 {} p99 {}; {} {}.", tr(lang, en, pt), shape_name(*best),
                   tr(lang, "and", "e"),
                   tr(lang, "against the load on one instance", "contra a carga em uma instância"),
                   job.slo.any()
                       ? tr(lang, "capacity within the objective", "capacidade dentro do objetivo")
                       : tr(lang, "most it serves", "o máximo que serve"),
                   number(best->amount, closed ? 0 : 2, lang) + " " +
                       (closed ? tr(lang, "users", "usuários")
                               : tr(lang, "requests/s", "requisições/s"))));
    };
    curve(
        "time per output token", "tempo por token de saída",
        [](const ServingResult& x) -> const Percentiles& { return x.tpot; }, job.slo.tpot_p99);
    curve(
        "time to first token", "tempo até o primeiro token",
        [](const ServingResult& x) -> const Percentiles& { return x.ttft; }, job.slo.ttft_p99);
    if (swept) {
      h.heading(tr(lang, "Sweep", "Varredura"));
      h.table(sweep_table(r));
    }
  }
  if (a.disaggregated) {
    h.heading(tr(lang, "Disaggregated prefill and decode", "Prefill e decode desagregados"));
    h.paragraph(split_verdict(r) + ".");
    if (!a.disaggregated->splits.empty()) {
      h.table(split_table(r));
    }
  }
  // Memory per GPU of every shape that has room for the weights.
  std::vector<StackedRow> rows;
  for (const ServeOption& o : a.options) {
    if (!o.model->feasible())
      continue;
    const InferenceModel& m = *o.model;
    const double usable = m.usable_per_gpu() / GiB(1);
    const double weights = m.weights_per_gpu() / GiB(1);
    const double kv = m.kv_budget_per_gpu() / GiB(1);
    rows.push_back(StackedRow{shape_name(o),
                              {Segment{tr(lang, "weights", "pesos"), weights},
                               Segment{tr(lang, "KV cache", "cache KV"), std::max(0.0, kv)},
                               Segment{tr(lang, "activations and runtime", "ativações e runtime"),
                                       std::max(0.0, usable - weights - std::max(0.0, kv))}},
                              usable,
                              fmt::format("{} {}", tr(lang, "usable", "utilizável"),
                                          gib_text(m.usable_per_gpu(), lang))});
  }
  if (!rows.empty()) {
    h.figure(stacked_bars_svg(rows, "GiB", lang),
             tr(lang,
                "Memory per GPU of each shape: the KV cache takes what the weights and the "
                "runtime leave of the usable memory.",
                "Memória por GPU de cada formato: o cache KV ocupa o que os pesos e o runtime "
                "deixam da memória utilizável."));
  }
  h.heading(tr(lang, "Instance shapes", "Formatos de instância"));
  Table t(
      {"tp x pp", tr(lang, "weights/GPU", "pesos/GPU"), tr(lang, "KV cache/GPU", "cache KV/GPU"),
       closed ? tr(lang, "users", "usuários") : tr(lang, "req/s", "req/s"),
       tr(lang, "per GPU", "por GPU"), tr(lang, "output tok/s", "tokens de saída/s"), ""},
      {false, true, true, true, true, true, false});
  for (const ServeOption& o : a.options) {
    if (!o.serves() || !o.model->feasible()) {
      t.add({shape_name(o), "-", "-", "-", "-", "-", o.reason.in(lang)});
      continue;
    }
    t.add({shape_name(o), gib_text(o.model->weights_per_gpu(), lang),
           gib_text(o.model->kv_budget_per_gpu(), lang), number(o.amount, closed ? 0 : 2, lang),
           number(o.per_gpu, closed ? 1 : 2, lang), number(std::round(o.tokens_per_s), 0, lang),
           &o == best ? tr(lang, "best per GPU", "melhor por GPU") : ""});
  }
  h.table(t);
  for (const Text& c : serve_caveats(r)) {
    h.paragraph(tr(lang, "caveat: ", "ressalva: ") + c.in(lang) + ".");
  }
  return h.str();
}

void print_serve_text(const ServeReport& r) {
  const Lang lang = r.lang;
  const ServeJob& job = r.job;
  const ServeAnswer& a = r.answer;
  emit("{}", say(lang, "serve {} on {}, {} weights, {} KV cache, {}\n\n",
                 "servir {} em {}, pesos {}, cache KV {}, {}\n\n", r.model, r.gpu->id,
                 r.weights.in(lang), precision_name(job.base.kv_precision), r.per_request));
  if (!r.weights_note.empty()) {
    emit("{}: {}\n\n", tr(lang, "note", "nota"), r.weights_note.in(lang));
  }
  print_options(r);
  const ServeOption* best = a.best_option();
  if (best == nullptr) {
    if (a.disaggregated) {
      print_disaggregation(r);
    }
    emit("{}", say(lang, "\nanswer  {} cannot serve this on {}.\n",
                   "\nresposta  {} não serve isto em {}.\n", r.model, r.gpu->id));
    return;
  }
  if (a.run) {
    // A run that settled says so: how many requests it took is the simulation's, not the job's.
    const bool doubled = a.settling && a.settling->doubling && a.settling->settled;
    emit("{}", say(lang, "\nsimulation  {}, {} replica(s) ({}), {}, {} requests{}{}\n",
                   "\nsimulação  {}, {} réplica(s) ({}), {}, {} requisições{}{}\n",
                   shape_name(*best), job.setup.replicas, balancer_name(job.setup.balancer), r.load,
                   number(static_cast<double>(a.requests), 0, lang),
                   job.setup.kv_policy == KvPolicy::kPaged
                       ? tr(lang, ", paged KV cache", ", cache KV paginado")
                       : "",
                   doubled ? say(lang,
                                 " (runs doubling from {} until two agree within {:.0f} %: {} "
                                 "runs)",
                                 " (simulações dobrando desde {} até duas concordarem em {:.0f} "
                                 "%: {} simulações)",
                                 number(static_cast<double>(SteadyState{}.first), 0, lang),
                                 100 * SteadyState{}.tolerance, a.settling->runs)
                           : std::string()));
    print_result(*a.run, lang);
    if (a.settling && !a.settling->settled) {
      print_unsettled(r);
    }
    if (a.run_overload) {
      emit("{}", say(lang,
                     "  overload    the arrivals exceed what the replicas complete with every "
                     "request queued at once ({} requests/s): the queue, and TTFT, grow as long as "
                     "the run lasts\n",
                     "  sobrecarga  as chegadas passam do que as réplicas concluem com todas as "
                     "requisições na fila ({} requisições/s): a fila, e o TTFT, crescem enquanto "
                     "durar a simulação\n",
                     number(offline_ceiling(*best, job.setup.replicas), 2, lang)));
    }
    if (job.slo.any()) {
      Text why;
      const bool met = meets_slo(*a.run, job.slo, &why);
      emit("{}",
           say(lang, "  objective   {}: {}\n", "  objetivo    {}: {}\n", slo_text(job.slo, lang),
               met ? std::string(tr(lang, "met", "cumprido"))
                   : tr(lang, "missed, ", "perdido, ") + why.in(lang)));
    }
    print_sensitivity(r);
  }
  if (!a.sweep.empty()) {
    print_sweep(r);
  }
  if (a.fleet) {
    const ServeFleet& f = *a.fleet;
    const std::string target = lang == Lang::kEn
                                   ? fmt::format("{:.4g}", job.target)
                                   : number(job.target, job.target < 10 ? 2 : 0, lang);
    emit("{}",
         say(lang, "\nfleet  {} {} within {} need {} replicas of {} = {} x {}{}\n",
             "\nfrota  {} {} dentro de {} pedem {} réplicas de {} = {} x {}{}\n", target, unit(r),
             slo_text(job.slo, lang), f.replicas, shape_name(*best), f.gpus, r.gpu->id,
             f.met ? ""
                   : tr(lang, " (not met even with these: the objective is too tight)",
                        " (não cumprido nem com estas: o objetivo é apertado demais)")));
    const std::string share =
        job.closed() ? say(lang, "{} users", "{} usuários", number(std::round(f.share), 0, lang))
                     : say(lang, "{} requests/s", "{} requisições/s",
                           lang == Lang::kEn ? fmt::format("{:.4g}", f.share)
                                             : number(f.share, f.share < 10 ? 2 : 1, lang));
    emit("{}", say(lang,
                   "  each replica simulated at its share of the load, {}; the fleet gives {} "
                   "output tokens/s\n",
                   "  cada réplica simulada com a sua parte da carga, {}; a frota dá {} tokens de "
                   "saída/s\n",
                   share, number(std::round(f.output_tokens_per_s), 0, lang)));
    if (!f.settled) {
      emit("{}", say(lang,
                     "  not settled: runs of up to {} requests still disagreed by more than {} %; "
                     "the figures below are the longest run's\n",
                     "  não estabilizou: simulações de até {} requisições ainda diferiam mais de "
                     "{} %; os números abaixo são os da mais longa\n",
                     number(static_cast<double>(kFleetRun.most), 0, lang),
                     number(kFleetRun.tolerance * 100, 0, lang)));
    }
    print_result(f.result, lang);
    if (f.slower > 0) {
      const double pct = (f.slower - 1.0) * 100.0;
      if (f.replicas_if_slower > 0) {
        emit("{}", say(lang,
                       "  were every iteration {:.0f} % slower than modelled (the model's typical "
                       "error out of sample), {} replicas ({} GPUs) would meet it\n",
                       "  se cada iteração fosse {:.0f} % mais lenta que o modelo (o erro típico "
                       "dele fora da amostra), {} réplicas ({} GPUs) o cumpririam\n",
                       pct, f.replicas_if_slower, f.replicas_if_slower * best->gpus));
      } else {
        emit("{}", say(lang,
                       "  were every iteration {:.0f} % slower than modelled, not even {} "
                       "replicas would meet it\n",
                       "  se cada iteração fosse {:.0f} % mais lenta que o modelo, nem {} réplicas "
                       "o cumpririam\n",
                       pct, f.replicas + kFleetTries - 1));
      }
    }
  }
  if (a.disaggregated) {
    print_disaggregation(r);
  }
  print_answer(r);
}

void print_serve_json(const ServeReport& r) {
  const ServeJob& job = r.job;
  const Workload& w = job.workload;
  JsonWriter j;
  j.begin_object()
      .field("model", r.model)
      .field("gpu", r.gpu->id)
      .field("precision", std::string(precision_name(job.base.precision)))
      .field("weights", r.weights.en)
      .field("kv_precision", std::string(precision_name(job.base.kv_precision)))
      .field("input_tokens", r.input)
      .field("output_tokens", r.output)
      .field("load", r.load_kind)
      .field("rate_per_s", w.rate_per_s)
      .field("static_batch", job.setup.batching == Batching::kStatic ? job.setup.static_batch : 0)
      .field("users", w.users)
      .field("think_s", w.think_time.si())
      .field("prefix_hit", w.prefix_hit)
      .field("beams", w.beams)
      .field("engine", r.engine->id)
      .field("engine_host_time_fitted", r.host_time_fitted);
  if (r.engine_release.empty()) {
    j.key("engine_release").null();  // the engine's current release
  } else {
    j.field("engine_release", r.engine_release);
  }
  j.key("estimated_rates").begin_array();
  for (const std::string& rate :
       estimated_rates(*r.gpu, job.base.precision, AttentionKernels::kNative))
    j.value(rate);
  j.end_array();
  j.key("serving_fit_architectures").begin_array();
  for (const std::string& arch : r.fit_architectures)
    j.value(arch);
  j.end_array()
      .field("serving_fit_covers_gpu", r.fit_covers_gpu)
      .field("kv_policy", std::string(kv_policy_name(job.setup.kv_policy)))
      .field("scheduling", std::string(prompt_scheduling_name(r.engine->scheduling)))
      .field("requests", r.answer.requests);
  if (job.slo.ttft_p99) {
    j.field("slo_ttft_p99_s", job.slo.ttft_p99->si());
  }
  if (job.slo.tpot_p99) {
    j.field("slo_tpot_p99_s", job.slo.tpot_p99->si());
  }
  write_options(j, r);
  if (r.answer.best_option() != nullptr) {
    write_best(j, r);
  } else {
    j.key("chosen_tp").null();
  }
  if (r.answer.disaggregated) {
    write_disaggregation(j, r);
  }
  j.end_object();
  emit("{}", j.str());
}

}  // namespace gpuplan::cli
