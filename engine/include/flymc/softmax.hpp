#pragma once
/// @file softmax.hpp
/// Bayesian softmax (multinomial logistic) classification with K classes and its Böhning lower
/// bound with collapsed sufficient statistics (MATH.md 2.2; D. Böhning, "Multinomial logistic
/// regression algorithm", Ann. Inst. Statist. Math. 44, 1992).
///
/// Labels y_n ∈ {0, …, K−1}, parameters W ∈ R^{K×D} (θ = the rows of W, ParamLayout{K, D,
/// stride}), linear predictors ψ_n = W x_n, and log L_n = ψ_{n,y_n} − lse(ψ_n) with
/// lse(ψ) = log Σ_k exp ψ_k. The likelihood does not change when the same vector is added to
/// every row of W; the prior makes the posterior proper.
#include <Eigen/Dense>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flymc/config.hpp"
#include "flymc/dataset.hpp"
#include "flymc/model.hpp"

namespace flymc {

class SoftmaxBound;

/// Softmax classification likelihood and prior over a shared data set. K is the largest label
/// plus one.
///
/// Thread safety: immutable after construction; all const members may be called concurrently.
/// Satisfies FireflyModel (model.hpp) with K linear predictors per datum.
class SoftmaxModel {
 public:
  using Bound = SoftmaxBound;
  /// Most classes accepted: find_map() forms a dense (K·D)² Hessian, and a label such as 10^6
  /// is far likelier a wrong column than a class.
  static constexpr std::size_t kMaxClasses = 1024;

  /// @throw ConfigError if the prior's sd is outside [1e-150, 1e150] (1/σ² must be a finite
  /// double).
  /// @throw DataError if a label is not an integer in 0..kMaxClasses−1, if fewer than two
  /// classes occur (K = max label + 1 < 2), or if a feature is not finite or exceeds 1e100 in
  /// magnitude; the message names the data source, the row (1-based) and the field.
  SoftmaxModel(std::shared_ptr<const Dataset> data, Prior prior);
  /// The model a run configures (cfg.prior, cfg.prior_sd).
  SoftmaxModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
      : SoftmaxModel(std::move(data), Prior{cfg.prior, cfg.prior_sd}) {}

  std::size_t classes() const noexcept { return k_; }  ///< K
  std::size_t dim() const noexcept { return k_ * data_->d(); }
  std::size_t num_data() const noexcept { return data_->n(); }
  std::size_t stride() const noexcept { return data_->stride(); }
  ParamLayout layout() const noexcept { return {k_, data_->d(), data_->stride()}; }
  const Dataset& data() const noexcept { return *data_; }
  const std::shared_ptr<const Dataset>& data_ptr() const noexcept { return data_; }
  /// The class index of every datum (y_n as an integer).
  const std::shared_ptr<const std::vector<std::uint32_t>>& labels() const noexcept {
    return labels_;
  }
  const Prior& prior() const noexcept { return prior_; }
  /// "W.k.j": class k = 1..K, feature j = 1..D, in the dense order of θ.
  std::vector<std::string> param_names() const;

  /// log p(θ) without its constant; `theta` dense (dim() entries).
  double log_prior(const double* theta) const noexcept { return prior_.log_density(theta, dim()); }
  /// Σ_n log L_n(W) over all data, a deterministic parallel reduction (bit-identical for any
  /// thread count). `theta` is padded: layout().padded() doubles, 64-byte aligned.
  double log_lik(const double* theta) const;
  /// Σ_n log L_n(W), and its gradient Σ_n (e_{y_n} − softmax(ψ_n)) x_nᵀ into `grad` (padded,
  /// overwritten; padding entries 0), in one pass over the data (deterministic reduction).
  double log_lik_grad(const double* theta, double* grad) const;

  /// W_MAP by Newton's method with the exact Hessian and a backtracking line search (for a
  /// Laplace prior: Newton steps on its local quadratic majorizer, from the Gaussian prior's
  /// MAP), and the Laplace covariance (−∇² log p(θ | data) with the prior's precision()).
  /// @throw ConfigError if the negative Hessian plus the prior's curvature is not numerically
  /// positive definite (a prior too wide to make the posterior proper in floating point).
  MapResult find_map(double tol = 1e-10, int max_iter = 100) const;

 private:
  MapResult newton(const Prior& prior, Vec theta, double tol, int max_iter) const;
  std::shared_ptr<const Dataset> data_;
  std::shared_ptr<const std::vector<std::uint32_t>> labels_;
  Prior prior_;
  std::size_t k_ = 0;
};

/// Böhning's bound on lse: for any ψ0, with g0 = softmax(ψ0) and the fixed H = ½(I_K − 𝟙𝟙ᵀ/K)
/// that dominates every Hessian of lse,
///   lse(ψ) ≤ lse(ψ0) + g0ᵀ(ψ − ψ0) + ½(ψ − ψ0)ᵀH(ψ − ψ0),
/// so log B_n(W) = ψ_{n,y} − [that upper bound at ψ = ψ_n, ψ0 = ψ0_n] − ε is a lower bound of
/// log L_n, tight at ψ_n = ψ0_n (up to the slack ε ≥ 0, MATH.md 1.5). MAP-tuned: ψ0_n = W_MAP x_n;
/// untuned: ψ0_n = 0 (g0 = 𝟙/K, lse0 = log K). Because H is the same for every datum, the sum
/// over the data collapses (MATH.md 2.2): with V = W − W_a for an anchor W_a,
///   Σ_n log B_n(W) = f0 + ⟨G0, V⟩_F − ½ tr(H V S Vᵀ),  S = Σ_n x_n x_nᵀ,
/// f0 and G0 the sum and its gradient at W_a. The anchor only affects rounding; it is W_MAP.
///
/// Thread safety: immutable after construction; all members may be called concurrently.
/// Satisfies FireflyBound (model.hpp).
class SoftmaxBound {
 public:
  /// The bound `cfg` asks for (cfg.bound: MAP-tuned at map.theta, or untuned; cfg.bound_slack),
  /// as the sampler builds it. Collapsed statistics anchored at map.theta.
  /// @throw ConfigError if cfg.bound_slack is negative or not finite.
  static SoftmaxBound make(const SoftmaxModel& model, const RunConfig& cfg, const MapResult& map);
  /// Untuned: tangent at W = 0 for every datum; `anchor` (dense, dim() entries) only affects
  /// rounding of the collapsed sum.
  static SoftmaxBound untuned(const SoftmaxModel& model, const Vec& anchor, double slack = 0.0);
  /// MAP-tuned: ψ0_n = W_MAP x_n, tight at W_MAP.
  static SoftmaxBound map_tuned(const SoftmaxModel& model, const Vec& w_map, double slack = 0.0);

  /// Σ_n log B_n(W) from the collapsed statistics, O(K·D² + K²·D) and independent of N.
  /// `theta` is padded (K·stride doubles, 64-byte aligned); `scratch` is caller-owned,
  /// scratch_size() aligned doubles (no allocation here). If `grad` is non-null, the gradient
  /// G0 − H V S is written to it (padded; padding entries 0).
  /// The sum, like the likelihood, does not change when one vector is added to every row of W.
  double log_bound_sum(const double* theta, double* scratch, double* grad = nullptr) const noexcept;
  std::size_t scratch_size() const noexcept { return (2 * k_ + 1) * stride_; }
  std::size_t outputs() const noexcept { return k_; }  ///< linear predictors per datum (K)

  /// For data idx[i] with predictors preds[i·K + k] = x_n·w_k: Δ_n = log L_n − log B_n ≥ 0 into
  /// `delta[i]`. A negative Δ is clamped to 0 and counted (BoundCheck): as a rounding clamp
  /// within the tolerance (see below), as a violation beyond it.
  ///
  /// Rounding tolerance: Δ_n = (m0_n − m_n) + (l0_n − l_n) + g0ᵀv + ¼|v − v̄𝟙|² + ε with
  /// v = ψ − ψ0, v̄ its mean, lse(ψ) = m + l (m = max_k ψ_k, l = log Σ_k e^{ψ_k − m}) and
  /// likewise at ψ0; tolerance 1e-9 + 64·ε_mach·(|m0 − m| + l0 + l + Σ_k g0_k|v_k| +
  /// ¼(|v|² + K·v̄²)), a handful of ulps of every term (and of the vectorized exp/log), with an
  /// absolute floor.
  BoundCheck deltas(const Index* idx, const double* preds, std::size_t k,
                    double* delta) const noexcept;
  /// deltas(), plus ∂Δ_n/∂ψ_n = g0_n + H(ψ_n − ψ0_n) − softmax(ψ_n) into dpsi[i·K + k] (0 where
  /// Δ_n was clamped).
  BoundCheck delta_grads(const Index* idx, const double* preds, std::size_t k, double* delta,
                         double* dpsi) const noexcept;
  /// Test hook: raises every log B_n by `excess` > 0, which makes the bound invalid wherever
  /// Δ_n < excess. Only for testing that violations are detected and reported.
  void raise_for_testing(double excess) noexcept;
  /// log B_n(W) for one datum given its K predictors (tests and diagnostics).
  double log_bound(Index n, const double* pred) const noexcept;
  /// log L_n(W) for one datum given its K predictors.
  double log_lik(Index n, const double* pred) const noexcept;

  double slack() const noexcept { return slack_; }
  /// S = Σ_n x_n x_nᵀ (D × D).
  const Mat& S() const noexcept { return s_; }
  double setup_seconds() const noexcept { return seconds_; }

 private:
  SoftmaxBound(const SoftmaxModel& model, const Vec* tangent, const Vec& anchor, double slack);
  template <bool kGrad>
  BoundCheck compute(const Index* idx, const double* preds, std::size_t k, double* delta,
                     double* dpsi) const noexcept;
  std::shared_ptr<const Dataset> data_;
  std::shared_ptr<const std::vector<std::uint32_t>> labels_;
  /// Per datum, kRec = 2K + 2 doubles: ψ0 (K), g0 = softmax(ψ0) (K), m0 = max ψ0, and
  /// l0 = log Σ_k e^{ψ0_k − m0} (lse(ψ0) = m0 + l0, kept apart so that Δ is exactly the slack
  /// at the tangent point).
  std::vector<double> rec_;
  Mat s_;
  AlignedBuffer s_pad_, anchor_pad_, g0_pad_;  // S rows, W_a and G0 padded to stride
  std::size_t k_ = 0, d_ = 0, stride_ = 0;
  double f0_ = 0.0, slack_ = 0.0, shift_ = 0.0, seconds_ = 0.0;  // shift_: slack − test raise
};

}  // namespace flymc
