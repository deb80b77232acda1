// The language gpuplan speaks to people: English or Brazilian Portuguese. Every label is
// written at its point of use in both languages, tr(lang, "English", "Português"), and numbers
// and money are written the way each reader expects them: 1,234.5 GiB and "10,549 BRL" in
// English, 1.234,5 GiB and "R$ 10.549,00" in Portuguese. JSON and CSV never change: they are
// for programs, in English with '.' decimals.
#ifndef GPUPLAN_LANG_H_
#define GPUPLAN_LANG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/hardware.h"
#include "gpuplan/result.h"
#include "gpuplan/units.h"

namespace gpuplan {

enum class Lang { kEn, kPt };

// "en" or "pt-BR" (also "pt", "pt_BR"); empty: from $LC_ALL, $LC_MESSAGES, then $LANG (a value
// starting "pt" is Portuguese), else English. The error names --lang.
Result<Lang> parse_lang(const std::string& flag);

// "en" or "pt-BR", as HTML's lang attribute writes it.
const char* lang_tag(Lang lang);

inline const char* tr(Lang lang, const char* en, const char* pt) {
  return lang == Lang::kPt ? pt : en;
}

// A sentence for people in both languages, written where its kind and its numbers are decided
// (a plan's "why not", its notes). A part that comes from deeper in the models may still be
// English inside the Portuguese sentence.
struct Text {
  std::string en;
  std::string pt;

  const std::string& in(Lang lang) const { return lang == Lang::kPt && !pt.empty() ? pt : en; }
  bool empty() const { return en.empty(); }
};

// `v` with `decimals` digits after the point and the thousands grouped: "1,234.5" / "1.234,5";
// from 10^15 on, a power of ten ("1.000e+300"); "-" for a value that is not finite.
std::string number(double v, int decimals, Lang lang);

// Items as a sentence lists them: "a", "a and b", "a, b and c" with `last` " and " (" e ").
// REQUIRES: items not empty.
std::string word_list(const std::vector<std::string>& items, const char* last);

// "131.4 GiB" / "131,4 GiB".
std::string gib_text(Bytes b, Lang lang);

// A cost: English "10,549 BRL" (whole units, as the CLI has always written it); Portuguese with
// the currency's sign where it has one, "R$ 10.549,00", "US$ 1.234,00", "12.000,00 EUR".
std::string money_text(const Money& m, Lang lang);
std::string money_text(const std::optional<Money>& m, Lang lang);  // "-" when none

// A duration: "42.5 s", "33.0 h", "26.9 days" / "42,5 s", "33,0 h", "26,9 dias".
std::string duration_text(Seconds t, Lang lang);

}  // namespace gpuplan

#endif  // GPUPLAN_LANG_H_
