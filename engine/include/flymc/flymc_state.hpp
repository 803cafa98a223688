#pragma once
/// @file flymc_state.hpp
/// The building blocks of one chain: log-density targets (FlyMC's log p(θ | z) and the full
/// posterior) and the two z-updaters (the θ-kernels are in theta_kernels.hpp). Templates over the
/// target keep virtual calls out of the hot loop (Stan's static polymorphism); the runner erases
/// the type.
///
/// Thread safety: none of these objects may be shared between threads; the model and bound they
/// reference are immutable and shared by all chains.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "flymc/bright_set.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/model.hpp"
#include "flymc/profile.hpp"
#include "flymc/rng.hpp"

namespace flymc {

/// Counters a chain accumulates.
struct Counters {
  std::uint64_t queries = 0;           ///< likelihood evaluations L_n
  std::uint64_t grad_evals = 0;        ///< gradient evaluations of the target
  std::uint64_t divergences = 0;       ///< HMC trajectories stopped by a diverging energy
  std::uint64_t bound_violations = 0;  ///< log B_n > log L_n beyond rounding (BoundCheck): a bug
  std::uint64_t bound_clamps = 0;      ///< log B_n > log L_n within rounding, clamped (BoundCheck)
  std::uint64_t nonfinite = 0;         ///< proposals rejected because log density was not finite
  Profile* profile = nullptr;          ///< phase timers, only in the profiling harness

  void add(const BoundCheck& b) noexcept {
    bound_violations += b.violations;
    bound_clamps += b.clamped;
  }
};

/// The K linear predictors of gathered rows base[idx[i]] at padded θ (K blocks of `stride`).
inline void gather_predictors(std::size_t K, const Dataset& data, const Index* idx, std::size_t k,
                              const double* theta_pad, double* out) noexcept {
  if (K == 1) {
    kernels::dots_gather(data.data(), data.stride(), idx, k, theta_pad, out);
  } else {
    kernels::dots_gather_multi(data.data(), data.stride(), idx, k, theta_pad, K, data.stride(),
                               out);
  }
}
/// The same for contiguous rows.
inline void packed_predictors(std::size_t K, const double* rows, std::size_t nrows,
                              std::size_t stride, const double* theta_pad, double* out) noexcept {
  if (K == 1) {
    kernels::dots_packed(rows, nrows, stride, theta_pad, out);
  } else {
    kernels::dots_packed_multi(rows, nrows, stride, theta_pad, K, stride, out);
  }
}

/// The data a z-update flipped, with their coefficients ∂ log L̃_n/∂ψ_n at θ (K each), when the
/// bright set caches coefficients (gradient kernels): enough to update ∇ log p(θ | z) without
/// touching the data that kept their state (FlyTarget::apply_flips).
struct FlipLog {
  std::vector<Index> on, off;             ///< brightened, darkened (in the order applied)
  std::vector<double> on_coef, off_coef;  ///< K per entry
  void clear() noexcept {
    on.clear();
    off.clear();
    on_coef.clear();
    off_coef.clear();
  }
};

/// Records the darkening of bright datum n (with its cached coefficients), if coefficients are
/// cached, and darkens it.
inline void darken_logged(BrightSet& bright, Index n, FlipLog& log) {
  const std::size_t K = bright.coef_width();
  if (K > 0) {
    const double* co = bright.coefs() + bright.position(n) * K;
    log.off.push_back(n);
    log.off_coef.insert(log.off_coef.end(), co, co + K);
  }
  bright.darken(n);
}
/// Brightens dark datum n with its log L̃ and (if cached) coefficients, recording it.
inline void brighten_logged(BrightSet& bright, Index n, double llt, const double* coef,
                            FlipLog& log) {
  const std::size_t K = bright.coef_width();
  if (K > 0) {
    log.on.push_back(n);
    log.on_coef.insert(log.on_coef.end(), coef, coef + K);
  }
  bright.brighten(n, llt, coef);
}

/// log p(θ | data) for regular MCMC: every datum is queried at every evaluation. θ is dense
/// (model.hpp); the target pads it for the row kernels.
///
/// The target contract, shared with FlyTarget: eval() / eval_grad() evaluate at a proposal
/// without changing the chain's state; accept() adopts the most recent evaluation as the
/// chain's current point (kernels call it right after evaluating the point they accept).
template <FireflyModel M>
class FullTarget {
 public:
  explicit FullTarget(const M& model)
      : model_(&model),
        lay_(model.layout()),
        tp_(aligned_zeros(lay_.padded())),
        gp_(aligned_zeros(lay_.padded())) {}
  std::size_t dim() const noexcept { return lay_.dim(); }
  double eval(const double* theta, Counters& c) {
    c.queries += model_->num_data();
    double lp;
    {
      PhaseTimer t(c.profile, Phase::prior_bound);
      lp = model_->prior().log_density(theta, lay_.dim());
      lay_.pad(theta, tp_.get());
    }
    PhaseTimer t(c.profile, Phase::likelihood);
    return lp + model_->log_lik(tp_.get());
  }
  double eval_grad(const double* theta, double* grad, Counters& c) {
    c.queries += model_->num_data();
    ++c.grad_evals;
    lay_.pad(theta, tp_.get());
    double ll;
    {
      PhaseTimer t(c.profile, Phase::likelihood);
      ll = model_->log_lik_grad(tp_.get(), gp_.get());
    }
    PhaseTimer t(c.profile, Phase::prior_bound);
    lay_.unpad(gp_.get(), grad);
    model_->prior().add_gradient(theta, lay_.dim(), grad);
    return ll + model_->prior().log_density(theta, lay_.dim());
  }
  void accept() noexcept {}
  const M& model() const noexcept { return *model_; }

 private:
  const M* model_;
  ParamLayout lay_;
  AlignedBuffer tp_, gp_;
};

/// log p(θ | z) = log p(θ) + Σ_n log B_n(θ) + Σ_{bright} log L̃_n(θ)  (MATH.md 1), evaluated with
/// the collapsed bound and one pass over the packed bright rows. Its gradient adds, per bright n,
/// ∇ log L̃_n = (∇ log L_n − ∇ log B_n)·e^{Δ_n}/expm1(Δ_n), formed from the bound's ∂Δ_n/∂ψ_n
/// as ∂Δ/∂ψ · exp(Δ − log L̃) (no cancellation at small Δ) and summed over the packed rows by
/// one weighted row sum per predictor. The per-bright log L̃ of the last evaluation are kept
/// (pending) and become the cached ones on accept(), so an accepted move costs no re-evaluation.
template <FireflyModel M>
class FlyTarget {
 public:
  using Bound = typename M::Bound;
  FlyTarget(const M& model, const Bound& bound, BrightSet& bright)
      : model_(&model),
        bound_(&bound),
        bright_(&bright),
        lay_(model.layout()),
        tp_(aligned_zeros(lay_.padded())),
        cur_(aligned_zeros(lay_.padded())),
        gp_(aligned_zeros(lay_.padded())),
        scratch_(aligned_zeros(bound.scratch_size())) {}

  std::size_t dim() const noexcept { return lay_.dim(); }

  double eval(const double* theta, Counters& c) {
    last_grad_ = false;
    return evaluate<false>(theta, nullptr, c);
  }
  double eval_grad(const double* theta, double* grad, Counters& c) {
    ++c.grad_evals;
    last_grad_ = true;
    return evaluate<true>(theta, grad, c);
  }
  /// The last eval()'s θ was accepted: its per-bright log L̃ (and, after eval_grad, their
  /// gradient coefficients, when the bright set caches them) become the cached ones.
  void accept() {
    bright_->swap_log_ltilde(pending_);
    if (bright_->coef_width() > 0) {
      // A bright set caching coefficients is only evaluated with gradients (MALA, HMC).
      if (!last_grad_) throw std::logic_error("FlyTarget: accept() after eval() without gradient");
      bright_->swap_coefs(dpsi_);
    }
    std::swap(tp_, cur_);
    base_ = pending_base_;
  }
  /// Updates ∇ log p(θ | z) (dense, `grad`) at the current θ for the data a z-update flipped:
  /// + ∂ log L̃_n/∂ψ_n ⊗ x_n for each brightened datum, − for each darkened one (MATH.md 1).
  /// O(flips · K · D) instead of a pass over every bright row. The result differs from a fresh
  /// evaluation only by rounding (~1e-16 relative), and every accepted move recomputes the
  /// gradient from scratch.
  void apply_flips(const FlipLog& log, double* grad) const noexcept {
    const Dataset& ds = model_->data();
    const std::size_t K = lay_.k, D = lay_.d;
    auto add = [&](const std::vector<Index>& idx, const std::vector<double>& co, double sign) {
      for (std::size_t i = 0; i < idx.size(); ++i) {
        const double* x = ds.row(idx[i]);
        for (std::size_t k = 0; k < K; ++k) {
          const double w = sign * co[i * K + k];
          if (w == 0.0) continue;
          double* g = grad + k * D;
          for (std::size_t j = 0; j < D; ++j) g[j] += w * x[j];
        }
      }
    };
    add(log.off, log.off_coef, -1.0);
    add(log.on, log.on_coef, 1.0);
  }
  /// log p(θ | z) at the current θ from the cached values (after a z-update changed z).
  double current() const noexcept { return base_ + sum(bright_->log_ltilde(), bright_->size()); }
  /// The current θ, padded, for the z-updaters.
  const double* current_padded() const noexcept { return cur_.get(); }
  /// Makes dense `theta` the current point (chain start, resume): the prior + bound part is
  /// computed, the bright cache is taken as it is (it must hold log L̃ at this θ).
  void set_current(const double* theta) {
    lay_.pad(theta, cur_.get());
    base_ = model_->prior().log_density(theta, lay_.dim()) +
            bound_->log_bound_sum(cur_.get(), scratch_.get(), nullptr);
  }

 private:
  template <bool kGrad>
  double evaluate(const double* theta, double* grad, Counters& c) {
    const std::size_t nb = bright_->size(), K = lay_.k, stride = lay_.stride;
    if (pending_.size() < nb) pending_.resize(bright_->capacity());
    if (delta_.size() < nb) delta_.resize(bright_->capacity());
    if (preds_.size() < nb * K) preds_.resize(bright_->capacity() * K);
    if (kGrad && dpsi_.size() < nb * K) dpsi_.resize(bright_->capacity() * K);
    double base;
    {
      PhaseTimer t(c.profile, Phase::prior_bound);
      lay_.pad(theta, tp_.get());
      base = model_->prior().log_density(theta, lay_.dim()) +
             bound_->log_bound_sum(tp_.get(), scratch_.get(), kGrad ? gp_.get() : nullptr);
    }
    PhaseTimer t(c.profile, Phase::likelihood);
    packed_predictors(K, bright_->packed_rows(), nb, stride, tp_.get(), preds_.data());
    const Index* idx = bright_->bright_indices();
    if constexpr (kGrad) {
      c.add(bound_->delta_grads(idx, preds_.data(), nb, delta_.data(), dpsi_.data()));
    } else {
      c.add(bound_->deltas(idx, preds_.data(), nb, delta_.data()));
    }
    kernels::log_expm1(delta_.data(), pending_.data(), nb);
    c.queries += nb;
    pending_base_ = base;
    const double lp = base + sum(pending_.data(), nb);
    if constexpr (kGrad) {
      // e^{Δ}/expm1(Δ) = exp(Δ − log L̃); where Δ was clamped to 0 the bound set ∂Δ/∂ψ = 0 and
      // log p = −inf, so the gradient there is never used (a rejected point).
      double* e = delta_.data();
      for (std::size_t i = 0; i < nb; ++i) e[i] -= pending_[i];
      kernels::exp(e, e, nb);
      for (std::size_t i = 0; i < nb; ++i)
        for (std::size_t k = 0; k < K; ++k) {
          double& v = dpsi_[i * K + k];
          v = v == 0.0 ? 0.0 : v * e[i];
        }
      // K > 1: one weighted sum per predictor, over blocks of kRowBlock rows, so that the K passes
      // read each block from L2 rather than the whole bright set K times from memory (each lane
      // still sums its rows in index order: the result is the same as unblocked).
      const std::size_t block = K == 1 ? std::max<std::size_t>(nb, 1) : kRowBlock;
      for (std::size_t b0 = 0; b0 < nb; b0 += block) {
        const std::size_t m = std::min(block, nb - b0);
        for (std::size_t k = 0; k < K; ++k)
          kernels::weighted_row_sum(bright_->packed_rows() + b0 * stride, m, stride,
                                    dpsi_.data() + b0 * K + k, K, gp_.get() + k * stride);
      }
      lay_.unpad(gp_.get(), grad);
      model_->prior().add_gradient(theta, lay_.dim(), grad);
    }
    return lp;
  }
  /// Rows per block of the gradient's weighted row sums for K > 1 (256 rows of D = 257: 0.5 MB).
  static constexpr std::size_t kRowBlock = 256;
  static double sum(const double* v, std::size_t n) noexcept {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += v[i];
    return s;
  }
  const M* model_;
  const Bound* bound_;
  BrightSet* bright_;
  ParamLayout lay_;
  AlignedBuffer tp_, cur_, gp_, scratch_;
  std::vector<double> pending_, delta_, preds_, dpsi_;
  double base_ = 0.0, pending_base_ = 0.0;
  bool last_grad_ = false;
};

/// Shared scratch for the z-updaters.
struct ZScratch {
  std::vector<Index> idx, flip, flip_scratch;
  std::vector<double> a, b, c, pred, coef;
  FlipLog log;
  /// Room for k data with K predictors each.
  void reserve(std::size_t k, std::size_t K = 1) {
    if (a.size() < k) {
      a.resize(k);
      b.resize(k);
      c.resize(k);
    }
    if (pred.size() < k * K) pred.resize(k * K);
  }
};

/// Δ_n at padded θ for the gathered data idx[0, k): K predictors per datum into s.pred, Δ into
/// `delta`. Counts k queries and the bound checks. With `coefs`, also ∂Δ_n/∂ψ_n (K per datum)
/// into s.coef, which gathered_coefs turns into ∂ log L̃_n/∂ψ_n once log L̃ is known.
template <class Bound>
void gathered_deltas(const Bound& bound, const Dataset& data, const double* theta, const Index* idx,
                     std::size_t k, Counters& c, ZScratch& s, double* delta, bool coefs = false) {
  gather_predictors(bound.outputs(), data, idx, k, theta, s.pred.data());
  if (coefs) {
    if (s.coef.size() < k * bound.outputs()) s.coef.resize(k * bound.outputs());
    c.add(bound.delta_grads(idx, s.pred.data(), k, delta, s.coef.data()));
  } else {
    c.add(bound.deltas(idx, s.pred.data(), k, delta));
  }
  c.queries += k;
}
/// Turns s.coef from ∂Δ/∂ψ into ∂ log L̃/∂ψ = ∂Δ/∂ψ · exp(Δ − log L̃), as FlyTarget does, using
/// `scratch` (k doubles).
inline void gathered_coefs(std::size_t K, std::size_t k, const double* delta, const double* llt,
                           double* scratch, ZScratch& s) {
  for (std::size_t i = 0; i < k; ++i) scratch[i] = delta[i] - llt[i];
  kernels::exp(scratch, scratch, k);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < K; ++j) {
      double& v = s.coef[i * K + j];
      v = v == 0.0 ? 0.0 : v * scratch[i];
    }
}

/// Gibbs updates z_n ~ Bernoulli(1 − B_n/L_n) at θ for the data `idx[0, k)` (in that order;
/// repeated indices are fine: each is an exact Gibbs update at the same θ). Paper Algorithm 1.
/// `theta` is padded (FlyTarget::current_padded()).
template <class Bound>
void gibbs_z(const Bound& bound, const Dataset& data, BrightSet& bright, const double* theta,
             const Index* idx, std::size_t k, Rng& rng, Counters& c, ZScratch& s) {
  const std::size_t K = bound.outputs();
  const bool coefs = bright.coef_width() > 0;
  s.reserve(k, K);
  s.log.clear();
  double* delta = s.a.data();
  double* p_dark = s.b.data();
  double* llt = s.c.data();
  gathered_deltas(bound, data, theta, idx, k, c, s, delta, coefs);
  // log L̃ = log expm1(Δ) (and with cached coefficients ∂ log L̃/∂ψ); P(z = 0) = B/L = e^{−Δ}:
  // vectorized.
  kernels::log_expm1(delta, llt, k);
  if (coefs) gathered_coefs(K, k, delta, llt, p_dark, s);
  for (std::size_t i = 0; i < k; ++i) p_dark[i] = -delta[i];
  kernels::exp(p_dark, p_dark, k);
  for (std::size_t i = 0; i < k; ++i) {
    const bool z1 = rng.uniform() >= p_dark[i];
    const Index n = idx[i];
    if (z1 && !bright.is_bright(n)) {
      brighten_logged(bright, n, llt[i], coefs ? s.coef.data() + i * K : nullptr, s.log);
    } else if (!z1 && bright.is_bright(n)) {
      darken_logged(bright, n, s.log);
    }
  }
}

/// Explicit z-resampling of ⌈N·f⌉ data drawn uniformly with replacement (MATH.md 1.1).
class ExplicitZUpdater {
 public:
  explicit ExplicitZUpdater(double fraction) : fraction_(fraction) {}
  template <class Bound>
  void update(const Bound& bound, const Dataset& data, BrightSet& bright, const double* theta,
              Rng& rng, Counters& c) {
    const std::size_t n = data.n();
    const auto k = static_cast<std::size_t>(std::ceil(double(n) * fraction_));
    s_.idx.resize(k);
    for (std::size_t i = 0; i < k; ++i) s_.idx[i] = static_cast<Index>(rng.below(n));
    gibbs_z(bound, data, bright, theta, s_.idx.data(), k, rng, c, s_);
  }
  /// The data the last update flipped (recorded when the bright set caches coefficients).
  const FlipLog& flips() const noexcept { return s_.log; }

 private:
  double fraction_;
  ZScratch s_;
};

/// Per-datum proposal rates of the implicit z-update (MATH.md 1.5), fixed for a run and shared
/// read-only by its chains: log q_n, and the data grouped into buckets of similar rate,
/// bucket b holding the n with q_n ∈ (2^−(b+1), 2^−b], so that dark data can be proposed
/// bucket by bucket at rate 2^−b by geometric skipping and thinned to q_n with probability
/// q_n·2^b ≥ 1/2. A sweep then costs O(Σ_n q_n) random numbers whatever the spread of the rates.
struct ZRates {
  std::vector<double> log_q;                ///< log q_n, q_n ∈ (0, 1]
  std::vector<std::vector<Index>> buckets;  ///< data of bucket b, ascending
  std::vector<double> log_rate, inv_log1m;  ///< per bucket: log 2^−b and 1/log(1 − 2^−b)

  /// Buckets for the given log rates (each ≤ 0; rates below 2^−60 share the last bucket).
  explicit ZRates(std::vector<double> log_rates) : log_q(std::move(log_rates)) {
    constexpr int kLast = 60;
    buckets.resize(kLast + 1);
    for (std::size_t i = 0; i < log_q.size(); ++i) {
      const double b = std::floor(-log_q[i] / std::log(2.0));
      buckets[static_cast<std::size_t>(std::clamp(b, 0.0, double(kLast)))].push_back(
          static_cast<Index>(i));
    }
    for (int b = 0; b <= kLast; ++b) {
      const double r = std::ldexp(1.0, -b);
      log_rate.push_back(-b * std::log(2.0));
      inv_log1m.push_back(b == 0 ? 0.0 : 1.0 / std::log1p(-r));
    }
  }
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
  /// Per-datum rates q_n (MATH.md 1.5), never depending on z: datum n is proposed to go bright
  /// with probability q_n (found bucket by bucket, see ZRates), and both acceptances use q_n.
  /// `rates` must outlive the updater.
  explicit ImplicitZUpdater(const ZRates& rates) : ImplicitZUpdater(1.0) { rates_ = &rates; }

  template <class Bound>
  void update(const Bound& bound, const Dataset& data, BrightSet& bright, const double* theta,
              Rng& rng, Counters& c) {
    // 1. Bright → dark proposals: darken iff u < q/L̃_n = exp(log q − log L̃_n).
    const std::size_t nb = bright.size();
    s_.reserve(nb);
    const double* llt = bright.log_ltilde();
    double* thr = s_.a.data();
    if (rates_ == nullptr) {
      for (std::size_t i = 0; i < nb; ++i) thr[i] = log_q_ - llt[i];
    } else {
      const double* lr = rates_->log_q.data();
      for (std::size_t i = 0; i < nb; ++i) thr[i] = lr[bright.bright(i)] - llt[i];
    }
    kernels::exp(thr, thr, nb);
    s_.flip.clear();
    for (std::size_t i = 0; i < nb; ++i)
      if (rng.uniform() < thr[i]) s_.flip.push_back(bright.bright(i));
    // 2. Dark → bright proposals.
    s_.idx.clear();
    if (rates_ == nullptr) {
      propose_darks(bright, rng);
    } else {
      propose_darks_per_datum(bright, rng);
    }
    const std::size_t k = s_.idx.size();
    // 3. One query per proposal: log L̃_n at θ; accept iff u < L̃_n/q = exp(log L̃_n − log q).
    const std::size_t K = bound.outputs();
    const bool coefs = bright.coef_width() > 0;
    s_.reserve(k, K);
    double* delta = s_.a.data();
    double* acc = s_.b.data();
    double* lt = s_.c.data();
    if (k > 0) {
      gathered_deltas(bound, data, theta, s_.idx.data(), k, c, s_, delta, coefs);
      kernels::log_expm1(delta, lt, k);
      if (coefs) gathered_coefs(K, k, delta, lt, acc, s_);
      if (rates_ == nullptr) {
        for (std::size_t i = 0; i < k; ++i) acc[i] = lt[i] - log_q_;
      } else {
        const double* lr = rates_->log_q.data();
        for (std::size_t i = 0; i < k; ++i) acc[i] = lt[i] - lr[s_.idx[i]];
      }
      kernels::exp(acc, acc, k);
    }
    // 4. Apply: darken first (their proposals were decided), then brighten the accepted darks.
    s_.log.clear();
    for (Index n : s_.flip) darken_logged(bright, n, s_.log);
    for (std::size_t i = 0; i < k; ++i)
      if (rng.uniform() < acc[i])
        brighten_logged(bright, s_.idx[i], lt[i], coefs ? s_.coef.data() + i * K : nullptr, s_.log);
  }
  /// The data the last update flipped (recorded when the bright set caches coefficients).
  const FlipLog& flips() const noexcept { return s_.log; }

 private:
  /// Calls f(position) for the positions of [0, len) chosen independently w.p. r, found by
  /// skipping Geometric(r) gaps, gap = ⌊log(u)·inv_log1m⌋ with inv_log1m = 1/log(1 − r), the
  /// logs taken 64 at a time (r = 1: every position).
  template <class F>
  static void skip_positions(std::size_t len, double inv_log1m, bool all, Rng& rng, F&& f) {
    if (all) {
      for (std::size_t i = 0; i < len; ++i) f(i);
      return;
    }
    constexpr std::size_t kBatch = 64;
    alignas(64) double lu[kBatch];
    double pos = 0.0;  // next candidate position
    const double end = static_cast<double>(len);
    while (true) {
      for (std::size_t i = 0; i < kBatch; ++i) lu[i] = rng.uniform_pos();
      kernels::log(lu, lu, kBatch);
      for (std::size_t i = 0; i < kBatch; ++i) {
        pos += std::floor(lu[i] * inv_log1m);
        if (pos >= end) return;
        f(static_cast<std::size_t>(pos));
        pos += 1.0;
      }
    }
  }

  /// Fills s_.idx with the dark data proposed to go bright: each independently w.p. q, chosen
  /// by position in the dark list.
  void propose_darks(const BrightSet& bright, Rng& rng) {
    skip_positions(bright.num_dark(), inv_log1mq_, q_one_, rng,
                   [&](std::size_t pos) { s_.idx.push_back(bright.dark(pos)); });
  }

  /// The same with per-datum rates: bucket by bucket, candidates at the bucket's rate 2^−b over
  /// all its data; a bright candidate is passed over (its move is the bright → dark proposal),
  /// a dark one kept w.p. q_n·2^b. So each dark datum is proposed w.p. exactly q_n.
  void propose_darks_per_datum(const BrightSet& bright, Rng& rng) {
    const ZRates& z = *rates_;
    std::vector<Index>& cand = s_.flip_scratch;
    for (std::size_t b = 0; b < z.buckets.size(); ++b) {
      const std::vector<Index>& members = z.buckets[b];
      if (members.empty()) continue;
      cand.clear();
      skip_positions(members.size(), z.inv_log1m[b], b == 0, rng, [&](std::size_t pos) {
        if (!bright.is_bright(members[pos])) cand.push_back(members[pos]);
      });
      // Thinning: keep n iff u < exp(log q_n − log 2^−b).
      const std::size_t k = cand.size();
      s_.reserve(k);
      double* keep = s_.a.data();
      for (std::size_t i = 0; i < k; ++i) keep[i] = z.log_q[cand[i]] - z.log_rate[b];
      kernels::exp(keep, keep, k);
      for (std::size_t i = 0; i < k; ++i)
        if (rng.uniform() < keep[i]) s_.idx.push_back(cand[i]);
    }
  }

  double log_q_, inv_log1mq_;
  bool q_one_;
  const ZRates* rates_ = nullptr;
  ZScratch s_;
};

/// The mean dark probability m_n = mean over `draws` of B_n/L_n = e^{−Δ_n} for every datum, from
/// M dense θ draws (M × P values, e.g. from the Laplace approximation): 1 − m_n estimates the
/// datum's expected bright probability. Fixed blocks combined in order: the same on any number
/// of threads.
template <class Bound>
std::vector<double> mean_dark_probability(const Bound& bound, const Dataset& data,
                                          const ParamLayout& lay,
                                          const std::vector<double>& draws) {
  const std::size_t n = data.n(), P = lay.dim(), K = lay.k;
  const std::size_t m = P > 0 ? draws.size() / P : 0;
  std::vector<double> dark(n, 0.0);
  std::vector<AlignedBuffer> pads;
  for (std::size_t t = 0; t < m; ++t) {
    pads.push_back(aligned_zeros(lay.padded()));
    lay.pad(draws.data() + t * P, pads.back().get());
  }
  constexpr std::size_t kBlock = 2048;
  tbb::parallel_for(std::size_t{0}, (n + kBlock - 1) / kBlock, [&](std::size_t b) {
    const std::size_t lo = b * kBlock, hi = std::min(n, lo + kBlock), len = hi - lo;
    std::vector<Index> idx(len);
    for (std::size_t i = 0; i < len; ++i) idx[i] = static_cast<Index>(lo + i);
    std::vector<double> preds(len * K), delta(len);
    for (std::size_t t = 0; t < m; ++t) {
      packed_predictors(K, data.row(lo), len, data.stride(), pads[t].get(), preds.data());
      bound.deltas(idx.data(), preds.data(), len, delta.data());
      for (std::size_t i = 0; i < len; ++i) delta[i] = -delta[i];
      kernels::exp(delta.data(), delta.data(), len);
      for (std::size_t i = 0; i < len; ++i) dark[lo + i] += delta[i];
    }
    for (std::size_t i = lo; i < hi; ++i)
      dark[i] /= static_cast<double>(std::max<std::size_t>(m, 1));
  });
  return dark;
}

/// Per-datum proposal rates for the implicit z-update (MATH.md 1.5, the paper's discussion):
/// q_n ∝ the datum's expected bright probability p̄_n (`pbar`, e.g. 1 − mean_dark_probability),
/// scaled so that the expected number of dark proposals per sweep, Σ_n q_n (1 − p̄_n), equals
/// the uniform update's q·N, floored at q/10 (every datum keeps being proposed: the chain stays
/// irreducible) and capped at 1. Data likely to be bright are then proposed often and follow θ
/// quickly, the others rarely.
inline ZRates per_datum_rates(const std::vector<double>& pbar, double q) {
  const std::size_t n = pbar.size();
  // κ by bisection: Σ_n min(1, max(q/10, κ p̄_n))·(1 − p̄_n) = q·N.
  const double floor_q = 0.1 * q, budget = q * static_cast<double>(n);
  auto rate = [&](double kappa, double p) { return std::min(1.0, std::max(floor_q, kappa * p)); };
  auto spend = [&](double kappa) {
    double s = 0.0;
    for (double p : pbar) s += rate(kappa, p) * (1.0 - p);
    return s;
  };
  double lo = 0.0, hi = 1.0;
  while (spend(hi) < budget && hi < 1e12) hi *= 2.0;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (spend(mid) < budget ? lo : hi) = mid;
  }
  std::vector<double> log_rates(n);
  for (std::size_t i = 0; i < n; ++i) log_rates[i] = std::log(rate(hi, pbar[i]));
  return ZRates(std::move(log_rates));
}

}  // namespace flymc
