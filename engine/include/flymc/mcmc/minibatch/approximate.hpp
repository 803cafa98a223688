#pragma once
/// @file approximate.hpp
/// The approximate subsampling samplers (docs/math.md §5 and §6): minibatch Metropolis–Hastings
/// with the Barker test (Seita, Pan, Chen & Canny 2017) and stochastic gradient Langevin dynamics
/// (Welling & Teh 2011). Their draws do not target the posterior exactly; every output says so
/// (`exact` in the draw files' comments and in summary.json). They run several chains at once as
/// run() does, one random stream per (seed, chain id) and no reduction across threads, so the
/// draws do not depend on the thread count, and write the same draw files through DrawSink with
/// the columns of columns.hpp (approx_draw_columns).
#include <memory>

#include "flymc/mcmc/sampler.hpp"

namespace flymc {

/// Runs cfg (cfg.algo minibatch_mh or sgld; logistic regression). Called by run().
/// @throw ConfigError for checkpointing (not available for these samplers yet) or a model other
/// than logistic regression; DataError for data the model cannot take.
RunResult run_approximate(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                          const SinkFactory& sinks, Progress* progress,
                          const CheckpointOptions* checkpoint, const Precomputed& pre = {});

}  // namespace flymc
