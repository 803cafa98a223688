#pragma once
// What docs/models.md's snippets assume around them (tests/docs/extract_snippets.cmake): the
// headers the page names and `data`, a small logistic-regression data set in memory.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <flymc/flymc.hpp>
#include <flymc/models/family.hpp>
#include <flymc/validate/validate.hpp>
#include <memory>
#include <optional>
#include <string>

namespace docs_harness {

/// 400 rows: a bias and two features, labels ±1 drawn from a logistic model.
inline std::shared_ptr<const flymc::Dataset> data() {
  constexpr std::size_t n = 400, d = 3;
  auto ds = std::make_shared<flymc::Dataset>(n, d, "docs/models.md");
  flymc::Rng rng(7, 1);
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    x[0] = 1.0;
    x[1] = rng.normal();
    x[2] = rng.normal();
    const double eta = 0.3 + 1.2 * x[1] - 0.7 * x[2];
    ds->mutable_y()[i] = rng.uniform() < 1.0 / (1.0 + std::exp(-eta)) ? 1.0 : -1.0;
  }
  return ds;
}

}  // namespace docs_harness
