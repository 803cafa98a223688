#include "flymc/core/alias_table.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

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
  // Vose: columns scaled to mean 1; each short column is topped up from one long column.
  std::vector<std::uint32_t> small, large;
  const double scale = static_cast<double>(n) / total_;
  for (std::size_t i = 0; i < n; ++i) {
    col_[i] = {w[i] * scale, static_cast<std::uint32_t>(i)};
    (col_[i].prob < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const std::uint32_t s = small.back(), l = large.back();
    small.pop_back();
    col_[s].alias = l;
    col_[l].prob -= 1.0 - col_[s].prob;
    if (col_[l].prob < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left holds a full column up to rounding; it must never give its column away.
  for (std::uint32_t i : large) col_[i].prob = 1.0;
  for (std::uint32_t i : small) col_[i].prob = 1.0;
}

}  // namespace flymc
