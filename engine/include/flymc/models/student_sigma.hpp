#pragma once
/// @file student_sigma.hpp
/// Student-t regression with its scale σ inferred (`--model student_t`; docs/math.md §2.8): real
/// responses y_n = x_n·β + o_n + σ·t_n, t_n ~ Student-t with ν degrees of freedom (--nu), datum n
/// counted w_n times. θ = (β, σ), D + 1 parameters, the last named `sigma`. Per datum, with
/// a = (ν + 1)/2, r_n = y_n − o_n − x_n·β and ρ_n = r_n/(σ√ν),
///
///     ℓ_n = lgamma(a) − lgamma(ν/2) − ½·log(πν) − log σ − a·log1p(ρ_n²).
///
/// Unlike Gaussian regression's, this sum does not collapse: every evaluation is one pass over
/// the rows. σ's prior (RunConfig::prior_sigma) is part of ℓ here, as in GaussianSigmaModel;
/// where σ ≤ 0 the density is 0 (ℓ = −∞): the chains move in σ itself, and a proposal below 0 is
/// rejected. `--model robust` is the same likelihood with σ known (RobustModel).
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/prior_spec.hpp"
#include "flymc/models/global_family.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

class StudentTSigmaModel {
 public:
  /// Not a FlyMC model: the model table refuses FlyMC for it.
  using Bound = NoFlyBound<StudentTSigmaModel>;

  StudentTSigmaModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg);

  std::size_t num_data() const noexcept { return data_->n(); }
  std::size_t dim() const noexcept { return d_ + 1; }
  ParamLayout layout() const noexcept { return {1, d_ + 1, stride_}; }
  const Dataset& data() const noexcept { return *data_; }
  const Prior& prior() const noexcept { return prior_; }
  /// The coefficients' names as a single-index model's, then "sigma".
  std::vector<std::string> param_names() const;

  /// ℓ(β, σ) plus log p(σ) at padded θ (−∞ where σ ≤ 0).
  double log_lik(const double* theta) const;
  /// The same, and its gradient into grad (padded; 0 where σ ≤ 0).
  double log_lik_grad(const double* theta, double* grad) const;
  /// Newton's method on (β, log σ) for the mode of their density (p(β, σ | y)·σ), from β = 0 and
  /// σ the responses' root mean square; where the exact Hessian is not negative definite (the
  /// likelihood is not log-concave) a step takes the expected (Fisher) information instead. The
  /// Laplace covariance from the exact negative Hessian there (Fisher's if that is not positive
  /// definite), carried to (β, σ).
  MapResult find_map(double tol = 1e-10, int max_iter = 200) const;
  /// Its likelihood per datum in (u, log σ) with σ's prior, for scalable MH (global_family.hpp).
  std::shared_ptr<const GlobalFamily> global_family_ptr() const noexcept { return global_; }

 private:
  /// ℓ + log p(σ), its gradient and its Hessian (not negated) at dense θ; with `fisher`, the
  /// negative expected information (negative definite) in place of the Hessian.
  double objective(const Vec& theta, Vec* grad, Mat* hess, Mat* fisher = nullptr) const;

  std::shared_ptr<const Dataset> data_;
  std::size_t d_ = 0, stride_ = 0;
  double nu_ = 4.0, a_ = 2.5;
  Prior prior_;              // the coefficients' and a flat term for σ
  Prior coefficient_prior_;  // the coefficients' alone
  ScalePrior sigma_prior_;
  double w_ = 0.0;       // W = Σ w_n
  double log_norm_ = 0;  // W·(lgamma(a) − lgamma(ν/2) − ½·log(πν))
  double rms_ = 1.0;     // √(Σ w_n (y_n − o_n)² / W): the search's first σ
  std::shared_ptr<const GlobalFamily> global_;
};

}  // namespace flymc
