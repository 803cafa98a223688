#pragma once
/// @file pcn.hpp
/// Preconditioned Crank–Nicolson (`--kernel pcn`) and its ρ = 0 case, the independence sampler
/// (`--kernel imh`), around a fixed center c (θ_MAP) in the metric's coordinates
/// w = L⁻¹(θ − c), LLᵀ = M⁻¹ (the Laplace covariance with the dense metric):
/// w' = ρw + √(1 − ρ²)η, η ~ N(0, I). The proposal is reversible with respect to N(c, M⁻¹), so
/// the MH ratio is π(θ')φ(w)/(π(θ)φ(w')), φ the standard normal density: exact for any target,
/// and close to 1 where the target is close to that Gaussian (tall data). These are the chains
/// that scalable MH subsamples (docs/math.md §8). ρ is --pcn-rho when given; otherwise it follows
/// the adapted step ε as √(1 − ρ²) = min(1, ε), so that a step of 1 or more is the independence
/// sampler.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "flymc/core/profile.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"

namespace flymc {

class PcnKernel {
 public:
  PcnKernel(std::size_t p, bool independence, std::optional<double> rho)
      : independence_(independence), rho_(rho), diff_(p), w_(p), w2_(p), step_(p), proposal_(p) {}

  /// The ρ of a step of size eps.
  double rho(double eps) const noexcept {
    if (independence_) return 0.0;
    if (rho_) return *rho_;
    const double s = std::min(1.0, eps);
    return std::sqrt(1.0 - s * s);
  }

  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c, const KernelTuning& k) {
    const std::size_t p = proposal_.size();
    double half_w2 = 0.0, half_w2_new = 0.0;
    {
      PhaseTimer t(c.profile, Phase::proposal);
      for (std::size_t j = 0; j < p; ++j) diff_[j] = s.theta[j] - k.center[j];
      k.metric.solve_sqrt(diff_.data(), w_.data());
      const double r = rho(k.eps), sd = std::sqrt(1.0 - r * r);
      for (std::size_t j = 0; j < p; ++j) {
        w2_[j] = r * w_[j] + sd * rng.normal();
        half_w2 += 0.5 * w_[j] * w_[j];
        half_w2_new += 0.5 * w2_[j] * w2_[j];
      }
      k.metric.mul_sqrt(w2_.data(), step_.data());
      for (std::size_t j = 0; j < p; ++j) proposal_[j] = k.center[j] + step_[j];
    }
    const double lp = target.eval(proposal_.data(), c);
    PhaseTimer t(c.profile, Phase::accept);
    // log π(θ') − log π(θ) + log φ(w) − log φ(w').
    const double log_ratio = lp - s.logp + half_w2_new - half_w2;
    if (theta::failed(lp) || std::isnan(log_ratio)) {
      if (theta::failed(lp)) ++c.nonfinite;
      return {0.0, 0.0};
    }
    const double a = theta::accept_prob(log_ratio);
    if (theta::accept_mh(rng, log_ratio)) {
      std::copy(proposal_.begin(), proposal_.end(), s.theta.begin());
      s.logp = lp;
      target.accept();
    }
    return {a, a};
  }

 private:
  bool independence_;
  std::optional<double> rho_;
  std::vector<double> diff_, w_, w2_, step_, proposal_;  // θ − c, w, w', L·w', θ'
};

}  // namespace flymc
