#pragma once
/// @file softmax.hpp
/// Bayesian softmax (multinomial logistic) classification with K classes and its Böhning lower
/// bound with collapsed sufficient statistics (docs/math.md §2.2; D. Böhning, "Multinomial logistic
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

#include "flymc/core/config.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

class SoftmaxBound;

/// Quadratic upper bounds on lse at an anchor ψ0, v = ψ − ψ0:
///   lse(ψ) ≤ lse(ψ0) + softmax(ψ0)ᵀv + ½vᵀSv,   S𝟙 = 0, S ⪰ 0,
/// in one "running mean" form shared by Böhning's bound (D. Böhning, "Multinomial logistic
/// regression algorithm", Ann. Inst. Statist. Math. 44, 1992) and the bound of T. Jebara and
/// A. Choromanska ("Majorization for CRFs and latent likelihoods", NIPS 2012, their
/// bound-computing algorithm applied to lse, i.e. one-hot features). Given a class order
/// o_0, …, o_{K−1} and, for j = 1..K−1, coefficients c_j ≥ 0 and weights s_j ∈ [0, 1]:
///   m_0 = v_{o_0},  t_j = v_{o_j} − m_{j−1},  m_j = m_{j−1} + s_j·t_j,  ½vᵀSv = ½ Σ_j c_j t_j²,
/// a sum of squares (non-negative by construction). Equivalently S = Σ_j c_j l_j l_jᵀ with
/// l_j = e_{o_j} − μ_{j−1}, μ_0 = e_{o_0}, μ_j = (1 − s_j)μ_{j−1} + s_j e_{o_j}; every l_j sums to
/// 0, so S𝟙 = 0: adding one constant to every ψ_k leaves the quadratic unchanged, as it leaves
/// lse's curvature. Orders, c and s are stored per position j (index j − 1 of the arrays).
///
/// Thread safety: pure functions of their arguments; may be called concurrently.
namespace lse_bound {

/// Most classes for which SoftmaxBound's tight kind tries every class order (K! of them).
inline constexpr std::size_t kMaxExhaustiveOrder = 5;

/// Jebara–Choromanska: processing the classes in `order`, with α_y = e^{ψ0_y − max ψ0},
/// z_j = Σ_{i≤j} α_{o_i} and r_j = log(α_{o_j}/z_{j−1}): c_j = tanh(r_j/2)/(2r_j) (¼ at r_j = 0)
/// and s_j = α_{o_j}/z_j = σ(r_j), all in log space (no overflow or underflow at any finite ψ0).
/// For K = 2 it is the Jaakkola–Jordan bound. Valid for every order; tightest along the first
/// classes, so the dominant class first suits confidently classified data.
void jebara_choromanska(const double* psi0, const std::uint16_t* order, std::size_t K, double* c,
                        double* s) noexcept;
/// Böhning: S = ½(I − 𝟙𝟙ᵀ/K) for any order, as c_j = j/(2(j+1)), s_j = 1/(j+1) (the running
/// mean is the plain mean, and the l_j are orthogonal with |l_j|² = (j+1)/j).
void bohning(std::size_t K, double* c, double* s) noexcept;
/// ½vᵀSv by the recursion above, O(K). If `sv` is non-null, Sv is written there (K values) by
/// the reverse recursion, also O(K).
double quad(const double* v, const std::uint16_t* order, const double* c, const double* s,
            std::size_t K, double* sv = nullptr) noexcept;
/// S itself (K×K, row-major), O(K²): S[k,l] = −w_kl off the diagonal and Σ_{l≠k} w_kl on it,
/// from the Laplacian weights w_kl (SoftmaxBound) by a forward and a reverse recursion.
void curvature(const std::uint16_t* order, const double* c, const double* s, std::size_t K,
               double* S) noexcept;
/// tr(S·M) = Σ_j c_j l_jᵀ M l_j for a K×K row-major M, O(K²) (Mμ_j and μ_jᵀMμ_j updated along
/// the order); with M the second moment of v, twice the expected quadratic term E[½vᵀSv].
double trace_product(const std::uint16_t* order, const double* c, const double* s, std::size_t K,
                     const double* M) noexcept;

}  // namespace lse_bound

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
      : SoftmaxModel(data, prior_of(cfg, data->d())) {}

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

/// A quadratic lower bound on every softmax likelihood whose sum over the data collapses into
/// sufficient statistics (docs/math.md §2.2). For any ψ0, with g0 = softmax(ψ0) and a curvature S ⪰
/// 0 that makes it an upper bound of lse (lse_bound),
///   lse(ψ) ≤ lse(ψ0) + g0ᵀ(ψ − ψ0) + ½(ψ − ψ0)ᵀS(ψ − ψ0),
/// so log B_n(W) = ψ_{n,y} − [that upper bound at ψ = ψ_n, ψ0 = ψ0_n] − ε is a lower bound of
/// log L_n, tight at ψ_n = ψ0_n (up to the slack ε ≥ 0, docs/math.md §1.5). MAP-tuned: ψ0_n = W_MAP
/// x_n; untuned: ψ0_n = 0 (g0 = 𝟙/K, lse0 = log K). Two kinds (SoftmaxBoundKind):
///
/// - bohning: S = H = ½(I_K − 𝟙𝟙ᵀ/K) for every datum (Böhning 1992), which dominates every
///   Hessian of lse. With V = W − W_a for an anchor W_a,
///     Σ_n log B_n(W) = f0 + ⟨G0, V⟩_F − ½ tr(H V S_x Vᵀ),  S_x = Σ_n x_n x_nᵀ,
///   f0 and G0 the sum and its gradient at W_a.
/// - tight: per datum S_n is the candidate with the smallest expected quadratic term
///   E[½v_nᵀS_n v_n] = ½ tr(S_n M_n) under the Laplace approximation of the posterior, M_n the
///   second moment of v_n = ψ_n − ψ0_n about the anchor (the covariance of ψ_n = W x_n, plus
///   (ψ̂_n − ψ0_n)(ψ̂_n − ψ0_n)ᵀ with ψ̂_n = W_MAP x_n when untuned). For small gaps the chance
///   that datum n is bright is ≈ E[Δ_n], and the terms of E[Δ_n] that depend on S_n are exactly
///   that one, so this choice minimizes the expected bright count to first order. The
///   candidates are Böhning's H and the Jebara–Choromanska bound (Jebara & Choromanska 2012,
///   lse_bound::jebara_choromanska) in every class order for K ≤ lse_bound::kMaxExhaustiveOrder,
///   else in the order of decreasing ψ0 (dominant class first). Each candidate is a valid bound
///   and the choice depends only on the data and the MAP fit, fixed at set-up, so FlyMC stays
///   exact (docs/math.md §1.5). With S_n𝟙 = 0, S_n is a weighted graph Laplacian,
///   ½vᵀS_n v = ½ Σ_{k<l} w_{n,kl}(v_k − v_l)² with w_{n,kl} = −S_n[k,l], so the sum collapses to
///     Σ_n log B_n(W) = f0 + ⟨G0, V⟩_F − ½ Σ_{k<l} (v_k − v_l)ᵀ A_kl (v_k − v_l),
///     A_kl = Σ_n w_{n,kl} x_n x_nᵀ,
///   K(K−1)/2 D×D matrices (one weighted SYRK each over the data, once), in differences of rows
///   of V only: invariant, like the likelihood, to adding one vector to every row of W. An
///   evaluation costs K(K−1)/2 matrix-vector products (Böhning's: K), so for K = 3 the same.
///
/// The anchor W_a only affects rounding; it is W_MAP.
///
/// Thread safety: immutable after construction; all members may be called concurrently.
/// Satisfies FireflyBound (model.hpp).
class SoftmaxBound {
 public:
  /// The bound `cfg` asks for (cfg.softmax_bound; cfg.bound: MAP-tuned at map.theta, or
  /// untuned; cfg.bound_slack), as the sampler builds it. Collapsed statistics anchored at
  /// map.theta.
  /// @throw ConfigError if cfg.bound_slack is negative or not finite.
  static SoftmaxBound make(const SoftmaxModel& model, const RunConfig& cfg, const MapResult& map);
  /// Bohning kind, untuned: tangent at W = 0 for every datum; `anchor` (dense, dim() entries) only
  /// affects rounding of the collapsed sum.
  static SoftmaxBound untuned(const SoftmaxModel& model, const Vec& anchor, double slack = 0.0);
  /// Bohning kind, MAP-tuned: ψ0_n = W_MAP x_n, tight at W_MAP.
  static SoftmaxBound map_tuned(const SoftmaxModel& model, const Vec& w_map, double slack = 0.0);
  /// The tight kind (see the class comment): MAP-tuned (ψ0_n = W_MAP x_n, `tuning` map) or
  /// untuned (ψ0_n = 0), the per-datum choice made with map.covariance, anchored at map.theta.
  /// Memory: K(K−1)/2·D² doubles for the pair matrices (half the dense (K·D)² Hessian that
  /// SoftmaxModel::find_map forms) and 4K doubles per datum. Set-up time: the Laplace second
  /// moments of every ψ_n, K(K+1)/2 products of the data with D×D blocks of the covariance
  /// (O(N·K²·D²), a few Newton iterations' worth), and K(K−1)/2 weighted SYRKs.
  /// @throw ConfigError if map.covariance is not K·D × K·D, or if the slack is negative or not
  /// finite.
  static SoftmaxBound tight(const SoftmaxModel& model, const MapResult& map, BoundTuning tuning,
                            double slack = 0.0);

  /// Σ_n log B_n(W) from the collapsed statistics, independent of N: O(K·D² + K²·D) (bohning),
  /// O(K²·D²) (tight). `theta` is padded (K·stride doubles, 64-byte aligned); `scratch` is
  /// caller-owned, scratch_size() aligned doubles (no allocation here). If `grad` is non-null,
  /// the gradient (G0 − H V S_x, or row k: G0_k − Σ_{l≠k} A_kl (v_k − v_l)) is written to it
  /// (padded; padding entries 0).
  /// The sum, like the likelihood, does not change when one vector is added to every row of W.
  double log_bound_sum(const double* theta, double* scratch, double* grad = nullptr) const noexcept;
  std::size_t scratch_size() const noexcept { return (2 * k_ + 1) * stride_; }
  std::size_t outputs() const noexcept { return k_; }  ///< linear predictors per datum (K)

  /// For data idx[i] with predictors preds[i·K + k] = x_n·w_k: Δ_n = log L_n − log B_n ≥ 0 into
  /// `delta[i]`. A negative Δ is clamped to 0 and counted (BoundCheck): as a rounding clamp
  /// within the tolerance (see below), as a violation beyond it.
  ///
  /// Rounding tolerance: Δ_n = (m0_n − m_n) + (l0_n − l_n) + g0ᵀv + ½vᵀS_n v + ε with
  /// v = ψ − ψ0, lse(ψ) = m + l (m = max_k ψ_k, l = log Σ_k e^{ψ_k − m}) and likewise at ψ0;
  /// tolerance 1e-9 + 64·ε_mach·(|m0 − m| + l0 + l + Σ_k g0_k|v_k| + Q), a handful of ulps of
  /// every term (and of the vectorized exp/log), with an absolute floor. Bohning: ½vᵀHv =
  /// ¼|v − v̄𝟙|² (v̄ the mean of v) and Q = ¼(|v|² + K·v̄²). Tight: ½vᵀS_n v = ½Σ_j c_j t_j²
  /// (lse_bound), each t_j a difference of v_{o_j} and a running mean of v rounded within about
  /// j + 1 ulps of max|v|, with c_j ≤ ¼, so Q = ½K²·max_k v_k².
  BoundCheck deltas(const Index* idx, const double* preds, std::size_t k,
                    double* delta) const noexcept;
  /// deltas(), plus ∂Δ_n/∂ψ_n = g0_n + S_n(ψ_n − ψ0_n) − softmax(ψ_n) into dpsi[i·K + k] (0
  /// where Δ_n was clamped).
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
  SoftmaxBoundKind kind() const noexcept { return kind_; }
  /// Tight kind: the data whose chosen curvature is a Jebara–Choromanska one (the others use
  /// Böhning's); 0 for bohning.
  std::size_t jc_count() const noexcept { return jc_count_; }
  /// Tight kind: Σ_n ½tr(S_n M_n) for the chosen curvatures, and the same with Böhning's H for
  /// every datum: the expected quadratic terms under the Laplace approximation (set-up
  /// diagnostics; 0 for bohning).
  double expected_quad() const noexcept { return expected_quad_; }
  double expected_quad_bohning() const noexcept { return expected_quad_bohning_; }
  /// Bohning kind: S_x = Σ_n x_n x_nᵀ (D × D); empty for tight.
  const Mat& S() const noexcept { return s_; }
  double setup_seconds() const noexcept { return seconds_; }

 private:
  SoftmaxBound(const SoftmaxModel& model, const Vec* tangent, const Vec& anchor, double slack);
  SoftmaxBound(const SoftmaxModel& model, const MapResult& map, BoundTuning tuning, double slack);
  struct TightPass;  // the tight constructor's pass over the data (softmax_bound.cpp)
  template <bool kGrad>
  BoundCheck compute(const Index* idx, const double* preds, std::size_t k, double* delta,
                     double* dpsi) const noexcept;
  template <bool kGrad>
  BoundCheck compute_tight(const Index* idx, const double* preds, std::size_t k, double* delta,
                           double* dpsi) const noexcept;
  double log_bound_sum_tight(const double* theta, double* scratch, double* grad) const noexcept;
  std::shared_ptr<const Dataset> data_;
  std::shared_ptr<const std::vector<std::uint32_t>> labels_;
  /// Per datum, rec_size() doubles: ψ0 (K), g0 = softmax(ψ0) (K), m0 = max ψ0, and
  /// l0 = log Σ_k e^{ψ0_k − m0} (lse(ψ0) = m0 + l0, kept apart so that Δ is exactly the slack
  /// at the tangent point); tight kind: then c_1..c_{K−1} and s_1..s_{K−1} (lse_bound).
  std::vector<double> rec_;
  /// Tight kind: each datum's class order (K entries per datum).
  std::vector<std::uint16_t> order_;
  std::size_t rec_size() const noexcept {
    return kind_ == SoftmaxBoundKind::bohning ? 2 * k_ + 2 : 4 * k_;
  }
  Mat s_;
  // Bohning: S_x rows; tight: A_kl rows for the pairs k < l in order (D × stride each); W_a and
  // G0 padded to stride.
  AlignedBuffer s_pad_, anchor_pad_, g0_pad_;
  SoftmaxBoundKind kind_ = SoftmaxBoundKind::bohning;
  std::size_t k_ = 0, d_ = 0, stride_ = 0, jc_count_ = 0;
  double f0_ = 0.0, slack_ = 0.0, shift_ = 0.0, seconds_ = 0.0;  // shift_: slack − test raise
  double expected_quad_ = 0.0, expected_quad_bohning_ = 0.0;
};

}  // namespace flymc
