#pragma once
/// @file event_time.hpp
/// The event-time solvers and moves the piecewise-deterministic samplers share (docs/math.md §7):
/// the first event of a Poisson process whose rate is the positive part of an affine or a
/// piecewise-linear function of time, found exactly by inverting its integrated rate (the time
/// change τ = Λ⁻¹(E), E ~ Exp(1)), the bouncy particle sampler's reflection, and velocity draws.
///
/// Thread safety: free functions without state; PiecewiseLinearRate belongs to one chain.
#include <cmath>
#include <cstddef>
#include <vector>

#include "flymc/core/rng.hpp"

namespace flymc::pdmp {

/// ∫_0^h [y0 + (y1 − y0)·s/h]_+ ds, the integral of the positive part of one linear piece
/// (h ≥ 0), with the zero crossing inside the piece handled exactly.
double positive_linear_integral(double y0, double y1, double h) noexcept;

/// The first t ≥ 0 with ∫_0^t [a + b·s]_+ ds = e (e > 0), or +inf when the integral never
/// reaches e (b ≤ 0 and a ≤ 0, or b < 0 and e > a²/(2|b|)). Uses the cancellation-free root
/// 2e/(a + √(a² + 2be)) where a ≥ 0, and the zero crossing −a/b plus √(2e/b) where a < 0 < b.
double affine_rate_time(double a, double b, double e) noexcept;

/// A rate that is linear between nodes t_0 < t_1 < … < t_m, clipped at 0, and ends at t_m:
/// SBPS's proposal intensity (the upper band interpolated between nodes).
class PiecewiseLinearRate {
 public:
  void clear() noexcept {
    t_.clear();
    y_.clear();
  }
  /// Appends the node (t, y); t must exceed the previous node's.
  void add(double t, double y) {
    t_.push_back(t);
    y_.push_back(y);
  }
  std::size_t size() const noexcept { return t_.size(); }
  /// The rate (clipped at 0) at t in [t_0, t_m].
  double at(double t) const noexcept;
  /// ∫_{t_0}^{t} of the rate, t in [t_0, t_m].
  double integral(double t) const noexcept;
  /// The first t in [t_0, t_m] with integral(t) = e > 0, or +inf when integral(t_m) < e.
  double first_time(double e) const noexcept;

 private:
  std::vector<double> t_, y_;
};

/// Reflects v in the hyperplane orthogonal to g: v ← v − 2(v·g)/(g·g)·g (p entries). Keeps |v|
/// and turns v·g into −v·g; leaves v unchanged when g = 0.
void reflect(double* v, const double* g, std::size_t p) noexcept;

/// A velocity uniform on the unit sphere S^{p−1}: a standard normal vector, normalized.
void sphere_velocity(Rng& rng, double* v, std::size_t p) noexcept;

/// An Exp(1) draw, −log U with U uniform on (0, 1).
inline double exp1(Rng& rng) noexcept { return -std::log(rng.uniform_pos()); }

}  // namespace flymc::pdmp
