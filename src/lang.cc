#include "gpuplan/lang.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "gpuplan/format.h"

namespace gpuplan {

Result<Lang> parse_lang(const std::string& flag) {
  if (flag.empty()) {
    // The first locale variable that is set decides, as POSIX orders them.
    for (const char* name : {"LC_ALL", "LC_MESSAGES", "LANG"}) {
      const char* v = std::getenv(name);
      if (v != nullptr && *v != '\0') {
        return std::string_view(v).substr(0, 2) == "pt" ? Lang::kPt : Lang::kEn;
      }
    }
    return Lang::kEn;
  }
  if (flag == "en" || flag == "en-US" || flag == "en_US")
    return Lang::kEn;
  if (flag == "pt-BR" || flag == "pt_BR" || flag == "pt")
    return Lang::kPt;
  return fail("--lang", fmt::format("unknown language '{}'", flag), "use en or pt-BR");
}

const char* lang_tag(Lang lang) {
  return lang == Lang::kPt ? "pt-BR" : "en";
}

std::string number(double v, int decimals, Lang lang) {
  if (!std::isfinite(v))
    return "-";
  // Past 10^15 the digits stop meaning anything (and would overflow int64 below): a power of ten.
  if (std::fabs(v) >= 1e15) {
    std::string e = fmt::format("{:.3e}", v);
    if (lang == Lang::kPt) {
      std::replace(e.begin(), e.end(), '.', ',');
    }
    return e;
  }
  const double scale = std::pow(10.0, decimals);
  const double rounded = std::round(std::fabs(v) * scale);
  const int64_t whole = static_cast<int64_t>(std::floor(rounded / scale));
  const int64_t frac = static_cast<int64_t>(rounded - static_cast<double>(whole) * scale);
  std::string out = grouped(whole);
  if (lang == Lang::kPt) {
    for (char& c : out) {
      if (c == ',')
        c = '.';
    }
  }
  if (decimals > 0) {
    out += lang == Lang::kPt ? ',' : '.';
    out += fmt::format("{:0{}d}", frac, decimals);
  }
  return (v < 0 && rounded > 0 ? "-" : "") + out;
}

std::string word_list(const std::vector<std::string>& items, const char* last) {
  GPUPLAN_CHECK(!items.empty(), "an empty list of words");
  std::string out = items.front();
  for (size_t i = 1; i < items.size(); ++i) {
    out += (i + 1 == items.size() ? last : ", ") + items[i];
  }
  return out;
}

std::string gib_text(Bytes b, Lang lang) {
  return number(b / GiB(1), 1, lang) + " GiB";
}

std::string money_text(const Money& m, Lang lang) {
  if (lang == Lang::kEn) {
    return fmt::format("{} {}", grouped(std::llround(m.amount)), m.currency);
  }
  const std::string amount = number(m.amount, 2, lang);
  if (m.currency == "BRL")
    return "R$ " + amount;
  if (m.currency == "USD")
    return "US$ " + amount;
  return amount + " " + m.currency;
}

std::string money_text(const std::optional<Money>& m, Lang lang) {
  return m ? money_text(*m, lang) : "-";
}

std::string duration_text(Seconds t, Lang lang) {
  if (lang == Lang::kEn) {
    return duration_text(t);
  }
  const double s = t.si();
  if (s < 120)
    return number(s, 1, lang) + " s";
  if (s < 2 * 3600)
    return number(s / 60, 0, lang) + " min";
  if (s < 2 * 86400)
    return number(s / 3600, 1, lang) + " h";
  return number(s / 86400, 1, lang) + " dias";
}

}  // namespace gpuplan
