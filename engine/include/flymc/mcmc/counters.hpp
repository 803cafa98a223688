#pragma once
/// @file counters.hpp
/// What a chain counts: likelihood queries, gradient evaluations, divergences, bound checks and
/// non-finite densities, and the optional phase timers of the profiling harness.
#include <cstdint>
#include <initializer_list>

#include "flymc/core/profile.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// Counters a chain accumulates.
struct Counters {
  std::uint64_t queries = 0;           ///< likelihood evaluations L_n
  std::uint64_t grad_evals = 0;        ///< gradient evaluations of the target
  std::uint64_t divergences = 0;       ///< HMC/NUTS trajectories stopped by a diverging energy
  std::uint64_t bound_violations = 0;  ///< log B_n > log L_n beyond rounding (BoundCheck): a bug
  std::uint64_t bound_clamps = 0;      ///< log B_n > log L_n within rounding, clamped (BoundCheck)
  std::uint64_t nonfinite = 0;         ///< proposals rejected because log density was not finite
  /// Slice-sampling updates that gave up without finding a point in the slice (the chain stayed
  /// where it was): a sign of a cached density that is not θ's, never expected.
  std::uint64_t slice_failures = 0;
  Profile* profile = nullptr;  ///< phase timers, only in the profiling harness
  /// Where a bound was found violated (ViolationSite::found() once bound_violations > 0 in a
  /// sampler that locates its violations; not kept in checkpoints).
  ViolationSite first_violation;

  /// Calls f on every count in a fixed order (what a checkpoint stores).
  template <class F>
  void for_each_count(F&& f) {
    for (std::uint64_t* v : {&queries, &grad_evals, &divergences, &bound_violations, &bound_clamps,
                             &nonfinite, &slice_failures})
      f(*v);
  }
  template <class F>
  void for_each_count(F&& f) const {
    for (const std::uint64_t* v : {&queries, &grad_evals, &divergences, &bound_violations,
                                   &bound_clamps, &nonfinite, &slice_failures})
      f(*v);
  }

  void add(const BoundCheck& b) noexcept {
    bound_violations += b.violations;
    bound_clamps += b.clamped;
    first_violation.merge(b.first);
  }
};

}  // namespace flymc
