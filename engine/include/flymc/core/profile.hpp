#pragma once
/// @file profile.hpp
/// Optional in-process phase timers for the profiling harness (tools/flymc-profile). When no
/// Profile is attached (the default) a PhaseTimer is one predictable branch, nothing else.
///
/// Thread safety: one Profile per chain.
#include <array>
#include <chrono>
#include <cstdint>

namespace flymc {

enum class Phase : int { proposal, prior_bound, likelihood, accept, z_update, output, count };

inline const char* phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::proposal:
      return "theta proposal (RNG)";
    case Phase::prior_bound:
      return "prior + collapsed bound";
    case Phase::likelihood:
      return "bright / data likelihood";
    case Phase::accept:
      return "MH accept";
    case Phase::z_update:
      return "z-update";
    case Phase::output:
      return "output";
    default:
      return "?";
  }
}

struct Profile {
  static constexpr int kPhases = static_cast<int>(Phase::count);
  std::array<double, kPhases> seconds{};
  std::array<std::uint64_t, kPhases> calls{};
  void add(const Profile& o) noexcept {
    for (int i = 0; i < kPhases; ++i) seconds[i] += o.seconds[i], calls[i] += o.calls[i];
  }
};

/// Adds the lifetime of the object to phase `ph` of `p` (if `p` is not null).
class PhaseTimer {
 public:
  PhaseTimer(Profile* p, Phase ph) noexcept : p_(p), ph_(static_cast<int>(ph)) {
    if (p_) t0_ = std::chrono::steady_clock::now();
  }
  ~PhaseTimer() {
    if (p_) {
      p_->seconds[ph_] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      ++p_->calls[ph_];
    }
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  Profile* p_;
  int ph_;
  std::chrono::steady_clock::time_point t0_{};
};

}  // namespace flymc
