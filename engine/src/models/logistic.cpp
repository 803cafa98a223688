#include "flymc/models/logistic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "lik_grad.hpp"
#include "model_checks.hpp"
#include "newton.hpp"

namespace flymc {
namespace {

/// A padded, aligned copy of θ for the row kernels.
AlignedBuffer padded(const double* theta, std::size_t d, std::size_t stride) {
  AlignedBuffer p = aligned_zeros(stride);
  for (std::size_t j = 0; j < d; ++j) p[j] = theta[j];
  return p;
}

/// Partial sums of one data chunk for Newton's method and the bound statistics.
struct Partial {
  double f = 0.0;  // Σ scalar terms
  Vec g;           // Σ vector terms
  Mat h;           // Σ weighted outer products (upper triangle)

  // As doubles for the processes of a sharded data set (row_fold.hpp).
  static constexpr const char* kWhat = "logistic regression";
  void pack(PackedSums& p) const { p.scalar(f).array(g).matrix(h); }
  static Partial unpack(SumsReader& r) {
    Partial p;
    p.f = r.scalar();
    const std::vector<double> g = r.array();
    p.g = Eigen::Map<const Vec>(g.data(), static_cast<Eigen::Index>(g.size()));
    p.h = r.matrix<Mat>();
    return p;
  }
};

/// Accumulates over rows [lo, hi): f += sf(n, a_n), g += sg(n, a_n)·x_n, H += w(n, a_n) x_n x_nᵀ
/// where a_n = x_n·θ (not multiplied by the label).
template <class Fn>
Partial chunk_stats(const Dataset& ds, const double* theta_p, std::size_t lo, std::size_t hi,
                    bool want_h, Fn&& fn) {
  const std::size_t d = ds.d(), stride = ds.stride();
  Partial p;
  p.g = Vec::Zero(static_cast<Eigen::Index>(d));
  if (want_h) p.h = Mat::Zero(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  constexpr std::size_t kBlock = blas::kSyrkRows;
  AlignedBuffer block = want_h ? aligned_zeros(kBlock * stride) : AlignedBuffer();
  std::vector<double> dots(kBlock), roots(kBlock);
  for (std::size_t b0 = lo; b0 < hi; b0 += kBlock) {
    const std::size_t m = std::min(kBlock, hi - b0);
    const RowsF64 rows = ds.rows(b0, b0 + m);
    kernels::dots_packed(rows.data(), m, stride, theta_p, dots.data());
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t n = b0 + i;
      double sf, sg, w;
      fn(n, dots[i], sf, sg, w);
      p.f += sf;
      const double* x = rows.row(i);
      for (std::size_t j = 0; j < d; ++j) p.g[static_cast<Eigen::Index>(j)] += sg * x[j];
      if (want_h) roots[i] = std::sqrt(w);
    }
    if (want_h)
      blas::syrk_scaled_rows(rows.data(), m, d, stride, roots.data(), block.get(), p.h.data());
  }
  return p;
}

/// Adds a chunk's partial sums to the running ones (the first chunk's become them).
Partial add_partial(Partial acc, Partial p) {
  if (acc.g.size() == 0) return p;
  acc.f += p.f;
  acc.g += p.g;
  if (p.h.size() != 0) acc.h += p.h;
  return acc;
}

/// Partial sums over every row of the data set (of the whole one if `ds` is a shard).
template <class ChunkFn>
Partial fold_partials(const Dataset& ds, ChunkFn&& chunk) {
  return fold_sums(ds, Partial{}, chunk, add_partial);
}

template <class Fn>
Partial data_stats(const Dataset& ds, const double* theta_p, bool want_h, Fn fn) {
  return fold_partials(ds, [&](std::size_t lo, std::size_t hi) {
    return chunk_stats(ds, theta_p, lo, hi, want_h, fn);
  });
}

void symmetrize_upper(Mat& h) { h.triangularView<Eigen::StrictlyLower>() = h.transpose(); }

/// Σ log σ(t_n x_n·θ) over rows [lo, hi) (θ padded in `tp`).
double chunk_log_lik(const Dataset& ds, const double* tp, std::size_t lo, std::size_t hi) {
  return ds.sum_log_sigmoid_signed(lo, hi, tp);
}

/// Σ log σ(t_n x_n·θ) over all rows, in fixed chunks (the same at any thread count, and over
/// the whole data set if `ds` is a shard).
double sum_log_lik(const Dataset& ds, const double* tp) {
  return sum_rows(ds,
                  [&](std::size_t lo, std::size_t hi) { return chunk_log_lik(ds, tp, lo, hi); });
}

}  // namespace

double jj_lambda(double xi) noexcept {
  xi = std::fabs(xi);
  if (xi < 1e-4) return 0.125 - xi * xi / 96.0;  // tanh(x) = x − x³/3 + O(x⁵)
  return std::tanh(0.5 * xi) / (4.0 * xi);
}

// ----------------------------------------------------------------------------------------------
LogisticModel::LogisticModel(std::shared_ptr<const Dataset> data, Prior prior)
    : OnePredictorModel(std::move(data), prior) {
  if (!data_ || data_->total_n() == 0 || data_->d() == 0)  // a shard's part may be empty
    throw DataError("logistic regression needs at least one row and one feature");
  // 1/σ² must be a finite, non-zero double (as RunConfig::validate checks).
  if (!(prior.sd >= 1e-150 && prior.sd <= 1e150))
    throw ConfigError("--prior-sd must be in [1e-150, 1e150], got " + std::to_string(prior.sd));
  for (std::size_t i = 0; i < data_->n(); ++i) {
    const double t = data_->y()[i];
    if (t != 1.0 && t != -1.0)
      throw DataError(data_->source() + ": row " +
                      std::to_string((data_->shard() ? data_->shard()->first_row : 0) + i + 1) +
                      ": field 1 (label): logistic regression needs labels -1/+1 (or 0/1), got " +
                      std::to_string(t));
  }
  detail::check_features(*data_, "logistic regression");
  blas::use_single_thread();
}

double LogisticModel::log_lik(const double* theta) const { return sum_log_lik(*data_, theta); }

namespace {
/// Rows per inner block of the fused log-likelihood + gradient pass: the block's rows are read
/// from memory by the dot products and again, from L2, by the weighted row sum.
constexpr std::size_t kGradBlock = 256;
}  // namespace

double LogisticModel::log_lik_grad(const double* theta, double* grad) const {
  const Dataset& ds = *data_;
  const std::size_t stride = ds.stride();
  const auto y = ds.y();
  return detail::reduce_lik_grad(
      ds,
      [&](std::size_t lo, std::size_t hi) {
        detail::LikGrad p;
        p.g.assign(stride, 0.0);
        alignas(64) double a[kGradBlock], ls[kGradBlock], c[kGradBlock];
        for (std::size_t b0 = lo; b0 < hi; b0 += kGradBlock) {
          const std::size_t m = std::min(kGradBlock, hi - b0);
          ds.dots(b0, b0 + m, theta, a);
          for (std::size_t i = 0; i < m; ++i) a[i] *= y[b0 + i];
          kernels::log_sigmoid(a, ls, m);
          // ∂ log σ(a)/∂(x·θ) = t σ(−a) = t exp(log σ(a) − a).
          for (std::size_t i = 0; i < m; ++i) {
            p.f += ls[i];
            c[i] = ls[i] - a[i];
          }
          kernels::exp(c, c, m);
          for (std::size_t i = 0; i < m; ++i) c[i] *= y[b0 + i];
          ds.weighted_row_sum(b0, b0 + m, c, 1, p.g.data());
        }
        return p;
      },
      grad);
}

Vec LogisticModel::grad_log_post(const Vec& theta) const {
  const Dataset& ds = *data_;
  AlignedBuffer tp = padded(theta.data(), dim(), stride());
  const auto y = ds.y();
  Partial p = data_stats(ds, tp.get(), false,
                         [&](std::size_t n, double dot, double& sf, double& sg, double& w) {
                           const double a = y[n] * dot;
                           sf = 0.0;
                           sg = y[n] * std::exp(kernels::log_sigmoid(-a));  // t σ(−a)
                           w = 0.0;
                         });
  Vec g = p.g;
  prior_.add_gradient(theta.data(), dim(), g.data());
  return g;
}

namespace {

/// A MAP search on this many rows or more first finds the MAP of a strided subsample of
/// kWarmStartRows rows, its likelihood weighted up to N rows, and starts from there with steps
/// that freeze the curvature at the subsample's (frozen_newton), so that the full data's
/// Hessian, a pass several times dearer than a gradient's, is formed once, at the end.
constexpr std::size_t kWarmStartRows = 100000;
constexpr std::size_t kWarmStartMinRows = 4 * kWarmStartRows;
/// At most this many frozen-curvature steps: where the subsample's curvature is far from all the
/// data's they contract slowly, and Newton's steps (a Hessian pass each, worth several gradient
/// passes) finish the search from where they stopped.
constexpr int kFrozenSteps = 12;

/// What one Newton step needs at θ (padded in `tp`), in one pass over `ds`: the log-likelihood
/// (summed as sum_log_lik sums it, chunk by chunk, so that the line search compares
/// like with like), its gradient and its negative Hessian (full), each times `weight`.
Partial newton_stats(const Dataset& ds, const double* tp, double weight) {
  const auto y = ds.y();
  Partial p = fold_partials(ds, [&](std::size_t lo, std::size_t hi) {
    Partial c = chunk_stats(
        ds, tp, lo, hi, true, [&](std::size_t n, double dot, double& sf, double& sg, double& w) {
          const double a = y[n] * dot;
          const double ls_pos = kernels::log_sigmoid(a), ls_neg = kernels::log_sigmoid(-a);
          sf = 0.0;
          sg = y[n] * std::exp(ls_neg);
          w = std::exp(ls_pos + ls_neg);  // σ(a)σ(−a), the negative Hessian weight
        });
    c.f = chunk_log_lik(ds, tp, lo, hi);
    return c;
  });
  symmetrize_upper(p.h);
  if (weight != 1.0) {
    p.f *= weight;
    p.g *= weight;
    p.h *= weight;
  }
  return p;
}

/// Newton's method on the posterior of `ds` with its likelihood times `weight`, from θ: each step
/// reads the data once (the statistics at the point a full step lands on serve the next step),
/// and once more per halving of a step the line search rejects. Returns θ_MAP, the log posterior
/// there and the Laplace covariance (the likelihood's negative Hessian plus the prior precision,
/// inverted). With `start_converged`, a start whose Newton decrement already meets the tolerance
/// is returned as it is, after the one pass that gives its curvature. With `last`, the start is
/// the point of an earlier search that stopped before taking its last (converged) step: the
/// first pass is at the start plus that step, kept if the log posterior there is not lower
/// (as newton_move keeps a converged step), so that one pass both ends that search and gives the
/// curvature.
MapResult newton_on(const Dataset& ds, double weight, const Prior& prior, Vec theta, double tol,
                    int max_iter, bool start_converged = false,
                    const detail::PendingStep* last = nullptr) {
  const std::size_t dim = ds.d();
  int passes = 0, curvature_passes = 0;
  const auto d = static_cast<Eigen::Index>(dim);
  AlignedBuffer tp = aligned_zeros(ds.stride());
  auto place = [&](const Vec& th) {
    for (Eigen::Index j = 0; j < d; ++j) tp[static_cast<std::size_t>(j)] = th[j];
  };
  auto stats = [&](const Vec& th) {
    place(th);
    ++passes;
    ++curvature_passes;
    Partial p = newton_stats(ds, tp.get(), weight);
    p.f += prior.log_density(th.data(), dim);
    return p;
  };
  auto objective = [&](const Vec& th) {
    place(th);
    ++passes;
    return weight * sum_log_lik(ds, tp.get()) + prior.log_density(th.data(), dim);
  };
  Partial at = stats(last != nullptr ? Vec(theta + last->step) : theta);
  if (last != nullptr) {
    if (at.f >= last->f - 1e-12 * (1.0 + std::fabs(last->f)))
      theta += last->step;
    else
      at = stats(theta);
  }
  double f = at.f;
  int it = 0;
  for (; it < max_iter; ++it) {
    Vec g = at.g;
    prior.add_gradient(theta.data(), dim, g.data());
    Mat neg_hess = at.h;
    for (Eigen::Index j = 0; j < d; ++j)
      neg_hess(j, j) += prior.map_curvature(static_cast<std::size_t>(j), theta[j]);
    const Vec step = Eigen::LLT<Mat>(neg_hess).solve(g);
    // A start that an earlier search has taken to convergence stays: the pass at it was for its
    // curvature.
    if (start_converged && it == 0 && !(g.dot(step) > 2.0 * tol)) break;
    // The line search's first trial is the full step; its pass also yields the next statistics.
    std::optional<Partial> full;
    auto trial = [&](const Vec& th) {
      if (full) return objective(th);
      full = stats(th);
      return full->f;
    };
    const Vec before = theta;
    const detail::NewtonMove move = detail::newton_move(trial, theta, f, g, step, tol);
    if (move == detail::NewtonMove::stalled) break;
    const bool moved = theta != before;
    if (moved) at = theta == before + step ? std::move(*full) : stats(theta);
    if (move == detail::NewtonMove::converged) break;
  }
  MapResult r;
  r.theta = theta;
  Mat h = at.h;
  add_prior_precision(prior, h);
  const Eigen::LLT<Mat> llt(h);
  detail::check_laplace_precision(prior, llt, "logistic regression");
  r.covariance = llt.solve(Mat::Identity(d, d));
  r.lik_curvature = std::move(at.h);
  r.log_post = f;
  r.iterations = it;
  r.seconds = 0.0;
  r.passes = passes;
  r.curvature_passes = curvature_passes;
  return r;
}

/// A tall data set's MAP search between the warm start and the pass for the curvature: Newton
/// steps with the curvature frozen at `cov` (the warm start's Laplace covariance, its likelihood
/// weighted up to N rows), each one pass of `lik_grad(θ, grad)` (the log-likelihood, returned,
/// and its gradient: memory-bound, no outer products). A step shrinks the error by about
/// ‖I − cov·H‖, small where the subsample's curvature is close to all the data's. After each
/// step the inverse curvature is corrected along it by the BFGS update from the change of the
/// gradient (the likelihood is concave, so the update keeps it positive definite), which
/// shrinks the error's slowest directions first. The steps stop on gᵀ·P·g as newton_on stops on
/// the Newton decrement; the last, tiny step is left to the caller (`pending`: the step and the
/// log posterior where it starts; empty step if the search stopped otherwise), whose curvature
/// pass takes it. Adds its passes to `passes`.
template <class LikGrad>
Vec frozen_newton(LikGrad&& lik_grad, const Prior& prior, Vec theta, const Mat& cov, double tol,
                  int max_iter, int& passes, detail::PendingStep& pending) {
  const std::size_t dim = static_cast<std::size_t>(theta.size());
  struct Point {
    Vec theta, g;  // where, and the log posterior's gradient there
    double f = 0.0;
  };
  auto at_point = [&](const Vec& th) {
    ++passes;
    Point p{th, Vec(th.size()), 0.0};
    p.f = lik_grad(th, p.g.data()) + prior.log_density(th.data(), dim);
    prior.add_gradient(th.data(), dim, p.g.data());
    return p;
  };
  Point at = at_point(theta);
  Mat p = cov;
  for (int it = 0; it < max_iter; ++it) {
    const Vec step = p * at.g;
    if (!(at.g.dot(step) > 2.0 * tol)) {
      pending = {step, at.f};
      break;
    }
    Point last;
    auto trial = [&](const Vec& th) {
      last = at_point(th);
      return last.f;
    };
    double f = at.f;
    const detail::NewtonMove move = detail::newton_move(trial, theta, f, at.g, step, tol);
    if (move == detail::NewtonMove::stalled) break;
    if (theta == at.theta) continue;
    Point next = theta == last.theta ? std::move(last) : at_point(theta);
    // BFGS on the inverse: s the step taken, y = g − g' ≈ H·s (sᵀy > 0 for a concave objective).
    const Vec sv = next.theta - at.theta, yv = at.g - next.g;
    const double sy = sv.dot(yv);
    if (sy > 0.0) {
      const Vec py = p * yv;
      p += ((sy + yv.dot(py)) / (sy * sy)) * (sv * sv.transpose()) -
           (py * sv.transpose() + sv * py.transpose()) / sy;
    }
    at = std::move(next);
    if (move == detail::NewtonMove::converged) break;
  }
  return theta;
}

/// Every (N / kWarmStartRows)-th row, kWarmStartRows of them.
std::vector<Index> strided_rows(std::size_t n) {
  std::vector<Index> rows(kWarmStartRows);
  for (std::size_t i = 0; i < kWarmStartRows; ++i)
    rows[i] = static_cast<Index>(i * n / kWarmStartRows);
  return rows;
}

}  // namespace

MapResult LogisticModel::find_map(double tol, int max_iter) const {
  const Stopwatch clock;
  const Dataset& ds = *data_;
  Vec start = Vec::Zero(static_cast<Eigen::Index>(dim()));
  const bool tall = ds.total_n() >= kWarmStartMinRows;  // a shard decides as its whole data does
  int passes = 0;
  detail::PendingStep pending;
  if (tall) {
    const auto sub = gather_rows(ds, strided_rows(ds.total_n()));
    const double weight = static_cast<double>(ds.total_n()) / static_cast<double>(sub->n());
    const Prior gaussian = prior_.gaussian_stand_in();
    const MapResult warm = newton_on(*sub, weight, gaussian, start, tol, max_iter);
    AlignedBuffer tp = aligned_zeros(stride()), gp = aligned_zeros(stride());
    const auto lik_grad = [&](const Vec& th, double* g) {
      std::copy(th.data(), th.data() + th.size(), tp.get());
      const double f = log_lik_grad(tp.get(), gp.get());
      std::copy(gp.get(), gp.get() + th.size(), g);
      return f;
    };
    start = frozen_newton(lik_grad, gaussian, warm.theta, warm.covariance, tol,
                          std::min(max_iter, kFrozenSteps), passes, pending);
  }
  bool first_stage = true;
  MapResult r = detail::two_stage_map(prior_, start, [&](const Prior& prior, const Vec& from) {
    const bool take = first_stage && pending.step.size() != 0;
    first_stage = false;
    return newton_on(ds, 1.0, prior, from, tol, max_iter, tall, take ? &pending : nullptr);
  });
  if (r.passes >= 0) r.passes += passes;
  detail::check_proper(prior_, r.theta, "logistic regression", [&](const Vec& th) {
    AlignedBuffer tp = aligned_zeros(stride());
    std::copy(th.data(), th.data() + th.size(), tp.get());
    return log_lik(tp.get());
  });
  r.seconds = clock.seconds();
  return r;
}

// ----------------------------------------------------------------------------------------------
LogisticBound LogisticBound::make(const LogisticModel& model, const RunConfig& cfg,
                                  const MapResult& map) {
  return cfg.bound == BoundTuning::map
             ? map_tuned(model, map.theta, bound_slack_of(cfg))
             : untuned(model, cfg.untuned_xi, map.theta, bound_slack_of(cfg));
}

LogisticBound LogisticBound::untuned(const LogisticModel& model, double xi, const Vec& anchor,
                                     double slack) {
  if (!(xi >= 0.0) || !std::isfinite(xi))
    throw ConfigError("untuned bound: xi must be finite and >= 0, got " + std::to_string(xi));
  return LogisticBound(
      model, [xi](std::size_t, double) { return xi; }, anchor, slack);
}

LogisticBound LogisticBound::map_tuned(const LogisticModel& model, const Vec& theta_map,
                                       double slack) {
  // Anchored at θ_MAP, the pass's own dot product is ±ξ_n.
  return LogisticBound(
      model, [](std::size_t, double dot) { return std::fabs(dot); }, theta_map, slack);
}

LogisticBound::LogisticBound(const LogisticModel& model,
                             const std::function<double(std::size_t, double)>& xi,
                             const Vec& anchor, double slack)
    : data_(model.data_ptr()), slack_(slack) {
  const auto t0 = Clock::now();
  if (!(slack >= 0.0) || !std::isfinite(slack))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + std::to_string(slack));
  const Dataset& ds = *data_;
  if (static_cast<std::size_t>(anchor.size()) != ds.d())
    throw ConfigError("bound anchor has the wrong dimension");
  // Every record is written by the pass below, which first touches its pages on every core.
  par_ = aligned_uninit(kPar * ds.n());
  first_ = 0;  // the records are this process's rows' until share_records()
  AlignedBuffer tp = padded(anchor.data(), ds.d(), ds.stride());
  const auto y = ds.y();
  // One pass: each datum's record {k_n, t_n·λ_n} from its tangent point (the tangent points are
  // not kept: the record holds all that deltas() needs), then f0 = Σ log B_n(θ0),
  // ∇ = Σ (t_n/2 − 2λ_n x_n·θ0) x_n and A = Σ λ_n x_n x_nᵀ.
  Partial p = data_stats(ds, tp.get(), true,
                         [&](std::size_t m, double dot, double& sf, double& sg, double& w) {
                           const double x = xi(m, dot);
                           const double l = jj_lambda(x);
                           par_[kPar * m] = kernels::log_sigmoid(x) - 0.5 * x + l * x * x - slack;
                           par_[kPar * m + 1] = std::copysign(l, y[m]);
                           sf = log_bound(static_cast<Index>(m), dot);
                           sg = 0.5 * y[m] - 2.0 * lam(m) * dot;
                           w = lam(m);
                         });
  symmetrize_upper(p.h);
  sum_ = CollapsedQuadratic(p.f, p.g, std::move(p.h), anchor, ds.stride());
  share_records();
  seconds_ = seconds_between(t0, Clock::now());
}

void LogisticBound::share_records() {
  const RowShard* s = data_->shard();
  if (s == nullptr || s->link->parts() <= 1) return;
  const std::size_t n = data_->n();
  const std::vector<double> all =
      s->link->gather_in_order(std::vector<double>(par_.get(), par_.get() + kPar * n));
  if (all.size() != kPar * s->total_rows)
    throw Error(data_->source() + ": the shards' bound records do not add up to the data set");
  par_ = aligned_uninit(all.size());
  std::copy(all.begin(), all.end(), par_.get());
  first_ = s->first_row;
}

double LogisticBound::log_bound_sum(const double* theta, double* scratch,
                                    double* grad) const noexcept {
  return sum_.evaluate(theta, scratch, grad);
}

BoundCheck LogisticBound::deltas(const Index* idx, const double* dots, std::size_t k,
                                 double* delta) const noexcept {
  BoundCheck check;
  // Blocks of 256 on the stack: the log-sigmoid runs vectorized over each block.
  constexpr std::size_t kBlock = 256;
  alignas(64) double a[kBlock];
  alignas(64) double ls[kBlock];
  for (std::size_t b0 = 0; b0 < k; b0 += kBlock) {
    const std::size_t m = std::min(kBlock, k - b0);
    for (std::size_t i = 0; i < m; ++i) a[i] = label(idx[b0 + i]) * dots[b0 + i];
    kernels::log_sigmoid(a, ls, m);
    for (std::size_t i = 0; i < m; ++i) {
      const Index n = idx[b0 + i];
      const double dl = ls[i] - (kn(n) + 0.5 * a[i] - lam(n) * a[i] * a[i]);
      if (dl >= 0.0) {
        delta[b0 + i] = dl;
        continue;
      }
      // Off the hot path: Δ < 0 (or NaN) is clamped, and classified (BoundCheck).
      constexpr double kUlps = 64.0 * std::numeric_limits<double>::epsilon();
      // (λ·(a·a), not λ·a·a: sharing that product with `dl` would stop GCC from fusing it
      // into dl's subtraction, which changes dl's rounding and so every draw.)
      const double tol = 1e-9 + kUlps * (std::fabs(ls[i]) + std::fabs(kn(n)) +
                                         0.5 * std::fabs(a[i]) + lam(n) * (a[i] * a[i]));
      if (dl >= -tol) {
        ++check.clamped;
      } else {
        check.violated(n, dots[b0 + i], dl);  // also NaN
      }
      delta[b0 + i] = 0.0;
    }
  }
  return check;
}

BoundCheck LogisticBound::delta_grads(const Index* idx, const double* dots, std::size_t k,
                                      double* delta, double* dpsi) const noexcept {
  const BoundCheck check = deltas(idx, dots, k, delta);
  constexpr std::size_t kBlock = 256;
  alignas(64) double a[kBlock];
  alignas(64) double e[kBlock];
  for (std::size_t b0 = 0; b0 < k; b0 += kBlock) {
    const std::size_t m = std::min(kBlock, k - b0);
    for (std::size_t i = 0; i < m; ++i) a[i] = label(idx[b0 + i]) * dots[b0 + i];
    // σ(−a) = exp(log σ(a) − a), accurate for both signs of a.
    kernels::log_sigmoid(a, e, m);
    for (std::size_t i = 0; i < m; ++i) e[i] -= a[i];
    kernels::exp(e, e, m);
    for (std::size_t i = 0; i < m; ++i) {
      const Index n = idx[b0 + i];
      dpsi[b0 + i] = delta[b0 + i] > 0.0 ? label(n) * (e[i] - 0.5 + 2.0 * lam(n) * a[i]) : 0.0;
    }
  }
  return check;
}

void LogisticBound::raise_for_testing(double excess) noexcept {
  const std::size_t n = records();
  for (std::size_t i = 0; i < n; ++i) par_[kPar * i] += excess;
  sum_.add_constant(excess * static_cast<double>(n));
}

void LogisticBound::add_slack(const std::vector<double>& eps) {
  const std::size_t n = data_->n();
  if (first_ != 0 || records() != n)
    throw ConfigError("--slack-scale does not run on data sharded over processes yet");
  if (eps.size() != n) throw ConfigError("per-datum slack: one value per datum expected");
  for (std::size_t i = 0; i < n; ++i) {
    if (!(eps[i] >= 0.0 && std::isfinite(eps[i])))
      throw ConfigError("per-datum slack must be finite and >= 0, got " + std::to_string(eps[i]));
    par_[kPar * i] -= eps[i];
    sum_.add_constant(-eps[i]);
  }
}

void LogisticBound::add_uniform_slack(double eps) {
  if (!(eps >= 0.0 && std::isfinite(eps)))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + std::to_string(eps));
  const Dataset& ds = *data_;
  chunked_for(records(), kReduceGrain, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) par_[kPar * i] -= eps;
  });
  slack_ += eps;
  sum_.set_constant(data_stats(ds, sum_.theta0_padded(), false,
                               [&](std::size_t m, double dot, double& sf, double& sg, double& w) {
                                 sf = log_bound(static_cast<Index>(first_ + m), dot);
                                 sg = 0.0;
                                 w = 0.0;
                               })
                        .f);
}

double LogisticBound::log_bound(Index n, double dot) const noexcept {
  const double a = label(n) * dot;
  return kn(n) + 0.5 * a - lam(n) * a * a;
}

double LogisticBound::log_lik(Index n, double dot) const noexcept {
  return kernels::log_sigmoid(label(n) * dot);  // the record's label: y_n, held for any n
}

}  // namespace flymc
