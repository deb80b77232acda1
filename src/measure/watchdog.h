// Ends a measurement that stops making progress: a rank that died mid-collective or hangs
// would otherwise keep its peers waiting forever. Each rank runs one watchdog thread; the
// harness marks the start and end of every step, and a step that runs past the timeout aborts
// the whole job with a message naming the rank and the step.
#ifndef GPUPLAN_SRC_MEASURE_WATCHDOG_H_
#define GPUPLAN_SRC_MEASURE_WATCHDOG_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "measure/communicator.h"

namespace gpuplan::measure {

class Watchdog {
 public:
  Watchdog(Communicator& comm, double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // A step that must end within the timeout begins / ends.
  void begin(const std::string& what);
  void end();

 private:
  void watch();

  Communicator& comm_;
  const double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;
  bool stop_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

}  // namespace gpuplan::measure

#endif  // GPUPLAN_SRC_MEASURE_WATCHDOG_H_
