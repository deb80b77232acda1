#include "gpuplan/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <span>

#include "gpuplan/fields.h"
#include "gpuplan/fit.h"
#include "gpuplan/format.h"
#include "gpuplan/gemm.h"
#include "gpuplan/inference.h"
#include "gpuplan/lang.h"
#include "gpuplan/machines.h"
#include "gpuplan/search.h"
#include "gpuplan/serve.h"
#include "gpuplan/suggest.h"
#include "gpuplan/validation.h"
#include "name_table.h"

namespace gpuplan {
namespace {

// Converts `m` into `currency` with `usd_rate` (units of currency per USD); nullopt when it
// cannot.
std::optional<Money> convert(const Money& m, const std::string& currency,
                             std::optional<double> usd_rate) {
  if (currency.empty() || m.currency == currency) {
    return m;
  }
  if (!usd_rate) {
    return std::nullopt;
  }
  if (m.currency == "USD") {
    return Money{m.amount * *usd_rate, currency};
  }
  if (currency == "USD") {
    return Money{m.amount / *usd_rate, currency};
  }
  return std::nullopt;
}

// The offer's sites where the data may stay, in catalog order; all of them without a residency.
std::vector<const Site*> allowed_sites(const Offer& o, const std::vector<std::string>& residency) {
  std::vector<const Site*> allowed;
  for (const Site& s : o.sites) {
    if (residency.empty() ||
        std::find(residency.begin(), residency.end(), s.country) != residency.end()) {
      allowed.push_back(&s);
    }
  }
  return allowed;
}

Task task_of(JobKind k) {
  switch (k) {
    case JobKind::kPretrain:
      return Task::kTrain;
    case JobKind::kFinetune:
      return Task::kFinetune;
    case JobKind::kLora:
      return Task::kLora;
    case JobKind::kQlora:
      return Task::kQlora;
    case JobKind::kServe:
      return Task::kInfer;
  }
  return Task::kTrain;
}

// The node price in the plan's currency, from the offer or the user; a note when missing.
std::optional<Money> node_price(const PlanJob& job, const Offer& o, Text& note) {
  std::optional<Money> price = o.price_per_node_hour;
  if (auto it = job.prices.find(o.id); it != job.prices.end()) {
    price = it->second;
  }
  if (!price) {
    note = {fmt::format("{} has no public price: give it with --price {}=VALUE/h", o.id, o.id),
            fmt::format("{} não tem preço público: informe-o com --price {}=VALOR/h", o.id, o.id)};
    return std::nullopt;
  }
  std::optional<Money> converted = convert(*price, job.currency, job.usd_rate);
  if (!converted) {
    note = {fmt::format("{} is priced in {}; give --usd-rate to compare it in {}", o.id,
                        price->currency, job.currency),
            fmt::format("{} tem preço em {}; informe --usd-rate para compará-lo em {}", o.id,
                        price->currency, job.currency)};
  }
  return converted;
}

PlanCandidate plan_training(const PlanJob& job, const Model& model, const Catalog& c,
                            const Offer& o, int threads) {
  PlanCandidate best;
  best.offer = &o;
  TrainJob base;
  base.memory.task = task_of(job.kind);
  base.memory.precision = job.precision.value_or(Precision::kBf16);
  base.memory.seq = job.seq;
  base.memory.lora_rank = job.lora_rank;
  base.memory.lora_targets = job.lora_targets;
  base.global_batch = job.global_batch;
  base.tokens = job.tokens;
  apply_software(base, *c.software(job.framework));  // check_plan_job resolved it
  SearchOptions so;
  so.top = 1;
  so.threads = threads;
  so.max_cp = 8;
  const Gpu& gpu = **c.gpu(o.gpu);
  if (!gpu.efficiency) {
    best.why = Why::kCalibration;
    best.why_not = {fmt::format("{} has no efficiency calibration for time estimates", gpu.id),
                    fmt::format("{} não tem calibração de eficiência para estimar tempos", gpu.id)};
    return best;
  }
  std::vector<PlanCandidate> runs;
  Why last_why = Why::kLayout;
  std::string last_reason;
  const int64_t limit = std::min(o.max_nodes, job.max_nodes);
  for (int64_t nodes = 1; nodes <= limit; nodes *= 2) {
    const Cluster cl = offer_cluster(c, o, nodes);
    if (nodes > 1 && cl.scale_out == nullptr) {
      break;
    }
    const SearchResult r = search_layouts(model, cl, base, c.memory_params(), c.train_params(), so);
    if (r.top.empty()) {
      last_why = r.why;
      last_reason = r.reason;
      continue;
    }
    const TrainEstimate& e = r.top.front();
    PlanCandidate p;
    p.offer = &o;
    p.feasible = true;
    p.nodes = nodes;
    p.gpus = cl.gpus;
    p.gpus_rented = cl.gpus;
    p.training = e;
    p.tokens_per_s = e.tokens_per_s;
    p.time = Seconds(job.tokens / e.tokens_per_s);
    p.mfu = e.mfu;
    p.energy_joules = p.time.si() * gpu.tdp.si() * static_cast<double>(p.gpus);
    p.meets_deadline = !job.deadline || p.time <= *job.deadline;
    runs.push_back(std::move(p));
    if (runs.back().meets_deadline) {
      break;  // the fewest nodes that meet the deadline (or that run, without one)
    }
  }
  if (runs.empty()) {
    best.why = last_why;
    const int64_t most = limit * o.gpus_per_node;
    best.why_not =
        last_why == Why::kMemory
            ? Text{fmt::format("does not fit: no layout of up to {} x {} holds it in {} of "
                               "usable memory per GPU",
                               most, gpu.id, gib_text(gpu.memory_usable, Lang::kEn)),
                   fmt::format("não cabe: nenhum layout de até {} x {} o comporta em {} de "
                               "memória utilizável por GPU",
                               most, gpu.id, gib_text(gpu.memory_usable, Lang::kPt))}
            : Text{fmt::format("cannot run: {}", last_reason),
                   fmt::format("não roda: {}", last_reason)};
    return best;
  }
  // The fewest nodes that meet the deadline; if none does, the fastest.
  PlanCandidate chosen = runs.back();
  if (!chosen.meets_deadline) {
    chosen = *std::min_element(runs.begin(), runs.end(),
                               [](const auto& a, const auto& b) { return a.time < b.time; });
    chosen.why = Why::kDeadline;
    chosen.why_not = {
        fmt::format("misses the deadline: {} at best ({} node{}), {} over",
                    duration_text(chosen.time), chosen.nodes, chosen.nodes == 1 ? "" : "s",
                    duration_text(chosen.time - *job.deadline)),
        fmt::format("perde o prazo: {} no melhor caso ({} nó{}), {} além",
                    duration_text(chosen.time, Lang::kPt), chosen.nodes,
                    chosen.nodes == 1 ? "" : "s",
                    duration_text(chosen.time - *job.deadline, Lang::kPt))};
  }
  const PlanCandidate& first = runs.front();
  chosen.scaling_efficiency = 100.0 * first.time.si() * static_cast<double>(first.gpus) /
                              (chosen.time.si() * static_cast<double>(chosen.gpus));
  Text note;
  if (std::optional<Money> price = node_price(job, o, note)) {
    const double hours = chosen.time.si() / 3600.0;
    chosen.hourly = Money{price->amount * static_cast<double>(chosen.nodes), price->currency};
    double total = chosen.hourly->amount * hours;
    // Egress: the checkpoint (16-bit weights, or the adapters) plus what the job says leaves.
    const ParameterCount pc = count_parameters(model);
    const double checkpoint_gb =
        (trains_adapters(task_of(job.kind))
             // adapters are split over tp x pp and replicated over dp: count one replica
             ? chosen.training->memory.trainable *
                   static_cast<double>(chosen.training->job.memory.layout.tp *
                                       chosen.training->job.memory.layout.pp) *
                   4.0
             : static_cast<double>(pc.total) * 2.0) /
        1e9;
    if (o.egress_per_gb) {
      if (std::optional<Money> eg = convert(*o.egress_per_gb, price->currency, job.usd_rate)) {
        total += eg->amount * (checkpoint_gb + job.egress / GB(1));
      }
    }
    chosen.cost = Money{total, price->currency};
  }
  chosen.price_note = note;
  return chosen;
}

// The shape that came closest to serving: the last whose model loads (the widest that holds the
// weights), else the last tried. REQUIRES: options tried.
const ServeOption& no_shape(const ServeAnswer& a) {
  const ServeOption* closest = &a.options.front();
  for (const ServeOption& o : a.options) {
    if (o.model->feasible() || !closest->model->feasible()) {
      closest = &o;
    }
  }
  return *closest;
}

// Serving through serve.h, as `gpuplan serve --offer` sizes it: the best shape per GPU on the
// offer's node and network, and the replicas the users (or the rate) need within the latency
// target. One replica spans at most the nodes the offer rents as one cluster; the fleet may take
// any number of such servers (up to the job's max_nodes), spread over the allowed sites.
PlanCandidate plan_serving(const PlanJob& job, const Model& model, const Catalog& c, const Offer& o,
                           ServeShapeCache& shapes) {
  PlanCandidate best;
  best.offer = &o;
  const Gpu& gpu = **c.gpu(o.gpu);
  ServeJob sj;
  sj.base = offer_instance(c, o);
  // The engine's limits on this offer's GPU, and its KV cache; validate_job checked the id.
  const EngineChoice choice = *c.engine_choice(job.engine);
  const EngineProfile& engine = *choice.profile;
  const WeightChoice weights =
      choose_weights(model, Task::kInfer, job.precision, std::nullopt, engine.kv_cache);
  sj.base.precision = weights.precision;
  sj.base.kv_precision = weights.kv_precision;
  sj.base.as_released = weights.as_released;
  sj.max_pp = std::min(o.max_nodes, job.max_nodes);
  sj.workload.input_tokens = job.input_tokens;
  sj.workload.output_tokens = job.output_tokens;
  sj.workload.prefix_hit = job.prefix_hit;
  if (job.users > 0) {
    sj.workload.users = job.users;
    sj.target = static_cast<double>(job.users);
  } else {
    sj.workload.rate_per_s = job.rate_per_s;
    sj.target = job.rate_per_s;
  }
  if (job.latency_target) {
    sj.slo.tpot_p99 = *job.latency_target;
  }
  sj.simulate_load = false;
  const EngineSettings es =
      engine_settings(engine, gpu, c.inference_params(), c.memory_params(), choice.release);
  sj.setup.kv_policy = es.kv_policy;
  const ServeAnswer a = serve(model, sj, es.memory, c.train_params(), es.inference, &shapes);
  const ServeOption* b = a.best_option();
  if (b == nullptr) {
    const ServeOption& closest = no_shape(a);
    best.why = closest.why;
    best.why_not = {
        fmt::format("cannot serve: at {}: {}", shape_name(closest), closest.reason.en),
        fmt::format("não serve: em {}: {}", shape_name(closest), closest.reason.in(Lang::kPt))};
    return best;
  }
  const ServeFleet& f = *a.fleet;
  if (!f.met) {
    best.why = Why::kObjective;
    best.why_not = {fmt::format("cannot serve: {} replicas of {} still miss the latency target",
                                f.replicas, shape_name(*b)),
                    fmt::format("não serve: {} réplicas de {} ainda perdem a meta de latência",
                                f.replicas, shape_name(*b))};
    return best;
  }
  // A replica wider than a node takes whole nodes of its own; narrower ones share nodes.
  const int64_t replica_nodes = (b->gpus + o.gpus_per_node - 1) / o.gpus_per_node;
  const int64_t per_node = b->gpus <= o.gpus_per_node ? o.gpus_per_node / b->gpus : 1;
  const int64_t units = (f.replicas + per_node - 1) / per_node;  // nodes, or groups of them
  const int64_t nodes = units * replica_nodes;
  if (nodes > job.max_nodes) {
    best.why = Why::kNodes;
    best.why_not = {fmt::format("cannot serve: needs {} nodes of {} (at {}), more than the {} "
                                "allowed (--max-nodes)",
                                nodes, o.gpus_per_node, shape_name(*b), job.max_nodes),
                    fmt::format("não serve: precisa de {} nós de {} (em {}), mais que os {} "
                                "permitidos (--max-nodes)",
                                nodes, o.gpus_per_node, shape_name(*b), job.max_nodes)};
    return best;
  }
  const std::vector<const Site*> where = allowed_sites(o, job.residency);
  const int64_t n_sites = std::min<int64_t>(static_cast<int64_t>(where.size()), units);
  for (int64_t i = 0; i < n_sites; ++i) {
    const int64_t share = units / n_sites + (i < units % n_sites ? 1 : 0);
    best.sites.push_back({where[static_cast<size_t>(i)]->id, share * replica_nodes});
  }
  best.feasible = true;
  best.nodes = nodes;
  best.gpus = f.gpus;
  best.gpus_rented = nodes * o.gpus_per_node;
  best.replicas = f.replicas;
  best.replicas_if_slower = f.replicas_if_slower;
  best.gpus_per_replica = b->gpus;
  best.batch_per_replica = job.users > 0 ? static_cast<int64_t>(f.share) : 0;
  best.tpot = Seconds(f.result.tpot.p99);
  best.tokens_per_s = f.output_tokens_per_s;
  const std::string shape = shape_name(*b);
  best.layout = job.users > 0
                    ? Text{fmt::format("{} replica(s) of {}, {} users each", f.replicas, shape,
                                       grouped(std::llround(f.share))),
                           fmt::format("{} réplica(s) de {}, {} usuários cada", f.replicas, shape,
                                       number(std::round(f.share), 0, Lang::kPt))}
                    : Text{fmt::format("{} replica(s) of {}, {:.3g} requests/s each", f.replicas,
                                       shape, f.share),
                           fmt::format("{} réplica(s) de {}, {} requisições/s cada", f.replicas,
                                       shape, number(f.share, f.share < 10 ? 2 : 1, Lang::kPt))};
  Text note;
  if (std::optional<Money> price = node_price(job, o, note)) {
    best.hourly = Money{price->amount * static_cast<double>(best.nodes), price->currency};
    best.cost = Money{best.hourly->amount * kHoursPerMonth, price->currency};
  }
  best.price_note = note;
  best.energy_joules = gpu.tdp.si() * static_cast<double>(best.gpus) * kHoursPerMonth * 3600.0;
  return best;
}

constexpr std::array kJobKinds = {
    std::pair{JobKind::kPretrain, std::string_view("pretrain")},
    std::pair{JobKind::kFinetune, std::string_view("finetune")},
    std::pair{JobKind::kLora, std::string_view("lora")},
    std::pair{JobKind::kQlora, std::string_view("qlora")},
    std::pair{JobKind::kServe, std::string_view("serve")},
};

}  // namespace

std::string_view job_kind_name(JobKind k) {
  return detail::name_of(kJobKinds, k);
}

Result<JobKind> parse_job_kind(std::string_view name) {
  return detail::parse_from(kJobKinds, name, "job kind");
}

std::vector<std::string> job_kind_names() {
  return detail::names_in(kJobKinds);
}

namespace {

// The plan's currency: the requested one, else the budget's; empty: each offer's own.
std::string plan_currency(const PlanJob& job) {
  return !job.currency.empty() ? job.currency : job.budget ? job.budget->currency : std::string();
}

// The currencies, other than `target`, of the prices the plan will compare.
std::set<std::string> foreign_currencies(const PlanJob& job, const Catalog& catalog,
                                         const std::string& target) {
  std::set<std::string> others;
  auto note = [&](const Money& m) {
    if (m.currency != target) {
      others.insert(m.currency);
    }
  };
  for (const Offer& o : catalog.offers()) {
    const bool asked = job.offers.empty() ||
                       std::find(job.offers.begin(), job.offers.end(), o.id) != job.offers.end();
    if (!asked || allowed_sites(o, job.residency).empty()) {
      continue;
    }
    if (const auto p = job.prices.find(o.id); p != job.prices.end()) {
      note(p->second);
    } else if (o.price_per_node_hour) {
      note(*o.price_per_node_hour);
    }
  }
  return others;
}

// The rate a plan converts through USD with, and the note that says so: the job's usd_rate, else
// the catalog's dated rate for the currency on the other side of USD. Nothing when no price
// needs converting or no rate is known.
struct PlanRate {
  std::optional<double> per_usd;
  Text note;
};

PlanRate plan_rate(const PlanJob& job, const Catalog& catalog, const std::string& target,
                   const std::set<std::string>& others) {
  PlanRate r;
  if (target.empty() || others.empty()) {
    return r;
  }
  // Units of this currency per USD.
  const std::string currency = target != "USD" ? target : *others.begin();
  const std::string converted = target != "USD"
                                    ? fmt::format("prices in USD are shown in {}", target)
                                    : fmt::format("prices in {} are shown in USD", currency);
  const std::string convertido = target != "USD"
                                     ? fmt::format("preços em USD aparecem em {}", target)
                                     : fmt::format("preços em {} aparecem em USD", currency);
  if (job.usd_rate) {
    r.per_usd = job.usd_rate;
    r.note = {fmt::format("{} at {:g} {} per USD (usd_rate)", converted, *job.usd_rate, currency),
              fmt::format("{} a {} {} por USD (usd_rate)", convertido,
                          number(*job.usd_rate, 4, Lang::kPt), currency)};
  } else if (const ExchangeRate* x = catalog.usd_rate(currency)) {
    r.per_usd = x->per_usd;
    r.note = {
        fmt::format("{} at {:g} {} per USD ({}, {}; data/params/exchange.toml); --usd-rate "
                    "gives another",
                    converted, x->per_usd, currency, x->publisher, x->date),
        fmt::format("{} a {} {} por USD ({}, {}; data/params/exchange.toml); --usd-rate "
                    "informa outra",
                    convertido, number(x->per_usd, 4, Lang::kPt), currency, x->publisher, x->date)};
  }
  return r;
}

// Every price the plan will compare can be brought into the plan's currency: through USD with
// the plan's rate, or already in it. Otherwise the costs would silently turn into "price not
// public".
Result<bool> check_currencies(const PlanJob& job, const Catalog& catalog) {
  const std::string target = plan_currency(job);
  if (target.empty()) {
    return true;
  }
  const std::set<std::string> others = foreign_currencies(job, catalog, target);
  for (const std::string& c : others) {
    if (c != "USD" && target != "USD") {
      return fail(
          "currency",
          fmt::format("prices in {} cannot be converted to {}: gpuplan converts through USD", c,
                      target),
          fmt::format("give the offers' prices in {} or USD, or leave out those offers", target));
    }
  }
  if (others.size() > 1 && target == "USD") {
    return fail(
        "currency",
        fmt::format("costs in USD from prices in {} need one rate each", fmt::join(others, ", ")),
        "give the offers' prices in USD, or leave out those offers");
  }
  if (!others.empty() && !plan_rate(job, catalog, target, others).per_usd) {
    return fail("currency",
                fmt::format("costs in {} need an exchange rate: offers are priced in {}", target,
                            fmt::join(others, ", ")),
                fmt::format("give usd_rate (--usd-rate), the {} per USD, or add one to "
                            "data/params/exchange.toml",
                            target == "USD" ? fmt::format("{}", fmt::join(others, ", ")) : target));
  }
  return true;
}

}  // namespace

Result<bool> check_plan_job(const PlanJob& job, const Catalog& catalog) {
  Result<Software> software = catalog.software(job.framework);
  if (!software) {
    return fail("framework", software.error().what, software.error().hint);
  }
  for (const std::string& id : job.offers) {
    Result<const Offer*> o = catalog.offer(id);
    if (!o) {
      return fail("offers", o.error().what, o.error().hint);
    }
  }
  if (Result<EngineChoice> e = catalog.engine_choice(job.engine); !e) {
    return fail("engine", e.error().what, e.error().hint);
  }
  for (const auto& [id, price] : job.prices) {
    Result<const Offer*> o = catalog.offer(id);
    if (!o) {
      return fail("--price", o.error().what, o.error().hint);
    }
  }
  // A field of the other kind of job would be ignored without a word: refused instead. A
  // field left at its default is not given (a training job's seq of 4096 may be either).
  const PlanJob unset;
  const std::pair<const char*, bool> serving_fields[] = {
      {"users", job.users != unset.users},
      {"rate_per_s", job.rate_per_s != unset.rate_per_s},
      {"input_tokens", job.input_tokens != unset.input_tokens},
      {"output_tokens", job.output_tokens != unset.output_tokens},
      {"prefix_hit", job.prefix_hit != unset.prefix_hit},
      {"engine", job.engine != unset.engine},
      {"latency_target", job.latency_target.has_value()}};
  const std::pair<const char*, bool> training_fields[] = {
      {"tokens", job.tokens != unset.tokens},
      {"seq", job.seq != unset.seq},
      {"global_batch", job.global_batch != unset.global_batch},
      {"framework", job.framework != unset.framework}};
  const bool serving = job.kind == JobKind::kServe;
  using Given = std::span<const std::pair<const char*, bool>>;
  for (const auto& [field, given] : serving ? Given(training_fields) : Given(serving_fields)) {
    if (given) {
      return fail(field,
                  serving ? "is for training jobs; this one serves"
                          : "is for serving jobs (kind serve); this one trains",
                  serving ? "drop it: serving is sized by users or rate_per_s, input_tokens "
                            "and output_tokens"
                          : "drop it, or make the job kind serve");
    }
  }
  if (!trains_adapters(task_of(job.kind)) &&
      (job.lora_rank != unset.lora_rank || job.lora_targets != unset.lora_targets)) {
    return fail(job.lora_rank != unset.lora_rank ? "lora_rank" : "lora_targets",
                "is for LoRA and QLoRA fine-tuning", "drop it, or make the job kind lora");
  }
  if (job.kind == JobKind::kServe) {
    if ((job.users <= 0 && job.rate_per_s <= 0) || job.input_tokens <= 0 ||
        job.output_tokens <= 0) {
      return fail("job", "serving needs users (or rate_per_s), input_tokens and output_tokens",
                  "e.g. users = 2000, input_tokens = 1000, output_tokens = 300");
    }
    if (job.users <= 0 && !job.latency_target) {
      return fail("rate_per_s", "a request rate needs a latency_target to size the fleet under",
                  "give the p99 time per output token, e.g. latency_target = \"50 ms\"");
    }
    // The ranges are the fields' rules, the ones the flags and job-file keys were checked by: a
    // job built by a program is held to them too.
    if (job.users > 0) {
      GPUPLAN_RETURN_IF_ERROR(check_count(fields::kUsers, job.users, "users"));
    } else {
      GPUPLAN_RETURN_IF_ERROR(check_field(fields::kRate, job.rate_per_s, "rate_per_s"));
    }
    GPUPLAN_RETURN_IF_ERROR(check_count(fields::kRequestTokens, job.input_tokens, "input_tokens"));
    GPUPLAN_RETURN_IF_ERROR(
        check_count(fields::kRequestTokens, job.output_tokens, "output_tokens"));
    GPUPLAN_RETURN_IF_ERROR(check_field(fields::kPrefixHit, job.prefix_hit, "prefix_hit"));
  } else {
    if (!(job.tokens > 0)) {
      return fail("tokens", fmt::format("a training job needs tokens > 0, got {}", job.tokens),
                  "give the tokens to train on (or epochs x dataset tokens)");
    }
    GPUPLAN_RETURN_IF_ERROR(check_field(fields::kTokens, job.tokens, "tokens"));
    GPUPLAN_RETURN_IF_ERROR(check_count(fields::kSeq, job.seq, "seq"));
    if (job.global_batch != 0) {  // 0: the default for the kind of job
      GPUPLAN_RETURN_IF_ERROR(check_count(fields::kGlobalBatch, job.global_batch, "global_batch"));
    }
  }
  GPUPLAN_RETURN_IF_ERROR(check_count(fields::kMaxNodes, job.max_nodes, "max_nodes"));
  if (job.deadline && job.deadline->si() <= 0) {
    return fail("deadline", "the deadline has already passed", "give a time from now, e.g. '7 d'");
  }
  if (job.usd_rate) {
    GPUPLAN_RETURN_IF_ERROR(check_field(fields::kUsdRate, *job.usd_rate, "usd_rate"));
  }
  if (Result<Model> m = catalog.model(job.model)) {
    const int64_t tokens =
        job.kind == JobKind::kServe ? job.input_tokens + job.output_tokens : job.seq;
    GPUPLAN_RETURN_IF_ERROR(check_context(
        *m, tokens, job.kind == JobKind::kServe ? "input_tokens + output_tokens" : "seq"));
  }
  return check_currencies(job, catalog);
}

std::string sites_text(const std::vector<SiteNodes>& sites) {
  std::vector<std::string> parts;
  for (const SiteNodes& s : sites)
    parts.push_back(fmt::format("{}: {}", s.site, s.nodes));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string plan_headline(const Plan& plan, const PlanJob& job, Lang lang) {
  const bool pt = lang == Lang::kPt;
  switch (plan.verdict) {
    case PlanVerdict::kNoOffer:
      return pt ? "Nenhuma oferta foi considerada: confira as ofertas permitidas."
                : "No offer was considered: check the allowed offers.";
    case PlanVerdict::kNoSite:
      return pt ? fmt::format(
                      "Nenhuma oferta do catálogo tem um local em {}: acrescente uma "
                      "(data/offers/) ou relaxe a residência dos dados.",
                      fmt::join(job.residency, ", "))
                : fmt::format(
                      "No offer in the catalog has a site in {}: add one (data/offers/) or "
                      "relax the residency.",
                      fmt::join(job.residency, ", "));
    case PlanVerdict::kNothingRuns:
      return pt ? "Nenhuma oferta consegue rodar este trabalho; os motivos estão abaixo."
                : "No offer can run this job; the reasons are below.";
    default:
      break;
  }
  const PlanCandidate& b = plan.ranked.front();
  const std::string& gpu = b.offer->gpu;
  const std::string time = duration_text(b.time, lang);
  std::string cost;
  if (!b.cost) {
    cost = pt ? ", preço não público" : ", price not public";
  } else {
    cost = ", " + money_text(*b.cost, lang);
    if (plan.verdict == PlanVerdict::kServe)
      cost += pt ? " por mês" : " per month";
  }
  switch (plan.verdict) {
    case PlanVerdict::kServe: {
      const std::string load =
          job.users > 0 ? (pt ? number(static_cast<double>(job.users), 0, lang) + " usuários"
                              : fmt::format("{} users", job.users))
          : pt          ? number(job.rate_per_s, 2, lang) + " requisições/s"
                        : fmt::format("{:.4g} requests/s", job.rate_per_s);
      const std::string tpot = number(b.tpot.si() * 1e3, 0, lang);
      // Where the nodes go: one site by name, several with their shares.
      std::string where = b.sites.size() == 1
                              ? fmt::format(" {} {}", pt ? "em" : "in", b.sites.front().site)
                              : "; " + sites_text(b.sites);
      // The nodes are rented whole: say so where the replicas leave GPUs of them idle.
      if (b.gpus_rented > b.gpus) {
        where +=
            pt ? fmt::format("; {} GPUs alugadas, {} ociosas", b.gpus_rented,
                             b.gpus_rented - b.gpus)
               : fmt::format("; {} GPUs rented, {} idle", b.gpus_rented, b.gpus_rented - b.gpus);
      }
      return pt ? fmt::format(
                      "Servir {} pede {} x {} em {} ({} nó(s){}): {} ms no p99 por token de "
                      "saída{}.",
                      load, b.gpus, gpu, b.offer->id, b.nodes, where, tpot, cost)
                : fmt::format(
                      "Serving {} needs {} x {} on {} ({} node(s){}): {} ms p99 per output "
                      "token{}.",
                      load, b.gpus, gpu, b.offer->id, b.nodes, where, tpot, cost);
    }
    case PlanVerdict::kOneGpu:
      return pt ? fmt::format("Uma {} basta: {} termina em {}{}.", gpu, b.offer->id, time, cost)
                : fmt::format("One {} is enough: {} finishes in {}{}.", gpu, b.offer->id, time,
                              cost);
    case PlanVerdict::kOneServer:
      return pt ? fmt::format(
                      "Você precisa de {} GPUs em um servidor: {} ({} x {}) termina em {}{}.",
                      b.gpus, b.offer->id, b.gpus, gpu, time, cost)
                : fmt::format("You need {} GPUs in one server: {} ({} x {}) finishes in {}{}.",
                              b.gpus, b.offer->id, b.gpus, gpu, time, cost);
    default:
      return pt ? fmt::format(
                      "Você precisa de um cluster: {} nós de {} ({} x {}) terminam em {}{}.",
                      b.nodes, b.offer->id, b.gpus, gpu, time, cost)
                : fmt::format("You need a cluster: {} nodes of {} ({} x {}) finish in {}{}.",
                              b.nodes, b.offer->id, b.gpus, gpu, time, cost);
  }
}

Plan make_plan(const PlanJob& job_in, const Model& model, const Catalog& catalog, int threads) {
  PlanJob job = job_in;
  const std::string target = plan_currency(job);
  const PlanRate rate = plan_rate(job, catalog, target, foreign_currencies(job, catalog, target));
  job.usd_rate = rate.per_usd;
  if (job.global_batch == 0) {
    job.global_batch = job.kind == JobKind::kPretrain ? 1024 : 128;
  }
  Plan plan;
  ServeShapeCache shapes;
  for (const Offer& o : catalog.offers()) {
    PlanCandidate rejected;
    rejected.offer = &o;
    if (!job.offers.empty() &&
        std::find(job.offers.begin(), job.offers.end(), o.id) == job.offers.end()) {
      continue;  // not asked about
    }
    if (allowed_sites(o, job.residency).empty()) {
      std::vector<std::string> where;
      for (const Site& s : o.sites)
        where.push_back(fmt::format("{} ({})", s.id, s.country));
      rejected.why = Why::kResidency;
      rejected.why_not = {fmt::format("outside residency {}: sites {}",
                                      fmt::join(job.residency, ", "), fmt::join(where, ", ")),
                          fmt::format("fora da residência {}: locais {}",
                                      fmt::join(job.residency, ", "), fmt::join(where, ", "))};
      plan.rejected.push_back(rejected);
      continue;
    }
    PlanCandidate p = job.kind == JobKind::kServe ? plan_serving(job, model, catalog, o, shapes)
                                                  : plan_training(job, model, catalog, o, threads);
    if (!p.feasible || !p.meets_deadline) {
      plan.rejected.push_back(p);
      continue;
    }
    if (job.budget && p.cost && p.cost->currency == job.budget->currency &&
        p.cost->amount > job.budget->amount) {
      p.why = Why::kBudget;
      p.why_not = {fmt::format("over budget: {} > {}", money_text(*p.cost, Lang::kEn),
                               money_text(*job.budget, Lang::kEn)),
                   fmt::format("acima do orçamento: {} > {}", money_text(*p.cost, Lang::kPt),
                               money_text(*job.budget, Lang::kPt))};
      plan.rejected.push_back(p);
      continue;
    }
    plan.ranked.push_back(p);
  }
  // Offers priced in the plan's currency come first, cheapest first; the others follow by time
  // to finish (serving: by GPUs needed). Ties go to the offer id. Without a requested currency,
  // the first priced candidate's currency is the one compared.
  std::string currency = job.currency;
  for (const PlanCandidate& p : plan.ranked) {
    if (currency.empty() && p.cost)
      currency = p.cost->currency;
  }
  const bool serving = job.kind == JobKind::kServe;
  auto priced = [&](const PlanCandidate& p) { return p.cost && p.cost->currency == currency; };
  bool all_priced = !plan.ranked.empty();
  for (const PlanCandidate& p : plan.ranked)
    all_priced = all_priced && priced(p);
  std::sort(plan.ranked.begin(), plan.ranked.end(), [&](const auto& a, const auto& b) {
    if (priced(a) != priced(b))
      return priced(a);
    const double ka = priced(a) ? a.cost->amount
                      : serving ? static_cast<double>(a.gpus)
                                : a.time.si();
    const double kb = priced(b) ? b.cost->amount
                      : serving ? static_cast<double>(b.gpus)
                                : b.time.si();
    if (ka != kb)
      return ka < kb;
    return a.offer->id < b.offer->id;
  });
  const bool by_cost = all_priced;
  std::sort(plan.rejected.begin(), plan.rejected.end(),
            [](const auto& a, const auto& b) { return a.offer->id < b.offer->id; });
  if (!by_cost && !plan.ranked.empty()) {
    plan.notes.push_back(
        {fmt::format("offers with a price in {} are ranked by cost; the others follow by {}",
                     currency.empty() ? "one currency" : currency,
                     serving ? "GPUs needed" : "time to finish"),
         fmt::format("as ofertas com preço em {} são classificadas pelo custo; as outras seguem "
                     "por {}",
                     currency.empty() ? "uma moeda" : currency,
                     serving ? "GPUs necessárias" : "tempo até terminar")});
  }
  for (const PlanCandidate& p : plan.ranked) {
    if (!p.price_note.empty())
      plan.notes.push_back(p.price_note);
  }
  if (!rate.note.empty() && !plan.ranked.empty()) {
    plan.notes.push_back(rate.note);
  }
  // The weights every serving offer was sized with (choose_weights; the engine's KV rule does
  // not change them): named in the notes and the GPUs' caveats below.
  const WeightChoice weights =
      choose_weights(model, Task::kInfer, job.precision, std::nullopt, KvDefault::kFollowsWeights);
  if (serving) {
    if (weights.as_released) {
      const Text name = weights_name(model, weights.precision, true);
      plan.notes.push_back(
          {fmt::format("weights: {}, as the model's quantization_config gives them; a job "
                       "file's precision serves another format",
                       name.en),
           fmt::format("pesos: {}, como o quantization_config do modelo os dá; a precisão de um "
                       "arquivo de trabalho serve outro formato",
                       name.pt)});
    }
    if (Text unread = unread_format_note(model, Task::kInfer, job.precision.has_value());
        !unread.empty()) {
      plan.notes.push_back(std::move(unread));
    }
  }
  if (std::any_of(plan.ranked.begin(), plan.ranked.end(),
                  [](const PlanCandidate& p) { return p.sites.size() > 1; })) {
    plan.notes.push_back(
        {"sites: replicas need no link between servers, so a fleet's servers are spread over "
         "the sites the data may stay in, and losing one site loses only its share; how many "
         "servers a site has free is not published: confirm with the provider",
         "locais: réplicas não precisam de ligação entre servidores, então os servidores da "
         "frota são distribuídos pelos locais onde os dados podem ficar, e perder um local perde "
         "só a sua parte; quantos servidores um local tem livres não é público: confirme com o "
         "provedor"});
  }
  // Serving: what the winner would need were the model's speed off by its typical error.
  if (!plan.ranked.empty() && plan.ranked.front().replicas > 0) {
    const PlanCandidate& w = plan.ranked.front();
    const double pct = catalog.inference_params().speed_uncertainty * 100;
    if (w.replicas_if_slower > 0) {
      plan.notes.push_back(
          {fmt::format("sensitivity: were every iteration {:.0f} % slower than modelled (the "
                       "serving model's typical error out of sample), {} would need {} replicas "
                       "({} GPUs) instead of {}",
                       pct, w.offer->id, w.replicas_if_slower,
                       w.replicas_if_slower * w.gpus_per_replica, w.replicas),
           fmt::format("sensibilidade: se cada iteração fosse {:.0f} % mais lenta que o modelo "
                       "(o erro típico do modelo de serviço fora da amostra), {} precisaria de {} "
                       "réplicas ({} GPUs) em vez de {}",
                       pct, w.offer->id, w.replicas_if_slower,
                       w.replicas_if_slower * w.gpus_per_replica, w.replicas)});
    } else if (pct > 0) {
      plan.notes.push_back(
          {fmt::format("sensitivity: were every iteration {:.0f} % slower than modelled, not "
                       "even {} replicas of {} would meet the target",
                       pct, w.replicas + kFleetTries - 1, w.offer->id),
           fmt::format("sensibilidade: se cada iteração fosse {:.0f} % mais lenta que o modelo, "
                       "nem {} réplicas de {} cumpririam a meta",
                       pct, w.replicas + kFleetTries - 1, w.offer->id)});
    }
  }
  // What the training model leaves out for this model and each ranked offer's GPU
  // (training_caveats), and for serving on its GPU (serving_caveats); each said once.
  for (const PlanCandidate& p : plan.ranked) {
    std::vector<Text> caveats;
    if (p.training) {
      caveats = p.training->caveats;
    } else if (const Result<const Gpu*> g = catalog.gpu(p.offer->gpu)) {
      caveats = serving_caveats(**g, weights.precision, catalog.inference_params());
    }
    for (const Text& c : caveats) {
      if (std::none_of(plan.notes.begin(), plan.notes.end(),
                       [&](const Text& n) { return n.en == c.en; })) {
        plan.notes.push_back(c);
      }
    }
  }
  // Believability: a predicted MFU above every published run on that GPU and precision (the
  // catalog's validation file).
  if (std::any_of(plan.ranked.begin(), plan.ranked.end(),
                  [](const PlanCandidate& p) { return p.training.has_value(); })) {
    const Result<std::vector<PublishedMfu>> published =
        published_mfus(catalog.data_dir() + "/validation/training.json", catalog);
    for (const PlanCandidate& p : plan.ranked) {
      const std::optional<PublishedMfu> ceiling =
          published && p.training ? best_published_mfu(*published, catalog, p.offer->gpu,
                                                       job.precision.value_or(Precision::kBf16))
                                  : std::nullopt;
      if (ceiling && p.mfu > ceiling->mfu) {
        plan.notes.push_back(
            {fmt::format("{}: predicted MFU {:.1f} % is above {}; its time may be optimistic",
                         p.offer->id, p.mfu * 100,
                         published_mfu_text(*ceiling, p.offer->gpu, Lang::kEn)),
             fmt::format("{}: o MFU previsto de {} % está acima d{}; seu tempo pode ser otimista",
                         p.offer->id, number(p.mfu * 100, 1, Lang::kPt),
                         published_mfu_text(*ceiling, p.offer->gpu, Lang::kPt))});
      }
    }
  }
  if (plan.ranked.empty()) {
    bool all_residency = !plan.rejected.empty();
    for (const PlanCandidate& p : plan.rejected) {
      all_residency = all_residency && p.why == Why::kResidency;
    }
    if (job.kind == JobKind::kPretrain || job.kind == JobKind::kFinetune) {
      PlanJob lora = job;
      lora.kind = JobKind::kLora;
      const Plan alternative = make_plan(lora, model, catalog, threads);
      for (const PlanCandidate& p : alternative.ranked) {
        plan.lora_alternative.push_back(
            {fmt::format("{} ({} node{}, {})", p.offer->id, p.nodes, p.nodes == 1 ? "" : "s",
                         duration_text(p.time)),
             fmt::format("{} ({} nó{}, {})", p.offer->id, p.nodes, p.nodes == 1 ? "" : "s",
                         duration_text(p.time, Lang::kPt))});
      }
    }
    plan.verdict = plan.rejected.empty() ? PlanVerdict::kNoOffer
                   : all_residency       ? PlanVerdict::kNoSite
                                         : PlanVerdict::kNothingRuns;
    plan.headline = plan_headline(plan, job, Lang::kEn);
    return plan;
  }
  const PlanCandidate& b = plan.ranked.front();
  plan.verdict = serving        ? PlanVerdict::kServe
                 : b.gpus == 1  ? PlanVerdict::kOneGpu
                 : b.nodes == 1 ? PlanVerdict::kOneServer
                                : PlanVerdict::kCluster;
  plan.headline = plan_headline(plan, job, Lang::kEn);
  return plan;
}

}  // namespace gpuplan
