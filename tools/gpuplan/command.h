// The pieces every gpuplan subcommand shares: its entry point signature, the data-directory
// option, and how an Error becomes one line on stderr and an exit status.
#ifndef GPUPLAN_TOOLS_COMMAND_H_
#define GPUPLAN_TOOLS_COMMAND_H_

#include <string>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/result.h"
#include "output.h"

namespace gpuplan::cli {

// Exit statuses: 0 success, 1 bad input or environment, 2 usage (flags).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// A subcommand: receives its own arguments (argv[0] is "gpuplan <name>") and returns an
// exit status. It writes its report to stdout and errors to stderr.
using CommandFn = int (*)(const std::vector<std::string>& args);

int run_fit(const std::vector<std::string>& args);
int run_catalog(const std::vector<std::string>& args);
int run_validate(const std::vector<std::string>& args);
int run_train(const std::vector<std::string>& args);
int run_scale(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);
int run_plan(const std::vector<std::string>& args);
// Hands over to gpuplan-measure (measure_handover.cc), which runs run_measure_here.
int run_measure(const std::vector<std::string>& args);
int run_measure_here(const std::vector<std::string>& args);  // measure_command.cc
int run_calibrate(const std::vector<std::string>& args);
int run_web(const std::vector<std::string>& args);

// The kinds `gpuplan catalog list` takes, in the order it lists them ("gpus", "fabrics", ...):
// the web's /api/v1/catalog/{kind} serves the same.
std::vector<std::string> catalog_kinds();

// Loads the catalog and, when `profile` is given, applies it and says so on stdout (unless
// `quiet`, for JSON output).
Result<Catalog> load_catalog_with_profile(const std::string& data, const std::string& profile,
                                          bool quiet);

// The data directory: --data if given, else $GPUPLAN_DATA, else the one the build knows.
std::string data_dir(const std::string& flag_value);

// Loads the catalog from data_dir(flag_value).
Result<Catalog> load_catalog(const std::string& flag_value);

// Prints "gpuplan <command>: error: <message>" and returns `status`.
int report_error(const std::string& command, const Error& e, int status = kExitError);

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_COMMAND_H_
