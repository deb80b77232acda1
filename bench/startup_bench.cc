// Start-up of the gpuplan binary (issue 12): one process that runs `gpuplan --help`, and one
// that answers a small fit, from fork to exit. The planning binary links no CUDA, NCCL, MPI or
// BLAS (those are gpuplan-measure's), so this is the loader and gpuplan's own start.
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace {

// What one run of the binary used, from wait4.
struct Usage {
  long max_rss_kb = 0;
  double cpu_s = 0;  // user + system, all of its threads
};

// Runs the binary with `args`, its output to /dev/null, and waits; false if it did not exit 0.
bool run(const std::vector<std::string>& args, Usage* used) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", 1, 0);
  std::vector<std::string> text = args;
  std::vector<char*> argv;
  for (std::string& a : text) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return false;
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) {
    return false;
  }
  used->max_rss_kb = usage.ru_maxrss;
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  used->cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Counters: the child's peak resident memory and its CPU time per run (the benchmark's own CPU
// column is the parent's, which only waits).
void run_binary(benchmark::State& state, const std::vector<std::string>& args) {
  Usage used;
  double cpu = 0;
  for (auto _ : state) {
    if (!run(args, &used)) {
      state.SkipWithError("the gpuplan binary did not run");
      return;
    }
    cpu += used.cpu_s;
  }
  state.counters["max_rss_MB"] = static_cast<double>(used.max_rss_kb) / 1024.0;
  state.counters["child_cpu_ms"] = cpu / static_cast<double>(state.iterations()) * 1e3;
}

void BM_StartupHelp(benchmark::State& state) {
  run_binary(state, {GPUPLAN_BIN, "--help"});
}
BENCHMARK(BM_StartupHelp)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StartupFit(benchmark::State& state) {
  run_binary(state, {GPUPLAN_BIN, "fit", "llama-3.1-8b", "--task", "infer", "--gpu", "h100-sxm",
                     "--data", GPUPLAN_DATA_DIR});
}
BENCHMARK(BM_StartupFit)->Unit(benchmark::kMillisecond)->UseRealTime();

// `gpuplan plan` on each example job (issue 12: under 0.2 s of CPU each): start, load the
// catalog, try every offer and node count, answer, exit.
void BM_PlanExample(benchmark::State& state, const char* job) {
  run_binary(state, {GPUPLAN_BIN, "plan", std::string(GPUPLAN_EXAMPLES_DIR) + "/" + job, "--data",
                     GPUPLAN_DATA_DIR});
}
BENCHMARK_CAPTURE(BM_PlanExample, finetune_70b_brazil, "plan-finetune-70b-brazil.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanExample, finetune_70b_brazil_full, "plan-finetune-70b-brazil-full.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanExample, pretrain_7b, "plan-pretrain-7b.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanExample, serve_70b_2000_users, "plan-serve-70b-2000-users.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanExample, train_175b, "plan-train-175b.toml")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
