// Number formatting for people, shared by the library's messages and the front ends.
#ifndef GPUPLAN_FORMAT_H_
#define GPUPLAN_FORMAT_H_

#include <cstdint>
#include <string>

#include "gpuplan/units.h"

namespace gpuplan {

// "70,553,706,496": thousands separated by commas, whatever the locale.
std::string grouped(int64_t n);

// A duration at a readable grain: "42.5 s", "45 min", "33.0 h", "26.9 days".
std::string duration_text(Seconds t);

}  // namespace gpuplan

#endif  // GPUPLAN_FORMAT_H_
