#include "flymc/models/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/parallel.hpp"
#include "model_checks.hpp"

namespace flymc {

void detail::refuse_shard(const Dataset& ds, const std::string& model) {
  if (ds.shard() != nullptr)
    throw ConfigError(ds.source() + ": " + model +
                      " does not run on data sharded over processes yet (logistic regression "
                      "does)");
}

void detail::check_features(const Dataset& ds, const std::string& model) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  const std::size_t d = ds.d();
  const std::size_t first_bad = deterministic_reduce(
      ds.n(), kReduceGrain, none,
      [&](std::size_t lo, std::size_t hi) {
        const RowsF64 x = ds.rows(lo, hi);
        for (std::size_t i = lo; i < hi; ++i) {
          const double* r = x.row(i - lo);
          // Without an early exit, so that the row's test runs as vector compares.
          bool ok = true;
          for (std::size_t j = 0; j < d; ++j) ok &= std::fabs(r[j]) <= kMaxFeature;
          if (ok) continue;
          for (std::size_t j = 0; j < d; ++j)
            if (!(std::fabs(r[j]) <= kMaxFeature)) return i * d + j;
        }
        return none;
      },
      [](std::size_t a, std::size_t b) { return std::min(a, b); });
  if (first_bad == none) return;
  const std::size_t row = first_bad / d, j = first_bad % d;
  const std::size_t col = j - (ds.has_intercept() ? 1 : 0);  // the file's feature (after ones)
  const std::string value = number_text(ds.value(row, j));
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;  // the file's row
  throw DataError(ds.source() + ": row " + std::to_string(first + row + 1) + ": field " +
                  std::to_string(col + 2) + " (x" + std::to_string(col + 1) + "): feature " +
                  value + " is not finite or exceeds 1e100 in magnitude; " + model +
                  " needs sums of x^2 that fit a double (rescale the feature)");
}

std::string detail::improper_or_singular(const Prior& prior, const std::string& what) {
  if (!prior.any_flat()) return what;
  return what +
         ": with a flat prior the posterior is improper where the data do not determine "
         "every coefficient (collinear features, fewer rows than coefficients); give them "
         "a proper prior, e.g. --prior 'normal(0, 10)'";
}

void detail::check_laplace_precision(const Prior& prior, const Eigen::LLT<Mat>& llt,
                                     const std::string& model) {
  const bool ok = llt.info() == Eigen::Success && (!prior.any_flat() || llt.rcond() > 1e-12);
  if (!ok)
    throw ConfigError(improper_or_singular(
        prior, model + ": the Laplace precision at the MAP is not positive definite"));
}

std::vector<std::string> coefficient_names(const Dataset& data) {
  std::vector<std::string> names;
  const std::size_t first = data.has_intercept() ? 1 : 0;
  if (first == 1) names.emplace_back("intercept");
  for (std::size_t j = 1; j + first <= data.d(); ++j) names.push_back("theta." + std::to_string(j));
  return names;
}

std::vector<std::string> OnePredictorModel::param_names() const {
  return coefficient_names(*data_);
}

void detail::no_fly_bound() { throw std::logic_error("a model without a FlyMC bound"); }

}  // namespace flymc
