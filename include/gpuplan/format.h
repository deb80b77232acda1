// Number formatting for people, shared by the library's messages and the front ends.
#ifndef GPUPLAN_FORMAT_H_
#define GPUPLAN_FORMAT_H_

#include <cstdint>
#include <string>

namespace gpuplan {

// "70,553,706,496": thousands separated by commas, whatever the locale.
std::string grouped(int64_t n);

}  // namespace gpuplan

#endif  // GPUPLAN_FORMAT_H_
