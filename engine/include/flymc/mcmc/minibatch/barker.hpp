#pragma once
/// @file barker.hpp
/// The minibatch acceptance test of Seita, Pan, Chen & Canny (UAI 2017), docs/math.md §5: Barker's
/// acceptance rule σ(Δ) is the probability that Δ + X_log > 0 for logistic noise X_log, and
/// X_log is split into the normal noise of a batch estimate of Δ plus a correction C_σ, so a
/// batch estimate whose variance is below σ² decides as Barker's rule would (approximately: the
/// batch mean is only normal in the central-limit sense). Approximate; labelled so in the output.
///
/// Thread safety: BarkerCorrection is immutable after construction (standard() is made once,
/// thread-safely); BatchDrawer and the test belong to one chain.
#include <cmath>
#include <cstddef>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

/// The correction distribution C_σ with N(0, σ²) ∗ C_σ ≈ Logistic(0, 1), found once per σ by
/// deconvolution on a grid: C_σ is a mixture of uniform cells of width h centred on
/// y_j ∈ [−20, 20]; its weights solve the ridge-regularized least-squares fit of the convolved
/// CDF to the logistic CDF at points x_i ∈ [−40, 40], then are clipped at 0 and renormalized.
/// The fit uses the exact CDF of N(0, σ²) ∗ (uniform cell), so what sample() draws is what was
/// fitted. Needs σ² < π²/3 (the logistic's variance).
class BarkerCorrection {
 public:
  /// @param sigma the normal part's standard deviation σ (Seita et al.: 1)
  /// @param half_cells cells on each side of 0 (h = 20 / half_cells)
  /// @param ridge the ridge weight λ per unit length of the x grid (scaled by the grid's density,
  ///        so the fit does not change character with the grid's resolution)
  /// @throw ConfigError if σ is not in (0, π/√3) or the grid is empty.
  explicit BarkerCorrection(double sigma = 1.0, int half_cells = 200, double ridge = 0.005);

  /// The correction for σ = 1, made once.
  static const BarkerCorrection& standard();

  double sigma() const noexcept { return sigma_; }
  /// A draw from C_σ by inverse CDF, linear within a cell.
  double sample(Rng& rng) const noexcept;
  /// P(N(0, σ²) + C_σ ≤ x), exactly for the distribution sample() draws.
  double convolved_cdf(double x) const noexcept;
  /// max |convolved_cdf(x) − logistic CDF(x)| over x in [−40, 40] at spacing 0.01.
  double max_cdf_error() const;
  /// The cells' weights (centres −20 + j·h), summing to 1.
  const std::vector<double>& weights() const noexcept { return w_; }
  double cell_width() const noexcept { return h_; }

 private:
  double sigma_, h_;
  std::vector<double> w_, cum_;
};

/// Logistic(0, 1) noise by inversion, log(u) − log(1 − u).
inline double logistic_noise(Rng& rng) noexcept {
  const double u = rng.uniform_pos();
  return std::log(u) - std::log1p(-u);
}

/// Batches of data drawn without replacement and grown in place: a partial Fisher–Yates shuffle
/// of a permutation the chain keeps. Any permutation is a valid start, so a new sample just
/// restarts the prefix, costing O(batch) rather than O(N).
class BatchDrawer {
 public:
  explicit BatchDrawer(std::size_t n);
  /// Starts a new sample (the next extend() draws afresh).
  void restart() noexcept { drawn_ = 0; }
  /// Grows the sample to `b` ≤ N data and returns it: positions [0, b) of the permutation, a
  /// uniform sample without replacement, the first ones those of earlier extends.
  const Index* extend(Rng& rng, std::size_t b) noexcept;
  std::size_t size() const noexcept { return perm_.size(); }

 private:
  std::vector<Index> perm_;
  std::size_t drawn_ = 0;
};

/// What one minibatch acceptance test decided.
struct BarkerOutcome {
  bool accept = false;
  std::size_t batch = 0;  ///< data the test evaluated
  bool exact = false;     ///< decided on all N data by Barker's rule itself
};

/// Welford's running mean and sum of squared deviations of the per-datum log ratios.
struct RunningMoments {
  std::size_t k = 0;
  double mean = 0.0, m2 = 0.0;
  void add(double v) noexcept {
    ++k;
    const double d = v - mean;
    mean += d / static_cast<double>(k);
    m2 += d * (v - mean);
  }
};

/// The acceptance test of one proposal θ → θ' (docs/math.md §5). `log_rest` is
/// log[p(θ')q(θ|θ')/(p(θ)q(θ'|θ))]; `log_ratios(idx, k, out)` writes
/// out[i] = log p(x_idx[i] | θ') − log p(x_idx[i] | θ). Batches start at b0 data and double while
/// the variance s² of the estimate Δ* = N·mean + log_rest is at least σ² (s² includes the
/// finite-population factor 1 − b/N of sampling without replacement, so it vanishes at b = N);
/// on all N data the test is Barker's own rule. With `temper` K > 1 the test is made on Δ/K
/// (the seed slides' g(s) = K·σ(s) variant): its chain targets the tempered posterior
/// p(θ | data)^{1/K}, not the posterior, and its batches are K² times cheaper in variance.
template <class LogRatios>
BarkerOutcome barker_test(Rng& rng, BatchDrawer& drawer, std::size_t b0, double log_rest,
                          const BarkerCorrection& corr, std::vector<double>& buf,
                          LogRatios&& log_ratios, double temper = 1.0) {
  const std::size_t n = drawer.size();
  const double nn = static_cast<double>(n) / temper, s2_max = corr.sigma() * corr.sigma();
  log_rest /= temper;
  drawer.restart();
  RunningMoments m;
  std::size_t b = b0 < n ? b0 : n;
  while (true) {
    const Index* idx = drawer.extend(rng, b);
    const std::size_t fresh = b - m.k;
    buf.resize(fresh);
    log_ratios(idx + m.k, fresh, buf.data());
    for (std::size_t i = 0; i < fresh; ++i) m.add(buf[i]);
    const double delta = nn * m.mean + log_rest;
    if (b == n) return {delta + logistic_noise(rng) > 0.0, b, true};
    const double bb = static_cast<double>(b);
    const double s2 = nn * nn * (m.m2 / (bb - 1.0)) / bb * (1.0 - bb / static_cast<double>(n));
    if (s2 < s2_max) {
      const double x = delta + std::sqrt(s2_max - s2) * rng.normal() + corr.sample(rng);
      return {x > 0.0, b, false};
    }
    b = 2 * b < n ? 2 * b : n;
  }
}

}  // namespace flymc
