#include "command.h"
namespace gpuplan::cli {
int run_scale(const std::vector<std::string>&) { return 0; }
}
