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

// Runs the binary with `args`, its output to /dev/null, and waits; false if it did not exit 0.
bool run(const std::vector<std::string>& args, long* max_rss_kb) {
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
  *max_rss_kb = usage.ru_maxrss;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void run_binary(benchmark::State& state, const std::vector<std::string>& args) {
  long rss = 0;
  for (auto _ : state) {
    if (!run(args, &rss)) {
      state.SkipWithError("the gpuplan binary did not run");
      return;
    }
  }
  state.counters["max_rss_MB"] = static_cast<double>(rss) / 1024.0;
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

}  // namespace
