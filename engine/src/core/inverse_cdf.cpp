#include "flymc/core/inverse_cdf.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace flymc {

InverseCdf::InverseCdf(std::span<const double> w) {
  if (w.empty() || w.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("inverse CDF: 1 to 2^32 - 1 weights");
  cum_.resize(w.size());
  double s = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!(std::isfinite(w[i]) && w[i] >= 0.0))
      throw std::invalid_argument("inverse CDF: a weight is negative or not finite");
    s += w[i];
    cum_[i] = s;
    if (w[i] > 0.0) last_ = static_cast<std::uint32_t>(i);
  }
  total_ = s;
  if (!(total_ > 0.0 && std::isfinite(total_)))
    throw std::invalid_argument("inverse CDF: the weights' sum is not a positive number");
  // One guide entry per index: the answer for the smallest t of its slot (a little below it, so
  // that rounding in index()'s slot cannot put a point before its slot's entry); index() scans
  // on from there.
  guide_.resize(w.size());
  std::uint32_t i = 0;
  for (std::size_t j = 0; j < guide_.size(); ++j) {
    const double target =
        static_cast<double>(j) / static_cast<double>(guide_.size()) * total_ * (1.0 - 1e-9);
    while (i < last_ && !(cum_[i] > target)) ++i;
    guide_[j] = i;
  }
}

}  // namespace flymc
