// Where a command writes its report and its errors: stdout and stderr, or, while a Capture is
// installed on the calling thread, two strings. `gpuplan web` runs commands on its worker
// threads and answers with what they wrote, so every report goes through emit() and every
// error through emit_error(), never straight to a stream.
#ifndef GPUPLAN_TOOLS_OUTPUT_H_
#define GPUPLAN_TOOLS_OUTPUT_H_

#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "gpuplan/result.h"

namespace gpuplan::cli {

struct Capture {
  std::string out;
  std::string err;
  std::optional<Error> error;  // the error report_error() wrote to `err`, in parts
};

// The calling thread's capture, or null for the real streams.
Capture*& thread_capture();

// Installs `c` on this thread for the scope's lifetime.
class ScopedCapture {
 public:
  explicit ScopedCapture(Capture* c) : previous_(thread_capture()) { thread_capture() = c; }
  ~ScopedCapture() { thread_capture() = previous_; }
  ScopedCapture(const ScopedCapture&) = delete;
  ScopedCapture& operator=(const ScopedCapture&) = delete;

 private:
  Capture* previous_;
};

template <class... T>
void emit(fmt::format_string<T...> format, T&&... args) {
  if (Capture* c = thread_capture()) {
    fmt::format_to(std::back_inserter(c->out), format, std::forward<T>(args)...);
  } else {
    fmt::print(format, std::forward<T>(args)...);
  }
}

template <class... T>
void emit_error(fmt::format_string<T...> format, T&&... args) {
  if (Capture* c = thread_capture()) {
    fmt::format_to(std::back_inserter(c->err), format, std::forward<T>(args)...);
  } else {
    fmt::print(stderr, format, std::forward<T>(args)...);
  }
}

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_OUTPUT_H_
