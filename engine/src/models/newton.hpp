#pragma once
// The step rule shared by the models' MAP searches (Newton's method with the exact Hessian):
// convergence on the Newton decrement, and backtracking along the Newton direction.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "flymc/core/clock.hpp"
#include "flymc/models/model.hpp"  // Vec
#include "model_checks.hpp"

namespace flymc::detail {

/// A search's last step, converged and not yet taken, and the log posterior where it starts.
struct PendingStep {
  Vec step;
  double f = 0.0;
};

enum class NewtonMove { converged, stepped, stalled };

/// Moves θ (objective value f, to be maximized) along the Newton step `step` = H⁻¹g, g the
/// gradient. If the squared Newton decrement gᵀ·step is at most 2·tol, the search has converged:
/// the last, tiny step is still taken unless it lowers the objective by more than rounding (the
/// gradient after it is smaller by orders of magnitude; skipping it left |∇| ~1e-6 where a
/// build's rounding changed the path). Otherwise the step is halved until the objective rises by
/// at least a quarter of the decrement the step predicts (Armijo); `stalled` when no step down to
/// 1e-12 of the Newton step does. A rise the objective cannot show above its rounding (1e-12 of
/// |f|: tall data, where f sums millions of terms) is not looked for: the search has converged as
/// far as the objective can tell, and ends as above instead of halving on, a data pass each.
template <class Objective>
NewtonMove newton_move(Objective&& objective, Vec& theta, double& f, const Vec& g, const Vec& step,
                       double tol) {
  const double decrement = g.dot(step), rounding = 1e-12 * (1.0 + std::fabs(f));
  const auto finish = [&](double f_last) {
    if (f_last >= f - rounding) {
      theta += step;
      f = f_last;
    }
    return NewtonMove::converged;
  };
  if (!(decrement > 2.0 * tol)) return finish(objective(theta + step));
  double t = 1.0;
  const double f_full = objective(theta + step);
  double f_new = f_full;
  while (!(f_new >= f + 0.25 * t * decrement) && t > 1e-12) {
    if (0.25 * t * decrement <= rounding) return finish(f_full);
    t *= 0.5;
    f_new = objective(theta + t * step);
  }
  if (t <= 1e-12) return NewtonMove::stalled;
  theta += t * step;
  f = f_new;
  return NewtonMove::stepped;
}

/// The MAP search of a model with a smooth Gaussian stage: Newton from θ = 0 under the prior's
/// Gaussian stand-in (Prior::gaussian_stand_in: concave, well conditioned there), then, for a
/// Laplace or Student-t prior, Newton again from that point under the model's own prior (the
/// Laplace's quadratic majorizer needs a start away from its location). `stage(prior, θ0)` runs one
/// Newton search from θ0; the first starts at `start`.
template <class Stage>
MapResult two_stage_map(const Prior& prior, const Vec& start, Stage&& stage) {
  const Stopwatch clock;
  const Prior smooth = prior.gaussian_stand_in();
  MapResult r = stage(smooth, start);
  if (!(smooth == prior)) {
    const int it = r.iterations, passes = r.passes, curvature_passes = r.curvature_passes;
    r = stage(prior, r.theta);
    r.iterations += it;
    if (r.passes >= 0 && passes >= 0) r.passes += passes;
    if (r.curvature_passes >= 0 && curvature_passes >= 0) r.curvature_passes += curvature_passes;
  }
  r.seconds = clock.seconds();
  return r;
}

/// two_stage_map from θ = 0.
template <class Stage>
MapResult two_stage_map(std::size_t dim, const Prior& prior, Stage&& stage) {
  return two_stage_map(prior, Vec::Zero(static_cast<Eigen::Index>(dim)),
                       std::forward<Stage>(stage));
}

/// Newton's method for a model whose last coordinate is a global parameter (σ, log φ), from θ
/// with its objective f, gradient g and negative Hessian h (`log_post(θ, &g, &h)` recomputes
/// them, and returns f). Away from the mode that parameter's curvature may be negative: each step
/// takes it at least floor(θ) and, where the matrix is still indefinite, drops its cross terms,
/// so that every step ascends; the mode is where the gradient vanishes. Returns the iterations,
/// θ, f, g and h left at the last point.
template <class LogPost, class Floor>
int newton_with_global(LogPost&& log_post, Floor&& floor, Vec& theta, double& f, Vec& g, Mat& h,
                       double tol, int max_iter) {
  const Eigen::Index d = theta.size() - 1;
  int it = 0;
  for (; it < max_iter; ++it) {
    h(d, d) = std::max(h(d, d), floor(theta));
    Eigen::LLT<Mat> llt(h);
    if (llt.info() != Eigen::Success) {
      h.col(d).head(d).setZero();
      h.row(d).head(d).setZero();
      llt.compute(h);
    }
    if (llt.info() != Eigen::Success) break;
    const auto objective_only = [&](const Vec& th) { return log_post(th, nullptr, nullptr); };
    const NewtonMove move = newton_move(objective_only, theta, f, g, llt.solve(g), tol);
    f = log_post(theta, &g, &h);
    if (move != NewtonMove::stepped) break;
  }
  return it;
}

/// The MAP of a model whose last coordinate is a positive global v (a scale, a dispersion),
/// searched in t = (β, log v) on the density of t, p(β, v | y)·v: every v > 0 is a finite t, and
/// where v's own density peaks at 0 the Jacobian keeps t's mode inside. `objective(θ, g, h, e)`
/// is ℓ + log p(v) at dense θ = (β, v), with its gradient into g and Hessian (not negated) into h
/// where asked; it may leave in e a negative definite stand-in for h (an expected information),
/// which a step takes where −∂²/∂t² is not positive definite. The search starts from t and runs
/// newton_with_global with v's curvature at least `floor`; the Laplace covariance is carried to
/// (β, v) by the Jacobian diag(1, …, 1, v). `prior` holds a flat term for v, `coefficients` the
/// coefficients' alone (for the propriety check, naming `model`).
template <class Objective>
MapResult map_in_log_global(Objective&& objective, const Prior& prior, const Prior& coefficients,
                            Vec t, double floor, double tol, int max_iter,
                            const std::string& model) {
  const Stopwatch clock;
  const Eigen::Index p = t.size(), d = p - 1;
  const auto dd = static_cast<std::size_t>(p);
  int passes = 0, curvature = 0;
  const auto to_v = [d](const Vec& x) {
    Vec th = x;
    th[d] = std::exp(x[d]);
    return th;
  };
  // −∂²/∂t² from ∂²/∂(β, v)² (gv: ∂/∂v there, 0 for a stand-in), the coefficients' prior added.
  const auto to_t = [&](Mat& m, const Vec& th, double gv) {
    m = -m;
    for (Eigen::Index j = 0; j < d; ++j)
      m(j, j) += prior.map_curvature(static_cast<std::size_t>(j), th[j]);
    m.col(d).head(d) *= th[d];
    m.row(d).head(d) *= th[d];
    m(d, d) = m(d, d) * th[d] * th[d] - gv * th[d];
  };
  const auto log_post = [&](const Vec& x, Vec* g, Mat* h) {
    ++passes;
    const Vec th = to_v(x);
    Mat stand_in;
    double f = objective(th, g, h, h != nullptr ? &stand_in : nullptr);
    if (!std::isfinite(f)) return f;
    f += prior.log_density(th.data(), dd) + x[d];
    if (g != nullptr) prior.add_gradient(th.data(), dd, g->data());
    if (h != nullptr) {
      ++curvature;
      to_t(*h, th, (*g)[d]);
      if (stand_in.size() != 0 && Eigen::LLT<Mat>(*h).info() != Eigen::Success) {
        to_t(stand_in, th, 0.0);
        *h = stand_in;
      }
    }
    if (g != nullptr) (*g)[d] = (*g)[d] * th[d] + 1.0;
    return f;
  };
  Vec g;
  Mat h;
  double f = log_post(t, &g, &h);
  const int iterations = newton_with_global(
      log_post, [floor](const Vec&) { return floor; }, t, f, g, h, tol, max_iter);
  const Eigen::LLT<Mat> llt(h);
  check_laplace_precision(coefficients, llt, model);
  MapResult r;
  r.theta = to_v(t);
  Vec jac = Vec::Ones(p);
  jac[d] = r.theta[d];
  r.covariance = jac.asDiagonal() * llt.solve(Mat::Identity(p, p)) * jac.asDiagonal();
  r.covariance = 0.5 * (r.covariance + r.covariance.transpose());
  r.log_post = f;
  r.iterations = iterations;
  r.passes = passes;
  r.curvature_passes = curvature;
  r.seconds = clock.seconds();
  return r;
}

}  // namespace flymc::detail
