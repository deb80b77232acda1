// A small streaming JSON writer for gpuplan's reports.
//
// Keys come out in the order they are written and numbers in the shortest form that reads
// back exactly, so the same report is the same bytes every time. The writer checks its own
// nesting (a bug, not bad input, if it is wrong). Keys name their unit (`weights_bytes`,
// `step_time_s`); values are SI.
#ifndef GPUPLAN_JSON_WRITER_H_
#define GPUPLAN_JSON_WRITER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan {

class JsonWriter {
 public:
  // Objects and arrays. Inside an object, call key() before each value.
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(double v);  // non-finite numbers are written as null
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();

  // key + value in one call.
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  template <class T>
  JsonWriter& field(std::string_view k, const std::optional<T>& v) {
    key(k);
    return v ? value(*v) : null();
  }

  // The document, with two-space indentation and a final newline.
  // REQUIRES: every object and array has been closed.
  std::string str() const;

 private:
  void before_value();
  void newline();
  void write_string(std::string_view v);

  std::string out_;
  struct Level {
    bool is_object;
    int count;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace gpuplan

#endif  // GPUPLAN_JSON_WRITER_H_
