#pragma once
// Helpers shared by the θ-kernel tests (test_theta_kernels.cpp, test_nuts.cpp): a Gaussian-like
// target with the kernels' contract that records what the kernel adopted, metrics built from a
// covariance, a chain runner that checks the contract after every step, and batch-means checks of
// the moments (the tolerances are explained in test_theta_kernels.cpp's header).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/mcmc/fly/theta_kernels.hpp"
#include "flymc/mcmc/metric.hpp"

namespace flymc::test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// A test target with the kernels' template contract (eval / eval_grad at a proposal, accept()
/// adopts the most recent evaluation): log π(θ) = −½(θ − μ)ᵀP(θ − μ) − c4·Σ_j (θ_j − μ_j)⁴, P = Σ⁻¹
/// (c4 = 0: a Gaussian N(μ, Σ)), optionally NaN / −inf / +inf in half-spaces of θ_0. It records the
/// point it last evaluated and the point the chain last adopted, so that the tests can check that
/// every kernel calls accept() right after evaluating the point it moves to, and only then.
class TestTarget {
 public:
  TestTarget(Vec mu, Mat cov, double c4 = 0.0)
      : mu_(std::move(mu)), cov_(std::move(cov)), prec_(cov_.inverse()), c4_(c4) {
    last_.assign(dim(), 0.0);
    adopted_.assign(dim(), 0.0);
  }
  std::size_t dim() const noexcept { return static_cast<std::size_t>(mu_.size()); }
  const Vec& mean() const noexcept { return mu_; }
  const Mat& cov() const noexcept { return cov_; }

  /// θ_0 > nan_above: NaN; θ_0 < ninf_below: −inf; θ_0 > pinf_above: +inf.
  double nan_above = kInf, ninf_below = -kInf, pinf_above = kInf;

  // Not inlined: one compiled body, so that the kernels' cached values and the tests' own calls
  // agree bit for bit (inlined copies may contract multiply-adds differently).
  [[gnu::noinline]] double log_density(const double* th) const {
    if (th[0] > nan_above) return kNaN;
    if (th[0] < ninf_below) return -kInf;
    if (th[0] > pinf_above) return kInf;
    double q = 0.0, r = 0.0;
    for (std::size_t i = 0; i < dim(); ++i) {
      const double di = th[i] - mu_[ei(i)];
      double s = 0.0;
      for (std::size_t j = 0; j < dim(); ++j) s += prec_(ei(i), ei(j)) * (th[j] - mu_[ei(j)]);
      q += di * s;
      r += di * di * di * di;
    }
    return -0.5 * q - c4_ * r;
  }
  [[gnu::noinline]] void gradient(const double* th, double* g) const {
    for (std::size_t i = 0; i < dim(); ++i) {
      const double di = th[i] - mu_[ei(i)];
      double s = 0.0;
      for (std::size_t j = 0; j < dim(); ++j) s += prec_(ei(i), ei(j)) * (th[j] - mu_[ei(j)]);
      g[i] = -s - 4.0 * c4_ * di * di * di;
    }
  }

  // The kernels' contract.
  double eval(const double* th, Counters& c) {
    ++c.queries;
    std::copy(th, th + dim(), last_.begin());
    return log_density(th);
  }
  double eval_grad(const double* th, double* g, Counters& c) {
    ++c.queries;
    ++c.grad_evals;
    std::copy(th, th + dim(), last_.begin());
    gradient(th, g);
    const double lp = log_density(th);
    if (std::isnan(lp)) std::fill(g, g + dim(), kNaN);
    return lp;
  }
  void accept() {
    adopted_ = last_;
    ++accepts;
  }

  /// The chain starts at θ: θ is "adopted".
  void start(const std::vector<double>& th) { adopted_ = th; }
  const std::vector<double>& adopted() const noexcept { return adopted_; }
  long accepts = 0;

 private:
  static Eigen::Index ei(std::size_t i) { return static_cast<Eigen::Index>(i); }
  Vec mu_;
  Mat cov_, prec_;
  double c4_;
  std::vector<double> last_, adopted_;
};

/// Σ = Q·diag(lambda)·Qᵀ with a fixed pseudo-random rotation Q.
inline Mat rotated_cov(const std::vector<double>& lambda, std::uint64_t seed) {
  const auto p = static_cast<Eigen::Index>(lambda.size());
  Rng rng(seed, 7);
  Mat a(p, p);
  for (Eigen::Index i = 0; i < p; ++i)
    for (Eigen::Index j = 0; j < p; ++j) a(i, j) = rng.normal();
  const Mat q = Eigen::HouseholderQR<Mat>(a).householderQ();
  Vec l(p);
  for (Eigen::Index i = 0; i < p; ++i) l[i] = lambda[static_cast<std::size_t>(i)];
  Mat s = q * l.asDiagonal() * q.transpose();
  return 0.5 * (s + s.transpose());
}

/// The 4-dimensional correlated target of the invariance tests: eigenvalues 0.25 .. 6
/// (condition number 24), correlations up to ≈ 0.8, a mean away from 0.
inline TestTarget corr4() {
  Vec mu(4);
  mu << 1.0, -2.0, 0.5, 3.0;
  return TestTarget(mu, rotated_cov({0.25, 1.0, 2.0, 6.0}, 11));
}

enum class MetricForm { identity, diag, dense };
inline const char* name_of(MetricForm m) {
  return m == MetricForm::identity ? "identity" : m == MetricForm::diag ? "diag" : "dense";
}

/// The metric of form `m` built from covariance `cov` (diag: its diagonal).
inline InverseMetric metric_for(MetricForm m, const Mat& cov) {
  const auto p = static_cast<std::size_t>(cov.rows());
  switch (m) {
    case MetricForm::identity:
      return InverseMetric::identity(p);
    case MetricForm::diag: {
      std::vector<double> v(p);
      for (std::size_t j = 0; j < p; ++j)
        v[j] = cov(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j));
      return InverseMetric::diagonal(std::move(v));
    }
    case MetricForm::dense:
      return InverseMetric::dense(cov);
  }
  return InverseMetric::identity(p);
}

/// M⁻¹ as a matrix, from the metric's own values.
inline Mat inverse_matrix(const InverseMetric& m) {
  const auto p = static_cast<Eigen::Index>(m.dim());
  const std::vector<double> v = m.inverse_values();
  Mat a = Mat::Zero(p, p);
  for (Eigen::Index i = 0; i < p; ++i)
    for (Eigen::Index j = 0; j < p; ++j) {
      if (m.form() == InverseMetric::Form::dense) {
        a(i, j) = v[static_cast<std::size_t>(i * p + j)];
      } else if (i == j) {
        a(i, i) = v[static_cast<std::size_t>(i)];
      }
    }
  return a;
}

/// The target's smallest standard deviation in the metric's units: √λ_min(L⁻¹ΣL⁻ᵀ), M⁻¹ = LLᵀ.
inline double whitened_scale(const Mat& cov, const InverseMetric& m) {
  const Mat l = Eigen::LLT<Mat>(inverse_matrix(m)).matrixL();
  const Mat li = l.inverse();
  const Mat w = li * cov * li.transpose();
  return std::sqrt(Eigen::SelfAdjointEigenSolver<Mat>(0.5 * (w + w.transpose())).eigenvalues()[0]);
}

inline RunConfig kernel_config(KernelKind kind, SliceMode mode, int hmc_steps = 8) {
  RunConfig cfg;
  cfg.kernel = kind;
  cfg.slice_mode = mode;
  cfg.hmc_steps = hmc_steps;
  cfg.adapt_metric = false;
  cfg.warmup = 0;
  return cfg;
}

/// An exact draw from N(μ, Σ).
inline std::vector<double> exact_draw(const TestTarget& t, Rng& rng) {
  const Mat l = Eigen::LLT<Mat>(t.cov()).matrixL();
  Vec z(static_cast<Eigen::Index>(t.dim()));
  for (Eigen::Index j = 0; j < z.size(); ++j) z[j] = rng.normal();
  const Vec x = t.mean() + l * z;
  return {x.data(), x.data() + x.size()};
}

inline ThetaState state_at(const std::vector<double>& th, TestTarget& t) {
  ThetaState s;
  s.theta = th;
  s.grad.assign(th.size(), 0.0);
  t.gradient(th.data(), s.grad.data());
  s.logp = t.log_density(th.data());
  t.start(th);
  return s;
}

/// What a chain produced, and the contract violations seen along it.
struct ChainOut {
  std::vector<double> draws;  // n × p
  Counters cnt;
  double accept = 0.0;
  long bad_adopt = 0;  ///< steps after which the target's adopted point was not the state
  long bad_cache = 0;  ///< steps after which logp (or the gradient) was not that of the state
  long nonfinite_state = 0;
};

inline ChainOut run_chain(ThetaKernel& k, TestTarget& t, Rng& rng, ThetaState& s, long n,
                          bool adapt = false, long warmup = 0) {
  ChainOut out;
  const std::size_t p = t.dim();
  out.draws.reserve(static_cast<std::size_t>(n) * p);
  std::vector<double> g(p);
  for (long it = 0; it < warmup + n; ++it) {
    if (adapt && it == warmup) k.end_warmup();
    const StepInfo info = k.step(rng, s, t, out.cnt);
    if (adapt && it < warmup) k.adapt(it, info, s.theta.data());
    if (it < warmup) continue;
    out.accept += info.accept_stat;
    if (t.adopted() != s.theta) ++out.bad_adopt;
    bool cache_ok = s.logp == t.log_density(s.theta.data());
    if (k.needs_gradient()) {
      t.gradient(s.theta.data(), g.data());
      cache_ok = cache_ok && g == s.grad;
    }
    if (!cache_ok) ++out.bad_cache;
    bool finite = std::isfinite(s.logp);
    for (double v : s.theta) finite = finite && std::isfinite(v);
    if (!finite) ++out.nonfinite_state;
    out.draws.insert(out.draws.end(), s.theta.begin(), s.theta.end());
  }
  out.accept /= static_cast<double>(n);
  return out;
}

/// Batch-means estimate of E f and its standard error (B batches of equal length).
template <class F>
inline std::pair<double, double> batch_mean(const std::vector<double>& draws, std::size_t p, F f,
                                            int batches = 100) {
  const std::size_t n = draws.size() / p, len = n / static_cast<std::size_t>(batches);
  std::vector<double> bm(static_cast<std::size_t>(batches));
  double tot = 0.0;
  for (std::size_t b = 0; b < bm.size(); ++b) {
    double s = 0.0;
    for (std::size_t i = b * len; i < (b + 1) * len; ++i) s += f(&draws[i * p]);
    bm[b] = s / static_cast<double>(len);
    tot += bm[b];
  }
  const double mean = tot / static_cast<double>(batches);
  double v = 0.0;
  for (double x : bm) v += (x - mean) * (x - mean);
  v /= static_cast<double>(batches - 1);
  return {mean, std::sqrt(v / static_cast<double>(batches))};
}

/// Means and covariances of `draws` against the target's within 4.5 batch-means MCSE, with MCSE
/// small enough to matter (see the file comment). Returns the largest se of a mean in units of
/// the coordinate's sd.
inline double check_moments(const std::vector<double>& draws, const Vec& mu, const Mat& cov) {
  const auto p = static_cast<std::size_t>(mu.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < p; ++i) {
    const auto ii = static_cast<Eigen::Index>(i);
    const double sd_i = std::sqrt(cov(ii, ii));
    double m = 0.0, se = 0.0;
    std::tie(m, se) = batch_mean(draws, p, [i](const double* x) { return x[i]; });
    CAPTURE(i);
    CAPTURE(m);
    CAPTURE(se);
    CHECK(std::fabs(m - mu[ii]) < 4.5 * se);
    CHECK(se < 0.04 * sd_i);
    worst = std::max(worst, se / sd_i);
    for (std::size_t j = i; j < p; ++j) {
      const auto jj = static_cast<Eigen::Index>(j);
      const double mi = mu[ii], mj = mu[jj];
      double c = 0.0, se_c = 0.0;
      std::tie(c, se_c) = batch_mean(
          draws, p, [i, j, mi, mj](const double* x) { return (x[i] - mi) * (x[j] - mj); });
      CAPTURE(j);
      CAPTURE(c);
      CAPTURE(se_c);
      CHECK(std::fabs(c - cov(ii, jj)) < 4.5 * se_c);
      CHECK(se_c < 0.08 * sd_i * std::sqrt(cov(jj, jj)));
    }
  }
  return worst;
}

}  // namespace flymc::test
