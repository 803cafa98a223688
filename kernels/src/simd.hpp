#pragma once
/// @file simd.hpp
/// Private: a thin layer over the AVX-512 or AVX2 intrinsics, chosen at compile time, so that the
/// vector math (vmath.hpp) and the dot-product kernels are written once. Exactly one of
/// FLYMC_KERNELS_AVX512, FLYMC_KERNELS_AVX2 is defined when a SIMD path is available; otherwise
/// neither is, and kernels.cpp forwards to the scalar reference.
///
/// Two register types per path: `vd`, kLanes doubles, for the array kernels, and `v1`, a 128-bit
/// register, for one-value calls (cheaper than a full-width register with one useful lane).
/// Every operation exists for both with the same per-lane instruction semantics (same rounding,
/// same NaN rules, same approximation tables), so a value gets bit-identical results through
/// either. Predicates are k-masks on AVX-512 and all-ones lanes on AVX2.
#if defined(__AVX512F__) && defined(__AVX512VL__)
#define FLYMC_KERNELS_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#define FLYMC_KERNELS_AVX2 1
#endif

#if defined(FLYMC_KERNELS_AVX512) || defined(FLYMC_KERNELS_AVX2)
// GCC 12.2's _mm512_undefined_pd() self-initialises (`__m512d __Y = __Y;`) and trips
// -Wuninitialized once inlined (GCC PR 105593). Warnings are matched by location, so silencing
// them over the include covers the header's code wherever it is inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstddef>
#include <cstdint>

namespace flymc::kernels::simd {

using v1 = __m128d;

/// Broadcast (set1<V>(x)) and zero, for either register type.
template <class V>
V set1(double x) noexcept;
template <>
inline __m128d set1<__m128d>(double x) noexcept {
  return _mm_set1_pd(x);
}
template <class V>
V zero() noexcept {
  return set1<V>(0.0);
}

// ---- 128-bit operations shared by both paths (SSE/AVX/FMA encodings) ---------------------------

inline __m128d add(__m128d a, __m128d b) noexcept { return _mm_add_pd(a, b); }
inline __m128d sub(__m128d a, __m128d b) noexcept { return _mm_sub_pd(a, b); }
inline __m128d mul(__m128d a, __m128d b) noexcept { return _mm_mul_pd(a, b); }
inline __m128d div(__m128d a, __m128d b) noexcept { return _mm_div_pd(a, b); }
inline __m128d fmadd(__m128d a, __m128d b, __m128d c) noexcept { return _mm_fmadd_pd(a, b, c); }
inline __m128d fnmadd(__m128d a, __m128d b, __m128d c) noexcept { return _mm_fnmadd_pd(a, b, c); }
inline __m128d min(__m128d a, __m128d b) noexcept { return _mm_min_pd(a, b); }
inline __m128d max(__m128d a, __m128d b) noexcept { return _mm_max_pd(a, b); }
inline __m128d abs(__m128d a) noexcept { return _mm_andnot_pd(_mm_set1_pd(-0.0), a); }
inline __m128d round_nearest(__m128d a) noexcept {
  return _mm_round_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#if defined(FLYMC_KERNELS_AVX512)

inline constexpr std::size_t kLanes = 8;
inline constexpr const char* kName = "avx512";
using vd = __m512d;

template <>
inline __m512d set1<__m512d>(double x) noexcept {
  return _mm512_set1_pd(x);
}
inline vd loadu(const double* p) noexcept { return _mm512_loadu_pd(p); }
/// kLanes floats widened to doubles (exactly: every float is a double).
inline vd loadu(const float* p) noexcept { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
inline void storeu(double* p, vd v) noexcept { _mm512_storeu_pd(p, v); }

inline vd add(vd a, vd b) noexcept { return _mm512_add_pd(a, b); }
inline vd sub(vd a, vd b) noexcept { return _mm512_sub_pd(a, b); }
inline vd mul(vd a, vd b) noexcept { return _mm512_mul_pd(a, b); }
inline vd div(vd a, vd b) noexcept { return _mm512_div_pd(a, b); }
/// a·b + c, one rounding.
inline vd fmadd(vd a, vd b, vd c) noexcept { return _mm512_fmadd_pd(a, b, c); }
/// c − a·b, one rounding.
inline vd fnmadd(vd a, vd b, vd c) noexcept { return _mm512_fnmadd_pd(a, b, c); }
/// min/max return the second operand when either is NaN (x86 semantics): pass the variable that
/// may be NaN second to propagate it.
inline vd min(vd a, vd b) noexcept { return _mm512_min_pd(a, b); }
inline vd max(vd a, vd b) noexcept { return _mm512_max_pd(a, b); }
inline vd abs(vd a) noexcept { return _mm512_abs_pd(a); }
inline vd round_nearest(vd a) noexcept {
  return _mm512_roundscale_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Ordered comparisons (false when either side is NaN).
inline __mmask8 lt(vd a, vd b) noexcept { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
inline __mmask8 le(vd a, vd b) noexcept { return _mm512_cmp_pd_mask(a, b, _CMP_LE_OQ); }
inline __mmask8 gt(vd a, vd b) noexcept { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ); }
inline __mmask8 ge(vd a, vd b) noexcept { return _mm512_cmp_pd_mask(a, b, _CMP_GE_OQ); }
inline __mmask8 eq(vd a, vd b) noexcept { return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ); }
inline __mmask8 lt(v1 a, v1 b) noexcept { return _mm_cmp_pd_mask(a, b, _CMP_LT_OQ); }
inline __mmask8 le(v1 a, v1 b) noexcept { return _mm_cmp_pd_mask(a, b, _CMP_LE_OQ); }
inline __mmask8 gt(v1 a, v1 b) noexcept { return _mm_cmp_pd_mask(a, b, _CMP_GT_OQ); }
inline __mmask8 ge(v1 a, v1 b) noexcept { return _mm_cmp_pd_mask(a, b, _CMP_GE_OQ); }
inline __mmask8 eq(v1 a, v1 b) noexcept { return _mm_cmp_pd_mask(a, b, _CMP_EQ_OQ); }
/// m ? t : f per lane.
inline vd select(__mmask8 m, vd t, vd f) noexcept { return _mm512_mask_blend_pd(m, f, t); }
inline v1 select(__mmask8 m, v1 t, v1 f) noexcept { return _mm_mask_blend_pd(m, f, t); }
/// First n lanes set (n ≤ kLanes).
inline __mmask8 first_lanes(std::size_t n) noexcept {
  return static_cast<__mmask8>((1u << n) - 1u);
}

/// x·2^k for integer-valued k, with IEEE overflow/underflow (one rounding, subnormals exact).
inline vd ldexp(vd x, vd k) noexcept { return _mm512_scalef_pd(x, k); }
inline v1 ldexp(v1 x, v1 k) noexcept { return _mm_scalef_pd(x, k); }
/// 1/x to about 14 bits (for small correction terms only).
inline vd recip_approx(vd x) noexcept { return _mm512_rcp14_pd(x); }
inline v1 recip_approx(v1 x) noexcept { return _mm_rcp14_pd(x); }

/// For finite u > 0 (subnormals included): u = 2^k·m with m ∈ [√2/2, √2). getexp/getmant
/// normalise subnormal inputs.
inline void frexp_sqrt2(vd u, vd& m, vd& k) noexcept {
  const vd e = _mm512_getexp_pd(u);                                          // floor(log2 u)
  const vd f = _mm512_getmant_pd(u, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);  // [1, 2)
  const __mmask8 big = _mm512_cmp_pd_mask(f, set1<vd>(0x1.6a09e667f3bcdp+0), _CMP_GE_OQ);
  m = _mm512_mask_mul_pd(f, big, f, set1<vd>(0.5));
  k = _mm512_mask_add_pd(e, big, e, set1<vd>(1.0));
}
inline void frexp_sqrt2(v1 u, v1& m, v1& k) noexcept {
  const v1 e = _mm_getexp_pd(u);
  const v1 f = _mm_getmant_pd(u, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
  const __mmask8 big = _mm_cmp_pd_mask(f, set1<v1>(0x1.6a09e667f3bcdp+0), _CMP_GE_OQ);
  m = _mm_mask_mul_pd(f, big, f, set1<v1>(0.5));
  k = _mm_mask_add_pd(e, big, e, set1<v1>(1.0));
}

/// Σ of the lanes, in the fixed tree ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)). hsum_rows reproduces
/// this order exactly, so a row's dot product is bit-identical whichever kernel computes it.
inline double hsum(vd v) noexcept {
  const __m256d s4 = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
  const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

/// out lane r = hsum(v[r]) for r < 8, with hsum's addition tree (transposed reduction).
inline vd hsum_rows(const vd* v) noexcept {
  // Step 1 (lanes i + i+4): [A0+A4 .. A3+A7 | B0+B4 .. B3+B7] for the pairs AB, CD, EF, GH.
  vd p[4];
  for (int q = 0; q < 4; ++q) {
    const vd a = v[2 * q], b = v[2 * q + 1];
    p[q] = _mm512_add_pd(_mm512_shuffle_f64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // Step 2 (128-bit blocks 0+1 of each row): [A(04+26) A(15+37) | B.. | C.. | D..], same EFGH.
  const vd abcd = _mm512_add_pd(_mm512_shuffle_f64x2(p[0], p[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_f64x2(p[0], p[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const vd efgh = _mm512_add_pd(_mm512_shuffle_f64x2(p[2], p[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_f64x2(p[2], p[3], _MM_SHUFFLE(3, 1, 3, 1)));
  // Step 3 (the last pair): [A E B F C G D H], then put the rows back in order.
  const vd s = _mm512_add_pd(_mm512_unpacklo_pd(abcd, efgh), _mm512_unpackhi_pd(abcd, efgh));
  return _mm512_permutexvar_pd(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), s);
}

#else  // AVX2 + FMA

inline constexpr std::size_t kLanes = 4;
inline constexpr const char* kName = "avx2";
using vd = __m256d;

template <>
inline __m256d set1<__m256d>(double x) noexcept {
  return _mm256_set1_pd(x);
}
inline vd loadu(const double* p) noexcept { return _mm256_loadu_pd(p); }
/// kLanes floats widened to doubles (exactly: every float is a double).
inline vd loadu(const float* p) noexcept { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
inline void storeu(double* p, vd v) noexcept { _mm256_storeu_pd(p, v); }

inline vd add(vd a, vd b) noexcept { return _mm256_add_pd(a, b); }
inline vd sub(vd a, vd b) noexcept { return _mm256_sub_pd(a, b); }
inline vd mul(vd a, vd b) noexcept { return _mm256_mul_pd(a, b); }
inline vd div(vd a, vd b) noexcept { return _mm256_div_pd(a, b); }
inline vd fmadd(vd a, vd b, vd c) noexcept { return _mm256_fmadd_pd(a, b, c); }
inline vd fnmadd(vd a, vd b, vd c) noexcept { return _mm256_fnmadd_pd(a, b, c); }
inline vd min(vd a, vd b) noexcept { return _mm256_min_pd(a, b); }
inline vd max(vd a, vd b) noexcept { return _mm256_max_pd(a, b); }
inline vd abs(vd a) noexcept { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
inline vd round_nearest(vd a) noexcept {
  return _mm256_round_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

inline vd lt(vd a, vd b) noexcept { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
inline vd le(vd a, vd b) noexcept { return _mm256_cmp_pd(a, b, _CMP_LE_OQ); }
inline vd gt(vd a, vd b) noexcept { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
inline vd ge(vd a, vd b) noexcept { return _mm256_cmp_pd(a, b, _CMP_GE_OQ); }
inline vd eq(vd a, vd b) noexcept { return _mm256_cmp_pd(a, b, _CMP_EQ_OQ); }
inline v1 lt(v1 a, v1 b) noexcept { return _mm_cmp_pd(a, b, _CMP_LT_OQ); }
inline v1 le(v1 a, v1 b) noexcept { return _mm_cmp_pd(a, b, _CMP_LE_OQ); }
inline v1 gt(v1 a, v1 b) noexcept { return _mm_cmp_pd(a, b, _CMP_GT_OQ); }
inline v1 ge(v1 a, v1 b) noexcept { return _mm_cmp_pd(a, b, _CMP_GE_OQ); }
inline v1 eq(v1 a, v1 b) noexcept { return _mm_cmp_pd(a, b, _CMP_EQ_OQ); }
inline vd select(vd m, vd t, vd f) noexcept { return _mm256_blendv_pd(f, t, m); }
inline v1 select(v1 m, v1 t, v1 f) noexcept { return _mm_blendv_pd(f, t, m); }
inline vd first_lanes(std::size_t n) noexcept {
  const auto i = static_cast<long long>(n);
  return _mm256_castsi256_pd(
      _mm256_cmpgt_epi64(_mm256_set1_epi64x(i), _mm256_setr_epi64x(0, 1, 2, 3)));
}

namespace detail {
/// 2^k for integer-valued k ∈ [−1022, 1023], built from the exponent bits. Adding 1.5·2^52 puts
/// k (two's complement) in the low mantissa bits.
inline vd exp2i(vd k) noexcept {
  const vd magic = _mm256_set1_pd(0x1.8p52);
  const __m256i bits = _mm256_castpd_si256(_mm256_add_pd(k, magic));
  const __m256i biased = _mm256_add_epi64(_mm256_sub_epi64(bits, _mm256_castpd_si256(magic)),
                                          _mm256_set1_epi64x(1023));
  return _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52));
}
inline v1 exp2i(v1 k) noexcept {
  const v1 magic = _mm_set1_pd(0x1.8p52);
  const __m128i bits = _mm_castpd_si128(_mm_add_pd(k, magic));
  const __m128i biased =
      _mm_add_epi64(_mm_sub_epi64(bits, _mm_castpd_si128(magic)), _mm_set1_epi64x(1023));
  return _mm_castsi128_pd(_mm_slli_epi64(biased, 52));
}
}  // namespace detail

/// x·2^k for integer-valued k ∈ [−2044, 2046], in two exact-range steps so that a subnormal
/// result is rounded once (like AVX-512 scalef).
inline vd ldexp(vd x, vd k) noexcept {
  const vd k1 = _mm256_floor_pd(_mm256_mul_pd(k, _mm256_set1_pd(0.5)));
  const vd k2 = _mm256_sub_pd(k, k1);
  return _mm256_mul_pd(_mm256_mul_pd(x, detail::exp2i(k1)), detail::exp2i(k2));
}
inline v1 ldexp(v1 x, v1 k) noexcept {
  const v1 k1 = _mm_floor_pd(_mm_mul_pd(k, _mm_set1_pd(0.5)));
  const v1 k2 = _mm_sub_pd(k, k1);
  return _mm_mul_pd(_mm_mul_pd(x, detail::exp2i(k1)), detail::exp2i(k2));
}
/// 1/x to about 12 bits, |x| within the float range (for small correction terms only).
inline vd recip_approx(vd x) noexcept { return _mm256_cvtps_pd(_mm_rcp_ps(_mm256_cvtpd_ps(x))); }
inline v1 recip_approx(v1 x) noexcept { return _mm_cvtps_pd(_mm_rcp_ps(_mm_cvtpd_ps(x))); }

/// For finite u > 0 (subnormals included): u = 2^k·m with m ∈ [√2/2, √2), by the exponent-bit
/// trick of fdlibm's log: adding (0x3ff00000 − 0x3fe6a09e) to the high word carries into the
/// exponent exactly when the mantissa is ≥ √2. Subnormals are scaled by 2^54 first.
inline void frexp_sqrt2(vd u, vd& m, vd& k) noexcept {
  const vd sub = lt(u, _mm256_set1_pd(0x1p-1022));
  u = select(sub, _mm256_mul_pd(u, _mm256_set1_pd(0x1p54)), u);
  const __m256i ix =
      _mm256_add_epi64(_mm256_castpd_si256(u), _mm256_set1_epi64x(0x00095f6200000000LL));
  const __m256i ex = _mm256_srli_epi64(ix, 52);  // biased exponent (u > 0: no sign bit)
  const vd two52 = _mm256_set1_pd(0x1p52);
  const vd kb = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(ex, _mm256_castpd_si256(two52))),
                              _mm256_set1_pd(0x1p52 + 1023.0));
  k = select(sub, _mm256_sub_pd(kb, _mm256_set1_pd(54.0)), kb);
  m = _mm256_castsi256_pd(
      _mm256_add_epi64(_mm256_and_si256(ix, _mm256_set1_epi64x(0x000fffffffffffffLL)),
                       _mm256_set1_epi64x(0x3fe6a09e00000000LL)));
}
inline void frexp_sqrt2(v1 u, v1& m, v1& k) noexcept {
  const v1 sub = lt(u, _mm_set1_pd(0x1p-1022));
  u = select(sub, _mm_mul_pd(u, _mm_set1_pd(0x1p54)), u);
  const __m128i ix = _mm_add_epi64(_mm_castpd_si128(u), _mm_set1_epi64x(0x00095f6200000000LL));
  const __m128i ex = _mm_srli_epi64(ix, 52);
  const v1 two52 = _mm_set1_pd(0x1p52);
  const v1 kb = _mm_sub_pd(_mm_castsi128_pd(_mm_or_si128(ex, _mm_castpd_si128(two52))),
                           _mm_set1_pd(0x1p52 + 1023.0));
  k = select(sub, _mm_sub_pd(kb, _mm_set1_pd(54.0)), kb);
  m = _mm_castsi128_pd(_mm_add_epi64(_mm_and_si128(ix, _mm_set1_epi64x(0x000fffffffffffffLL)),
                                     _mm_set1_epi64x(0x3fe6a09e00000000LL)));
}

/// Σ of the lanes, in the fixed tree (v0+v2) + (v1+v3); hsum_rows reproduces it.
inline double hsum(vd v) noexcept {
  const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

/// out lane r = hsum(v[r]) for r < 4, with hsum's addition tree (transposed reduction).
inline vd hsum_rows(const vd* v) noexcept {
  const vd ac = _mm256_add_pd(_mm256_permute2f128_pd(v[0], v[2], 0x20),
                              _mm256_permute2f128_pd(v[0], v[2], 0x31));  // [A02 A13 C02 C13]
  const vd bd = _mm256_add_pd(_mm256_permute2f128_pd(v[1], v[3], 0x20),
                              _mm256_permute2f128_pd(v[1], v[3], 0x31));  // [B02 B13 D02 D13]
  return _mm256_add_pd(_mm256_unpacklo_pd(ac, bd), _mm256_unpackhi_pd(ac, bd));
}

#endif

}  // namespace flymc::kernels::simd

#endif  // any SIMD path
