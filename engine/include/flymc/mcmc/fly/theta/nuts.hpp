#pragma once
/// @file nuts.hpp
/// The No-U-Turn sampler (Hoffman & Gelman, "The No-U-Turn Sampler: Adaptively Setting Path
/// Lengths in Hamiltonian Monte Carlo", JMLR 15, 2014) in the multinomial form Stan runs, as
/// described by Betancourt ("A Conceptual Introduction to Hamiltonian Monte Carlo",
/// arXiv:1701.02434, 2017, appendix A): momentum p ~ N(0, M), H = −log π(θ) + ½pᵀM⁻¹p; the
/// trajectory doubles in a random direction until the generalized no-U-turn criterion fails, a
/// subtree diverges or the tree reaches max_treedepth doublings; the point is drawn from the
/// trajectory in proportion to the weights exp(−H) within each new subtree, and with a bias towards
/// the new subtree when it is merged into the trajectory (docs/math.md §3.1).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "flymc/core/profile.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"

namespace flymc {

class NutsKernel {
 public:
  NutsKernel(std::size_t p, int max_depth)
      : max_depth_(max_depth),
        fwd_(p),
        bck_(p),
        draw_(p),
        top_(p),
        levels_(static_cast<std::size_t>(std::max(max_depth, 1)), Level(p)),
        rho_(p),
        near_p_(p),
        near_sharp_(p),
        noise_(p) {}

  /// One NUTS transition from `s`. accept_stat is Stan's: the mean over every leapfrog step of
  /// the trajectory (the rejected last subtree included) of min(1, exp(H0 − H)).
  template <class Target>
  StepInfo step(Rng& rng, ThetaState& s, Target& target, Counters& c, const KernelTuning& k) {
    Trajectory tr{&k.metric, &rng, &c, k.eps, start(rng, s, k.metric, c), 0, 0.0, false};
    double log_w = 0.0;  // log Σ exp(H0 − H) over the trajectory: the start point alone
    bool moved = false;
    int depth = 0;
    while (depth < max_depth_) {
      // Stan's coin: forward when u > ½. The new subtree grows from the tree's end `e`; `near_*`
      // keep that end's momenta for the criterion across the two trees.
      const bool forward = rng.uniform() > 0.5;
      Edge& e = forward ? fwd_ : bck_;
      const Edge& far = forward ? bck_ : fwd_;
      near_p_ = e.p;
      near_sharp_ = e.sharp;
      tr.eps = forward ? k.eps : -k.eps;
      if (!build(target, tr, e, depth, top_)) break;  // diverged or turned within: not used
      ++depth;
      // Biased progressive sampling (Betancourt 2017, appendix A): the new subtree's draw
      // replaces the trajectory's with probability min(1, w_new/w_old), not the uniform
      // w_new/(w_old + w_new). It favours the points far from the start (longer moves) and still
      // leaves the distribution ∝ exp(−H) over the trajectory's points invariant.
      if (top_.log_w > log_w || rng.uniform() < std::exp(top_.log_w - log_w)) {
        draw_.assign(top_.draw);
        moved = true;
      }
      log_w = log_sum_exp(log_w, top_.log_w);
      // The generalized criterion over the merged trajectory and, as Stan checks, across the
      // junction: the old tree plus the new one's first point, the new tree plus the old one's
      // last point (these catch U-turns that the two trees' ends alone miss).
      const bool go = continues(far.sharp, e.sharp, rho_, top_.rho) &&
                      continues(far.sharp, top_.sharp_beg, rho_, top_.p_beg) &&
                      continues(near_sharp_, e.sharp, top_.rho, near_p_);
      for (std::size_t j = 0; j < rho_.size(); ++j) rho_[j] += top_.rho[j];
      if (!go) break;
    }
    if (tr.divergent) ++c.divergences;
    adopt(target, s, moved, c);
    StepInfo info;
    info.accept_stat = info.adapt_stat = tr.sum_accept / static_cast<double>(tr.n_leapfrog);
    info.treedepth = depth;
    info.n_leapfrog = tr.n_leapfrog;
    info.divergent = tr.divergent;
    info.energy = moved ? draw_.h : tr.h0;
    return info;
  }

 private:
  /// Stan's max_deltaH: a leapfrog step whose H exceeds the initial energy by more than this
  /// is divergent.
  static constexpr double kMaxEnergyError = 1000.0;

  /// A trajectory's end: position, momentum, p♯ = M⁻¹p, ∇ log π and log π.
  struct Edge {
    explicit Edge(std::size_t dim) : q(dim), p(dim), sharp(dim), g(dim) {}
    std::vector<double> q, p, sharp, g;
    double lp = 0.0;
  };
  /// A point drawn from a (sub)tree: position, ∇ log π, log π and H.
  struct Draw {
    explicit Draw(std::size_t dim) : q(dim), g(dim) {}
    void assign(const Draw& o) {
      std::copy(o.q.begin(), o.q.end(), q.begin());
      std::copy(o.g.begin(), o.g.end(), g.begin());
      lp = o.lp;
      h = o.h;
    }
    std::vector<double> q, g;
    double lp = 0.0, h = 0.0;
  };
  /// What building a subtree yields besides its far end (the edge it integrated in place): ρ, the
  /// sum of its momenta; the momentum and p♯ at its first point; its draw; log Σ exp(H0 − H).
  struct Subtree {
    explicit Subtree(std::size_t dim) : rho(dim), p_beg(dim), sharp_beg(dim), draw(dim) {}
    std::vector<double> rho, p_beg, sharp_beg;
    Draw draw;
    double log_w = 0.0;
  };
  /// The scratch of build() at one depth: the momenta where its first half ends, and its second
  /// half. One per depth suffices: build(d) only calls build(d − 1).
  struct Level {
    explicit Level(std::size_t dim) : p_mid(dim), sharp_mid(dim), second(dim) {}
    std::vector<double> p_mid, sharp_mid;
    Subtree second;
  };
  /// One transition's context, and what it sums over every leapfrog step of the trajectory.
  struct Trajectory {
    const InverseMetric* metric;
    Rng* rng;
    Counters* c;
    double eps;  ///< signed: negative when integrating backwards in time
    double h0;   ///< H at the start
    int n_leapfrog;
    double sum_accept;  ///< Σ min(1, exp(H0 − H))
    bool divergent;
  };

  /// Draws p ~ N(0, M) and makes (θ, p) both ends, the draw and ρ of a one-point trajectory.
  /// Returns H0.
  double start(Rng& rng, const ThetaState& s, const InverseMetric& metric, Counters& c) {
    const std::size_t p = rho_.size();
    {
      PhaseTimer t(c.profile, Phase::proposal);
      for (std::size_t j = 0; j < p; ++j) noise_[j] = rng.normal();
      metric.momentum(noise_.data(), fwd_.p.data());
    }
    std::copy(s.theta.begin(), s.theta.end(), fwd_.q.begin());
    std::copy(s.grad.begin(), s.grad.end(), fwd_.g.begin());
    fwd_.lp = s.logp;
    metric.mul_inv(fwd_.p.data(), fwd_.sharp.data());
    bck_ = fwd_;
    rho_ = fwd_.p;
    return -s.logp + 0.5 * dot(fwd_.p.data(), fwd_.sharp.data(), p);
  }

  /// Builds a subtree of 2^depth leapfrog steps from `e` (moved along), into `out`. Returns false
  /// when the subtree is unusable: a step diverged, or a U-turn lies within it.
  template <class Target>
  bool build(Target& target, Trajectory& tr, Edge& e, int depth, Subtree& out) {
    if (depth == 0) return leaf(target, tr, e, out);
    if (!build(target, tr, e, depth - 1, out)) return false;
    Level& l = levels_[static_cast<std::size_t>(depth)];
    l.p_mid = e.p;
    l.sharp_mid = e.sharp;
    Subtree& second = l.second;
    if (!build(target, tr, e, depth - 1, second)) return false;
    // Within a subtree the draw is multinomial, uniform in the weights (Betancourt 2017,
    // appendix A): the second half's draw with probability w2/(w1 + w2).
    const double log_w = log_sum_exp(out.log_w, second.log_w);
    if (tr.rng->uniform() < std::exp(second.log_w - log_w)) out.draw.assign(second.draw);
    out.log_w = log_w;
    // The criterion over the whole subtree and across its halves (see step()).
    const bool go = continues(out.sharp_beg, e.sharp, out.rho, second.rho) &&
                    continues(out.sharp_beg, second.sharp_beg, out.rho, second.p_beg) &&
                    continues(l.sharp_mid, e.sharp, second.rho, l.p_mid);
    for (std::size_t j = 0; j < out.rho.size(); ++j) out.rho[j] += second.rho[j];
    return go;
  }

  /// One leapfrog step of tr.eps from `e`, in place: a subtree of one point.
  template <class Target>
  bool leaf(Target& target, Trajectory& tr, Edge& e, Subtree& out) {
    const std::size_t p = e.q.size();
    const double half = 0.5 * tr.eps;
    for (std::size_t j = 0; j < p; ++j) e.p[j] += half * e.g[j];
    tr.metric->mul_inv(e.p.data(), e.sharp.data());
    for (std::size_t j = 0; j < p; ++j) e.q[j] += tr.eps * e.sharp[j];
    e.lp = target.eval_grad(e.q.data(), e.g.data(), *tr.c);
    for (std::size_t j = 0; j < p; ++j) e.p[j] += half * e.g[j];
    tr.metric->mul_inv(e.p.data(), e.sharp.data());
    ++tr.n_leapfrog;
    double h = -e.lp + 0.5 * dot(e.p.data(), e.sharp.data(), p);
    // NaN or +inf log π, or a gradient that is not finite (NaN H), is a failure and counted;
    // −inf is a zero density. Either way H = +inf: zero weight, and divergent.
    if (theta::failed(e.lp) || std::isnan(h)) {
      ++tr.c->nonfinite;
      h = std::numeric_limits<double>::infinity();
    }
    out.log_w = tr.h0 - h;
    tr.sum_accept += out.log_w > 0.0 ? 1.0 : std::exp(out.log_w);
    if (h - tr.h0 > kMaxEnergyError) {
      tr.divergent = true;
      return false;
    }
    std::copy(e.q.begin(), e.q.end(), out.draw.q.begin());
    std::copy(e.g.begin(), e.g.end(), out.draw.g.begin());
    out.draw.lp = e.lp;
    out.draw.h = h;
    out.rho = e.p;
    out.p_beg = e.p;
    out.sharp_beg = e.sharp;
    return true;
  }

  /// Makes the draw the chain's state. The target contract: accept() adopts the most recent
  /// evaluation. FlyMC's target keeps the per-bright log L̃ of that evaluation pending, and after
  /// a trajectory it is the last leapfrog step's, in general not the draw's. So the draw is
  /// evaluated once more right before accept(): the same function of the same θ and bright set,
  /// hence bit for bit the lp and gradient the trajectory had, now in the target's cache. A
  /// draw at the starting point needs nothing: the cache already holds θ's values, and accept()
  /// would adopt the last step's. A target whose accept() keeps no state (FullTarget) takes
  /// the draw's stored values without the extra evaluation.
  template <class Target>
  void adopt(Target& target, ThetaState& s, bool moved, Counters& c) {
    if (!moved) return;
    std::copy(draw_.q.begin(), draw_.q.end(), s.theta.begin());
    if constexpr (StatelessAccept<Target>) {
      std::copy(draw_.g.begin(), draw_.g.end(), s.grad.begin());
      s.logp = draw_.lp;
    } else {
      s.logp = target.eval_grad(s.theta.data(), s.grad.data(), c);
      PhaseTimer t(c.profile, Phase::accept);
      target.accept();
    }
  }

  /// The generalized no-U-turn criterion (Betancourt 2017) for a trajectory whose momenta sum to
  /// ρ = rho + extra and whose ends have sharp momenta a and b: the trajectory may go on while
  /// a·ρ > 0 and b·ρ > 0. (Hoffman & Gelman's original criterion puts the difference of the end
  /// positions in place of ρ and the momenta in place of p♯.)
  static bool continues(const std::vector<double>& a, const std::vector<double>& b,
                        const std::vector<double>& rho, const std::vector<double>& extra) {
    double da = 0.0, db = 0.0;
    for (std::size_t j = 0; j < rho.size(); ++j) {
      const double r = rho[j] + extra[j];
      da += a[j] * r;
      db += b[j] * r;
    }
    return da > 0.0 && db > 0.0;
  }
  static double dot(const double* a, const double* b, std::size_t p) noexcept {
    double s = 0.0;
    for (std::size_t j = 0; j < p; ++j) s += a[j] * b[j];
    return s;
  }
  static double log_sum_exp(double a, double b) noexcept {
    const double m = std::max(a, b);
    if (m == -std::numeric_limits<double>::infinity()) return m;
    return m + std::log1p(std::exp(-std::fabs(a - b)));
  }

  int max_depth_;
  Edge fwd_, bck_;              // the trajectory's forward and backward ends
  Draw draw_;                   // the trajectory's draw
  Subtree top_;                 // the subtree being added to the trajectory
  std::vector<Level> levels_;   // build()'s scratch per depth (index 0 unused)
  std::vector<double> rho_;     // the sum of the trajectory's momenta
  std::vector<double> near_p_;  // momentum and p♯ at the end the new subtree grows from
  std::vector<double> near_sharp_;
  std::vector<double> noise_;  // the momentum's standard normal draw
};

}  // namespace flymc
