// Command-line parsing shared by the subcommands (CLI11 stays in the command files that need it).
#ifndef GPUPLAN_TOOLS_FLAGS_H_
#define GPUPLAN_TOOLS_FLAGS_H_

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "command.h"

namespace gpuplan::cli {

// Parses `args` (args[0] is "gpuplan <command>") into `app`. Returns the exit status to end
// with — 0 after printing --help, 2 after a one-line error for bad flags — or nullopt to go on.
inline std::optional<int> parse_flags(CLI::App& app, const std::vector<std::string>& args,
                                      const std::string& command) {
  std::vector<const char*> argv;
  for (const std::string& a : args) {
    argv.push_back(a.c_str());
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return report_error(command, Error{"", e.what(), fmt::format("run '{} --help'", args.front())},
                        kExitUsage);
  }
  return std::nullopt;
}

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_FLAGS_H_
