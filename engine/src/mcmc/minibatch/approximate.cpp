// The approximate subsampling samplers (docs/math.md §5 and §6), run_approximate_request (the
// sampler table's runner for minibatch-mh and sgld): minibatch Metropolis–Hastings with the
// Barker test (Seita, Pan, Chen & Canny 2017) and stochastic gradient Langevin dynamics (Welling
// & Teh 2011). Their draws do not target the posterior exactly; every output says so (`exact` in
// the draw files' comments and in summary.json). They run several chains at once as run() does,
// one random stream per (seed, chain id) and no reduction across threads, so the draws do not
// depend on the thread count, and write the same draw files through DrawSink with the columns of
// columns.hpp (approx_draw_columns).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "../run/run_chains.hpp"
#include "../run/run_skeleton.hpp"
#include "approx_chain.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/setup.hpp"
#include "flymc/models/model_kinds.hpp"

namespace flymc {
namespace detail {

ApproxChain::ApproxChain(const ApproxShared& sh, int chain_id, DrawSink* sink)
    : sh_(sh),
      cfg_(sh.cfg),
      data_(sh.data),
      p_(sh.data.d()),
      n_(data_.n()),
      sink_(sink),
      rng_(cfg_.seed, static_cast<std::uint64_t>(chain_id)),
      drawer_(n_),
      adapt_(sh.eps0, cfg_.resolved_target_accept()),
      step_(cfg_.algo == Algo::sgld ? cfg_.sgld_step.value_or(auto_sgld_step(cfg_.batch_size, n_))
                                    : sh.eps0),
      theta_(p_),
      prop_(p_),
      grad_(p_),
      xi_(p_),
      row_(sh.columns.size()),
      cur_pad_(aligned_zeros(data_.stride())),
      prop_pad_(aligned_zeros(data_.stride())) {
  res_.chain_id = chain_id;
  res_.kept = static_cast<std::size_t>((cfg_.iters + cfg_.thin - 1) / cfg_.thin);
}

void ApproxChain::metric_step(double scale, double* out) {
  for (std::size_t j = 0; j < p_; ++j) xi_[j] = rng_.normal();
  const auto& l = sh_.chol;
  for (std::size_t i = 0; i < p_; ++i) {
    const auto ii = static_cast<Eigen::Index>(i);
    if (sh_.diagonal) {
      out[i] += scale * l(ii, ii) * xi_[i];
      continue;
    }
    double s = 0.0;
    for (std::size_t j = 0; j <= i; ++j) s += l(ii, static_cast<Eigen::Index>(j)) * xi_[j];
    out[i] += scale * s;
  }
}

/// The batch's responses y[idx[0..k)] into ys_.
void ApproxChain::gather_responses(const Index* idx, std::size_t k) {
  ys_.resize(k);
  const auto y = data_.y();
  for (std::size_t i = 0; i < k; ++i) ys_[i] = y[idx[i]];
}

/// out[i] = f(y_i, a'_i) − f(y_i, a_i), a = x·θ and a' = x·θ' for the data idx[0..k), from the
/// family's batched derivatives() (order 0).
void ApproxChain::batch_log_ratios(const Index* idx, std::size_t k, double* out) {
  a_.resize(k);
  b_.resize(k);
  fa_.resize(k);
  fb_.resize(k);
  data_.dots_gather(idx, k, prop_pad_.get(), b_.data());
  data_.dots_gather(idx, k, cur_pad_.get(), a_.data());
  gather_responses(idx, k);
  sh_.family.derivatives(ys_.data(), a_.data(), k, 0, fa_.data());
  sh_.family.derivatives(ys_.data(), b_.data(), k, 0, fb_.data());
  for (std::size_t i = 0; i < k; ++i) out[i] = fb_[i] - fa_[i];
  res_.counters.queries += 2 * k;  // each datum at θ and at θ'
}

/// grad += Σ_i f'(y_i, a_i)·x_i over the data idx[0..k), a = x·θ.
void ApproxChain::batch_gradient(const Index* idx, std::size_t k, double* grad) {
  a_.resize(k);
  fa_.resize(2 * k);
  data_.dots_gather(idx, k, cur_pad_.get(), a_.data());
  gather_responses(idx, k);
  sh_.family.derivatives(ys_.data(), a_.data(), k, 1, fa_.data());
  for (std::size_t i = 0; i < k; ++i) data_.add_row(idx[i], fa_[k + i], grad);
  res_.counters.queries += k;
  ++res_.counters.grad_evals;
}

/// A random-walk proposal in the metric, decided by the minibatch Barker test (docs/math.md §5);
/// the step size adapts to the target acceptance during warm-up.
void ApproxChain::mh_step(long it) {
  std::copy(theta_.begin(), theta_.end(), prop_.begin());
  metric_step(step_, prop_.data());
  const Prior& prior = sh_.prior;
  // The walk is symmetric: only the prior ratio joins the likelihood ratio.
  const double log_rest =
      prior.log_density(prop_.data(), p_) - prior.log_density(theta_.data(), p_);
  for (std::size_t j = 0; j < p_; ++j) {
    cur_pad_[j] = theta_[j];
    prop_pad_[j] = prop_[j];
  }
  const BarkerOutcome o = barker_test(
      rng_, drawer_, static_cast<std::size_t>(cfg_.batch_size), log_rest, *sh_.corr, buf_,
      [this](const Index* idx, std::size_t k, double* out) { batch_log_ratios(idx, k, out); },
      cfg_.barker_temper);
  if (!std::isfinite(log_rest)) ++res_.counters.nonfinite;
  if (o.accept) theta_.swap(prop_);
  const double acc = o.accept ? 1.0 : 0.0;
  window_accept_ += acc;
  gauge_accept_ += acc;
  window_batch_ += static_cast<double>(o.batch);
  ++window_steps_;
  if (it < cfg_.warmup) {
    step_ = adapt_.update(acc);
  } else {
    accept_sum_ += acc;
    batch_sum_ += static_cast<double>(o.batch);
  }
}

/// θ ← θ + h·M·ĝ + √(2h)·L·ξ with ĝ = ∇ log p(θ) + (N/b)·Σ_batch ∇ log p(x_i | θ), the batch drawn
/// afresh without replacement (docs/math.md §6).
void ApproxChain::sgld_step() {
  const std::size_t b = std::min(n_, static_cast<std::size_t>(cfg_.batch_size));
  for (std::size_t j = 0; j < p_; ++j) cur_pad_[j] = theta_[j];
  drawer_.restart();
  const Index* idx = drawer_.extend(rng_, b);
  std::fill(grad_.begin(), grad_.end(), 0.0);
  batch_gradient(idx, b, grad_.data());
  const double scale = static_cast<double>(n_) / static_cast<double>(b);
  for (double& g : grad_) g *= scale;
  sh_.prior.add_gradient(theta_.data(), p_, grad_.data());
  // M·ĝ = L·(Lᵀ·ĝ).
  const auto& l = sh_.chol;
  for (std::size_t i = 0; i < p_; ++i) {
    double s = 0.0;
    for (std::size_t j = sh_.diagonal ? i : 0; j < (sh_.diagonal ? i + 1 : p_); ++j)
      s += l(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)) * grad_[j];
    xi_[i] = s;  // (Lᵀĝ)_i
  }
  for (std::size_t i = 0; i < p_; ++i) {
    double s = 0.0;
    for (std::size_t j = sh_.diagonal ? i : 0; j <= i; ++j)
      s += l(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) * xi_[j];
    theta_[i] += step_ * s;
  }
  metric_step(std::sqrt(2.0 * step_), theta_.data());
  bool finite = true;
  for (double t : theta_) finite = finite && std::isfinite(t);
  if (!finite) throw ConfigError("--algo sgld diverged (a non-finite theta): lower --sgld-step");
  window_accept_ += 1.0;
  window_batch_ += static_cast<double>(b);
  ++window_steps_;
  batch_sum_ += static_cast<double>(b);
  accept_sum_ += 1.0;
}

void ApproxChain::transition(long it) {
  if (cfg_.algo == Algo::sgld) {
    sgld_step();
  } else {
    mh_step(it);
  }
}

/// End of warm-up: minibatch MH freezes its averaged step size; the sampling sums start.
void ApproxChain::end_warmup() {
  if (cfg_.algo == Algo::minibatch_mh && cfg_.warmup > 0) step_ = adapt_.final_step_size();
  if (sink_) {
    const Mat m = sh_.chol * sh_.chol.transpose();
    std::vector<double> inv;
    for (std::size_t i = 0; i < p_; ++i)
      for (std::size_t j = 0; j < p_; ++j)
        if (!sh_.diagonal || i == j)
          inv.push_back(m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)));
    sink_->adaptation(step_, inv, !sh_.diagonal);
  }
  accept_sum_ = batch_sum_ = 0.0;
  window_accept_ = window_batch_ = 0.0;
  window_steps_ = 0;
  queries_at_row_ = queries_at_sampling_ = res_.counters.queries;
}

/// Every thin-th sampling iteration: the kept draw and its row. lp__ is not computed (0, as
/// Stan's fixed_param sampler writes it): it would cost a pass over all the data per draw.
void ApproxChain::record(long it) {
  if ((it - cfg_.warmup) % cfg_.thin != 0) return;
  res_.lp.push_back(0.0);
  res_.draws.insert(res_.draws.end(), theta_.begin(), theta_.end());
  if (sink_) {
    const double steps = static_cast<double>(std::max(1L, window_steps_));
    SamplerRow r;
    r.accept_stat = window_accept_ / steps;
    r.stepsize = step_;
    r.batch = window_batch_ / steps;
    r.n_queries = static_cast<double>(res_.counters.queries - queries_at_row_);
    fill_approx_draw_row(r, theta_.data(), p_, row_);
    sink_->row(row_);
  }
  queries_at_row_ = res_.counters.queries;
  window_accept_ = window_batch_ = 0.0;
  window_steps_ = 0;
}

/// SGLD has no acceptance test: its gauge carries the iteration count alone.
void ApproxChain::publish(ChainGauge& gauge, long iterations) const {
  if (cfg_.algo == Algo::sgld) return gauge.publish(iterations);
  gauge.publish(iterations, gauge_accept_, iterations, std::numeric_limits<double>::quiet_NaN());
}

ChainResult ApproxChain::run(ChainGauge* gauge) {
  res_.draws.reserve(res_.kept * p_);
  res_.lp.reserve(res_.kept);
  initial_theta(cfg_, sh_.map, sh_.prior, rng_, theta_.data(), res_.chain_id);
  if (sink_) sink_->begin(sh_.columns);
  own_moves_loop(
      cfg_, res_, gauge, [this] { end_warmup(); }, [this](long it) { transition(it); },
      [this](long it) { record(it); },
      [this](ChainGauge& g, long iterations) { publish(g, iterations); });
  const double iters = static_cast<double>(cfg_.iters);
  res_.step_size = step_;
  res_.accept_rate = accept_sum_ / iters;
  res_.batch_mean = batch_sum_ / iters;
  res_.bright_mean = std::numeric_limits<double>::quiet_NaN();
  res_.sampling_queries = res_.counters.queries - queries_at_sampling_;
  if (sink_) sink_->end(res_.warmup_seconds, res_.sampling_seconds, res_.counters);
  return std::move(res_);
}

/// The metric's Cholesky factor L (M = L·Lᵀ) from the Laplace fit: the identity, the Laplace
/// standard deviations, or the Cholesky factor of the Laplace covariance. Not adapted: a fixed
/// metric keeps the comparison with the exact samplers controlled.
void set_metric(ApproxShared& sh, std::size_t p) {
  const Metric m = sh.cfg.resolved_metric();
  const auto pp = static_cast<Eigen::Index>(p);
  sh.chol = Mat::Identity(pp, pp);
  sh.diagonal = m != Metric::dense;
  if (m == Metric::diag) {
    for (Eigen::Index j = 0; j < pp; ++j) sh.chol(j, j) = std::sqrt(sh.map.covariance(j, j));
  } else if (m == Metric::dense) {
    const Eigen::LLT<Mat> llt(sh.map.covariance);
    if (llt.info() != Eigen::Success)
      throw ConfigError("--metric dense: the Laplace covariance is not positive definite");
    sh.chol = llt.matrixL();
  }
}

}  // namespace detail

namespace {

/// A run of model M's family: its MAP search, then the chains on the family's per-datum terms.
template <class M>
RunResult run_approximate_model(const RunRequest& r) {
  const RunConfig& cfg = r.cfg;
  detail::ModelRun<M> run(r);
  const M& model = run.model();
  RunResult& out = run.result();
  RunConfig rw = cfg;
  rw.kernel = KernelKind::rwmh;  // minibatch MH's walk starts at the RW optimal scaling
  detail::ApproxShared sh{cfg,
                          model.data(),
                          *model.family_ptr(),
                          model.prior(),
                          out.map,
                          Mat(),
                          true,
                          initial_step_size(rw, out.map, out.dim),
                          approx_draw_columns(out.names),
                          cfg.algo == Algo::minibatch_mh ? &BarkerCorrection::standard() : nullptr};
  run.set_up([&] {
    detail::set_metric(sh, out.dim);
    return -1;
  });
  return run.finish_unsaved([&](RunResult& o) {
    detail::run_independent_chains(cfg, r.sinks, r.progress, o, [&](int id, DrawSink* sink) {
      return detail::ApproxChain(sh, id, sink);
    });
  });
}

}  // namespace

RunResult run_approximate_request(const RunRequest& r) {
  return with_single_index_model(
      r.cfg.model, []<class M>(const RunRequest& req) { return run_approximate_model<M>(req); }, r);
}

}  // namespace flymc
