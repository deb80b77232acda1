// Command-line parsing shared by the subcommands (CLI11 stays in the command files that need it).
#ifndef GPUPLAN_TOOLS_FLAGS_H_
#define GPUPLAN_TOOLS_FLAGS_H_

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"
#include "gpuplan/fields.h"
#include "gpuplan/lang.h"
#include "gpuplan/suggest.h"

namespace gpuplan::cli {

// A help text that lists the names a flag takes, from the library's own table of them:
// "a | b | c (note)".
inline std::string names_help(const std::vector<std::string>& names, std::string_view note = {}) {
  const std::string list = fmt::format("{}", fmt::join(names, " | "));
  return note.empty() ? list : fmt::format("{} ({})", list, note);
}

// The number `text` spells out whole ("2", "1e9", "nan"), as std::from_chars reads it; nullopt
// for anything else ("two", "8 GB"), and ERANGE for a number beyond a double.
struct FlagNumber {
  std::errc error = std::errc();
  double value = 0;
};
inline std::optional<FlagNumber> flag_number(const std::string& text) {
  FlagNumber n;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, n.value);
  n.error = ec;
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && stop == end)) {
    return n;
  }
  return std::nullopt;
}

// A CLI11 check of one flag by its field's rule (gpuplan/fields.h), the rule every front end
// shares. Text that is not a number is left to CLI11's conversion, which names the flag too.
inline CLI::Validator rule(const Field& field) {
  return CLI::Validator(
      [&field](std::string& text) -> std::string {
        const std::optional<FlagNumber> n = flag_number(text);
        if (!n) {
          return "";
        }
        if (n->error == std::errc::result_out_of_range) {
          return fmt::format("{} is too large a number; expected {}", text, field_range(field));
        }
        Result<double> checked = check_field(field, n->value, "");
        return checked ? "" : checked.error().message();
      },
      "", "");
}

// The gates every flag of every command passes, whatever its type: a value given is never
// empty and never nan or inf (which CLI11 would read into a double).
inline std::optional<Error> check_given_values(const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& v : o->results()) {
      if (v.empty()) {
        return Error{o->get_name(), "is given an empty value",
                     "give a value or leave the flag out"};
      }
      const std::optional<FlagNumber> n = flag_number(v);
      if (n && n->error == std::errc() && !std::isfinite(n->value)) {
        return Error{o->get_name(), fmt::format("'{}' is not a finite number", v),
                     "give a finite value"};
      }
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    if (std::optional<Error> e = check_given_values(*sub)) {
      return e;
    }
  }
  return std::nullopt;
}

// Parses `args` (args[0] is "gpuplan <command>") into `app`. Returns the exit status to end
// with — 0 after printing --help, 2 after a one-line error for bad flags — or nullopt to go on.
// A CLI11 parse error as an Error that names the flag: "--task is required" becomes where
// "--task", what "is required"; "Could not convert: --gpus = x" where "--gpus". (Arguments not
// expected are unexpected_error's.)
inline Error flag_error(std::string_view text, std::string hint) {
  constexpr std::string_view kConvert = "Could not convert: ";
  if (text.starts_with(kConvert)) {
    text.remove_prefix(kConvert.size());
    const size_t eq = text.find(" = ");
    if (eq != std::string_view::npos) {
      return Error{std::string(text.substr(0, eq)),
                   fmt::format("cannot read '{}'", text.substr(eq + 3)), std::move(hint)};
    }
  }
  if (text.starts_with("--")) {
    const size_t end = text.find_first_of(": ");
    if (end != std::string_view::npos) {
      const size_t rest = text[end] == ':' && end + 1 < text.size() ? end + 2 : end + 1;
      std::string message(text.substr(rest));
      // CLI11's words for a single-valued flag given twice ('--gpus 8 ... --gpus 16').
      if (message.starts_with("At Most 1 required but received")) {
        message = "given more than once; give it once";
      }
      return Error{std::string(text.substr(0, end)), std::move(message), std::move(hint)};
    }
  }
  return Error{"", std::string(text), std::move(hint)};
}

// The required options of `app` and of the subcommand given that were not given, in the order
// the command declares them.
inline std::vector<std::string> missing_required(const CLI::App& app) {
  std::vector<std::string> missing;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_required() && o->count() == 0) {
      missing.push_back(o->get_name());
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    for (std::string& name : missing_required(*sub)) {
      missing.push_back(std::move(name));
    }
  }
  return missing;
}

// Other tools' names for gpuplan's flags, for the hint when one of them is typed: vLLM's and
// SGLang's benchmark clients (--request-rate, --max-concurrency, --num-prompts,
// --random-input-len), their servers (--tensor-parallel-size, --dtype, --quantization,
// --kv-cache-dtype, --max-model-len), Megatron-LM (--micro-batch-size, --seq-length,
// --recompute-granularity) and plain words. Each maps to the flags it may mean, in order of
// preference, space-separated; the hint names those the command takes.
struct FlagAlias {
  std::string_view typed;
  std::string_view ours;
};
inline constexpr FlagAlias kFlagAliases[] = {
    {"qps", "rate"},
    {"rps", "rate"},
    {"request-rate", "rate"},
    {"arrival-rate", "rate"},
    {"concurrency", "users"},
    {"max-concurrency", "users"},
    {"clients", "users"},
    {"num-prompts", "requests"},
    {"num-requests", "requests"},
    {"tensor-parallel", "tp"},
    {"tensor-parallel-size", "tp"},
    {"tensor-model-parallel-size", "tp"},
    {"pipeline-parallel", "pp"},
    {"pipeline-parallel-size", "pp"},
    {"pipeline-model-parallel-size", "pp"},
    {"data-parallel-size", "dp"},
    {"context-parallel-size", "cp"},
    {"expert-parallel-size", "ep"},
    {"expert-model-parallel-size", "ep"},
    {"num-layers-per-virtual-pipeline-stage", "virtual-stages"},
    {"virtual-pipeline-model-parallel-size", "virtual-stages"},
    {"interleave", "virtual-stages"},
    {"batch-size", "global-batch micro-batch batch static-batch"},
    {"bs", "global-batch micro-batch batch static-batch"},
    {"micro-batch-size", "micro-batch"},
    {"mbs", "micro-batch"},
    {"global-batch-size", "global-batch"},
    {"gbs", "global-batch"},
    {"seq-len", "seq context"},
    {"seq-length", "seq context"},
    {"seqlen", "seq context"},
    {"sequence-length", "seq context"},
    {"max-model-len", "context seq"},
    {"context-length", "context seq"},
    {"input-len", "input input-tokens"},
    {"random-input-len", "input input-tokens"},
    {"isl", "input input-tokens"},
    {"prompt-tokens", "input input-tokens"},
    {"output-len", "output output-tokens"},
    {"random-output-len", "output output-tokens"},
    {"osl", "output output-tokens"},
    {"max-tokens", "output output-tokens"},
    {"input-tokens", "input"},
    {"output-tokens", "output"},
    {"dtype", "precision"},
    {"quantization", "precision"},
    {"quant", "precision"},
    {"kv-cache-dtype", "kv-precision"},
    {"kv-dtype", "kv-precision"},
    {"recompute-granularity", "recompute"},
    {"activation-checkpointing", "recompute"},
    {"gradient-checkpointing", "recompute"},
    {"checkpoint-activations", "recompute"},
    {"zero-stage", "zero"},
    {"fabric", "scale-up scale-out"},
    {"scale-up", "fabric"},  // scale compares scale-up fabrics: --fabric there
    {"nproc-per-node", "gpus-per-node"},
    {"interconnect", "fabric scale-up scale-out"},
    {"network", "fabric scale-out"},
    {"region", "residency"},
    {"country", "residency"},
    {"location", "residency"},
    {"num-gpus", "gpus max-gpus"},
    {"ngpus", "gpus max-gpus"},
    {"world-size", "gpus max-gpus"},
    {"nodes", "max-nodes gpus"},
    {"num-nodes", "max-nodes gpus"},
    {"accelerator", "gpu offer"},
    {"device", "gpu offer"},
    {"provider", "offers offer"},
    {"cloud", "offers offer"},
    {"instance", "offer offers"},
    {"latency-target", "slo-tpot"},
    {"slo-tpot", "latency-target"},
    {"tpot", "slo-tpot latency-target"},
    {"itl", "slo-tpot latency-target"},
    {"ttft", "slo-ttft"},
    {"target-rate", "rate"},
    {"target-users", "users"},
    {"format", "json csv html"},
    {"output-json", "json"},
};

// The hint for a flag the command does not take (`typed`, with its dashes): the model given as
// a flag where the command takes it first ('--model' on train); the command's flags that another
// tool's name for them means (kFlagAliases: '--fabric' on train: '--scale-up or --scale-out';
// none where the command takes none of them or they were given already); else the flag nearest in
// spelling that was not given already (closest_match: '--seqq': '--seq'; '--gpus' on fit with
// --gpu given: '--max-gpus'). Empty where nothing is near.
inline std::string unexpected_flag_hint(const CLI::App& app, const std::string& typed) {
  if (!typed.starts_with("--") || typed.size() <= 2) {
    return "";
  }
  const std::string word = typed.substr(2);
  std::vector<std::string> names;  // long names of the flags not given already
  for (const CLI::Option* o : app.get_options()) {
    if (!o->nonpositional() && o->get_name() == word) {
      return fmt::format("give the {} without a flag, before the others;", word);
    }
    if (o->count() == 0) {
      const std::vector<std::string>& lnames = o->get_lnames();
      names.insert(names.end(), lnames.begin(), lnames.end());
    }
  }
  for (const FlagAlias& alias : kFlagAliases) {
    if (alias.typed != word) {
      continue;
    }
    std::vector<std::string> meant;
    for (const auto part : std::views::split(alias.ours, ' ')) {
      const std::string name(part.begin(), part.end());
      if (std::ranges::find(names, name) != names.end()) {
        meant.push_back("--" + name);
      }
    }
    // Another tool's name, for flags given already: no spelling of ours is nearer.
    return meant.empty() ? "" : fmt::format("did you mean {}?", fmt::join(meant, " or "));
  }
  if (std::string name = closest_match(word, names); !name.empty()) {
    return fmt::format("did you mean --{}?", name);
  }
  return "";
}

// The error for arguments the command does not take: the first of them as the user typed it
// (CLI11's message lists them backwards), with unexpected_flag_hint's hint where it has one.
inline Error unexpected_error(const CLI::App& app, const std::string& help_hint) {
  const std::vector<std::string> extra = app.remaining(true);
  std::string first = extra.empty() ? std::string() : extra.front();
  for (const std::string& a : extra) {
    if (a.starts_with("-")) {
      first = a;
      break;
    }
  }
  const std::string typed = first.substr(0, first.find('='));
  const std::string nearest = unexpected_flag_hint(app, typed);
  std::string hint = nearest.empty() ? help_hint : fmt::format("{} {}", nearest, help_hint);
  return Error{typed, "not expected", std::move(hint)};  // the flag, without any "=value"
}

// A list flag ('--rate 2,4,8') given an empty item ('2,,8', '2,4,'), which CLI11 would drop
// without a word: the error naming it, or nullopt.
inline std::optional<Error> empty_list_item(const CLI::App& app,
                                            const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!a.starts_with("--")) {
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const CLI::Option* o = app.get_option_no_throw(name);
    if (o == nullptr || o->get_delimiter() != ',') {
      continue;
    }
    const std::string value =
        eq != std::string::npos ? a.substr(eq + 1) : (i + 1 < args.size() ? args[i + 1] : "");
    if (value.starts_with(',') || value.ends_with(',') || value.find(",,") != std::string::npos) {
      return Error{name, fmt::format("'{}' has an empty item", value),
                   "separate the values by single commas, e.g. 2,4,8"};
    }
  }
  return std::nullopt;
}

inline std::optional<int> parse_flags(CLI::App& app, const std::vector<std::string>& args,
                                      const std::string& command) {
  std::vector<const char*> argv;
  for (const std::string& a : args) {
    argv.push_back(a.c_str());
  }
  const std::string hint = fmt::format("run '{} --help'", args.front());
  if (std::optional<Error> e = empty_list_item(app, args)) {
    return report_error(command, *e, kExitUsage);
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    emit("{}", app.help());
    return kExitOk;
  } catch (const CLI::RequiredError& e) {
    // CLI11 stops at the first required flag it misses; name them all, so that one run of
    // 'gpuplan train llama-3.1-8b --gpu h100-sxm --gpus 8' says both --global-batch and --seq.
    if (app.remaining_size(true) > 0) {
      // A flag not taken explains a required one missing ('--seqq 4096': '--seq' is missing).
      return report_error(command, unexpected_error(app, hint), kExitUsage);
    }
    std::vector<std::string> missing = missing_required(app);
    if (missing.size() < 2) {
      return report_error(command, flag_error(e.what(), hint), kExitUsage);
    }
    return report_error(command,
                        Error{fmt::format("{}", fmt::join(missing, ", ")), "are required", hint},
                        kExitUsage);
  } catch (const CLI::ExtrasError&) {
    return report_error(command, unexpected_error(app, hint), kExitUsage);
  } catch (const CLI::ParseError& e) {
    return report_error(command, flag_error(e.what(), hint), kExitUsage);
  }
  if (std::optional<Error> e = check_given_values(app)) {
    return report_error(command, *e, kExitUsage);
  }
  return std::nullopt;
}

// The flags of a command that writes a report for people: --html FILE, --lang and, where a
// table is the answer, --csv.
struct ReportFlags {
  std::string html;  // the file to write; empty: none
  bool csv = false;
  std::string lang_flag;
  Lang lang = Lang::kEn;  // set by finish_report_flags
};

inline void add_report_flags(CLI::App& app, ReportFlags& f, bool table_answer) {
  app.add_option("--html", f.html, "also write a self-contained HTML report with charts to FILE");
  app.add_option("--lang", f.lang_flag, "en | pt-BR for text and HTML (default from $LANG)");
  if (table_answer) {
    app.add_flag("--csv", f.csv, "print the table as CSV instead of text");
  }
}

// Resolves --lang and refuses --csv with --json. Returns the exit status to end with, or
// nullopt to go on.
inline std::optional<int> finish_report_flags(ReportFlags& f, bool json,
                                              const std::string& command) {
  Result<Lang> lang = parse_lang(f.lang_flag);
  if (!lang) {
    return report_error(command, lang.error(), kExitUsage);
  }
  f.lang = *lang;
  if (f.csv && json) {
    return report_error(command, Error{"--csv", "give --csv or --json, not both", ""}, kExitUsage);
  }
  return std::nullopt;
}

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_FLAGS_H_
