#include "command.h"

#include <cstdlib>

namespace gpuplan::cli {

std::string data_dir(const std::string& flag_value) {
  if (!flag_value.empty()) {
    return flag_value;
  }
  if (const char* env = std::getenv("GPUPLAN_DATA"); env != nullptr && *env != '\0') {
    return env;
  }
  return GPUPLAN_DEFAULT_DATA_DIR;
}

Result<Catalog> load_catalog(const std::string& flag_value) {
  return Catalog::load(data_dir(flag_value));
}

Result<Catalog> load_catalog_with_profile(const std::string& data, const std::string& profile,
                                          bool quiet) {
  Result<Catalog> c = load_catalog(data);
  if (!c || profile.empty()) {
    return c;
  }
  Result<std::vector<std::string>> changed = c->apply_profile(profile);
  if (!changed) {
    return std::unexpected(changed.error());
  }
  if (!quiet) {
    for (const std::string& line : *changed) {
      emit("profile {}: {}\n", profile, line);
    }
  }
  return c;
}

int report_error(const std::string& command, const Error& e, int status) {
  emit_error("gpuplan {}: error: {}\n", command, e.message());
  if (Capture* c = thread_capture()) {
    c->error = e;
  }
  return status;
}

}  // namespace gpuplan::cli
