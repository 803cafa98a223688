#pragma once
/// @file vmath.hpp
/// Private: vectorized exp, expm1, log, log1p and the two public element functions built on them
/// (log σ and log expm1), with no libm calls. Written once against simd.hpp.
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
/// Every function is elementwise: lane i of the result depends only on lane i of the input.
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

/// expm1(r) for |r| ≤ ln2/2 (+ a little): r + r²·Σ_{n=2..13} r^(n−2)/n!. The last term kept is
/// r^13/13!; the first dropped one is < 1.3e-17·|r|, so the result is within ~0.6 ulp.
inline vd expm1_reduced(vd r) noexcept {
  vd q = set1(cst::kInvFact[13]);
  for (int n = 12; n >= 2; --n) q = fmadd(q, r, set1(cst::kInvFact[n]));
  return fmadd(mul(r, r), q, r);
}

/// Cody–Waite reduction x = k·ln2 + r: returns k (integer valued) and r, with rc the rounding
/// error of r (r + rc = x − k·ln2 to ~2^-100 relative).
inline vd reduce_ln2(vd x, vd& r, vd& rc) noexcept {
  const vd k = round_nearest(mul(x, set1(cst::kInvLn2)));
  const vd hi = fnmadd(k, set1(cst::kLn2HiFd), x);  // exact (Sterbenz on x − k·ln2_hi)
  const vd lo = mul(k, set1(cst::kLn2LoFd));
  r = sub(hi, lo);
  rc = sub(sub(hi, r), lo);
  return k;
}

/// e^x, < 1 ulp; 0 below −745.13 (subnormal results rounded once), +inf above 709.78, NaN kept.
inline vd exp(vd x) noexcept {
  x = min(set1(710.0), max(set1(-746.0), x));  // x second: NaN passes through
  vd r, rc;
  const vd k = reduce_ln2(x, r, rc);
  const vd em = expm1_reduced(r);
  // e^(r+rc) = (1 + em)(1 + rc) ≈ 1 + (em + rc·(1 + em)).
  const vd p = add(set1(1.0), fmadd(rc, add(set1(1.0), em), em));
  return ldexp(p, k);
}

/// e^x − 1 for x ≤ 709 (larger x is clamped: only used below 2 here), < 1 ulp; −1 below −37,
/// NaN kept.
inline vd expm1(vd x) noexcept {
  x = min(set1(709.0), max(set1(-60.0), x));
  vd r, rc;
  const vd k = reduce_ln2(x, r, rc);
  vd em = expm1_reduced(r);
  em = fmadd(rc, add(set1(1.0), em), em);
  // 2^k·(1 + em) − 1 = 2^k·em + (2^k − 1): 2^k − 1 is exact for |k| ≤ 53, and the fused
  // multiply-add rounds once. For k = 0 this is em itself.
  const vd p2 = ldexp(set1(1.0), k);
  return fmadd(p2, em, sub(p2, set1(1.0)));
}

/// log(2^k·(1+f)) + c for the reduced f = m − 1, m ∈ [√2/2, √2), and a small correction c, as
/// fdlibm assembles it: k·ln2_hi − ((f²/2 − (s·(f²/2 + R) + (k·ln2_lo + c))) − f).
inline vd log_reduced(vd f, vd k, vd c) noexcept {
  const vd s = div(f, add(set1(2.0), f));
  const vd z = mul(s, s);
  const vd w = mul(z, z);
  const vd t1 = mul(w, fmadd(fmadd(set1(cst::kLg6), w, set1(cst::kLg4)), w, set1(cst::kLg2)));
  const vd t2 = mul(z, fmadd(fmadd(fmadd(set1(cst::kLg7), w, set1(cst::kLg5)), w, set1(cst::kLg3)),
                             w, set1(cst::kLg1)));
  const vd R = add(t1, t2);
  const vd hfsq = mul(mul(set1(0.5), f), f);
  const vd small = fmadd(s, add(hfsq, R), fmadd(k, set1(cst::kLn2LoFd), c));
  return fmadd(k, set1(cst::kLn2HiFd), sub(f, sub(hfsq, small)));
}

/// log(u) for u ≥ 0 (subnormals included; 0 → −inf, +inf → +inf, u < 0 or NaN → NaN), where u
/// may be the rounded value of some v = 1 + y. The caller passes f0 = v − 1 exactly (u − 1 when u
/// is exact) and c = (v − u)/u, the relative rounding error. When u ∈ [√2/2, √2) the reduced
/// argument is f0 itself, so log v keeps full relative accuracy even when u rounds to 1;
/// elsewhere log v = log u + c to first order, and c only needs a few correct bits.
inline vd log_corrected(vd u, vd f0, vd c) noexcept {
  vd m, k;
  frexp_sqrt2(u, m, k);
  const vmask k0 = eq(k, zero());
  vd res = log_reduced(select(k0, f0, sub(m, set1(1.0))), k, select(k0, zero(), c));
  res = select(eq(u, zero()), set1(-cst::kInf), res);
  res = select(eq(u, set1(cst::kInf)), set1(cst::kInf), res);
  return select(ge(u, zero()), res, set1(cst::kNaN));  // false for NaN
}

/// log1p(t) for t ∈ [0, 1] (NaN kept), < 1 ulp. u = 1 + t rounds only when u ≥ √2, where the
/// rounding error e = t − (u − 1) (exact) is added back as e/u.
inline vd log1p_unit(vd t) noexcept {
  const vd one = set1(1.0);
  const vd u = add(one, t);
  const vmask big = ge(u, set1(cst::kSqrt2));
  // Below √2 (k = 0) the reduced argument is t itself, exactly; above, m = u/2 and f = u/2 − 1
  // is exact (Sterbenz).
  const vd f = select(big, fmadd(set1(0.5), u, set1(-1.0)), t);
  const vd c = select(big, mul(sub(t, sub(u, one)), recip_approx(u)), zero());
  return log_reduced(f, select(big, one, zero()), c);
}

/// log σ(a) = min(a, 0) − log1p(e^(−|a|)). Both terms are ≤ 0, so there is no cancellation and
/// the error stays within ~2 ulp; a = ±inf gives −inf / 0, NaN gives NaN.
inline vd log_sigmoid(vd a) noexcept {
  const vd t = exp(sub(zero(), abs(a)));
  return sub(min(zero(), a), log1p_unit(t));  // a second: NaN passes through
}

/// log(e^x − 1) for x ≥ 0 (x < 0 → NaN, 0 → −inf, +inf → +inf, NaN → NaN). The function crosses
/// zero at x = ln 2 where log(expm1(x)) has no relative accuracy, so three well-conditioned forms
/// are blended (same split as scalar::log_expm1):
///   x ≤ 0.375:      log(expm1(x))
///   0.375 < x ≤ 2:  log1p(2·expm1(h)), h = x − ln 2 in two parts (x − ln2_hi is exact here)
///   x > 2:          x + log(−expm1(−x))
/// One expm1 and one log per lane.
inline vd log_expm1(vd x) noexcept {
  const vd one = set1(1.0);
  const vmask lo = le(x, set1(0.375));
  const vmask hi = gt(x, set1(2.0));
  const vd h = sub(sub(x, set1(cst::kLn2Hi)), set1(cst::kLn2Lo));
  const vd neg_x = sub(zero(), x);
  const vd e = expm1(select(lo, x, select(hi, neg_x, h)));
  // Middle range: u = 1 + y rounded; log_corrected gets y itself (exact) and the rounding error
  // of u by Fast2Sum (larger operand first), divided by u.
  const vd y = add(e, e);
  const vd u_mid = add(one, y);
  const vd err = select(le(abs(y), one), sub(y, sub(u_mid, one)), sub(one, sub(u_mid, y)));
  const vd c_mid = mul(err, recip_approx(u_mid));
  const vd u = select(lo, e, select(hi, sub(zero(), e), u_mid));
  const vd u_m1 = sub(u, one);  // exact wherever it is used (u ∈ [√2/2, √2))
  const vd f0 = select(lo, u_m1, select(hi, u_m1, y));
  const vd c = select(lo, zero(), select(hi, zero(), c_mid));
  const vd l = log_corrected(u, f0, c);
  const vd res = select(hi, add(x, l), l);
  return select(lt(x, zero()), set1(cst::kNaN), res);
}

}  // namespace flymc::kernels::simd

#endif
