// The public kernel API: the SIMD path picked at compile time (simd.hpp), or the scalar reference
// (scalar.cpp) when the target has neither AVX-512 nor AVX2+FMA.
#include "flymc/kernels/kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "simd.hpp"
#include "vmath.hpp"

namespace flymc::kernels {

#if defined(FLYMC_KERNELS_AVX512) || defined(FLYMC_KERNELS_AVX2)

namespace {

using simd::kLanes;
using simd::vd;

// ---- Row dot products ---------------------------------------------------------------------
//
// Every kernel sums a row in the same order, so a row's dot product is bit-identical whether it
// comes from dot, dots_packed, dots_gather or sum_log_sigmoid_signed: two vector accumulators per
// row (two independent FMA chains), added together, then reduced across lanes by simd::hsum's
// fixed tree (simd::hsum_rows reproduces it for kLanes rows at once).
//   AVX-512: the row is read in 8-double chunks; acc0 takes the even chunks, acc1 the odd ones.
//   AVX2:    each 8-double chunk is two registers; acc0 takes the low half, acc1 the high half.

/// acc[r] = lane-wise partial sums of rows[r]·theta, r < R. Rows of floats are widened as they
/// are loaded, so a float row's sums are bit-identical to those of the same values as doubles.
template <std::size_t R, class T>
inline void accumulate_rows(const T* const* rows, const double* theta, std::size_t stride,
                            vd* acc) noexcept {
  vd a0[R], a1[R];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) a0[r] = a1[r] = simd::zero<vd>();
#if defined(FLYMC_KERNELS_AVX512)
  std::size_t j = 0;
  for (; j + 16 <= stride; j += 16) {
    const vd t0 = simd::loadu(theta + j), t1 = simd::loadu(theta + j + 8);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      a0[r] = simd::fmadd(simd::loadu(rows[r] + j), t0, a0[r]);
      a1[r] = simd::fmadd(simd::loadu(rows[r] + j + 8), t1, a1[r]);
    }
  }
  if (j < stride) {
    const vd t0 = simd::loadu(theta + j);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) a0[r] = simd::fmadd(simd::loadu(rows[r] + j), t0, a0[r]);
  }
#else
  for (std::size_t j = 0; j < stride; j += 8) {
    const vd t0 = simd::loadu(theta + j), t1 = simd::loadu(theta + j + 4);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      a0[r] = simd::fmadd(simd::loadu(rows[r] + j), t0, a0[r]);
      a1[r] = simd::fmadd(simd::loadu(rows[r] + j + 4), t1, a1[r]);
    }
  }
#endif
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) acc[r] = simd::add(a0[r], a1[r]);
}

template <class T>
inline double dot_row(const T* row, const double* theta, std::size_t stride) noexcept {
  vd acc;
  accumulate_rows<1>(&row, theta, stride, &acc);
  return simd::hsum(acc);
}

/// Lane r = rows[r]·theta, r < kLanes.
template <class T>
inline vd dot_rows(const T* const* rows, const double* theta, std::size_t stride) noexcept {
  vd acc[kLanes];
  accumulate_rows<kLanes>(rows, theta, stride, acc);
  return simd::hsum_rows(acc);
}

// The prefetch helpers are forced inline: with GCC 12 -O3, a non-inlined (split-out) prefetch
// helper was seen to be dropped as free of side effects, leaving no prefetch in the binary.

/// Requests the cache lines of n values from p on into L1.
template <class T>
[[gnu::always_inline]] inline void prefetch_span(const T* p, std::size_t n) noexcept {
  const auto first = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{63};
  const auto end = reinterpret_cast<std::uintptr_t>(p + n);
  for (std::uintptr_t a = first; a < end; a += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T0);
  }
}

/// Streaming over contiguous rows: blocks of at least kStreamMinBytes are assumed to come from
/// DRAM, and each row group also requests the group kStreamAheadRows rows ahead. Measured on
/// EPYC (Zen 4, d = 51): −25% time for sum_log_sigmoid_signed at N = 10^6 (the hardware
/// prefetcher alone falls behind the arithmetic), but +20–35% on cache-resident blocks (N = 150,
/// 10^4), hence the threshold.
constexpr std::size_t kStreamMinBytes = std::size_t{8} << 20;
constexpr std::size_t kStreamAheadRows = 8;

/// Prefetch for row group [i, i + kLanes) of a contiguous block, if streaming.
template <class T>
[[gnu::always_inline]] inline void stream_ahead(bool streaming, const T* rows, std::size_t i,
                                                std::size_t nrows, std::size_t stride) noexcept {
  if (streaming && i + kStreamAheadRows + kLanes <= nrows) {
    prefetch_span(rows + (i + kStreamAheadRows) * stride, kLanes * stride);
  }
}

template <class T>
inline bool is_streaming(std::size_t nrows, std::size_t stride) noexcept {
  return nrows * stride * sizeof(T) >= kStreamMinBytes;
}

/// How many rows ahead dots_gather prefetches: enough rows in flight to cover DRAM latency
/// (~100 ns against a few ns of arithmetic per row), few enough not to evict what is still
/// needed (bench/bm_kernels.cpp measures the gathered dots; the optimum is flat around this).
constexpr std::size_t kGatherAhead = 16;

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

namespace {

template <class T>
void dots_packed_t(const T* rows, std::size_t nrows, std::size_t stride, const double* theta,
                   double* out) noexcept {
  const bool streaming = is_streaming<T>(nrows, stride);
  std::size_t i = 0;
  for (; i + kLanes <= nrows; i += kLanes) {
    stream_ahead(streaming, rows, i, nrows, stride);
    const T* p[kLanes];
    for (std::size_t r = 0; r < kLanes; ++r) p[r] = rows + (i + r) * stride;
    simd::storeu(out + i, dot_rows(p, theta, stride));
  }
  for (; i < nrows; ++i) out[i] = dot_row(rows + i * stride, theta, stride);
}

template <class T>
void dots_gather_t(const T* base, std::size_t stride, const Index* idx, std::size_t k,
                   const double* theta, double* out) noexcept {
  auto row = [&](std::size_t i) { return base + std::size_t(idx[i]) * stride; };
  for (std::size_t i = 0; i < std::min(k, kGatherAhead); ++i) prefetch_span(row(i), stride);
  std::size_t i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    const std::size_t pend = std::min(k, i + kGatherAhead + kLanes);
    for (std::size_t q = i + kGatherAhead; q < pend; ++q) prefetch_span(row(q), stride);
    const T* p[kLanes];
    for (std::size_t r = 0; r < kLanes; ++r) p[r] = row(i + r);
    simd::storeu(out + i, dot_rows(p, theta, stride));
  }
  for (; i < k; ++i) out[i] = dot_row(row(i), theta, stride);
}

template <class T>
void dots_packed_multi_t(const T* rows, std::size_t nrows, std::size_t stride, const double* thetas,
                         std::size_t m, std::size_t tstride, double* out) noexcept {
  const bool streaming = is_streaming<T>(nrows, stride);
  std::size_t i = 0;
  for (; i + kLanes <= nrows; i += kLanes) {
    stream_ahead(streaming, rows, i, nrows, stride);
    const T* p[kLanes];
    for (std::size_t r = 0; r < kLanes; ++r) p[r] = rows + (i + r) * stride;
    // The group's rows (kLanes · stride doubles) stay in L1 across the m passes.
    for (std::size_t k = 0; k < m; ++k) {
      alignas(64) double v[kLanes];
      simd::storeu(v, dot_rows(p, thetas + k * tstride, stride));
      for (std::size_t r = 0; r < kLanes; ++r) out[(i + r) * m + k] = v[r];
    }
  }
  for (; i < nrows; ++i)
    for (std::size_t k = 0; k < m; ++k)
      out[i * m + k] = dot_row(rows + i * stride, thetas + k * tstride, stride);
}

template <class T>
void dots_gather_multi_t(const T* base, std::size_t stride, const Index* idx, std::size_t k,
                         const double* thetas, std::size_t m, std::size_t tstride,
                         double* out) noexcept {
  auto row = [&](std::size_t i) { return base + std::size_t(idx[i]) * stride; };
  for (std::size_t i = 0; i < std::min(k, kGatherAhead); ++i) prefetch_span(row(i), stride);
  std::size_t i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    const std::size_t pend = std::min(k, i + kGatherAhead + kLanes);
    for (std::size_t q = i + kGatherAhead; q < pend; ++q) prefetch_span(row(q), stride);
    const T* p[kLanes];
    for (std::size_t r = 0; r < kLanes; ++r) p[r] = row(i + r);
    for (std::size_t c = 0; c < m; ++c) {
      alignas(64) double v[kLanes];
      simd::storeu(v, dot_rows(p, thetas + c * tstride, stride));
      for (std::size_t r = 0; r < kLanes; ++r) out[(i + r) * m + c] = v[r];
    }
  }
  for (; i < k; ++i)
    for (std::size_t c = 0; c < m; ++c)
      out[i * m + c] = dot_row(row(i), thetas + c * tstride, stride);
}

template <class T>
double sum_log_sigmoid_signed_t(const T* rows, std::size_t nrows, std::size_t stride,
                                const double* y, const double* theta) noexcept {
  const bool streaming = is_streaming<T>(nrows, stride);
  vd total = simd::zero<vd>();
  std::size_t i = 0;
  for (; i + kLanes <= nrows; i += kLanes) {
    stream_ahead(streaming, rows, i, nrows, stride);
    const T* p[kLanes];
    for (std::size_t r = 0; r < kLanes; ++r) p[r] = rows + (i + r) * stride;
    const vd z = simd::mul(simd::loadu(y + i), dot_rows(p, theta, stride));
    total = simd::add(total, simd::log_sigmoid(z));
  }
  if (i < nrows) {  // last partial group: unused lanes masked out of the sum
    const std::size_t rem = nrows - i;
    double z[kLanes] = {};
    for (std::size_t r = 0; r < rem; ++r)
      z[r] = y[i + r] * dot_row(rows + (i + r) * stride, theta, stride);
    const vd ls = simd::log_sigmoid(simd::loadu(z));
    total = simd::add(total, simd::select(simd::first_lanes(rem), ls, simd::zero<vd>()));
  }
  return simd::hsum(total);
}

}  // namespace

double dot(const double* a, const double* b, std::size_t stride) noexcept {
  return dot_row(a, b, stride);
}
double dot(const float* a, const double* b, std::size_t stride) noexcept {
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

namespace {

template <class T>
void weighted_row_sum_cols_t(const T* rows, std::size_t nrows, std::size_t stride,
                             std::size_t width, const double* c, std::size_t cstride,
                             double* out) noexcept {
  // Columns in panels of up to kPanel registers held across all rows: every row is read once per
  // panel (once in all when width ≤ kPanel·kLanes, e.g. 64 doubles on AVX-512), and each lane
  // sums its rows in index order.
  constexpr std::size_t kPanel = 8;
  const std::size_t nreg = width / kLanes;
  for (std::size_t r0 = 0; r0 < nreg; r0 += kPanel) {
    const std::size_t nr = std::min(kPanel, nreg - r0);
    vd acc[kPanel];
    for (std::size_t r = 0; r < nr; ++r) acc[r] = simd::loadu(out + (r0 + r) * kLanes);
    if (nr == kPanel) {
      for (std::size_t i = 0; i < nrows; ++i) {
        const vd w = simd::set1<vd>(c[i * cstride]);
        const T* x = rows + i * stride + r0 * kLanes;
#pragma GCC unroll 8
        for (std::size_t r = 0; r < kPanel; ++r)
          acc[r] = simd::fmadd(w, simd::loadu(x + r * kLanes), acc[r]);
      }
    } else {
      for (std::size_t i = 0; i < nrows; ++i) {
        const vd w = simd::set1<vd>(c[i * cstride]);
        const T* x = rows + i * stride + r0 * kLanes;
        for (std::size_t r = 0; r < nr; ++r)
          acc[r] = simd::fmadd(w, simd::loadu(x + r * kLanes), acc[r]);
      }
    }
    for (std::size_t r = 0; r < nr; ++r) simd::storeu(out + (r0 + r) * kLanes, acc[r]);
  }
}

template <class T>
void weighted_row_sum_t(const T* rows, std::size_t nrows, std::size_t stride, const double* c,
                        std::size_t cstride, double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, stride, c, cstride, out);
}

}  // namespace

void weighted_row_sum(const double* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  weighted_row_sum_t(rows, nrows, stride, c, cstride, out);
}
void weighted_row_sum_cols(const double* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  weighted_row_sum_cols_t(rows, nrows, stride, width, c, cstride, out);
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
void weighted_row_sum(const double* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept {
  scalar::weighted_row_sum(rows, nrows, stride, c, cstride, out);
}
void weighted_row_sum_cols(const double* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept {
  scalar::weighted_row_sum_cols(rows, nrows, stride, width, c, cstride, out);
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
