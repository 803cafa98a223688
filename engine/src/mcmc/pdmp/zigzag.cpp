#include "zigzag.hpp"

#include <algorithm>
#include <cmath>

#include "../run/run_chains.hpp"

namespace flymc::detail {

namespace {
// Rounding allowance of the check that a rate stayed below its bound.
constexpr double kBoundRoundoff = 1e-9;
// A coordinate's datum is drawn as a random word (its alias column prefetched), resolved to an
// index kAhead proposals of the coordinate later (its row prefetched) and read kAhead proposals
// after that: each of the two dependent loads gets kAhead proposals' time to arrive.
constexpr std::size_t kAhead = 4;
}  // namespace

ZigZagChain::ZigZagChain(const PdmpShared& sh, int chain_id, DrawSink* sink)
    : sh_(sh),
      p_(sh.data.d()),
      cv_(sh.cfg.algo == Algo::zigzag_cv),
      rng_(sh.cfg.seed, static_cast<std::uint64_t>(chain_id)),
      v_(p_),
      next_(p_),
      origin_(p_),
      bound_(p_),
      word_(p_ * kAhead),
      datum_(p_ * kAhead),
      slot_(p_, 0),
      out_(sh, chain_id, sink, nullptr),
      grads_(sh.data, sh.family, out_.counters()),
      theta_pad_(aligned_zeros(sh.data.stride())) {}

ChainResult ZigZagChain::run(ChainGauge* gauge) {
  advance(sh_.cfg.warmup + sh_.cfg.iters, gauge);
  return finish();
}

void ZigZagChain::advance(long end, ChainGauge* gauge) {
  if (!begun_) {
    begun_ = true;
    theta_.resize(p_);
    sh_.start(rng_, theta_.data(), out_.chain_id());
    for (double& x : v_) x = rng_.uniform() < 0.5 ? -1.0 : 1.0;
    out_.begin(gauge);
    out_.event(kPathStart, 0, theta_.data());
    fill_ahead();
    for (std::size_t j = 0; j < p_; ++j) schedule(j);
  }
  out_.extend(end);
  while (!out_.done()) {
    stop_if_aborted();
    step();
  }
}

ChainResult ZigZagChain::finish() { return out_.finish(1.0); }

/// The bound of coordinate j from the particle's present position, and the first event of its
/// Poisson process. The other coordinates' bounds stay valid: each holds along the whole ray
/// whatever the other velocities do (bounds.hpp).
void ZigZagChain::schedule(std::size_t j) {
  if (cv_) {
    double d2 = 0.0;
    for (std::size_t k = 0; k < p_; ++k) {
      const double d = theta_[k] - sh_.c.theta_map[k];
      d2 += d * d;
    }
    bound_[j] = pdmp::zigzag_cv_bound(sh_.c, j, theta_.data(), v_.data(), std::sqrt(d2));
  } else {
    bound_[j] = pdmp::zigzag_ss_bound(sh_.c, j, theta_.data(), v_.data());
  }
  origin_[j] = out_.path().now();
  next_[j] = origin_[j] + pdmp::affine_rate_time(bound_[j].a, bound_[j].b, pdmp::exp1(rng_));
}

/// Every coordinate's ring of data ahead: kAhead data drawn, and kAhead words for the data after
/// them.
void ZigZagChain::fill_ahead() {
  for (std::size_t j = 0; j < p_; ++j) {
    if (sh_.c.pick[j].size() == 0) continue;  // no datum moves this coordinate's rate
    for (std::size_t s = j * kAhead; s < (j + 1) * kAhead; ++s) {
      datum_[s] = sh_.c.pick[j].draw(rng_);
      word_[s] = rng_();
    }
  }
}

/// The datum of coordinate j's present proposal, resolved kAhead proposals of j ago from a word
/// drawn 2·kAhead ago. Its slot in the ring then takes the datum of the word drawn kAhead
/// proposals ago, whose alias column was prefetched then, prefetching that datum's row, and a
/// fresh word, prefetching its column. Exact because each datum is an independent draw from a
/// table fixed for the run and nothing reads it before its own proposal: as if all were drawn
/// before the run (a table that changed during the run would have to flush the rings). On data
/// larger than the caches this hides the two dependent memory reads of every proposal behind
/// the proposals in between, even when one coordinate makes most of them.
Index ZigZagChain::take_datum(std::size_t j) {
  const AliasTable& pick = sh_.c.pick[j];
  const std::size_t s = j * kAhead + slot_[j];
  slot_[j] = (slot_[j] + 1) % kAhead;
  const Index now = datum_[s];
  datum_[s] = pick.index(word_[s]);
  sh_.data.prefetch(datum_[s]);
  if (cv_) {
    __builtin_prefetch(sh_.c.norm.data() + datum_[s]);
    __builtin_prefetch(sh_.c.coef_map.data() + datum_[s]);
  }
  word_[s] = rng_();
  pick.prefetch(word_[s]);
  return now;
}

/// An unbiased estimate of ∂_j U(θ) from one datum J drawn with probability w_Jj/W_j
/// (bounds.hpp): the prior's exact part plus ∂_j U_J(θ)·W_j/w_Jj, or with the control variate
/// ∂_j U_lik(θ*) + (∂_j U_J(θ) − ∂_j U_J(θ*))·W_j/w_Jj. Weighting by the data's size, rather than
/// drawing J uniformly, replaces N·max_i by Σ_i in the bound.
double ZigZagChain::estimate(std::size_t j) {
  const pdmp::PdmpConstants& c = sh_.c;
  const double prior = c.prior_grad(j, theta_.data()) + (cv_ ? c.grad_lik_map[j] : 0.0);
  if (c.pick[j].size() == 0) return prior;  // x_ij = 0 for every datum
  std::copy(theta_.begin(), theta_.end(), theta_pad_.get());
  const Index J = take_datum(j);
  const double coef = grads_.coefficient(J, theta_pad_.get());
  const double sign = sh_.data.value(J, j) > 0.0 ? 1.0 : -1.0;  // w_Jj > 0: x_Jj ≠ 0
  if (!cv_) return prior + coef * sign * c.pick[j].total();
  return prior + (coef - c.coef_map[J]) * sign * (c.pick[j].total() / c.norm[J]);
}

/// The earliest proposal among the coordinates: move there, thin it, flip on acceptance.
void ZigZagChain::step() {
  const auto j =
      static_cast<std::size_t>(std::min_element(next_.begin(), next_.end()) - next_.begin());
  const double now = out_.path().now();
  out_.advance(theta_.data(), v_.data(), std::min(next_[j] - now, out_.remaining()));
  if (out_.done()) {  // the path's end: the particle waits there for a next block, if any
    const double t = out_.path().now() - now;
    for (std::size_t k = 0; k < p_; ++k) theta_[k] += v_[k] * t;
    return;
  }
  for (std::size_t k = 0; k < p_; ++k) theta_[k] += v_[k] * (next_[j] - now);
  const double rate = std::max(0.0, v_[j] * estimate(j));
  const double bound = bound_[j].at(next_[j] - origin_[j]);
  if (rate > bound * (1.0 + kBoundRoundoff)) out_.violation();
  const bool accept = rng_.uniform() * bound < rate;
  out_.proposal(accept);
  if (accept) {
    v_[j] = -v_[j];
    out_.event(kPathFlip, static_cast<int>(j) + 1, theta_.data());
  }
  schedule(j);
}

}  // namespace flymc::detail
