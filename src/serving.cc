#include "gpuplan/serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gpuplan/fields.h"
#include "gpuplan/suggest.h"
#include "name_table.h"

namespace gpuplan {
namespace {

constexpr std::array kBalancers = {
    std::pair{Balancer::kRoundRobin, std::string_view("round-robin")},
    std::pair{Balancer::kLeastLoaded, std::string_view("least-loaded")},
    std::pair{Balancer::kLeastTokens, std::string_view("least-tokens")},
};

}  // namespace

std::string_view balancer_name(Balancer b) {
  return detail::name_of(kBalancers, b);
}

Result<Balancer> parse_balancer(std::string_view name) {
  return detail::parse_from(kBalancers, name, "balancer");
}

std::vector<std::string> balancer_names() {
  return detail::names_in(kBalancers);
}

RunDifference widest_difference(const ServingResult& a, const ServingResult& b) {
  constexpr double kLatencyFloor = 3e-5;  // 0.03 ms: below that, latencies are equal
  RunDifference widest;
  auto consider = [&](std::string measure, double x, double y, bool latency) {
    const double larger = std::max(std::abs(x), std::abs(y));
    const double gap = std::abs(x - y) - (latency ? kLatencyFloor : 0.0);
    const double apart = larger > 0 ? std::max(0.0, gap) / larger : 0.0;
    if (widest.measure.empty() || apart > widest.apart) {
      widest = {std::move(measure), x, y, apart, latency};
    }
  };
  consider("throughput", a.output_tokens_per_s, b.output_tokens_per_s, false);
  for (const auto& [name, p, q] :
       {std::tuple{"TTFT", a.ttft, b.ttft}, {"TPOT", a.tpot, b.tpot}, {"E2E", a.e2e, b.e2e}}) {
    consider(fmt::format("{} p50", name), p.p50, q.p50, true);
    consider(fmt::format("{} p90", name), p.p90, q.p90, true);
    consider(fmt::format("{} p99", name), p.p99, q.p99, true);
  }
  return widest;
}

bool runs_agree(const ServingResult& a, const ServingResult& b, double tolerance) {
  return widest_difference(a, b).apart <= tolerance;
}

Workload steady_run(const Workload& w, int64_t requests, const SteadyState& steady) {
  Workload run = w;
  run.requests = std::max(requests, steady.per_user * w.users);
  const auto edge = static_cast<int64_t>(steady.edge * static_cast<double>(run.requests));
  run.warmup = std::max(w.users, edge);
  run.cooldown = edge;
  return run;
}

SettledResult simulate_settled(const InferenceModel& model, const Workload& w,
                               const ServingSetup& s, const SteadyState& steady) {
  SettledResult out;
  if ((w.rate_per_s <= 0 && w.users <= 0) || s.batching == Batching::kStatic) {
    out.result = simulate_serving(model, w, s);
    out.runs = 1;
    return out;
  }
  int64_t n = steady.first;
  std::optional<ServingResult> last;
  for (;;) {
    const Workload run = steady_run(w, n, steady);
    n = run.requests;
    ServingResult r = simulate_serving(model, run, s);
    ++out.runs;
    if (!r.feasible || (last && runs_agree(*last, r, steady.tolerance))) {
      out.result = std::move(r);
      out.previous = std::move(last);
      return out;
    }
    if (n >= steady.most) {
      // A queue that grows without bound waits in proportion to the run's length: its mean TTFT
      // doubles with the run. A bounded one's converges, however slowly. Halfway between, on a
      // log scale: the longest run waiting more than sqrt(2) times the run half its length.
      out.growing = last && r.ttft.mean > std::sqrt(2.0) * last->ttft.mean;
      out.result = std::move(r);
      out.previous = std::move(last);
      out.settled = false;
      return out;
    }
    last = std::move(r);
    n = std::min(steady.most, 2 * n);
  }
}

bool meets_slo(const ServingResult& r, const Slo& slo, Text* why) {
  auto over = [&](const char* what, double ms, double bound_ms, int decimals) {
    if (why != nullptr) {
      const int bound_decimals = bound_ms >= 1 ? decimals : 3;  // a bound under 1 ms not as 0
      *why = {fmt::format("p99 {} {} ms is over {} ms", what, number(ms, decimals, Lang::kEn),
                          number(bound_ms, bound_decimals, Lang::kEn)),
              fmt::format("p99 {} de {} ms passa de {} ms", what, number(ms, decimals, Lang::kPt),
                          number(bound_ms, bound_decimals, Lang::kPt))};
    }
    return false;
  };
  if (slo.ttft_p99 && r.ttft.p99 > slo.ttft_p99->si()) {
    return over("TTFT", r.ttft.p99 * 1e3, slo.ttft_p99->si() * 1e3, 0);
  }
  if (slo.tpot_p99 && r.tpot.p99 > slo.tpot_p99->si()) {
    return over("TPOT", r.tpot.p99 * 1e3, slo.tpot_p99->si() * 1e3, 1);
  }
  return true;
}

namespace {

// Capacity::offline on any simulator: `simulate(w)` serves `w`.
template <typename Simulate>
ServingResult saturated(const Simulate& simulate, const Workload& w, int64_t at_once) {
  Workload run = w;
  run.rate_per_s = 0;
  // Eight times what the engines run at once, and at least four search runs' worth. Its
  // latencies are those of its middle half, admitted after the first requests' joint start and
  // before the drain, and its throughput and batch those of the time between the first tokens
  // of that half's first and last request, while the queue still holds the last quarter: the
  // engines' steady, saturated state. (The drain, by contrast, lasts as long as the longest
  // requests of the last batch: a long tail of lengths makes it a matter of chance.) The half
  // measured is thousands of requests, so that a long tail's mean over them (a lognormal's of
  // sd 3/4 of its mean: 0.75 / sqrt(2,000) = 1.7 %) is close to the workload's.
  run.requests = std::clamp<int64_t>(8 * at_once, 4 * kSearchRun.first, SteadyState{}.most);
  run.warmup = run.requests / 4;
  run.cooldown = run.requests / 4;
  ServingResult r = simulate(run);
  // Requests by their tokens: the window's requests are a sample of the workload's lengths,
  // while the engines' token rate hardly depends on which requests they hold, so the rate of
  // requests is the token rate over the workload's mean output (and the capacity times the
  // mean output, the token rate an answer prints beside it, is this run's).
  const double mean_output = w.mean_output();
  if (r.feasible && mean_output > 0 && r.requests_per_s > 0) {
    const double k = r.output_tokens_per_s / mean_output / r.requests_per_s;
    r.requests_per_s *= k;
    r.goodput_per_s *= k;
  }
  return r;
}

// capacity_under_slo's bisection over the rates of Poisson arrivals, on any simulator:
// `simulate(w)` serves `w` (rate 0: every request queued at once).
template <typename Simulate>
Capacity bisect_capacity(const Simulate& simulate, const Workload& w, const Slo& slo,
                         int64_t requests, int64_t at_once) {
  Capacity c;
  c.offline = saturated(simulate, w, at_once);
  if (!c.offline.feasible) {
    c.reason = c.offline.reason;
    return c;
  }
  const double ceiling = c.offline.requests_per_s;
  if (!slo.any()) {
    c.feasible = true;
    c.max_rate_per_s = ceiling;
    c.at_max = c.offline;
    return c;
  }
  // One run of `requests` (kSearchRun); with `settle`, runs doubling while they meet the
  // objective, until two agree or the longest (kSearchRun.most) still meets it. The last run
  // says whether the rate holds.
  auto run = [&](double rate, bool settle) {
    Workload p = w;
    p.rate_per_s = rate;
    std::optional<ServingResult> last;
    for (int64_t n = requests;; n *= 2) {
      ServingResult r = simulate(steady_run(p, n, kSearchRun));
      if (!settle || !meets_slo(r, slo) || (last && runs_agree(*last, r, kSearchRun.tolerance)) ||
          2 * n > std::max(kSearchRun.most, requests)) {
        return r;
      }
      last = std::move(r);
    }
  };
  // A light load: 2 % of the ceiling. Missing the objective there means no rate meets it.
  const double floor = ceiling * 0.02;
  double low = floor;
  ServingResult light = run(low, false);
  Text why;
  if (!meets_slo(light, slo, &why)) {
    c.reason = {
        fmt::format("even a light load ({:.3g} requests/s) misses the objective: {}", low, why.en),
        fmt::format("mesmo uma carga leve ({} requisições/s) perde o objetivo: {}",
                    number(low, low < 1 ? 3 : 2, Lang::kPt), why.pt)};
    c.at_max = std::move(light);
    return c;
  }
  c.feasible = true;
  c.max_rate_per_s = low;
  c.at_max = std::move(light);
  // Bisection to 1 % between `low` (meets) and `high` (misses, or the ceiling).
  auto bisect = [&](double high, bool settle) {
    while (high - low > 0.01 * low) {
      const double mid = 0.5 * (low + high);
      ServingResult r = run(mid, settle);
      if (meets_slo(r, slo)) {
        low = mid;
        c.max_rate_per_s = mid;
        c.at_max = std::move(r);
      } else {
        high = mid;
      }
    }
  };
  bisect(ceiling, false);
  // Near the knee a short run can meet the objective at a rate whose queue grows slowly: the rate
  // found must hold in runs long enough to settle. Where it does not, rates 5 % apart below it
  // are tried until one holds, and the bisection goes on between the two, every rate settled.
  const double quick = low;
  ServingResult held = run(quick, true);
  double missed = quick;
  while (!meets_slo(held, slo) && low > floor) {
    missed = low;
    low = std::max(floor, low * 0.95);
    held = run(low, true);
  }
  c.max_rate_per_s = low;
  c.at_max = std::move(held);
  if (low < quick) {
    bisect(missed, true);
  }
  return c;
}

}  // namespace

ServingResult saturated_serving(const InferenceModel& model, const Workload& w,
                                const ServingSetup& s) {
  Workload open = w;
  open.users = 0;
  return saturated([&](const Workload& p) { return simulate_serving(model, p, s); }, open,
                   sequences_at_once(model, w, s));
}

Capacity capacity_under_slo(const InferenceModel& model, const Workload& w, const ServingSetup& s,
                            const Slo& slo) {
  Workload open = w;
  open.users = 0;
  return bisect_capacity([&](const Workload& p) { return simulate_serving(model, p, s); }, open,
                         slo, kSearchRun.first, sequences_at_once(model, w, s));
}

Capacity disaggregated_capacity(const InferenceModel& prefill, const InferenceModel& decode,
                                const Workload& w, const DisaggregatedSetup& s, const Slo& slo,
                                int64_t requests) {
  Workload open = w;
  open.users = 0;
  ServingSetup decoders;
  decoders.replicas = s.decode_replicas;
  return bisect_capacity(
      [&](const Workload& p) { return simulate_disaggregated(prefill, decode, p, s); }, open, slo,
      requests, sequences_at_once(decode, w, decoders));
}

int64_t sequences_at_once(const InferenceModel& model, const Workload& w, const ServingSetup& s) {
  const int64_t per_engine = std::min(
      model.engine_max_batch(), static_cast<int64_t>(sequences_in_kv(model, w)) / model.engines());
  return per_engine * model.engines() * s.replicas;
}

int64_t offline_requests(int64_t at_once) {
  return std::clamp<int64_t>(8 * at_once, kSearchRun.first, SteadyState{}.most);
}

UserCapacity users_under_slo(const InferenceModel& model, const Workload& w, const ServingSetup& s,
                             const Slo& slo) {
  UserCapacity c;
  const int64_t at_once = sequences_at_once(model, w, s);
  c.reason = kv_too_small(model, w);
  if (!c.reason.en.empty()) {
    return c;
  }
  if (at_once < 1) {
    c.reason = {"the KV cache of an instance holds less than one average request",
                "o cache KV de uma instância comporta menos de uma requisição média"};
    return c;
  }
  auto run = [&](int64_t users) {
    Workload p = w;
    p.rate_per_s = 0;
    p.users = users;
    return simulate_serving(model, steady_run(p, kSearchRun.first, kSearchRun), s);
  };
  ServingResult one = run(1);
  Text why;
  if (!meets_slo(one, slo, &why)) {
    c.reason = {fmt::format("even one user misses the objective: {}", why.en),
                fmt::format("mesmo um usuário perde o objetivo: {}", why.pt)};
    c.at_max = std::move(one);
    return c;
  }
  c.feasible = true;
  c.max_users = 1;
  c.at_max = std::move(one);
  c.at_once = at_once;
  // Bisection over [1, what the instances run at once]: more users than that only queue.
  int64_t low = 1;
  int64_t high = at_once + 1;  // the first count known (or assumed) to miss
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    ServingResult r = run(mid);
    if (meets_slo(r, slo)) {
      low = mid;
      c.max_users = mid;
      c.at_max = std::move(r);
    } else {
      high = mid;
    }
  }
  return c;
}

int64_t closed_loop_requests(const Workload& w, int64_t users) {
  return std::max(w.requests, 4 * users);
}

RequestLength Workload::length(int64_t request) const {
  if (!lengths.empty()) {
    return lengths[static_cast<size_t>(request) % lengths.size()];
  }
  RequestLength l{input_tokens, output_tokens};
  if (input_distribution) {
    l.input = input_distribution->at(request_uniform(seed, request, 0));
  }
  if (output_distribution) {
    l.output = output_distribution->at(request_uniform(seed, request, 1));
  }
  return l;
}

double Workload::mean_context() const {
  if (lengths.empty()) {
    return mean_input() + static_cast<double>(beams) * mean_output();
  }
  double sum = 0;
  for (const RequestLength& l : lengths) {
    sum += static_cast<double>(held_tokens(l));
  }
  return sum / static_cast<double>(lengths.size());
}

double Workload::mean_input() const {
  if (lengths.empty()) {
    return input_distribution ? input_distribution->mean() : static_cast<double>(input_tokens);
  }
  double sum = 0;
  for (const RequestLength& l : lengths) {
    sum += static_cast<double>(l.input);
  }
  return sum / static_cast<double>(lengths.size());
}

double Workload::mean_output() const {
  if (lengths.empty()) {
    return output_distribution ? output_distribution->mean() : static_cast<double>(output_tokens);
  }
  double sum = 0;
  for (const RequestLength& l : lengths) {
    sum += static_cast<double>(l.output);
  }
  return sum / static_cast<double>(lengths.size());
}

int64_t Workload::max_context() const {
  if (lengths.empty()) {
    return max_input() + max_output();
  }
  int64_t most = 0;
  for (const RequestLength& l : lengths) {
    most = std::max(most, l.input + l.output);
  }
  return most;
}

int64_t Workload::max_input() const {
  if (lengths.empty()) {
    return input_distribution ? input_distribution->max() : input_tokens;
  }
  int64_t most = 0;
  for (const RequestLength& l : lengths) {
    most = std::max(most, l.input);
  }
  return most;
}

int64_t Workload::max_output() const {
  if (lengths.empty()) {
    return output_distribution ? output_distribution->max() : output_tokens;
  }
  int64_t most = 0;
  for (const RequestLength& l : lengths) {
    most = std::max(most, l.output);
  }
  return most;
}

int64_t Workload::cached_tokens(int64_t input) const {
  if (prefix_hit <= 0 || input <= 1) {
    return 0;
  }
  const auto hit = static_cast<int64_t>(std::floor(prefix_hit * static_cast<double>(input)));
  return std::min(hit, input - 1);
}

double Workload::mean_cached() const {
  if (prefix_hit <= 0) {
    return 0;
  }
  if (input_distribution && lengths.empty()) {
    // A distribution's floor is left out: at most one token per request.
    return std::min(prefix_hit * mean_input(), mean_input() - 1.0);
  }
  if (lengths.empty()) {
    return static_cast<double>(cached_tokens(input_tokens));
  }
  double sum = 0;
  for (const RequestLength& l : lengths) {
    sum += static_cast<double>(cached_tokens(l.input));
  }
  return sum / static_cast<double>(lengths.size());
}

int64_t Workload::prefix_store() const {
  return cached_tokens(max_input());
}

int64_t Workload::max_own_context() const {
  if (lengths.empty()) {
    // input - cached_tokens(input) never falls as the input grows.
    return held_tokens({max_input(), max_output()}) - cached_tokens(max_input());
  }
  int64_t most = 0;
  for (const RequestLength& l : lengths) {
    most = std::max(most, held_tokens(l) - cached_tokens(l.input));
  }
  return most;
}

Result<std::vector<RequestLength>> load_request_lengths(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return fail(path, "cannot open the file", "check the path");
  }
  std::vector<RequestLength> out;
  std::string line;
  int64_t number = 0;
  bool header = false;
  // One positive integer, all of `text`.
  auto count = [](std::string_view text) -> std::optional<int64_t> {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
      text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
      text.remove_suffix(1);
    }
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 1) {
      return std::nullopt;
    }
    return v;
  };
  while (std::getline(in, line)) {
    ++number;
    const std::string where = fmt::format("{}:{}", path, number);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty() || line.front() == '#') {
      continue;
    }
    if (!header) {
      if (line != "input_tokens,output_tokens") {
        return fail(where, fmt::format("the header is '{}'", line),
                    "the first line must be 'input_tokens,output_tokens'");
      }
      header = true;
      continue;
    }
    const size_t comma = line.find(',');
    const std::optional<int64_t> a =
        comma == std::string::npos ? std::nullopt : count(std::string_view(line).substr(0, comma));
    const std::optional<int64_t> b =
        comma == std::string::npos ? std::nullopt : count(std::string_view(line).substr(comma + 1));
    if (!a || !b) {
      return fail(where, fmt::format("'{}' is not two token counts", line),
                  "each line is input_tokens,output_tokens, both positive integers");
    }
    GPUPLAN_RETURN_IF_ERROR(check_count(fields::kRequestTokens, *a, where + " input_tokens"));
    GPUPLAN_RETURN_IF_ERROR(check_count(fields::kRequestTokens, *b, where + " output_tokens"));
    out.push_back({*a, *b});
  }
  if (out.empty()) {
    return fail(path, "no requests", "give a header line and one line per request");
  }
  return out;
}

}  // namespace gpuplan
