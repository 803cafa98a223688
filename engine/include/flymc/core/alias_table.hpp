#pragma once
/// @file alias_table.hpp
/// Walker's alias method, built by Vose's algorithm (Vose 1991): draws an index i with
/// probability w_i / Σw in O(1) from one 64-bit random word, after an O(n) build. Zig-Zag draws
/// its datum per proposal from one of these (docs/math.md §7.2).
///
/// Thread safety: immutable after construction; draw() may run from any number of threads, each
/// with its own Rng.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "flymc/core/memory.hpp"
#include "flymc/core/rng.hpp"

namespace flymc {

namespace detail {
/// Column k of an alias table keeps k with probability prob and gives alias otherwise. Both in
/// one 16-byte record, so that a draw reads one cache line; large tables on huge pages (draws
/// land anywhere).
struct AliasColumn {
  double prob;
  std::uint32_t alias;
};
/// Fills `col` (w.size() columns) with Vose's table for the weights `w` of sum `total` > 0.
void build_alias_columns(std::span<const double> w, double total, std::span<AliasColumn> col);
/// The column a word u picks of `n` columns and whether it keeps it: index(u) in [0, n).
inline std::uint32_t alias_index(const AliasColumn* col, std::size_t n, std::uint64_t u) noexcept {
  // The high word of u·n is a uniform column, the low word a uniform fraction within it.
  const uint128_t m = static_cast<uint128_t>(u) * n;
  const AliasColumn& c = col[static_cast<std::size_t>(m >> 64)];
  const double f = static_cast<double>(static_cast<std::uint64_t>(m) >> 11) * 0x1.0p-53;
  return f < c.prob ? static_cast<std::uint32_t>(m >> 64) : c.alias;
}
}  // namespace detail

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
    return detail::alias_index(col_.data(), col_.size(), u);
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
  using Column = detail::AliasColumn;
  std::vector<Column, HugePageAllocator<Column>> col_;
  double total_ = 0.0;
};

/// Alias tables of the consecutive blocks of `block` weights of one array (the last block may be
/// shorter), all in one array on huge pages: index(b, u) draws a position within block b with
/// probability w_i / Σ_{i in b} w_i. Scalable MH draws a candidate's block first, then its row
/// (docs/math.md §8). Immutable after construction, as AliasTable.
class BlockAliasTable {
 public:
  BlockAliasTable() = default;
  /// Builds the blocks' tables in parallel (oneTBB). A block of zero weight gets no table and
  /// must never be asked for a draw.
  /// @throw std::invalid_argument for a negative or non-finite weight, or block = 0.
  BlockAliasTable(std::span<const double> w, std::size_t block);
  /// The same for n weights that `weights(first, w)` writes a block at a time (w: the block's
  /// rows(b) weights, from index `first`), called once per block from oneTBB's threads: for
  /// weights kept elsewhere, without an array of all of them.
  BlockAliasTable(std::size_t n, std::size_t block,
                  const std::function<void(std::size_t first, std::span<double> w)>& weights);

  /// A position in [0, rows of block b), with probability proportional to its weight.
  std::uint32_t index(std::size_t b, std::uint64_t u) const noexcept {
    return detail::alias_index(col_.data() + b * block_, rows(b), u);
  }
  /// Starts loading the column index(b, u) reads.
  [[gnu::always_inline]] void prefetch(std::size_t b, std::uint64_t u) const noexcept {
    __builtin_prefetch(col_.data() + b * block_ +
                       static_cast<std::size_t>((static_cast<uint128_t>(u) * rows(b)) >> 64));
  }
  std::size_t blocks() const noexcept {
    return block_ == 0 ? 0 : (col_.size() + block_ - 1) / block_;
  }
  std::size_t rows(std::size_t b) const noexcept {
    return std::min(block_, col_.size() - b * block_);
  }

 private:
  std::vector<detail::AliasColumn, HugePageUninitAllocator<detail::AliasColumn>> col_;
  std::size_t block_ = 0;
};

}  // namespace flymc
