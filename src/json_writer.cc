#include "gpuplan/json_writer.h"

#include <fmt/format.h>

#include <cmath>

#include "gpuplan/result.h"

namespace gpuplan {

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * stack_.size(), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!stack_.empty()) {
    GPUPLAN_CHECK(!stack_.back().is_object, "JSON object value written without a key");
    if (stack_.back().count++ > 0) {
      out_ += ',';
    }
    newline();
  }
}

JsonWriter& JsonWriter::key(std::string_view k) {
  GPUPLAN_CHECK(!stack_.empty() && stack_.back().is_object && !after_key_,
                "JSON key outside an object");
  if (stack_.back().count++ > 0) {
    out_ += ',';
  }
  newline();
  write_string(k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back({true, 0});
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  GPUPLAN_CHECK(!stack_.empty() && stack_.back().is_object, "unbalanced JSON object");
  const bool empty = stack_.back().count == 0;
  stack_.pop_back();
  if (!empty) {
    newline();
  }
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back({false, 0});
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  GPUPLAN_CHECK(!stack_.empty() && !stack_.back().is_object, "unbalanced JSON array");
  const bool empty = stack_.back().count == 0;
  stack_.pop_back();
  if (!empty) {
    newline();
  }
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view v) {
  before_value();
  write_string(v);
  return *this;
}

void JsonWriter::write_string(std::string_view v) {
  out_ += '"';
  for (char c : v) {
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out_ += fmt::format("\\u{:04x}", c);
        } else {
          out_ += c;
        }
    }
  }
  out_ += '"';
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    out_ += fmt::format("{}", v);
  }
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  before_value();
  out_ += fmt::format("{}", v);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

std::string JsonWriter::str() const {
  GPUPLAN_CHECK(stack_.empty(), "JSON document has unclosed objects or arrays");
  return out_ + "\n";
}

}  // namespace gpuplan
