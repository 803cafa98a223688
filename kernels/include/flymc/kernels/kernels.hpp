#pragma once
/// @file kernels.hpp
/// Numeric hot loops with no notion of MCMC: row dot products over 64-byte aligned, zero-padded
/// rows, and log-space elementwise functions. SIMD paths (AVX-512, AVX2) are chosen at compile time
/// from the target flags; a portable scalar path is always available.
///
/// Conventions: `stride` is a multiple of 8 (see flymc::padded_stride); row pointers and `theta`
/// are 64-byte aligned and padded with zeros up to `stride`, so kernels never need tail handling.
///
/// Thread safety: every function is reentrant; they share no state.
#include <cstddef>
#include <cstdint>

namespace flymc::kernels {

using Index = std::uint32_t;

/// Name of the SIMD path compiled in: "avx512", "avx2" or "scalar".
const char* simd_name() noexcept;

/// log σ(a) = −log1p(exp(−a)), accurate for every finite a (and ±inf).
double log_sigmoid(double a) noexcept;
/// log(expm1(x)) for x ≥ 0: −inf at 0, ≈ x for large x; NaN for x < 0.
double log_expm1(double x) noexcept;

/// out[i] = log σ(a[i]), i < n.
void log_sigmoid(const double* a, double* out, std::size_t n) noexcept;
/// out[i] = log(expm1(x[i])), i < n.
void log_expm1(const double* x, double* out, std::size_t n) noexcept;

/// Σ_j a[j]·b[j] over j < stride.
double dot(const double* a, const double* b, std::size_t stride) noexcept;
/// out[i] = rows[i]·theta for i < nrows (rows contiguous, `stride` apart).
void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept;
/// out[i] = base[idx[i]]·theta for i < k: gathered rows, prefetched ahead.
void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept;
/// Σ_i log σ(y[i] · rows[i]·theta) over i < nrows: the logistic log-likelihood of a block.
double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept;

/// Number of doubles per SIMD register in the compiled path (8, 4 or 1).
std::size_t simd_lanes() noexcept;

/// Portable scalar reference implementations of the functions above, compiled in every build
/// whatever SIMD path is selected (the tests compare the SIMD path against them; the benchmarks
/// use them as the libm baseline). The element functions call libm; the dot products sum in
/// index order. They agree with the SIMD path to rounding, not bit for bit.
namespace scalar {
double log_sigmoid(double a) noexcept;
double log_expm1(double x) noexcept;
void log_sigmoid(const double* a, double* out, std::size_t n) noexcept;
void log_expm1(const double* x, double* out, std::size_t n) noexcept;
double dot(const double* a, const double* b, std::size_t stride) noexcept;
void dots_packed(const double* rows, std::size_t nrows, std::size_t stride, const double* theta,
                 double* out) noexcept;
void dots_gather(const double* base, std::size_t stride, const Index* idx, std::size_t k,
                 const double* theta, double* out) noexcept;
double sum_log_sigmoid_signed(const double* rows, std::size_t nrows, std::size_t stride,
                              const double* y, const double* theta) noexcept;
}  // namespace scalar

}  // namespace flymc::kernels
