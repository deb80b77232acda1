#include "output.h"

namespace gpuplan::cli {

Capture*& thread_capture() {
  thread_local Capture* capture = nullptr;
  return capture;
}

}  // namespace gpuplan::cli
