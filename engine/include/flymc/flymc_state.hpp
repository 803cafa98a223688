#pragma once
/// @file flymc_state.hpp
/// The building blocks of one chain: log-density targets (FlyMC's log p(θ | z) and the full
/// posterior), the random-walk MH θ-kernel, and the two z-updaters. Templates over the target keep
/// virtual calls out of the hot loop (Stan's static polymorphism); the runner erases the type.
///
/// Thread safety: none of these objects may be shared between threads; the model and bound they
/// reference are immutable and shared by all chains.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "flymc/bright_set.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/logistic.hpp"
#include "flymc/profile.hpp"
#include "flymc/rng.hpp"

namespace flymc {

/// Counters a chain accumulates.
struct Counters {
  std::uint64_t queries = 0;           ///< likelihood evaluations L_n
  std::uint64_t bound_violations = 0;  ///< log B_n > log L_n beyond rounding (BoundCheck): a bug
  std::uint64_t bound_clamps = 0;      ///< log B_n > log L_n within rounding, clamped (BoundCheck)
  std::uint64_t nonfinite = 0;         ///< proposals rejected because log density was not finite
  Profile* profile = nullptr;          ///< phase timers, only in the profiling harness

  void add(const BoundCheck& b) noexcept {
    bound_violations += b.violations;
    bound_clamps += b.clamped;
  }
};

/// log p(θ | data) for regular MCMC: every datum is queried at every evaluation.
class FullTarget {
 public:
  explicit FullTarget(const LogisticModel& model) : model_(&model) {}
  /// Log density at padded θ (stride() entries).
  double eval(const double* theta, Counters& c) {
    c.queries += model_->num_data();
    double lp;
    {
      PhaseTimer t(c.profile, Phase::prior_bound);
      lp = model_->log_prior(theta);
    }
    PhaseTimer t(c.profile, Phase::likelihood);
    return lp + model_->log_lik(theta);
  }
  void accept() noexcept {}
  const LogisticModel& model() const noexcept { return *model_; }

 private:
  const LogisticModel* model_;
};

/// log p(θ | z) = log p(θ) + Σ_n log B_n(θ) + Σ_{bright} log L̃_n(θ)  (MATH.md 1), evaluated with
/// the collapsed bound and one pass over the packed bright rows.
class FlyTarget {
 public:
  FlyTarget(const LogisticModel& model, const LogisticBound& bound, BrightSet& bright)
      : model_(&model),
        bound_(&bound),
        bright_(&bright),
        scratch_(aligned_zeros(2 * model.stride())) {}

  double eval(const double* theta, Counters& c) {
    const std::size_t nb = bright_->size();
    if (pending_.size() < nb) pending_.resize(bright_->capacity());
    if (dots_.size() < nb) dots_.resize(bright_->capacity());
    double base;
    {
      PhaseTimer t(c.profile, Phase::prior_bound);
      base = model_->log_prior(theta) + bound_->log_bound_sum(theta, scratch_.get());
    }
    PhaseTimer t(c.profile, Phase::likelihood);
    kernels::dots_packed(bright_->packed_rows(), nb, bright_->stride(), theta, dots_.data());
    c.add(bound_->deltas(bright_->bright_indices(), dots_.data(), nb, dots_.data()));
    kernels::log_expm1(dots_.data(), pending_.data(), nb);
    c.queries += nb;
    pending_base_ = base;
    return base + sum(pending_.data(), nb);
  }
  /// The last eval()'s θ was accepted: its per-bright log L̃ become the cached ones.
  void accept() {
    bright_->swap_log_ltilde(pending_);
    base_ = pending_base_;
  }
  /// log p(θ | z) at the current θ from the cached values (after a z-update changed z).
  double current() const noexcept { return base_ + sum(bright_->log_ltilde(), bright_->size()); }
  /// Sets the cached prior+bound part for the current θ (chain start).
  void set_base(double base) noexcept { base_ = base; }
  double base_at(const double* theta) const {
    return model_->log_prior(theta) + bound_->log_bound_sum(theta, scratch_.get());
  }

 private:
  static double sum(const double* v, std::size_t n) noexcept {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += v[i];
    return s;
  }
  const LogisticModel* model_;
  const LogisticBound* bound_;
  BrightSet* bright_;
  AlignedBuffer scratch_;
  std::vector<double> pending_, dots_;
  double base_ = 0.0, pending_base_ = 0.0;
};

/// Random-walk Metropolis–Hastings, θ' = θ + ε·η with η ~ N(0, I) (MATH.md 3).
/// With a proposal scale matrix L (lower triangular, D rows `stride` apart) the step is
/// θ' = θ + ε·L·η, a random walk with covariance ε²LLᵀ (still symmetric: the MH ratio is the
/// target ratio). L = null is the identity.
struct RwmhKernel {
  double step_size = 0.1;
  std::size_t dim = 0, stride = 0;
  AlignedBuffer proposal;     // padded θ'
  AlignedBuffer eta;          // padded η
  const double* L = nullptr;  // optional scale, D × stride, lower triangular

  RwmhKernel() = default;
  RwmhKernel(std::size_t d, std::size_t s, double eps, const double* scale = nullptr)
      : step_size(eps),
        dim(d),
        stride(s),
        proposal(aligned_zeros(s)),
        eta(aligned_zeros(s)),
        L(scale) {}

  /// One MH step on `target` from padded `theta` with cached log density `logp`. Returns the
  /// acceptance probability; updates theta/logp in place on acceptance.
  template <class Target>
  double step(Rng& rng, double* theta, double& logp, Target& target, Counters& c) {
    {
      PhaseTimer t(c.profile, Phase::proposal);
      if (L == nullptr) {
        for (std::size_t j = 0; j < dim; ++j) proposal[j] = theta[j] + step_size * rng.normal();
      } else {
        for (std::size_t j = 0; j < dim; ++j) eta[j] = rng.normal();
        // Row j of L is zero past j (and in the padding), so a full padded dot is L_j·η.
        for (std::size_t j = 0; j < dim; ++j)
          proposal[j] = theta[j] + step_size * kernels::dot(L + j * stride, eta.get(), stride);
      }
    }
    const double logp_new = target.eval(proposal.get(), c);
    PhaseTimer t(c.profile, Phase::accept);
    double accept_prob = 0.0;
    if (std::isnan(logp_new)) {
      ++c.nonfinite;
    } else {
      const double log_ratio = logp_new - logp;
      // -inf - -inf is NaN: a move between two zero-density points is rejected (probability 0),
      // so no NaN reaches the step-size adaptation.
      if (std::isnan(log_ratio)) return 0.0;
      accept_prob = log_ratio >= 0.0 ? 1.0 : std::exp(log_ratio);
      if (log_ratio >= 0.0 || std::log(rng.uniform_pos()) < log_ratio) {
        for (std::size_t j = 0; j < dim; ++j) theta[j] = proposal[j];
        logp = logp_new;
        target.accept();
      }
    }
    return accept_prob;
  }
};

/// Shared scratch for the z-updaters.
struct ZScratch {
  std::vector<Index> idx, flip;
  std::vector<double> a, b, c;
  void reserve(std::size_t k) {
    if (a.size() < k) {
      a.resize(k);
      b.resize(k);
      c.resize(k);
    }
  }
};

/// Gibbs updates z_n ~ Bernoulli(1 − B_n/L_n) at θ for the data `idx[0, k)` (in that order;
/// repeated indices are fine: each is an exact Gibbs update at the same θ). Paper Algorithm 1.
inline void gibbs_z(const LogisticBound& bound, const Dataset& data, BrightSet& bright,
                    const double* theta, const Index* idx, std::size_t k, Rng& rng, Counters& c,
                    ZScratch& s) {
  s.reserve(k);
  double* delta = s.a.data();
  double* p_dark = s.b.data();
  double* llt = s.c.data();
  kernels::dots_gather(data.data(), data.stride(), idx, k, theta, delta);
  c.add(bound.deltas(idx, delta, k, delta));
  c.queries += k;
  // P(z = 0) = B/L = e^{−Δ}: one vectorized exp; log L̃ = log expm1(Δ) likewise.
  for (std::size_t i = 0; i < k; ++i) p_dark[i] = -delta[i];
  kernels::exp(p_dark, p_dark, k);
  kernels::log_expm1(delta, llt, k);
  for (std::size_t i = 0; i < k; ++i) {
    const bool z1 = rng.uniform() >= p_dark[i];
    const Index n = idx[i];
    if (z1 && !bright.is_bright(n)) {
      bright.brighten(n, llt[i]);
    } else if (!z1 && bright.is_bright(n)) {
      bright.darken(n);
    }
  }
}

/// Explicit z-resampling of ⌈N·f⌉ data drawn uniformly with replacement (MATH.md 1.1).
class ExplicitZUpdater {
 public:
  explicit ExplicitZUpdater(double fraction) : fraction_(fraction) {}
  void update(const LogisticBound& bound, const Dataset& data, BrightSet& bright,
              const double* theta, Rng& rng, Counters& c) {
    const std::size_t n = data.n();
    const auto k = static_cast<std::size_t>(std::ceil(double(n) * fraction_));
    s_.idx.resize(k);
    for (std::size_t i = 0; i < k; ++i) s_.idx[i] = static_cast<Index>(rng.below(n));
    gibbs_z(bound, data, bright, theta, s_.idx.data(), k, rng, c, s_);
  }

 private:
  double fraction_;
  ZScratch s_;
};

/// Implicit z-resampling by MH with q_{d→b} = q, q_{b→d} = 1 (MATH.md 1.2): every bright datum
/// proposes to go dark, accepted w.p. min(1, q/L̃_n) (no query: L̃_n is cached); each dark datum
/// proposes to go bright w.p. q, chosen by geometric gaps, accepted w.p. min(1, L̃_n/q) (one query).
/// All proposals are made against the z at the start of the sweep; the z_n are conditionally
/// independent given θ, so the sweep is a product of valid single-datum MH kernels.
/// Acceptance tests compare a uniform with a probability computed by a vectorized exp, and the
/// geometric gaps take their logs in vectorized batches: no scalar libm call per datum.
class ImplicitZUpdater {
 public:
  explicit ImplicitZUpdater(double q)
      : log_q_(std::log(q)), inv_log1mq_(q < 1.0 ? 1.0 / std::log1p(-q) : 0.0), q_one_(q >= 1.0) {}

  void update(const LogisticBound& bound, const Dataset& data, BrightSet& bright,
              const double* theta, Rng& rng, Counters& c) {
    // 1. Bright → dark proposals: darken iff u < q/L̃_n = exp(log q − log L̃_n).
    const std::size_t nb = bright.size();
    s_.reserve(nb);
    const double* llt = bright.log_ltilde();
    double* thr = s_.a.data();
    for (std::size_t i = 0; i < nb; ++i) thr[i] = log_q_ - llt[i];
    kernels::exp(thr, thr, nb);
    s_.flip.clear();
    for (std::size_t i = 0; i < nb; ++i)
      if (rng.uniform() < thr[i]) s_.flip.push_back(bright.bright(i));
    // 2. Dark → bright proposals: positions in the dark list with Geometric(q) gaps.
    propose_darks(bright, rng);
    const std::size_t k = s_.idx.size();
    // 3. One query per proposal: log L̃_n at θ; accept iff u < L̃_n/q = exp(log L̃_n − log q).
    s_.reserve(k);
    double* delta = s_.a.data();
    double* acc = s_.b.data();
    double* lt = s_.c.data();
    if (k > 0) {
      kernels::dots_gather(data.data(), data.stride(), s_.idx.data(), k, theta, delta);
      c.add(bound.deltas(s_.idx.data(), delta, k, delta));
      kernels::log_expm1(delta, lt, k);
      for (std::size_t i = 0; i < k; ++i) acc[i] = lt[i] - log_q_;
      kernels::exp(acc, acc, k);
      c.queries += k;
    }
    // 4. Apply: darken first (their proposals were decided), then brighten the accepted darks.
    for (Index n : s_.flip) bright.darken(n);
    for (std::size_t i = 0; i < k; ++i)
      if (rng.uniform() < acc[i]) bright.brighten(s_.idx[i], lt[i]);
  }

 private:
  /// Fills s_.idx with the dark data proposed to go bright: each independently w.p. q, found by
  /// skipping Geometric(q) gaps, gap = ⌊log(u)/log(1−q)⌋, logs taken 64 at a time.
  void propose_darks(const BrightSet& bright, Rng& rng) {
    const std::size_t nd = bright.num_dark();
    s_.idx.clear();
    if (q_one_) {
      for (std::size_t i = 0; i < nd; ++i) s_.idx.push_back(bright.dark(i));
      return;
    }
    constexpr std::size_t kBatch = 64;
    alignas(64) double lu[kBatch];
    double pos = 0.0;  // next candidate position in the dark list
    const double end = static_cast<double>(nd);
    while (true) {
      for (std::size_t i = 0; i < kBatch; ++i) lu[i] = rng.uniform_pos();
      kernels::log(lu, lu, kBatch);
      for (std::size_t i = 0; i < kBatch; ++i) {
        pos += std::floor(lu[i] * inv_log1mq_);
        if (pos >= end) return;
        s_.idx.push_back(bright.dark(static_cast<std::size_t>(pos)));
        pos += 1.0;
      }
    }
  }

  double log_q_, inv_log1mq_;
  bool q_one_;
  ZScratch s_;
};

}  // namespace flymc
