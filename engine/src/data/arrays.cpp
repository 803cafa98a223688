// Data sets from arrays in memory, checked as the file loaders check theirs.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "flymc/data/loaders.hpp"
#include "loader_detail.hpp"

namespace flymc {

Dataset dataset_from_arrays(std::span<const double> x, std::span<const double> y, std::size_t d,
                            LabelDomain labels, const std::string& name) {
  const std::size_t n = y.size();
  if (x.size() != n * d)
    throw DataError(name + ": " + std::to_string(x.size()) + " feature values for " +
                    std::to_string(n) + " rows of " + std::to_string(d) + " features");
  // Rows are named as numpy indexes them (0-based), as the NPY loader names them.
  const loader_detail::RowLocator where{name, false, 0};
  auto check_finite = [&](double v, std::size_t row, std::size_t field) {
    if (!std::isfinite(v))
      loader_detail::fail(where.prefix(row, field) + (std::isnan(v) ? "NaN" : "Inf") +
                          " is not allowed");
  };
  Dataset ds(n, d, name);
  std::vector<double>& labels_out = ds.mutable_y();
  for (std::size_t i = 0; i < n; ++i) {
    check_finite(y[i], i, 1);
    labels_out[i] = y[i];
    const double* row = x.data() + i * d;
    for (std::size_t j = 0; j < d; ++j) check_finite(row[j], i, j + 2);
    std::copy_n(row, d, ds.mutable_row(i));
  }
  loader_detail::check_labels(labels_out, labels, where);
  return ds;
}

}  // namespace flymc
