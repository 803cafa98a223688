#pragma once
/// @file predictors.hpp
/// The linear predictors ψ = Θx of data rows at a padded θ, by the SIMD kernels: of rows gathered
/// by index (a z-sweep's candidates) or of contiguous rows (the packed bright set). K = 1 for
/// logistic and robust regression, K classes for softmax.
#include <cstddef>

#include "flymc/data/dataset.hpp"
#include "flymc/kernels/kernels.hpp"

namespace flymc {

/// The K linear predictors of gathered rows base[idx[i]] at padded θ (K blocks of `stride`).
inline void gather_predictors(std::size_t K, const Dataset& data, const Index* idx, std::size_t k,
                              const double* theta_pad, double* out) noexcept {
  if (K == 1) {
    data.dots_gather(idx, k, theta_pad, out);
  } else {
    data.dots_gather_multi(idx, k, theta_pad, K, data.stride(), out);
  }
}
/// The same for rows [lo, hi) of `data`.
inline void range_predictors(std::size_t K, const Dataset& data, std::size_t lo, std::size_t hi,
                             const double* theta_pad, double* out) noexcept {
  if (K == 1) {
    data.dots(lo, hi, theta_pad, out);
  } else {
    data.dots_multi(lo, hi, theta_pad, K, data.stride(), out);
  }
}
/// The same for contiguous rows of doubles.
inline void packed_predictors(std::size_t K, const double* rows, std::size_t nrows,
                              std::size_t stride, const double* theta_pad, double* out) noexcept {
  if (K == 1) {
    kernels::dots_packed(rows, nrows, stride, theta_pad, out);
  } else {
    kernels::dots_packed_multi(rows, nrows, stride, theta_pad, K, stride, out);
  }
}

}  // namespace flymc
