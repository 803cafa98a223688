#pragma once
// Private: one chain of the bouncy particle sampler family on a single-index model
// (docs/math.md §7.1–7.3): BPS with the full gradient and lipSBPS with weighted batch gradients,
// both exact by thinning with the affine bounds of bounds.hpp; SBPS and pSBPS, approximate, with
// the adaptive regression band of band.hpp. The particle moves along θ + w·s; w = a∘v with a unit
// v and the diagonal preconditioner a (all ones except for pSBPS).
#include <atomic>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/mcmc/minibatch/barker.hpp"
#include "flymc/mcmc/pdmp/band.hpp"
#include "flymc/mcmc/pdmp/event_time.hpp"
#include "pdmp_chain.hpp"

namespace flymc::detail {

class BouncyChain {
 public:
  BouncyChain(const PdmpShared& sh, int chain_id, DrawSink* sink);
  // Members refer to each other (the gradients count into the output's counters): built in
  // place, never copied or moved.
  BouncyChain(const BouncyChain&) = delete;
  BouncyChain& operator=(const BouncyChain&) = delete;
  ChainResult run(ChainGauge* gauge);
  /// Runs on to iteration `end` (warm-up included); the first call starts the chain. A block's
  /// end drops the pending proposal (a fresh one is drawn where the particle stands, as after a
  /// refreshment), which leaves the process exact (run_blocks.hpp).
  void advance(long end, ChainGauge* gauge);
  long position() const noexcept { return out_.position(); }
  const Counters& counts() const noexcept { return out_.counts(); }
  bool stopped() const noexcept { return false; }  // (no checkpoints: nothing asks it to stop)
  void halt() noexcept {}
  const std::vector<double>& draws() const noexcept { return out_.draws(); }
  ChainResult finish();

 private:
  bool begun_ = false;
  void step_thinned();
  void step_band();
  double band_proposal(double e);  // SBPS: the next proposal time from the band, or +inf
  void move(double tau);
  void refresh();
  void observe();
  void draw_weighted_batch();
  void project();
  void bounce();
  void adapt_preconditioner();
  void set_velocity();    // w = a∘v
  void add_prior_grad();  // g_ += Qθ
  pdmp::AffineBound lipschitz_bound() const noexcept;

  const PdmpShared& sh_;
  const std::size_t p_, n_, batch_;
  const bool full_, band_, precondition_;
  const bool dense_;  // a dense prior precision Q (preconditioned coordinates)
  Rng rng_;
  std::vector<double> theta_, v_, w_, a_, g_, h_, sq_, coef_, proj_;
  // Dense Q: Qθ is carried along the path (Qθ += τ·Qw per move) and recomputed, with Qw, when
  // the velocity changes, so that a proposal costs O(D) besides its batch instead of two
  // D × D products.
  std::vector<double> qu_, qw_;
  double w_norm_ = 0.0, wqw_ = 0.0;
  std::vector<std::uint64_t> words_;  // lipSBPS: the batch's random words
  std::vector<Index> picked_;         // lipSBPS: the batch, drawn with replacement by ‖x_i‖
  PdmpOutput out_;
  DatumGradients grads_;
  BatchDrawer drawer_;
  AlignedBuffer theta_pad_, w_pad_, grad_pad_;
  const Index* batch_idx_ = nullptr;
  double lik_bound_ = 0.0;     // lipSBPS: Λ = Σ_i ‖x_i‖ (BPS bounds by the curvature instead)
  double next_refresh_ = 0.0;  // absolute path time
  double gw_ = 0.0, var_ = 0.0;  // SBPS: the last observation G = w·ĝ and its variance
  double since_bounce_ = 0.0;    // SBPS: the band's time origin is the last bounce
  bool sq_started_ = false;      // pSBPS: the running mean of ĝ∘ĝ has its first term
  bool fresh_ = false;           // g_ is the gradient at theta_ (the particle has not moved)
  pdmp::RegressionBand bandfit_;
  pdmp::PiecewiseLinearRate rate_;
};

}  // namespace flymc::detail
