#pragma once
/// @file vmath.hpp
/// Private: vectorized exp, expm1, log, log1p and the public element functions built on them
/// (log σ, log expm1, log1p), with no libm calls. Written once against simd.hpp.
///
/// Algorithms (all standard; constants cited where they come from a publication):
///  - exp / expm1: x = k·ln2 + r with |r| ≤ ln2/2 (Cody–Waite, with fdlibm's two-part ln 2 whose
///    high part has 32 significant bits so that k·ln2_hi is exact), expm1(r) from its Taylor
///    series to degree 13 (truncation < 2^-56 relative), then exp(x) = 2^k·(1 + expm1(r)) and
///    expm1(x) = 2^k·expm1(r) + (2^k − 1) with one fused rounding.
///  - log / log1p: u = 2^k·m, m ∈ [√2/2, √2), f = m − 1, s = f/(2+f), log(m) = f − f²/2 +
///    s·(f²/2 + R(s²)) with the degree-7 minimax R of fdlibm's e_log.c (Lg1..Lg7, error
///    < 2^-58.45; Sun Microsystems 1993), assembled as in fdlibm so that the rounding errors of the
///    small terms do not reach the result. log1p(t) adds the rounding error of u = 1 + t back as a
///    first-order correction e/u (fdlibm's s_log1p.c idea).
/// Every function is elementwise (lane i of the result depends only on lane i of the input) and a
/// template over the register type (simd::vd or simd::v1), with identical results per lane.
#include <limits>

#include "simd.hpp"

#if defined(FLYMC_KERNELS_AVX512) || defined(FLYMC_KERNELS_AVX2)

namespace flymc::kernels::simd {

namespace cst {
// fdlibm's split of ln 2: 32 significant bits in the high part, so k·kLn2HiFd is exact for the
// |k| ≤ 1100 used here; kLn2HiFd + kLn2LoFd = ln 2 to about 2^-86.
inline constexpr double kLn2HiFd = 6.93147180369123816490e-01;  // 0x3fe62e42fee00000
inline constexpr double kLn2LoFd = 1.90821492927058770002e-10;  // 0x3dea39ef35793c76
// ln 2 correctly rounded, and the rounded remainder (ln 2 − kLn2Hi).
inline constexpr double kLn2Hi = 0x1.62e42fefa39efp-1;
inline constexpr double kLn2Lo = 0x1.abc9e3b39803fp-56;
inline constexpr double kInvLn2 = 0x1.71547652b82fep+0;
inline constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;
// fdlibm e_log.c minimax coefficients for R(z) = log((1+s)/(1−s))/s − 2, z = s².
inline constexpr double kLg1 = 6.666666666666735130e-01;  // 0x3fe5555555555593
inline constexpr double kLg2 = 3.999999999940941908e-01;  // 0x3fd999999997fa04
inline constexpr double kLg3 = 2.857142874366239149e-01;  // 0x3fd2492494229359
inline constexpr double kLg4 = 2.222219843214978396e-01;  // 0x3fcc71c51d8e78af
inline constexpr double kLg5 = 1.818357216161805012e-01;  // 0x3fc7466496cb03de
inline constexpr double kLg6 = 1.531383769920937332e-01;  // 0x3fc39a09d078c69f
inline constexpr double kLg7 = 1.479819860511658591e-01;  // 0x3fc2f112df3e5244
// 1/n! for the expm1 Taylor series (correctly rounded at compile time).
inline constexpr double kInvFact[14] = {1.0,
                                        1.0,
                                        1.0 / 2.0,
                                        1.0 / 6.0,
                                        1.0 / 24.0,
                                        1.0 / 120.0,
                                        1.0 / 720.0,
                                        1.0 / 5040.0,
                                        1.0 / 40320.0,
                                        1.0 / 362880.0,
                                        1.0 / 3628800.0,
                                        1.0 / 39916800.0,
                                        1.0 / 479001600.0,
                                        1.0 / 6227020800.0};
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace cst

/// expm1(r) for |r| ≤ ln2/2 (+ a little): r + r²·q(r), q(r) = Σ_{n=2..13} r^(n−2)/n!. The last
/// term kept is r^13/13!; the first dropped one is < 1.3e-17·|r|, so the result is within ~0.6
/// ulp. q is evaluated by Estrin's scheme (depth 4 FMAs instead of Horner's 11): one-value calls
/// are latency bound.
template <class V>
inline V expm1_reduced(V r) noexcept {
  auto c = [](int n) { return set1<V>(cst::kInvFact[n]); };
  const V r2 = mul(r, r), r4 = mul(r2, r2), r8 = mul(r4, r4);
  const V p0 = fmadd(c(3), r, c(2)), p1 = fmadd(c(5), r, c(4)), p2 = fmadd(c(7), r, c(6));
  const V p3 = fmadd(c(9), r, c(8)), p4 = fmadd(c(11), r, c(10)), p5 = fmadd(c(13), r, c(12));
  const V q0 = fmadd(p1, r2, p0), q1 = fmadd(p3, r2, p2), q2 = fmadd(p5, r2, p4);
  const V q = fmadd(q2, r8, fmadd(q1, r4, q0));
  return fmadd(r2, q, r);
}

/// Cody–Waite reduction x = k·ln2 + r: returns k (integer valued) and r, with rc the rounding
/// error of r (r + rc = x − k·ln2 to ~2^-100 relative).
template <class V>
inline V reduce_ln2(V x, V& r, V& rc) noexcept {
  const V k = round_nearest(mul(x, set1<V>(cst::kInvLn2)));
  const V hi = fnmadd(k, set1<V>(cst::kLn2HiFd), x);  // exact (Sterbenz on x − k·ln2_hi)
  const V lo = mul(k, set1<V>(cst::kLn2LoFd));
  r = sub(hi, lo);
  rc = sub(sub(hi, r), lo);
  return k;
}

/// e^x, < 1 ulp; 0 below −745.13 (subnormal results rounded once), +inf above 709.78, NaN kept.
template <class V>
inline V exp(V x) noexcept {
  x = min(set1<V>(710.0), max(set1<V>(-746.0), x));  // x second: NaN passes through
  V r, rc;
  const V k = reduce_ln2(x, r, rc);
  const V em = expm1_reduced(r);
  // e^(r+rc) = (1 + em)(1 + rc) ≈ 1 + (em + rc·(1 + em)).
  const V one = set1<V>(1.0);
  const V p = add(one, fmadd(rc, add(one, em), em));
  return ldexp(p, k);
}

/// e^x − 1 for x ≤ 709 (larger x is clamped: only used below 2 here), < 1 ulp; −1 below −37,
/// NaN kept.
template <class V>
inline V expm1(V x) noexcept {
  x = min(set1<V>(709.0), max(set1<V>(-60.0), x));
  V r, rc;
  const V k = reduce_ln2(x, r, rc);
  const V one = set1<V>(1.0);
  V em = expm1_reduced(r);
  em = fmadd(rc, add(one, em), em);
  // 2^k·(1 + em) − 1 = 2^k·em + (2^k − 1): 2^k − 1 is exact for |k| ≤ 53, and the fused
  // multiply-add rounds once. For k = 0 this is em itself.
  const V p2 = ldexp(one, k);
  return fmadd(p2, em, sub(p2, one));
}

/// log(2^k·(1+f)) + c for the reduced f = m − 1, m ∈ [√2/2, √2), and a small correction c, as
/// fdlibm assembles it: k·ln2_hi − ((f²/2 − (s·(f²/2 + R) + (k·ln2_lo + c))) − f).
template <class V>
inline V log_reduced(V f, V k, V c) noexcept {
  const V s = div(f, add(set1<V>(2.0), f));
  const V z = mul(s, s);
  const V w = mul(z, z);
  const V t1 =
      mul(w, fmadd(fmadd(set1<V>(cst::kLg6), w, set1<V>(cst::kLg4)), w, set1<V>(cst::kLg2)));
  const V t2 =
      mul(z, fmadd(fmadd(fmadd(set1<V>(cst::kLg7), w, set1<V>(cst::kLg5)), w, set1<V>(cst::kLg3)),
                   w, set1<V>(cst::kLg1)));
  const V R = add(t1, t2);
  const V hfsq = mul(mul(set1<V>(0.5), f), f);
  const V small = fmadd(s, add(hfsq, R), fmadd(k, set1<V>(cst::kLn2LoFd), c));
  return fmadd(k, set1<V>(cst::kLn2HiFd), sub(f, sub(hfsq, small)));
}

/// log(u) for u ≥ 0 (subnormals included; 0 → −inf, +inf → +inf, u < 0 or NaN → NaN), where u
/// may be the rounded value of some v = 1 + y. The caller passes f0 = v − 1 exactly (u − 1 when u
/// is exact) and c = (v − u)/u, the relative rounding error. When u ∈ [√2/2, √2) the reduced
/// argument is f0 itself, so log v keeps full relative accuracy even when u rounds to 1;
/// elsewhere log v = log u + c to first order, and c only needs a few correct bits.
template <class V>
inline V log_corrected(V u, V f0, V c) noexcept {
  V m, k;
  frexp_sqrt2(u, m, k);
  const auto k0 = eq(k, zero<V>());
  V res = log_reduced(select(k0, f0, sub(m, set1<V>(1.0))), k, select(k0, zero<V>(), c));
  res = select(eq(u, zero<V>()), set1<V>(-cst::kInf), res);
  res = select(eq(u, set1<V>(cst::kInf)), set1<V>(cst::kInf), res);
  return select(ge(u, zero<V>()), res, set1<V>(cst::kNaN));  // false for NaN
}

/// log1p(t) for t ∈ [0, 1] (NaN kept), < 1 ulp. u = 1 + t rounds only when u ≥ √2, where the
/// rounding error e = t − (u − 1) (exact) is added back as e/u.
template <class V>
inline V log1p_unit(V t) noexcept {
  const V one = set1<V>(1.0);
  const V u = add(one, t);
  const auto big = ge(u, set1<V>(cst::kSqrt2));
  // Below √2 (k = 0) the reduced argument is t itself, exactly; above, m = u/2 and f = u/2 − 1
  // is exact (Sterbenz).
  const V f = select(big, fmadd(set1<V>(0.5), u, set1<V>(-1.0)), t);
  const V c = select(big, mul(sub(t, sub(u, one)), recip_approx(u)), zero<V>());
  return log_reduced(f, select(big, one, zero<V>()), c);
}

/// log1p(t) for t ≥ −1 (t < −1 or NaN → NaN, −1 → −inf, +inf → +inf), < 1 ulp: log1p_unit's
/// correction extended to the whole domain. u = 1 + t is rounded, and its rounding error e is
/// recovered exactly by Fast2Sum (larger operand first: t − (u − 1) for |t| ≤ 1, else
/// 1 − (u − t)) and added back as e/u (log_corrected). Where u ∈ [√2/2, √2) the reduced
/// argument is t itself. Below u = 1/2, 1 + t is exact (Sterbenz) and the correction is 0 — set
/// explicitly: recip_approx of a tiny u can be +inf (AVX2 goes through float), and 0·inf is NaN.
template <class V>
inline V log1p(V t) noexcept {
  const V one = set1<V>(1.0);
  const V u = add(one, t);
  const V err = select(le(abs(t), one), sub(t, sub(u, one)), sub(one, sub(u, t)));
  const V c = select(lt(u, set1<V>(0.5)), zero<V>(), mul(err, recip_approx(u)));
  return log_corrected(u, t, c);
}

/// log σ(a) = min(a, 0) − log1p(e^(−|a|)). Both terms are ≤ 0, so there is no cancellation and
/// the error stays within ~2 ulp; a = ±inf gives −inf / 0, NaN gives NaN.
template <class V>
inline V log_sigmoid(V a) noexcept {
  const V t = exp(sub(zero<V>(), abs(a)));
  return sub(min(zero<V>(), a), log1p_unit(t));  // a second: NaN passes through
}

/// log(e^x − 1) for x ≥ 0 (x < 0 → NaN, 0 → −inf, +inf → +inf, NaN → NaN). The function crosses
/// zero at x = ln 2 where log(expm1(x)) has no relative accuracy, so three well-conditioned forms
/// are blended (same split as scalar::log_expm1):
///   x ≤ 0.375:      log(expm1(x))
///   0.375 < x ≤ 2:  log1p(2·expm1(h)), h = x − ln 2 in two parts (x − ln2_hi is exact here)
///   x > 2:          x + log(−expm1(−x))
/// One expm1 and one log per lane.
template <class V>
inline V log_expm1(V x) noexcept {
  const V one = set1<V>(1.0);
  const auto lo = le(x, set1<V>(0.375));
  const auto hi = gt(x, set1<V>(2.0));
  const V h = sub(sub(x, set1<V>(cst::kLn2Hi)), set1<V>(cst::kLn2Lo));
  const V e = expm1(select(lo, x, select(hi, sub(zero<V>(), x), h)));
  // Middle range: u = 1 + y rounded; log_corrected gets y itself (exact) and the rounding error
  // of u by Fast2Sum (larger operand first), divided by u.
  const V y = add(e, e);
  const V u_mid = add(one, y);
  const V err = select(le(abs(y), one), sub(y, sub(u_mid, one)), sub(one, sub(u_mid, y)));
  const V c_mid = mul(err, recip_approx(u_mid));
  const V u = select(lo, e, select(hi, sub(zero<V>(), e), u_mid));
  const V u_m1 = sub(u, one);  // exact wherever it is used (u ∈ [√2/2, √2))
  const V f0 = select(lo, u_m1, select(hi, u_m1, y));
  const V c = select(lo, zero<V>(), select(hi, zero<V>(), c_mid));
  const V l = log_corrected(u, f0, c);
  const V res = select(hi, add(x, l), l);
  return select(lt(x, zero<V>()), set1<V>(cst::kNaN), res);
}

}  // namespace flymc::kernels::simd

#endif
