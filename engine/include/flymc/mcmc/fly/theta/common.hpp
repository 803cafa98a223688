#pragma once
/// @file common.hpp
/// What every θ-kernel shares: the chain's position (ThetaState), what a step reports
/// (StepInfo), the MH accept rule and the handling of non-finite densities, and the tuning each
/// kernel adapts in warm-up (step size by dual averaging, metric by Stan's windows).
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/adaptation.hpp"
#include "flymc/mcmc/metric.hpp"

namespace flymc {

/// The chain's position and what the kernels cache about it.
struct ThetaState {
  std::vector<double> theta;  ///< dense θ
  std::vector<double> grad;   ///< ∇ log target at θ (MALA, HMC)
  double logp = 0.0;          ///< log target at θ
};

/// What one θ-step reports.
struct StepInfo {
  /// MH acceptance probability (HMC: of the trajectory; NUTS: the mean over the trajectory's
  /// leapfrog steps; slice: 1)
  double accept_stat = 0.0;
  double adapt_stat = 0.0;  ///< what the step-size adaptation is fed (slice: SliceKernel)
  // NUTS only (Stan's sampler columns): doublings of the trajectory, its leapfrog steps, whether
  // one of them diverged, and H at the draw.
  int treedepth = 0;
  int n_leapfrog = 0;
  bool divergent = false;
  double energy = 0.0;
};

/// A target whose accept() keeps no state (FullTarget says so with kStatelessAccept): a kernel
/// may then adopt a point it evaluated earlier than the last one without evaluating it again.
template <class Target>
concept StatelessAccept = requires {
  requires Target::kStatelessAccept;
};

namespace theta {

inline bool accept_mh(Rng& rng, double log_ratio) {
  return log_ratio >= 0.0 || std::log(rng.uniform_pos()) < log_ratio;
}
inline double accept_prob(double log_ratio) { return log_ratio >= 0.0 ? 1.0 : std::exp(log_ratio); }
/// A log density of NaN or +inf is a failure of the model or of the arithmetic: the proposal is
/// rejected and counted (Counters::nonfinite). −inf is an ordinary zero density (FlyMC meets it
/// where a bright datum's bound touches its likelihood): rejected, not counted.
inline bool failed(double lp) noexcept {
  return std::isnan(lp) || lp == std::numeric_limits<double>::infinity();
}

}  // namespace theta

/// The step size ε (slice: the interval width) and the metric of a kernel, with their warm-up
/// adaptation. Every kernel leaves its target invariant for fixed values of both.
/// Whether warm-up re-estimates the metric: with RunConfig::adapt_metric, except for the fly
/// metric (fitted to p(θ | z), which warm-up draws do not estimate) and for pCN and the
/// independence sampler, whose proposal is the Laplace Gaussian itself: an estimate from a short
/// warm-up can be narrower than the target, and an independence sampler with too narrow a
/// proposal sticks in the tails (measured: FlyMC's SBC with the adapted metric failed, with the
/// Laplace covariance it passed).
inline bool adapts_metric(const RunConfig& cfg) noexcept {
  const bool laplace_proposal = cfg.kernel == KernelKind::pcn || cfg.kernel == KernelKind::imh;
  return cfg.adapt_metric && cfg.resolved_metric() != Metric::fly && !laplace_proposal;
}

struct KernelTuning {
  KernelTuning(const RunConfig& cfg, std::size_t dim, InverseMetric m, double eps0)
      : eps(eps0),
        target(cfg.resolved_target_accept()),
        metric(std::move(m)),
        adapt(eps0, target),
        metric_adapt(adapts_metric(cfg) ? metric.form() : InverseMetric::Form::identity, dim,
                     cfg.warmup),
        p(dim),
        center(dim, 0.0) {}

  /// Warm-up iteration `it` (0-based) finished with `info` at θ: adapts the step size and, in
  /// the slow windows, the metric (restarting the step-size adaptation when the metric changes).
  void update(long it, const StepInfo& info, const double* theta) {
    eps = adapt.update(info.adapt_stat);
    if (metric_adapt.add(it, theta, metric)) adapt = DualAveraging(eps, target);
  }
  /// End of warm-up: the averaged step size is frozen.
  void end_warmup() noexcept { eps = adapt.final_step_size(); }

  /// Appends the state (step size, dual averaging, metric, window sums) to `out`.
  void save(std::vector<double>& out) const {
    out.push_back(eps);
    const DualAveraging::State a = adapt.state();
    out.insert(out.end(),
               {a.mu, a.target, a.gamma, a.t0, a.kappa, a.t, a.h_bar, a.log_eps, a.log_eps_bar});
    metric.save(out);
    metric_adapt.save(out);
  }
  /// Restores what save() wrote. @throw ConfigError for values that do not fit.
  void load(std::span<const double> in) {
    std::size_t pos = 0;
    if (in.size() < 10) throw ConfigError("kernel state: truncated");
    eps = in[pos++];
    DualAveraging::State a{};
    a.mu = in[pos++], a.target = in[pos++], a.gamma = in[pos++], a.t0 = in[pos++];
    a.kappa = in[pos++], a.t = in[pos++], a.h_bar = in[pos++], a.log_eps = in[pos++];
    a.log_eps_bar = in[pos++];
    adapt.set_state(a);
    InverseMetric m = InverseMetric::load(in, pos);
    if (m.dim() != p || m.form() != metric.form())
      throw ConfigError("kernel state: the metric does not fit the run");
    metric = std::move(m);
    metric_adapt.load(in, pos);
    if (pos != in.size()) throw ConfigError("kernel state: trailing values");
  }

  double eps;     ///< step size (slice: interval width) in the metric's units
  double target;  ///< the adaptation's target statistic
  InverseMetric metric;
  DualAveraging adapt;
  MetricAdaptation metric_adapt;
  std::size_t p;
  /// pCN and the independence sampler: the center of their Gaussian (θ_MAP; fixed for the run,
  /// so not part of the saved state).
  std::vector<double> center;
};

}  // namespace flymc
