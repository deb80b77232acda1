// _gpuplan: the compiled half of the Python module `gpuplan` (python/gpuplan/__init__.py).
//
// One function, run(command, positional, fields): the request (tools/gpuplan/request.h) becomes
// the command's arguments and the command runs in-process under a capture, exactly as the CLI
// runs it, with the GIL released, so that two searches on two Python threads run at once. It
// returns what the command printed (its --json) or its error in parts; __init__.py makes the
// answer objects and raises gpuplan.Error.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "request.h"

namespace py = pybind11;

namespace gpuplan::cli {
namespace {

// Python asks for JSON and reads it; everything else the CLI accepts, files included.
constexpr std::array<std::string_view, 3> kRefused = {"json", "csv", "help"};

constexpr RequestPolicy kPythonPolicy{.refused = kRefused,
                                      .refused_where = "from Python",
                                      .refused_hint =
                                          "the module always answers with the "
                                          "command's JSON",
                                      .model_paths = true,
                                      .limit = nullptr};

struct Outcome {
  int status = kExitError;
  std::string out;
  std::string line;  // the CLI's error line
  std::string where, what, hint;
};

Outcome run(const std::string& command, const std::vector<std::string>& positional,
            const std::string& fields_json) {
  Outcome o;
  const RequestCommand* c = request_command(command);
  if (c == nullptr) {
    o.what = "no command '" + command + "'";
    o.line = "gpuplan: error: " + o.what;
    return o;
  }
  const nlohmann::json fields = nlohmann::json::parse(fields_json, nullptr, false);
  if (fields.is_discarded() || !fields.is_object()) {
    o.what = "the keyword arguments are not a JSON object";
    o.line = "gpuplan " + command + ": error: " + o.what;
    return o;
  }
  RequestFiles files;
  Result<std::vector<std::string>> args =
      request_arguments(*c, positional, fields, files, kPythonPolicy);
  if (!args) {
    o.where = args.error().where;
    o.what = args.error().what;
    o.hint = args.error().hint;
    o.line = "gpuplan " + command + ": error: " + args.error().message();
    return o;
  }
  const RequestAnswer a = run_request(*c, *args);
  o.status = a.status;
  o.out = files.hide(a.out);
  o.line = files.hide(a.error_line);
  if (a.error) {
    o.where = files.hide(a.error->where);
    o.what = files.hide(a.error->what);
    o.hint = a.error->hint;
  } else if (a.status != kExitOk) {
    o.what = o.line;
  }
  return o;
}

}  // namespace
}  // namespace gpuplan::cli

PYBIND11_MODULE(_gpuplan, m) {
  m.doc() = "gpuplan's commands in-process (use the gpuplan package, not this module)";
  m.def(
      "run",
      [](const std::string& command, const std::vector<std::string>& positional,
         const std::string& fields) {
        gpuplan::cli::Outcome o;
        {
          py::gil_scoped_release release;
          o = gpuplan::cli::run(command, positional, fields);
        }
        py::dict d;
        d["status"] = o.status;
        d["out"] = o.out;
        d["line"] = o.line;
        d["where"] = o.where;
        d["what"] = o.what;
        d["hint"] = o.hint;
        return d;
      },
      py::arg("command"), py::arg("positional"), py::arg("fields"),
      "Runs `gpuplan COMMAND POSITIONAL... --flags --json` in this process; returns its status, "
      "what it printed and its error in parts.");
  m.def(
      "data_dir", [] { return gpuplan::cli::data_dir(""); },
      "The catalog directory the commands read: $GPUPLAN_DATA, else the built-in one.");
  m.attr("version") = GPUPLAN_VERSION;
}
