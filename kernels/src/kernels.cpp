// The public kernel API: the SIMD path picked at compile time (simd.hpp), or the scalar reference
// (scalar.cpp) when the target has neither AVX-512 nor AVX2+FMA.
#include "flymc/kernels/kernels.hpp"

#include <algorithm>
#include <cstddef>

#include "row_kernels.hpp"
#include "simd.hpp"
#include "vmath.hpp"

namespace flymc::kernels {

#if defined(FLYMC_KERNELS_AVX512) || defined(FLYMC_KERNELS_AVX2)

namespace {

using simd::kLanes;
using simd::vd;

// ---- Element functions ----------------------------------------------------------------------

template <vd (*F)(vd)>
inline void map(const double* in, double* out, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) simd::storeu(out + i, F(simd::loadu(in + i)));
  if (i < n) {  // tail through a zero-padded buffer; lanes are independent
    double buf[kLanes] = {};
    std::copy(in + i, in + n, buf);
    simd::storeu(buf, F(simd::loadu(buf)));
    std::copy(buf, buf + (n - i), out + i);
  }
}

/// The same vector function on one value, in a 128-bit register: the scalar and array entry
/// points agree bit for bit.
template <simd::v1 (*F)(simd::v1)>
inline double map1(double x) noexcept {
  return _mm_cvtsd_f64(F(simd::set1<simd::v1>(x)));
}

}  // namespace

const char* simd_name() noexcept { return simd::kName; }
std::size_t simd_lanes() noexcept { return kLanes; }

double log_sigmoid(double a) noexcept { return map1<simd::log_sigmoid<simd::v1>>(a); }
double log_expm1(double x) noexcept { return map1<simd::log_expm1<simd::v1>>(x); }
double log1p(double x) noexcept { return map1<simd::log1p<simd::v1>>(x); }

void log_sigmoid(const double* a, double* out, std::size_t n) noexcept {
  map<simd::log_sigmoid<vd>>(a, out, n);
}
void log_expm1(const double* x, double* out, std::size_t n) noexcept {
  map<simd::log_expm1<vd>>(x, out, n);
}
void log1p(const double* x, double* out, std::size_t n) noexcept {
  map<simd::log1p<vd>>(x, out, n);
}
namespace {
inline vd log_plain(vd x) noexcept {
  return simd::log_corrected(x, simd::sub(x, simd::set1<vd>(1.0)), simd::zero<vd>());
}
}  // namespace
void exp(const double* x, double* out, std::size_t n) noexcept { map<simd::exp<vd>>(x, out, n); }
void log(const double* x, double* out, std::size_t n) noexcept { map<log_plain>(x, out, n); }

using namespace rows_impl;

double dot(const double* a, const double* b, std::size_t stride) noexcept {
  return dot_row(a, b, stride);
}
void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept {
  dots_packed_t(rows, nrows, stride, theta, out);
}
void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept {
  dots_gather_t(base, stride, idx, k, theta, out);
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
double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept {
  return sum_log_sigmoid_signed_t(rows, nrows, stride, y, theta);
}
void weighted_row_sum(const double* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  weighted_row_sum_t(rows, nrows, stride, c, cstride, out);
}
void weighted_row_sum_cols(const double* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, width, c, cstride, out);
}

#else  // no SIMD path: the scalar reference

const char* simd_name() noexcept { return "scalar"; }
std::size_t simd_lanes() noexcept { return 1; }

double log_sigmoid(double a) noexcept { return scalar::log_sigmoid(a); }
double log_expm1(double x) noexcept { return scalar::log_expm1(x); }
double log1p(double x) noexcept { return scalar::log1p(x); }
void log_sigmoid(const double* a, double* out, std::size_t n) noexcept {
  scalar::log_sigmoid(a, out, n);
}
void log_expm1(const double* x, double* out, std::size_t n) noexcept {
  scalar::log_expm1(x, out, n);
}
void log1p(const double* x, double* out, std::size_t n) noexcept { scalar::log1p(x, out, n); }
void exp(const double* x, double* out, std::size_t n) noexcept { scalar::exp(x, out, n); }
void log(const double* x, double* out, std::size_t n) noexcept { scalar::log(x, out, n); }
double dot(const double* a, const double* b, std::size_t stride) noexcept {
  return scalar::dot(a, b, stride);
}
void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept {
  scalar::dots_packed(rows, nrows, stride, theta, out);
}
void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept {
  scalar::dots_gather(base, stride, idx, k, theta, out);
}
double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept {
  return scalar::sum_log_sigmoid_signed(rows, nrows, stride, y, theta);
}
void dots_packed_multi(const double* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  scalar::dots_packed_multi(rows, nrows, stride, thetas, m, tstride, out);
}
void dots_gather_multi(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  scalar::dots_gather_multi(base, stride, idx, k, thetas, m, tstride, out);
}
void weighted_row_sum(const double* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  scalar::weighted_row_sum(rows, nrows, stride, c, cstride, out);
}
void weighted_row_sum_cols(const double* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  scalar::weighted_row_sum_cols(rows, nrows, stride, width, c, cstride, out);
}

#endif

}  // namespace flymc::kernels
