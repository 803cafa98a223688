#pragma once
/// @file slice.hpp
/// Slice sampling (Neal 2003): along a random direction L·η/|η|, or along every coordinate in turn
/// (scaled by the metric's diagonal). Each univariate update draws the slice level
/// log y = log π − Exp(1), places an interval of width w at random around the point, steps it out
/// (Neal's procedure with at most m = 50 steps, split at random between the two ends, which keeps
/// it reversible) and shrinks it until a point inside the slice is found. The width is adapted in
/// warm-up so that stepping-out steps make up half of the interval moves
/// (adapt_stat = expansions / (expansions + shrinks)): too narrow an interval mostly expands, too
/// wide a one mostly shrinks.
///
/// The current point is always in its own slice, so with a consistent target the shrinkage ends.
/// If it does not (the cached density is not θ's: a non-finite one, or a target that missed an
/// accept()), the update gives up, the chain stays where it was, and the give-up is counted
/// (Counters::slice_failures) and reported: never a silent inexactness.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"

namespace flymc {

class SliceKernel {
 public:
  SliceKernel(std::size_t p, SliceMode mode) : mode_(mode), point_(p), direction_(p), noise_(p) {}

  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c, const KernelTuning& k) {
    const std::size_t p = point_.size();
    double* dir = direction_.data();
    Moves moves;
    if (mode_ == SliceMode::direction) {
      double norm = 0.0;
      for (std::size_t j = 0; j < p; ++j) {
        noise_[j] = rng.normal();
        norm += noise_[j] * noise_[j];
      }
      norm = 1.0 / std::sqrt(norm);
      for (std::size_t j = 0; j < p; ++j) noise_[j] *= norm;
      k.metric.mul_sqrt(noise_.data(), dir);
      update_1d(rng, s, target, c, dir, k.eps, moves);
    } else {
      for (std::size_t j = 0; j < p; ++j) {
        std::fill(dir, dir + p, 0.0);
        dir[j] = k.metric.scale(j);
        update_1d(rng, s, target, c, dir, k.eps, moves);
      }
    }
    const long total = moves.expansions + moves.shrinks;
    return {1.0,
            total > 0 ? static_cast<double>(moves.expansions) / static_cast<double>(total) : 0.5};
  }

 private:
  struct Moves {
    long expansions = 0, shrinks = 0;
  };
  static constexpr int kMaxSteps = 50;          // Neal's m
  static constexpr long kMaxShrinks = 100'000;  // beyond any consistent target's need

  /// log π at θ + t·dir in point_, −inf outside every slice for a failed density.
  template <class Target>
  double at(const ThetaState& s, Target& target, Counters& c, const double* dir, double t) {
    for (std::size_t j = 0; j < point_.size(); ++j) point_[j] = s.theta[j] + t * dir[j];
    const double lp = target.eval(point_.data(), c);
    if (!theta::failed(lp)) return lp;
    ++c.nonfinite;
    return -std::numeric_limits<double>::infinity();
  }

  /// One univariate slice update along `dir` with initial width w.
  template <class Target>
  void update_1d(Rng& rng, ThetaState& s, Target& target, Counters& c, const double* dir, double w,
                 Moves& moves) {
    const double log_y = s.logp + std::log(rng.uniform_pos());
    double lo = -w * rng.uniform(), hi = lo + w;
    int j = static_cast<int>(std::floor(kMaxSteps * rng.uniform()));
    int k = kMaxSteps - 1 - j;
    while (j-- > 0 && at(s, target, c, dir, lo) > log_y) {
      lo -= w;
      ++moves.expansions;
    }
    while (k-- > 0 && at(s, target, c, dir, hi) > log_y) {
      hi += w;
      ++moves.expansions;
    }
    long shrinks = 0;
    while (true) {
      const double t = lo + (hi - lo) * rng.uniform();
      const double lp = at(s, target, c, dir, t);
      if (lp > log_y) {  // the last evaluation is the accepted point
        std::copy(point_.begin(), point_.end(), s.theta.begin());
        s.logp = lp;
        target.accept();
        return;
      }
      // The point tried is θ itself (the interval has shrunk below θ's resolution) and still
      // outside the slice: the cached density is not θ's. Give up rather than shrink forever.
      if (std::equal(point_.begin(), point_.end(), s.theta.begin())) {
        ++c.slice_failures;
        return;
      }
      ++moves.shrinks;
      ++shrinks;
      if (t < 0.0) {
        lo = t;
      } else {
        hi = t;
      }
      if (!(hi - lo > 0.0) || shrinks > kMaxShrinks) {
        ++c.slice_failures;
        return;
      }
    }
  }

  SliceMode mode_;
  std::vector<double> point_;      // θ + t·dir, the point evaluated
  std::vector<double> direction_;  // the update's direction
  std::vector<double> noise_;      // η, then η/|η|
};

}  // namespace flymc
