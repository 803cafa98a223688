#pragma once
/// @file alias_table.hpp
/// Walker's alias method, built by Vose's algorithm (Vose 1991): draws an index i with
/// probability w_i / Σw in O(1) from one 64-bit random word, after an O(n) build. Zig-Zag draws
/// its datum per proposal from one of these (docs/math.md §7.2).
///
/// Thread safety: immutable after construction; draw() may run from any number of threads, each
/// with its own Rng.
#include <cstdint>
#include <span>
#include <vector>

#include "flymc/core/memory.hpp"
#include "flymc/core/rng.hpp"

namespace flymc {

class AliasTable {
 public:
  AliasTable() = default;
  /// @param w weights, finite and ≥ 0, with a positive sum, at most 2³² − 1 of them.
  /// @throw std::invalid_argument otherwise.
  explicit AliasTable(std::span<const double> w);

  /// An index, i with probability w_i / Σw (an index of zero weight is never drawn).
  std::uint32_t draw(Rng& rng) const noexcept { return index(rng()); }
  /// draw() from a random word u drawn ahead: draw(rng) == index(rng()). A sampler that knows
  /// its next draw's word early calls prefetch(u) then, so that index(u) finds its column cached.
  std::uint32_t index(std::uint64_t u) const noexcept {
    // The high word of u·n is a uniform column, the low word a uniform fraction within it.
    const uint128_t m = static_cast<uint128_t>(u) * col_.size();
    const Column& c = col_[static_cast<std::size_t>(m >> 64)];
    const double f = static_cast<double>(static_cast<std::uint64_t>(m) >> 11) * 0x1.0p-53;
    return f < c.prob ? static_cast<std::uint32_t>(m >> 64) : c.alias;
  }
  /// Starts loading the column index(u) reads.
  [[gnu::always_inline]] void prefetch(std::uint64_t u) const noexcept {
    __builtin_prefetch(col_.data() +
                       static_cast<std::size_t>((static_cast<uint128_t>(u) * col_.size()) >> 64));
  }
  std::size_t size() const noexcept { return col_.size(); }
  /// Σw, the normalizer of the probabilities.
  double total() const noexcept { return total_; }

 private:
  // Column k keeps k with probability prob and gives alias otherwise. Both in one 16-byte
  // record, so that a draw reads one cache line; large tables on huge pages (draws land anywhere).
  struct Column {
    double prob;
    std::uint32_t alias;
  };
  std::vector<Column, HugePageAllocator<Column>> col_;
  double total_ = 0.0;
};

}  // namespace flymc
