// A command asked with fields instead of flags: what `gpuplan web` and the Python module share.
//
// A request is a JSON object whose keys are the command's flag names without their dashes ("_"
// may stand for "-"), plus "model" (a catalog id, or where the caller allows it a config.json
// path) or "config" (a config.json object, written to a private temporary file for the command
// to read). A value is a string, a number, a boolean (a flag that is true is given, false
// omitted) or a list of them (the flag repeated). A number given to a flag that takes a quantity
// with a unit is read in SI units: 604800 for --deadline is 604800 s. The request becomes the
// command's arguments, the command runs in-process under a capture, and the answer is exactly
// what it prints; its error is the CLI's, line and parts.
#ifndef GPUPLAN_TOOLS_REQUEST_H_
#define GPUPLAN_TOOLS_REQUEST_H_

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "gpuplan/result.h"

namespace gpuplan::cli {

// A command a request may ask.
struct RequestCommand {
  std::string_view name;
  CommandFn run;
  bool model_positional;  // the model is the first argument (plan takes --model)
};

// fit, train, scale, serve, plan, validate and catalog; nullptr for any other name.
const RequestCommand* request_command(std::string_view name);

// What a caller lets a request do.
struct RequestPolicy {
  // Keys refused with "is not accepted <where>", e.g. those that would read the caller's files.
  std::span<const std::string_view> refused;
  std::string_view refused_where;
  std::string_view refused_hint;
  bool model_paths = false;  // "model" may name a config.json file
  // A limit on one key's value (the key, its flag name, the value as given: one, or a list);
  // an Error refuses it.
  Result<bool> (*limit)(const RequestCommand& c, const std::string& key, const std::string& flag,
                        const nlohmann::json& value) = nullptr;
};

// The temporary files of one request (an uploaded config.json, a report), removed with it.
class RequestFiles {
 public:
  RequestFiles() = default;
  ~RequestFiles();
  RequestFiles(const RequestFiles&) = delete;
  RequestFiles& operator=(const RequestFiles&) = delete;

  // Writes `config` as a config.json the command can read; returns its path.
  Result<std::string> write_config(const nlohmann::json& config);
  // Where the command may write a report, in the request's own directory.
  Result<std::string> report_path();
  // `text` with the uploaded file's path named "config" (texts name the upload, not where it
  // was kept).
  std::string hide(std::string text) const;

 private:
  bool make_dir();

  std::string dir_;
  std::string path_;
};

// The command's arguments: argv[0] "gpuplan NAME", `positional` (e.g. a validation file), the
// model, the fields as flags, then `--json`. An error names the field.
Result<std::vector<std::string>> request_arguments(const RequestCommand& c,
                                                   const std::vector<std::string>& positional,
                                                   const nlohmann::json& fields,
                                                   RequestFiles& files,
                                                   const RequestPolicy& policy);

// What a command answered: its exit status, what it printed and, when it failed, its error: the
// line the CLI prints ("gpuplan NAME: error: ...", without the newline) and its parts.
struct RequestAnswer {
  int status = kExitError;
  std::string out;
  std::string error_line;
  std::optional<Error> error;  // absent for an error without parts (an unknown command)
};

// Runs the command on `args` in this thread, capturing what it prints.
RequestAnswer run_request(const RequestCommand& c, const std::vector<std::string>& args);

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_REQUEST_H_
