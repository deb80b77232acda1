// Speed of the memory model: one per-GPU estimate, and the smallest-count search that
// `gpuplan fit` runs for every catalog GPU. Run: build/release/bench/gpuplan_bench
#include <benchmark/benchmark.h>

#include "gpuplan/catalog.h"
#include "gpuplan/fit.h"

namespace gpuplan {
namespace {

const Catalog& catalog() {
  static const Catalog c = *Catalog::load(GPUPLAN_DATA_DIR);
  return c;
}

void BM_MemoryPerGpu(benchmark::State& state) {
  const Model m = *catalog().model("llama-3.1-405b");
  MemoryJob job;
  job.layout = Parallelism{8, 16, 64, 1, true, 1};
  for (auto _ : state) {
    benchmark::DoNotOptimize(memory_per_gpu(m, job, catalog().memory_params()));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MemoryPerGpu);

void BM_SmallestFitH200(benchmark::State& state) {
  const Model m = *catalog().model("llama-3.1-405b");
  const Gpu& g = **catalog().gpu("h200-sxm");
  MemoryJob job;
  int64_t layouts = 0;
  for (auto _ : state) {
    const SmallestFit s = smallest_fit(m, job, g, catalog().memory_params(), FitSearch{});
    layouts += s.layouts_evaluated;
    benchmark::DoNotOptimize(s);
  }
  state.counters["layouts/s"] =
      benchmark::Counter(static_cast<double>(layouts), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SmallestFitH200);

}  // namespace
}  // namespace gpuplan

BENCHMARK_MAIN();
