// Why a job cannot run somewhere, as a kind that programs branch on and front ends name (the
// sentence that goes with it says the numbers). Answers carry a Why next to their reason text.
#ifndef GPUPLAN_WHY_H_
#define GPUPLAN_WHY_H_

#include <string_view>

namespace gpuplan {

enum class Why {
  kNone,         // it runs
  kLayout,       // the parallel layout does not suit the model, the GPUs or the batch
  kMemory,       // no layout holds it in the GPUs' memory
  kCalibration,  // the GPU has no calibration to time it with
  kObjective,    // it runs, but misses the latency objective
  kNodes,        // it needs more nodes than the offer has
  kResidency,    // the offer has no site where the data may go
  kDeadline,     // it runs, but finishes after the deadline
  kBudget,       // it runs, but costs more than the budget
};

// "layout", "memory", ...: the kind's name in JSON.
std::string_view why_name(Why w);

}  // namespace gpuplan

#endif  // GPUPLAN_WHY_H_
