#pragma once
/// @file band.hpp
/// SBPS's adaptive upper band (Pakman, Gilboa, Carlson & Paninski 2017, §4; docs/math.md §7.3):
/// the noisy observations G_j of the directional derivative w·∇U at times τ_j since the last
/// bounce, with variances s_j², are fitted by the Bayesian linear model G(τ) = β0 + β1·τ + e_j,
/// e_j ~ N(0, s_j²), a flat prior on β0 and a N(0, σ_β²) prior on β1. The band
/// λ̄(τ) = Ĝ(τ) + k·ρ(τ), ρ² = [1 τ] Σ [1 τ]ᵀ + s_last², is k predictive standard deviations above
/// the fit. It is not a bound: SBPS is approximate, and a G above it is a bound violation.
///
/// Thread safety: one object per chain.
#include <cmath>

namespace flymc::pdmp {

class RegressionBand {
 public:
  /// @param k band width in predictive sd (Pakman et al.: 3); @param slope_sd σ_β.
  RegressionBand(double k, double slope_sd) : k_(k), slope_prec_(1.0 / (slope_sd * slope_sd)) {}

  /// Forgets every observation (after a bounce or a velocity refreshment).
  void clear() noexcept {
    s0_ = s1_ = s2_ = r0_ = r1_ = 0.0;
    count_ = 0;
  }
  bool empty() const noexcept { return count_ == 0; }
  int size() const noexcept { return count_; }

  /// Adds the observation G at time tau with variance var (floored, so that an exact
  /// observation, e.g. a batch of all the data, keeps the fit finite).
  void add(double tau, double g, double var) noexcept {
    const double v = std::fmax(var, 1e-12 * (1.0 + g * g));
    const double w = 1.0 / v;
    s0_ += w;
    s1_ += w * tau;
    s2_ += w * tau * tau;
    r0_ += w * g;
    r1_ += w * g * tau;
    last_var_ = v;
    ++count_;
  }

  /// The fitted mean Ĝ(τ) and the band Ĝ(τ) + k·ρ(τ). Needs at least one observation.
  double mean(double tau) const noexcept {
    double b0, b1;
    fit(b0, b1);
    return b0 + b1 * tau;
  }
  double upper(double tau) const noexcept {
    double b0, b1;
    fit(b0, b1);
    // Σ = P⁻¹, P = [[s0, s1], [s1, s2 + 1/σ_β²]].
    const double p11 = s2_ + slope_prec_, det = s0_ * p11 - s1_ * s1_;
    const double var_fit = (p11 - 2.0 * s1_ * tau + s0_ * tau * tau) / det;
    return b0 + b1 * tau + k_ * std::sqrt(std::fmax(var_fit, 0.0) + last_var_);
  }

 private:
  void fit(double& b0, double& b1) const noexcept {
    const double p11 = s2_ + slope_prec_, det = s0_ * p11 - s1_ * s1_;
    b0 = (p11 * r0_ - s1_ * r1_) / det;
    b1 = (s0_ * r1_ - s1_ * r0_) / det;
  }

  double k_, slope_prec_;
  double s0_ = 0.0, s1_ = 0.0, s2_ = 0.0, r0_ = 0.0, r1_ = 0.0, last_var_ = 0.0;
  int count_ = 0;
};

}  // namespace flymc::pdmp
