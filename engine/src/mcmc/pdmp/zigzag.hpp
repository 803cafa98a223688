#pragma once
// Private: one chain of the Zig-Zag process on a single-index model (docs/math.md §7.2): every
// coordinate j moves at velocity v_j = ±1 and flips at the events of its own Poisson process of
// rate [v_j ∂_j U]_+. Each coordinate's events are proposed from its affine bound (bounds.hpp)
// and thinned with an unbiased one-datum estimate of ∂_j U: plain subsampling (zigzag-ss) or a
// control variate at θ_MAP (zigzag-cv). Both are exact (Bierkens, Fearnhead & Roberts 2019).
#include <atomic>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/mcmc/pdmp/event_time.hpp"
#include "pdmp_chain.hpp"

namespace flymc::detail {

class ZigZagChain {
 public:
  ZigZagChain(const PdmpShared& sh, int chain_id, DrawSink* sink);
  // Members refer to each other (the gradients count into the output's counters): built in
  // place, never copied or moved.
  ZigZagChain(const ZigZagChain&) = delete;
  ZigZagChain& operator=(const ZigZagChain&) = delete;
  ChainResult run(ChainGauge* gauge);
  /// Runs on to iteration `end` (warm-up included); the first call starts the chain. The
  /// proposals' times are absolute and their bounds hold along the whole ray, so a run in blocks
  /// makes the path of one run of the same length (run_blocks.hpp).
  void advance(long end, ChainGauge* gauge);
  long position() const noexcept { return out_.position(); }
  const Counters& counts() const noexcept { return out_.counts(); }
  bool stopped() const noexcept { return false; }  // (no checkpoints: nothing asks it to stop)
  void halt() noexcept {}
  const std::vector<double>& draws() const noexcept { return out_.draws(); }
  ChainResult finish();

 private:
  bool begun_ = false;
  void step();
  void schedule(std::size_t j);  // coordinate j's next proposal from its bound at the present
  void fill_ahead();
  Index take_datum(std::size_t j);  // the datum of coordinate j's present proposal
  double estimate(std::size_t j);

  const PdmpShared& sh_;
  const std::size_t p_;
  const bool cv_;
  Rng rng_;
  std::vector<double> theta_, v_;
  std::vector<double> next_;    // per coordinate: absolute time of its next proposal
  std::vector<double> origin_;  // per coordinate: when its bound was made
  std::vector<pdmp::AffineBound> bound_;
  // Per coordinate j, a ring of kAhead slots at [j·kAhead, (j+1)·kAhead): the data of its next
  // proposals and the random words of the data after them; slot_[j] is the next one to use.
  std::vector<std::uint64_t> word_;
  std::vector<Index> datum_;
  std::vector<std::size_t> slot_;
  PdmpOutput out_;
  DatumGradients grads_;
  AlignedBuffer theta_pad_;
};

}  // namespace flymc::detail
