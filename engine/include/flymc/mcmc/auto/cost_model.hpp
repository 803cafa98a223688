#pragma once
/// @file cost_model.hpp
/// `--algo auto`'s price list: what a run's counted work (iterations, likelihood queries,
/// gradient evaluations, set-up passes) costs in core-seconds on the machine the constants were
/// calibrated on (docs/math.md §3.3, "The cost model"). Auto ranks its candidates, sizes and stops
/// its pilots by these prices and never by a clock, so its choice, and hence the draws, depend on
/// the data, the options and the seed only: not on the machine's load nor on the thread count.
///
/// The prices are per sampler family (regular MCMC, FlyMC, scalable MH, the piecewise-
/// deterministic samplers), in nanoseconds:
///   query      a likelihood query of one row: per parameter, plus per row (a gathered row's
///              random access), plus per byte of the row when the features do not fit the cache
///              (kResidentBytes) and are streamed from memory;
///   gradient   per gradient evaluation of the target, per squared parameter (the metric's
///              product; FlyMC's collapsed bound);
///   iteration  per chain iteration: a constant, per squared parameter (a dense proposal;
///              SMH's quadratic term) and, for third-order SMH, per cubic tensor entry;
///   set-up     per row of a statistics pass: per parameter and per squared parameter (SMH's
///              Hessians, FlyMC's collapsed bound), or per cubic tensor entry (third-order SMH).
/// A model is only as good as its ranking: summary.json shows every prediction beside the
/// measured time (RunResult::work, predicted and measured seconds).
#include <cstddef>

#include "flymc/core/config.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

/// A run's counted work, summed over its chains.
struct Work {
  double iterations = 0.0;  ///< chain iterations, warm-up included
  double queries = 0.0;     ///< likelihood queries (rows evaluated)
  double grads = 0.0;       ///< gradient evaluations of the target

  Work& operator+=(const Work& o) noexcept {
    iterations += o.iterations;
    queries += o.queries;
    grads += o.grads;
    return *this;
  }
  /// This work times `f` (each count).
  Work scaled(double f) const noexcept { return {iterations * f, queries * f, grads * f}; }
};

/// The data as the cost model sees them.
struct CostShape {
  std::size_t n = 0;      ///< rows (all of them, on a sharded data set)
  std::size_t d = 0;      ///< feature columns
  std::size_t p = 0;      ///< parameters (K·D for softmax)
  std::size_t bytes = 8;  ///< bytes per stored feature value (4 with --storage f32)
};

/// The shape of `data` (all of its rows, on a sharded data set) for a run of `p` parameters.
CostShape cost_shape(const Dataset& data, std::size_t p);

/// Features of more bytes than this are priced as streamed from memory on every full pass.
inline constexpr double kResidentBytes = 32.0 * 1024 * 1024;

/// Core-seconds of `w` for a run of `cfg` (its algorithm, kernel, metric, SMH order) on `shape`.
double work_seconds(const RunConfig& cfg, const CostShape& shape, const Work& w);

/// Core-seconds of `passes` statistics passes over all the rows (the set-up's "statistics"
/// phase) for `cfg`'s sampler.
double statistics_seconds(const RunConfig& cfg, const CostShape& shape, double passes);

}  // namespace flymc
