#pragma once
/// @file model.hpp
/// What every model offers the samplers (docs/math.md §2): the parameter layout, the prior, the
/// full-data log-likelihood with its gradient, the MAP fit, and a lower bound whose product over
/// the data collapses into sufficient statistics.
///
/// Every model here is a generalized linear model with K linear predictors per datum,
/// ψ_n = W x_n, W ∈ R^{K×D} (K = 1 for logistic and robust regression, K classes for softmax).
/// Two layouts of θ = W are used:
///   - dense: the K·D values, row k of W after row k−1 (what θ-kernels, draws and MAP use);
///   - padded: K blocks of stride() doubles, block k = row k of W, zeros in the padding (what the
///     SIMD row kernels use: every block is 64-byte aligned when the buffer is).
/// The engine forms log L̃_n = log expm1(Δ_n) and its gradient from a bound's Δ_n and ∂Δ_n/∂ψ_n
/// (docs/math.md §1), so a model only supplies per-datum log L_n − log B_n and its derivative.
///
/// The Model and Bound contracts are C++20 concepts (duck typing, no virtual calls in the hot
/// path): see FireflyModel and FireflyBound below.
#include <Eigen/Dense>
#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/prior.hpp"

namespace flymc {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;

/// Result of the full-data MAP search.
struct MapResult {
  Vec theta;              ///< θ_MAP (dense, dim() entries)
  Mat covariance;         ///< Laplace covariance: inverse of −∇² log p(θ | data) at θ_MAP
  double log_post = 0.0;  ///< log p(θ_MAP | data) up to a constant
  int iterations = 0;     ///< optimizer iterations
  double seconds = 0.0;   ///< wall time
  /// Passes the search made over all the data rows (-1 where a model does not count them;
  /// passes over a subsample are not counted, their time is in `seconds`).
  int passes = -1;
  /// Of those, the passes that also formed the Hessian (D² multiply-adds a row, where the others
  /// read each row for a few dot products); -1 where a model does not count them.
  int curvature_passes = -1;
  /// −∇² of the log-likelihood alone at θ_MAP, where the search formed it there exactly (the
  /// Hessian of logistic regression's Newton steps); empty otherwise. A caller that needs the
  /// likelihood's curvature at θ_MAP (SMH's expansion) takes it instead of another pass.
  Mat lik_curvature;
  /// Where the chains start instead of θ_MAP plus jitter: chain k at entry (k − 1) modulo their
  /// count (dense θ). Empty for a search's own result; `--algo auto` fills it with its pilot's
  /// draws for the chosen run (docs/math.md §3.3). Any starting point leaves a chain exact.
  std::vector<Vec> chain_starts;
};

/// Where a bound was found violated: the datum (the whole data set's row index, 0-based), its
/// linear predictor (the first of several), and by how much the bound exceeded the likelihood
/// (log B_n − log L_n, or a scalable-MH remainder over its bound; NaN where a value was not
/// finite). Of several, the lowest-numbered datum is kept, so that reductions in any order agree.
struct ViolationSite {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t datum = kNone;
  double eta = 0.0;
  double excess = 0.0;
  bool found() const noexcept { return datum != kNone; }
  void merge(const ViolationSite& o) noexcept {
    if (o.datum < datum) *this = o;
  }
};

/// Outcome of comparing bounds with likelihoods (a bound's deltas()). Δ_n = log L_n − log B_n is
/// computed as a difference of terms, so rounding alone can leave it slightly negative where the
/// bound is tight; each bound states its tolerance.
struct BoundCheck {
  std::size_t violations = 0;  ///< Δ_n below −tolerance: log B_n > log L_n, a real violation
  std::size_t clamped = 0;     ///< Δ_n in [−tolerance, 0): rounding, clamped to 0
  ViolationSite first;         ///< the lowest-numbered violating datum
  /// Datum n (the whole data set's index) at predictor η has Δ_n = `delta` below tolerance.
  void violated(std::size_t n, double eta, double delta) noexcept {
    ++violations;
    first.merge({n, eta, -delta});
  }
  BoundCheck& operator+=(const BoundCheck& o) noexcept {
    violations += o.violations;
    clamped += o.clamped;
    first.merge(o.first);
    return *this;
  }
};

/// h += diag of the prior's precisions (PriorTerm::precision): the prior's part of a Laplace
/// precision or a metric.
inline void add_prior_precision(const Prior& prior, Mat& h) {
  if (prior.terms.empty()) {
    h.diagonal().array() += prior.precision(0);
    return;
  }
  for (Eigen::Index j = 0; j < h.rows(); ++j)
    h(j, j) += prior.precision(static_cast<std::size_t>(j));
}

/// The slack a bound is built with from `cfg`: RunConfig::bound_slack, with the automatic value
/// (unset; the set-up resolves it from Laplace draws before building the run's bound) taken as 0.
inline double bound_slack_of(const RunConfig& cfg) noexcept {
  return cfg.bound_slack.value_or(0.0);
}

/// Dense ↔ padded conversions for K blocks of `stride` (see the file comment).
struct ParamLayout {
  std::size_t k = 1, d = 0, stride = 0;
  std::size_t dim() const noexcept { return k * d; }
  std::size_t padded() const noexcept { return k * stride; }
  void pad(const double* dense, double* out) const noexcept {
    for (std::size_t b = 0; b < k; ++b)
      for (std::size_t j = 0; j < d; ++j) out[b * stride + j] = dense[b * d + j];
  }
  void unpad(const double* padded_in, double* dense) const noexcept {
    for (std::size_t b = 0; b < k; ++b)
      for (std::size_t j = 0; j < d; ++j) dense[b * d + j] = padded_in[b * stride + j];
  }
};

/// The names of one coefficient per feature of `data`: "intercept" for the column of ones
/// --intercept added, then "theta.1" … for the data's own features.
std::vector<std::string> coefficient_names(const Dataset& data);

/// What every model with one linear predictor per datum, η_n = x_n·θ (logistic, robust and the
/// single-index models), holds and shows: its data set, its prior, θ's layout and names.
class OnePredictorModel {
 public:
  std::size_t dim() const noexcept { return data_->d(); }
  std::size_t num_data() const noexcept { return data_->n(); }
  std::size_t stride() const noexcept { return data_->stride(); }
  ParamLayout layout() const noexcept { return {1, data_->d(), data_->stride()}; }
  const Dataset& data() const noexcept { return *data_; }
  const std::shared_ptr<const Dataset>& data_ptr() const noexcept { return data_; }
  const Prior& prior() const noexcept { return prior_; }
  /// coefficient_names(data()).
  std::vector<std::string> param_names() const;

 protected:
  OnePredictorModel(std::shared_ptr<const Dataset> data, Prior prior)
      : data_(std::move(data)), prior_(prior) {}
  std::shared_ptr<const Dataset> data_;
  Prior prior_;
};

/// What the samplers need of a model. `theta_pad` / `grad_pad` are padded (layout().padded()
/// doubles, 64-byte aligned); MAP results are dense.
template <class M>
concept FireflyModel = requires(const M& m, const double* cp, double* p) {
  typename M::Bound;
  { m.num_data() } -> std::convertible_to<std::size_t>;
  { m.dim() } -> std::convertible_to<std::size_t>;
  { m.layout() } -> std::convertible_to<ParamLayout>;
  { m.data() } -> std::same_as<const Dataset&>;
  { m.prior() } -> std::convertible_to<Prior>;
  /// Σ_n log L_n(θ) over all data (deterministic parallel reduction).
  { m.log_lik(cp) } -> std::same_as<double>;
  /// Σ_n log L_n(θ), and its gradient written to grad_pad (padding entries left 0).
  { m.log_lik_grad(cp, p) } -> std::same_as<double>;
  { m.find_map() } -> std::same_as<MapResult>;
  /// Names of the dense parameters, for draw files ("theta.1", "W.2.5", ...).
  { m.param_names() } -> std::same_as<std::vector<std::string>>;
};

/// What FlyMC needs of a bound. `preds` holds the K linear predictors of each datum in turn
/// (k·K doubles for k data), computed by the engine's row kernels.
template <class B>
concept FireflyBound = requires(const B& b, const Index* idx, const double* cp, double* p,
                                std::size_t k) {
  /// Σ_n log B_n(θ) from the collapsed statistics, O(K·D² + K²·D) and independent of N; with
  /// a non-null third argument its gradient is written there (padded).
  { b.log_bound_sum(cp, p, p) } -> std::same_as<double>;
  /// Doubles of scratch log_bound_sum needs (caller-owned, 64-byte aligned).
  { b.scratch_size() } -> std::convertible_to<std::size_t>;
  /// Δ_n = log L_n − log B_n ≥ 0 for data idx[0..k) (negative values clamped to 0 and counted).
  { b.deltas(idx, cp, k, p) } -> std::same_as<BoundCheck>;
  /// The same, plus ∂Δ_n/∂ψ_n (K values per datum) into the last argument.
  { b.delta_grads(idx, cp, k, p, p) } -> std::same_as<BoundCheck>;
  { b.slack() } -> std::convertible_to<double>;
  { b.outputs() } -> std::convertible_to<std::size_t>;  ///< K
};

namespace detail {
/// Throws std::logic_error: a NoFlyBound was used. Out of line and not marked noreturn, so that
/// the compiler does not see the FlyMC chains it never reaches as paths that cannot return.
void no_fly_bound();
}  // namespace detail

/// The Bound type of a model FlyMC cannot run (a global parameter beside θ: the model table
/// refuses FlyMC for it before one is made). It lets the θ-kernel runner compile for the model.
template <class M>
struct NoFlyBound {
  static NoFlyBound make(const M&, const RunConfig&, const MapResult&) {
    detail::no_fly_bound();
    return {};
  }
  double log_bound_sum(const double*, double*, double*) const {
    detail::no_fly_bound();
    return 0.0;
  }
  std::size_t scratch_size() const noexcept { return 0; }
  BoundCheck deltas(const Index*, const double*, std::size_t, double*) const {
    detail::no_fly_bound();
    return {};
  }
  BoundCheck delta_grads(const Index*, const double*, std::size_t, double*, double*) const {
    detail::no_fly_bound();
    return {};
  }
  double slack() const noexcept { return 0.0; }
  std::size_t outputs() const noexcept { return 1; }
  void raise_for_testing(double) noexcept {}
};

}  // namespace flymc
