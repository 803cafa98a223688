#pragma once
/// @file gaussian_sigma.hpp
/// Gaussian linear regression with its noise scale σ inferred (`--model gaussian` without
/// `--noise-scale`; docs/math.md §2.6): y_n = x_n·β + o_n + σ·ε_n, ε_n ~ N(0, 1), datum n counted
/// w_n times. θ = (β, σ), D + 1 parameters, the last named `sigma`. The log-likelihood
///
///     ℓ(β, σ) = −W·log σ − Q(β)/(2σ²),   W = Σ_n w_n,   Q(β) = Σ_n w_n (y_n − o_n − x_n·β)²,
///
/// depends on the data only through W, A = Σ_n w_n x_n x_nᵀ, b = Σ_n w_n (y_n − o_n) x_n and Q at
/// one reference point β̃, summed in one set-up pass (two: Q(β̃) after β̃ is known): then
/// Q(β) = Q(β̃) − 2(β − β̃)·(b − Aβ̃) + (β − β̃)ᵀA(β − β̃) exactly, without the cancellation of
/// yᵀy − 2β·b + βᵀAβ, and every evaluation costs O(D²) whatever N. σ's prior
/// (RunConfig::prior_sigma) is part of ℓ here, so that the samplers' prior term (Prior, with a
/// flat term for σ) stays the coefficients'. Where σ ≤ 0 the density is 0 (ℓ = −∞): the chains
/// move in σ itself, and a proposal below 0 is rejected.
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/prior_spec.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

class GaussianSigmaModel {
 public:
  /// Not a FlyMC model: it offers no bound (the model table refuses FlyMC for it).
  using Bound = NoFlyBound<GaussianSigmaModel>;

  GaussianSigmaModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg);

  /// Every row of the data set (of all parts of a shard): each evaluation sums them all.
  std::size_t num_data() const noexcept { return data_->total_n(); }
  std::size_t dim() const noexcept { return d_ + 1; }
  ParamLayout layout() const noexcept { return {1, d_ + 1, stride_}; }
  const Dataset& data() const noexcept { return *data_; }
  const Prior& prior() const noexcept { return prior_; }
  const ScalePrior& sigma_prior() const noexcept { return sigma_prior_; }
  /// The coefficients' names as a single-index model's, then "sigma".
  std::vector<std::string> param_names() const;

  /// ℓ(β, σ) plus log p(σ) at padded θ (−∞ where σ ≤ 0).
  double log_lik(const double* theta) const;
  /// The same, and its gradient into grad (padded; 0 where σ ≤ 0).
  double log_lik_grad(const double* theta, double* grad) const;
  /// Newton's method on (β, σ) from the least-squares fit; the Laplace covariance from the exact
  /// negative Hessian at the MAP.
  MapResult find_map(double tol = 1e-10, int max_iter = 100) const;

  /// The collapsed sums (for tests).
  double total_weight() const noexcept { return w_; }
  const Mat& gram() const noexcept { return a_; }

 private:
  /// Q(β) for dense β.
  double residual_sum(const double* beta) const;
  /// ℓ + log p(σ), its gradient and its negative Hessian at dense θ (σ > 0).
  double objective(const Vec& theta, Vec* grad, Mat* neg_hess) const;

  std::shared_ptr<const Dataset> data_;
  std::size_t d_ = 0, stride_ = 0;
  Prior prior_;              // the coefficients' and a flat term for σ
  Prior coefficient_prior_;  // the coefficients' alone (its flat terms say what data must fix)
  ScalePrior sigma_prior_;
  double w_ = 0.0;      // W
  Mat a_;               // A
  Vec ref_;             // β̃
  Vec ref_grad_;        // b − Aβ̃
  double ref_q_ = 0.0;  // Q(β̃)
};

}  // namespace flymc
