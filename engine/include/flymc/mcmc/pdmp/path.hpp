#pragma once
/// @file path.hpp
/// Reading a piecewise-deterministic sampler's continuous path: the path θ(t) is linear between
/// events, so discrete draws are read off exactly at equal spacing Δ (grid point k at time k·Δ,
/// k = 1 … warmup + iters: one grid point per iteration), and time averages over the sampling
/// window (warmup·Δ, (warmup + iters)·Δ] are integrated exactly along every linear segment
/// (Pakman et al. 2017, eq. 21; docs/math.md §7.5).
///
/// Thread safety: one object per chain.
#include <cstddef>
#include <vector>

namespace flymc::pdmp {

class PathGrid {
 public:
  /// @param p dimension of θ; @param spacing Δ > 0; @param warmup, iters grid points discarded
  /// and kept (iters ≥ 1).
  PathGrid(std::size_t p, double spacing, long warmup, long iters)
      : p_(p),
        spacing_(spacing),
        warmup_(warmup),
        total_(warmup + iters),
        end_(spacing * static_cast<double>(warmup + iters)),
        start_sampling_(spacing * static_cast<double>(warmup)),
        sum_(p, 0.0),
        point_(p, 0.0) {}

  double now() const noexcept { return now_; }
  /// Grid points passed so far (the iterations done, warm-up included).
  long passed() const noexcept { return next_ - 1; }
  /// The last grid point, warm-up included (warmup + iters at construction).
  long total() const noexcept { return total_; }
  /// Moves the path's end on to grid point `total` (a run in blocks, ess_target.hpp); the path
  /// goes on from where it stopped, so the particle's motion is unchanged.
  void extend(long total) noexcept {
    if (total <= total_) return;
    total_ = total;
    end_ = spacing_ * static_cast<double>(total);
    done_ = false;
  }
  double spacing() const noexcept { return spacing_; }
  /// Path time left until the last grid point.
  double remaining() const noexcept { return done_ ? 0.0 : end_ - now_; }
  bool done() const noexcept { return done_; }
  /// Whether the warm-up's grid points have all been passed.
  bool sampling() const noexcept { return next_ > warmup_; }

  /// Moves along θ(s) = theta + w·s for s in [0, tau], tau ≤ remaining() (tau = remaining()
  /// ends the path), calling emit(k, θ(kΔ − now)) for every grid point k passed, in order, and
  /// adding the segment's part after the warm-up to the time integrals.
  template <class Emit>
  void advance(const double* theta, const double* w, double tau, Emit&& emit) {
    const bool last = tau >= end_ - now_;
    const double t1 = last ? end_ : now_ + tau;
    integrate(theta, w, t1 - now_);
    while (next_ <= total_ && (last || spacing_ * static_cast<double>(next_) <= t1)) {
      const double s = spacing_ * static_cast<double>(next_) - now_;
      for (std::size_t j = 0; j < p_; ++j) point_[j] = theta[j] + w[j] * s;
      emit(next_, point_.data());
      ++next_;
    }
    now_ = t1;
    done_ = last;
  }

  /// The time average of θ over the sampling window so far (zeros before it starts).
  std::vector<double> mean() const {
    std::vector<double> m(p_, 0.0);
    const double t = now_ - start_sampling_;
    if (t > 0.0)
      for (std::size_t j = 0; j < p_; ++j) m[j] = sum_[j] / t;
    return m;
  }

 private:
  // ∫ θ(s) ds over the part of [0, tau] after the warm-up: θ·(s1 − s0) + w·(s1² − s0²)/2.
  void integrate(const double* theta, const double* w, double tau) {
    const double s0 = start_sampling_ > now_ ? start_sampling_ - now_ : 0.0;
    if (s0 >= tau) return;
    const double len = tau - s0, mid = 0.5 * (tau + s0);  // (s1² − s0²)/2 = len·mid
    for (std::size_t j = 0; j < p_; ++j) sum_[j] += len * (theta[j] + w[j] * mid);
  }

  std::size_t p_;
  double spacing_;
  long warmup_, total_;
  double end_, start_sampling_;
  double now_ = 0.0;
  long next_ = 1;  // the next grid point to emit
  bool done_ = false;
  std::vector<double> sum_, point_;
};

}  // namespace flymc::pdmp
