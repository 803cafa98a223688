#include "flymc/models/robust.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <string>

#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "model_checks.hpp"

namespace flymc {
namespace {

/// Rows per block of every data pass: the block's predictors come from one dots_packed, the
/// element functions run vectorized over the block, and the weighted row sum and the scaled
/// copies for SYRK read its rows again while they are in L2.
constexpr std::size_t kBlock = 256;

/// |x| = |r|/√c beyond which x² is not formed in log1p(r²/c) = log1p(x²): there log1p(x²) =
/// 2·log|x| to double precision (the terms dropped are below 2^-500 relative), and x² would
/// overflow past 2^512.
constexpr double kBigScaled = 0x1p500;

/// log1p(r²/c) for one residual, finite for every finite r. Beyond |x| = kBigScaled it is
/// 2·(log1p(|r|) + log(1/√c)): |r| > 2^250 there (c ≥ 1e-150), so log1p(|r|) = log|r|, and x
/// itself is never needed (|r|/√c overflows near the double limit when c < 1).
double log1p_r2c(const StudentT& st, double r) noexcept {
  const double x = r * st.inv_sqrt_c;
  return std::fabs(x) > kBigScaled ? 2.0 * (kernels::log1p(std::fabs(r)) + st.log_inv_sqrt_c)
                                   : kernels::log1p(x * x);
}

/// out[i] = log1p(r[i]²/c), i < m ≤ kBlock: one vectorized log1p, bit-identical to the above.
void log1p_r2c(const StudentT& st, const double* r, double* out, std::size_t m) noexcept {
  alignas(64) double arg[kBlock];
  for (std::size_t i = 0; i < m; ++i) {
    const double x = r[i] * st.inv_sqrt_c;
    arg[i] = std::fabs(x) > kBigScaled ? std::fabs(r[i]) : x * x;
  }
  kernels::log1p(arg, out, m);
  for (std::size_t i = 0; i < m; ++i)
    if (std::fabs(r[i] * st.inv_sqrt_c) > kBigScaled) out[i] = 2.0 * (out[i] + st.log_inv_sqrt_c);
}

/// A padded, aligned copy of dense θ for the row kernels.
AlignedBuffer padded(const double* theta, std::size_t d, std::size_t stride) {
  AlignedBuffer p = aligned_zeros(stride);
  std::copy(theta, theta + d, p.get());
  return p;
}

void symmetrize_upper(Mat& h) { h.triangularView<Eigen::StrictlyLower>() = h.transpose(); }

/// Sums over the data of one pass: a scalar, a gradient-like vector and up to two weighted
/// outer-product sums.
struct Stats {
  double f = 0.0;
  std::vector<double> g;  // Σ gc_n x_n, stride entries; empty only in the reduction's init value
  Mat h[2];               // Σ hw_k(n) x_n x_nᵀ (upper triangles)

  // As doubles for the processes of a sharded data set (row_fold.hpp).
  static constexpr const char* kWhat = "robust regression";
  void pack(PackedSums& p) const { p.scalar(f).array(g).matrix(h[0]).matrix(h[1]); }
  static Stats unpack(SumsReader& r) {
    Stats s;
    s.f = r.scalar();
    s.g = r.array();
    for (Mat& m : s.h) m = r.matrix<Mat>();
    return s;
  }
};

/// Per-row outputs a block functor fills: gradient coefficients (null when not wanted) and
/// Hessian weights of either sign.
struct BlockOut {
  double* gc;
  double* hw[2];
};

/// One deterministic parallel pass over the data at padded θ (over the whole data set if `ds`
/// is a shard: the fold goes on across its processes). For each block of rows
/// [n0, n0 + m) the functor fn(n0, m, psi, out) sees the predictors psi[i] = x_{n0+i}·θ, returns
/// the block's share of Stats::f and fills out.gc (if want_grad) and out.hw[k] (k < nh).
/// Outer products are summed by SYRK on rows scaled by √|w|, rows of negative weight apart:
/// the exact Hessian of the Student-t log-likelihood has both signs.
template <class Fn>
Stats data_stats(const Dataset& ds, const double* theta_p, bool want_grad, int nh, Fn&& fn) {
  const std::size_t d = ds.d(), stride = ds.stride();
  const auto dd = static_cast<Eigen::Index>(d);
  return fold_sums(
      ds, Stats(),
      [&](std::size_t lo, std::size_t hi) {
        Stats p;
        p.g.assign(stride, 0.0);
        Mat neg[2];
        for (int k = 0; k < nh; ++k) p.h[k] = Mat::Zero(dd, dd);
        AlignedBuffer pos_rows, neg_rows;
        if (nh > 0) {
          pos_rows = aligned_zeros(kBlock * stride);
          neg_rows = aligned_zeros(kBlock * stride);
        }
        alignas(64) double psi[kBlock], gc[kBlock], hw0[kBlock], hw1[kBlock];
        BlockOut out{want_grad ? gc : nullptr, {hw0, hw1}};
        for (std::size_t b0 = lo; b0 < hi; b0 += kBlock) {
          const std::size_t m = std::min(kBlock, hi - b0);
          ds.dots(b0, b0 + m, theta_p, psi);
          p.f += fn(b0, m, static_cast<const double*>(psi), out);
          if (want_grad) ds.weighted_row_sum(b0, b0 + m, gc, 1, p.g.data());
          for (int k = 0; k < nh; ++k) {
            std::size_t np = 0, nn = 0;
            for (std::size_t i = 0; i < m; ++i) {
              const double w = out.hw[k][i];
              if (w == 0.0) continue;
              double* dst =
                  w < 0.0 ? neg_rows.get() + nn++ * stride : pos_rows.get() + np++ * stride;
              const double sw = std::sqrt(std::fabs(w));  // NaN stays NaN
              ds.copy_row(b0 + i, dst);
              for (std::size_t j = 0; j < d; ++j) dst[j] *= sw;
            }
            blas::syrk_accumulate(pos_rows.get(), np, d, stride, p.h[k].data());
            if (nn > 0) {
              if (neg[k].size() == 0) neg[k] = Mat::Zero(dd, dd);
              blas::syrk_accumulate(neg_rows.get(), nn, d, stride, neg[k].data());
            }
          }
        }
        for (int k = 0; k < nh; ++k)
          if (neg[k].size() != 0) p.h[k] -= neg[k];
        return p;
      },
      [nh](Stats acc, Stats p) {
        if (acc.g.empty()) return p;
        acc.f += p.f;
        for (std::size_t j = 0; j < acc.g.size(); ++j) acc.g[j] += p.g[j];
        for (int k = 0; k < nh; ++k) acc.h[k] += p.h[k];
        return acc;
      });
}

/// Largest response magnitude accepted, as for features (detail::kMaxFeature): the collapsed
/// statistics and the Hessians sum w·r² over up to 2^32 rows, which must stay finite.
constexpr double kMaxResponse = detail::kMaxFeature;

/// Throws DataError naming the first row whose response is not finite or exceeds kMaxResponse,
/// then checks the features (detail::check_features). Loaded files never hold non-finite values,
/// but data sets built in memory may.
void check_data(const Dataset& ds) {
  // The first bad row of the whole data set (its file's row: on a shard every process names
  // the same one).
  struct Bad {
    double row = -1.0, value = 0.0;  // row: the whole data set's index; -1: none
  };
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;
  const auto y = ds.y();
  const Bad bad = fold_rows(
      ds, Bad{},
      [&](std::size_t lo, std::size_t hi) {
        for (std::size_t i = lo; i < hi; ++i)
          if (!(std::fabs(y[i]) <= kMaxResponse)) return Bad{double(first + i), y[i]};
        return Bad{};
      },
      [](Bad a, Bad b) { return a.row >= 0.0 ? a : b; },
      [](Bad b) {
        return std::vector<double>{b.row, b.value};
      },
      [](const std::vector<double>& v) {
        return Bad{v.at(0), v.at(1)};
      });
  if (bad.row >= 0.0)
    throw DataError(ds.source() + ": row " + std::to_string(std::size_t(bad.row) + 1) +
                    ": field 1 (response): " + number_text(bad.value) +
                    " is not finite or exceeds 1e100 in magnitude; robust regression needs sums "
                    "of w*r^2 that fit a double (rescale the response)");
  detail::check_features(ds, "robust regression");
}

/// The data pass of the MAP search at padded θ: Stats::f = Σ_n log1p(r_n²/c), gradient of
/// log L, and the requested curvatures of −log L in ψ per datum:
///   exact: −∂²log L_n/∂ψ² = 2a(c − r²)/(c + r²)² = (2a/c)·ρ(2ρ − 1), ρ = c/(c + r²) ∈ [0, 1]
///          (negative beyond |r| = √c: the likelihood is not log-concave);
///   mm:    2w_n = 2a/(c + r²) = (2a/c)·ρ, the tangent bound's curvature (docs/math.md §2.3), ≥
///   exact.
/// With x = r/√c: ρ = 1/(1 + x²) and ∂log L/∂ψ = 2a·r/(c + r²) = (2a/√c)/(x + 1/x), forms in
/// which x = 0 and x = ±inf give 0, never NaN.
Stats curvature_stats(const Dataset& ds, const StudentT& st, const double* theta_p, bool grad,
                      bool exact, bool mm) {
  const auto y = ds.y();
  const double isc = st.inv_sqrt_c, k1 = 2.0 * st.a * isc, k2 = 2.0 * st.a / st.c;
  const int nh = int(exact) + int(mm);
  return data_stats(ds, theta_p, grad, nh,
                    [&](std::size_t n0, std::size_t m, const double* psi, BlockOut& o) {
                      alignas(64) double rs[kBlock], l[kBlock];
                      for (std::size_t i = 0; i < m; ++i) rs[i] = y[n0 + i] - psi[i];
                      log1p_r2c(st, rs, l, m);
                      double s = 0.0;
                      for (std::size_t i = 0; i < m; ++i) {
                        s += l[i];
                        const double x = rs[i] * isc, rho = 1.0 / (1.0 + x * x);
                        if (o.gc != nullptr) o.gc[i] = k1 / (x + 1.0 / x);
                        if (exact) o.hw[0][i] = k2 * rho * (2.0 * rho - 1.0);
                        if (mm) o.hw[exact ? 1 : 0][i] = k2 * rho;
                      }
                      return s;
                    });
}

/// The series P(z) = Σ_{k≥1} 2z^k/(2k+1), z = s², s = t/(2+t): log1p(t) = 2 atanh(s) =
/// 2s + s·P(s²), and t − 2s = t·s, so t − log1p(t) = s·(t − P(s²)) without cancellation (P ≈ 2s²/3
/// is small beside t ≈ 2s). 16 terms: for |s| ≤ 1/3 the first one dropped is below 2^-54 relative.
constexpr int kSeriesTerms = 16;
constexpr double kSeriesMaxS = 1.0 / 3.0;  // t ∈ [−1/2, 1]
constexpr std::array<double, kSeriesTerms> kSeriesCoef = [] {
  std::array<double, kSeriesTerms> c{};
  for (int k = 1; k <= kSeriesTerms; ++k) c[k - 1] = 2.0 / (2.0 * k + 1.0);
  return c;
}();
inline double series_p(double z) noexcept {
  double p = kSeriesCoef[kSeriesTerms - 1];
  for (int k = kSeriesTerms - 2; k >= 0; --k) p = p * z + kSeriesCoef[k];
  return p * z;
}

}  // namespace

// ----------------------------------------------------------------------------------------------
StudentT::StudentT(double dof, double s) : nu(dof), scale(s) {
  if (!(nu > 0.0) || !std::isfinite(nu))
    throw ConfigError("--nu must be finite and > 0, got " + number_text(nu));
  if (!(scale > 0.0) || !std::isfinite(scale))
    throw ConfigError("--noise-scale must be finite and > 0, got " + number_text(scale));
  a = 0.5 * (nu + 1.0);
  c = nu * scale * scale;
  if (!(c >= 1e-150 && c <= 1e150))
    throw ConfigError("--nu times --noise-scale^2 must be in [1e-150, 1e150], got " +
                      number_text(c));
  inv_sqrt_c = 1.0 / std::sqrt(c);
  log_inv_sqrt_c = -0.5 * std::log(c);
  log_norm = std::lgamma(a) - std::lgamma(0.5 * nu) - 0.5 * std::log(std::numbers::pi * c);
}

double StudentT::log_lik(double r) const noexcept { return log_norm - a * log1p_r2c(*this, r); }

// ----------------------------------------------------------------------------------------------
RobustModel::RobustModel(std::shared_ptr<const Dataset> data, Prior prior, double nu, double scale)
    : OnePredictorModel(std::move(data), prior),
      t_(nu, scale),
      family_(std::make_shared<const StudentTFamily>(t_)) {
  if (!data_ || data_->total_n() == 0 || data_->d() == 0)  // a shard's part may be empty
    throw DataError("robust regression needs at least one row and one feature");
  if (!(prior.sd >= 1e-150 && prior.sd <= 1e150))
    throw ConfigError("--prior-sd must be in [1e-150, 1e150], got " + number_text(prior.sd));
  check_data(*data_);
  blas::use_single_thread();
}

double RobustModel::log_lik(const double* theta) const {
  const Dataset& ds = *data_;
  const auto y = ds.y();
  // Σ log1p(r²/c) per chunk, then N·C − a·Σ: one multiplication for the whole sum (over the
  // whole data set if `ds` is a shard).
  const double sum = sum_rows(ds, [&](std::size_t lo, std::size_t hi) {
    alignas(64) double rs[kBlock], l[kBlock];
    double s = 0.0;
    for (std::size_t b0 = lo; b0 < hi; b0 += kBlock) {
      const std::size_t m = std::min(kBlock, hi - b0);
      ds.dots(b0, b0 + m, theta, rs);
      for (std::size_t i = 0; i < m; ++i) rs[i] = y[b0 + i] - rs[i];
      log1p_r2c(t_, rs, l, m);
      for (std::size_t i = 0; i < m; ++i) s += l[i];
    }
    return s;
  });
  return static_cast<double>(ds.total_n()) * t_.log_norm - t_.a * sum;
}

double RobustModel::log_lik_grad(const double* theta, double* grad) const {
  const Stats s = curvature_stats(*data_, t_, theta, true, false, false);
  std::copy(s.g.begin(), s.g.end(), grad);
  return static_cast<double>(data_->total_n()) * t_.log_norm - t_.a * s.f;
}

Vec RobustModel::grad_log_post(const Vec& theta) const {
  AlignedBuffer tp = padded(theta.data(), dim(), stride());
  AlignedBuffer gp = aligned_zeros(stride());
  log_lik_grad(tp.get(), gp.get());
  Vec g = Eigen::Map<const Vec>(gp.get(), static_cast<Eigen::Index>(dim()));
  prior_.add_gradient(theta.data(), dim(), g.data());
  return g;
}

MapResult RobustModel::find_map(double tol, int max_iter) const {
  const auto t0 = Clock::now();
  const auto d = static_cast<Eigen::Index>(dim());
  Ascent a;
  a.theta = Vec::Zero(d);
  const Prior smooth = prior_.gaussian_stand_in();
  a = climb(smooth, std::move(a), tol, max_iter);
  if (!(smooth == prior_)) a = climb(prior_, std::move(a), tol, max_iter);

  // Laplace covariance: −∇² log L from the search's last pass (taken at most one converged
  // Newton step, ≤ 1e-3 posterior sd, before the final θ), plus the prior's precision.
  AlignedBuffer tp = padded(a.theta.data(), dim(), stride());
  if (a.lik_curv.size() == 0) {
    a.lik_curv = curvature_stats(*data_, t_, tp.get(), false, true, false).h[0];
    symmetrize_upper(a.lik_curv);
  }
  Mat h = a.lik_curv;
  add_prior_precision(prior_, h);
  Eigen::LLT<Mat> llt(h);
  if (llt.info() != Eigen::Success) {
    // At a mode −∇² log p is positive semi-definite, and positive definite once the prior's
    // precision is added; this fails only where the search stopped short of a mode (max_iter)
    // or rounding breaks a near-singular case. The MM curvature Σ 2w_n x_n x_nᵀ is positive
    // semi-definite everywhere and bounds −∇² log L from above: a narrower, still proper,
    // Laplace approximation.
    h = curvature_stats(*data_, t_, tp.get(), false, false, true).h[0];
    symmetrize_upper(h);
    add_prior_precision(prior_, h);
    llt.compute(h);
  }
  detail::check_laplace_precision(prior_, llt, "robust regression");
  MapResult r;
  r.theta = a.theta;
  r.covariance = llt.solve(Mat::Identity(d, d));
  r.log_post = a.f;
  r.iterations = a.iterations;
  r.seconds = seconds_between(t0, Clock::now());
  return r;
}

/// One stage of the MAP search (one prior): Newton steps with the exact likelihood Hessian where
/// they work, MM steps on the tangent bound's quadratic minorizer where they do not.
class RobustModel::Climber {
 public:
  Climber(const RobustModel& model, const Prior& prior, Ascent& a, double tol)
      : m_(model),
        prior_(prior),
        a_(a),
        tol_(tol),
        d_(static_cast<Eigen::Index>(model.dim())),
        tp_(aligned_zeros(model.stride())),
        laplace_(!prior.curvature_exact()) {}

  void run(int max_iter) {
    a_.f = objective(a_.theta);
    // With a curvature from (nearly) this θ at hand (the Gaussian stage's last pass), a gradient
    // pass suffices for the first step. From a far start (θ = 0), residuals are large and the
    // exact Hessian indefinite: the first pass sums the MM curvature alone.
    bool reuse = a_.lik_curv.size() != 0;
    const bool far_start = !reuse;
    for (int it = 0; it < max_iter; ++it) {
      ++a_.iterations;
      Mat mm_curv;
      Vec g = gradient_pass(reuse, far_start && it == 0, mm_curv);
      reuse = false;
      // The prior's curvature in the Newton steps: a Gaussian's 1/sd²; a Laplace log density is
      // linear away from 0, so first its exact curvature 0 (quadratic convergence once the
      // signs have settled), then, where that step fails (a coordinate crossing or near 0), the
      // curvature of its quadratic majorizer (Prior::map_curvature), which the MM step uses too.
      Vec curv(d_);
      for (Eigen::Index j = 0; j < d_; ++j)
        curv[j] = prior_.map_curvature(static_cast<std::size_t>(j), a_.theta[j]);
      const Step newton = newton_step(g, curv);
      if (newton == Step::converged) break;
      if (newton == Step::moved) {
        a_.lik_curv.resize(0, 0);  // taken at the previous θ
        continue;
      }
      if (mm_step(g, curv, mm_curv) != Step::moved) break;
      a_.lik_curv.resize(0, 0);
    }
  }

 private:
  enum class Step { moved, converged, failed };

  void load(const Vec& th) { std::copy(th.data(), th.data() + d_, tp_.get()); }
  double objective(const Vec& th) {
    load(th);
    return m_.log_lik(tp_.get()) + prior_.log_density(th.data(), m_.dim());
  }

  /// ∇ log p at θ; a data pass also stores −∇² log L in a.lik_curv, or, on the first pass from a
  /// far start, the MM curvature in `mm_curv`. `reuse`: a.lik_curv is current, the gradient
  /// alone is needed.
  Vec gradient_pass(bool reuse, bool mm_first, Mat& mm_curv) {
    load(a_.theta);
    Vec g(d_);
    if (reuse) {
      AlignedBuffer gp = aligned_zeros(m_.stride());
      m_.log_lik_grad(tp_.get(), gp.get());
      g = Eigen::Map<const Vec>(gp.get(), d_);
    } else {
      Stats s = curvature_stats(*m_.data_, m_.t_, tp_.get(), true, !mm_first, mm_first);
      g = Eigen::Map<const Vec>(s.g.data(), d_);
      symmetrize_upper(s.h[0]);
      (mm_first ? mm_curv : a_.lik_curv) = std::move(s.h[0]);
    }
    prior_.add_gradient(a_.theta.data(), m_.dim(), g.data());
    return g;
  }

  /// Backtracking (Armijo, 1/4 of the predicted increase) along `step`, halving down to t_min;
  /// moves θ and returns true on success.
  bool line_search(const Vec& step, double decrement, double t_min) {
    double t = 1.0;
    double f_new = objective(a_.theta + step);
    while (!(f_new >= a_.f + 0.25 * t * decrement) && t > t_min) {
      t *= 0.5;
      f_new = objective(a_.theta + t * step);
    }
    if (!(f_new >= a_.f + 0.25 * t * decrement)) return false;
    a_.theta += t * step;
    a_.f = f_new;
    return true;
  }

  /// Convergence: the Newton decrement below tol, or below what the objective's rounding can
  /// resolve (a sum of N terms), where a line search only sees noise.
  bool converged(double decrement) const {
    return !(decrement > 2.0 * std::max(tol_, 1e-14 * (1.0 + std::fabs(a_.f))));
  }

  /// The step left at convergence is taken without a line search (its θ error is second
  /// order), unless rounding says it lowers the objective.
  void final_step(const Vec& step) {
    const double f_last = objective(a_.theta + step);
    if (f_last >= a_.f - 1e-12 * (1.0 + std::fabs(a_.f))) {
      a_.theta += step;
      a_.f = f_last;
    }
  }

  /// Newton with the exact likelihood Hessian, where −∇² (plus the prior's curvature) is
  /// positive definite (near a mode, so the last iterations converge quadratically): first with
  /// the prior's exact curvature, then, for a Laplace prior, its majorizer's.
  Step newton_step(const Vec& g, const Vec& curv) {
    if (a_.lik_curv.size() == 0) return Step::failed;
    const Vec exact_curv = laplace_ ? Vec::Zero(d_) : Vec(curv);
    for (const Vec* c : {&exact_curv, &curv}) {
      if (c == &curv && !laplace_) break;
      Mat neg_hess = a_.lik_curv;
      neg_hess.diagonal() += *c;
      const Eigen::LLT<Mat> llt(neg_hess);
      if (llt.info() != Eigen::Success) continue;
      const Vec step = llt.solve(g);
      const double decrement = g.dot(step);  // Newton decrement squared
      if (!(decrement >= 0.0 && std::isfinite(decrement))) continue;
      if (converged(decrement)) {
        final_step(step);
        return Step::converged;
      }
      if (line_search(step, decrement, 1.0 / 16.0)) return Step::moved;
    }
    return Step::failed;
  }

  /// MM step: Newton on the tangent bound's quadratic minorizer, Σ 2w_n x_n x_nᵀ + prior
  /// curvature, positive definite. Its full step raises the objective by at least half the
  /// decrement, so the line search only guards against rounding.
  Step mm_step(const Vec& g, const Vec& curv, Mat& mm_curv) {
    if (mm_curv.size() == 0) {
      load(a_.theta);  // a failed Newton line search left its last trial point in tp_
      mm_curv = curvature_stats(*m_.data_, m_.t_, tp_.get(), false, false, true).h[0];
      symmetrize_upper(mm_curv);
    }
    mm_curv.diagonal() += curv;
    const Eigen::LLT<Mat> mm(mm_curv);
    const Vec step = mm.solve(g);
    const double decrement = g.dot(step);
    if (mm.info() != Eigen::Success || converged(decrement)) return Step::converged;
    return line_search(step, decrement, 1e-12) ? Step::moved : Step::failed;
  }

  const RobustModel& m_;
  const Prior& prior_;
  Ascent& a_;
  const double tol_;
  const Eigen::Index d_;
  AlignedBuffer tp_;  // θ padded for the kernels: the last point evaluated
  const bool laplace_;
};

RobustModel::Ascent RobustModel::climb(const Prior& prior, Ascent a, double tol,
                                       int max_iter) const {
  Climber(*this, prior, a, tol).run(max_iter);
  return a;
}

// ----------------------------------------------------------------------------------------------
RobustBound RobustBound::make(const RobustModel& model, const RunConfig& cfg,
                              const MapResult& map) {
  return cfg.bound == BoundTuning::map
             ? map_tuned(model, map.theta, bound_slack_of(cfg))
             : untuned(model, cfg.untuned_xi, map.theta, bound_slack_of(cfg));
}

RobustBound RobustBound::untuned(const RobustModel& model, double xi, const Vec& anchor,
                                 double slack) {
  if (!(xi >= 0.0 && xi <= kMaxResponse))
    throw ConfigError("--untuned-xi must be in [0, 1e100] for robust regression, got " +
                      number_text(xi));
  return RobustBound(model, std::vector<double>(model.num_data(), xi), anchor, slack);
}

RobustBound RobustBound::map_tuned(const RobustModel& model, const Vec& theta_map, double slack) {
  const Dataset& ds = model.data();
  if (static_cast<std::size_t>(theta_map.size()) != ds.d())
    throw ConfigError("bound anchor has the wrong dimension");
  AlignedBuffer tp = padded(theta_map.data(), ds.d(), ds.stride());
  std::vector<double> xi(ds.n());
  const auto y = ds.y();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, ds.n(), kReduceGrain),
                    [&](const tbb::blocked_range<std::size_t>& rg) {
                      const std::size_t m = rg.size();
                      ds.dots(rg.begin(), rg.begin() + m, tp.get(), xi.data() + rg.begin());
                      for (std::size_t n = rg.begin(); n < rg.end(); ++n)
                        xi[n] = std::fabs(y[n] - xi[n]);
                    });
  return RobustBound(model, std::move(xi), theta_map, slack);
}

RobustBound::RobustBound(const RobustModel& model, std::vector<double> xi, const Vec& anchor,
                         double slack)
    : data_(model.data_ptr()),
      t_(model.student()),
      xi_(std::move(xi)),
      slack_(slack),
      offset_(slack) {
  const auto t0 = Clock::now();
  if (!(slack >= 0.0) || !std::isfinite(slack))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + number_text(slack));
  const Dataset& ds = *data_;
  if (static_cast<std::size_t>(anchor.size()) != ds.d())
    throw ConfigError("bound anchor has the wrong dimension");
  agree_on_parts(ds, [&] {  // on a shard every process throws, or none
    for (double x : xi_)
      if (!(x <= 1e150))  // ξ² must be finite; |r| this large needs a non-finite θ_MAP
        throw Error("robust bound: tangent point " + number_text(x) +
                    " is not finite or exceeds 1e150");
  });
  const auto y = ds.y();
  const double a = t_.a, c = t_.c;
  AlignedBuffer tp = padded(anchor.data(), ds.d(), ds.stride());
  // One pass at θ0: Σ_n [−a·log1p(ξ²/c) − w(r0² − ξ²)] (the constants C − ε added after),
  // g0 = Σ 2w r0 x, A = Σ w x xᵀ.
  const Stats s = data_stats(
      ds, tp.get(), true, 1, [&](std::size_t n0, std::size_t m, const double* psi, BlockOut& o) {
        alignas(64) double l[kBlock];
        log1p_r2c(t_, xi_.data() + n0, l, m);
        double sum = 0.0;
        for (std::size_t i = 0; i < m; ++i) {
          const double r = y[n0 + i] - psi[i], xi_n = xi_[n0 + i], ar = std::fabs(r);
          const double w = a / (c + xi_n * xi_n);
          sum += -a * (l[i] + ((ar - xi_n) / (c + xi_n * xi_n)) * (ar + xi_n));
          o.gc[i] = 2.0 * w * r;
          o.hw[0][i] = w;
        }
        return sum;
      });
  Mat quad = s.h[0];
  symmetrize_upper(quad);
  sum_ = CollapsedQuadratic(static_cast<double>(ds.total_n()) * (t_.log_norm - slack) + s.f,
                            Eigen::Map<const Vec>(s.g.data(), static_cast<Eigen::Index>(ds.d())),
                            std::move(quad), anchor, ds.stride());
  share_records();
  seconds_ = seconds_between(t0, Clock::now());
}

void RobustBound::share_records() {
  const RowShard* s = data_->shard();
  if (s == nullptr || s->link->parts() <= 1) return;
  const std::size_t n = data_->n();
  std::vector<double> mine(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    mine[2 * i] = data_->y()[i];
    mine[2 * i + 1] = xi_[i];
  }
  const std::vector<double> all = s->link->gather_in_order(mine);
  if (all.size() != 2 * s->total_rows)
    throw Error(data_->source() + ": the shards' bound records do not add up to the data set");
  y_all_.resize(s->total_rows);
  xi_.resize(s->total_rows);
  for (std::size_t i = 0; i < s->total_rows; ++i) {
    y_all_[i] = all[2 * i];
    xi_[i] = all[2 * i + 1];
  }
}

double RobustBound::log_bound_sum(const double* theta, double* scratch,
                                  double* grad) const noexcept {
  return sum_.evaluate(theta, scratch, grad);
}

BoundCheck RobustBound::deltas(const Index* idx, const double* psi, std::size_t k,
                               double* delta) const noexcept {
  const double* y = ys();
  const double a = t_.a, c = t_.c;
  BoundCheck check;
  alignas(64) double tt[kBlock], ss[kBlock], qq[kBlock], lq[kBlock];
  for (std::size_t b0 = 0; b0 < k; b0 += kBlock) {
    const std::size_t m = std::min(kBlock, k - b0);
    double* dl = delta + b0;
    // t = (r² − ξ²)/(c + ξ²) as ((|r| − ξ)/(c + ξ²))·(|r| + ξ): no cancellation where r ≈ ξ,
    // and no overflow before t itself overflows. q = 1 + t: for t < 0 formed directly as
    // (c + r²)/(c + ξ²), accurate where t → −1 (1 + t would have lost all its digits there).
    // (The gathers of y_n and ξ_n first, in a loop of their own: the arithmetic then
    // vectorizes, divisions included, where GCC will not vectorize the gathers.)
    for (std::size_t i = 0; i < m; ++i) {
      const Index n = idx[b0 + i];
      tt[i] = y[n] - psi[b0 + i];
      ss[i] = xi_[n];
    }
    for (std::size_t i = 0; i < m; ++i) {
      const double r = tt[i], ar = std::fabs(r), xi = ss[i];
      const double den = c + xi * xi;
      const double t = ((ar - xi) / den) * (ar + xi);
      const double q_direct = (c + r * r) / den;  // both formed: the loop stays branch-free
      tt[i] = t;
      ss[i] = t / (2.0 + t);
      qq[i] = t < 0.0 ? q_direct : 1.0 + t;
    }
    // Branch-free passes (vectorized): the series inside its range; outside (t < −1/2 or
    // t > 1), t − log1p(t) = (q − 1) − log q, without cancellation there (it is ≥ 0.19).
    std::size_t far = 0;
    for (std::size_t i = 0; i < m; ++i) far += !(std::fabs(ss[i]) <= kSeriesMaxS);
    if (far != 0) {
      kernels::log(qq, lq, m);
      for (std::size_t i = 0; i < m; ++i) {
        const double s = ss[i];
        const double g =
            std::fabs(s) <= kSeriesMaxS ? s * (tt[i] - series_p(s * s)) : (qq[i] - 1.0) - lq[i];
        dl[i] = a * g + offset_;
      }
    } else {
      for (std::size_t i = 0; i < m; ++i) {
        const double s = ss[i];
        dl[i] = a * (s * (tt[i] - series_p(s * s))) + offset_;
      }
    }
    // Off the hot path: t overflowed (q = +inf, Δ NaN above), or Δ < 0, which needs a raised
    // bound (a·g ≥ 0 by construction, offset_ < 0): within the rounding of the final sum a
    // clamp, beyond a violation (NaN too).
    for (std::size_t i = 0; i < m; ++i) {
      if (dl[i] >= 0.0 && qq[i] != std::numeric_limits<double>::infinity()) continue;
      if (qq[i] == std::numeric_limits<double>::infinity()) {
        dl[i] = huge_t_delta(idx[b0 + i], psi[b0 + i]);
        if (dl[i] >= 0.0) continue;
      }
      const double tol = 4.0 * std::numeric_limits<double>::epsilon() *
                         (std::fabs(dl[i] - offset_) + std::fabs(offset_));
      if (dl[i] >= -tol) {
        ++check.clamped;
      } else {
        check.violated(idx[b0 + i], psi[b0 + i], dl[i]);
      }
      dl[i] = 0.0;
    }
  }
  return check;
}

double RobustBound::huge_t_delta(Index n, double psi) const noexcept {
  // t overflowed. Δ = a·t − a·log1p(t) + ε = a·t − a·log t + ε to double precision, where
  // a·t = (((|r| − ξ)/(c + ξ²))·a)·(|r| + ξ) may still be finite (a < 1, i.e. ν < 1).
  const double r = ys()[n] - psi, ar = std::fabs(r), xi = xi_[n];
  const double at = (((ar - xi) / (t_.c + xi * xi)) * t_.a) * (ar + xi);
  if (std::isinf(at)) return at;
  return at - t_.a * (std::log(at) - std::log(t_.a)) + offset_;
}

BoundCheck RobustBound::delta_grads(const Index* idx, const double* psi, std::size_t k,
                                    double* delta, double* dpsi) const noexcept {
  const BoundCheck check = deltas(idx, psi, k, delta);
  const double* y = ys();
  const double two_a = 2.0 * t_.a, c = t_.c;
  alignas(64) double rr[kBlock], xx[kBlock];
  for (std::size_t b0 = 0; b0 < k; b0 += kBlock) {
    const std::size_t m = std::min(kBlock, k - b0);
    for (std::size_t i = 0; i < m; ++i) {  // gathers apart, as in deltas()
      rr[i] = y[idx[b0 + i]] - psi[b0 + i];
      xx[i] = xi_[idx[b0 + i]];
    }
    // ∂Δ/∂ψ = −∂Δ/∂r = −2a·t·r/(c + r²) = −2a·(t/(1 + t))·r/(c + ξ²), in whichever form keeps
    // every factor bounded: the first for t ≤ 1 (t > −1, and r/(c + r²) ≤ 1/(2√c), where
    // t/(1 + t) and r/(c + ξ²) could overflow and underflow as t → −1), the second beyond
    // (t/(1 + t) = (r² − ξ²)/(c + r²) ∈ (0, 1], → 1 as r² overflows). Both are formed, then
    // one is picked: the loop stays branch-free.
    for (std::size_t i = 0; i < m; ++i) {
      const double r = rr[i], ar = std::fabs(r), xi = xx[i];
      const double den = c + xi * xi, r2 = c + r * r;
      const double t = ((ar - xi) / den) * (ar + xi);
      const double inner = t * (r / r2);
      const double ratio =
          r2 == std::numeric_limits<double>::infinity() ? 1.0 : ((ar - xi) * (ar + xi)) / r2;
      const double outer = ratio * (r / den);
      const double g = t <= 1.0 ? inner : outer;
      dpsi[b0 + i] = delta[b0 + i] > 0.0 ? -two_a * g : 0.0;
    }
  }
  return check;
}

void RobustBound::raise_for_testing(double excess) noexcept {
  offset_ -= excess;
  sum_.add_constant(excess * static_cast<double>(xi_.size()));
}

double RobustBound::log_bound(Index n, double psi) const noexcept {
  // log B_n = C − a·log1p(ξ²/c) − a·t − ε, with w (r² − ξ²) = a·t formed as in deltas().
  const double r = ys()[n] - psi, ar = std::fabs(r), xi = xi_[n];
  const double t = ((ar - xi) / (t_.c + xi * xi)) * (ar + xi);
  return t_.log_norm - t_.a * (log1p_r2c(t_, xi) + t) - offset_;
}

double RobustBound::log_lik(Index n, double psi) const noexcept {
  return t_.log_lik(ys()[n] - psi);
}

}  // namespace flymc
