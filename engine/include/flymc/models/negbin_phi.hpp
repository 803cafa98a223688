#pragma once
/// @file negbin_phi.hpp
/// Negative binomial regression with its dispersion φ inferred (`--model negbin` without
/// `--dispersion`; docs/math.md §2.7): counts y_n with mean μ_n = e^{η_n}, η_n = x_n·β + o_n, and
/// variance μ_n + μ_n²/φ, datum n counted w_n times. θ = (β, φ), D + 1 parameters, the last named
/// `phi`. Per datum, with log y_n! dropped,
///
///     ℓ_n = log Γ(y_n + φ) − log Γ(φ) + y_n η_n − y_n log φ − (y_n + φ)·softplus(η_n − log φ).
///
/// The Γ terms depend on the data only through the counts' histogram (computed once): every
/// evaluation costs one pass over the rows for η and the softplus terms. φ's prior
/// (RunConfig::prior_phi, proper) is part of ℓ here, as σ's is in GaussianSigmaModel. Where φ ≤ 0
/// the density is 0 (ℓ = −∞): the chains move in φ itself, and a proposal below 0 is rejected.
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/prior_spec.hpp"
#include "flymc/models/global_family.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

class NegBinomialPhiModel {
 public:
  /// Not a FlyMC model: the model table refuses FlyMC for it.
  using Bound = NoFlyBound<NegBinomialPhiModel>;

  NegBinomialPhiModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg);

  std::size_t num_data() const noexcept { return data_->n(); }
  std::size_t dim() const noexcept { return d_ + 1; }
  ParamLayout layout() const noexcept { return {1, d_ + 1, stride_}; }
  const Dataset& data() const noexcept { return *data_; }
  const Prior& prior() const noexcept { return prior_; }
  /// The coefficients' names as a single-index model's, then "phi".
  std::vector<std::string> param_names() const;

  /// ℓ(β, φ) plus log p(φ) at padded θ (−∞ where φ ≤ 0).
  double log_lik(const double* theta) const;
  /// The same, and its gradient into grad (padded; 0 where φ ≤ 0).
  double log_lik_grad(const double* theta, double* grad) const;
  /// Newton's method on (β, log φ) from 0, for the mode of their density (p(β, φ | y)·φ); the
  /// Laplace covariance from the exact negative Hessian there, carried to (β, φ).
  MapResult find_map(double tol = 1e-10, int max_iter = 200) const;
  /// Its likelihood per datum in (u, log φ) with φ's prior, for scalable MH (global_family.hpp).
  std::shared_ptr<const GlobalFamily> global_family_ptr() const noexcept { return global_; }

  /// Σ_n w_n·(log Γ(y_n + φ) − log Γ(φ)) and its first two φ-derivatives, from the histogram.
  struct GammaTerms {
    double f, d1, d2;
  };
  GammaTerms gamma_terms(double phi) const noexcept;

 private:
  /// ℓ + log p(φ), its gradient and its Hessian (not negated) at dense θ.
  double objective(const Vec& theta, Vec* grad, Mat* hess) const;

  std::shared_ptr<const Dataset> data_;
  std::size_t d_ = 0, stride_ = 0;
  Prior prior_;              // the coefficients' and a flat term for φ
  Prior coefficient_prior_;  // the coefficients' alone
  ScalePrior phi_prior_;
  double wy_ = 0.0;  // Σ w_n y_n
  /// tail_[j] = Σ_n w_n·[y_n > j] for j < kExact: log Γ(y + φ) − log Γ(φ) = Σ_{j<y} log(φ + j)
  /// exactly for the first kExact terms; counts beyond add their rest from Stirling's series.
  static constexpr int kExact = 64;
  std::vector<double> tail_;
  std::vector<std::pair<double, double>> big_;  // (y, Σ w) for each distinct y > kExact
  std::shared_ptr<const GlobalFamily> global_;
};

}  // namespace flymc
