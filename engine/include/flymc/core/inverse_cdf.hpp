#pragma once
/// @file inverse_cdf.hpp
/// Draws an index i with probability w_i / Σw by inverting the cumulative sums of the weights at
/// a point t in [0, 1): increasing points give non-decreasing indices, so the points of a Poisson
/// process, which come in increasing order, pick indices already sorted. A guide table (Chen &
/// Asau 1974) starts each search next to its answer, so a draw takes O(1) steps on average.
///
/// Thread safety: immutable after construction.
#include <cstdint>
#include <span>
#include <vector>

namespace flymc {

class InverseCdf {
 public:
  InverseCdf() = default;
  /// @param w weights, finite and ≥ 0, with a positive sum.
  /// @throw std::invalid_argument otherwise.
  explicit InverseCdf(std::span<const double> w);

  /// The first i whose cumulative weight exceeds t·Σw (t in [0, 1)); never an index of zero
  /// weight.
  std::uint32_t index(double t) const noexcept {
    const double target = t * total_;
    if (!(target < cum_.back())) return last_;  // t rounded up to the very end
    const auto g = static_cast<std::size_t>(t * static_cast<double>(guide_.size()));
    std::uint32_t i = guide_[g < guide_.size() ? g : guide_.size() - 1];
    while (!(cum_[i] > target)) ++i;
    return i;
  }
  std::size_t size() const noexcept { return cum_.size(); }
  double total() const noexcept { return total_; }

 private:
  std::vector<double> cum_;           // cum_[i] = w_0 + … + w_i, summed in order
  std::vector<std::uint32_t> guide_;  // guide_[j]: the answer for t = j / guide_.size()
  double total_ = 0.0;                // cum_.back()
  std::uint32_t last_ = 0;            // the last index of positive weight
};

}  // namespace flymc
