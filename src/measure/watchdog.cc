#include "measure/watchdog.h"

#include <fmt/format.h>

namespace gpuplan::measure {

Watchdog::Watchdog(Communicator& comm, double timeout_s)
    : comm_(comm), timeout_s_(timeout_s), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::begin(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  busy_ = true;
  what_ = what;
  since_ = std::chrono::steady_clock::now();
}

void Watchdog::end() {
  std::lock_guard<std::mutex> lock(mu_);
  busy_ = false;
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (busy_ && !stop_) {
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
      if (waited > timeout_s_) {
        const std::string message = fmt::format(
            "gpuplan measure: error: rank {} made no progress for {:.0f} s in {}; a peer rank "
            "died or hangs (raise --timeout if the step is legitimately this slow)",
            comm_.rank(), waited, what_);
        lock.unlock();
        comm_.abort(message);
      }
    }
  }
}

}  // namespace gpuplan::measure
