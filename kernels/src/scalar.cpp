// Portable scalar reference implementations (namespace flymc::kernels::scalar). Compiled in every
// build; the public API forwards here when no SIMD path is available.
#include <cmath>
#include <limits>

#include "flymc/kernels/kernels.hpp"

namespace flymc::kernels::scalar {

namespace {
// ln 2 split in two doubles: kLn2Hi is ln 2 correctly rounded, kLn2Lo = RN(ln 2 − kLn2Hi).
constexpr double kLn2Hi = 0x1.62e42fefa39efp-1;
constexpr double kLn2Lo = 0x1.abc9e3b39803fp-56;
}  // namespace

double log_sigmoid(double a) noexcept {
  // min(a,0) − log1p(exp(−|a|)): no overflow for either sign, and no cancellation (both terms
  // are ≤ 0), so the error is that of exp and log1p (≤ 1 ulp each in glibc).
  return std::fmin(a, 0.0) - std::log1p(std::exp(-std::fabs(a)));
}

double log_expm1(double x) noexcept {
  // log(expm1(x)) crosses zero at x = ln 2, where it is ill conditioned: log(expm1(x)) loses all
  // relative accuracy there. Three formulas, each well conditioned on its range:
  //   x ≤ 0.375        log(expm1(x))                    (expm1(x) ≤ 0.455, so |log| ≥ 0.79)
  //   0.375 < x ≤ 2    log1p(2·expm1(x − ln 2))         (e^x − 1 = 1 + 2(e^(x−ln 2) − 1))
  //   x > 2            x + log(−expm1(−x))              (= x + log1p(−e^(−x)))
  // x − ln 2 uses the two-part ln 2: x − kLn2Hi is exact (Sterbenz) on the middle range.
  if (std::isnan(x)) return x;
  if (x < 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0.375) return std::log(std::expm1(x));
  if (x <= 2.0) return std::log1p(2.0 * std::expm1((x - kLn2Hi) - kLn2Lo));
  return x + std::log(-std::expm1(-x));
}

double log1p(double x) noexcept { return std::log1p(x); }

void log1p(const double* x, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::log1p(x[i]);
}

void exp(const double* x, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}

void log(const double* x, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::log(x[i]);
}

void log_sigmoid(const double* a, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = log_sigmoid(a[i]);
}

void log_expm1(const double* x, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = log_expm1(x[i]);
}

namespace {

template <class T>
double dot_t(const T* a, const double* b, std::size_t stride) noexcept {
  double s = 0.0;
  for (std::size_t j = 0; j < stride; ++j) s += static_cast<double>(a[j]) * b[j];
  return s;
}

template <class T>
void dots_packed_t(const T* rows, std::size_t nrows, std::size_t stride, const double* theta,
                   double* out) noexcept {
  for (std::size_t i = 0; i < nrows; ++i) out[i] = dot_t(rows + i * stride, theta, stride);
}

template <class T>
void dots_gather_t(const T* base, std::size_t stride, const Index* idx, std::size_t k,
                   const double* theta, double* out) noexcept {
  for (std::size_t i = 0; i < k; ++i) {
    out[i] = dot_t(base + std::size_t(idx[i]) * stride, theta, stride);
  }
}

template <class T>
double sum_log_sigmoid_signed_t(const T* rows, std::size_t nrows, std::size_t stride,
                                const double* y, const double* theta) noexcept {
  double s = 0.0;
  for (std::size_t i = 0; i < nrows; ++i) {
    s += log_sigmoid(y[i] * dot_t(rows + i * stride, theta, stride));
  }
  return s;
}

template <class T>
void dots_packed_multi_t(const T* rows, std::size_t nrows, std::size_t stride, const double* thetas,
                         std::size_t m, std::size_t tstride, double* out) noexcept {
  for (std::size_t i = 0; i < nrows; ++i)
    for (std::size_t k = 0; k < m; ++k)
      out[i * m + k] = dot_t(rows + i * stride, thetas + k * tstride, stride);
}

template <class T>
void dots_gather_multi_t(const T* base, std::size_t stride, const Index* idx, std::size_t k,
                         const double* thetas, std::size_t m, std::size_t tstride,
                         double* out) noexcept {
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t c = 0; c < m; ++c)
      out[i * m + c] = dot_t(base + std::size_t(idx[i]) * stride, thetas + c * tstride, stride);
}

}  // namespace

double dot(const double* a, const double* b, std::size_t stride) noexcept {
  return dot_t(a, b, stride);
}
void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept {
  dots_packed_t(rows, nrows, stride, theta, out);
}
void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept {
  dots_gather_t(base, stride, idx, k, theta, out);
}
double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept {
  return sum_log_sigmoid_signed_t(rows, nrows, stride, y, theta);
}
void dots_packed_multi(const double* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  dots_packed_multi_t(rows, nrows, stride, thetas, m, tstride, out);
}
void dots_gather_multi(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  dots_gather_multi_t(base, stride, idx, k, thetas, m, tstride, out);
}
double dot(const float* a, const double* b, std::size_t stride) noexcept {
  return dot_t(a, b, stride);
}
void dots_packed(const float* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept {
  dots_packed_t(rows, nrows, stride, theta, out);
}
void dots_gather(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept {
  dots_gather_t(base, stride, idx, k, theta, out);
}
double sum_log_sigmoid_signed(const float* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept {
  return sum_log_sigmoid_signed_t(rows, nrows, stride, y, theta);
}
void dots_packed_multi(const float* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  dots_packed_multi_t(rows, nrows, stride, thetas, m, tstride, out);
}
void dots_gather_multi(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  dots_gather_multi_t(base, stride, idx, k, thetas, m, tstride, out);
}

namespace {
template <class T>
void weighted_row_sum_cols_t(const T* rows, std::size_t nrows, std::size_t stride,
                             std::size_t width, const double* c, std::size_t cstride,
                             double* out) noexcept {
  for (std::size_t i = 0; i < nrows; ++i) {
    const double w = c[i * cstride];
    const T* r = rows + i * stride;
    for (std::size_t j = 0; j < width; ++j) out[j] += w * static_cast<double>(r[j]);
  }
}
}  // namespace

void weighted_row_sum(const double* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, stride, c, cstride, out);
}
void weighted_row_sum_cols(const double* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, width, c, cstride, out);
}
void weighted_row_sum(const float* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, stride, c, cstride, out);
}
void weighted_row_sum_cols(const float* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, width, c, cstride, out);
}

double cubic_form(const double* t, const double* u, std::size_t d) noexcept {
  double s = 0.0;
  for (std::size_t a = 0; a < d; ++a) {
    double sa = 0.0;
    for (std::size_t b = a; b < d; ++b) {
      const std::size_t n = d - b;
      double dot = 0.0;
      for (std::size_t k = 0; k < n; ++k) dot += t[k] * u[b + k];
      sa += u[b] * dot;
      t += (n + 7) / 8 * 8;
    }
    s += u[a] * sa;
  }
  return s;
}

}  // namespace flymc::kernels::scalar
