#pragma once
// Private: times a run's set-up phase by phase (RunResult::setup_phases) and names the phase
// under way for a progress display (Progress::setup_phase).
#include <atomic>
#include <utility>
#include <vector>

#include "flymc/core/clock.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc::detail {

class SetupClock {
 public:
  explicit SetupClock(Progress* progress) noexcept : progress_(progress) {}

  /// Starts phase `name` (a string that outlives the run, e.g. a literal).
  void begin(const char* name) {
    name_ = name;
    start_ = Clock::now();
    if (progress_ != nullptr) progress_->setup_phase.store(name, std::memory_order_relaxed);
  }
  /// Ends the phase begun last, which made `passes` passes over all the data rows (-1: not
  /// counted).
  void end(int passes = -1) {
    phases_.push_back({name_, seconds_between(start_, Clock::now()), passes});
  }
  /// The phases ended so far, in order.
  std::vector<SetupPhase> take() { return std::move(phases_); }

 private:
  std::vector<SetupPhase> phases_;
  Progress* progress_;
  const char* name_ = "";
  Clock::time_point start_ = Clock::now();
};

}  // namespace flymc::detail
