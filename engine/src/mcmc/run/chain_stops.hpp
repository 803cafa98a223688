#pragma once
// Private: when a checkpointable chain saves its state and when it stops, for every such chain
// (FlyMC's and regular MCMC's Chain, scalable MH's SmhChain): the checkpoint schedule, stop
// requests (the fault hook's iteration, or a signal; on a shard polled collectively), and the
// iteration last saved, so that a stop saves once.
#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "flymc/core/row_link.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc::detail {

class ChainStops {
 public:
  /// `ck` null: checkpointing off (then no stop is ever requested); `link` the other processes
  /// of a sharded data set (null otherwise).
  ChainStops(const CheckpointOptions* ck, const FaultInjection& faults, RowLink* link) noexcept
      : ck_(ck), faults_(faults), link_(link) {}

  bool on() const noexcept { return ck_ != nullptr; }
  const CheckpointOptions& options() const noexcept { return *ck_; }

  /// The session's first iteration is `pos`; `resumed`: its state was saved there.
  void start(long pos, bool resumed) noexcept {
    const long every = ck_ != nullptr ? ck_->every : 0;
    next_save_ = every > 0 ? (pos / every + 1) * every : std::numeric_limits<long>::max();
    saved_at_ = resumed ? pos : -1;
  }

  /// A stop asked for at the top of iteration `it`: the fault hook's iteration, or a signal. On a
  /// shard every process must stop at the same iteration (the chain's steps are collective), so
  /// the signal is polled every kStopPoll iterations with one all-gather.
  bool stop_requested(long it) {
    if (ck_ == nullptr) return false;
    if (it == faults_.stop_at) return true;
    const bool mine = ck_->stop != nullptr && ck_->stop->load(std::memory_order_relaxed);
    if (link_ == nullptr) return mine;
    if (it % kStopPoll != 0) return false;
    const std::vector<double> all = link_->all_gather({mine ? 1.0 : 0.0});
    return std::any_of(all.begin(), all.end(), [](double v) { return v != 0.0; });
  }

  /// At the top of iteration `it`: saves through save(it) when due, and handles a stop request
  /// (saving there unless just saved, or unless a kill is simulated). True: the chain stops.
  template <class Save>
  bool checkpoint_or_stop(long it, Save&& save) {
    if (it == next_save_) {
      save(it);
      saved_at_ = it;
      next_save_ += ck_->every;
    }
    if (!stop_requested(it)) return false;
    halt(it, save);
    return true;
  }

  /// The chain stops at `it` as a stop request would stop it.
  template <class Save>
  void halt(long it, Save&& save) {
    if (ck_ != nullptr && !faults_.stop_without_saving && saved_at_ != it) save(it);
  }

  static constexpr long kStopPoll = 256;

 private:
  const CheckpointOptions* ck_;
  const FaultInjection& faults_;
  RowLink* link_;
  long next_save_ = std::numeric_limits<long>::max(), saved_at_ = -1;
};

}  // namespace flymc::detail
