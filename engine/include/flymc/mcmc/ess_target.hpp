#pragma once
/// @file ess_target.hpp
/// Runs sized in effective draws (RunConfig::ess): the chains run in blocks, and at each block's
/// end the draws kept so far decide whether to stop (every parameter's bulk and tail ESS at least
/// the target and R̂ at most RunConfig::max_rhat) and, if not, where the next block ends. Both
/// decisions depend on the draws alone, never on a clock, so a seed gives the same draws at any
/// thread or process count; a resumed run replays them on the draws it reads back (docs/math.md
/// §3.4).
#include <cstddef>
#include <vector>

#include "flymc/core/config.hpp"

namespace flymc {

/// The largest R̂ a run to an ESS target accepts by default (RunConfig::max_rhat; Vehtari et
/// al. 2021's threshold).
inline constexpr double kTargetRhat = 1.01;

/// What the draws kept so far say at a block's end.
struct TargetStatus {
  long sampling_iters = 0;  ///< sampling iterations per chain so far
  double min_ess_bulk = 0.0, min_ess_tail = 0.0;
  double max_rhat = 0.0;  ///< NaN when too few draws to tell
  bool reached = false;   ///< every parameter meets the target (and R̂ ≤ cfg.max_rhat)
};

/// The kept draws of `sampling_iters` sampling iterations per chain (the first ⌈iters/thin⌉ rows
/// of each chain's draws: row-major, `dim` values a row, at least that many rows) against
/// `target` (cfg.ess).
TargetStatus target_status(const std::vector<const std::vector<double>*>& draws, std::size_t dim,
                           const RunConfig& cfg, long sampling_iters);

/// The first block's end, in sampling iterations per chain: enough for the target if every draw
/// were independent, at least kMinBlock, at most kMaxFirstBlock and cfg.iters.
long first_block_end(const RunConfig& cfg);

/// The next block's end after `s`: the iterations at which ESS growing in proportion to the
/// iterations would pass the target with a 10% margin, at least a tenth more than now (so few
/// checks are made) and at most twice as many (a rough estimate cannot overshoot far); at most
/// cfg.iters.
long next_block_end(const RunConfig& cfg, const TargetStatus& s);

/// The fewest sampling iterations of a block, and the most of the first (a huge target is then
/// approached by doublings that each weigh what the draws say).
inline constexpr long kMinBlock = 100;
inline constexpr long kMaxFirstBlock = 1000;

}  // namespace flymc
