#pragma once
/// @file setup_stats.hpp
/// What the set-up estimates from draws of the Laplace approximation: each datum's expected dark
/// probability under the bound, and the per-datum z-proposal rates built from it.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/targets.hpp"
#include "flymc/mcmc/z_updates.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// The mean dark probability m_n = mean over `draws` of B_n/L_n = e^{−Δ_n} for every datum, from
/// M dense θ draws (M × P values, e.g. from the Laplace approximation): 1 − m_n estimates the
/// datum's expected bright probability. Fixed blocks combined in order: the same on any number
/// of threads.
template <class Bound>
std::vector<double> mean_dark_probability(const Bound& bound, const Dataset& data,
                                          const ParamLayout& lay,
                                          const std::vector<double>& draws) {
  const std::size_t n = data.n(), P = lay.dim(), K = lay.k;
  const std::size_t m = P > 0 ? draws.size() / P : 0;
  std::vector<double> dark(n, 0.0);
  std::vector<AlignedBuffer> pads;
  for (std::size_t t = 0; t < m; ++t) {
    pads.push_back(aligned_zeros(lay.padded()));
    lay.pad(draws.data() + t * P, pads.back().get());
  }
  constexpr std::size_t kBlock = 2048;
  tbb::parallel_for(std::size_t{0}, (n + kBlock - 1) / kBlock, [&](std::size_t b) {
    const std::size_t lo = b * kBlock, hi = std::min(n, lo + kBlock), len = hi - lo;
    std::vector<Index> idx(len);
    for (std::size_t i = 0; i < len; ++i) idx[i] = static_cast<Index>(lo + i);
    std::vector<double> preds(len * K), delta(len);
    for (std::size_t t = 0; t < m; ++t) {
      packed_predictors(K, data.row(lo), len, data.stride(), pads[t].get(), preds.data());
      bound.deltas(idx.data(), preds.data(), len, delta.data());
      for (std::size_t i = 0; i < len; ++i) delta[i] = -delta[i];
      kernels::exp(delta.data(), delta.data(), len);
      for (std::size_t i = 0; i < len; ++i) dark[lo + i] += delta[i];
    }
    for (std::size_t i = lo; i < hi; ++i)
      dark[i] /= static_cast<double>(std::max<std::size_t>(m, 1));
  });
  return dark;
}

/// Per-datum proposal rates for the implicit z-update (MATH.md 1.5, the paper's discussion):
/// q_n ∝ the datum's expected bright probability p̄_n (`pbar`, e.g. 1 − mean_dark_probability),
/// scaled so that the expected number of dark proposals per sweep, Σ_n q_n (1 − p̄_n), equals
/// the uniform update's q·N, floored at q/10 (every datum keeps being proposed: the chain stays
/// irreducible) and capped at 1. Data likely to be bright are then proposed often and follow θ
/// quickly, the others rarely.
inline ZRates per_datum_rates(const std::vector<double>& pbar, double q) {
  const std::size_t n = pbar.size();
  // κ by bisection: Σ_n min(1, max(q/10, κ p̄_n))·(1 − p̄_n) = q·N.
  const double floor_q = 0.1 * q, budget = q * static_cast<double>(n);
  auto rate = [&](double kappa, double p) { return std::min(1.0, std::max(floor_q, kappa * p)); };
  auto spend = [&](double kappa) {
    double s = 0.0;
    for (double p : pbar) s += rate(kappa, p) * (1.0 - p);
    return s;
  };
  double lo = 0.0, hi = 1.0;
  while (spend(hi) < budget && hi < 1e12) hi *= 2.0;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (spend(mid) < budget ? lo : hi) = mid;
  }
  std::vector<double> log_rates(n);
  for (std::size_t i = 0; i < n; ++i) log_rates[i] = std::log(rate(hi, pbar[i]));
  return ZRates(std::move(log_rates));
}

}  // namespace flymc
