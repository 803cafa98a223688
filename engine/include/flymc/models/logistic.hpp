#pragma once
/// @file logistic.hpp
/// Bayesian logistic regression (labels ±1, Gaussian prior N(0, prior_sd² I)) and its
/// Jaakkola–Jordan lower bound with collapsed sufficient statistics (docs/math.md §2.1).
#include <Eigen/Dense>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/collapsed.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// λ(ξ) = tanh(ξ/2)/(4ξ), with its limit 1/8 at ξ → 0.
double jj_lambda(double xi) noexcept;

/// Rounding tolerance of LogisticBound::deltas: Δ_n = log L_n − log B_n is a difference of terms
/// of size ~|a_n|; tolerance 1e-9 + 64·ε·(|log L_n| + |k_n| + |a_n|/2 + λ_n a_n²), ε = 2^-52: a
/// handful of ulps of every term (and of the vectorized log-sigmoid), with an absolute floor.

class LogisticBound;

/// Logistic regression as a single-index family, f(t, η) = log σ(t·η), labels t = ±1: how the
/// samplers that read a model through the family interface (scalable MH, the
/// piecewise-deterministic samplers) see it. It expands in u = t·η with its own closed forms
/// (one exponential a datum, neither σ(u) nor σ(−u) formed as 1 − the other).
class LogisticFamily final : public SingleIndexFamily {
 public:
  /// max |f'''| = 1/(6√3), at σ(u) = ½ ± 1/(2√3); max |f''''| = 1/8 at u = 0 (f'''' = −p(1 − 6p),
  /// p = σ(u)σ(−u) ∈ (0, ¼]). Both exact to double precision.
  static constexpr double kM3 = 0.096225044864937627;
  static constexpr double kM4 = 0.125;

  std::string name() const override { return "logistic"; }
  LabelDomain labels() const override { return LabelDomain::binary; }
  std::string check_label(double y) const override;
  void derivatives(double y, double eta, int order, double* out) const override;
  /// Vectorized log-sigmoids for f and f' (the approximate samplers' batches).
  void derivatives(const double* y, const double* eta, std::size_t k, int order,
                   double* out) const override;
  std::optional<double> kappa() const override { return 0.25; }
  std::optional<double> m1() const override { return 1.0; }
  std::optional<double> m2() const override { return 0.25; }
  std::optional<double> m3() const override { return kM3; }
  std::optional<double> m4() const override { return kM4; }
  double expansion_sign(double y) const override { return y; }
  Expansion expand(double y, double eta_hat, int order) const override;
  double remainder_change(double y, double u_hat, double h, double h2, int order) const override;
  bool remainder_reads_response() const override { return false; }
  bool same_as(const SingleIndexFamily& other) const override;
  double simulate(double eta, Rng& rng) const override;

  /// The expansion of log σ at û to the second order (f3 = 0) or the third.
  static Expansion taylor(double u_hat, int order) noexcept;
  /// gap(h) = log σ(û + h) − f1·h − ½f2·h² (order 3: also − ⅙f3·h³) for the expansion `t`.
  static double gap(const Expansion& t, double h, int order) noexcept;
  /// The one instance every logistic model shares.
  static const std::shared_ptr<const SingleIndexFamily>& shared();
};

/// Logistic regression likelihood and prior over a shared data set.
///
/// Thread safety: all const members may be called concurrently.
/// Satisfies FireflyModel (model.hpp) with K = 1 linear predictor per datum.
class LogisticModel : public OnePredictorModel {
 public:
  using Bound = LogisticBound;

  /// @throw ConfigError if the prior's sd is outside [1e-150, 1e150] (1/σ² must be a finite
  /// double).
  /// @throw DataError if a label is not ±1, or a feature is not finite or exceeds 1e100 in
  /// magnitude (sums of x² must stay finite); the message names the row and field.
  LogisticModel(std::shared_ptr<const Dataset> data, Prior prior);
  /// A N(0, prior_sd²) prior.
  LogisticModel(std::shared_ptr<const Dataset> data, double prior_sd)
      : LogisticModel(std::move(data), Prior{PriorKind::gaussian, prior_sd}) {}
  /// The model a run configures (cfg.prior, cfg.prior_sd).
  LogisticModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
      : LogisticModel(data, prior_of(cfg, data->d())) {}

  double prior_sd() const noexcept { return prior_.sd; }

  /// log p(θ) without its constant. `theta` has at least dim() entries.
  double log_prior(const double* theta) const noexcept { return prior_.log_density(theta, dim()); }
  /// Σ_n log σ(t_n x_n·θ) over all data (deterministic parallel reduction).
  /// `theta` is padded: stride() entries, 64-byte aligned, zeros past dim().
  double log_lik(const double* theta) const;
  /// Σ_n log σ(t_n x_n·θ), and its gradient Σ_n t_n σ(−a_n) x_n into `grad` (stride() entries,
  /// overwritten), in one pass over the data (deterministic parallel reduction).
  double log_lik_grad(const double* theta, double* grad) const;
  /// Gradient of log_lik + log_prior, D entries.
  Vec grad_log_post(const Vec& theta) const;

  /// θ_MAP of the full posterior by damped Newton iterations with a backtracking line search
  /// (for a Laplace prior, Newton steps on its local quadratic majorizer, from the Gaussian
  /// prior's MAP), one pass over the data per step. On tall data (400,000 rows or more) the
  /// search starts from the MAP of a strided subsample of 100,000 rows whose likelihood is
  /// weighted up to N rows.
  MapResult find_map(double tol = 1e-10, int max_iter = 100) const;

  /// The likelihood as a single-index family (LogisticFamily).
  const std::shared_ptr<const SingleIndexFamily>& family_ptr() const noexcept {
    return LogisticFamily::shared();
  }
};

/// The Jaakkola–Jordan bound with per-datum parameters ξ_n, collapsed to a quadratic in θ.
///   log B_n(θ) = k_n + a_n/2 − λ_n a_n²,  a_n = t_n x_n·θ,  k_n = log σ(ξ_n) − ξ_n/2 + λ_n ξ_n² −
///   ε
/// and Σ_n log B_n(θ) = f0 + g0·(θ−θ0) − (θ−θ0)ᵀA(θ−θ0), anchored at θ0 for accuracy.
/// ε ≥ 0 is an optional slack (docs/math.md §1.5): B_n e^{−ε} is still a lower bound.
///
/// Thread safety: immutable after construction; all members may be called concurrently.
class LogisticBound {
 public:
  /// The bound `cfg` asks for (cfg.bound: MAP-tuned at map.theta, or untuned with
  /// cfg.untuned_xi; cfg.bound_slack), as the sampler builds it.
  static LogisticBound make(const LogisticModel& model, const RunConfig& cfg, const MapResult& map);
  /// make() reads the data once.
  static constexpr int kBuildPasses = 1;
  /// Untuned: ξ_n = xi for every datum (paper: 1.5). The anchor only affects rounding.
  static LogisticBound untuned(const LogisticModel& model, double xi, const Vec& anchor,
                               double slack = 0.0);
  /// MAP-tuned: ξ_n = |x_n·θ_MAP|, tight at θ_MAP.
  static LogisticBound map_tuned(const LogisticModel& model, const Vec& theta_map,
                                 double slack = 0.0);

  /// Σ_n log B_n(θ) from the collapsed statistics, O(D²). `theta` is padded (stride() entries,
  /// 64-byte aligned); `scratch` is caller-owned, 2·stride() aligned doubles (no allocation here).
  /// If `grad` is non-null, the gradient g0 − 2A(θ−θ0) is written to it (D entries).
  double log_bound_sum(const double* theta, double* scratch, double* grad = nullptr) const noexcept;
  std::size_t scratch_size() const noexcept { return sum_.scratch_size(); }
  std::size_t outputs() const noexcept { return 1; }  ///< linear predictors per datum

  /// For data idx[i] with dot products dots[i] = x_n·θ: Δ_n = log L_n − log B_n ≥ 0 into
  /// `delta[i]`. A negative Δ (the bound above its likelihood) is clamped to 0 and counted:
  /// as a rounding clamp when it is within the rounding tolerance (see BoundCheck), as a bound
  /// violation beyond it (a bug or a broken bound; the draws are then not exact).
  BoundCheck deltas(const Index* idx, const double* dots, std::size_t k,
                    double* delta) const noexcept;
  /// deltas(), plus ∂Δ_n/∂(x_n·θ) = t_n (σ(−a_n) − 1/2 + 2λ_n a_n) into dpsi[i] (0 where Δ_n
  /// was clamped).
  BoundCheck delta_grads(const Index* idx, const double* dots, std::size_t k, double* delta,
                         double* dpsi) const noexcept;
  /// Test hook: raises every log B_n by `excess` > 0, which makes the bound invalid wherever
  /// Δ_n < excess. Only for testing that violations are detected and reported.
  void raise_for_testing(double excess) noexcept;
  /// Lowers log B_n by eps[n] ≥ 0 besides the slack ε (RunConfig::slack_scale): still a lower
  /// bound, each datum's constant k_n and the collapsed constant absorb it.
  void add_slack(const std::vector<double>& eps);
  /// Lowers every log B_n by `eps` ≥ 0 and adds it to the slack. From a bound built with slack
  /// 0 this is the bound built with slack `eps`, bit for bit: its constants are c_n − eps either
  /// way, and f0 is summed again as the construction sums it, in one pass over the data without
  /// the outer products of A (which the slack leaves unchanged).
  void add_uniform_slack(double eps);
  /// log B_n(θ) for one datum given its dot product (tests and diagnostics).
  double log_bound(Index n, double dot) const noexcept;
  /// log L_n(θ) for one datum given its dot product.
  double log_lik(Index n, double dot) const noexcept;
  /// The same with the datum's predictor passed by pointer (the form every bound offers).
  double log_bound(Index n, const double* pred) const noexcept { return log_bound(n, *pred); }
  double log_lik(Index n, const double* pred) const noexcept { return log_lik(n, *pred); }

  /// Starts loading what deltas() reads for datum n besides its row (an optional member of a
  /// bound: the z-updates prefetch a batch of scattered data before evaluating it).
  [[gnu::always_inline]] void prefetch(Index n) const noexcept {
    __builtin_prefetch(par_.get() + kPar * n);
  }

  double slack() const noexcept { return slack_; }
  const Mat& A() const noexcept { return sum_.A(); }
  double setup_seconds() const noexcept { return seconds_; }

 private:
  /// `xi(n, a)`: datum n's tangent point ξ_n given a = x_n·anchor, asked for once per datum from
  /// oneTBB's threads in the pass that fills the records and sums the collapsed statistics, so
  /// that no N-long array of them is held and the data are read once.
  LogisticBound(const LogisticModel& model, const std::function<double(std::size_t, double)>& xi,
                const Vec& anchor, double slack);
  /// On a data set sharded over processes, every process gets every datum's record (kPar
  /// doubles a row, a small fraction of the row itself): FlyMC keeps its bright data's rows on
  /// every process, and evaluates them there (docs/mpi.md). Records are then indexed by the whole
  /// data set's row index; first_ maps this process's rows into them.
  void share_records();
  std::size_t records() const noexcept { return data_->total_n(); }
  // Per datum {k_n, t_n·λ_n}: deltas() reads k_n, λ_n and the label t_n = ±1 for data scattered
  // over a set far larger than the caches, so they share one 16-byte record (one cache line, and
  // huge pages for a large N through aligned_uninit) instead of three arrays. λ_n > 0 for every
  // finite ξ_n, so the label rides on its sign.
  static constexpr std::size_t kPar = 2;
  double kn(std::size_t n) const noexcept { return par_[kPar * n]; }
  double lam(std::size_t n) const noexcept { return std::fabs(par_[kPar * n + 1]); }
  double label(std::size_t n) const noexcept { return std::copysign(1.0, par_[kPar * n + 1]); }

  std::shared_ptr<const Dataset> data_;
  AlignedBuffer par_;
  CollapsedQuadratic sum_;  // Σ_n log B_n
  std::size_t first_ = 0;
  double slack_ = 0.0, seconds_ = 0.0;
};

}  // namespace flymc
