// The row kernels on rows stored as floats (`--storage f32`): the bodies of row_kernels.hpp,
// instantiated for float in their own translation unit (kernels.cpp has the double ones), or the
// scalar reference when the target has no SIMD path.
#include "flymc/kernels/kernels.hpp"
#include "row_kernels.hpp"

namespace flymc::kernels {

#if defined(FLYMC_KERNELS_AVX512) || defined(FLYMC_KERNELS_AVX2)

using namespace rows_impl;

double dot(const float* a, const double* b, std::size_t stride) noexcept {
  return dot_row(a, b, stride);
}
void dots_packed(const float* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept {
  dots_packed_t(rows, nrows, stride, theta, out);
}
void dots_gather(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept {
  dots_gather_t(base, stride, idx, k, theta, out);
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
double sum_log_sigmoid_signed(const float* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept {
  return sum_log_sigmoid_signed_t(rows, nrows, stride, y, theta);
}
void weighted_row_sum(const float* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  weighted_row_sum_t(rows, nrows, stride, c, cstride, out);
}
void weighted_row_sum_cols(const float* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, width, c, cstride, out);
}

#else  // no SIMD path: the scalar reference

double dot(const float* a, const double* b, std::size_t stride) noexcept {
  return scalar::dot(a, b, stride);
}
void dots_packed(const float* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept {
  scalar::dots_packed(rows, nrows, stride, theta, out);
}
void dots_gather(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept {
  scalar::dots_gather(base, stride, idx, k, theta, out);
}
double sum_log_sigmoid_signed(const float* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept {
  return scalar::sum_log_sigmoid_signed(rows, nrows, stride, y, theta);
}
void dots_packed_multi(const float* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  scalar::dots_packed_multi(rows, nrows, stride, thetas, m, tstride, out);
}
void dots_gather_multi(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept {
  scalar::dots_gather_multi(base, stride, idx, k, thetas, m, tstride, out);
}
void weighted_row_sum(const float* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  scalar::weighted_row_sum(rows, nrows, stride, c, cstride, out);
}
void weighted_row_sum_cols(const float* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  scalar::weighted_row_sum_cols(rows, nrows, stride, width, c, cstride, out);
}

#endif

}  // namespace flymc::kernels
