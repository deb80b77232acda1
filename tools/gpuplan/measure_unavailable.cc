// Built with GPUPLAN_WITH_MPI=OFF: the measure command says how to get it.
#include "command.h"

namespace gpuplan::cli {

int run_measure(const std::vector<std::string>&) {
  return report_error("measure", Error{"", "this gpuplan was built without MPI",
                                       "install Open MPI (scripts/setup) and rebuild with "
                                       "-DGPUPLAN_WITH_MPI=ON"});
}

}  // namespace gpuplan::cli
