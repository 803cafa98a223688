#include <doctest/doctest.h>

#include <cstdint>

#include "flymc/data/dataset.hpp"

TEST_SUITE("unit") {
  TEST_CASE("Dataset rows are 64-byte aligned and zero padded") {
    flymc::Dataset ds(5, 51, "mem");
    CHECK(ds.stride() == 56);
    for (std::size_t i = 0; i < ds.n(); ++i) {
      CHECK(reinterpret_cast<std::uintptr_t>(ds.row(i)) % 64 == 0);
      for (std::size_t j = ds.d(); j < ds.stride(); ++j) CHECK(ds.row(i)[j] == 0.0);
    }
  }
}
