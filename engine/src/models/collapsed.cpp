#include "flymc/models/collapsed.hpp"

#include <algorithm>
#include <utility>

#include "flymc/kernels/kernels.hpp"

namespace flymc {
namespace {

AlignedBuffer padded(const Vec& v, std::size_t stride) {
  AlignedBuffer p = aligned_zeros(stride);
  std::copy(v.data(), v.data() + v.size(), p.get());
  return p;
}

}  // namespace

CollapsedQuadratic::CollapsedQuadratic(double f0, const Vec& g0, Mat a, const Vec& theta0,
                                       std::size_t stride)
    : a_(std::move(a)),
      theta0_pad_(padded(theta0, stride)),
      g0_pad_(padded(g0, stride)),
      d_(static_cast<std::size_t>(theta0.size())),
      stride_(stride),
      f0_(f0) {
  a_pad_ = aligned_zeros(d_ * stride_);
  for (std::size_t i = 0; i < d_; ++i)
    for (std::size_t j = 0; j < d_; ++j)
      a_pad_[i * stride_ + j] = a_(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
}

double CollapsedQuadratic::evaluate(const double* theta, double* scratch,
                                    double* grad) const noexcept {
  double* delta = scratch;
  double* a_delta = scratch + stride_;
  for (std::size_t j = 0; j < stride_; ++j) delta[j] = theta[j] - theta0_pad_[j];
  kernels::dots_packed(a_pad_.get(), d_, stride_, delta, a_delta);  // Aδ, row by row (A = Aᵀ)
  if (grad != nullptr)
    for (std::size_t j = 0; j < d_; ++j) grad[j] = g0_pad_[j] - 2.0 * a_delta[j];
  return f0_ + kernels::dot(g0_pad_.get(), delta, stride_) - kernels::dot(delta, a_delta, stride_);
}

}  // namespace flymc
