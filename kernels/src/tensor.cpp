// The cubic form of a symmetric three-way tensor (kernels.hpp; third-order SMH evaluates it once
// per proposal). A translation unit of its own, named to sort after kernels.cpp: the sources are
// globbed in name order, so the row kernels' code keeps its place in the binary, and their hot
// loops their alignment (flymc_bm's FlyMC target timings moved with it otherwise).
#include "flymc/kernels/kernels.hpp"
#include "simd.hpp"

namespace flymc::kernels {

std::size_t cubic_padded_size(std::size_t d) noexcept {
  std::size_t n = 0;
  for (std::size_t b = 0; b < d; ++b) n += (b + 1) * ((d - b + 7) / 8 * 8);
  return n;
}

#if defined(FLYMC_KERNELS_AVX512) || defined(FLYMC_KERNELS_AVX2)

using simd::vd;

/// Per a, one vector accumulator pair gathers u_b·(t_ab ⊙ u[b:]) over every b ≥ a, so the
/// horizontal sum runs d times rather than once per segment; a segment's padding (a multiple of
/// 8 entries, hence of kLanes) meets u's trailing zeros. Two accumulators hide the FMA latency.
double cubic_form(const double* t, const double* u, std::size_t d) noexcept {
  constexpr std::size_t L = simd::kLanes;
  double s = 0.0;
  for (std::size_t a = 0; a < d; ++a) {
    vd acc0 = simd::zero<vd>(), acc1 = simd::zero<vd>();
    for (std::size_t b = a; b < d; ++b) {
      const vd ub = simd::set1<vd>(u[b]);
      const std::size_t n = (d - b + 7) / 8 * 8;
      const double* ut = u + b;
      std::size_t k = 0;
      for (; k + 2 * L <= n; k += 2 * L) {
        acc0 = simd::fmadd(simd::mul(simd::loadu(t + k), simd::loadu(ut + k)), ub, acc0);
        acc1 = simd::fmadd(simd::mul(simd::loadu(t + k + L), simd::loadu(ut + k + L)), ub, acc1);
      }
      if (k < n) acc0 = simd::fmadd(simd::mul(simd::loadu(t + k), simd::loadu(ut + k)), ub, acc0);
      t += n;
    }
    s += u[a] * simd::hsum(simd::add(acc0, acc1));
  }
  return s;
}

#else  // no SIMD path: the scalar reference

double cubic_form(const double* t, const double* u, std::size_t d) noexcept {
  return scalar::cubic_form(t, u, d);
}

#endif

}  // namespace flymc::kernels
