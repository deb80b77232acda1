#include "gpuplan/json_writer.h"

#include <gtest/gtest.h>

namespace gpuplan {
namespace {

TEST(JsonWriter, WritesNestedDocumentsInOrder) {
  JsonWriter w;
  w.begin_object()
      .field("fits", false)
      .field("weights_bytes", 141.5e9)
      .key("layout")
      .begin_object()
      .field("tp", 8)
      .end_object()
      .key("ids")
      .begin_array()
      .value("a\"b")
      .value(int64_t{3})
      .end_array()
      .key("empty")
      .begin_array()
      .end_array()
      .end_object();
  EXPECT_EQ(w.str(),
            "{\n"
            "  \"fits\": false,\n"
            "  \"weights_bytes\": 141500000000,\n"
            "  \"layout\": {\n"
            "    \"tp\": 8\n"
            "  },\n"
            "  \"ids\": [\n"
            "    \"a\\\"b\",\n"
            "    3\n"
            "  ],\n"
            "  \"empty\": []\n"
            "}\n");
}

TEST(JsonWriter, WritesNonFiniteNumbersAsNull) {
  JsonWriter w;
  w.begin_array().value(1.0 / 0.0).end_array();
  EXPECT_EQ(w.str(), "[\n  null\n]\n");
}

}  // namespace
}  // namespace gpuplan
