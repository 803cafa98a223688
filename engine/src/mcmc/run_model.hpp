#pragma once
// Private: the runner of one model, a template over it (FireflyModel), instantiated once per model
// in sampler_<model>.cpp so that the models compile in parallel. It checks the data, agrees on the
// start and any checkpoint to resume (run_start.hpp), sets the run up (flymc/mcmc/setup.hpp), runs
// the chains concurrently on a oneTBB arena (chain.hpp) and apportions the wall time.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chain.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/setup.hpp"
#include "run_blocks.hpp"
#include "run_chains.hpp"
#include "run_start.hpp"
#include "setup_clock.hpp"

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
  return run_blocks<C>(sh.cfg, sh.model.dim(), block.count, block.first, in_turn, progress, make,
                       finish, results, sync);
}

/// Runs the chains of `block` to the run's end (a fixed length, or an ESS target); a chain's
/// exception is rethrown after all chains ended. results[i] is chain block.first + i.
template <class M>
BlockOutcome run_chains(const Shared<M>& sh, const RunSetup<M>& setup, ChainBlock block,
                        ChainSessions& cs, Progress* progress, std::vector<ChainResult>& results,
                        const BlockSync& sync) {
  const RunConfig& cfg = sh.cfg;
  if (progress) progress->chains_started.store(true);
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

/// Runs the chains of `cfg` on model M: all of them, or in a part (run_part.hpp) its block.
template <FireflyModel M>
RunResult run_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                    const SinkFactory& sinks, Progress* progress,
                    const CheckpointOptions* checkpoint, const FaultInjection& faults,
                    const RunPart* part, const Precomputed& pre) {
  const PartSync sync(part);
  RowLink* const link = shard_link(*data);  // FlyMC on a sharded data set (docs/mpi.md)
  const bool leader = link == nullptr || link->part() == 0;
  const Stopwatch setup_clock;
  RunResult out;
  SetupClock phases(progress);
  const CheckpointOptions* ck = nullptr;
  std::optional<M> model_opt;
  std::uint64_t fingerprint = 0;
  phases.begin("checks");
  sync.step([&] {
    // On a shard the first process keeps the draws and saves the chains' states (every process
    // holds the same ones); every process reads them on resume.
    ck = link != nullptr ? sharded_checkpoint(*data, checkpoint, sinks, leader)
                         : checked_checkpoint(checkpoint, sinks);
    model_opt.emplace(data, cfg);  // checks the data (labels, features) before anything else
    // In parts the fingerprint also tells that every process was given the same data.
    if (ck != nullptr || !sync.whole()) fingerprint = data_fingerprint(*data);
  });
  phases.end(ck != nullptr || !sync.whole() ? 2 : 1);
  const M& model = *model_opt;
  out.config = cfg;
  out.n = data->total_n();
  out.dim = model.dim();
  out.names = model.param_names();
  phases.begin("map");
  RunStart start = agree_start(sync, model, cfg, *data, ck, fingerprint, pre, out.warnings);
  out.map = std::move(start.map);
  phases.end(start.found ? out.map.passes : 0);
  phases.begin("statistics");
  std::optional<RunSetup<M>> setup_opt;
  sync.step([&] {
    setup_opt.emplace(prepare_run(model, cfg, out.map, faults.bound_excess));
    if (ck != nullptr && !ck->resume && sync.leader() && leader)
      start_manifest(*ck, cfg, *data, fingerprint, out.map, setup_clock.seconds());
  });
  phases.end(setup_opt->passes);
  const RunSetup<M>& setup = *setup_opt;
  out.bound_slack = setup.bound_slack;
  out.q_dark_to_bright = setup.q_dark_to_bright;

  phases.begin("chains");
  const InverseMetric metric = chain_metric(model, cfg, out.map, setup);
  const Shared<M> sh{cfg,
                     model,
                     setup.bound ? &*setup.bound : nullptr,
                     out.map,
                     metric,
                     initial_step_size(cfg, out.map, out.dim),
                     draw_columns(cfg.kernel, out.names),
                     faults};
  const int threads = run_threads(cfg);
  const ChainBlock block = sync.block(cfg.chains);
  ChainSessions cs;
  sync.step([&] {
    cs = open_sessions(cfg, block, ck, leader ? sinks : SinkFactory{}, sh.columns, data->total_n(),
                       out.dim, model.layout().k, threads, leader);
  });
  if (link != nullptr)
    for (ChainSession& ses : cs.sessions) ses.concurrency = 1.0;  // in turn
  phases.end();
  out.setup_phases = phases.take();
  const double setup_serial = setup_clock.seconds();
  if (start.manifest) out.setup_seconds = start.manifest->setup_seconds;
  const Stopwatch par_clock;
  const BlockOutcome blocks =
      run_chains(sh, setup, block, cs, progress, out.chains, block_sync(part, link));
  take_outcome(blocks, out);
  for (const auto& c : out.chains) out.stopped = out.stopped || c.stopped;
  apportion_wall_time(out, cs, setup_serial, par_clock.seconds());
  return out;
}

}  // namespace flymc::detail
