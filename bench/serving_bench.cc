// Speed of the serving simulator (issue 12): the event-driven simulator that gpuplan uses and
// the iteration-by-iteration one it is tested against, on the same workloads. Counters:
// requests and iterations simulated per second of CPU time, and the process's peak resident
// memory (max_rss_MB, which only grows: run one case per process to read it for that case,
// e.g. --benchmark_filter=BM_ServingFleet/10000000).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "gpuplan/catalog.h"
#include "gpuplan/serving.h"
#include "serving_sim.h"

namespace gpuplan {
namespace {

const Catalog& catalog() {
  static const Catalog c = *Catalog::load(GPUPLAN_DATA_DIR);
  return c;
}

// Llama 3.1 70B in bf16 on 4 H100s (tp 4), the instance of examples/serve-70b-h100-chat.
const InferenceModel& llama70b_tp4() {
  static const InferenceModel m = [] {
    Instance in;
    in.gpu = *catalog().gpu("h100-sxm");
    in.scale_up = *catalog().fabric("nvlink4");
    in.tp = 4;
    return InferenceModel(*catalog().model("llama-3.1-70b"), in, catalog().memory_params(),
                          catalog().train_params(), catalog().inference_params());
  }();
  return m;
}

using Simulator = ServingResult (*)(const InferenceModel&, const Workload&, const ServingSetup&);

void simulate(benchmark::State& state, Simulator sim, const Workload& w, const ServingSetup& s) {
  int64_t iterations = 0;
  for (auto _ : state) {
    const ServingResult r = sim(llama70b_tp4(), w, s);
    iterations += r.iterations;
    benchmark::DoNotOptimize(r);
  }
  state.counters["iterations/s"] =
      benchmark::Counter(static_cast<double>(iterations), benchmark::Counter::kIsRate);
  state.counters["requests/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * w.requests), benchmark::Counter::kIsRate);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["max_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// One instance, 1,000 Poisson requests of 467 -> 256 tokens at 16 requests/s (about 1,400
// iterations): one simulation of `gpuplan serve`'s capacity search.
Workload one_instance() {
  Workload w;
  w.requests = 1000;
  w.input_tokens = 467;
  w.output_tokens = 256;
  w.rate_per_s = 16;
  return w;
}

void BM_ServingSimulation(benchmark::State& state) {
  simulate(state, simulate_serving, one_instance(), ServingSetup{});
}
BENCHMARK(BM_ServingSimulation)->Unit(benchmark::kMillisecond);

void BM_ServingSimulationStepwise(benchmark::State& state) {
  simulate(state, detail::simulate_serving_stepwise, one_instance(), ServingSetup{});
}
BENCHMARK(BM_ServingSimulationStepwise)->Unit(benchmark::kMillisecond);

// The fleet: 8 replicas of that instance behind the least-loaded balancer, Poisson
// arrivals at 128 requests/s (16 per replica), `requests` requests of 467 -> 256 tokens.
Workload fleet(int64_t requests) {
  Workload w = one_instance();
  w.requests = requests;
  w.rate_per_s = 128;
  return w;
}

ServingSetup eight() {
  ServingSetup s;
  s.replicas = 8;
  return s;
}

void BM_ServingFleet(benchmark::State& state) {
  simulate(state, simulate_serving, fleet(state.range(0)), eight());
}
BENCHMARK(BM_ServingFleet)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_ServingFleetStepwise(benchmark::State& state) {
  simulate(state, detail::simulate_serving_stepwise, fleet(state.range(0)), eight());
}
BENCHMARK(BM_ServingFleetStepwise)->Arg(1'000'000)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace gpuplan
