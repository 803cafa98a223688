#pragma once
// Private: the models with a global parameter beside the coefficients (GaussianSigmaModel,
// NegBinomialPhiModel) compute ℓ, its gradient and Hessian at a dense θ in one objective; their
// log_lik and log_lik_grad read the samplers' padded θ through it.
#include <algorithm>
#include <cstddef>

#include "flymc/models/model.hpp"  // Vec, Mat

namespace flymc::detail {

/// objective(θ, grad, hess) at the first p entries of `theta`; with `grad`, its gradient written
/// there (p entries).
template <class Objective>
double padded_objective(std::size_t p, const double* theta, double* grad, Objective&& objective) {
  const Vec th = Eigen::Map<const Vec>(theta, static_cast<Eigen::Index>(p));
  if (grad == nullptr) return objective(th, nullptr, nullptr);
  Vec g;
  const double f = objective(th, &g, nullptr);
  std::copy(g.data(), g.data() + p, grad);
  return f;
}

}  // namespace flymc::detail
