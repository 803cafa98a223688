#pragma once
/// @file robust.hpp
/// Bayesian robust linear regression: a Student-t likelihood for real responses, a Gaussian or
/// Laplace prior, and the Gaussian lower bound tangent to the likelihood in u = r² (docs/math.md
/// §2.3), whose product over the data collapses into a quadratic form in θ.
///
///   r_n = y_n − x_n·θ,  log L_n = C − a·log1p(r_n²/c),  a = (ν+1)/2,  c = ν s²,
///   C = lgamma(a) − lgamma(ν/2) − ½ log(π c).
///
/// The predictor is ψ_n = x_n·θ (K = 1), so ∂/∂ψ = −∂/∂r.
#include <Eigen/Dense>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/collapsed.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

class RobustBound;

/// The Student-t likelihood of a residual, log L(r) = C − a·log1p(r²/c), in the form the model
/// and its bound share.
///
/// Thread safety: immutable; all members may be called concurrently.
struct StudentT {
  double nu = 4.0;                ///< degrees of freedom ν
  double scale = 1.0;             ///< scale s
  double a = 2.5;                 ///< (ν+1)/2
  double c = 4.0;                 ///< ν s²
  double inv_sqrt_c = 0.5;        ///< 1/√c: residuals are scaled by it before squaring
  double log_inv_sqrt_c = -0.69;  ///< log(1/√c), for residuals beyond |r|/√c = 2^500
  double log_norm = 0.0;          ///< C = lgamma(a) − lgamma(ν/2) − ½ log(π c)

  /// @throw ConfigError unless ν and s are finite and > 0 with ν s² in [1e-150, 1e150].
  StudentT(double dof, double s);
  /// log L(r) for one residual: finite for every finite r (beyond |r|/√c = 2^500, where r²/c
  /// would soon overflow, log1p(r²/c) is taken as 2·log(|r|/√c), equal to double precision).
  double log_lik(double r) const noexcept;
};

/// Student-t regression as a single-index family, f(y, η) = log L(y − η) (StudentT): how the
/// samplers that read a model through the family interface see robust regression. It expands in
/// the residual u = y − η (σ = −1) with closed forms finite at every residual. With ρ = u/√c:
/// κ = M2 = 2a/c (f'' is least at ρ = 0), M1 = a/√c (|f'| is largest at ρ = ±1) and
/// M3 = (4a/c^{3/2})·max |ρ(3 − ρ²)/(1 + ρ²)³|. No M4 is given yet: the third-order scheme is
/// not validated on it.
class StudentTFamily final : public SingleIndexFamily {
 public:
  explicit StudentTFamily(const StudentT& t) : t_(t) {}
  std::string name() const override { return "student_t"; }
  void derivatives(double y, double eta, int order, double* out) const override;
  std::optional<double> kappa() const override { return 2.0 * t_.a / t_.c; }
  std::optional<double> m1() const override { return t_.a * t_.inv_sqrt_c; }
  std::optional<double> m2() const override { return 2.0 * t_.a / t_.c; }
  std::optional<double> m3() const override;
  /// sup |g''''| = 12a/c², at a zero residual (q = 1 in q²(1 − 8q + 8q²)).
  std::optional<double> m4() const override;
  double expansion_sign(double) const override { return -1.0; }
  Expansion expand(double y, double eta_hat, int order) const override;
  double remainder_change(double y, double u_hat, double h, double h2, int order) const override;
  bool remainder_reads_response() const override { return false; }
  bool same_as(const SingleIndexFamily& other) const override;
  const StudentT& student() const noexcept { return t_; }

  /// The expansion of log L at the residual û to `order` 2 or 3: with ρ = û/√c and
  /// q = 1/(1 + ρ²), f1 = −(2a/√c)·ρq, f2 = −(2a/c)·q(2q − 1) and f3 = (4a/c^{3/2})·ρq·q(4q − 1),
  /// finite at every finite û.
  static Expansion taylor(const StudentT& t, double u_hat, int order = 2) noexcept;
  /// gap(h) = log L(û + h) − f1·h − ½f2·h² (order 3: also − ⅙f3·h³) for the expansion `e`.
  static double gap(const StudentT& t, const Expansion& e, double h, int order = 2) noexcept;

 private:
  StudentT t_;
};

/// Robust linear regression over a shared data set: responses y_n ∈ R (LabelDomain::any),
/// features x_n ∈ R^D (a bias column, if wanted, is one of them), θ ∈ R^D.
///
/// Thread safety: all const members may be called concurrently.
/// Satisfies FireflyModel (model.hpp) with K = 1 linear predictor per datum.
class RobustModel : public OnePredictorModel {
 public:
  using Bound = RobustBound;

  /// @throw ConfigError if the prior's sd is outside [1e-150, 1e150], or ν, s are invalid
  /// (StudentT).
  /// @throw DataError if a response or a feature is not finite or exceeds 1e100 in magnitude
  /// (the collapsed statistics sum w·r² and w·x² over up to 2^32 rows and must stay finite);
  /// the message names the row and field.
  RobustModel(std::shared_ptr<const Dataset> data, Prior prior, double nu, double scale);
  /// The model a run configures (cfg.prior, cfg.prior_sd, cfg.student_nu, cfg.noise_scale, unset
  /// meaning 1).
  RobustModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
      : RobustModel(data, prior_of(cfg, data->d()), cfg.student_nu, cfg.noise_scale.value_or(1.0)) {
  }

  const StudentT& student() const noexcept { return t_; }
  /// The likelihood as a single-index family (StudentTFamily).
  const std::shared_ptr<const SingleIndexFamily>& family_ptr() const noexcept { return family_; }
  double nu() const noexcept { return t_.nu; }
  double scale() const noexcept { return t_.scale; }

  /// log p(θ) without its constant. `theta` has at least dim() entries.
  double log_prior(const double* theta) const noexcept { return prior_.log_density(theta, dim()); }
  /// Σ_n log L_n(θ) over all data (deterministic parallel reduction, vectorized log1p).
  /// `theta` is padded: stride() entries, 64-byte aligned, zeros past dim().
  double log_lik(const double* theta) const;
  /// Σ_n log L_n(θ), and its gradient Σ_n 2a·r_n/(c + r_n²)·x_n into `grad` (stride() entries,
  /// overwritten), in one pass over the data (deterministic parallel reduction).
  double log_lik_grad(const double* theta, double* grad) const;
  /// Gradient of log_lik + log_prior at dense θ, D entries.
  Vec grad_log_post(const Vec& theta) const;

  /// θ_MAP of the full posterior, a local mode (the Student-t posterior may be multimodal).
  /// Each iteration takes the Newton step with the exact Hessian when that is negative definite
  /// and a line search along it succeeds; otherwise the MM (IRLS) step of the tangent bound
  /// (weighted least squares with w_n = a/(c + r_n²) at the current residuals), which never
  /// lowers the objective. A Laplace prior enters through Prior::map_curvature, from the
  /// Gaussian prior's MAP (as LogisticModel::find_map). The Laplace covariance is the inverse of
  /// −∇² log p + prior.precision(), or of the MM curvature Σ 2w_n x_n x_nᵀ + precision where that
  /// is not positive definite.
  MapResult find_map(double tol = 1e-10, int max_iter = 200) const;

 private:
  /// A MAP search's state, carried from the Gaussian-prior stage into the Laplace one.
  struct Ascent {
    Vec theta;
    double f = 0.0;      // objective at theta
    int iterations = 0;  // data passes with a gradient
    Mat lik_curv;  // −∇² log L from the last pass, if taken at (nearly) theta; else empty
  };
  class Climber;  // one stage of climb() (robust.cpp)
  Ascent climb(const Prior& prior, Ascent start, double tol, int max_iter) const;
  StudentT t_;
  std::shared_ptr<const SingleIndexFamily> family_;
};

/// The Gaussian lower bound of docs/math.md §2.3 with per-datum tangent points ξ_n ≥ 0:
///   log B_n(θ) = f(ξ_n²) − w_n (r_n² − ξ_n²) − ε,  f(u) = C − a·log1p(u/c),  w_n = a/(c + ξ_n²),
/// tangent to the convex f at u = ξ_n², hence below it. Its sum over the data is the quadratic
///   Σ_n log B_n(θ) = f0 + g0·δ − δᵀAδ,  δ = θ − θ0,  A = Σ_n w_n x_n x_nᵀ,  g0 = Σ_n 2w_n r_n(θ0)
///   x_n,
/// anchored at θ0 for accuracy. Δ_n = log L_n − log B_n is evaluated in the cancellation-free
/// form a·(t − log1p t) + ε, t = (r_n² − ξ_n²)/(c + ξ_n²) > −1, which is ≥ 0 by construction.
/// ε ≥ 0 is an optional slack (docs/math.md §1.5).
///
/// Thread safety: immutable after construction (except raise_for_testing); all const members may
/// be called concurrently.
class RobustBound {
 public:
  /// The bound `cfg` asks for (cfg.bound: MAP-tuned at map.theta, or untuned with
  /// cfg.untuned_xi; cfg.bound_slack), as the sampler builds it.
  static RobustBound make(const RobustModel& model, const RunConfig& cfg, const MapResult& map);
  /// Untuned: ξ_n = xi for every datum (the residual magnitude where the Gaussian touches the
  /// Student-t). The anchor only affects rounding.
  /// @throw ConfigError unless 0 ≤ xi ≤ 1e100, or for a negative or non-finite slack.
  static RobustBound untuned(const RobustModel& model, double xi, const Vec& anchor,
                             double slack = 0.0);
  /// MAP-tuned: ξ_n = |r_n(θ_MAP)|, tight at θ_MAP.
  static RobustBound map_tuned(const RobustModel& model, const Vec& theta_map, double slack = 0.0);

  /// Σ_n log B_n(θ) from the collapsed statistics, O(D²). `theta` is padded (stride() entries,
  /// 64-byte aligned); `scratch` is caller-owned, scratch_size() aligned doubles. If `grad` is
  /// non-null, the gradient g0 − 2Aδ is written to it (D entries).
  double log_bound_sum(const double* theta, double* scratch, double* grad = nullptr) const noexcept;
  std::size_t scratch_size() const noexcept { return sum_.scratch_size(); }
  std::size_t outputs() const noexcept { return 1; }  ///< linear predictors per datum

  /// For data idx[i] with predictors psi[i] = x_n·θ: Δ_n ≥ 0 into delta[i] (vectorized; +inf
  /// only where Δ_n itself exceeds the double range). A negative Δ (only through
  /// raise_for_testing) is clamped to 0 and counted: a rounding clamp within a few ulps of its
  /// terms, a violation beyond (NaN too).
  BoundCheck deltas(const Index* idx, const double* psi, std::size_t k,
                    double* delta) const noexcept;
  /// deltas(), plus ∂Δ_n/∂ψ_n = −2a·r_n·(r_n² − ξ_n²)/((c + r_n²)(c + ξ_n²)) into dpsi[i] (0
  /// where Δ_n was clamped).
  BoundCheck delta_grads(const Index* idx, const double* psi, std::size_t k, double* delta,
                         double* dpsi) const noexcept;
  /// Test hook: raises every log B_n by `excess` > 0, which makes the bound invalid wherever
  /// Δ_n < excess. Only for testing that violations are detected and reported.
  void raise_for_testing(double excess) noexcept;
  /// log B_n(θ) for one datum given its predictor x_n·θ (tests and diagnostics).
  double log_bound(Index n, double psi) const noexcept;
  /// log L_n(θ) for one datum given its predictor.
  double log_lik(Index n, double psi) const noexcept;
  /// The same with the predictor passed by pointer (the form every bound offers).
  double log_bound(Index n, const double* pred) const noexcept { return log_bound(n, *pred); }
  double log_lik(Index n, const double* pred) const noexcept { return log_lik(n, *pred); }

  double slack() const noexcept { return slack_; }
  const Mat& A() const noexcept { return sum_.A(); }
  const std::vector<double>& xi() const noexcept { return xi_; }
  double setup_seconds() const noexcept { return seconds_; }

 private:
  RobustBound(const RobustModel& model, std::vector<double> xi, const Vec& anchor, double slack);
  /// Δ_n where t_n overflows (off the hot path; +inf only if Δ_n does).
  double huge_t_delta(Index n, double psi) const noexcept;
  std::shared_ptr<const Dataset> data_;
  StudentT t_;
  /// On a data set sharded over processes, every process gets every datum's y_n and ξ_n (16
  /// bytes a row), so that FlyMC can evaluate a bright datum held elsewhere (docs/mpi.md); they
  /// are then indexed by the whole data set's row index.
  void share_records();
  // ξ_n only: w_n = a/(c + ξ_n²) is recomputed where needed, so the bright loop gathers one
  // value per datum besides y_n (a cache miss each at large N).
  std::vector<double> xi_;
  std::vector<double> y_all_;  // every row's y_n, on a shard only
  /// y_n by record index: the data's, or on a shard every row's.
  const double* ys() const noexcept { return y_all_.empty() ? data_->y().data() : y_all_.data(); }
  CollapsedQuadratic sum_;  // Σ_n log B_n
  // offset_ = ε − (raised excess): Δ_n = a·(t − log1p t) + offset_.
  double slack_ = 0.0, offset_ = 0.0, seconds_ = 0.0;
};

}  // namespace flymc
