#pragma once
/// @file smh.hpp
/// Scalable Metropolis–Hastings (Cornish, Vanetti, Bouchard-Côté, Deligiannidis & Doucet, ICML
/// 2019; docs/math.md §8) for logistic regression, `--algo smh`: an exact MH chain whose
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
#include "flymc/models/family.hpp"
#include "flymc/models/robust.hpp"

namespace flymc {

namespace smh {

/// M = max |f'''| for f(s) = log σ(s): f''' = −σ(1 − σ)(1 − 2σ), largest at σ = ½ ± 1/(2√3),
/// where it is 1/(6√3).
inline constexpr double kLogisticM = 0.096225044864937627;
/// max |f⁗| of log σ: f⁗ = −p(1 − 6p), p = σ(u)σ(−u) ∈ (0, ¼], largest in absolute value at
/// p = ¼ (u = 0), where it is 1/8 (exactly representable).
inline constexpr double kLogisticM4 = 0.125;

/// A datum's log-likelihood as a function f(u) of its own variable u, which moves with the
/// predictor x·θ: u = t·x·θ for logistic regression (label t = ±1), u = y − x·θ for robust
/// regression. So u − û = σ·x·(θ − θ̂), σ = t or −1, and SMH needs only x·(θ − θ̂) per candidate.
/// Expanded to second order at û: f1 = f'(û), f2 = f''(û). f(û) is not kept: it cancels from
/// every difference of remainders, which is all the acceptance test uses.
/// (No default member values: the set-up's per-datum array is left unwritten until its pass
/// fills it, HugePageUninitAllocator. `Taylor t{}` is all zeros.)
struct Taylor {
  double u_hat, f1, f2;
  double f3 = 0.0;  // f‴(û), for the third-order expansion (logistic regression)
};

/// The remainder r(û + h) = f(û + h) − f(û) − f1·h − ½f2·h² plus the constant f(û): the
/// "gap" f(û + h) − f1·h − ½f2·h². Differences of gaps are differences of remainders, and
/// r(û + h) = gap(h) − gap(0). By Taylor's theorem |r(û + h)| ≤ (M/6)|h|³, M = max |f'''|.
///
/// Logistic regression: f(u) = log σ(u), f1 = σ(−û), f2 = −σ(û)σ(−û), M = kLogisticM.
Taylor logistic_taylor(double u_hat) noexcept;
double logistic_gap(const Taylor& t, double h) noexcept;
/// The third-order expansion's gap, f(û + h) − f1·h − ½f2·h² − ⅙f3·h³ (--smh-order 3), with
/// f3 = f‴(û) = −σ(û)σ(−û)(σ(−û) − σ(û)); its remainder is at most (M4/24)|h|⁴, M4 =
/// kLogisticM4.
double logistic_gap3(const Taylor& t, double h) noexcept;
/// logistic_taylor with f3 too (the second-order scheme's candidates skip its two exponentials).
Taylor logistic_taylor3(double u_hat) noexcept;

/// Robust regression: f(u) = log L(u), the Student-t log-likelihood of the residual u
/// (StudentT, models/robust.hpp). With ρ = û/√c and q = 1/(1 + ρ²): f1 = −(2a/√c)·ρq and
/// f2 = −(2a/c)·q(2q − 1), finite at every finite û; M = student_m(t).
Taylor student_taylor(const StudentT& t, double u_hat) noexcept;
double student_gap(const StudentT& t, const Taylor& e, double h) noexcept;
/// M = max |f'''| for the Student-t log-likelihood: f''' = (4a/c^{3/2})·g(ρ) with
/// g(ρ) = ρ(3 − ρ²)/(1 + ρ²)³, largest in absolute value at ρ = √2 − 1, where g = 0.72855…
/// (enlarged in the last digits, so that rounding cannot make the bound too small).
double student_m(const StudentT& t) noexcept;

/// A single-index family's expansion at its predictor ŝ (u = η, σ = 1): f1, f2 and, for
/// `order` 3, f3 = f'''(y, ŝ).
Taylor family_taylor(const SingleIndexFamily& family, double y, double s_hat, int order) noexcept;
/// gap(e) − gap(e2) of a family's datum expanded at û to `order` 2 or 3 (the third-order gap
/// also subtracts ⅙f3·h³), with the expansion recomputed from û as the set-up computed it.
double family_gap_change(const SingleIndexFamily& family, double y, double u_hat, double e,
                         double e2, int order) noexcept;

/// Entries of a symmetric d×d×d tensor with indices a ≤ b ≤ k: d(d + 1)(d + 2)/6.
constexpr std::size_t cubic_size(std::size_t d) noexcept { return d * (d + 1) * (d + 2) / 6; }
/// T(u, u, u) = Σ_{a≤b≤k} t_abk·u_a·u_b·u_k for a tensor packed as SmhStatistics::cubic (entries
/// a ≤ b ≤ k, k fastest, each already times its number of index orders): d³/6 multiply-adds.
double cubic_form(const double* t, const double* u, std::size_t d) noexcept;

}  // namespace smh

}  // namespace flymc
