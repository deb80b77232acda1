#include "request.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "output.h"
#include "quantity_flags.h"

namespace gpuplan::cli {
namespace {

using nlohmann::json;

constexpr std::array<RequestCommand, 7> kCommands = {{
    {"fit", run_fit, true},
    {"train", run_train, true},
    {"scale", run_scale, true},
    {"serve", run_serve, true},
    {"plan", run_plan, false},
    {"validate", run_validate, false},
    {"catalog", run_catalog, false},
}};

// A number as the CLI would read it: integers without a fraction, others exactly.
std::string number_text(const json& v) {
  if (v.is_number_integer()) {
    return v.is_number_unsigned() ? fmt::format("{}", v.get<uint64_t>())
                                  : fmt::format("{}", v.get<int64_t>());
  }
  return fmt::format("{}", v.get<double>());
}

// The SI unit a bare number for a quantity flag is read in.
std::string_view si_unit(Dimension d) {
  switch (d) {
    case Dimension::kBytes:
      return "B";
    case Dimension::kSeconds:
      return "s";
    case Dimension::kBytesPerSecond:
      return "B/s";
    case Dimension::kFlops:
      return "FLOP";
    case Dimension::kFlopsPerSecond:
      return "FLOP/s";
    case Dimension::kWatts:
      return "W";
  }
  return "";
}

}  // namespace

const RequestCommand* request_command(std::string_view name) {
  for (const RequestCommand& c : kCommands) {
    if (c.name == name) {
      return &c;
    }
  }
  return nullptr;
}

RequestFiles::~RequestFiles() {
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

bool RequestFiles::make_dir() {
  if (!dir_.empty()) {
    return true;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "gpuplan-request-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    return false;
  }
  dir_ = tmpl;
  return true;
}

Result<std::string> RequestFiles::write_config(const json& config) {
  if (!make_dir()) {
    return fail("config", "cannot store the config.json",
                "check that the temporary directory "
                "is writable");
  }
  path_ = dir_ + "/uploaded.json";  // the model id is the file name: "uploaded"
  std::ofstream out(path_);
  out << config.dump();
  if (!out) {
    return fail("config", "cannot store the config.json",
                "check that the temporary directory "
                "is writable");
  }
  return path_;
}

Result<std::string> RequestFiles::report_path() {
  if (!make_dir()) {
    return fail("html", "cannot make room for the report", "");
  }
  return dir_ + "/report.html";
}

std::string RequestFiles::hide(std::string text) const {
  if (path_.empty()) {
    return text;
  }
  for (size_t at = text.find(path_); at != std::string::npos; at = text.find(path_, at)) {
    text.replace(at, path_.size(), "config");
  }
  return text;
}

Result<std::vector<std::string>> request_arguments(const RequestCommand& c,
                                                   const std::vector<std::string>& positional,
                                                   const json& fields, RequestFiles& files,
                                                   const RequestPolicy& policy) {
  std::vector<std::string> args = {fmt::format("gpuplan {}", c.name)};
  args.insert(args.end(), positional.begin(), positional.end());
  std::string model;
  if (fields.contains("config")) {
    if (!fields["config"].is_object()) {
      return fail("config", "must be the config.json object", "give the file's contents");
    }
    if (fields.contains("model")) {
      return fail("config", "give model or config, not both", "");
    }
    GPUPLAN_ASSIGN_OR_RETURN(model, files.write_config(fields["config"]));
  } else if (fields.contains("model")) {
    if (!fields["model"].is_string()) {
      return fail("model", "must be a catalog model id", "e.g. \"llama-3.1-70b\"");
    }
    model = fields["model"].get<std::string>();
    if (model.starts_with("-") || (!policy.model_paths && (model.find('/') != std::string::npos ||
                                                           model.ends_with(".json")))) {
      return fail("model", "the server reads no files: give a catalog id or upload the config",
                  "send the config.json object as \"config\"");
    }
  }
  if (c.model_positional && !model.empty()) {
    args.push_back(model);
  } else if (!model.empty()) {
    args.push_back("--model=" + model);
  }
  for (const auto& [key, value] : fields.items()) {
    if (key == "model" || key == "config") {
      continue;
    }
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const bool name_ok =
        !flag.empty() && flag.front() != '-' && std::all_of(flag.begin(), flag.end(), [](char ch) {
          return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
        });
    if (!name_ok) {
      return fail(key, "is not a flag name", "use the flags of the command, e.g. \"gpu\"");
    }
    if (std::find(policy.refused.begin(), policy.refused.end(), flag) != policy.refused.end()) {
      return fail(key, fmt::format("is not accepted {}", policy.refused_where),
                  std::string(policy.refused_hint));
    }
    const std::string option = "--" + flag;
    const std::optional<Dimension> quantity = quantity_dimension(c.name, flag);
    if (policy.limit != nullptr) {
      GPUPLAN_RETURN_IF_ERROR(policy.limit(c, key, flag, value));
    }
    auto add = [&](const json& v) -> Result<bool> {
      // One token, --flag=value: a value that starts with '-' stays the flag's value.
      if (v.is_string()) {
        args.push_back(option + "=" + v.get<std::string>());
      } else if (v.is_number() && quantity) {
        args.push_back(fmt::format("{}={} {}", option, number_text(v), si_unit(*quantity)));
      } else if (v.is_number()) {
        args.push_back(option + "=" + number_text(v));
      } else if (v.is_boolean()) {
        if (v.get<bool>()) {
          args.push_back(option);
        }
      } else {
        return fail(key, "must be a string, a number, a boolean or a list of them", "");
      }
      return true;
    };
    if (value.is_array()) {
      for (const json& v : value) {
        if (v.is_array() || v.is_object()) {
          return fail(key, "must be a list of strings or numbers", "");
        }
        GPUPLAN_RETURN_IF_ERROR(add(v));
      }
    } else {
      GPUPLAN_RETURN_IF_ERROR(add(value));
    }
  }
  args.push_back("--json");
  return args;
}

RequestAnswer run_request(const RequestCommand& c, const std::vector<std::string>& args) {
  Capture capture;
  RequestAnswer a;
  {
    ScopedCapture scope(&capture);
    a.status = c.run(args);
  }
  a.out = std::move(capture.out);
  a.error = std::move(capture.error);
  std::string line = capture.err;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.pop_back();
  }
  if (a.status != kExitOk && line.empty()) {
    line = fmt::format("gpuplan {}: error: the command failed without a message", c.name);
  }
  a.error_line = std::move(line);
  return a;
}

}  // namespace gpuplan::cli
