// gpuplan: answers, with numbers that hold up, whether a model fits, how long training takes
// and what it costs, on which GPUs. Each subcommand lives in its own file.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "command.h"
#include "gpuplan/suggest.h"

namespace gpuplan::cli {

namespace {

struct Command {
  const char* name;
  const char* help;
  CommandFn run;
};

// The subcommand table (ninja's tool table idea).
constexpr Command kCommands[] = {
    {"plan",
     "one GPU or a cluster, which, how many, how long, at what cost - and why not the others",
     run_plan},
    {"fit", "does the model fit in GPU memory: itemised memory, verdict, smallest GPU counts",
     run_fit},
    {"train", "step time, throughput, MFU and where the time goes for one training layout",
     run_train},
    {"scale", "scaling efficiency from 1 to N GPUs, side by side per fabric", run_scale},
    {"serve", "serving capacity: latency, requests/s under an objective, replicas needed",
     run_serve},
    {"validate", "predicted vs published results, row by row", run_validate},
    {"measure", "run collectives and a data-parallel training loop on real machines (mpirun)",
     run_measure},
    {"calibrate", "fold measurements into a profile that train, scale and plan use", run_calibrate},
    {"catalog", "list and show the GPUs, fabrics, models and offers gpuplan knows", run_catalog},
    {"web", "the answers over HTTP and a page to ask them from (loopback by default)", run_web},
};

void print_usage() {
  emit(
      "usage: gpuplan <command> [options]\n\n"
      "gpuplan answers the questions asked before renting or buying GPUs for AI: does the model\n"
      "fit, on which GPUs and how many, with numbers that show their arithmetic.\n\ncommands:\n");
  for (const Command& c : kCommands) {
    emit("  {:<10} {}\n", c.name, c.help);
  }
  emit("\nRun 'gpuplan <command> --help' for a command's options.\n");
}

int run(int argc, char** argv) {
  if (argc < 2) {
    emit_error("gpuplan: error: no command given; run 'gpuplan --help' for the list\n");
    return kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage();
    return kExitOk;
  }
  if (name == "--version") {
    emit("gpuplan {}\n", GPUPLAN_VERSION);
    return kExitOk;
  }
  std::vector<std::string> names;
  for (const Command& c : kCommands) {
    if (name == c.name) {
      std::vector<std::string> args = {fmt::format("gpuplan {}", c.name)};
      args.insert(args.end(), argv + 2, argv + argc);
      return c.run(args);
    }
    names.emplace_back(c.name);
  }
  emit_error("gpuplan: error: unknown command '{}'; {}\n", name, suggestion_hint(name, names));
  return kExitUsage;
}

}  // namespace
}  // namespace gpuplan::cli

int main(int argc, char** argv) {
  try {
    return gpuplan::cli::run(argc, argv);
  } catch (const std::exception& e) {
    // A last resort: the library reports bad input as Errors, so reaching here is a bug.
    std::fprintf(stderr, "gpuplan: internal error: %s\n", e.what());
    return gpuplan::cli::kExitError;
  }
}
