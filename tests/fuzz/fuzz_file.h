// The fuzzed bytes as a file: gpuplan's readers take paths, as their users give them.
#ifndef GPUPLAN_TESTS_FUZZ_FUZZ_FILE_H_
#define GPUPLAN_TESTS_FUZZ_FUZZ_FILE_H_

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace gpuplan::fuzz {

// The input files this process wrote; removed when it exits normally (a crash leaves them,
// next to the crashing input libFuzzer saves).
inline std::vector<std::string>& written_paths() {
  static std::vector<std::string> paths;
  return paths;
}

inline void remove_written_paths() {
  for (const std::string& path : written_paths()) {
    std::remove(path.c_str());
  }
}

// Writes `size` bytes to a per-process file under $TMPDIR (or /tmp) with `suffix` and returns
// its path; the same path is reused by every input of the run and removed at exit.
inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") +
                           "/gpuplan-fuzz-" + std::to_string(getpid()) + suffix;
  std::vector<std::string>& paths = written_paths();
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) {
    if (paths.empty()) {
      std::atexit(remove_written_paths);  // registered after `paths` exists: runs before it dies
    }
    paths.push_back(path);
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::abort();  // the harness cannot run at all: say so loudly
  }
  if (size > 0 && std::fwrite(data, 1, size, f) != size) {
    std::abort();
  }
  std::fclose(f);
  return path;
}

// Every answer gpuplan gives from a reader is a value or an Error with a message; reading the
// message makes sure it is built (and sanitizers see any bad memory behind it).
template <class R>
void consume(const R& result) {
  if (!result) {
    volatile size_t n = result.error().message().size();
    (void)n;
  }
}

}  // namespace gpuplan::fuzz

#endif  // GPUPLAN_TESTS_FUZZ_FUZZ_FILE_H_
