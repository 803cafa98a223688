#pragma once
/// @file smh.hpp
/// Scalable Metropolis–Hastings (Cornish, Vanetti, Bouchard-Côté, Deligiannidis & Doucet, ICML
/// 2019; docs/math.md §8), `--algo smh`, for any single-index model whose family gives M3 (M4 for
/// the third order), read only through that interface (models/family.hpp): an exact MH chain whose
/// acceptance is factorised into a quadratic factor (the prior times the second-order Taylor
/// expansion of the whole log-likelihood at θ̂, collapsed into a gradient and a Hessian: O(d²) per
/// proposal) and one factor per datum for its Taylor remainder, decided by Poisson thinning from
/// whitened cubic bounds, so that an iteration touches only the few data where the thinned process
/// puts a candidate. Proposals (`--proposal`): preconditioned Crank–Nicolson, which leaves the
/// Laplace Gaussian N(θ̂, H⁻¹) invariant (ρ = 0: the independence sampler), or a random walk in
/// the whitened coordinates u = Lᵀ(θ − θ̂), H = LLᵀ.
#include <cstddef>
#include <memory>

#include "flymc/mcmc/sampler.hpp"

namespace flymc {

namespace smh {

/// Entries of a symmetric d×d×d tensor with indices a ≤ b ≤ k: d(d + 1)(d + 2)/6.
constexpr std::size_t cubic_size(std::size_t d) noexcept { return d * (d + 1) * (d + 2) / 6; }
/// T(u, u, u) = Σ_{a≤b≤k} t_abk·u_a·u_b·u_k for a tensor packed as SmhStatistics::cubic (entries
/// a ≤ b ≤ k, k fastest, each already times its number of index orders): d³/6 multiply-adds.
double cubic_form(const double* t, const double* u, std::size_t d) noexcept;

}  // namespace smh

}  // namespace flymc
