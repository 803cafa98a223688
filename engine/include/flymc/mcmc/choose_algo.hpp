#pragma once
/// @file choose_algo.hpp
/// `--algo auto`: FlyMC or regular MCMC, whichever is predicted to give more effective samples per
/// second on the user's data with the user's θ-kernel (docs/math.md §3.3).
///
/// Why pilots: FlyMC's mixing penalty (p(θ | z) is narrower than the posterior, and z moves
/// gradually) is not a function of the bright count alone: measured per gradient evaluation it
/// differs by an order of magnitude between data sets with similar bright counts. So both
/// algorithms run a short pilot and their min bulk ESS per second of sampling is compared:
/// FlyMC on all the data (its iterations are cheap by design), regular MCMC on a seeded random
/// subset of at most AutoOptions::regular_rows rows, its queries scaled by N / rows and priced
/// at the time a query takes on all N rows (a few timed iterations): a full-data gradient costs
/// time linear in N, while the dense-metric geometry, hence ESS per iteration, barely changes
/// with N.
#include <cstddef>
#include <memory>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

/// The pilots' lengths.
struct AutoOptions {
  long flymc_warmup = 1000, flymc_iters = 1000;  ///< RW-MH runs 10× more (cheap, slow-mixing)
  long regular_warmup = 300, regular_iters = 200;
  std::size_t regular_rows = 20000;  ///< regular MCMC's pilot runs on at most this many rows
  long timing_iters = 5;  ///< with fewer rows than N: MALA iterations on all N timing a query
  /// A pilot whose min bulk ESS is below this runs again with four times the sampling
  /// iterations: an ESS of one or two is noise, and a ratio of two such pilots is a ratio of
  /// their run times (a chain that makes one effective draw per thousands of iterations, as
  /// RW-MH on 51 correlated coefficients does, looks as good as any other).
  double min_pilot_ess = 10.0;
  /// ... as long as the next run is expected to end within this many seconds of the pilot's
  /// start (each run costs about four times the last).
  double max_pilot_seconds = 30.0;
};

/// What `--algo auto` decided and why.
struct AlgoChoice {
  Algo algo = Algo::flymc;              ///< the faster of the two, as predicted
  double flymc_ess_per_second = 0.0;    ///< FlyMC pilot's min bulk ESS / sampling second
  double regular_ess_per_second = 0.0;  ///< regular pilot's, scaled to all N rows
  double predicted_speedup = 0.0;       ///< flymc_ess_per_second / regular_ess_per_second
  std::size_t regular_pilot_rows = 0;   ///< rows the regular pilot ran on
  double flymc_pilot_ess = 0.0;         ///< FlyMC pilot's min bulk ESS (its last run)
  double regular_pilot_ess = 0.0;       ///< regular pilot's
  long flymc_pilot_iters = 0;           ///< sampling iterations of each pilot's last run
  long regular_pilot_iters = 0;
  double pilot_seconds = 0.0;  ///< wall time of both pilots (set-up included)
  /// A pilot stopped at max_pilot_seconds below min_pilot_ess: the prediction is rough.
  bool pilots_short = false;
};

/// Runs the two pilots of `cfg` (its model, kernel, metric, chains and threads; cfg.algo is
/// ignored) and picks. The pilots use random streams of their own, so a run with the chosen
/// algorithm and cfg.seed draws exactly what `--algo <chosen>` would. Metric::fly, which only
/// FlyMC has, becomes Metric::dense for the regular pilot.
/// @throw ConfigError, DataError as run() does.
AlgoChoice choose_algo(const RunConfig& cfg, const std::shared_ptr<const Dataset>& data,
                       const AutoOptions& opt = {});

/// The rows `rows` of `data` (a copy).
std::shared_ptr<const Dataset> subset_rows(const Dataset& data, const std::vector<Index>& rows);

}  // namespace flymc
