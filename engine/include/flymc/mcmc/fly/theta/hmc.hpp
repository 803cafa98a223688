#pragma once
/// @file hmc.hpp
/// HMC: momentum p ~ N(0, M), L leapfrog steps of size ε·u (u ~ U(0.8, 1.2) per trajectory, which
/// avoids the periodic orbits of a fixed length), MH on the Hamiltonian
/// H = −log π(θ) + ½pᵀM⁻¹p. A trajectory whose energy error exceeds 1000 (or meets a non-finite
/// density) is divergent: stopped, rejected and counted.
#include <algorithm>
#include <cmath>
#include <vector>

#include "flymc/core/profile.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"

namespace flymc {

class HmcKernel {
 public:
  HmcKernel(std::size_t p, int steps)
      : steps_(steps), position_(p), momentum_(p), grad_(p), noise_(p), velocity_(p) {}

  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c, const KernelTuning& k) {
    const std::size_t p = position_.size();
    double* q = position_.data();
    double* mom = momentum_.data();
    double* g = grad_.data();
    const double eps = k.eps * (0.8 + 0.4 * rng.uniform());
    {
      PhaseTimer t(c.profile, Phase::proposal);
      for (std::size_t j = 0; j < p; ++j) noise_[j] = rng.normal();
      k.metric.momentum(noise_.data(), mom);
    }
    const double h0 = -s.logp + kinetic_energy(k.metric, mom);
    std::copy(s.theta.begin(), s.theta.end(), q);
    std::copy(s.grad.begin(), s.grad.end(), g);
    double lp = s.logp;
    const bool divergent = !leapfrog(target, k.metric, q, mom, g, lp, eps, steps_, h0, c);
    PhaseTimer t(c.profile, Phase::accept);
    if (divergent) {
      ++c.divergences;
      return {0.0, 0.0};
    }
    const double h1 = -lp + kinetic_energy(k.metric, mom);
    const double log_ratio = h0 - h1;
    if (std::isnan(log_ratio) || log_ratio < -1000.0) {
      if (std::isnan(log_ratio)) ++c.nonfinite;  // a gradient that is not finite at the end
      ++c.divergences;
      return {0.0, 0.0};
    }
    const double a = theta::accept_prob(log_ratio);
    if (theta::accept_mh(rng, log_ratio)) {
      std::copy(q, q + p, s.theta.begin());
      std::copy(g, g + p, s.grad.begin());
      s.logp = lp;
      target.accept();
    }
    return {a, a};
  }

  /// The kinetic energy ½·pᵀM⁻¹p under `metric`.
  double kinetic_energy(const InverseMetric& metric, const double* mom) {
    double* v = velocity_.data();
    metric.mul_inv(mom, v);
    double e = 0.0;
    for (std::size_t j = 0; j < velocity_.size(); ++j) e += mom[j] * v[j];
    return 0.5 * e;
  }

  /// The integrator: `steps` leapfrog steps of size `eps` from (q, p), in place; `g` and `lp`
  /// hold ∇ log π and log π at q on entry and are updated with it. Returns false (a divergence,
  /// the trajectory stopped where it was) when log π is not finite or the potential −log π rises
  /// more than 1000 above the initial energy `h0`.
  template <class Target>
  bool leapfrog(Target& target, const InverseMetric& metric, double* q, double* mom, double* g,
                double& lp, double eps, int steps, double h0, Counters& c) {
    const std::size_t p = velocity_.size();
    double* v = velocity_.data();
    for (int l = 0; l < steps; ++l) {
      for (std::size_t j = 0; j < p; ++j) mom[j] += 0.5 * eps * g[j];
      metric.mul_inv(mom, v);
      for (std::size_t j = 0; j < p; ++j) q[j] += eps * v[j];
      lp = target.eval_grad(q, g, c);
      if (!std::isfinite(lp)) {
        if (theta::failed(lp)) ++c.nonfinite;
        return false;
      }
      for (std::size_t j = 0; j < p; ++j) mom[j] += 0.5 * eps * g[j];
      if (-lp > h0 + 1000.0) return false;  // the potential alone is 1000 above the initial energy
    }
    return true;
  }

 private:
  int steps_;                     // L
  std::vector<double> position_;  // q along the trajectory
  std::vector<double> momentum_;  // p along the trajectory
  std::vector<double> grad_;      // ∇ log π(q)
  std::vector<double> noise_;     // the momentum's standard normal draw
  std::vector<double> velocity_;  // M⁻¹p
};

}  // namespace flymc
