#pragma once
// Private: FlyMC's and regular MCMC's runner of one model, a template over it (FireflyModel),
// instantiated once per model in sampler_<model>.cpp so that the models compile in parallel. The
// run skeleton (run_skeleton.hpp) loads, starts and summarizes it; its own are the statistics
// (flymc/mcmc/setup.hpp) and the chains (chain.hpp), run concurrently on a oneTBB arena.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../run/run_blocks.hpp"
#include "../run/run_chains.hpp"
#include "../run/run_skeleton.hpp"
#include "../run/run_start.hpp"
#include "chain.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/setup.hpp"

namespace flymc::detail {

/// The chains of `block`, each a Chain<M, kFly, ZUp> with its z-updater from `make_z()`.
template <bool kFly, class ZUp, class M, class MakeZ>
BlockOutcome run_chain_blocks(const Shared<M>& sh, ChainBlock block, ChainSessions& cs,
                              Progress* progress, std::vector<ChainResult>& results,
                              const BlockSync& sync, MakeZ&& make_z) {
  using C = Chain<M, kFly, ZUp>;
  std::vector<std::optional<ZUp>> zs(static_cast<std::size_t>(block.count));
  auto make = [&](int i) {
    const auto ci = static_cast<std::size_t>(i);
    if constexpr (kFly) zs[ci].emplace(make_z());
    return std::make_unique<C>(sh, block.first + i, kFly ? &*zs[ci] : nullptr, cs.sinks[ci].get(),
                               cs.sessions[ci]);
  };
  auto finish = [&](int i, C& c) {
    ChainResult r = c.finish();
    cs.sinks[static_cast<std::size_t>(i)].reset();  // closes the file in the chain's own task
    return r;
  };
  // On a sharded data set every process runs every chain, one after another in chain order
  // (their z-updates are collective).
  const bool in_turn = shard_link(sh.model.data()) != nullptr;
  return run_blocks<C>(sh.cfg, cost_shape(sh.model.data(), sh.model.dim()), block.count,
                       block.first, in_turn, progress, make, finish, results, sync);
}

/// Runs the chains of `block` to the run's end (a fixed length, or an ESS target); a chain's
/// exception is rethrown after all chains ended. results[i] is chain block.first + i.
template <class M>
BlockOutcome run_chains(const Shared<M>& sh, const RunSetup<M>& setup, ChainBlock block,
                        ChainSessions& cs, Progress* progress, std::vector<ChainResult>& results,
                        const BlockSync& sync) {
  const RunConfig& cfg = sh.cfg;
  if (cfg.algo == Algo::full)
    return run_chain_blocks<false, ImplicitZUpdater>(sh, block, cs, progress, results, sync,
                                                     [] { return ImplicitZUpdater(0.0); });
  if (cfg.z == ZUpdate::implicit)
    return run_chain_blocks<true, ImplicitZUpdater>(sh, block, cs, progress, results, sync, [&] {
      return setup.rates ? ImplicitZUpdater(*setup.rates)
                         : ImplicitZUpdater(setup.q_dark_to_bright);
    });
  return run_chain_blocks<true, ExplicitZUpdater>(sh, block, cs, progress, results, sync, [&] {
    return ExplicitZUpdater(cfg.resample_fraction);
  });
}

/// FlyMC's or regular MCMC's run of model M through the run skeleton (run_skeleton.hpp): all of
/// its chains, or in a part (run_part.hpp) its block. Its statistics are the bound's sufficient
/// statistics and the z-updates' rates (setup.hpp).
template <FireflyModel M>
RunResult run_model(const RunRequest& r) {
  ModelRun<M> run(r);
  const M& model = run.model();
  RunResult& out = run.result();
  std::optional<RunSetup<M>> setup_opt;
  run.set_up([&] {
    setup_opt.emplace(prepare_run(model, r.cfg, out.map, r.faults.bound_excess));
    return setup_opt->passes;
  });
  const RunSetup<M>& setup = *setup_opt;
  out.bound_slack = setup.bound_slack;
  out.q_dark_to_bright = setup.q_dark_to_bright;

  run.begin_chains();
  const InverseMetric metric = chain_metric(model, r.cfg, out.map, setup);
  const Shared<M> sh{r.cfg,
                     model,
                     setup.bound ? &*setup.bound : nullptr,
                     out.map,
                     metric,
                     initial_step_size(r.cfg, out.map, out.dim),
                     draw_columns(r.cfg.kernel, out.names),
                     r.faults};
  run.open_sessions(sh.columns, model.layout().k);
  return run.finish([&](ChainBlock block, ChainSessions& cs) {
    return run_chains(sh, setup, block, cs, r.progress, out.chains, block_sync(r.part, run.link()));
  });
}

}  // namespace flymc::detail
