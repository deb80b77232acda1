// gpuplan measure hands over to gpuplan-measure, the executable beside it that links MPI, NCCL,
// CUDA and BLAS (measure_main.cc), so that the planning commands, the web server and every
// `--help` start without loading them.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "command.h"

namespace gpuplan::cli {

int run_measure(const std::vector<std::string>& args) {
#ifndef GPUPLAN_MEASURE_TOOL
  (void)args;
  return report_error("measure", Error{"", "this gpuplan was built without MPI",
                                       "install Open MPI (scripts/setup) and rebuild with "
                                       "-DGPUPLAN_WITH_MPI=ON"});
#else
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path tool = self.parent_path() / GPUPLAN_MEASURE_TOOL;
  if (ec || !std::filesystem::is_regular_file(tool, ec)) {
    return report_error("measure", Error{"", fmt::format("{}: not found", tool.string()),
                                         "gpuplan measure runs the gpuplan-measure built beside "
                                         "gpuplan; build or install both"});
  }
  std::vector<std::string> argv_text = {GPUPLAN_MEASURE_TOOL};
  argv_text.insert(argv_text.end(), args.begin() + 1, args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(tool.c_str(), argv.data());
  return report_error(
      "measure",
      Error{"", fmt::format("cannot run {}: {}", tool.string(), std::strerror(errno)), ""});
#endif
}

}  // namespace gpuplan::cli
