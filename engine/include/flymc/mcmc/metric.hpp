#pragma once
/// @file metric.hpp
/// The θ-kernels' metric and its warm-up estimation.
///
/// A Metric is an inverse metric M⁻¹ (Stan's "inverse mass matrix"): the identity, a diagonal or
/// a dense covariance, with a factor L, LLᵀ = M⁻¹ (the diagonal's square roots, or the Cholesky
/// factor). RW-MH proposes θ + ε·L·η, MALA drifts by (ε²/2)·M⁻¹∇ and adds ε·L·η, HMC draws
/// momenta p ~ N(0, M) and moves θ by ε·M⁻¹p, slice sampling walks along L·η/|η| or along the
/// coordinate axes scaled by the diagonal.
///
/// MetricAdaptation re-estimates a diagonal or dense metric from warm-up draws in Stan's windows
/// (Stan's `windowed_adaptation`, `welford_var_estimator` / `welford_covar_estimator`): a fast
/// initial buffer (75 iterations, or 15% of a short warm-up), slow windows that double from 25
/// (10%-rule for short warm-ups), and a fast terminal buffer (50, or 10%). At the end of each slow
/// window the metric becomes the window's sample (co)variance shrunk toward 1e-3·I as Stan does,
/// (n/(n+5))·Σ + 1e-3·(5/(n+5))·I, and the step-size adaptation restarts.
///
/// Thread safety: none; each chain owns its metric and adaptation.
#include <cstddef>
#include <span>
#include <vector>

#include "flymc/models/model.hpp"

namespace flymc {

class InverseMetric {
 public:
  enum class Form { identity, diag, dense };
  InverseMetric() = default;
  static InverseMetric identity(std::size_t p);
  /// M⁻¹ = diag(var); every entry must be > 0.
  static InverseMetric diagonal(std::vector<double> var);
  /// M⁻¹ = cov (symmetric positive definite).
  /// @throw ConfigError if cov is not positive definite.
  static InverseMetric dense(const Mat& cov);

  Form form() const noexcept { return form_; }
  std::size_t dim() const noexcept { return p_; }

  /// out = L·η.
  void mul_sqrt(const double* eta, double* out) const noexcept;
  /// out = L⁻¹·v (whitening).
  void solve_sqrt(const double* v, double* out) const noexcept;
  /// out = M⁻¹·v.
  void mul_inv(const double* v, double* out) const noexcept;
  /// out = L⁻ᵀ·η: a momentum p ~ N(0, M) when η ~ N(0, I).
  void momentum(const double* eta, double* out) const noexcept;
  /// √(M⁻¹)_jj, the metric's scale along coordinate j.
  double scale(std::size_t j) const noexcept;
  /// diag(M⁻¹), or all of M⁻¹ row by row when dense (for the draw files' adaptation block).
  std::vector<double> inverse_values() const;

  /// Appends the metric to `out` / reads it back from `in` at `pos` (checkpoints).
  void save(std::vector<double>& out) const;
  /// @throw ConfigError if the values do not form a valid metric.
  static InverseMetric load(std::span<const double> in, std::size_t& pos);

 private:
  Form form_ = Form::identity;
  std::size_t p_ = 0;
  std::vector<double> var_, sd_;  // diag
  Mat cov_, chol_;                // dense: M⁻¹ and its lower Cholesky factor
};

/// Stan's windowed metric adaptation (see the file comment) over `warmup` iterations.
class MetricAdaptation {
 public:
  MetricAdaptation() = default;
  /// `form` diag or dense: adapt; identity: never adapts.
  MetricAdaptation(InverseMetric::Form form, std::size_t p, long warmup);

  /// Adds the draw of warm-up iteration `it` (0-based) when it falls in a slow window. Returns
  /// true when `it` ends a slow window: `metric` has then been replaced by the window's estimate.
  bool add(long it, const double* theta, InverseMetric& metric);
  bool active() const noexcept {
    return form_ != InverseMetric::Form::identity && !windows_.empty();
  }

  void save(std::vector<double>& out) const;
  /// @throw ConfigError on values that do not fit (a foreign or corrupted state).
  void load(std::span<const double> in, std::size_t& pos);

 private:
  InverseMetric::Form form_ = InverseMetric::Form::identity;
  std::size_t p_ = 0;
  std::vector<long> windows_;  // slow-window boundaries: [w0, w1), [w1, w2), ...
  long n_ = 0;                 // draws in the current window
  std::vector<double> mean_, m2_;
};

}  // namespace flymc
