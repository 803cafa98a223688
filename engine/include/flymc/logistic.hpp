#pragma once
/// @file logistic.hpp
/// Bayesian logistic regression (labels ±1, Gaussian prior N(0, prior_sd² I)) and its
/// Jaakkola–Jordan lower bound with collapsed sufficient statistics (MATH.md 2.1).
#include <Eigen/Dense>
#include <cstddef>
#include <memory>
#include <vector>

#include "flymc/dataset.hpp"

namespace flymc {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;

/// λ(ξ) = tanh(ξ/2)/(4ξ), with its limit 1/8 at ξ → 0.
double jj_lambda(double xi) noexcept;

/// Outcome of comparing bounds with likelihoods (LogisticBound::deltas). Δ_n = log L_n − log B_n
/// is computed as a difference of terms of size ~|a_n|, so rounding alone can leave it slightly
/// negative where the bound is tight. Tolerance: 1e-9 + 64·ε·(|log L_n| + |k_n| + |a_n|/2 +
/// λ_n a_n²), ε = 2^-52: a handful of ulps of every term (and of the vectorized log-sigmoid),
/// with an absolute floor.
struct BoundCheck {
  std::size_t violations = 0;  ///< Δ_n below −tolerance: log B_n > log L_n, a real violation
  std::size_t clamped = 0;     ///< Δ_n in [−tolerance, 0): rounding, clamped to 0
};

/// Result of the full-data MAP search.
struct MapResult {
  Vec theta;        ///< θ_MAP (D entries)
  Mat covariance;   ///< Laplace covariance: inverse of −∇² log p(θ | data) at θ_MAP
  double log_post;  ///< log p(θ_MAP | data) up to a constant
  int iterations;   ///< Newton iterations
  double seconds;   ///< wall time
};

/// Logistic regression likelihood and prior over a shared data set.
///
/// Thread safety: all const members may be called concurrently.
class LogisticModel {
 public:
  /// @throw ConfigError if prior_sd is outside [1e-150, 1e150] (1/σ² must be a finite double).
  /// @throw DataError if a feature is not finite or exceeds 1e100 in magnitude (sums of x² must
  /// stay finite).
  LogisticModel(std::shared_ptr<const Dataset> data, double prior_sd);

  std::size_t dim() const noexcept { return data_->d(); }
  std::size_t num_data() const noexcept { return data_->n(); }
  std::size_t stride() const noexcept { return data_->stride(); }
  const Dataset& data() const noexcept { return *data_; }
  const std::shared_ptr<const Dataset>& data_ptr() const noexcept { return data_; }
  double prior_sd() const noexcept { return prior_sd_; }

  /// log N(θ; 0, σ²I) without its constant. `theta` has at least dim() entries.
  double log_prior(const double* theta) const noexcept;
  /// Σ_n log σ(t_n x_n·θ) over all data (deterministic parallel reduction).
  /// `theta` is padded: stride() entries, 64-byte aligned, zeros past dim().
  double log_lik(const double* theta) const;
  /// Gradient of log_lik + log_prior, D entries.
  Vec grad_log_post(const Vec& theta) const;

  /// θ_MAP of the full posterior by damped Newton iterations with a backtracking line search.
  MapResult find_map(double tol = 1e-10, int max_iter = 100) const;

 private:
  std::shared_ptr<const Dataset> data_;
  double prior_sd_;
};

/// The Jaakkola–Jordan bound with per-datum parameters ξ_n, collapsed to a quadratic in θ.
///   log B_n(θ) = k_n + a_n/2 − λ_n a_n²,  a_n = t_n x_n·θ,  k_n = log σ(ξ_n) − ξ_n/2 + λ_n ξ_n² −
///   ε
/// and Σ_n log B_n(θ) = f0 + g0·(θ−θ0) − (θ−θ0)ᵀA(θ−θ0), anchored at θ0 for accuracy.
/// ε ≥ 0 is an optional slack (MATH.md 1.5): B_n e^{−ε} is still a lower bound.
///
/// Thread safety: immutable after construction; all members may be called concurrently.
class LogisticBound {
 public:
  /// Untuned: ξ_n = xi for every datum (paper: 1.5). The anchor only affects rounding.
  static LogisticBound untuned(const LogisticModel& model, double xi, const Vec& anchor,
                               double slack = 0.0);
  /// MAP-tuned: ξ_n = |x_n·θ_MAP|, tight at θ_MAP.
  static LogisticBound map_tuned(const LogisticModel& model, const Vec& theta_map,
                                 double slack = 0.0);

  /// Σ_n log B_n(θ) from the collapsed statistics, O(D²). `theta` is padded (stride() entries,
  /// 64-byte aligned); `scratch` is caller-owned, 2·stride() aligned doubles (no allocation here).
  /// If `grad` is non-null, the gradient g0 − 2A(θ−θ0) is written to it (D entries).
  double log_bound_sum(const double* theta, double* scratch, double* grad = nullptr) const noexcept;

  /// For data idx[i] with dot products dots[i] = x_n·θ: Δ_n = log L_n − log B_n ≥ 0 into
  /// `delta[i]`. A negative Δ (the bound above its likelihood) is clamped to 0 and counted:
  /// as a rounding clamp when it is within the rounding tolerance (see BoundCheck), as a bound
  /// violation beyond it (a bug or a broken bound; the draws are then not exact).
  BoundCheck deltas(const Index* idx, const double* dots, std::size_t k,
                    double* delta) const noexcept;
  /// Test hook: raises every log B_n by `excess` > 0, which makes the bound invalid wherever
  /// Δ_n < excess. Only for testing that violations are detected and reported.
  void raise_for_testing(double excess) noexcept;
  /// log B_n(θ) for one datum given its dot product (tests and diagnostics).
  double log_bound(Index n, double dot) const noexcept;
  /// log L_n(θ) for one datum given its dot product.
  double log_lik(Index n, double dot) const noexcept;

  double slack() const noexcept { return slack_; }
  const Mat& A() const noexcept { return A_; }
  const std::vector<double>& xi() const noexcept { return xi_; }
  double setup_seconds() const noexcept { return seconds_; }

 private:
  LogisticBound(const LogisticModel& model, std::vector<double> xi, const Vec& anchor,
                double slack);
  std::shared_ptr<const Dataset> data_;
  std::vector<double> xi_, k_, lam_;
  Vec theta0_, g0_;
  Mat A_;
  AlignedBuffer a_pad_, theta0_pad_, g0_pad_;  // A rows, θ0 and g0 padded to stride for SIMD dots
  std::size_t d_ = 0, stride_ = 0;
  double f0_ = 0.0, slack_ = 0.0, seconds_ = 0.0;
};

}  // namespace flymc
