#pragma once
/// @file clock.hpp
/// The one clock the engine times itself with: monotonic (steady_clock), in seconds.
#include <chrono>

namespace flymc {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point a, Clock::time_point b) noexcept {
  return std::chrono::duration<double>(b - a).count();
}

/// Seconds since a starting point.
class Stopwatch {
 public:
  Stopwatch() noexcept : t0_(Clock::now()) {}
  double seconds() const noexcept { return seconds_between(t0_, Clock::now()); }
  Clock::time_point start() const noexcept { return t0_; }

 private:
  Clock::time_point t0_;
};

}  // namespace flymc
