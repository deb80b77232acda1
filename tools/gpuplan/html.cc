#include "html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace gpuplan::cli {
namespace {

// Distinct colours, and dashes as well, so that a black-and-white print or a reader who does not
// tell the colours apart still tells the series apart.
constexpr const char* kColours[] = {"#1f5fa8", "#d9822b", "#2e8b57", "#b03a48",
                                    "#7a4fb0", "#6b6b6b", "#c7a400", "#17a2b8"};
constexpr const char* kDashes[] = {"", "7 3", "2 3", "9 3 2 3"};
constexpr size_t kNumColours = sizeof(kColours) / sizeof(kColours[0]);
constexpr size_t kNumDashes = sizeof(kDashes) / sizeof(kDashes[0]);

constexpr double kWidth = 720;

// Width of 12 px text, at about 6.7 px per character (UTF-8 code points).
double text_width(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text)
    n += (c & 0xC0) != 0x80;
  return 6.7 * static_cast<double>(n);
}

// Room left of a chart for the longest label of `rows` (anything with a .label), within a third
// of the width.
template <class Row>
double label_room(const std::vector<Row>& rows) {
  double most = 0;
  for (const Row& r : rows)
    most = std::max(most, text_width(r.label));
  return std::clamp(most + 16, 80.0, kWidth / 3 + 40);
}

// Three significant digits, at most: "3.41", "12.5", "240".
int value_decimals(double v) {
  const double a = std::fabs(v);
  return a == 0 ? 0 : a < 1 ? 3 : a < 10 ? 2 : a < 100 ? 1 : 0;
}

// A step of 1, 2, 2.5 or 5 times a power of ten that cuts [0, top] into about `n` parts.
double nice_step(double top, int n) {
  if (!(top > 0))
    return 1;
  const double raw = top / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= raw)
      return m * p;
  }
  return 10 * p;
}

// Digits after the point that a tick step needs.
int step_decimals(double step) {
  int d = 0;
  while (d < 4 && std::fabs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) >
                      1e-9 * std::pow(10.0, d)) {
    ++d;
  }
  return d;
}

std::string svg_open(double height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" "
      "aria-label=\"{}\">",
      kWidth, height, html_escape(title));
}

std::string text_at(double x, double y, const std::string& s, const char* anchor = "start",
                    const char* extra = "") {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>{}</text>", x, y, anchor,
                     extra, html_escape(s));
}

// A horizontal value axis under a bar chart: ticks from 0 to `top`, in `unit`.
std::string value_axis(double x0, double x1, double y, double top, const std::string& unit,
                       Lang lang) {
  std::string s =
      fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>",
                  x0, y, x1, y);
  const double step = nice_step(top, 5);
  const int dec = step_decimals(step);
  for (double v = 0; v <= top * (1 + 1e-9); v += step) {
    const double x = x0 + (x1 - x0) * v / top;
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>", x, y, x,
        y + 4);
    s += text_at(x, y + 16, number(v, dec, lang), "middle");
  }
  s += text_at((x0 + x1) / 2, y + 32, unit, "middle");
  return s;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

HtmlReport::HtmlReport(std::string title, Lang lang) : title_(std::move(title)), lang_(lang) {}

void HtmlReport::heading(const std::string& text) {
  body_ += "<h2>" + html_escape(text) + "</h2>\n";
}

void HtmlReport::paragraph(const std::string& text) {
  body_ += "<p>" + html_escape(text) + "</p>\n";
}

void HtmlReport::verdict(const std::string& text) {
  body_ += "<p class=\"verdict\">" + html_escape(text) + "</p>\n";
}

void HtmlReport::list(const std::vector<std::string>& items) {
  if (items.empty())
    return;
  body_ += "<ul>\n";
  for (const std::string& i : items)
    body_ += "<li>" + html_escape(i) + "</li>\n";
  body_ += "</ul>\n";
}

void HtmlReport::table(const Table& t) {
  const auto& rows = t.rows();
  body_ += "<div class=\"scroll\"><table>\n<thead><tr>";
  for (size_t c = 0; c < rows.front().size(); ++c) {
    body_ += fmt::format("<th{}>{}</th>", t.right(c) ? " class=\"n\"" : "",
                         html_escape(rows.front()[c]));
  }
  body_ += "</tr></thead>\n<tbody>\n";
  for (size_t r = 1; r < rows.size(); ++r) {
    body_ += "<tr>";
    for (size_t c = 0; c < rows[r].size(); ++c) {
      // Short cells keep to one line (a narrow screen scrolls the table); sentences wrap.
      const char* cls = t.right(c) ? " class=\"n\"" : rows[r][c].size() > 60 ? " class=\"w\"" : "";
      body_ += fmt::format("<td{}>{}</td>", cls, html_escape(rows[r][c]));
    }
    body_ += "</tr>\n";
  }
  body_ += "</tbody></table></div>\n";
}

void HtmlReport::figure(const std::string& svg, const std::string& caption) {
  body_ += "<figure>" + svg + "<figcaption>" + html_escape(caption) + "</figcaption></figure>\n";
}

std::string HtmlReport::str() const {
  return fmt::format(
      "<!doctype html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>\n"
      "body {{ font: 15px/1.45 system-ui, sans-serif; color: #111; background: #fff; "
      "max-width: 52rem; margin: 0 auto; padding: 0.8rem 1rem; }}\n"
      "h1 {{ font-size: 1.35rem; }} h2 {{ font-size: 1.1rem; margin-top: 1.6rem; }}\n"
      ".verdict {{ font-size: 1.15rem; font-weight: 600; }}\n"
      ".scroll {{ overflow-x: auto; }}\n"
      "table {{ border-collapse: collapse; width: 100%; font-size: 0.92rem; }}\n"
      "th, td {{ border-bottom: 1px solid #ccc; padding: 0.2rem 0.4rem; text-align: left; "
      "vertical-align: top; white-space: nowrap; }}\n"
      "td.w {{ white-space: normal; min-width: 16rem; }}\n"
      ".n {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}\n"
      "figure {{ margin: 1rem 0; }} figcaption {{ font-size: 0.9rem; color: #444; }}\n"
      "svg {{ width: 100%; height: auto; }} svg text {{ font: 12px system-ui, sans-serif; "
      "fill: #111; }}\n"
      "footer {{ margin-top: 2rem; font-size: 0.85rem; color: #555; }}\n"
      "@media print {{ body {{ max-width: none; }} figure, table {{ break-inside: avoid; }} }}\n"
      "</style>\n</head>\n<body>\n<h1>{}</h1>\n{}<footer>{}</footer>\n</body>\n</html>\n",
      lang_tag(lang_), html_escape(title_), html_escape(title_), body_,
      tr(lang_, "Written by gpuplan: an estimate from its models and catalog, not a measurement.",
         "Gerado pelo gpuplan: uma estimativa dos seus modelos e catálogo, não uma medição."));
}

Result<bool> write_html_file(const std::string& path, const std::string& html) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    return fail("--html", fmt::format("{}: cannot write the file ({})", path, std::strerror(errno)),
                "give a path in a directory you can write to");
  }
  f << html;
  f.close();
  if (!f) {
    return fail("--html", fmt::format("{}: writing failed", path), "check the free space");
  }
  return true;
}

std::string stacked_bars_svg(const std::vector<StackedRow>& rows_in, const std::string& unit,
                             Lang lang) {
  std::vector<StackedRow> rows = rows_in;
  for (StackedRow& r : rows) {
    for (Segment& seg : r.segments) {
      seg.value = std::isfinite(seg.value) ? std::max(0.0, seg.value) : 0.0;
    }
    r.limit = std::isfinite(r.limit) ? std::max(0.0, r.limit) : 0.0;
  }
  constexpr double kRow = 42, kTop = 8;
  const double left = label_room(rows);
  double top = 0;
  std::vector<std::string> names;  // the legend: every segment label, in first-seen order
  for (const StackedRow& r : rows) {
    double total = 0;
    for (const Segment& s : r.segments) {
      total += s.value;
      if (std::find(names.begin(), names.end(), s.label) == names.end())
        names.push_back(s.label);
    }
    top = std::max({top, total, r.limit});
  }
  top = top > 0 ? top * 1.08 : 1;
  const double x0 = left, x1 = kWidth - 20;
  const double axis_y = kTop + kRow * static_cast<double>(rows.size()) + 4;
  const double legend_rows = std::ceil(static_cast<double>(names.size()) / 3.0);
  const double height = axis_y + 44 + 18 * legend_rows;
  std::string s = svg_open(height, unit);
  for (size_t i = 0; i < rows.size(); ++i) {
    const StackedRow& r = rows[i];
    const double y = kTop + kRow * static_cast<double>(i);
    s += text_at(x0 - 8, y + 25, r.label, "end");
    double at = 0;
    for (const Segment& seg : r.segments) {
      const size_t c =
          static_cast<size_t>(std::find(names.begin(), names.end(), seg.label) - names.begin());
      const double w = (x1 - x0) * seg.value / top;
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"24\" fill=\"{}\" "
          "stroke=\"#fff\"><title>{}: {} {}</title></rect>",
          x0 + (x1 - x0) * at / top, y + 12, std::max(0.0, w), kColours[c % kNumColours],
          html_escape(seg.label), number(seg.value, 1, lang), html_escape(unit));
      at += seg.value;
    }
    if (r.limit > 0) {
      const double x = x0 + (x1 - x0) * r.limit / top;
      s += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#b00\" "
          "stroke-width=\"2\" stroke-dasharray=\"5 3\"/>",
          x, y + 10, x, y + 38);
      // Above the bar, ending at the mark, so a limit near the right edge stays in view.
      s += text_at(x, y + 9, r.limit_label, "end", " font-size=\"11\"");
    }
  }
  s += value_axis(x0, x1, axis_y, top, unit, lang);
  for (size_t i = 0; i < names.size(); ++i) {
    const double lx = 20 + 235 * static_cast<double>(i % 3);
    const double ly = axis_y + 50 + 18 * std::floor(static_cast<double>(i) / 3);
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>", lx,
                     ly - 10, kColours[i % kNumColours]);
    s += text_at(lx + 17, ly, names[i]);
  }
  return s + "</svg>";
}

std::string bars_svg(const std::vector<Bar>& bars_in, const std::string& unit, Lang lang) {
  std::vector<Bar> bars = bars_in;
  for (Bar& b : bars) {
    b.value = std::isfinite(b.value) ? std::max(0.0, b.value) : 0.0;
  }
  constexpr double kRow = 26, kTop = 8;
  const double x0 = label_room(bars), x1 = kWidth - 20;
  // What is written at each bar's end, and a scale that leaves room for it after every bar.
  std::vector<std::string> ends;
  double top = 0;
  for (const Bar& b : bars) {
    ends.push_back(
        number(b.value, b.value == std::round(b.value) ? 0 : value_decimals(b.value), lang) +
        (b.note.empty() ? "" : " \u00b7 " + b.note));
    const double room = std::max(0.3 * (x1 - x0), (x1 - x0) - text_width(ends.back()) - 10);
    top = std::max(top, b.value * (x1 - x0) / room);
  }
  top = top > 0 ? top : 1;
  const double axis_y = kTop + kRow * static_cast<double>(bars.size()) + 4;
  std::string s = svg_open(axis_y + 40, unit);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = kTop + kRow * static_cast<double>(i);
    const double w = (x1 - x0) * b.value / top;
    s += text_at(x0 - 8, y + 15, b.label, "end");
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"18\" fill=\"{}\"/>",
                     x0, y + 2, w, kColours[0]);
    s += text_at(x0 + w + 5, y + 15, ends[i]);
  }
  s += value_axis(x0, x1, axis_y, top, unit, lang);
  return s + "</svg>";
}

std::string line_chart_svg(const std::vector<Series>& series_in, const Axis& x, const Axis& y,
                           const std::vector<Reference>& references, Lang lang) {
  // A point the chart cannot place (not finite, or at or below 0 on a log axis) is left out
  // rather than drawn at a coordinate that means nothing.
  std::vector<Series> series = series_in;
  for (Series& s : series) {
    std::erase_if(s.points, [&](const std::pair<double, double>& p) {
      return !std::isfinite(p.first) || !std::isfinite(p.second) || (x.log2 && p.first <= 0);
    });
  }
  constexpr double kHeight = 380;
  const double x0 = 64, x1 = kWidth - 24, y0 = 20, y1 = kHeight - 84;
  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  for (const Series& s : series) {
    for (const auto& [px, py] : s.points) {
      xmin = std::min(xmin, px);
      xmax = std::max(xmax, px);
      ymax = std::max(ymax, py);
    }
  }
  for (const Reference& r : references) {
    if (r.at_x) {
      xmax = std::max(xmax, r.lo);
    } else {
      ymax = std::max(ymax, r.hi);
    }
  }
  if (!std::isfinite(xmin)) {
    xmin = 0;
    xmax = 1;
  }
  if (x.log2) {
    xmin = std::max(xmin, 1.0);
    xmax = std::max(xmax, xmin * 2);
  } else {
    xmin = std::min(xmin, 0.0);
    if (xmax <= xmin)
      xmax = xmin + 1;
  }
  const double ystep = nice_step(ymax > 0 ? ymax * 1.1 : 1, 5);
  const double ytop = ystep * std::ceil((ymax > 0 ? ymax * 1.1 : 1) / ystep);
  auto sx = [&](double v) {
    const double t =
        x.log2 ? std::log2(v / xmin) / std::log2(xmax / xmin) : (v - xmin) / (xmax - xmin);
    return x0 + (x1 - x0) * t;
  };
  auto sy = [&](double v) { return y1 - (y1 - y0) * v / ytop; };
  std::string s = svg_open(kHeight, y.label + " / " + x.label);
  // Grid, ticks and axis labels.
  const int ydec = step_decimals(ystep);
  for (double v = 0; v <= ytop * (1 + 1e-9); v += ystep) {
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>", x0,
        sy(v), x1, sy(v));
    s += text_at(x0 - 6, sy(v) + 4, number(v, ydec, lang), "end");
  }
  std::vector<double> xticks;
  if (x.log2) {
    for (double v = xmin; v <= xmax * (1 + 1e-9); v *= 2)
      xticks.push_back(v);
  } else {
    const double step = nice_step(xmax - xmin, 6);
    for (double v = xmin; v <= xmax * (1 + 1e-9); v += step)
      xticks.push_back(v);
  }
  const int xdec = x.log2 ? 0 : step_decimals(nice_step(xmax - xmin, 6));
  for (double v : xticks) {
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>", sx(v),
        y1, sx(v), y1 + 4);
    s += text_at(sx(v), y1 + 17, number(v, xdec, lang), "middle");
  }
  s += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>"
      "<line x1=\"{0:.1f}\" y1=\"{3:.1f}\" x2=\"{0:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>",
      x0, y1, x1, y0);
  s += text_at((x0 + x1) / 2, y1 + 34, x.label, "middle");
  s += fmt::format(
      "<text transform=\"translate(14 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
      (y0 + y1) / 2, html_escape(y.label));
  // References under the curves.
  for (const Reference& r : references) {
    if (r.at_x) {
      s += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#555\" "
          "stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>",
          sx(r.lo), y0, y1);
      s += text_at(sx(r.lo) + 4, y0 + 12, r.label, "start", " font-size=\"11\"");
    } else if (r.hi > r.lo) {
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f2d9a6\" "
          "fill-opacity=\"0.6\"/>",
          x0, sy(r.hi), x1 - x0, sy(r.lo) - sy(r.hi));
      s += text_at(x1 - 4, sy(r.lo) - 4, r.label, "end", " font-size=\"11\"");
    } else {
      s += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#b00\" "
          "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
          x0, sy(r.lo), x1, sy(r.lo));
      s += text_at(x1 - 4, sy(r.lo) - 4, r.label, "end", " font-size=\"11\" fill=\"#b00\"");
    }
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& ser = series[i];
    const char* colour = kColours[i % kNumColours];
    std::string points;
    for (const auto& [px, py] : ser.points)
      points += fmt::format("{:.1f},{:.1f} ", sx(px), sy(py));
    s += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\" "
        "points=\"{}\"/>",
        colour, kDashes[i % kNumDashes], points);
    for (const auto& [px, py] : ser.points) {
      s += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: {}, {}</title>"
          "</circle>",
          sx(px), sy(py), colour, html_escape(ser.name), number(px, x.log2 ? 0 : 2, lang),
          number(py, 2, lang));
    }
    const double lx = x0 + 200 * static_cast<double>(i % 3);
    const double ly = kHeight - 30 + 16 * std::floor(static_cast<double>(i) / 3);
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2\" stroke-dasharray=\"{}\"/>",
        lx, ly - 4, lx + 24, ly - 4, colour, kDashes[i % kNumDashes]);
    s += text_at(lx + 30, ly, ser.name);
  }
  return s + "</svg>";
}

}  // namespace gpuplan::cli
