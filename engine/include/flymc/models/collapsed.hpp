#pragma once
/// @file collapsed.hpp
/// The form every one-predictor bound collapses into (docs/math.md §2): the sum over the data of
/// log B_n(θ) is a quadratic in θ, kept anchored at θ0 for accuracy,
///   Σ_n log B_n(θ) = f0 + g0·δ − δᵀAδ,  δ = θ − θ0,  ∇ = g0 − 2Aδ,
/// evaluated in O(D²) from padded copies, independent of N.
#include <cstddef>

#include "flymc/core/memory.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// Thread safety: immutable after construction (except add_constant); evaluate() may be called
/// concurrently.
class CollapsedQuadratic {
 public:
  CollapsedQuadratic() = default;
  /// `a` symmetric D×D, `g0` and `theta0` D entries; the padded copies have `stride` ≥ D.
  CollapsedQuadratic(double f0, const Vec& g0, Mat a, const Vec& theta0, std::size_t stride);

  /// The sum at padded θ (stride entries); `scratch` is caller-owned, scratch_size() aligned
  /// doubles. With a non-null `grad` the gradient g0 − 2Aδ is written there (D entries).
  double evaluate(const double* theta, double* scratch, double* grad) const noexcept;
  std::size_t scratch_size() const noexcept { return 2 * stride_; }
  /// Adds c to f0 (a slack or a test's raised bound: a constant per datum, summed).
  void add_constant(double c) noexcept { f0_ += c; }
  void set_constant(double f0) noexcept { f0_ = f0; }
  const Mat& A() const noexcept { return a_; }
  /// θ0 padded to stride (for a pass over the data at the anchor).
  const double* theta0_padded() const noexcept { return theta0_pad_.get(); }

 private:
  Mat a_;
  AlignedBuffer a_pad_, theta0_pad_, g0_pad_;  // A's rows, θ0 and g0 padded for SIMD dots
  std::size_t d_ = 0, stride_ = 0;
  double f0_ = 0.0;
};

}  // namespace flymc
