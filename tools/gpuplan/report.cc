#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace gpuplan::cli {

std::string gib(Bytes b) {
  return fmt::format("{:.1f} GiB", b / GiB(1));
}

std::string gb(Bytes b) {
  return fmt::format("{:.1f} GB", b / GB(1));
}

void write_texts(JsonWriter& w, std::string_view key, const std::vector<Text>& texts, Lang lang) {
  w.key(key).begin_array();
  for (const Text& t : texts)
    w.value(t.in(lang));
  w.end_array();
}

std::string billions(double n) {
  const double b = n / 1e9;
  return b >= 100 ? fmt::format("{:.1f} B", b) : fmt::format("{:.2f} B", b);
}

Table::Table(std::vector<std::string> header, std::vector<bool> right) : right_(std::move(right)) {
  right_.resize(header.size(), false);
  rows_.push_back(std::move(header));
}

void Table::add(std::vector<std::string> row) {
  row.resize(rows_.front().size());
  rows_.push_back(std::move(row));
}

namespace {

// Columns a cell takes on a terminal: its UTF-8 code points ("eficiência" is 10, not 11 bytes).
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    n += (c & 0xC0) != 0x80;
  }
  return n;
}

}  // namespace

std::string Table::str(const std::string& indent) const {
  std::vector<size_t> width(rows_.front().size(), 0);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], columns(row[c]));
    }
  }
  std::string out;
  for (size_t r = 0; r < rows_.size(); ++r) {
    std::string line = indent;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string& cell = rows_[r][c];
      const std::string pad(width[c] - columns(cell), ' ');
      line += right_[c] ? pad + cell : cell + (c + 1 < width.size() ? pad : "");
      if (c + 1 < width.size()) {
        line += "  ";
      }
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out += line + "\n";
    if (r == 0) {
      // The rule spans the titled columns; an untitled last column holds free-text notes.
      size_t titled = width.size();
      while (titled > 1 && rows_[0][titled - 1].empty()) {
        --titled;
      }
      size_t total = 2 * (titled - 1);
      for (size_t c = 0; c < titled; ++c) {
        total += width[c];
      }
      out += indent + std::string(total, '-') + "\n";
    }
  }
  return out;
}

std::string Table::csv() const {
  std::string out;
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string& cell = row[c];
      if (cell.find_first_of(",\"\r\n") == std::string::npos) {
        out += cell;
      } else {
        out += '"';
        for (char ch : cell) {
          out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        }
        out += '"';
      }
      out += c + 1 < row.size() ? "," : "\n";
    }
  }
  return out;
}

Result<Money> parse_price(const std::string& text) {
  Result<Money> m = parse_money(text, "h", "GPU-hour");
  if (!m) {
    return fail("--price", m.error().what, "write it as e.g. '2.5 USD/h' or '14 BRL/h'");
  }
  return m;
}

}  // namespace gpuplan::cli
