#pragma once
/// @file glm.hpp
/// A single-index model (models/family.hpp) as the samplers take it: ℓ_n(θ) = f(y_n, x_n·θ) with
/// a Gaussian or Laplace prior (GlmModel), and FlyMC's generic collapsible bound (GlmBound,
/// docs/math.md §2.4): the tangent of f at η̂_n with curvature −κ,
///   log B_n(θ) = f(y_n, η̂_n) + f'(y_n, η̂_n)(η_n − η̂_n) − (κ/2)(η_n − η̂_n)² − ε ≤ ℓ_n(θ),
/// below f wherever f'' ≥ −κ (Taylor's theorem), tight at η̂_n, and quadratic in θ, so that its
/// sum over the data collapses into a constant, a vector and (κ/2)Σ x_n x_nᵀ.
#include <Eigen/Dense>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/memory.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/collapsed.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

class GlmBound;

/// The per-row offsets, trials and weights a datum's likelihood reads (each empty where the data
/// have none), indexed by row: a data set's own, or on a shard every row's (GlmBound).
struct RowExtras {
  std::span<const double> off, trials, w;
  bool any() const noexcept { return !off.empty() || !trials.empty() || !w.empty(); }
  static RowExtras of(const Dataset& ds) noexcept {
    return {ds.offsets(), ds.trials(), ds.weights()};
  }
};

/// A single-index model over a shared data set: K = 1 linear predictor per datum, θ ∈ R^D.
///
/// Thread safety: all const members may be called concurrently (the family's must be too).
/// Satisfies FireflyModel (model.hpp).
class GlmModel : public OnePredictorModel {
 public:
  using Bound = GlmBound;

  /// @throw ConfigError if the prior's sd is outside [1e-150, 1e150].
  /// @throw DataError if a response fails family->check_label(), or a feature is not finite or
  /// exceeds 1e100 in magnitude; the message names the row and field.
  GlmModel(std::shared_ptr<const Dataset> data, Prior prior,
           std::shared_ptr<const SingleIndexFamily> family);
  /// The model a run configures (cfg.prior, cfg.prior_sd, single_index_family(cfg)).
  GlmModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
      : GlmModel(data, prior_of(cfg, data->d()), single_index_family(cfg)) {}

  const SingleIndexFamily& family() const noexcept { return *family_; }
  const std::shared_ptr<const SingleIndexFamily>& family_ptr() const noexcept { return family_; }

  /// log p(θ) without its constant. `theta` has at least dim() entries.
  double log_prior(const double* theta) const noexcept { return prior_.log_density(theta, dim()); }
  /// Σ_n f(y_n, x_n·θ) over all data (deterministic parallel reduction; over the whole data set
  /// if it is a shard). `theta` is padded: stride() entries, 64-byte aligned, zeros past dim().
  double log_lik(const double* theta) const;
  /// The same, and its gradient Σ_n f'(y_n, η_n)·x_n into `grad` (stride() entries), in one pass.
  double log_lik_grad(const double* theta, double* grad) const;

  /// θ_MAP by Newton's method with a backtracking line search, from θ = 0 (a Laplace prior
  /// through its quadratic majorizer, from the Gaussian prior's MAP), one pass over the data per
  /// step. The Hessian's per-datum weight is −f'' where that is ≥ 0 and 0 elsewhere (where f is
  /// locally convex): positive definite with the prior's precision, so every step ascends. The
  /// Laplace covariance and MapResult::lik_curvature are formed at θ_MAP; the latter only where
  /// no weight was clipped (it is then the exact curvature that scalable MH's expansion takes).
  MapResult find_map(double tol = 1e-10, int max_iter = 100) const;

 private:
  std::shared_ptr<const SingleIndexFamily> family_;
};

/// FlyMC's generic bound for a single-index family with κ (see the file comment). Per datum it
/// keeps {η̂_n, f(y_n, η̂_n), f'(y_n, η̂_n), y_n}; the collapsed sum, anchored at θ0 for accuracy,
/// is f0 + g0·δ − δᵀAδ with δ = θ − θ0, A = (κ/2)Σ x_n x_nᵀ.
///
/// Thread safety: immutable after construction (except the test and slack hooks); all const
/// members may be called concurrently.
class GlmBound {
 public:
  /// The bound `cfg` asks for: MAP-tuned (η̂_n = x_n·θ_MAP) or untuned (η̂_n = 0, the tangent at
  /// the prior's mean), with slack cfg.bound_slack.
  /// @throw ConfigError if the family has no κ.
  static GlmBound make(const GlmModel& model, const RunConfig& cfg, const MapResult& map);
  /// make() reads the data once.
  static constexpr int kBuildPasses = 1;

  double log_bound_sum(const double* theta, double* scratch, double* grad = nullptr) const noexcept;
  std::size_t scratch_size() const noexcept { return sum_.scratch_size(); }
  std::size_t outputs() const noexcept { return 1; }

  /// Δ_n = log L_n − log B_n ≥ 0 for data idx[i] with predictors eta[i] = x_n·θ; a negative Δ is
  /// clamped to 0 and counted (rounding within a few ulps of its terms, a violation beyond).
  BoundCheck deltas(const Index* idx, const double* eta, std::size_t k,
                    double* delta) const noexcept;
  /// deltas(), plus ∂Δ_n/∂η_n = f'(y_n, η_n) − f'(y_n, η̂_n) + κ(η_n − η̂_n) (0 where clamped).
  BoundCheck delta_grads(const Index* idx, const double* eta, std::size_t k, double* delta,
                         double* dpsi) const noexcept;
  /// Test hook: raises every log B_n by `excess` > 0 (an invalid bound).
  void raise_for_testing(double excess) noexcept;
  /// Lowers every log B_n by `eps` ≥ 0 and adds it to the slack.
  void add_uniform_slack(double eps);
  double log_bound(Index n, double eta) const noexcept;
  double log_lik(Index n, double eta) const noexcept;
  double log_bound(Index n, const double* pred) const noexcept { return log_bound(n, *pred); }
  double log_lik(Index n, const double* pred) const noexcept { return log_lik(n, *pred); }
  [[gnu::always_inline]] void prefetch(Index n) const noexcept {
    __builtin_prefetch(rec_.data() + n);
  }

  double slack() const noexcept { return slack_; }
  double kappa() const noexcept { return kappa_; }
  const Mat& A() const noexcept { return sum_.A(); }

 private:
  /// One datum's tangent, 32 bytes: what deltas() gathers for a scattered datum.
  struct alignas(32) Record {
    double eta_hat, f_hat, d1_hat, y;
  };
  GlmBound(const GlmModel& model, const Vec& theta_hat, bool tuned, double slack);
  /// On a sharded data set every process gets every datum's record, curvature factor and row
  /// extras (FlyMC evaluates bright data held elsewhere, docs/mpi.md); they are then indexed by
  /// the whole data set's rows.
  void share_records();
  /// The row extras of the rows deltas() is given: the data's, or on a shard the shared ones.
  RowExtras extras() const noexcept;

  std::shared_ptr<const Dataset> data_;
  std::shared_ptr<const SingleIndexFamily> family_;
  std::vector<Record> rec_;
  /// Datum n's curvature factor c_n (its weight times the family's datum and κ scales; κ_n =
  /// κ·c_n), empty where every c_n = 1 (no weights or trials, one κ for every response).
  std::vector<double> factor_;
  /// On a shard (shared_), every row's offsets, trials and weights (each empty where absent).
  std::vector<double> shared_off_, shared_trials_, shared_w_;
  bool shared_ = false;
  CollapsedQuadratic sum_;                           // Σ_n log B_n
  double kappa_ = 0.0, slack_ = 0.0, offset_ = 0.0;  // offset_: ε − raised excess
};

}  // namespace flymc
