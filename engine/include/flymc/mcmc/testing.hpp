#pragma once
/// @file testing.hpp
/// Seams for the engine's own tests, kept out of the production types (RunConfig,
/// CheckpointOptions, the bounds): a deterministic stop at a given iteration, with or without
/// saving (a clean stop, or a kill), and an invalid bound whose violations must be detected.
/// Production code calls flymc::run(), which is run_with_hooks() with no hooks.
#include <memory>

#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc::testing {

struct RunHooks {
  /// Every chain stops when it reaches this iteration (-1: never), as if CheckpointOptions::stop
  /// were raised there. Needs checkpointing (the stop is a checkpoint's business).
  long stop_at = -1;
  /// With stop_at: the chains save nothing when they stop, as if the process had been killed.
  bool stop_without_saving = false;
  /// Raises every log B_n by this much (> 0): an invalid bound, so that the detection and
  /// reporting of bound violations can be tested.
  double bound_excess = 0.0;
};

/// flymc::run() with test hooks, or with `part` flymc::run_part() (run_part.hpp).
/// @throw ConfigError for a negative or non-finite bound_excess.
RunResult run_with_hooks(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                         const SinkFactory& sinks, Progress* progress,
                         const CheckpointOptions* checkpoint, const RunHooks& hooks,
                         const RunPart* part = nullptr);

}  // namespace flymc::testing
