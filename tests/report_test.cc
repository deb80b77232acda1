// The front end's writers: CSV quoting, HTML escaping, and charts that never write a number
// they cannot place.
#include "report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "html.h"

namespace gpuplan::cli {
namespace {

TEST(TableCsv, QuotesOnlyTheCellsThatNeedIt) {
  // RFC 4180: a cell with a comma, a quote or a line break is quoted, its quotes doubled.
  Table t({"offer", "layout", "note"});
  t.add({"aws-p5", "tp 8 pp 2, micro-batch 1", "say \"hi\""});
  t.add({"eveo-l4", "tp 1", ""});
  EXPECT_EQ(t.csv(),
            "offer,layout,note\n"
            "aws-p5,\"tp 8 pp 2, micro-batch 1\",\"say \"\"hi\"\"\"\n"
            "eveo-l4,tp 1,\n");
}

TEST(TableText, AlignsPortugueseByCharactersNotBytes) {
  // "eficiência" is 10 characters in 11 bytes: the rule under it is as wide as the header.
  Table t({"eficiência", "x"}, {true, false});
  t.add({"1", "a"});
  EXPECT_EQ(t.str(), "eficiência  x\n-------------\n         1  a\n");
}

TEST(HtmlEscape, EscapesWhatCouldOpenATagOrCloseAnAttribute) {
  EXPECT_EQ(html_escape("<b a=\"1\">&</b>"), "&lt;b a=&quot;1&quot;&gt;&amp;&lt;/b&gt;");
}

TEST(Charts, LeaveOutWhatTheyCannotPlace) {
  // A NaN or infinite point, or 0 on a log axis, is dropped; no "nan" or "inf" reaches the SVG.
  const std::string svg = line_chart_svg(
      {Series{"a", {{1, 100}, {2, NAN}, {0, 50}, {4, INFINITY}, {8, 97}}}}, Axis{"GPUs", true},
      Axis{"efficiency (%)", false}, {Reference{"ideal", 100, 100}}, Lang::kEn);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  // Two points placed: two circles.
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1))
    ++circles;
  EXPECT_EQ(circles, 2U);
  const std::string bars =
      bars_svg({Bar{"x", NAN, ""}, Bar{"y", 2.5, "2 h"}, Bar{"z", 68, ""}}, "h", Lang::kPt);
  EXPECT_EQ(bars.find("nan"), std::string::npos);
  // Portuguese decimals on a value (three significant digits), none on a whole number.
  EXPECT_NE(bars.find(">2,50 \u00b7 2 h<"), std::string::npos);
  EXPECT_NE(bars.find(">68<"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan::cli
