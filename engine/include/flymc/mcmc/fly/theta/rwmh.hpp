#pragma once
/// @file rwmh.hpp
/// Random-walk Metropolis–Hastings: θ' = θ + ε·L·η, η ~ N(0, I), LLᵀ = M⁻¹, accepted with
/// min(1, π(θ')/π(θ)) (the proposal is symmetric).
#include <algorithm>
#include <vector>

#include "flymc/core/profile.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"

namespace flymc {

class RwmhKernel {
 public:
  explicit RwmhKernel(std::size_t p) : proposal_(p), noise_(p), step_(p) {}

  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c, const KernelTuning& k) {
    const std::size_t p = proposal_.size();
    double* prop = proposal_.data();
    {
      PhaseTimer t(c.profile, Phase::proposal);
      if (k.metric.form() == InverseMetric::Form::identity) {
        for (std::size_t j = 0; j < p; ++j) prop[j] = s.theta[j] + k.eps * rng.normal();
      } else {
        for (std::size_t j = 0; j < p; ++j) noise_[j] = rng.normal();
        k.metric.mul_sqrt(noise_.data(), step_.data());
        for (std::size_t j = 0; j < p; ++j) prop[j] = s.theta[j] + k.eps * step_[j];
      }
    }
    const double lp = target.eval(prop, c);
    PhaseTimer t(c.profile, Phase::accept);
    const double log_ratio = lp - s.logp;
    // NaN (−inf − −inf, or a NaN density) is a rejection with probability 0.
    if (theta::failed(lp) || std::isnan(log_ratio)) {
      if (theta::failed(lp)) ++c.nonfinite;
      return {0.0, 0.0};
    }
    const double a = theta::accept_prob(log_ratio);
    if (theta::accept_mh(rng, log_ratio)) {
      std::copy(prop, prop + p, s.theta.begin());
      s.logp = lp;
      target.accept();
    }
    return {a, a};
  }

 private:
  std::vector<double> proposal_;  // θ'
  std::vector<double> noise_;     // η
  std::vector<double> step_;      // L·η
};

}  // namespace flymc
