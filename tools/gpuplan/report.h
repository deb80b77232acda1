// Text formatting shared by the subcommands: sizes with their units, counts with thousands
// separators, and a plain aligned table. JSON goes through gpuplan::JsonWriter instead; sentences
// for people (notes, caveats) go into it as an array of strings in one language (write_texts).
#ifndef GPUPLAN_TOOLS_REPORT_H_
#define GPUPLAN_TOOLS_REPORT_H_

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "gpuplan/format.h"
#include "gpuplan/hardware.h"
#include "gpuplan/json_writer.h"
#include "gpuplan/lang.h"
#include "gpuplan/result.h"
#include "gpuplan/units.h"

namespace gpuplan::cli {

// One sentence in the reader's language, both versions checked against the arguments at compile
// time: say(lang, "{} layers", "{} camadas", n).
template <class... T>
std::string say(Lang lang, fmt::format_string<T...> en, fmt::format_string<T...> pt, T&&... args) {
  return fmt::format(lang == Lang::kPt ? pt : en, std::forward<T>(args)...);
}

// "131.4 GiB".
std::string gib(Bytes b);
// "141.1 GB".
std::string gb(Bytes b);
using gpuplan::grouped;  // "70,553,706,496" (gpuplan/format.h)
// "70.55 B" / "405.9 B" / "8.03 B" parameters.
std::string billions(double n);

// `key`: [the sentences of `texts` in `lang`], into the object `w` is writing.
void write_texts(JsonWriter& w, std::string_view key, const std::vector<Text>& texts,
                 Lang lang = Lang::kEn);

// A --price flag: "3.5 USD/h" per GPU-hour -> Money; the error names --price.
Result<Money> parse_price(const std::string& text);

// A table of text cells; the first row is the header. Columns are left-aligned unless listed
// in `right` (numbers).
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right = {});
  void add(std::vector<std::string> row);
  // The table with two spaces between columns and a rule under the header.
  std::string str(const std::string& indent = "") const;
  // The same cells as CSV, one line per row; a cell with a comma, quote or line break is quoted
  // as RFC 4180 quotes it.
  std::string csv() const;

  const std::vector<std::vector<std::string>>& rows() const { return rows_; }
  bool right(size_t column) const { return right_[column]; }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_REPORT_H_
