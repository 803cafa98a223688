#pragma once
/// @file theta_kernels.hpp
/// The θ-kernels (docs/math.md §3): random-walk MH, MALA, HMC, NUTS, slice sampling, pCN and the
/// independence sampler, one type
/// each in mcmc/theta/, each a template over the target (FlyTarget on log p(θ | z), FullTarget on
/// the full posterior), following BlackJAX's contract with the RNG passed in: the chain's
/// ThetaState (θ, its log density and, for MALA, HMC and NUTS, its gradient) goes in, one θ-step
/// is taken, and StepInfo comes out. ThetaKernel holds the kind chosen in RunConfig with its
/// tuning.
///
/// Every kernel leaves its target invariant for a fixed step size and metric; adaptation
/// (dual averaging of the step size, Stan's windowed metric estimation) runs only in warm-up,
/// whose draws are not kept. A non-finite log density is a rejection, never a crash: NaN and +inf
/// are counted (Counters::nonfinite), −inf is a zero density.
///
/// Thread safety: a ThetaKernel belongs to one chain.
#include <cstddef>
#include <span>
#include <variant>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"
#include "flymc/mcmc/fly/theta/hmc.hpp"
#include "flymc/mcmc/fly/theta/mala.hpp"
#include "flymc/mcmc/fly/theta/nuts.hpp"
#include "flymc/mcmc/fly/theta/pcn.hpp"
#include "flymc/mcmc/fly/theta/rwmh.hpp"
#include "flymc/mcmc/fly/theta/slice.hpp"
#include "flymc/mcmc/metric.hpp"

namespace flymc {

/// One chain's θ-kernel: the kind chosen in RunConfig and its tuning (step size, metric).
class ThetaKernel {
 public:
  /// @param p dimension of θ; @param eps0 initial step size (width) in the metric's units;
  /// @param center pCN's and the independence sampler's center (θ_MAP; empty: the origin).
  ThetaKernel(const RunConfig& cfg, std::size_t p, InverseMetric metric, double eps0,
              std::span<const double> center = {})
      : tuning_(cfg, p, std::move(metric), eps0), kernel_(make(cfg, p)) {
    if (!center.empty()) tuning_.center.assign(center.begin(), center.end());
  }

  bool needs_gradient() const noexcept {
    return std::holds_alternative<MalaKernel>(kernel_) ||
           std::holds_alternative<HmcKernel>(kernel_) ||
           std::holds_alternative<NutsKernel>(kernel_);
  }
  double step_size() const noexcept { return tuning_.eps; }
  const InverseMetric& metric() const noexcept { return tuning_.metric; }

  /// One θ-step from `s` on `target`; `s` is updated in place when the chain moves.
  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c) {
    return std::visit([&](auto& k) { return k.step(rng, s, target, c, tuning_); }, kernel_);
  }

  /// Warm-up iteration `it` (0-based) finished with `info` at θ: adapts the step size and, in
  /// the slow windows, the metric (restarting the step-size adaptation when the metric changes).
  void adapt(long it, const StepInfo& info, const double* theta) {
    tuning_.update(it, info, theta);
  }
  /// End of warm-up: the averaged step size is frozen.
  void end_warmup() noexcept { tuning_.end_warmup(); }

  /// Appends the adaptation state (step size, dual averaging, metric, window sums) to `out`.
  void save(std::vector<double>& out) const { tuning_.save(out); }
  /// Restores what save() wrote. @throw ConfigError for values that do not fit.
  void load(std::span<const double> in) { tuning_.load(in); }

  /// HMC's kinetic energy ½·pᵀM⁻¹p under the current metric (HMC kernels only).
  double kinetic_energy(const double* p) {
    return std::get<HmcKernel>(kernel_).kinetic_energy(tuning_.metric, p);
  }
  /// HMC's integrator under the current metric (HmcKernel::leapfrog; HMC kernels only). Public
  /// for the tests (reversibility, volume preservation, the O(ε²) energy error).
  template <class Target>
  bool leapfrog(Target& target, double* q, double* p, double* g, double& lp, double eps, int steps,
                double h0, Counters& c) {
    return std::get<HmcKernel>(kernel_).leapfrog(target, tuning_.metric, q, p, g, lp, eps, steps,
                                                 h0, c);
  }

 private:
  using Kind = std::variant<RwmhKernel, MalaKernel, HmcKernel, SliceKernel, NutsKernel, PcnKernel>;
  static Kind make(const RunConfig& cfg, std::size_t p) {
    switch (cfg.kernel) {
      case KernelKind::rwmh:
        return RwmhKernel(p);
      case KernelKind::mala:
        return MalaKernel(p);
      case KernelKind::hmc:
        return HmcKernel(p, cfg.hmc_steps);
      case KernelKind::slice:
        return SliceKernel(p, cfg.slice_mode);
      case KernelKind::nuts:
        return NutsKernel(p, cfg.max_treedepth);
      case KernelKind::pcn:
        return PcnKernel(p, false, cfg.pcn_rho);
      case KernelKind::imh:
        return PcnKernel(p, true, std::nullopt);
    }
    return RwmhKernel(p);
  }

  KernelTuning tuning_;
  Kind kernel_;
};

}  // namespace flymc
