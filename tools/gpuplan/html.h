// Self-contained HTML reports (`--html FILE`): one file with its CSS and its charts as inline
// SVG, nothing fetched, readable on a phone (the charts scale to the width) and in print (black
// on white, every series named in a legend and marked by its dash as well as its colour). The
// charts are drawn from numbers the caller already has; this file models nothing.
#ifndef GPUPLAN_TOOLS_HTML_H_
#define GPUPLAN_TOOLS_HTML_H_

#include <string>
#include <utility>
#include <vector>

#include "gpuplan/lang.h"
#include "gpuplan/result.h"
#include "report.h"

namespace gpuplan::cli {

// Text for HTML: & < > " escaped.
std::string html_escape(const std::string& s);

class HtmlReport {
 public:
  HtmlReport(std::string title, Lang lang);

  void heading(const std::string& text);    // a section title
  void paragraph(const std::string& text);  // escaped
  void verdict(const std::string& text);    // the answer, set large
  void list(const std::vector<std::string>& items);
  void table(const Table& t);  // the same table the text report prints
  void figure(const std::string& svg, const std::string& caption);

  Lang lang() const { return lang_; }
  std::string str() const;

 private:
  std::string title_;
  Lang lang_;
  std::string body_;
};

// Writes `html` to `path`; the error names --html.
Result<bool> write_html_file(const std::string& path, const std::string& html);

// --- charts -------------------------------------------------------------------------------
// Values that are not finite are drawn as 0 (bars) or left out (curves), never written.

struct Segment {
  std::string label;
  double value = 0;
};

// One horizontal bar per row, its segments stacked, with a marked limit per row (memory against
// the card's usable memory). Values and limit in `unit` (e.g. GiB).
struct StackedRow {
  std::string label;
  std::vector<Segment> segments;
  double limit = 0;
  std::string limit_label;  // "usable 139.8 GiB"
};
std::string stacked_bars_svg(const std::vector<StackedRow>& rows, const std::string& unit,
                             Lang lang);

// One horizontal bar per item (a breakdown, or offers ranked by cost), each labelled with its
// value and an optional note at its end.
struct Bar {
  std::string label;
  double value = 0;
  std::string note;
};
std::string bars_svg(const std::vector<Bar>& bars, const std::string& unit, Lang lang);

// Curves over x, with reference lines and bands (the ideal line, an SLO, a claim).
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};
struct Reference {
  std::string label;
  double lo = 0;  // a line where lo == hi, else a shaded band
  double hi = 0;
  bool at_x = false;  // a vertical line at x = lo (a capacity), not a level of y
};
struct Axis {
  std::string label;  // with its unit: "GPUs", "requests/s", "p99 time per token (ms)"
  bool log2 = false;  // GPU counts
};
std::string line_chart_svg(const std::vector<Series>& series, const Axis& x, const Axis& y,
                           const std::vector<Reference>& references, Lang lang);

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_HTML_H_
