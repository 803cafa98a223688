#include "flymc/models/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/parallel.hpp"
#include "model_checks.hpp"

namespace flymc {

double Prior::log_density(const double* theta, std::size_t p) const noexcept {
  double s = 0.0;
  if (kind == PriorKind::gaussian) {
    for (std::size_t j = 0; j < p; ++j) s += theta[j] * theta[j];
    return -0.5 * s / (sd * sd);
  }
  // Laplace(0, b) with b = sd/√2: log p = −|θ|/b.
  for (std::size_t j = 0; j < p; ++j) s += std::fabs(theta[j]);
  return -s * (std::sqrt(2.0) / sd);
}

void Prior::add_gradient(const double* theta, std::size_t p, double* grad) const noexcept {
  if (kind == PriorKind::gaussian) {
    const double prec = 1.0 / (sd * sd);
    for (std::size_t j = 0; j < p; ++j) grad[j] -= prec * theta[j];
    return;
  }
  const double inv_b = std::sqrt(2.0) / sd;
  for (std::size_t j = 0; j < p; ++j)
    grad[j] -= theta[j] > 0.0 ? inv_b : theta[j] < 0.0 ? -inv_b : 0.0;
}

double Prior::map_curvature(double theta_j) const noexcept {
  if (kind == PriorKind::gaussian) return 1.0 / (sd * sd);
  const double b = sd / std::sqrt(2.0);
  return 1.0 / (b * std::fmax(std::fabs(theta_j), 1e-8 * sd));
}

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
  const std::size_t row = first_bad / d, col = first_bad % d;
  const std::string value = number_text(ds.value(row, col));
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;  // the file's row
  throw DataError(ds.source() + ": row " + std::to_string(first + row + 1) + ": field " +
                  std::to_string(col + 2) + " (x" + std::to_string(col + 1) + "): feature " +
                  value + " is not finite or exceeds 1e100 in magnitude; " + model +
                  " needs sums of x^2 that fit a double (rescale the feature)");
}

std::vector<std::string> OnePredictorModel::param_names() const {
  std::vector<std::string> names;
  for (std::size_t j = 1; j <= dim(); ++j) names.push_back("theta." + std::to_string(j));
  return names;
}

}  // namespace flymc
