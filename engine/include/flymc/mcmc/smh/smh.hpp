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
#include <memory>

#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/robust.hpp"

namespace flymc {

namespace smh {

/// M = max |f'''| for f(s) = log σ(s): f''' = −σ(1 − σ)(1 − 2σ), largest at σ = ½ ± 1/(2√3),
/// where it is 1/(6√3).
inline constexpr double kLogisticM = 0.096225044864937627;

/// A datum's log-likelihood f(s) = log σ(s), s = t·x·θ, expanded to second order at ŝ:
/// f(ŝ), f'(ŝ) = σ(−ŝ) and f''(ŝ) = −σ(ŝ)σ(−ŝ).
/// (No default member values: the set-up's per-datum array is left unwritten until its pass
/// fills it, HugePageUninitAllocator. `Taylor t{}` is all zeros.)
struct Taylor {
  double s_hat, f0, f1, f2;
};
Taylor logistic_taylor(double s_hat) noexcept;

/// The Taylor remainder r(s) = f(s) − f(ŝ) − f'(ŝ)(s − ŝ) − ½ f''(ŝ)(s − ŝ)². By Taylor's theorem
/// |r(s)| ≤ (M/6)|s − ŝ|³ with M = kLogisticM.
double logistic_remainder(const Taylor& t, double s) noexcept;

/// Robust regression: a datum's log-likelihood f(s) = log L(y − s) as a function of its predictor
/// s = x·θ (StudentT, models/robust.hpp), expanded to second order at ŝ. With ρ = (y − ŝ)/√c and
/// q = 1/(1 + ρ²): f'(ŝ) = (2a/√c)·ρq and f''(ŝ) = −(2a/c)·q(2q − 1), finite at every finite ŝ.
Taylor student_taylor(const StudentT& t, double y, double s_hat) noexcept;
/// Its remainder at s (as logistic_remainder), |r(s)| ≤ (M/6)|s − ŝ|³ with M = student_m(t).
double student_remainder(const StudentT& t, const Taylor& e, double y, double s) noexcept;
/// M = max |f'''| for the Student-t log-likelihood: f''' = (4a/c^{3/2})·g(ρ) with
/// g(ρ) = ρ(3 − ρ²)/(1 + ρ²)³, largest in absolute value at ρ = √2 − 1, where g = 0.72855…
/// (enlarged in the last digits, so that rounding cannot make the bound too small).
double student_m(const StudentT& t) noexcept;

}  // namespace smh

/// Runs `--algo smh` (logistic or robust regression; the chains as run() runs them, the draw
/// files' SMH columns: docs/output.md). Each chain starts where the other samplers start (θ_MAP
/// plus jitter, or a prior draw).
/// @throw ConfigError for another model, or when asked to checkpoint.
RunResult run_smh(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                  const SinkFactory& sinks, Progress* progress, const CheckpointOptions* checkpoint,
                  const Precomputed& pre = {});

}  // namespace flymc
