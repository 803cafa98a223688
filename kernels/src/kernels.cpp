// Portable reference implementations. SIMD specialisations replace the bodies where available.
#include "flymc/kernels/kernels.hpp"

#include <cmath>
#include <limits>

namespace flymc::kernels {

const char* simd_name() noexcept { return "scalar"; }

double log_sigmoid(double a) noexcept {
  // min(a,0) − log1p(exp(−|a|)): no overflow for either sign.
  return std::fmin(a, 0.0) - std::log1p(std::exp(-std::fabs(a)));
}

double log_expm1(double x) noexcept {
  if (x > 1.0) return x + std::log1p(-std::exp(-x));
  return std::log(std::expm1(x));
}

void log_sigmoid(const double* a, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = log_sigmoid(a[i]);
}

void log_expm1(const double* x, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = log_expm1(x[i]);
}

double dot(const double* a, const double* b, std::size_t stride) noexcept {
  double s = 0.0;
  for (std::size_t j = 0; j < stride; ++j) s += a[j] * b[j];
  return s;
}

void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept {
  for (std::size_t i = 0; i < nrows; ++i) out[i] = dot(rows + i * stride, theta, stride);
}

void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept {
  for (std::size_t i = 0; i < k; ++i) out[i] = dot(base + std::size_t(idx[i]) * stride, theta, stride);
}

double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept {
  double s = 0.0;
  for (std::size_t i = 0; i < nrows; ++i) s += log_sigmoid(y[i] * dot(rows + i * stride, theta, stride));
  return s;
}

}  // namespace flymc::kernels
