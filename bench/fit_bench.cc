// Speed of the models: one per-GPU memory estimate, the smallest-count search that
// `gpuplan fit` runs for every catalog GPU, training estimates and layout search (the serving
// simulator is in serving_bench.cc). Run: build/release/bench/gpuplan_bench
#include <benchmark/benchmark.h>

#include "gpuplan/catalog.h"
#include "gpuplan/fit.h"
#include "gpuplan/search.h"
#include "gpuplan/training.h"

namespace gpuplan {
namespace {

const Catalog& catalog() {
  static const Catalog c = *Catalog::load(GPUPLAN_DATA_DIR);
  return c;
}

void BM_MemoryPerGpu(benchmark::State& state) {
  const Model m = *catalog().model("llama-3.1-405b");
  MemoryJob job;
  job.layout = Parallelism{
      .tp = 8, .pp = 16, .dp = 64, .virtual_stages = 1, .sequence_parallel = true, .zero = 1};
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

// The cluster Llama 3 405B was trained on: 16,384 H100 in nodes of 8, 8 x 400G RoCE per node.
Cluster llama3_cluster() {
  Cluster c;
  c.gpu = *catalog().gpu("h100-sxm");
  c.gpus = 16384;
  c.gpus_per_node = 8;
  c.scale_up = *catalog().fabric("nvlink4");
  c.scale_out = *catalog().fabric("roce-400g");
  c.nics_per_node = 8;
  return c;
}

// One training-time estimate: Llama 3.1 405B on 16,384 H100 (tp 8, pp 16, dp 128, 4 virtual
// stages) with Llama 3's own software (its engine interleaves the uneven stages). Reports
// estimates per second.
void BM_TrainingEstimate(benchmark::State& state) {
  const Model m = *catalog().model("llama-3.1-405b");
  const Cluster c = llama3_cluster();
  TrainJob job;
  job.memory.seq = 8192;
  job.memory.micro_batch = 1;
  job.memory.layout = Parallelism{
      .tp = 8, .pp = 16, .dp = 128, .virtual_stages = 4, .sequence_parallel = true, .zero = 1};
  job.global_batch = 2048;
  apply_software(job, *catalog().software("meta-internal@2024"));
  if (!estimate_training(m, c, job, catalog().memory_params(), catalog().train_params()).feasible) {
    state.SkipWithError("the benchmarked layout must be feasible");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        estimate_training(m, c, job, catalog().memory_params(), catalog().train_params()));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TrainingEstimate);

// The whole layout search of the speed bar: Llama 3.1 405B on 16,384 H100, global
// batch 2048 x 8192 tokens, on `threads` threads. Reports layouts evaluated per second.
void BM_Search405bOn16kH100(benchmark::State& state) {
  const Model m = *catalog().model("llama-3.1-405b");
  const Cluster c = llama3_cluster();
  TrainJob base;
  base.memory.seq = 8192;
  base.global_batch = 2048;
  SearchOptions o;
  o.threads = static_cast<int>(state.range(0));
  int64_t evaluated = 0;
  for (auto _ : state) {
    const SearchResult r =
        search_layouts(m, c, base, catalog().memory_params(), catalog().train_params(), o);
    evaluated += r.evaluated;
    benchmark::DoNotOptimize(r);
  }
  state.counters["layouts/s"] =
      benchmark::Counter(static_cast<double>(evaluated), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Search405bOn16kH100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gpuplan

BENCHMARK_MAIN();
