#pragma once
/// @file alias_table.hpp
/// Walker's alias method, built by Vose's algorithm (Vose 1991): draws an index i with
/// probability w_i / Σw in O(1) from one 64-bit random word, after an O(n) build. Zig-Zag draws
/// its datum per proposal from one of these (docs/math.md §7.2).
///
/// Thread safety: immutable after construction; draw() may run from any number of threads, each
/// with its own Rng.
#include <cstdint>
#include <vector>

#include "flymc/core/rng.hpp"

namespace flymc {

class AliasTable {
 public:
  AliasTable() = default;
  /// @param w weights, finite and ≥ 0, with a positive sum, at most 2³² − 1 of them.
  /// @throw std::invalid_argument otherwise.
  explicit AliasTable(const std::vector<double>& w);

  /// An index, i with probability w_i / Σw (an index of zero weight is never drawn).
  std::uint32_t draw(Rng& rng) const noexcept {
    // The high word of u·n is a uniform column, the low word a uniform fraction within it.
    const uint128_t m = static_cast<uint128_t>(rng()) * prob_.size();
    const auto k = static_cast<std::uint32_t>(m >> 64);
    const double f = static_cast<double>(static_cast<std::uint64_t>(m) >> 11) * 0x1.0p-53;
    return f < prob_[k] ? k : alias_[k];
  }
  std::size_t size() const noexcept { return prob_.size(); }
  /// Σw, the normalizer of the probabilities.
  double total() const noexcept { return total_; }

 private:
  std::vector<double> prob_;          // column k keeps k with this probability...
  std::vector<std::uint32_t> alias_;  // ...and gives alias_[k] otherwise
  double total_ = 0.0;
};

}  // namespace flymc
