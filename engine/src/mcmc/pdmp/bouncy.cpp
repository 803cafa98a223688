#include "bouncy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../run/run_chains.hpp"

namespace flymc::detail {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// SBPS: band width in predictive standard deviations (Pakman et al. 2017: k = 3), and the nodes
// of its piecewise-linear interpolation ahead of the particle; with no proposal within the
// nodes' horizon the particle stops there for an auxiliary observation (their Supp. E).
constexpr double kBandWidth = 3.0;
constexpr int kBandNodes = 64;
// pSBPS (Pakman et al. §5): V ← (1 − β)V + β ĝ∘ĝ, a = 1/(√V + ε), a ← a/mean(a).
constexpr double kPrecondBeta = 0.01, kPrecondEps = 1e-4;
// Rounding allowance of the exact samplers' check that a rate stayed below its bound.
constexpr double kBoundRoundoff = 1e-9;

double dot(const std::vector<double>& x, const std::vector<double>& y) {
  double s = 0.0;
  for (std::size_t j = 0; j < x.size(); ++j) s += x[j] * y[j];
  return s;
}
}  // namespace

BouncyChain::BouncyChain(const PdmpShared& sh, int chain_id, DrawSink* sink)
    : sh_(sh),
      p_(sh.data.d()),
      n_(sh.data.n()),
      batch_(std::min(n_, static_cast<std::size_t>(sh.cfg.batch_size))),
      full_(sh.cfg.algo == Algo::bps),
      band_(sh.cfg.algo == Algo::sbps || sh.cfg.algo == Algo::psbps),
      precondition_(sh.cfg.algo == Algo::psbps),
      dense_(sh.c.q.size() != 0),
      rng_(sh.cfg.seed, static_cast<std::uint64_t>(chain_id)),
      v_(p_),
      w_(p_),
      a_(p_, 1.0),
      g_(p_),
      h_(p_),
      sq_(p_, 0.0),
      coef_(batch_),
      proj_(batch_),
      out_(sh, chain_id, sink, precondition_ ? &a_ : nullptr),
      grads_(sh.data, sh.family, out_.counters()),
      drawer_(n_),
      theta_pad_(aligned_zeros(sh.data.stride())),
      w_pad_(aligned_zeros(sh.data.stride())),
      grad_pad_(aligned_zeros(sh.data.stride())),
      lik_bound_(sh.c.by_norm.size() == 0 ? 0.0 : sh.c.by_norm.total()),
      bandfit_(kBandWidth, sh.slope_sd) {}

ChainResult BouncyChain::run(ChainGauge* gauge) {
  advance(sh_.cfg.warmup + sh_.cfg.iters, gauge);
  return finish();
}

void BouncyChain::advance(long end, ChainGauge* gauge) {
  if (!begun_) {
    begun_ = true;
    theta_.resize(p_);
    sh_.start(rng_, theta_.data(), out_.chain_id());
    pdmp::sphere_velocity(rng_, v_.data(), p_);
    set_velocity();
    next_refresh_ = sh_.refresh > 0.0 ? pdmp::exp1(rng_) / sh_.refresh : kInf;
    out_.begin(gauge);
    out_.event(kPathStart, 0, theta_.data());
  }
  out_.extend(end);
  while (!out_.done()) {
    stop_if_aborted();
    if (band_) {
      step_band();
    } else {
      step_thinned();
    }
  }
}

ChainResult BouncyChain::finish() { return out_.finish(static_cast<double>(full_ ? n_ : batch_)); }

void BouncyChain::set_velocity() {
  for (std::size_t j = 0; j < p_; ++j) w_[j] = a_[j] * v_[j];
  if (!dense_) return;
  const auto pp = static_cast<Eigen::Index>(p_);
  const Eigen::Map<const Vec> w(w_.data(), pp), th(theta_.data(), pp);
  qu_.resize(p_);
  qw_.resize(p_);
  Eigen::Map<Vec>(qu_.data(), pp).noalias() = sh_.c.q * th;  // afresh: no rounding drift
  Eigen::Map<Vec>(qw_.data(), pp).noalias() = sh_.c.q * w;
  w_norm_ = std::sqrt(dot(w_, w_));
  wqw_ = dot(w_, qw_);
}

void BouncyChain::add_prior_grad() {
  if (!dense_) {
    sh_.c.add_prior_grad(theta_.data(), g_.data());
    return;
  }
  for (std::size_t j = 0; j < p_; ++j) g_[j] += qu_[j];
}

/// lipSBPS's bound (bounds.hpp's bps_bound), from the carried Qθ and Qw with a dense Q.
pdmp::AffineBound BouncyChain::lipschitz_bound() const noexcept {
  const double lik = sh_.c.m1 * lik_bound_;  // |c_i| ≤ M1
  if (!dense_) return pdmp::bps_bound(sh_.c, lik, theta_.data(), w_.data());
  return {w_norm_ * lik + dot(w_, qu_), wqw_};
}

/// Moves the particle by tau along w, reading draws off the segment on the way.
void BouncyChain::move(double tau) {
  out_.advance(theta_.data(), w_.data(), tau);
  for (std::size_t j = 0; j < p_; ++j) theta_[j] += w_[j] * tau;
  if (dense_)
    for (std::size_t j = 0; j < p_; ++j) qu_[j] += qw_[j] * tau;
  if (tau > 0.0) fresh_ = false;
}

/// A fresh velocity, uniform on the sphere (in the preconditioned coordinates for pSBPS).
void BouncyChain::refresh() {
  if (precondition_ && !out_.sampling()) adapt_preconditioner();
  pdmp::sphere_velocity(rng_, v_.data(), p_);
  set_velocity();
  next_refresh_ = out_.path().now() + pdmp::exp1(rng_) / sh_.refresh;
  bandfit_.clear();  // the band was fitted along the old velocity
  out_.event(kPathRefresh, 0, theta_.data());
}

/// ĝ at θ: the full gradient of U (BPS); the prior's plus a mean of ∇U_i·Λ/‖x_i‖ over b data
/// drawn with replacement by ‖x_i‖ (lipSBPS); the prior's plus N/b times a batch's, the batch
/// drawn uniformly without replacement (the band samplers, which also project it on w).
void BouncyChain::observe() {
  std::copy(theta_.begin(), theta_.end(), theta_pad_.get());
  if (full_) {
    grads_.full(sh_, theta_pad_.get(), grad_pad_.get());
    std::copy(grad_pad_.get(), grad_pad_.get() + p_, g_.begin());
    add_prior_grad();
  } else if (!band_) {
    std::fill(g_.begin(), g_.end(), 0.0);
    add_prior_grad();
    if (lik_bound_ > 0.0) draw_weighted_batch();
  } else {
    drawer_.restart();
    batch_idx_ = drawer_.extend(rng_, batch_);
    grads_.coefficients(batch_idx_, batch_, theta_pad_.get(), coef_.data());
    std::fill(g_.begin(), g_.end(), 0.0);
    add_prior_grad();
    grads_.accumulate(batch_idx_, batch_, coef_.data(),
                      static_cast<double>(n_) / static_cast<double>(batch_), g_.data());
  }
  fresh_ = true;
  if (!band_) return;
  if (precondition_ && !out_.sampling()) {
    for (std::size_t j = 0; j < p_; ++j)
      sq_[j] = sq_started_ ? (1.0 - kPrecondBeta) * sq_[j] + kPrecondBeta * g_[j] * g_[j]
                           : g_[j] * g_[j];
    sq_started_ = true;
  }
  project();
}

/// lipSBPS's likelihood part of ĝ: b data i drawn with probability q_i = ‖x_i‖/Λ, each term
/// ∇U_i/q_i = c_i x_i·Λ/‖x_i‖, whose size is below Λ (|c_i| < 1): the bound of every batch.
/// The batch is drawn in passes (words, then indices, then the reads), each prefetching what the
/// next reads: the same draws as one index at a time, with the scattered loads overlapped.
void BouncyChain::draw_weighted_batch() {
  const AliasTable& by_norm = sh_.c.by_norm;
  words_.resize(batch_);
  picked_.resize(batch_);
  for (std::uint64_t& u : words_) {
    u = rng_();
    by_norm.prefetch(u);
  }
  for (std::size_t k = 0; k < batch_; ++k) {
    picked_[k] = by_norm.index(words_[k]);
    sh_.data.prefetch(picked_[k]);
    __builtin_prefetch(sh_.c.norm.data() + picked_[k]);
  }
  grads_.coefficients(picked_.data(), batch_, theta_pad_.get(), coef_.data());
  for (std::size_t k = 0; k < batch_; ++k) coef_[k] *= lik_bound_ / sh_.c.norm[picked_[k]];
  grads_.accumulate(picked_.data(), batch_, coef_.data(), 1.0 / static_cast<double>(batch_),
                    g_.data());
}

/// SBPS's observation of the last batch along w: G = w·ĝ and the variance of its batch mean,
/// s² = N²(1 − b/N)·Var_batch(w·∇U_i)/b (sampling without replacement).
void BouncyChain::project() {
  gw_ = dot(w_, g_);
  std::copy(w_.begin(), w_.end(), w_pad_.get());
  grads_.projections(batch_idx_, batch_, coef_.data(), w_pad_.get(), proj_.data());
  RunningMoments m;
  for (double x : proj_) m.add(x);
  const double b = static_cast<double>(batch_), nn = static_cast<double>(n_);
  var_ = batch_ > 1 ? nn * nn * (1.0 - b / nn) * (m.m2 / (b - 1.0)) / b : 0.0;
}

/// pSBPS during warm-up: a from the running mean V of ĝ∘ĝ, normalized to mean 1.
void BouncyChain::adapt_preconditioner() {
  if (!sq_started_) return;
  double mean = 0.0;
  for (std::size_t j = 0; j < p_; ++j) mean += a_[j] = 1.0 / (std::sqrt(sq_[j]) + kPrecondEps);
  mean /= static_cast<double>(p_);
  for (double& x : a_) x /= mean;
}

/// Exact BPS and lipSBPS: the next proposal of the affine bound, then thinning by [w·ĝ]_+. BPS
/// bounds from the exact gradient where the particle is, so it observes first if it moved
/// without one (a refreshment); a proposal, accepted or not, leaves g_ fresh for the next bound.
void BouncyChain::step_thinned() {
  if (full_ && !fresh_) observe();
  const pdmp::AffineBound bd =
      full_ ? pdmp::bps_curvature_bound(sh_.c, g_.data(), w_.data()) : lipschitz_bound();
  const double t_ev = pdmp::affine_rate_time(bd.a, bd.b, pdmp::exp1(rng_));
  const double t_ref = next_refresh_ - out_.path().now();
  const double t = std::min({t_ev, t_ref, out_.remaining()});
  move(t);
  if (out_.done()) return;
  if (t_ref <= t_ev) {  // by memorylessness the pending proposal is simply dropped
    refresh();
    return;
  }
  observe();
  const double rate = std::max(0.0, dot(w_, g_)), bound = bd.at(t);
  if (rate > bound * (1.0 + kBoundRoundoff)) out_.violation();
  const bool accept = rng_.uniform() * bound < rate;
  out_.proposal(accept);
  if (accept) {
    pdmp::reflect(v_.data(), g_.data(), p_);
    set_velocity();
    out_.event(kPathBounce, 0, theta_.data());
  }
}

/// The band's nodes from the particle's time since the last bounce, kBandNodes steps ahead, and
/// the first proposal time of the interpolated band's Poisson process (+inf beyond the nodes).
/// The band is convex in τ (ρ is the norm of an affine function of τ), so its chords lie above
/// it: the interpolation only raises the proposal rate.
double BouncyChain::band_proposal(double e) {
  rate_.clear();
  for (int m = 0; m <= kBandNodes; ++m) {
    const double tau = since_bounce_ + sh_.band_step * m;
    rate_.add(tau, bandfit_.upper(tau));
  }
  return rate_.first_time(e) - since_bounce_;
}

/// SBPS and pSBPS: propose from the band, observe, accept with min(1, [G]_+/λ̄), count G > λ̄ as
/// a bound violation; a rejected proposal's observation joins the regression.
void BouncyChain::step_band() {
  if (bandfit_.empty()) {  // start, or a new velocity: observe where the particle is
    observe();
    since_bounce_ = 0.0;
    bandfit_.add(0.0, gw_, var_);
  }
  const double t_ev = band_proposal(pdmp::exp1(rng_));
  const double t_hz = sh_.band_step * kBandNodes;
  const double t_ref = next_refresh_ - out_.path().now();
  const double t = std::min({t_ev, t_hz, t_ref, out_.remaining()});
  move(t);
  since_bounce_ += t;
  if (out_.done()) return;
  if (t_ref <= std::min(t_ev, t_hz)) {
    refresh();
    return;
  }
  const double bound = rate_.at(since_bounce_);
  observe();
  if (t_ev > t_hz) {  // no proposal within the horizon: an auxiliary observation
    bandfit_.add(since_bounce_, gw_, var_);
    return;
  }
  if (gw_ > bound) out_.violation();
  const bool accept = rng_.uniform() * bound < gw_;
  out_.proposal(accept);
  if (accept) {
    bounce();
  } else {
    bandfit_.add(since_bounce_, gw_, var_);
  }
}

/// Reflects v against a∘ĝ (ĝ for SBPS) and restarts the regression from the same batch seen
/// along the new velocity (G becomes −G when a is unchanged).
void BouncyChain::bounce() {
  for (std::size_t j = 0; j < p_; ++j) h_[j] = a_[j] * g_[j];
  pdmp::reflect(v_.data(), h_.data(), p_);
  out_.event(kPathBounce, 0, theta_.data());
  if (precondition_ && !out_.sampling()) adapt_preconditioner();
  set_velocity();
  project();
  bandfit_.clear();
  since_bounce_ = 0.0;
  bandfit_.add(0.0, gw_, var_);
}

}  // namespace flymc::detail
