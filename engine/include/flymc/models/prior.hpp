#pragma once
/// @file prior.hpp
/// The prior on θ as the models and samplers evaluate it: independent coordinates, each normal,
/// Laplace, Student-t or flat with its own location and scale (docs/math.md §2.5). The
/// common case, one N(0, sd²) or Laplace of sd sd on every coordinate, keeps its own short path
/// (`terms` empty), whose arithmetic is the one every pinned draw was made with.
#include <cstddef>
#include <utility>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/prior_spec.hpp"

namespace flymc {

/// One coordinate's prior. `scale` is S of the normal and the Student-t, b of the Laplace.
struct PriorTerm {
  PriorKind kind = PriorKind::gaussian;
  double loc = 0.0, scale = 1.0, nu = 0.0;

  double log_density(double t) const noexcept;  ///< without its constant
  double gradient(double t) const noexcept;     ///< d log p / dt (Laplace: 0 at t = loc)
  /// A curvature that stands for the prior in Gaussian approximations (Laplace covariances,
  /// metrics, scalable MH's expansion): 1/S² for the normal; 1/(2b²), a Gaussian of the same
  /// variance, for the Laplace; the Student-t's curvature at its mode, (ν + 1)/(ν·S²); 0 for
  /// flat. Only tuning reads it: the samplers evaluate the prior itself.
  double precision() const noexcept;
  /// The curvature of a quadratic minorizer of log p touching it at t, for MAP searches
  /// (Newton steps with it and a line search climb to the MAP): the normal's own; the Laplace's
  /// local quadratic approximation 1/(b·|t − loc|) (Fan & Li 2001), floored at 1e-8·b; the
  /// Student-t's (ν + 1)/(ν·S² + (t − loc)²), from the tangent of the concave log(1 + u/ν) in
  /// u = ((t − loc)/S)²; 0 for flat.
  double map_curvature(double t) const noexcept;
  friend bool operator==(const PriorTerm&, const PriorTerm&) = default;
};

/// The prior on θ (dense coordinates). Evaluated on dense θ.
///
/// Thread safety: immutable; all members may be called concurrently.
struct Prior {
  Prior() = default;
  Prior(PriorKind k, double s, std::vector<PriorTerm> t = {})
      : kind(k), sd(s), terms(std::move(t)) {}

  /// Every coordinate's when `terms` is empty: N(0, sd²), or Laplace(0, b = sd/√2) (the same
  /// standard deviation), or flat.
  PriorKind kind = PriorKind::gaussian;
  double sd = 1.0;
  /// One per dense coordinate, where they differ or are not of the form above.
  std::vector<PriorTerm> terms;

  /// log p(θ) without its constant.
  double log_density(const double* theta, std::size_t p) const noexcept;
  /// grad[j] += ∂ log p(θ)/∂θ_j.
  void add_gradient(const double* theta, std::size_t p, double* grad) const noexcept;
  /// Coordinate j's prior.
  PriorTerm term(std::size_t j) const noexcept;
  /// PriorTerm::precision of coordinate j.
  double precision(std::size_t j) const noexcept;
  /// PriorTerm::map_curvature of coordinate j at θ_j.
  double map_curvature(std::size_t j, double theta_j) const noexcept;
  /// Every coordinate has the same precision (`terms` empty, or all equal): precision(0).
  bool uniform_precision() const noexcept;
  /// Some coordinate is flat.
  bool any_flat() const noexcept;
  /// map_curvature is the prior's own −d² log p (normal and flat coordinates), not a bound's.
  bool curvature_exact() const noexcept;
  /// The prior of `k` blocks of these coordinates (softmax: one block per class).
  Prior repeated(std::size_t k) const;
  /// Every coordinate is N(0, sd²) with one sd (what the piecewise-deterministic samplers take).
  bool centred_gaussian() const noexcept;
  /// The smooth prior a MAP search starts under: each coordinate a normal with its location and
  /// PriorTerm::precision (flat ones stay flat). The normal prior is its own.
  Prior gaussian_stand_in() const;
  /// A coordinate's scale for draws that start chains (`--init prior`): 1/√precision.
  double init_sd(std::size_t j) const noexcept;
  friend bool operator==(const Prior&, const Prior&) = default;
};

/// The prior of a run's `d` coefficients: cfg's --prior (and with --intercept, --prior-intercept
/// on coordinate 0). Softmax repeats it for every class (Prior::repeated).
/// @throw ConfigError where the spec's lists do not have a value per feature.
Prior prior_of(const RunConfig& cfg, std::size_t d);
/// The prior of d coefficients followed by a flat term for a global parameter (σ, φ) whose own
/// prior its model carries in its likelihood, so that the samplers' prior stays the
/// coefficients'.
Prior with_flat_global(const Prior& coefficients, std::size_t d);

}  // namespace flymc
