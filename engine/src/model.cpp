#include "flymc/model.hpp"

#include <cmath>

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

}  // namespace flymc
