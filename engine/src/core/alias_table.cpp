#include "flymc/core/alias_table.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "flymc/core/parallel.hpp"

namespace flymc {

AliasTable::AliasTable(std::span<const double> w) {
  const std::size_t n = w.size();
  if (n == 0 || n > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("alias table: 1 to 2^32 - 1 weights");
  for (double x : w) {
    if (!(std::isfinite(x) && x >= 0.0))
      throw std::invalid_argument("alias table: a weight is negative or not finite");
    total_ += x;
  }
  if (!(total_ > 0.0 && std::isfinite(total_)))
    throw std::invalid_argument("alias table: the weights' sum is not a positive number");
  col_.resize(n);
  detail::build_alias_columns(w, total_, col_);
}

void detail::build_alias_columns(std::span<const double> w, double total,
                                 std::span<AliasColumn> col) {
  const std::size_t n = w.size();
  // Vose: columns scaled to mean 1; each short column is topped up from one long column.
  std::vector<std::uint32_t> small, large;
  const double scale = static_cast<double>(n) / total;
  for (std::size_t i = 0; i < n; ++i) {
    col[i] = {w[i] * scale, static_cast<std::uint32_t>(i)};
    (col[i].prob < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const std::uint32_t s = small.back(), l = large.back();
    small.pop_back();
    col[s].alias = l;
    col[l].prob -= 1.0 - col[s].prob;
    if (col[l].prob < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left holds a full column up to rounding; it must never give its column away.
  for (std::uint32_t i : large) col[i].prob = 1.0;
  for (std::uint32_t i : small) col[i].prob = 1.0;
}

BlockAliasTable::BlockAliasTable(std::span<const double> w, std::size_t block)
    : BlockAliasTable(w.size(), block, [w](std::size_t first, std::span<double> out) {
        std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(first), out.size(), out.begin());
      }) {}

BlockAliasTable::BlockAliasTable(
    std::size_t n, std::size_t block,
    const std::function<void(std::size_t first, std::span<double> w)>& weights)
    : block_(block) {
  if (block == 0 || block > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("block alias table: blocks of 1 to 2^32 - 1 weights");
  col_.resize(n);  // unwritten: each block's task writes (and first touches) its columns
  std::atomic<bool> bad{false};
  chunked_for(blocks(), 1, [&](std::size_t lo, std::size_t hi) {
    std::vector<double> w(block_);
    for (std::size_t b = lo; b < hi; ++b) {
      const std::size_t first = b * block_, m = rows(b);
      const std::span<double> wb = std::span(w).first(m);
      weights(first, wb);
      double total = 0.0;
      for (const double x : wb) {
        if (!(std::isfinite(x) && x >= 0.0)) bad = true;
        total += x;
      }
      const std::span<detail::AliasColumn> col = std::span(col_).subspan(first, m);
      if (total > 0.0 && std::isfinite(total))
        detail::build_alias_columns(wb, total, col);
      else
        std::fill(col.begin(), col.end(), detail::AliasColumn{1.0, 0});
    }
  });
  if (bad) throw std::invalid_argument("block alias table: a weight is negative or not finite");
}

}  // namespace flymc
