#pragma once
/// @file theta_kernels.hpp
/// The θ-kernels (MATH.md 3): random-walk MH, MALA, HMC and slice sampling, each a template over
/// the target (FlyTarget on log p(θ | z), FullTarget on the full posterior), following
/// BlackJAX's contract with the RNG passed in: the chain's ThetaState (θ, its log density and,
/// for MALA and HMC, its gradient) goes in, one θ-step is taken, and StepInfo comes out.
///
/// Every kernel leaves its target invariant for a fixed step size and metric; adaptation
/// (dual averaging of the step size, Stan's windowed metric estimation) runs only in warm-up,
/// whose draws are not kept. A non-finite log density is a rejection, never a crash: NaN and +inf
/// are counted (Counters::nonfinite), −inf is a zero density.
///
/// Thread safety: a ThetaKernel belongs to one chain.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/profile.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/adaptation.hpp"
#include "flymc/mcmc/counters.hpp"
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
  double accept_stat = 0.0;  ///< MH acceptance probability (HMC: of the trajectory; slice: 1)
  double adapt_stat = 0.0;   ///< what the step-size adaptation is fed (slice: see ThetaKernel)
};

/// One chain's θ-kernel: the kind chosen in RunConfig, its step size (slice: the initial interval
/// width), the metric, and their warm-up adaptation.
class ThetaKernel {
 public:
  /// @param p dimension of θ; @param eps0 initial step size (width) in the metric's units.
  ThetaKernel(const RunConfig& cfg, std::size_t p, InverseMetric metric, double eps0)
      : kind_(cfg.kernel),
        slice_mode_(cfg.slice_mode),
        hmc_steps_(cfg.hmc_steps),
        p_(p),
        eps_(eps0),
        target_(cfg.resolved_target_accept()),
        metric_(std::move(metric)),
        adapt_(eps0, target_),
        metric_adapt_(cfg.adapt_metric ? metric_.form() : InverseMetric::Form::identity, p,
                      cfg.warmup),
        a_(p),
        b_(p),
        c_(p),
        d_(p),
        e_(p) {}

  bool needs_gradient() const noexcept {
    return kind_ == KernelKind::mala || kind_ == KernelKind::hmc;
  }
  double step_size() const noexcept { return eps_; }
  const InverseMetric& metric() const noexcept { return metric_; }

  /// One θ-step from `s` on `target`; `s` is updated in place when the chain moves.
  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c) {
    switch (kind_) {
      case KernelKind::rwmh:
        return rwmh(rng, s, target, c);
      case KernelKind::mala:
        return mala(rng, s, target, c);
      case KernelKind::hmc:
        return hmc(rng, s, target, c);
      case KernelKind::slice:
        return slice(rng, s, target, c);
    }
    return {};
  }

  /// Warm-up iteration `it` (0-based) finished with `info` at θ: adapts the step size and, in
  /// the slow windows, the metric (restarting the step-size adaptation when the metric changes).
  void adapt(long it, const StepInfo& info, const double* theta) {
    eps_ = adapt_.update(info.adapt_stat);
    if (metric_adapt_.add(it, theta, metric_)) adapt_ = DualAveraging(eps_, target_);
  }
  /// End of warm-up: the averaged step size is frozen.
  void end_warmup() noexcept { eps_ = adapt_.final_step_size(); }

  /// Appends the adaptation state (step size, dual averaging, metric, window sums) to `out`.
  void save(std::vector<double>& out) const {
    out.push_back(eps_);
    const DualAveraging::State a = adapt_.state();
    out.insert(out.end(),
               {a.mu, a.target, a.gamma, a.t0, a.kappa, a.t, a.h_bar, a.log_eps, a.log_eps_bar});
    metric_.save(out);
    metric_adapt_.save(out);
  }
  /// Restores what save() wrote. @throw ConfigError for values that do not fit.
  void load(std::span<const double> in) {
    std::size_t pos = 0;
    if (in.size() < 10) throw ConfigError("kernel state: truncated");
    eps_ = in[pos++];
    DualAveraging::State a{};
    a.mu = in[pos++], a.target = in[pos++], a.gamma = in[pos++], a.t0 = in[pos++];
    a.kappa = in[pos++], a.t = in[pos++], a.h_bar = in[pos++], a.log_eps = in[pos++];
    a.log_eps_bar = in[pos++];
    adapt_.set_state(a);
    InverseMetric m = InverseMetric::load(in, pos);
    if (m.dim() != p_ || m.form() != metric_.form())
      throw ConfigError("kernel state: the metric does not fit the run");
    metric_ = std::move(m);
    metric_adapt_.load(in, pos);
    if (pos != in.size()) throw ConfigError("kernel state: trailing values");
  }

  /// HMC's kinetic energy ½·pᵀM⁻¹p under the current metric.
  double kinetic_energy(const double* p) {
    double* v = c_.data();
    metric_.mul_inv(p, v);
    double k = 0.0;
    for (std::size_t j = 0; j < p_; ++j) k += p[j] * v[j];
    return 0.5 * k;
  }

  /// HMC's integrator: `steps` leapfrog steps of size `eps` from (q, p), in place; `g` and `lp`
  /// hold ∇ log π and log π at q on entry and are updated with it. Returns false (a divergence,
  /// the trajectory stopped where it was) when log π is not finite or the potential −log π rises
  /// more than 1000 above the initial energy `h0`. Public for the tests (reversibility, volume
  /// preservation, the O(ε²) energy error).
  template <class Target>
  bool leapfrog(Target& target, double* q, double* p, double* g, double& lp, double eps, int steps,
                double h0, Counters& c) {
    double* v = c_.data();
    for (int l = 0; l < steps; ++l) {
      for (std::size_t j = 0; j < p_; ++j) p[j] += 0.5 * eps * g[j];
      metric_.mul_inv(p, v);
      for (std::size_t j = 0; j < p_; ++j) q[j] += eps * v[j];
      lp = target.eval_grad(q, g, c);
      if (!std::isfinite(lp)) {
        if (failed(lp)) ++c.nonfinite;
        return false;
      }
      for (std::size_t j = 0; j < p_; ++j) p[j] += 0.5 * eps * g[j];
      if (-lp > h0 + 1000.0) return false;  // the potential alone is 1000 above the initial energy
    }
    return true;
  }

 private:
  static bool accept_mh(Rng& rng, double log_ratio) {
    return log_ratio >= 0.0 || std::log(rng.uniform_pos()) < log_ratio;
  }
  static double accept_prob(double log_ratio) {
    return log_ratio >= 0.0 ? 1.0 : std::exp(log_ratio);
  }
  /// A log density of NaN or +inf is a failure of the model or of the arithmetic: the proposal is
  /// rejected and counted (Counters::nonfinite). −inf is an ordinary zero density (FlyMC meets it
  /// where a bright datum's bound touches its likelihood): rejected, not counted.
  static bool failed(double lp) noexcept {
    return std::isnan(lp) || lp == std::numeric_limits<double>::infinity();
  }

  /// θ' = θ + ε·L·η, accepted with min(1, π(θ')/π(θ)) (symmetric proposal).
  template <class Target>
  StepInfo rwmh(Rng& rng, ThetaState& s, Target& target, Counters& c) {
    double* prop = a_.data();
    {
      PhaseTimer t(c.profile, Phase::proposal);
      if (metric_.form() == InverseMetric::Form::identity) {
        for (std::size_t j = 0; j < p_; ++j) prop[j] = s.theta[j] + eps_ * rng.normal();
      } else {
        for (std::size_t j = 0; j < p_; ++j) b_[j] = rng.normal();
        metric_.mul_sqrt(b_.data(), c_.data());
        for (std::size_t j = 0; j < p_; ++j) prop[j] = s.theta[j] + eps_ * c_[j];
      }
    }
    const double lp = target.eval(prop, c);
    PhaseTimer t(c.profile, Phase::accept);
    const double log_ratio = lp - s.logp;
    // NaN (−inf − −inf, or a NaN density) is a rejection with probability 0.
    if (failed(lp) || std::isnan(log_ratio)) {
      if (failed(lp)) ++c.nonfinite;
      return {0.0, 0.0};
    }
    const double a = accept_prob(log_ratio);
    if (accept_mh(rng, log_ratio)) {
      std::copy(prop, prop + p_, s.theta.begin());
      s.logp = lp;
      target.accept();
    }
    return {a, a};
  }

  /// MALA with preconditioner M⁻¹ = LLᵀ: θ' = θ + (ε²/2)M⁻¹∇ log π(θ) + ε·L·η, accepted with the
  /// MH ratio of the asymmetric Gaussian proposals, log q(x'|x) = −|L⁻¹(x' − μ(x))|²/(2ε²).
  template <class Target>
  StepInfo mala(Rng& rng, ThetaState& s, Target& target, Counters& c) {
    double* prop = a_.data();
    double* eta = b_.data();
    double* grad_new = d_.data();
    const double h = 0.5 * eps_ * eps_;
    double fwd = 0.0;  // |η|²/2 = −log q(θ'|θ)
    {
      PhaseTimer t(c.profile, Phase::proposal);
      for (std::size_t j = 0; j < p_; ++j) {
        eta[j] = rng.normal();
        fwd += eta[j] * eta[j];
      }
      fwd *= 0.5;
      metric_.mul_inv(s.grad.data(), c_.data());
      for (std::size_t j = 0; j < p_; ++j) prop[j] = s.theta[j] + h * c_[j];
      metric_.mul_sqrt(eta, c_.data());
      for (std::size_t j = 0; j < p_; ++j) prop[j] += eps_ * c_[j];
    }
    const double lp = target.eval_grad(prop, grad_new, c);
    PhaseTimer t(c.profile, Phase::accept);
    if (!std::isfinite(lp)) {
      if (failed(lp)) ++c.nonfinite;
      return {0.0, 0.0};
    }
    // Reverse move: r = θ − θ' − (ε²/2)M⁻¹∇ log π(θ'); log q(θ|θ') = −|L⁻¹r|²/(2ε²).
    metric_.mul_inv(grad_new, c_.data());
    for (std::size_t j = 0; j < p_; ++j) e_[j] = s.theta[j] - prop[j] - h * c_[j];
    metric_.solve_sqrt(e_.data(), c_.data());
    double rev = 0.0;
    for (std::size_t j = 0; j < p_; ++j) rev += c_[j] * c_[j];
    rev *= 0.5 / (eps_ * eps_);
    const double log_ratio = lp - s.logp - rev + fwd;
    if (std::isnan(log_ratio)) {  // a gradient that is not finite at θ'
      ++c.nonfinite;
      return {0.0, 0.0};
    }
    const double a = accept_prob(log_ratio);
    if (accept_mh(rng, log_ratio)) {
      std::copy(prop, prop + p_, s.theta.begin());
      std::copy(grad_new, grad_new + p_, s.grad.begin());
      s.logp = lp;
      target.accept();
    }
    return {a, a};
  }

  /// HMC: momentum p ~ N(0, M), L leapfrog steps of size ε·u (u ~ U(0.8, 1.2) per trajectory,
  /// which avoids the periodic orbits of a fixed length), MH on the Hamiltonian
  /// H = −log π(θ) + ½pᵀM⁻¹p. A trajectory whose energy error exceeds 1000 (or meets a
  /// non-finite density) is divergent: stopped and rejected, and counted.
  template <class Target>
  StepInfo hmc(Rng& rng, ThetaState& s, Target& target, Counters& c) {
    double* q = a_.data();
    double* p = b_.data();
    double* g = d_.data();
    const double eps = eps_ * (0.8 + 0.4 * rng.uniform());
    {
      PhaseTimer t(c.profile, Phase::proposal);
      for (std::size_t j = 0; j < p_; ++j) e_[j] = rng.normal();
      metric_.momentum(e_.data(), p);
    }
    const double h0 = -s.logp + kinetic_energy(p);
    std::copy(s.theta.begin(), s.theta.end(), q);
    std::copy(s.grad.begin(), s.grad.end(), g);
    double lp = s.logp;
    const bool divergent = !leapfrog(target, q, p, g, lp, eps, hmc_steps_, h0, c);
    PhaseTimer t(c.profile, Phase::accept);
    if (divergent) {
      ++c.divergences;
      return {0.0, 0.0};
    }
    const double h1 = -lp + kinetic_energy(p);
    const double log_ratio = h0 - h1;
    if (std::isnan(log_ratio) || log_ratio < -1000.0) {
      if (std::isnan(log_ratio)) ++c.nonfinite;  // a gradient that is not finite at the end
      ++c.divergences;
      return {0.0, 0.0};
    }
    const double a = accept_prob(log_ratio);
    if (accept_mh(rng, log_ratio)) {
      std::copy(q, q + p_, s.theta.begin());
      std::copy(g, g + p_, s.grad.begin());
      s.logp = lp;
      target.accept();
    }
    return {a, a};
  }

  /// Slice sampling (Neal 2003): along a random direction L·η/|η|, or along every coordinate in
  /// turn (scaled by the metric's diagonal). Each univariate update draws the slice level
  /// log y = log π − Exp(1), places an interval of width w at random around the point, steps it
  /// out (Neal's procedure with at most m = 50 steps, split at random between the two ends, which
  /// keeps it reversible) and shrinks it until a point inside the slice is found. The width is
  /// adapted in warm-up so that stepping-out steps make up half of the interval moves
  /// (adapt_stat = expansions / (expansions + shrinks)): too narrow an interval mostly expands,
  /// too wide a one mostly shrinks.
  template <class Target>
  StepInfo slice(Rng& rng, ThetaState& s, Target& target, Counters& c) {
    double* dir = c_.data();
    long expansions = 0, shrinks = 0;
    if (slice_mode_ == SliceMode::direction) {
      double norm = 0.0;
      for (std::size_t j = 0; j < p_; ++j) {
        e_[j] = rng.normal();
        norm += e_[j] * e_[j];
      }
      norm = 1.0 / std::sqrt(norm);
      for (std::size_t j = 0; j < p_; ++j) e_[j] *= norm;
      metric_.mul_sqrt(e_.data(), dir);
      slice_1d(rng, s, target, c, dir, expansions, shrinks);
    } else {
      for (std::size_t k = 0; k < p_; ++k) {
        std::fill(dir, dir + p_, 0.0);
        dir[k] = metric_.scale(k);
        slice_1d(rng, s, target, c, dir, expansions, shrinks);
      }
    }
    const long moves = expansions + shrinks;
    return {1.0, moves > 0 ? static_cast<double>(expansions) / static_cast<double>(moves) : 0.5};
  }

  template <class Target>
  void slice_1d(Rng& rng, ThetaState& s, Target& target, Counters& c, const double* dir,
                long& expansions, long& shrinks) {
    double* x = a_.data();
    auto at = [&](double t) {
      for (std::size_t j = 0; j < p_; ++j) x[j] = s.theta[j] + t * dir[j];
      const double lp = target.eval(x, c);
      if (!failed(lp)) return lp;
      ++c.nonfinite;
      return -std::numeric_limits<double>::infinity();  // outside every slice
    };
    constexpr int kMaxSteps = 50;  // Neal's m
    const double log_y = s.logp + std::log(rng.uniform_pos());
    const double w = eps_;
    double lo = -w * rng.uniform(), hi = lo + w;
    int j = static_cast<int>(std::floor(kMaxSteps * rng.uniform()));
    int k = kMaxSteps - 1 - j;
    while (j-- > 0 && at(lo) > log_y) {
      lo -= w;
      ++expansions;
    }
    while (k-- > 0 && at(hi) > log_y) {
      hi += w;
      ++expansions;
    }
    while (true) {
      const double t = lo + (hi - lo) * rng.uniform();
      const double lp = at(t);
      if (lp > log_y) {  // the last evaluation is the accepted point
        std::copy(x, x + p_, s.theta.begin());
        s.logp = lp;
        target.accept();
        return;
      }
      // The current point (t = 0) is in its own slice and always inside the interval, so this
      // ends. It did not if the interval has shrunk below the resolution of θ (the point tried
      // is θ itself) and θ is still outside: the cached log density is not θ's (a non-finite one,
      // or a target that missed an accept()). Then stay, rather than shrink for 1e5 evaluations.
      if (std::equal(x, x + p_, s.theta.begin())) return;
      ++shrinks;
      if (t < 0.0) {
        lo = t;
      } else {
        hi = t;
      }
      if (!(hi - lo > 0.0) || shrinks > 100000) return;
    }
  }

  KernelKind kind_;
  SliceMode slice_mode_;
  int hmc_steps_;
  std::size_t p_;
  double eps_;
  double target_;
  InverseMetric metric_;
  DualAveraging adapt_;
  MetricAdaptation metric_adapt_;
  std::vector<double> a_, b_, c_, d_, e_;  // scratch, p entries each
};

}  // namespace flymc
