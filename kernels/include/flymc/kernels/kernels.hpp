#pragma once
/// @file kernels.hpp
/// Numeric hot loops with no notion of MCMC: row dot products over 64-byte aligned, zero-padded
/// rows, and log-space elementwise functions. SIMD paths (AVX-512, AVX2+FMA) are chosen at compile
/// time from the target flags; a portable scalar path is always available (namespace `scalar`).
///
/// Conventions: `stride` is a multiple of 8 (see flymc::padded_stride); row pointers and `theta`
/// are 64-byte aligned and padded with zeros up to `stride`, so kernels never need tail handling.
/// (Alignment is for speed; misaligned pointers still give correct results.)
///
/// Accuracy: log_sigmoid, log_expm1 and log1p are within 4 ulp of the exact result wherever it is
/// not tiny (|result| ≥ 1e-300; absolute error ≤ 1e-300 below), on every path; the SIMD paths use
/// their own vectorized exp/expm1/log/log1p, no libm. Measured maxima (tests/test_kernels.cpp, ~2M
/// points): log_sigmoid 1.45 ulp, log_expm1 2.52 ulp, log1p 0.75 ulp (AVX-512 and AVX2). Special
/// values: log_sigmoid(−inf) = −inf, log_sigmoid(+inf) = 0; log_expm1(0) = −inf, log_expm1(+inf) =
/// +inf, log_expm1(x < 0) = NaN; NaN in gives NaN out.
///
/// Reproducibility: results depend only on the inputs (no threads, no state, fixed summation
/// order), so repeated calls are bit-identical. Within one build, a row's dot product is
/// bit-identical whichever of dot, dots_packed and dots_gather computes it, and the scalar and
/// array forms of log_sigmoid / log_expm1 agree bit for bit. Different builds (SIMD paths) agree
/// to rounding only.
///
/// Thread safety: every function is reentrant; they share no state.
#include <cstddef>
#include <cstdint>

namespace flymc::kernels {

using Index = std::uint32_t;

/// Name of the SIMD path compiled in: "avx512", "avx2" or "scalar".
const char* simd_name() noexcept;

/// log σ(a) = −log1p(exp(−a)), accurate for every finite a (and ±inf). Computed as
/// min(a, 0) − log1p(exp(−|a|)).
double log_sigmoid(double a) noexcept;
/// log(expm1(x)) for x ≥ 0: −inf at 0, ≈ x for large x; NaN for x < 0. Accurate also around
/// x = ln 2, where the result crosses zero.
double log_expm1(double x) noexcept;

/// log1p(x) = log(1 + x) for x ≥ −1, accurate also where 1 + x rounds (|x| tiny, x huge) and near
/// x = −1; −inf at −1, NaN below −1 or for NaN, +inf at +inf. Within 4 ulp everywhere (measured
/// in tests/test_kernels.cpp).
double log1p(double x) noexcept;

/// out[i] = log σ(a[i]), i < n.
void log_sigmoid(const double* a, double* out, std::size_t n) noexcept;
/// out[i] = log(expm1(x[i])), i < n.
void log_expm1(const double* x, double* out, std::size_t n) noexcept;
/// out[i] = log1p(x[i]), i < n.
void log1p(const double* x, double* out, std::size_t n) noexcept;

/// out[i] = e^{x[i]}, i < n (< 1 ulp; 0 below −745, +inf above 709.8, NaN kept).
void exp(const double* x, double* out, std::size_t n) noexcept;
/// out[i] = log(x[i]), i < n (0 → −inf, negative or NaN → NaN).
void log(const double* x, double* out, std::size_t n) noexcept;

/// Σ_j a[j]·b[j] over j < stride.
double dot(const double* a, const double* b, std::size_t stride) noexcept;
/// out[i] = rows[i]·theta for i < nrows (rows contiguous, `stride` apart).
void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept;
/// out[i] = base[idx[i]]·theta for i < k: gathered rows, each prefetched 16 rows ahead.
void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept;
/// out[i·m + k] = rows[i]·thetas[k·tstride ...] for i < nrows, k < m: m dot products per row
/// (the m linear predictors of a softmax row), each bit-identical to dot(row, theta_k).
/// Rows are read from memory once per group of simd_lanes() rows.
void dots_packed_multi(const double* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
/// The same for gathered rows base[idx[i]], prefetched as in dots_gather.
void dots_gather_multi(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
/// out[j] += Σ_i c[i·cstride] · rows[i][j] for j < stride: a weighted sum of contiguous rows
/// (Xᵀc, the gradient of a sum of per-row terms). Rows are summed in index order within each
/// lane, so the result is reproducible (not bit-identical to the scalar path).
void weighted_row_sum(const double* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept;
/// The same over the first `width` columns only (a multiple of 8; `rows` and `out` may start at
/// a column that is a multiple of 8): each column's result is bit-identical to
/// weighted_row_sum's, so a gradient split into column slices (one per thread) equals the
/// unsplit one bit for bit.
void weighted_row_sum_cols(const double* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept;
/// Σ_i log σ(y[i] · rows[i]·theta) over i < nrows: the logistic log-likelihood of a block, fused
/// (one streaming pass; blocks ≥ 8 MB are also software-prefetched).
double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept;

/// Entries of a symmetric three-way tensor of dimension d in the padded layout cubic_form reads:
/// for each a ≤ b in that order, the entries k = b … d − 1 of (a, b), zero-padded to a multiple
/// of 8.
std::size_t cubic_padded_size(std::size_t d) noexcept;
/// Σ_{a≤b≤k} t_abk·u_a·u_b·u_k for `t` in the padded layout (cubic_padded_size(d) entries) and
/// `u` of d entries followed by at least 8 zeros: a cubic form in d³/6 multiply-adds, every
/// segment (a, b) read in whole vectors (its padding meets u's zeros), one horizontal sum per a.
double cubic_form(const double* t, const double* u, std::size_t d) noexcept;

/// The dot-product kernels above over rows stored as floats (θ stays double): each value is
/// widened as it is loaded, so the results are bit-identical to those of the same kernel on the
/// rows converted to doubles (`--storage f32`: half the bytes read, the same arithmetic).
double dot(const float* a, const double* b, std::size_t stride) noexcept;
void dots_packed(const float* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept;
void dots_gather(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept;
void dots_packed_multi(const float* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
void dots_gather_multi(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
double sum_log_sigmoid_signed(const float* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept;
void weighted_row_sum(const float* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept;
void weighted_row_sum_cols(const float* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept;

/// Number of doubles per SIMD register in the compiled path (8, 4 or 1).
std::size_t simd_lanes() noexcept;

/// Portable scalar reference implementations of the functions above, compiled in every build
/// whatever SIMD path is selected (the tests compare the SIMD path against them; the benchmarks
/// use them as the libm baseline). The element functions call libm; the dot products sum in
/// index order. They agree with the SIMD path to rounding, not bit for bit.
namespace scalar {
void exp(const double* x, double* out, std::size_t n) noexcept;
void log(const double* x, double* out, std::size_t n) noexcept;
double log_sigmoid(double a) noexcept;
double log_expm1(double x) noexcept;
double log1p(double x) noexcept;
void log_sigmoid(const double* a, double* out, std::size_t n) noexcept;
void log_expm1(const double* x, double* out, std::size_t n) noexcept;
void log1p(const double* x, double* out, std::size_t n) noexcept;
double dot(const double* a, const double* b, std::size_t stride) noexcept;
void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept;
void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept;
double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept;
void dots_packed_multi(const double* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
void dots_gather_multi(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
double dot(const float* a, const double* b, std::size_t stride) noexcept;
void dots_packed(const float* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept;
void dots_gather(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept;
double sum_log_sigmoid_signed(const float* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept;
void dots_packed_multi(const float* rows, std::size_t nrows, std::size_t stride,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
void dots_gather_multi(const float* base, std::size_t stride, const Index* idx, std::size_t k,
                       const double* thetas, std::size_t m, std::size_t tstride,
                       double* out) noexcept;
void weighted_row_sum(const float* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept;
void weighted_row_sum_cols(const float* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept;
void weighted_row_sum(const double* rows, std::size_t nrows, std::size_t stride, const double* c,
                      std::size_t cstride, double* out) noexcept;
void weighted_row_sum_cols(const double* rows, std::size_t nrows, std::size_t stride,
                           std::size_t width, const double* c, std::size_t cstride,
                           double* out) noexcept;
double cubic_form(const double* t, const double* u, std::size_t d) noexcept;
}  // namespace scalar

}  // namespace flymc::kernels
