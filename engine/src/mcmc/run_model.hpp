#pragma once
// Private: the runner of one model, a template over it (FireflyModel), instantiated once per model
// in sampler_<model>.cpp so that the models compile in parallel. It checks the data and any
// checkpoint to resume, sets the run up (flymc/mcmc/setup.hpp), runs the chains concurrently on a
// oneTBB arena (chain.hpp) and apportions the wall time.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chain.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/setup.hpp"
#include "run_chains.hpp"

namespace flymc::detail {

/// Throws ConfigError unless a loaded chain state fits the run (a state from another run or a
/// damaged file that still passed its checksum).
void check_chain_state(const ChainState& c, const RunConfig& cfg, std::size_t n, std::size_t p,
                       std::size_t k, const std::string& dir);

/// Loads the manifest of the run to resume in `ck->dir` and checks that the data and the
/// configuration are the checkpointed run's; a change of SIMD kernels is a warning.
RunManifest load_matching_manifest(const CheckpointOptions& ck, const RunConfig& cfg,
                                   const Dataset& data, std::uint64_t fingerprint, std::size_t dim,
                                   std::vector<std::string>& warnings);

/// Writes the manifest of a fresh checkpointed run (after clearing stale chain states).
void start_manifest(const CheckpointOptions& ck, const RunConfig& cfg, const Dataset& data,
                    std::uint64_t fingerprint, const MapResult& map, double setup_seconds);

/// The chains' draw sinks, and on resume their loaded states and the rows of their draw files.
struct ChainSessions {
  std::vector<std::unique_ptr<DrawSink>> sinks;
  std::vector<std::optional<ChainState>> states;
  std::vector<ChainSession> sessions;
  ChainTimers prev_wall;  // wall_* of earlier sessions, summed over chains
};

/// Makes every chain's sink and, on resume, loads and checks every chain state and draw file
/// before any chain runs.
ChainSessions open_sessions(const RunConfig& cfg, const CheckpointOptions* ck,
                            const SinkFactory& sinks, const std::vector<std::string>& columns,
                            std::size_t n, std::size_t p, std::size_t k, int threads);

/// Splits the wall time of the parallel region between z set-up, warm-up and sampling in
/// proportion to the chains' own timers (chains may outnumber threads, so there is no common
/// barrier); earlier sessions of a resumed run add their chains' wall shares.
void apportion_wall_time(RunResult& out, const ChainSessions& cs, double setup_serial,
                         double par_seconds);

/// Runs every chain of the run on `threads` threads; a chain's exception is rethrown after all
/// chains ended.
template <class M>
void run_chains(const Shared<M>& sh, const RunSetup<M>& setup, ChainSessions& cs,
                Progress* progress, int threads, std::vector<ChainResult>& results) {
  const RunConfig& cfg = sh.cfg;
  const int nchains = cfg.chains;
  results.resize(static_cast<std::size_t>(nchains));
  auto one = [&](int c) {
    const auto ci = static_cast<std::size_t>(c);
    DrawSink* sink = cs.sinks[ci].get();
    std::atomic<long>* prog = progress ? &progress->done[ci] : nullptr;
    ChainSession& ses = cs.sessions[ci];
    if (cfg.algo == Algo::full) {
      results[ci] = Chain<M, false, ImplicitZUpdater>(sh, c + 1, nullptr, sink, ses).run(prog);
    } else if (cfg.z == ZUpdate::implicit) {
      ImplicitZUpdater z =
          setup.rates ? ImplicitZUpdater(*setup.rates) : ImplicitZUpdater(setup.q_dark_to_bright);
      results[ci] = Chain<M, true, ImplicitZUpdater>(sh, c + 1, &z, sink, ses).run(prog);
    } else {
      ExplicitZUpdater z(cfg.resample_fraction);
      results[ci] = Chain<M, true, ExplicitZUpdater>(sh, c + 1, &z, sink, ses).run(prog);
    }
    cs.sinks[ci].reset();  // closes the file in the chain's own task
  };
  for_each_chain(nchains, threads, one);
}

/// Runs the chains of `cfg` on model M.
template <FireflyModel M>
RunResult run_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                    const SinkFactory& sinks, Progress* progress,
                    const CheckpointOptions* checkpoint, const testing::RunHooks& hooks) {
  const CheckpointOptions* ck =
      checkpoint != nullptr && !checkpoint->dir.empty() ? checkpoint : nullptr;
  if (ck != nullptr) {
    if (ck->every < 0)
      throw ConfigError("--checkpoint-every must be >= 1, got " + std::to_string(ck->every));
    if (!sinks)
      throw ConfigError(
          "checkpointing needs a draw sink per chain: the draws before a "
          "checkpoint are read back from it on resume");
  }
  const Stopwatch setup_clock;
  const M model(data, cfg);  // checks the data (labels, features) before anything else
  RunResult out;
  out.config = cfg;
  out.n = data->n();
  out.dim = model.dim();
  out.names = model.param_names();
  const std::uint64_t fingerprint = ck != nullptr ? data_fingerprint(*data) : 0;
  std::optional<RunManifest> manifest;
  if (ck != nullptr && ck->resume)
    manifest = load_matching_manifest(*ck, cfg, *data, fingerprint, model.dim(), out.warnings);
  // On resume the MAP fit is the checkpointed one: the bounds and metric built from it are then
  // those of the first session, bit for bit.
  out.map = manifest ? manifest->map : model.find_map();
  const RunSetup<M> setup = prepare_run(model, cfg, out.map, hooks.bound_excess);
  out.bound_slack = setup.bound_slack;
  out.q_dark_to_bright = setup.q_dark_to_bright;
  if (ck != nullptr && !ck->resume)
    start_manifest(*ck, cfg, *data, fingerprint, out.map, setup_clock.seconds());
  const double setup_serial = setup_clock.seconds();

  const InverseMetric metric = chain_metric(model, cfg, out.map, setup);
  const Shared<M> sh{cfg,
                     model,
                     setup.bound ? &*setup.bound : nullptr,
                     out.map,
                     metric,
                     initial_step_size(cfg, out.map, out.dim),
                     draw_columns(cfg.kernel, out.names),
                     hooks};
  const int threads = run_threads(cfg);
  ChainSessions cs =
      open_sessions(cfg, ck, sinks, sh.columns, data->n(), out.dim, model.layout().k, threads);
  if (manifest) out.setup_seconds = manifest->setup_seconds;
  const Stopwatch par_clock;
  run_chains(sh, setup, cs, progress, threads, out.chains);
  for (const auto& c : out.chains) out.stopped = out.stopped || c.stopped;
  apportion_wall_time(out, cs, setup_serial, par_clock.seconds());
  return out;
}

}  // namespace flymc::detail
