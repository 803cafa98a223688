#include "pdmp_chain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../run/run_chains.hpp"
#include "flymc/kernels/kernels.hpp"

namespace flymc::detail {

void PdmpShared::start(Rng& rng, double* u, int chain) const {
  initial_theta(cfg, map, Prior{PriorKind::gaussian, prior_sd, {}}, rng, u, chain);
  if (transform.size() == 0) return;
  Eigen::Map<Vec> uv(u, transform.rows());
  transform.triangularView<Eigen::Lower>().solveInPlace(uv);
}

const double* PdmpShared::to_theta(const double* u, double* theta) const noexcept {
  if (transform.size() == 0) return u;
  const auto p = transform.rows();
  Eigen::Map<Vec>(theta, p).noalias() =
      transform.triangularView<Eigen::Lower>() * Eigen::Map<const Vec>(u, p);
  return theta;
}

void DatumGradients::coefficients(const Index* idx, std::size_t k, const double* theta_pad,
                                  double* coef) {
  data_.dots_gather(idx, k, theta_pad, coef);
  const auto y = data_.y();
  for (std::size_t i = 0; i < k; ++i) coef[i] = pdmp::datum_coef(family_, y[idx[i]], coef[i]);
  counters_.queries += k;
}

double DatumGradients::coefficient(Index j, const double* theta_pad) {
  ++counters_.queries;
  return pdmp::datum_coef(family_, data_.y()[j], data_.dot(j, theta_pad));
}

void DatumGradients::accumulate(const Index* idx, std::size_t k, const double* coef, double scale,
                                double* grad) const noexcept {
  for (std::size_t i = 0; i < k; ++i) data_.add_row(idx[i], scale * coef[i], grad);
}

void DatumGradients::projections(const Index* idx, std::size_t k, const double* coef,
                                 const double* w_pad, double* proj) {
  data_.dots_gather(idx, k, w_pad, proj);
  for (std::size_t i = 0; i < k; ++i) proj[i] *= coef[i];
}

void DatumGradients::full(const PdmpShared& sh, const double* theta_pad, double* grad) {
  sh.log_lik_grad(theta_pad, grad);  // ∇ log L = −∇U_lik, stride entries
  for (std::size_t j = 0; j < data_.d(); ++j) grad[j] = -grad[j];
  counters_.queries += data_.n();
  ++counters_.grad_evals;
}

PdmpOutput::PdmpOutput(const PdmpShared& sh, int chain_id, DrawSink* sink,
                       const std::vector<double>* precond)
    : sh_(sh),
      precond_(precond),
      sink_(sink),
      p_(sh.data.d()),
      // A run to an ESS target sets the path's end block by block (extend()).
      path_(p_, sh.spacing, sh.cfg.warmup, sh.cfg.ess > 0.0 ? 1 : sh.cfg.iters),
      row_(sh.columns.size()),
      theta_(p_),
      event_theta_(p_) {
  res_.chain_id = chain_id;
  res_.kept = static_cast<std::size_t>((sh.cfg.iters + sh.cfg.thin - 1) / sh.cfg.thin);
  if (sh.cfg.ess <= 0.0) {  // a run to an ESS target grows its draws block by block
    res_.draws.reserve(res_.kept * p_);
    res_.lp.reserve(res_.kept);
  }
}

void PdmpOutput::begin(ChainGauge* gauge) {
  gauge_ = gauge;
  warm_clock_ = Stopwatch();
  if (sink_) sink_->begin(sh_.columns);
  if (sh_.cfg.warmup == 0) end_warmup();
}

void PdmpOutput::advance(const double* theta, const double* w, double tau) {
  path_.advance(theta, w, tau, [this](long k, const double* point) { emit(k, point); });
}

void PdmpOutput::proposal(bool accepted) noexcept {
  ++window_.proposals;
  if (accepted) ++window_.accepted;
  if (path_.sampling()) {
    ++total_.proposals;
    if (accepted) ++total_.accepted;
  }
}

/// The warm-up's path time is over: the adaptation block (the spacing as the step size and the
/// preconditioner as the metric), then the sampling tallies start.
void PdmpOutput::end_warmup() {
  if (sink_) {
    // The velocity's scale in θ, squared: diag(T A² Tᵀ), A = diag(a) the chain's own
    // preconditioner (pSBPS) or I.
    std::vector<double> inv(p_, 1.0);
    if (precond_)
      for (std::size_t j = 0; j < p_; ++j) inv[j] = (*precond_)[j] * (*precond_)[j];
    if (sh_.transform.size() != 0) {
      const std::vector<double> a2 = inv;
      for (std::size_t j = 0; j < p_; ++j) {
        inv[j] = 0.0;
        for (std::size_t k = 0; k <= j; ++k) {
          const double t =
              sh_.transform(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k));
          inv[j] += t * t * a2[k];
        }
      }
    }
    sink_->adaptation(sh_.spacing, inv, false);
  }
  res_.warmup_seconds = warm_clock_.seconds();
  sampling_start_ = Clock::now();
  queries_at_sampling_ = queries_at_row_ = res_.counters.queries;
  window_ = Window{};
}

void PdmpOutput::event_at(double time, int kind, int coordinate, const double* u) {
  if (!sink_ || !sh_.cfg.save_events) return;
  sink_->path_event(time, kind, coordinate, sh_.to_theta(u, event_theta_.data()), p_);
}

/// Grid point k (iteration k − 1): a kept draw every thin-th sampling iteration; the last one
/// ends the path.
void PdmpOutput::emit(long k, const double* u) {
  const RunConfig& cfg = sh_.cfg;
  if (k == path_.total()) end_u_.assign(u, u + p_);  // the end event, if the path ends here
  if (gauge_ && ((k & 15) == 0 || k == path_.total())) gauge_->publish(k);
  if (k == cfg.warmup) end_warmup();
  if (k <= cfg.warmup || (k - 1 - cfg.warmup) % cfg.thin != 0) return;
  const double* theta = sh_.to_theta(u, theta_.data());
  res_.lp.push_back(0.0);
  res_.draws.insert(res_.draws.end(), theta, theta + p_);
  if (sink_) {
    SamplerRow r;
    r.accept_stat = window_.proposals > 0 ? static_cast<double>(window_.accepted) /
                                                static_cast<double>(window_.proposals)
                                          : 1.0;
    r.stepsize = sh_.spacing;
    r.n_events = static_cast<double>(window_.accepted);
    r.n_queries = static_cast<double>(res_.counters.queries - queries_at_row_);
    r.violations = static_cast<double>(window_.violations);
    fill_pdmp_draw_row(r, theta, p_, row_);
    sink_->row(row_);
  }
  queries_at_row_ = res_.counters.queries;
  window_ = Window{};
}

ChainResult PdmpOutput::finish(double batch) {
  if (!end_u_.empty())
    event_at(path_.spacing() * static_cast<double>(path_.total()), kPathEnd, 0, end_u_.data());
  res_.kept = res_.lp.size();
  res_.sampling_seconds = seconds_between(sampling_start_, Clock::now());
  res_.step_size = sh_.spacing;
  res_.accept_rate = total_.proposals > 0 ? static_cast<double>(total_.accepted) /
                                                static_cast<double>(total_.proposals)
                                          : 1.0;
  res_.batch_mean = batch;
  res_.bright_mean = std::numeric_limits<double>::quiet_NaN();
  res_.sampling_queries = res_.counters.queries - queries_at_sampling_;
  res_.path_mean = path_.mean();  // of u: θ's is T times it, the integral being linear
  if (sh_.transform.size() != 0) {
    const std::vector<double> u = res_.path_mean;
    sh_.to_theta(u.data(), res_.path_mean.data());
  }
  if (sink_) sink_->end(res_.warmup_seconds, res_.sampling_seconds, res_.counters);
  return std::move(res_);
}

}  // namespace flymc::detail
