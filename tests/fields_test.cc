// The numeric gates at the edges: field rules, unit strings, money, JSON and the context rule.
#include "gpuplan/fields.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpuplan/hardware.h"
#include "gpuplan/model.h"
#include "gpuplan/units.h"
#include "json_reader.h"

namespace gpuplan {
namespace {

TEST(CheckField, AcceptsTheRangeInclusiveAndNamesTheFlagOutsideIt) {
  // kGpusPerNode is 1 to 1024 GPUs per node, whole numbers.
  EXPECT_EQ(check_field(fields::kGpusPerNode, 1, "--gpus-per-node").value(), 1);
  EXPECT_EQ(check_field(fields::kGpusPerNode, 1024, "--gpus-per-node").value(), 1024);
  Result<double> zero = check_field(fields::kGpusPerNode, 0, "--gpus-per-node");
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().message(),
            "--gpus-per-node: 0 is out of range; expected 1 to 1,024 GPUs per node");
  Result<double> half = check_field(fields::kGpusPerNode, 2.5, "--gpus-per-node");
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().what, "2.5 is not a whole number");
}

TEST(CheckField, RefusesNanAndInfinityWhateverTheRange) {
  // A plain `v < min || v > max` lets nan through; the gate must not.
  for (double v : {std::nan(""), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()}) {
    Result<double> r = check_field(fields::kRate, v, "--rate");
    ASSERT_FALSE(r) << v;
    EXPECT_NE(r.error().what.find("is not a finite number"), std::string::npos) << v;
    EXPECT_EQ(r.error().where, "--rate");
  }
}

TEST(CheckCount, ComparesInt64ValuesBeyondTheRange) {
  // INT64_MAX tokens per request: the trace value that made serve hang before the gate.
  Result<int64_t> r =
      check_count(fields::kRequestTokens, std::numeric_limits<int64_t>::max(), "trace.csv:2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "trace.csv:2: 9223372036854775807 is out of range; expected 1 to 16,777,216 tokens");
}

TEST(ParseQuantity, RefusesNonFiniteOverflowingAndZeroRates) {
  EXPECT_FALSE(parse_quantity("nan GB", Dimension::kBytes));
  EXPECT_FALSE(parse_quantity("inf s", Dimension::kSeconds));
  // 1e400 overflows a double when read; 1e300 TB/s overflows once multiplied by 1e12.
  EXPECT_EQ(parse_quantity("1e400 GB", Dimension::kBytes).error().what,
            "'1e400 GB' is too large a number");
  EXPECT_EQ(parse_quantity("1e300 TB/s", Dimension::kBytesPerSecond).error().what,
            "'1e300 TB/s' is not a finite number");
  // A rate divides; a zero size or time does not.
  EXPECT_EQ(parse_quantity("0 GB/s", Dimension::kBytesPerSecond).error().what, "'0 GB/s' is zero");
  EXPECT_EQ(parse_quantity("0 GB", Dimension::kBytes).value(), 0);
}

TEST(ParseMoney, IsStrictAboutTheAmountTheCurrencyAndTheUnit) {
  const Money m = parse_money("2.5 USD/h", "h").value();
  EXPECT_DOUBLE_EQ(m.amount, 2.5);
  EXPECT_EQ(m.currency, "USD");
  // The old sscanf parsers took the first three capitals of these.
  for (const char* bad : {"2.5 USDOLLARS/h", "-5 BRLxyz/h", "nan USD/h", "inf USD/h", "2.5 usd/h",
                          "2.5 USD", "2.5 USD/GB"}) {
    EXPECT_FALSE(parse_money(bad, "h")) << bad;
  }
  EXPECT_EQ(parse_money("50000 BRL", "").value().currency, "BRL");
  EXPECT_FALSE(parse_money("50000 BRL/h", ""));
}

TEST(ParseCurrency, TakesThreeCapitalLettersOnly) {
  EXPECT_EQ(parse_currency("EUR").value(), "EUR");
  for (const char* bad : {"BRLL", "br", "Eur", "", "US$"}) {
    EXPECT_FALSE(parse_currency(bad)) << bad;
  }
}

TEST(ParseJson, RefusesADuplicateKeyAtItsLine) {
  // The second "a" is on line 3; the same key in another object is no duplicate.
  Result<nlohmann::json> ok =
      detail::parse_json("{\"x\": {\"a\": 1},\n \"y\": {\"a\": 2}}", "f.json", "");
  ASSERT_TRUE(ok);
  Result<nlohmann::json> dup =
      detail::parse_json("{\"b\": {\"a\": 1},\n \"c\": 2,\n \"b\": 3}", "f.json", "");
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().message(), "f.json:3: key 'b' is given twice; keep one of them");
}

TEST(ParseJson, RefusesANumberBeyondADoubleAtItsLine) {
  Result<nlohmann::json> r = detail::parse_json("{\n \"hidden_size\": 2e308\n}", "c.json", "");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "c.json:2");
  EXPECT_EQ(r.error().what, "the number 2e308 is too large");
}

TEST(JsonFields, ReadsRangesAndRefusesEmptyLists) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"n": 0, "points": [], "s": 3})");
  const detail::JsonFields f(doc, "m.json");
  EXPECT_EQ(f.integer("n", 1, 10).error().what, "key 'n' = 0 is out of range");
  EXPECT_EQ(f.objects("points", 1).error().what, "key 'points' has 0 entries");
  EXPECT_EQ(f.text("s").error().what, "key 's' must be a string, not 3");
  EXPECT_EQ(f.number("missing", 0, 1).error().what, "missing key 'missing'");
}

TEST(CheckContext, IsOneRuleForEveryCommand) {
  Model m;
  m.id = "m";
  m.max_positions = 4096;
  EXPECT_EQ(check_context(m, 4096, "--seq").value(), 4096);
  EXPECT_EQ(check_context(m, 4097, "--seq").error().message(),
            "--seq: 4,097 tokens exceed the 4,096-token context of m; use shorter sequences or a "
            "model with a longer context");
  m.max_positions = 0;  // no known limit
  EXPECT_TRUE(check_context(m, 1 << 24, "--seq"));
}

}  // namespace
}  // namespace gpuplan
