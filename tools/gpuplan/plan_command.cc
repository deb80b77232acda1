// gpuplan plan [JOB.toml] [--model ... --task ... --tokens ... --deadline ...]: the job against
// every offer in the catalog, ranked, with a plain answer and a "why not" for every rejection.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <thread>

#include "command.h"
#include "flags.h"
#include "gpuplan/advisor.h"
#include "html.h"
#include "quantity_flags.h"
#include "report.h"
#include "train_report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "plan";

// "2 B", "1 T", "300 B" tokens.
std::string token_count(double n) {
  if (n >= 1e12)
    return fmt::format("{:.3g} T", n / 1e12);
  if (n >= 1e9)
    return fmt::format("{:.3g} B", n / 1e9);
  if (n >= 1e6)
    return fmt::format("{:.3g} M", n / 1e6);
  return fmt::format("{:.0f}", n);
}

std::string describe(const PlanJob& j, Lang lang = Lang::kEn) {
  std::string s;
  if (j.kind == JobKind::kServe) {
    s = j.users > 0
            ? say(lang, "serve {} to {} concurrent users, {} input + {} output tokens each",
                  "servir {} a {} usuários simultâneos, {} tokens de entrada + {} de saída cada",
                  j.model, number(static_cast<double>(j.users), 0, lang), j.input_tokens,
                  j.output_tokens)
            : say(lang, "serve {} at {} requests/s, {} input + {} output tokens each",
                  "servir {} a {} requisições/s, {} tokens de entrada + {} de saída cada", j.model,
                  lang == Lang::kEn ? fmt::format("{:g}", j.rate_per_s)
                                    : number(j.rate_per_s, j.rate_per_s < 10 ? 2 : 1, lang),
                  j.input_tokens, j.output_tokens);
    if (!j.engine.empty())
      s += say(lang, ", on {}", ", no {}", j.engine);
    if (j.prefix_hit > 0)
      s += say(lang, ", {} % of prompt tokens from the prefix cache",
               ", {} % dos tokens do prompt vindos do cache de prefixos",
               number(j.prefix_hit * 100, 0, lang));
    if (j.latency_target) {
      const double ms = j.latency_target->si() * 1e3;  // whole ms, and digits below 10 ms
      s += say(lang, ", at most {} ms per output token", ", no máximo {} ms por token de saída",
               number(ms,
                      ms >= 10  ? 0
                      : ms >= 1 ? 1
                                : 3,
                      lang));
    }
  } else {
    const char* what =
        j.kind == JobKind::kPretrain   ? tr(lang, "pre-train", "pré-treinar")
        : j.kind == JobKind::kFinetune ? tr(lang, "fully fine-tune", "ajustar por completo")
        : j.kind == JobKind::kLora     ? tr(lang, "LoRA fine-tune", "ajustar com LoRA")
                                       : tr(lang, "QLoRA fine-tune", "ajustar com QLoRA");
    s = say(lang, "{} {} on {} tokens (sequences of {})", "{} {} com {} tokens (sequências de {})",
            what, j.model,
            lang == Lang::kEn ? token_count(j.tokens) : number(j.tokens / 1e9, 1, lang) + " bi",
            j.seq);
    if (j.deadline)
      s += say(lang, ", within {}", ", em até {}", duration_text(*j.deadline, lang));
  }
  if (!j.residency.empty())
    s += say(lang, ", data kept in {}", ", dados mantidos em {}", fmt::join(j.residency, ", "));
  return s;
}

std::vector<std::string> in(const std::vector<Text>& texts, Lang lang) {
  std::vector<std::string> out;
  for (const Text& t : texts)
    out.push_back(t.in(lang));
  return out;
}

// The ranked offers as the text and HTML reports show them.
Table ranked_table(const PlanJob& job, const Plan& plan, Lang lang) {
  const bool serving = job.kind == JobKind::kServe;
  Table t =
      serving
          ? Table({tr(lang, "rank", "posição"), tr(lang, "offer", "oferta"),
                   tr(lang, "nodes", "nós"), tr(lang, "sites", "locais"), "GPUs",
                   tr(lang, "layout", "divisão"), tr(lang, "p99 ms/token", "p99 ms/token"),
                   tr(lang, "output tok/s", "tokens de saída/s"), tr(lang, "per month", "por mês")},
                  {true, false, true, false, true, false, true, true, true})
          : Table({tr(lang, "rank", "posição"), tr(lang, "offer", "oferta"),
                   tr(lang, "nodes", "nós"), "GPUs", tr(lang, "layout", "divisão"),
                   tr(lang, "time", "tempo"), "MFU (%)", tr(lang, "scaling (%)", "escala (%)"),
                   tr(lang, "energy (MWh)", "energia (MWh)"), tr(lang, "cost", "custo")},
                  {true, false, true, true, false, true, true, true, true, true});
  for (size_t i = 0; i < plan.ranked.size(); ++i) {
    const PlanCandidate& p = plan.ranked[i];
    if (serving) {
      // GPUs in use, and the nodes' whole count where replicas leave some idle.
      const std::string gpus =
          p.gpus_rented > p.gpus
              ? fmt::format("{} {} {}", p.gpus, tr(lang, "of", "de"), p.gpus_rented)
              : fmt::format("{}", p.gpus);
      t.add({fmt::format("{}", i + 1), p.offer->id, fmt::format("{}", p.nodes), sites_text(p.sites),
             gpus, p.layout.in(lang), number(p.tpot.si() * 1e3, 1, lang),
             number(std::round(p.tokens_per_s), 0, lang), money_text(p.cost, lang)});
    } else {
      t.add({fmt::format("{}", i + 1), p.offer->id, fmt::format("{}", p.nodes),
             fmt::format("{}", p.gpus), train_layout_text(p.training->job, lang),
             duration_text(p.time, lang), number(p.mfu * 100, 1, lang),
             number(p.scaling_efficiency, 0, lang), number(p.energy_joules / 3.6e9, 1, lang),
             money_text(p.cost, lang)});
    }
  }
  return t;
}

// The ranked offers as the text report shows them, cell by cell in one language, so that a page
// shows what the CLI shows without formatting numbers, money or times again.
void write_table(JsonWriter& w, const Table& t) {
  const auto& rows = t.rows();  // the header first
  w.key("table").begin_object().key("header").begin_array();
  for (const std::string& h : rows.front())
    w.value(h);
  w.end_array().key("right").begin_array();
  for (size_t i = 0; i < rows.front().size(); ++i)
    w.value(t.right(i));
  w.end_array().key("rows").begin_array();
  for (size_t r = 1; r < rows.size(); ++r) {
    w.begin_array();
    for (const std::string& cell : rows[r])
      w.value(cell);
    w.end_array();
  }
  w.end_array().end_object();
}

void print_json(const PlanJob& job, const Plan& plan) {
  JsonWriter w;
  w.begin_object().field("job", describe(job)).field("headline", plan.headline);

  auto candidate = [&](const PlanCandidate& p) {
    w.begin_object().field("offer", p.offer->id).field("feasible", p.feasible);
    if (p.feasible) {
      w.field("nodes", p.nodes).field("gpus", p.gpus).field("gpus_rented", p.gpus_rented);
      if (p.training) {
        w.field("layout", train_layout_text(p.training->job))
            .field("time_s", p.time.si())
            .field("tokens_per_s", p.tokens_per_s)
            .field("mfu", p.mfu)
            .field("scaling_efficiency_pct", p.scaling_efficiency)
            .field("meets_deadline", p.meets_deadline);
      } else {
        w.field("layout", p.layout.en)
            .field("replicas", p.replicas)
            .field("replicas_if_slower", p.replicas_if_slower)
            .field("users_per_replica", p.batch_per_replica);
        w.key("sites").begin_array();
        for (const SiteNodes& s : p.sites)
          w.begin_object().field("site", s.site).field("nodes", s.nodes).end_object();
        w.end_array().field("tpot_p99_s", p.tpot.si()).field("output_tokens_per_s", p.tokens_per_s);
      }
      w.field("energy_at_tdp_j", p.energy_joules);
      if (p.cost) {
        w.field(job.kind == JobKind::kServe ? "cost_per_month" : "cost", p.cost->amount)
            .field("currency", p.cost->currency);
      } else {
        w.key("cost").null();
      }
    }
    if (!p.why_not.empty())
      w.field("why_not", p.why_not.en).field("why_kind", std::string(why_name(p.why)));
    if (!p.price_note.empty())
      w.field("price_note", p.price_note.en);
    w.end_object();
  };
  w.key("ranked").begin_array();
  for (const PlanCandidate& p : plan.ranked)
    candidate(p);
  w.end_array().key("rejected").begin_array();
  for (const PlanCandidate& p : plan.rejected)
    candidate(p);
  w.end_array();
  write_texts(w, "lora_alternative", plan.lora_alternative);
  write_texts(w, "notes", plan.notes);
  write_table(w, ranked_table(job, plan, Lang::kEn));
  // The sentences above for a Portuguese reader, so that a front end can switch language
  // without asking again; keys and numbers are the same in every language.
  w.key("translations").begin_object().key("pt-BR").begin_object();
  w.field("headline", plan_headline(plan, job, Lang::kPt)).key("why_not").begin_object();
  for (const auto* list : {&plan.ranked, &plan.rejected}) {
    for (const PlanCandidate& p : *list) {
      if (!p.why_not.empty())
        w.field(p.offer->id, p.why_not.in(Lang::kPt));
    }
  }
  w.end_object();
  write_texts(w, "notes", plan.notes, Lang::kPt);
  write_texts(w, "lora_alternative", plan.lora_alternative, Lang::kPt);
  write_table(w, ranked_table(job, plan, Lang::kPt));
  w.end_object().end_object().end_object();
  emit("{}", w.str());
}

std::string serving_note(Lang lang) {
  return tr(lang,
            "serving: each offer is sized as 'gpuplan serve --offer' sizes it: the instance "
            "shape that serves most per GPU within the p99 time per output token, simulated with "
            "continuous batching, and the replicas the load needs",
            "serviço: cada oferta é dimensionada como 'gpuplan serve --offer' a dimensiona: o "
            "formato de instância que mais serve por GPU dentro do tempo p99 por token de saída, "
            "simulado com batching contínuo, e as réplicas que a carga pede");
}

void print_text(const PlanJob& job, const Plan& plan, Lang lang) {
  emit("{} {}\n", tr(lang, "job     ", "trabalho"), describe(job, lang));
  emit("{} {}\n", tr(lang, "answer  ", "resposta"), plan_headline(plan, job, lang));
  const bool serving = job.kind == JobKind::kServe;
  if (!plan.ranked.empty()) {
    emit("\n{}", ranked_table(job, plan, lang).str());
  }
  if (!plan.rejected.empty()) {
    emit("\n{}:\n", tr(lang, "why not", "por que não"));
    for (const PlanCandidate& p : plan.rejected) {
      emit("  {:<22} {}\n", p.offer->id, p.why_not.in(lang));
    }
  }
  if (!plan.lora_alternative.empty()) {
    emit("\n{}: {}\n",
         tr(lang, "A LoRA fine-tune (--task lora) would run on",
            "Um ajuste fino LoRA (--task lora) rodaria em"),
         fmt::join(in(plan.lora_alternative, lang), ", "));
  }
  if (!plan.notes.empty() || serving) {
    emit("\n{}:\n", tr(lang, "notes", "notas"));
    for (const Text& n : plan.notes)
      emit("  - {}\n", n.in(lang));
  }
  if (serving) {
    emit("  - {}\n", serving_note(lang));
  }
}

// Every offer, ranked first, then rejected, the numbers as programs read them.
void print_csv(const PlanJob& job, const Plan& plan) {
  const bool serving = job.kind == JobKind::kServe;
  std::vector<std::string> head = {"rank",
                                   "offer",
                                   "feasible",
                                   "nodes",
                                   "gpus",
                                   "layout",
                                   serving ? "tpot_p99_s" : "time_s",
                                   serving ? "output_tokens_per_s" : "tokens_per_s",
                                   serving ? "replicas" : "mfu",
                                   serving ? "cost_per_month" : "cost",
                                   "currency",
                                   "why_kind",
                                   "why_not"};
  if (serving) {
    head.insert(head.begin() + 4, "sites");        // "SP1: 3, SP2: 2"
    head.insert(head.begin() + 6, "gpus_rented");  // nodes x GPUs per node
  }
  Table t(head);
  auto add = [&](const PlanCandidate& p, const std::string& rank) {
    std::vector<std::string> row;
    if (!p.feasible) {
      row = {rank,        p.offer->id, "false", "", "", "",
             "",          "",          "",      "", "", std::string(why_name(p.why)),
             p.why_not.en};
    } else {
      row = {rank,
             p.offer->id,
             "true",
             fmt::format("{}", p.nodes),
             fmt::format("{}", p.gpus),
             serving ? p.layout.en : train_layout_text(p.training->job),
             fmt::format("{:.6g}", serving ? p.tpot.si() : p.time.si()),
             fmt::format("{:.6g}", p.tokens_per_s),
             serving ? fmt::format("{}", p.replicas) : fmt::format("{:.4g}", p.mfu),
             p.cost ? fmt::format("{:.2f}", p.cost->amount) : "",
             p.cost ? p.cost->currency : "",
             p.why_not.empty() ? "" : std::string(why_name(p.why)),
             p.why_not.en};
    }
    if (serving) {
      row.insert(row.begin() + 4, sites_text(p.sites));
      row.insert(row.begin() + 6, p.feasible ? fmt::format("{}", p.gpus_rented) : "");
    }
    t.add(row);
  };
  for (size_t i = 0; i < plan.ranked.size(); ++i)
    add(plan.ranked[i], fmt::format("{}", i + 1));
  for (const PlanCandidate& p : plan.rejected)
    add(p, "");
  emit("{}", t.csv());
}

std::string html_report(const PlanJob& job, const Plan& plan, Lang lang) {
  const bool serving = job.kind == JobKind::kServe;
  HtmlReport h(fmt::format("gpuplan plan: {}", job.model), lang);
  h.paragraph(describe(job, lang));
  h.verdict(plan_headline(plan, job, lang));
  if (!plan.ranked.empty()) {
    // Training: the time to finish, which every ranked offer has; serving: the GPUs. The cost,
    // which an offer without a public price lacks, is written at the bar's end.
    std::vector<Bar> bars;
    for (const PlanCandidate& p : plan.ranked) {
      std::string note = money_text(p.cost, lang);
      if (serving)
        note = number(p.tpot.si() * 1e3, 0, lang) + " ms p99, " + note;
      bars.push_back(
          Bar{p.offer->id, serving ? static_cast<double>(p.gpus) : p.time.si() / 3600, note});
    }
    h.figure(bars_svg(bars,
                      serving ? std::string("GPUs")
                              : tr(lang, "time to finish (h)", "tempo até terminar (h)"),
                      lang),
             serving ? tr(lang, "The ranked offers: GPUs needed, p99 time per token and cost.",
                          "As ofertas classificadas: GPUs necessárias, tempo p99 por token e "
                          "custo.")
                     : tr(lang, "The ranked offers: time to finish and cost.",
                          "As ofertas classificadas: tempo até terminar e custo."));
    h.heading(tr(lang, "Ranked offers", "Ofertas classificadas"));
    h.table(ranked_table(job, plan, lang));
  }
  if (!plan.rejected.empty()) {
    h.heading(tr(lang, "Why not the others", "Por que não as outras"));
    Table t({tr(lang, "offer", "oferta"), tr(lang, "reason", "motivo")});
    for (const PlanCandidate& p : plan.rejected)
      t.add({p.offer->id, p.why_not.in(lang)});
    h.table(t);
  }
  if (!plan.lora_alternative.empty()) {
    h.paragraph(fmt::format("{}: {}",
                            tr(lang, "A LoRA fine-tune (--task lora) would run on",
                               "Um ajuste fino LoRA (--task lora) rodaria em"),
                            fmt::join(in(plan.lora_alternative, lang), ", ")));
  }
  std::vector<std::string> notes = in(plan.notes, lang);
  if (serving)
    notes.push_back(serving_note(lang));
  if (!notes.empty()) {
    h.heading(tr(lang, "Notes", "Notas"));
    h.list(notes);
  }
  return h.str();
}

}  // namespace

int run_plan(const std::vector<std::string>& args) {
  CLI::App app("The advisor: a job against every offer in the catalog, ranked, with the reasons.",
               args.front());
  std::string file, model, kind, deadline, budget, latency, currency, egress, data, engine;
  double rate = 0, prefix_hit = 0;
  std::vector<std::string> residency, offers, prices;
  double tokens = -1, usd_rate = 0;
  int64_t seq = 0, global_batch = 0, users = 0, input_tokens = 0, output_tokens = 0;
  int64_t max_nodes = 0;
  int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  bool json = false;
  app.add_option("job", file, "job file (TOML; see examples/plan-*.toml)");
  app.add_option("--model", model, "catalog model id or path to a config.json");
  app.add_option("--task", kind, names_help(job_kind_names()));
  app.add_option("--tokens", tokens, "training tokens, e.g. 2e9")->check(rule(fields::kTokens));
  app.add_option("--seq", seq, "training sequence length (default 4096)")
      ->check(rule(fields::kSeq));
  std::string framework;
  app.add_option("--framework", framework,
                 "training software, ID or ID@YEAR (default megatron-lm as of today)");
  app.add_option("--global-batch", global_batch,
                 "sequences per step (default 1024 pre-training, 128 otherwise)")
      ->check(rule(fields::kGlobalBatch));
  app.add_option("--deadline", deadline, "time allowed, e.g. '7 d' or '36 h'");
  app.add_option("--budget", budget, "most you can spend, e.g. '50000 BRL'");
  app.add_option("--users", users, "serve: concurrent users")->check(rule(fields::kUsers));
  app.add_option("--rate", rate,
                 "serve: requests per second (instead of --users; needs --latency-target)")
      ->check(rule(fields::kRate));
  app.add_option("--input-tokens", input_tokens, "serve: prompt tokens per request")
      ->check(rule(fields::kRequestTokens));
  app.add_option("--output-tokens", output_tokens, "serve: generated tokens per request")
      ->check(rule(fields::kRequestTokens));
  app.add_option("--engine", engine,
                 "serve: serving engine whose defaults apply, an id of gpuplan catalog list "
                 "engines, or ID@RELEASE for an older release's behaviour (default: the one "
                 "data/params/inference.toml names)");
  app.add_option("--prefix-hit", prefix_hit,
                 "serve: share of prompt tokens found in the prefix cache, 0 to 1 (default 0)")
      ->check(rule(fields::kPrefixHit));
  app.add_option("--latency-target", latency, "serve: most time per output token, e.g. '50 ms'");
  app.add_option("--residency", residency, "country codes the data must stay in, e.g. BR")
      ->delimiter(',');
  app.add_option("--offers", offers, "consider only these offers")->delimiter(',');
  app.add_option("--currency", currency, "report costs in this currency (e.g. BRL)");
  app.add_option("--usd-rate", usd_rate, "units of --currency per USD, e.g. 5.4")
      ->check(rule(fields::kUsdRate));
  app.add_option("--egress", egress, "data that leaves the provider, e.g. '500 GB'");
  app.add_option(
      "--price", prices,
      "OFFER=VALUE/h for an offer without a public price, e.g. eveo-hgx-8xh200='250 BRL/h'");
  app.add_option("--max-nodes", max_nodes,
                 "most nodes per offer: a training cluster or a serving fleet (default 256)")
      ->check(rule(fields::kMaxNodes));
  app.add_option("--threads", threads, "worker threads for the layout search")
      ->check(rule(fields::kThreads));
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
  Result<Catalog> catalog = load_catalog_with_profile(data, profile, json);
  if (!catalog)
    return report_error(kName, catalog.error());
  PlanJob job;
  if (!file.empty() && catalog->model(file)) {
    // Every other command takes the model first; plan takes a job file there.
    return report_error(kName,
                        Error{file, "is a model, not a job file",
                              fmt::format("run 'gpuplan plan --model {} --task "
                                          "pretrain|finetune|lora|qlora|serve ...'",
                                          file)},
                        kExitUsage);
  }
  if (!file.empty()) {
    Result<PlanJob> j = load_plan_job(file);
    if (!j)
      return report_error(kName, j.error());
    job = *j;
  } else if (model.empty() || kind.empty()) {
    return report_error(kName,
                        Error{"", "give a job file, or --model and --task",
                              "e.g. gpuplan plan --model llama-3.1-70b --task finetune --tokens "
                              "2e9 --deadline '7 d'"},
                        kExitUsage);
  }
  auto usage = [&](const char* flag, const std::string& what, const std::string& hint) {
    return report_error(kName, Error{flag, what, hint}, kExitUsage);
  };
  if (!model.empty())
    job.model = model;
  if (!kind.empty()) {
    Result<JobKind> k = parse_job_kind(kind);
    if (!k)
      return usage("--task", k.error().what, k.error().hint);
    job.kind = *k;
  }
  if (tokens >= 0)
    job.tokens = tokens;
  if (seq > 0)
    job.seq = seq;
  if (!framework.empty())
    job.framework = framework;
  if (global_batch > 0)
    job.global_batch = global_batch;
  if (!deadline.empty()) {
    Result<double> d = parse_quantity(deadline, quantity_flag("plan", "deadline"));
    if (!d)
      return usage("--deadline", d.error().what, d.error().hint);
    job.deadline = Seconds(*d);
  }
  if (!latency.empty()) {
    Result<double> d = parse_quantity(latency, quantity_flag("plan", "latency-target"));
    if (!d)
      return usage("--latency-target", d.error().what, d.error().hint);
    job.latency_target = Seconds(*d);
  }
  if (!budget.empty()) {
    Result<Money> m = parse_money(budget, "");
    if (!m)
      return usage("--budget", m.error().what, m.error().hint);
    job.budget = *m;
  }
  if (users > 0)
    job.users = users;
  if (rate > 0)
    job.rate_per_s = rate;
  if (input_tokens > 0)
    job.input_tokens = input_tokens;
  if (output_tokens > 0)
    job.output_tokens = output_tokens;
  if (prefix_hit > 0)
    job.prefix_hit = prefix_hit;
  if (!engine.empty())
    job.engine = engine;
  if (!residency.empty())
    job.residency = residency;
  if (!offers.empty())
    job.offers = offers;
  if (!currency.empty()) {
    Result<std::string> code = parse_currency(currency);
    if (!code)
      return usage("--currency", code.error().what, code.error().hint);
    job.currency = *code;
  }
  if (usd_rate > 0)
    job.usd_rate = usd_rate;
  if (!egress.empty()) {
    Result<double> b = parse_quantity(egress, quantity_flag("plan", "egress"));
    if (!b)
      return usage("--egress", b.error().what, b.error().hint);
    job.egress = Bytes(*b);
  }
  if (max_nodes > 0)
    job.max_nodes = max_nodes;
  for (const std::string& p : prices) {
    const size_t eq = p.find('=');
    Result<Money> m = eq == std::string::npos
                          ? Result<Money>(fail("", "no '='", ""))
                          : parse_money(std::string_view(p).substr(eq + 1), "h");
    if (!m) {
      return usage("--price", fmt::format("'{}' is not OFFER=PRICE/h", p),
                   "e.g. eveo-hgx-8xh200='250 BRL/h'");
    }
    job.prices[p.substr(0, eq)] = *m;
  }
  Result<bool> ok = check_plan_job(job, *catalog);
  if (!ok) {
    // A job read from a file names the file too ("plan.toml: users: ...").
    Error e = ok.error();
    if (!file.empty()) {
      e.where = e.where.empty() ? file : fmt::format("{}: {}", file, e.where);
    }
    return report_error(kName, e);
  }
  Result<Model> m = catalog->model(job.model);
  if (!m)
    return report_error(kName, m.error());
  const Plan plan = make_plan(job, *m, *catalog, std::max(1, threads));
  if (!out.html.empty()) {
    if (Result<bool> w = write_html_file(out.html, html_report(job, plan, out.lang)); !w)
      return report_error(kName, w.error());
  }
  if (json) {
    print_json(job, plan);
  } else if (out.csv) {
    print_csv(job, plan);
  } else {
    print_text(job, plan, out.lang);
  }
  return kExitOk;
}

}  // namespace gpuplan::cli
