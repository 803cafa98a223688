#pragma once
/// @file global_model.hpp
/// The model of a family with a positive global parameter that a library user gives in code
/// (RunConfig::global_family, set by flymc::run(cfg, data, global_family); docs/models.md, "A
/// global parameter of your own"): datum n, counted w_n times, has the log-likelihood
/// f(y_n, u_n, s) with u_n = x_n·β + o_n and v = e^s > 0 shared by every datum (a scale, a
/// dispersion). θ = (β, v), D + 1 parameters, the last named by the family (param_name()).
///
///     ℓ(β, v) = Σ_n w_n·f(y_n, x_n·β + o_n, log v) + log p(v),
///
/// with p the family's prior on v (PositiveGlobalFamily::prior()); where v ≤ 0 the density is 0
/// (ℓ = −∞). Every evaluation is one pass over the rows, summed in a fixed order (over every part
/// of a sharded data set too). Regular MCMC samples it, and scalable MH of the second order through
/// the family's envelope (docs/math.md §8, "A global parameter beside the coefficients").
#include <memory>
#include <string>
#include <vector>

#include "flymc/models/global_family.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

class GlobalFamilyModel {
 public:
  /// Not a FlyMC model: the samplers' checks refuse FlyMC for it.
  using Bound = NoFlyBound<GlobalFamilyModel>;

  /// @throw ConfigError without cfg.global_family or with trials in the data; DataError naming
  /// the row whose response is not finite or the family refuses (check_response).
  GlobalFamilyModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg);

  std::size_t num_data() const noexcept { return data_->n(); }
  std::size_t dim() const noexcept { return d_ + 1; }
  ParamLayout layout() const noexcept { return {1, d_ + 1, stride_}; }
  const Dataset& data() const noexcept { return *data_; }
  const Prior& prior() const noexcept { return prior_; }
  /// The coefficients' names as a single-index model's, then the family's param_name().
  std::vector<std::string> param_names() const;

  /// ℓ(β, v) at padded θ (−∞ where v ≤ 0).
  double log_lik(const double* theta) const;
  /// The same, and its gradient into grad (padded; 0 where v ≤ 0).
  double log_lik_grad(const double* theta, double* grad) const;
  /// Newton's method on (β, log v) from β = 0 and v = 1, with log v's curvature at least 1 (a
  /// family's likelihood need not be log-concave in s); the Laplace covariance carried to (β, v).
  MapResult find_map(double tol = 1e-10, int max_iter = 200) const;
  std::shared_ptr<const GlobalFamily> global_family_ptr() const noexcept { return family_; }

 private:
  /// ℓ, its gradient and its Hessian (not negated) at dense θ.
  double objective(const Vec& theta, Vec* grad, Mat* hess) const;

  std::shared_ptr<const Dataset> data_;
  std::shared_ptr<const PositiveGlobalFamily> family_;
  std::size_t d_ = 0, stride_ = 0;
  Prior prior_;              // the coefficients' and a flat term for v
  Prior coefficient_prior_;  // the coefficients' alone
};

}  // namespace flymc
