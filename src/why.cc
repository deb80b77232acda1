#include "gpuplan/why.h"

namespace gpuplan {

std::string_view why_name(Why w) {
  switch (w) {
    case Why::kNone:
      return "none";
    case Why::kLayout:
      return "layout";
    case Why::kMemory:
      return "memory";
    case Why::kCalibration:
      return "calibration";
    case Why::kObjective:
      return "objective";
    case Why::kNodes:
      return "nodes";
    case Why::kResidency:
      return "residency";
    case Why::kDeadline:
      return "deadline";
    case Why::kBudget:
      return "budget";
  }
  return "none";
}

}  // namespace gpuplan
