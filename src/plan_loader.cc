// Reads plan job files (gpuplan plan JOB.toml).
#include <fmt/format.h>

#include <chrono>

#include "gpuplan/advisor.h"
#include "loaders.h"

namespace gpuplan {

using detail::TomlReader;

namespace {

Result<std::optional<Money>> money_key(TomlReader& r, const std::string& key,
                                       std::string_view per) {
  std::optional<std::string> text;
  GPUPLAN_ASSIGN_OR_RETURN(text, r.optional_text(key));
  if (!text) {
    return std::optional<Money>();
  }
  Result<Money> m = parse_money(*text, per);
  if (!m) {
    return fail(r.where(key), fmt::format("key '{}': {}", key, m.error().what), m.error().hint);
  }
  return std::optional<Money>(*m);
}

Result<std::optional<Seconds>> time_key(TomlReader& r, const std::string& key) {
  // A TOML date ("deadline = 2026-12-31") is a moment: the time from now to its midnight UTC.
  if (const auto* date = r.raw(key) != nullptr ? r.raw(key)->as_date() : nullptr) {
    r.accept(key);
    const toml::date d = date->get();
    // toml++ takes any 16-bit year; only a calendar date a job can still meet is a deadline, and
    // the difference is taken in floating point (nanoseconds since 1970 overflow in 2262).
    if (d.year > 9999 ||
        !std::chrono::year_month_day(std::chrono::year{d.year} / d.month / d.day).ok()) {
      return fail(r.where(key), fmt::format("'{}' is not a deadline", key),
                  "give a date such as 2026-12-31 or a duration such as '7 d'");
    }
    const std::chrono::sys_days day = std::chrono::year{d.year} / d.month / d.day;
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double left_s = static_cast<double>(day.time_since_epoch().count()) * 86400.0 - now;
    const std::chrono::duration<double> left(left_s);
    if (left.count() <= 0) {
      return fail(r.where(key),
                  fmt::format("the deadline {}-{:02}-{:02} has already passed", d.year,
                              static_cast<int>(d.month), static_cast<int>(d.day)),
                  "give a later date or a duration such as '7 d'");
    }
    return std::optional<Seconds>(Seconds(left.count()));
  }
  std::optional<double> v;
  GPUPLAN_ASSIGN_OR_RETURN(v, r.optional_quantity(key, Dimension::kSeconds));
  return v ? std::optional<Seconds>(Seconds(*v)) : std::nullopt;
}

}  // namespace

Result<PlanJob> load_plan_job(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, detail::open_catalog_file(path));
  TomlReader top(table, path);
  top.accept("schema");
  PlanJob job;
  std::optional<TomlReader> j;
  GPUPLAN_ASSIGN_OR_RETURN(j, top.optional_table("job"));
  if (!j) {
    return fail(path, "missing table [job]", "a job file has [job] with kind and model");
  }
  std::string text;
  GPUPLAN_ASSIGN_OR_RETURN(text, j->text("kind"));
  Result<JobKind> kind = parse_job_kind(text);
  if (!kind) {
    return fail(j->where("kind"), kind.error().what, kind.error().hint);
  }
  job.kind = *kind;
  GPUPLAN_ASSIGN_OR_RETURN(job.model, j->text("model"));
  std::optional<double> tokens, epochs, dataset;
  GPUPLAN_ASSIGN_OR_RETURN(tokens, j->optional_field("tokens", fields::kTokens));
  GPUPLAN_ASSIGN_OR_RETURN(epochs, j->optional_field("epochs", fields::kEpochs));
  GPUPLAN_ASSIGN_OR_RETURN(dataset, j->optional_field("dataset_tokens", fields::kTokens));
  if (tokens && (epochs || dataset)) {
    return fail(j->where("tokens"), "give 'tokens' or 'epochs' x 'dataset_tokens', not both", "");
  }
  if (epochs.has_value() != dataset.has_value()) {
    return fail(j->where(epochs ? "epochs" : "dataset_tokens"),
                "'epochs' and 'dataset_tokens' go together", "or give 'tokens'");
  }
  job.tokens = tokens ? *tokens : (epochs ? *epochs * *dataset : 0.0);
  std::optional<int64_t> v;
  GPUPLAN_ASSIGN_OR_RETURN(v, j->optional_count("seq", fields::kSeq));
  job.seq = v.value_or(4096);
  GPUPLAN_ASSIGN_OR_RETURN(v, j->optional_count("global_batch", fields::kGlobalBatch));
  job.global_batch = v.value_or(0);
  GPUPLAN_ASSIGN_OR_RETURN(v, j->optional_count("lora_rank", fields::kLoraRank));
  job.lora_rank = v.value_or(16);
  std::optional<std::string> targets;
  GPUPLAN_ASSIGN_OR_RETURN(targets, j->optional_text("lora_targets"));
  if (targets) {
    Result<LoraTargets> t = parse_lora_targets(*targets);
    if (!t) {
      return fail(j->where("lora_targets"), t.error().what, t.error().hint);
    }
    job.lora_targets = *t;
  }
  std::optional<std::string> precision;
  GPUPLAN_ASSIGN_OR_RETURN(precision, j->optional_text("precision"));
  if (precision) {
    Result<Precision> p = parse_precision(*precision);
    if (!p) {
      return fail(j->where("precision"), p.error().what, p.error().hint);
    }
    job.precision = *p;
  }
  std::optional<std::string> framework;
  GPUPLAN_ASSIGN_OR_RETURN(framework, j->optional_text("framework"));
  job.framework = framework.value_or(job.framework);
  GPUPLAN_ASSIGN_OR_RETURN(job.deadline, time_key(*j, "deadline"));
  GPUPLAN_ASSIGN_OR_RETURN(job.budget, money_key(*j, "budget", ""));
  GPUPLAN_ASSIGN_OR_RETURN(v, j->optional_count("users", fields::kUsers));
  job.users = v.value_or(0);
  std::optional<double> rate;
  GPUPLAN_ASSIGN_OR_RETURN(rate, j->optional_field("rate_per_s", fields::kRate));
  job.rate_per_s = rate.value_or(0);
  GPUPLAN_ASSIGN_OR_RETURN(v, j->optional_count("input_tokens", fields::kRequestTokens));
  job.input_tokens = v.value_or(0);
  GPUPLAN_ASSIGN_OR_RETURN(v, j->optional_count("output_tokens", fields::kRequestTokens));
  job.output_tokens = v.value_or(0);
  std::optional<double> hit;
  GPUPLAN_ASSIGN_OR_RETURN(hit, j->optional_field("prefix_hit", fields::kPrefixHit));
  job.prefix_hit = hit.value_or(0);
  std::optional<std::string> engine;
  GPUPLAN_ASSIGN_OR_RETURN(engine, j->optional_text("engine"));
  job.engine = engine.value_or("");
  GPUPLAN_ASSIGN_OR_RETURN(job.latency_target, time_key(*j, "latency_target"));
  GPUPLAN_RETURN_IF_ERROR(j->finish());

  std::optional<TomlReader> c;
  GPUPLAN_ASSIGN_OR_RETURN(c, top.optional_table("constraints"));
  if (c) {
    std::optional<std::string> s;
    if (table["constraints"]["residency"]) {
      GPUPLAN_ASSIGN_OR_RETURN(job.residency, c->text_list("residency"));
    } else {
      c->accept("residency");
    }
    if (table["constraints"]["offers"]) {
      GPUPLAN_ASSIGN_OR_RETURN(job.offers, c->text_list("offers"));
    } else {
      c->accept("offers");
    }
    GPUPLAN_ASSIGN_OR_RETURN(s, c->optional_text("currency"));
    if (s) {
      Result<std::string> code = parse_currency(*s);
      if (!code) {
        return fail(c->where("currency"), code.error().what, code.error().hint);
      }
    }
    job.currency = s.value_or("");
    GPUPLAN_ASSIGN_OR_RETURN(job.usd_rate, c->optional_field("usd_rate", fields::kUsdRate));
    std::optional<double> egress;
    GPUPLAN_ASSIGN_OR_RETURN(egress, c->optional_quantity("egress", Dimension::kBytes));
    job.egress = Bytes(egress.value_or(0));
    GPUPLAN_ASSIGN_OR_RETURN(v, c->optional_count("max_nodes", fields::kMaxNodes));
    job.max_nodes = v.value_or(job.max_nodes);
    GPUPLAN_RETURN_IF_ERROR(c->finish());
  }
  std::optional<TomlReader> prices;
  GPUPLAN_ASSIGN_OR_RETURN(prices, top.optional_table("prices"));
  if (prices) {
    for (const auto& [k, node] : *table["prices"].as_table()) {
      const std::string id(k.str());
      std::optional<Money> m;
      GPUPLAN_ASSIGN_OR_RETURN(m, money_key(*prices, id, "h"));
      job.prices[id] = *m;
    }
    GPUPLAN_RETURN_IF_ERROR(prices->finish());
  }
  GPUPLAN_RETURN_IF_ERROR(top.finish());
  return job;
}

}  // namespace gpuplan
