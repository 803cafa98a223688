#pragma once
// The row kernels' bodies, templated on the rows' element type (double, or float widened as it
// is loaded): kernels.cpp instantiates them for double rows, kernels_f32.cpp for float rows, each
// in its own translation unit. Private to kernels/src.
#include <algorithm>
#include <cstddef>

#include "flymc/kernels/kernels.hpp"
#include "simd.hpp"
#include "vmath.hpp"

#if defined(FLYMC_KERNELS_AVX512) || defined(FLYMC_KERNELS_AVX2)

namespace flymc::kernels::rows_impl {

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
  constexpr std::size_t kPerLine = 64 / sizeof(T);
  for (std::size_t j = 0; j < n; j += kPerLine) {
    _mm_prefetch(reinterpret_cast<const char*>(p + j), _MM_HINT_T0);
  }
  // A float row may start mid-line: then its last line is one more.
  if constexpr (sizeof(T) < 8) _mm_prefetch(reinterpret_cast<const char*>(p + n - 1), _MM_HINT_T0);
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

}  // namespace flymc::kernels::rows_impl

#endif
