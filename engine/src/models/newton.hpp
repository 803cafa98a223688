#pragma once
// The step rule shared by the models' MAP searches (Newton's method with the exact Hessian):
// convergence on the Newton decrement, and backtracking along the Newton direction.
#include <algorithm>
#include <cmath>
#include <utility>

#include "flymc/core/clock.hpp"
#include "flymc/models/model.hpp"  // Vec

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

}  // namespace flymc::detail
