#pragma once
/// @file mala.hpp
/// MALA with preconditioner M⁻¹ = LLᵀ: θ' = θ + (ε²/2)M⁻¹∇ log π(θ) + ε·L·η, accepted with the MH
/// ratio of the asymmetric Gaussian proposals, log q(x'|x) = −|L⁻¹(x' − μ(x))|²/(2ε²).
#include <algorithm>
#include <cmath>
#include <vector>

#include "flymc/core/profile.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"

namespace flymc {

class MalaKernel {
 public:
  explicit MalaKernel(std::size_t p) : proposal_(p), eta_(p), work_(p), grad_new_(p), reverse_(p) {}

  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c, const KernelTuning& k) {
    const std::size_t p = proposal_.size();
    double* prop = proposal_.data();
    double* work = work_.data();
    const double eps = k.eps, h = 0.5 * eps * eps;
    double fwd = 0.0;  // |η|²/2 = −log q(θ'|θ)
    {
      PhaseTimer t(c.profile, Phase::proposal);
      for (std::size_t j = 0; j < p; ++j) {
        eta_[j] = rng.normal();
        fwd += eta_[j] * eta_[j];
      }
      fwd *= 0.5;
      k.metric.mul_inv(s.grad.data(), work);
      for (std::size_t j = 0; j < p; ++j) prop[j] = s.theta[j] + h * work[j];
      k.metric.mul_sqrt(eta_.data(), work);
      for (std::size_t j = 0; j < p; ++j) prop[j] += eps * work[j];
    }
    const double lp = target.eval_grad(prop, grad_new_.data(), c);
    PhaseTimer t(c.profile, Phase::accept);
    if (!std::isfinite(lp)) {
      if (theta::failed(lp)) ++c.nonfinite;
      return {0.0, 0.0};
    }
    // Reverse move: r = θ − θ' − (ε²/2)M⁻¹∇ log π(θ'); log q(θ|θ') = −|L⁻¹r|²/(2ε²).
    k.metric.mul_inv(grad_new_.data(), work);
    for (std::size_t j = 0; j < p; ++j) reverse_[j] = s.theta[j] - prop[j] - h * work[j];
    k.metric.solve_sqrt(reverse_.data(), work);
    double rev = 0.0;
    for (std::size_t j = 0; j < p; ++j) rev += work[j] * work[j];
    rev *= 0.5 / (eps * eps);
    const double log_ratio = lp - s.logp - rev + fwd;
    if (std::isnan(log_ratio)) {  // a gradient that is not finite at θ'
      ++c.nonfinite;
      return {0.0, 0.0};
    }
    const double a = theta::accept_prob(log_ratio);
    if (theta::accept_mh(rng, log_ratio)) {
      std::copy(prop, prop + p, s.theta.begin());
      std::copy(grad_new_.begin(), grad_new_.end(), s.grad.begin());
      s.logp = lp;
      target.accept();
    }
    return {a, a};
  }

 private:
  std::vector<double> proposal_;  // θ'
  std::vector<double> eta_;       // η
  std::vector<double> work_;      // M⁻¹∇, L·η, L⁻¹r in turn
  std::vector<double> grad_new_;  // ∇ log π(θ')
  std::vector<double> reverse_;   // r
};

}  // namespace flymc
