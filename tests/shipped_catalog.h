// The catalog in data/, loaded once per test binary, for the tests that reason about real GPUs,
// fabrics and models. catalog_test.cc checks the loading itself.
#ifndef GPUPLAN_TESTS_SHIPPED_CATALOG_H_
#define GPUPLAN_TESTS_SHIPPED_CATALOG_H_

#include <cstdio>
#include <cstdlib>

#include "gpuplan/catalog.h"

namespace gpuplan {

inline const Catalog& shipped_catalog() {
  static const Catalog catalog = [] {
    Result<Catalog> c = Catalog::load(GPUPLAN_DATA_DIR);
    if (!c) {
      std::fprintf(stderr, "cannot load the shipped catalog: %s\n", c.error().message().c_str());
      std::abort();
    }
    return std::move(*c);
  }();
  return catalog;
}

}  // namespace gpuplan

#endif  // GPUPLAN_TESTS_SHIPPED_CATALOG_H_
