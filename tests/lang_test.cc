#include "gpuplan/lang.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace gpuplan {
namespace {

TEST(Number, GroupsAndPointsByLanguage) {
  // English groups with ',' and points with '.'; Brazilian Portuguese the other way round.
  EXPECT_EQ(number(1234.5, 1, Lang::kEn), "1,234.5");
  EXPECT_EQ(number(1234.5, 1, Lang::kPt), "1.234,5");
  EXPECT_EQ(number(70553706496, 0, Lang::kPt), "70.553.706.496");
  // Rounding carries into the whole part: 0.996 at two decimals is 1.00.
  EXPECT_EQ(number(0.996, 2, Lang::kPt), "1,00");
  EXPECT_EQ(number(-2.25, 1, Lang::kEn), "-2.3");  // half away from zero, as std::round
  EXPECT_EQ(number(-0.01, 1, Lang::kEn), "0.0");   // no "-0.0"
  // A budget of 1e300 reais is still written, as a power of ten.
  EXPECT_EQ(number(1e300, 2, Lang::kPt), "1,000e+300");
  EXPECT_EQ(number(-2.5e18, 0, Lang::kEn), "-2.500e+18");
}

TEST(GibText, IsBinaryGigabytesInTheReadersNotation) {
  // 1,234.5 GiB = 1234.5 x 2^30 bytes.
  EXPECT_EQ(gib_text(GiB(1234.5), Lang::kEn), "1,234.5 GiB");
  EXPECT_EQ(gib_text(GiB(1234.5), Lang::kPt), "1.234,5 GiB");
}

TEST(MoneyText, WritesRealsAsBraziliansDo) {
  // The example: 10,549 BRL reads "R$ 10.549,00" in Portuguese; English keeps the
  // CLI's "10,549 BRL" (whole units).
  EXPECT_EQ(money_text(Money{10549, "BRL"}, Lang::kPt), "R$ 10.549,00");
  EXPECT_EQ(money_text(Money{10549, "BRL"}, Lang::kEn), "10,549 BRL");
  EXPECT_EQ(money_text(Money{1234.567, "USD"}, Lang::kPt), "US$ 1.234,57");
  EXPECT_EQ(money_text(Money{12000, "EUR"}, Lang::kPt), "12.000,00 EUR");
  EXPECT_EQ(money_text(std::optional<Money>(), Lang::kPt), "-");
}

TEST(DurationTextPt, KeepsTheGrainsAndTranslatesDays) {
  // The same grains as duration_text(Seconds): seconds, minutes, hours, days.
  EXPECT_EQ(duration_text(Seconds(83.8), Lang::kPt), "83,8 s");
  EXPECT_EQ(duration_text(Seconds(33 * 3600), Lang::kPt), "33,0 h");
  EXPECT_EQ(duration_text(Seconds(26.9 * 86400), Lang::kPt), "26,9 dias");
  EXPECT_EQ(duration_text(Seconds(26.9 * 86400), Lang::kEn), "26.9 days");
}

TEST(ParseLang, TakesTheFlagThenTheLocale) {
  EXPECT_EQ(*parse_lang("pt-BR"), Lang::kPt);
  EXPECT_EQ(*parse_lang("pt_BR"), Lang::kPt);
  EXPECT_EQ(*parse_lang("en"), Lang::kEn);
  Result<Lang> bad = parse_lang("fr");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "--lang");
  // Without the flag, POSIX order: LC_ALL over LC_MESSAGES over LANG.
  ::unsetenv("LC_ALL");
  ::unsetenv("LC_MESSAGES");
  ::setenv("LANG", "pt_BR.UTF-8", 1);
  EXPECT_EQ(*parse_lang(""), Lang::kPt);
  ::setenv("LC_ALL", "C", 1);
  EXPECT_EQ(*parse_lang(""), Lang::kEn);
  ::unsetenv("LC_ALL");
  ::unsetenv("LANG");
  EXPECT_EQ(*parse_lang(""), Lang::kEn);
}

}  // namespace
}  // namespace gpuplan
