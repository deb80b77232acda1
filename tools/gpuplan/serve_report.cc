#include "serve_report.h"

#include <fmt/format.h>

#include <cmath>

#include "gpuplan/json_writer.h"
#include "report.h"

namespace gpuplan::cli {
namespace {

std::string ms(double seconds) {
  return seconds < 1.0 ? fmt::format("{:.1f} ms", seconds * 1e3) : fmt::format("{:.2f} s", seconds);
}

std::string spread(const Percentiles& p) {
  return fmt::format("mean {}, p50 {}, p90 {}, p99 {}", ms(p.mean), ms(p.p50), ms(p.p90),
                     ms(p.p99));
}

std::string slo_text(const Slo& slo) {
  std::string s;
  if (slo.ttft_p99) {
    s += fmt::format("p99 TTFT <= {}", ms(slo.ttft_p99->si()));
  }
  if (slo.tpot_p99) {
    s += fmt::format("{}p99 TPOT <= {}", s.empty() ? "" : ", ", ms(slo.tpot_p99->si()));
  }
  return s;
}

const char* unit(const ServeAnswer& a) {
  return a.closed ? "users" : "requests/s";
}

// The table's first cell: "4", or "4 x 2" with pipeline stages.
std::string cell(const ServeOption& o) {
  return o.gpus == o.tp ? fmt::format("{}", o.tp) : fmt::format("{} x {}", o.tp, o.gpus / o.tp);
}

// What serving costs at a price per GPU-hour: an instance per hour, a million output tokens at
// its capacity, and the fleet per month (kHoursPerMonth).
struct Costs {
  double instance_hour = 0;
  double per_million = 0;
  double fleet_month = 0;
};

Costs costs(const ServeAnswer& a) {
  const ServeOption& o = *a.best;
  Costs k;
  k.instance_hour = a.price->amount * static_cast<double>(o.gpus);
  k.per_million = o.tokens_per_s > 0 ? k.instance_hour / (o.tokens_per_s * 3600.0) * 1e6 : 0;
  k.fleet_month =
      k.instance_hour * static_cast<double>(a.fleet ? a.fleet->replicas : 0) * kHoursPerMonth;
  return k;
}

void print_result(const ServingResult& r) {
  fmt::print(
      "  throughput  {} output tokens/s ({:.2f} requests/s over {}, the last completions "
      "included)\n",
      grouped(std::llround(r.output_tokens_per_s)), r.requests_per_s, duration_text(r.duration));
  fmt::print("  TTFT        {}\n", spread(r.ttft));
  fmt::print("  TPOT        {}\n", spread(r.tpot));
  fmt::print("  ITL         mean {}\n", ms(r.itl_mean));
  fmt::print("  E2E         {}\n", spread(r.e2e));
  fmt::print("  batch       mean {:.1f} sequences, max {}; {} iterations{}\n", r.mean_batch,
             r.max_batch, grouped(r.iterations),
             r.preemptions > 0 ? fmt::format("; {} preemptions", grouped(r.preemptions)) : "");
}

void print_options(const ServeAnswer& a) {
  const bool slo = a.slo.any();
  const std::string capacity =
      a.closed ? (slo ? "capacity: the most concurrent users with " + slo_text(a.slo)
                      : "users: the sequences one instance runs at once")
               : (slo ? "capacity: the highest Poisson rate with " + slo_text(a.slo)
                      : "req/s: every request queued at once");
  fmt::print("instances, one per tensor-parallel size ({})\n", capacity);
  const std::string amount =
      a.closed ? (slo ? "capacity (users)" : "users") : (slo ? "capacity (req/s)" : "req/s");
  Table t({a.base.pp > 1 ? "tp x pp" : "tp", "weights/GPU", "KV cache/GPU", "requests in KV",
           "TTFT floor", "TPOT floor", "offline tok/s", amount,
           a.closed ? "users per GPU" : "req/s per GPU", ""},
          {true, true, true, true, true, true, true, true, true, false});
  std::vector<std::string> problems;
  for (const ServeOption& o : a.options) {
    if (!o.reason.empty()) {
      problems.push_back(fmt::format("{} cannot serve: {}", o.name, o.reason));
    }
    if (!o.model->feasible()) {
      t.add({cell(o), "-", "-", "-", "-", "-", "-", "-", "-", "cannot serve"});
      continue;
    }
    const InferenceModel& m = *o.model;
    const double in_kv = static_cast<double>(m.kv_tokens()) / a.workload.mean_context();
    std::vector<std::string> row = {cell(o),
                                    gib(m.weights_per_gpu()),
                                    gib(m.kv_budget_per_gpu()),
                                    grouped(static_cast<int64_t>(in_kv)),
                                    ms(m.prefill_alone(a.input).si()),
                                    ms(m.decode_step(1, static_cast<double>(a.input)).si())};
    if (o.reason.empty()) {
      row.push_back(grouped(std::llround(o.offline.output_tokens_per_s)));
      row.push_back(a.closed ? grouped(std::llround(o.amount)) : fmt::format("{:.2f}", o.amount));
      row.push_back(a.closed ? fmt::format("{:.1f}", o.per_gpu) : fmt::format("{:.2f}", o.per_gpu));
      row.push_back(&o == a.best && a.options.size() > 1 ? "<- best per GPU" : "");
    } else {
      row.insert(row.end(), {"-", "-", "-", "cannot serve"});
    }
    t.add(row);
  }
  fmt::print("{}", t.str());
  for (const std::string& line : problems) {
    fmt::print("  {}\n", line);
  }
  fmt::print(
      "TTFT floor: one prompt alone. TPOT floor: one sequence decoding. The engine runs at most "
      "{} sequences and {} tokens per iteration (data/params).\n",
      a.max_batch, a.chunk_tokens);
}

void print_answer(const ServeAnswer& a) {
  const ServeOption& b = *a.best;
  const std::string within = a.slo.any() ? " within " + slo_text(a.slo) : " at most";
  fmt::print(
      "\nanswer  one instance ({}) {} {:.3g} {}{} ({} output tokens/s); {}\n", b.name,
      a.closed ? "holds" : "serves", b.amount, unit(a), within,
      grouped(std::llround(b.tokens_per_s)),
      a.fleet
          ? fmt::format("{:.4g} {} take {} GPUs.", a.target, unit(a), a.fleet->replicas * b.gpus)
          : fmt::format("add {} to size a fleet.", a.closed ? "--target-users" : "--target-rate"));
  if (a.price) {
    const Costs k = costs(a);
    const std::string& cur = a.price->currency;
    fmt::print(
        "cost    at {:.4g} {} per GPU-hour: an instance {:.2f} {}/h, {:.3g} {} per million output "
        "tokens at that load{}\n",
        a.price->amount, cur, k.instance_hour, cur, k.per_million, cur,
        a.fleet
            ? fmt::format(", the fleet {} {} per month", grouped(std::llround(k.fleet_month)), cur)
            : "");
  } else if (a.offer != nullptr) {
    fmt::print("cost    {} has no public price: give --price VALUE/h per GPU\n", a.offer->id);
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
      .field("duration_s", r.duration.si())
      .field("output_tokens_per_s", r.output_tokens_per_s)
      .field("requests_per_s", r.requests_per_s);
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

void write_options(JsonWriter& j, const ServeAnswer& a) {
  j.key("options").begin_array();
  for (const ServeOption& o : a.options) {
    j.begin_object().field("tp", o.tp).field("pp", a.base.pp).field("feasible", o.reason.empty());
    if (!o.reason.empty()) {
      j.field("reason", o.reason);
    }
    if (o.model->feasible()) {
      j.field("weights_per_gpu_bytes", o.model->weights_per_gpu().si())
          .field("kv_cache_per_gpu_bytes", o.model->kv_budget_per_gpu().si())
          .field("kv_tokens", o.model->kv_tokens())
          .field("ttft_floor_s", o.model->prefill_alone(a.input).si())
          .field("tpot_floor_s", o.model->decode_step(1, static_cast<double>(a.input)).si());
    }
    if (o.reason.empty()) {
      j.field(a.closed ? "capacity_users" : "capacity_requests_per_s", o.amount)
          .field(a.closed ? "capacity_users_per_gpu" : "capacity_requests_per_s_per_gpu", o.per_gpu)
          .field("offline_output_tokens_per_s", o.offline.output_tokens_per_s);
    }
    j.end_object();
  }
  j.end_array();
}

void write_best(JsonWriter& j, const ServeAnswer& a) {
  const ServeOption& b = *a.best;
  j.field("chosen_tp", b.tp)
      .field("pp", a.base.pp)
      .field("replicas", a.setup.replicas)
      .field("capacity_output_tokens_per_s", b.tokens_per_s);
  if (a.price) {
    const Costs k = costs(a);
    j.key("cost")
        .begin_object()
        .field("currency", a.price->currency)
        .field("per_gpu_hour", a.price->amount)
        .field("instance_per_hour", k.instance_hour)
        .field("per_million_output_tokens", k.per_million);
    if (a.fleet) {
      j.field("fleet_per_month", k.fleet_month);
    }
    j.end_object();
  }
  write_result(j, "simulation", *a.run);
  if (a.fleet) {
    j.key("fleet")
        .begin_object()
        .field(a.closed ? "target_users" : "target_requests_per_s", a.target)
        .field("replicas", a.fleet->replicas)
        .field("gpus", a.fleet->replicas * b.gpus)
        .field("meets_objective", a.fleet->met);
    write_result(j, "simulation", a.fleet->result);
    j.end_object();
  }
}

}  // namespace

void print_serve_text(const ServeAnswer& a) {
  fmt::print("serve {} on {}, {} weights, {} KV cache, {}\n\n", a.model, a.gpu->id,
             precision_name(a.base.precision), precision_name(a.base.kv_precision), a.per_request);
  print_options(a);
  if (a.best == nullptr) {
    fmt::print("\nanswer  {} cannot serve this on {}.\n", a.model, a.gpu->id);
    return;
  }
  fmt::print("\nsimulation  {}, {} replica(s) ({}), {}, {} requests{}\n", a.best->name,
             a.setup.replicas, balancer_name(a.setup.balancer), a.load, a.workload.requests,
             a.setup.kv_policy == KvPolicy::kPaged ? ", paged KV cache" : "");
  print_result(*a.run);
  if (a.slo.any()) {
    std::string why;
    fmt::print("  objective   {}: {}\n", slo_text(a.slo),
               meets_slo(*a.run, a.slo, &why) ? "met" : "missed, " + why);
  }
  if (a.fleet) {
    fmt::print("\nfleet  {:.4g} {} within {} need {} replicas of {} = {} x {}{}\n", a.target,
               unit(a), slo_text(a.slo), a.fleet->replicas, a.best->name,
               a.fleet->replicas * a.best->gpus, a.gpu->id,
               a.fleet->met ? "" : " (not met even with these: the objective is too tight)");
    print_result(a.fleet->result);
  }
  print_answer(a);
}

void print_serve_json(const ServeAnswer& a) {
  const Workload& w = a.workload;
  JsonWriter j;
  j.begin_object()
      .field("model", a.model)
      .field("gpu", a.gpu->id)
      .field("precision", std::string(precision_name(a.base.precision)))
      .field("kv_precision", std::string(precision_name(a.base.kv_precision)))
      .field("input_tokens", a.input)
      .field("output_tokens", a.output)
      .field("load", a.load_kind)
      .field("rate_per_s", w.rate_per_s)
      .field("static_batch", a.setup.batching == Batching::kStatic ? a.setup.static_batch : 0)
      .field("users", w.users)
      .field("think_s", w.think_time.si())
      .field("requests", w.requests);
  if (a.slo.ttft_p99) {
    j.field("slo_ttft_p99_s", a.slo.ttft_p99->si());
  }
  if (a.slo.tpot_p99) {
    j.field("slo_tpot_p99_s", a.slo.tpot_p99->si());
  }
  write_options(j, a);
  if (a.best != nullptr) {
    write_best(j, a);
  } else {
    j.key("chosen_tp").null();
  }
  j.end_object();
  fmt::print("{}", j.str());
}

}  // namespace gpuplan::cli
