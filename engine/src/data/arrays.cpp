// Data sets from arrays in memory, checked as the file loaders check theirs.
#include <algorithm>
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
  Dataset ds(n, d, name);
  for (std::size_t i = 0; i < n; ++i) std::copy_n(x.data() + i * d, d, ds.mutable_row(i));
  std::vector<double>& labels_out = ds.mutable_y();
  std::copy(y.begin(), y.end(), labels_out.begin());
  // Rows are named as numpy indexes them (0-based), as the NPY loader names them.
  loader_detail::check_labels(labels_out, labels, loader_detail::RowLocator{name, false, 0});
  return ds;
}

}  // namespace flymc
