#pragma once
/// @file targets.hpp
/// The log-density targets a θ-kernel steps on: FlyMC's log p(θ | z) over the bright set and the
/// collapsed bound (FlyTarget), and the full posterior of regular MCMC (FullTarget). Templates
/// over the model keep virtual calls out of the hot loop (Stan's static polymorphism).
///
/// Thread safety: a target belongs to one chain; the model and bound it references are immutable
/// and shared by all chains.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "flymc/core/parallel.hpp"
#include "flymc/core/profile.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/predictors.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

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
  /// accept() keeps no state: any evaluated point may become the chain's (StatelessAccept).
  static constexpr bool kStatelessAccept = true;
  const M& model() const noexcept { return *model_; }

 private:
  const M* model_;
  ParamLayout lay_;
  AlignedBuffer tp_, gp_;
};

/// log p(θ | z) = log p(θ) + Σ_n log B_n(θ) + Σ_{bright} log L̃_n(θ)  (docs/math.md §1), evaluated
/// with the collapsed bound and one pass over the packed bright rows. Its gradient adds, per bright
/// n, ∇ log L̃_n = (∇ log L_n − ∇ log B_n)·e^{Δ_n}/expm1(Δ_n), formed from the bound's ∂Δ_n/∂ψ_n as
/// ∂Δ/∂ψ · exp(Δ − log L̃) (no cancellation at small Δ) and summed over the packed rows by one
/// weighted row sum per predictor. The per-bright log L̃ of the last evaluation are kept (pending)
/// and become the cached ones on accept(), so an accepted move costs no re-evaluation.
///
/// Large bright sets (softmax's thousands of rows × K predictors) are evaluated on oneTBB in the
/// caller's arena (so chains and this inner work share one): the per-row work in chunks of rows,
/// the gradient's weighted row sums in slices of columns. Every row's values and every column's
/// sum are formed as in the serial pass, in the same order, so the result is bit-identical to it
/// at any thread count and any chunking. Below parallel_min_work() multiply-adds per pass no task
/// is spawned.
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

  /// Bright rows × K × stride (multiply-adds of one pass over the bright rows) from which the
  /// evaluation runs in parallel: two chunks of kChunkWork. On an idle 2-core machine the
  /// parallel pass breaks even below this for logistic rows and about here for softmax's (whose
  /// gradient sums K blocks per slice), docs/bench/notes.md. Results do not depend on it;
  /// BM_SoftmaxFlyTargetParallel and BM_EngineFlyTargetParallel (flymc_bm) time both sides of it.
  static constexpr std::size_t kParallelMinWork = std::size_t{1} << 17;
  std::size_t parallel_min_work() const noexcept { return parallel_min_work_; }
  /// For benchmarks and tests: 0 makes every evaluation parallel, SIZE_MAX none.
  void set_parallel_min_work(std::size_t work) noexcept { parallel_min_work_ = work; }

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
  /// + ∂ log L̃_n/∂ψ_n ⊗ x_n for each brightened datum, − for each darkened one (docs/math.md §1).
  /// O(flips · K · D) instead of a pass over every bright row. The result differs from a fresh
  /// evaluation only by rounding (~1e-16 relative), and every accepted move recomputes the
  /// gradient from scratch.
  void apply_flips(const FlipLog& log, double* grad) const noexcept {
    const Dataset& ds = model_->data();
    const std::size_t K = lay_.k, D = lay_.d, stride = lay_.stride;
    auto add = [&](const std::vector<Index>& idx, const std::vector<double>& co,
                   const std::vector<double>& rows, double sign) {
      for (std::size_t i = 0; i < idx.size(); ++i)
        for (std::size_t k = 0; k < K; ++k) {
          const double w = sign * co[i * K + k];
          if (w == 0.0) continue;
          if (log.keep_rows) {
            // The row's copy: the values Dataset::add_row reads, added the same way.
            const double* x = rows.data() + i * stride;
            double* g = grad + k * D;
            for (std::size_t j = 0; j < D; ++j) g[j] += w * x[j];
          } else {
            ds.add_row(idx[i], w, grad + k * D);
          }
        }
    };
    add(log.off, log.off_coef, log.off_rows, -1.0);
    add(log.on, log.on_coef, log.on_rows, 1.0);
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
    const bool par = nb * K * stride >= parallel_min_work_;
    if (par) {
      // Chunks of rows with about kChunkWork multiply-adds each, a multiple of 64 rows.
      const std::size_t grain = (kChunkWork / (K * stride) + 64) / 64 * 64;
      std::vector<BoundCheck> checks((nb + grain - 1) / grain);
      chunked_for(nb, grain, [&](std::size_t i0, std::size_t i1) {
        checks[i0 / grain] = rows_pass<kGrad>(i0, i1);
      });
      for (const BoundCheck& b : checks) c.add(b);
    } else {
      c.add(rows_pass<kGrad>(0, nb));
    }
    c.queries += nb;
    pending_base_ = base;
    const double lp = base + sum(pending_.data(), nb);
    if constexpr (kGrad) {
      // Slices of kSliceCols columns (the last may be narrower), each summing every bright row
      // in index order. Columns go in units of 8 doubles, a multiple of every SIMD width.
      if (par) {
        chunked_for(stride / 8, kSliceCols / 8,
                    [&](std::size_t u0, std::size_t u1) { grad_cols(u0 * 8, (u1 - u0) * 8); });
      } else {
        grad_cols(0, stride);
      }
      lay_.unpad(gp_.get(), grad);
      model_->prior().add_gradient(theta, lay_.dim(), grad);
    }
    return lp;
  }
  /// Bright rows [i0, i1): linear predictors, Δ_n, pending log L̃_n and, with kGrad, the
  /// coefficients ∂ log L̃_n/∂ψ_n. Each row's values depend on that row alone.
  template <bool kGrad>
  BoundCheck rows_pass(std::size_t i0, std::size_t i1) noexcept {
    const std::size_t K = lay_.k, stride = lay_.stride, m = i1 - i0;
    double* preds = preds_.data() + i0 * K;
    double* delta = delta_.data() + i0;
    double* pend = pending_.data() + i0;
    packed_predictors(K, bright_->packed_rows() + i0 * stride, m, stride, tp_.get(), preds);
    const Index* idx = bright_->bright_indices() + i0;
    BoundCheck check;
    if constexpr (kGrad) {
      double* dpsi = dpsi_.data() + i0 * K;
      check = bound_->delta_grads(idx, preds, m, delta, dpsi);
      kernels::log_expm1(delta, pend, m);
      // e^{Δ}/expm1(Δ) = exp(Δ − log L̃); where Δ was clamped to 0 the bound set ∂Δ/∂ψ = 0 and
      // log p = −inf, so the gradient there is never used (a rejected point).
      for (std::size_t i = 0; i < m; ++i) delta[i] -= pend[i];
      kernels::exp(delta, delta, m);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t k = 0; k < K; ++k) {
          double& v = dpsi[i * K + k];
          v = v == 0.0 ? 0.0 : v * delta[i];
        }
    } else {
      check = bound_->deltas(idx, preds, m, delta);
      kernels::log_expm1(delta, pend, m);
    }
    return check;
  }
  /// Adds Σ_bright coefficient · row to the gradient's columns [j0, j0 + width) of every
  /// predictor. K > 1: over blocks of kRowBlock rows, so that the K passes read each block from
  /// L2 rather than the whole bright set K times from memory (each lane still sums its rows in
  /// index order: the result is the same as unblocked).
  void grad_cols(std::size_t j0, std::size_t width) noexcept {
    const std::size_t nb = bright_->size(), K = lay_.k, stride = lay_.stride;
    const std::size_t block = K == 1 ? std::max<std::size_t>(nb, 1) : kRowBlock;
    for (std::size_t b0 = 0; b0 < nb; b0 += block) {
      const std::size_t m = std::min(block, nb - b0);
      for (std::size_t k = 0; k < K; ++k)
        kernels::weighted_row_sum_cols(bright_->packed_rows() + b0 * stride + j0, m, stride, width,
                                       dpsi_.data() + b0 * K + k, K, gp_.get() + k * stride + j0);
    }
  }
  /// Multiply-adds per chunk of rows in a parallel evaluation: enough to outweigh a task's cost.
  static constexpr std::size_t kChunkWork = std::size_t{1} << 16;
  /// Columns per slice of the parallel gradient: a few SIMD registers per row, so that the
  /// slices of a few hundred columns spread over the threads.
  static constexpr std::size_t kSliceCols = 32;
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
  std::size_t parallel_min_work_ = kParallelMinWork;
  bool last_grad_ = false;
};

}  // namespace flymc
