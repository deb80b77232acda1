// Errors that bad input produces, and the Result type that carries them.
//
// Bad input (catalog files, config.json files, command-line values) and environment failures
// never crash or exit: functions that can meet them return Result<T>, which holds either the
// value or an Error. An Error says where (file:line, a flag or a key path), what is wrong, and
// a hint that helps the user fix it. Only main() turns an Error into an exit status. Broken
// invariants inside gpuplan itself are bugs and abort through GPUPLAN_CHECK instead.
#ifndef GPUPLAN_RESULT_H_
#define GPUPLAN_RESULT_H_

#include <expected>
#include <string>

namespace gpuplan {

struct Error {
  std::string where;  // "data/gpus/h200-sxm.toml:12:1", "--tp", "config.json"; may be empty
  std::string what;   // what is wrong, naming the entity and the value
  std::string hint;   // how to fix it ("did you mean 'hbm_bandwidth'?"); may be empty

  // One line: "where: what; hint".
  std::string message() const;
};

template <class T>
using Result = std::expected<T, Error>;

// Shorthand for returning an error from a function that returns Result<T>.
inline std::unexpected<Error> fail(std::string where, std::string what, std::string hint = "") {
  return std::unexpected(Error{std::move(where), std::move(what), std::move(hint)});
}

// Aborts with file:line when an internal invariant is broken (in every build type).
[[noreturn]] void check_failed(const char* file, int line, const char* condition, const char* msg);

}  // namespace gpuplan

#define GPUPLAN_CHECK(cond, msg)                               \
  do {                                                         \
    if (!(cond)) {                                             \
      ::gpuplan::check_failed(__FILE__, __LINE__, #cond, msg); \
    }                                                          \
  } while (0)

// Evaluates `expr` (a Result); on error returns the error from the enclosing function, which
// must return a Result too; otherwise assigns the value to `lhs`.
#define GPUPLAN_ASSIGN_OR_RETURN(lhs, expr)            \
  do {                                                 \
    auto gpuplan_result_ = (expr);                     \
    if (!gpuplan_result_) {                            \
      return std::unexpected(gpuplan_result_.error()); \
    }                                                  \
    lhs = *std::move(gpuplan_result_);                 \
  } while (0)

// Evaluates `expr` (a Result) only for its error, which it returns from the enclosing function.
#define GPUPLAN_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    auto gpuplan_result_ = (expr);                     \
    if (!gpuplan_result_) {                            \
      return std::unexpected(gpuplan_result_.error()); \
    }                                                  \
  } while (0)

#endif  // GPUPLAN_RESULT_H_
