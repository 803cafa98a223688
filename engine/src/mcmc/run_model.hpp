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
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/setup.hpp"
#include "run_chains.hpp"

namespace flymc::detail {

/// Throws ConfigError unless a loaded chain state fits the run (a state from another run or a
/// damaged file that still passed its checksum).
void check_chain_state(const ChainState& c, const RunConfig& cfg, std::size_t n, std::size_t p,
                       std::size_t k, const std::string& dir);

/// Checks that the data and the configuration are those of `m`, the manifest of the run to resume
/// (`resuming`, read from `where`) or the leader's set-up of a run in parts; resuming, a change of
/// SIMD kernels is a warning. @throw DataError, ConfigError naming `where`.
void check_manifest(const RunManifest& m, const std::string& where, bool resuming,
                    const RunConfig& cfg, const Dataset& data, std::uint64_t fingerprint,
                    std::size_t dim, std::vector<std::string>& warnings);

/// Loads the manifest of the run to resume in `ck->dir` and checks it (check_manifest).
RunManifest load_matching_manifest(const CheckpointOptions& ck, const RunConfig& cfg,
                                   const Dataset& data, std::uint64_t fingerprint, std::size_t dim,
                                   std::vector<std::string>& warnings);

/// Writes the manifest of a fresh checkpointed run (after clearing stale chain states).
void start_manifest(const CheckpointOptions& ck, const RunConfig& cfg, const Dataset& data,
                    std::uint64_t fingerprint, const MapResult& map, double setup_seconds);

/// The checkpoint options of a run (null when off), checked. @throw ConfigError.
const CheckpointOptions* checked_checkpoint(const CheckpointOptions* checkpoint,
                                            const SinkFactory& sinks);

/// @throw ConfigError unless `block` is a non-empty block of the run's `chains` chains.
void check_block(ChainBlock block, int chains);

/// The collective steps of a run in parts (run_part.hpp), or plain calls for a whole run.
class PartSync {
 public:
  explicit PartSync(const RunPart* part) noexcept : part_(part) {}
  bool whole() const noexcept { return part_ == nullptr; }
  bool leader() const noexcept { return part_ == nullptr || part_->leader; }
  ChainBlock block(int chains) const noexcept {
    return part_ != nullptr ? part_->block : ChainBlock{1, chains};
  }
  /// Runs f; in a part, then agrees on its outcome with the other processes, so that an error
  /// anywhere is thrown everywhere and no process is left waiting in a later step.
  template <class F>
  void step(F&& f) const {
    if (part_ == nullptr) return f();
    std::exception_ptr e;
    try {
      f();
    } catch (...) {
      e = std::current_exception();
    }
    part_->agree(e);
  }
  /// In a part: every process gets the leader's manifest. A whole run keeps its own.
  void share(RunManifest& m) const;

 private:
  const RunPart* part_;
};

/// What a run starts from, the same on every process of a run in parts: the MAP fit (found, or
/// the checkpoint's) and, resuming, the checkpoint's manifest.
struct RunStart {
  MapResult map;
  std::optional<RunManifest> manifest;  // resuming
};

/// The leader's part of the start: loads the manifest to resume, or finds the MAP fit; in a part,
/// shares it and every process checks its own data and configuration against it.
template <class M>
RunStart agree_start(const PartSync& sync, const M& model, const RunConfig& cfg,
                     const Dataset& data, const CheckpointOptions* ck, std::uint64_t fingerprint,
                     std::vector<std::string>& warnings) {
  const bool resuming = ck != nullptr && ck->resume;
  RunStart st;
  if (sync.whole()) {
    if (resuming)
      st.manifest = load_matching_manifest(*ck, cfg, data, fingerprint, model.dim(), warnings);
    // On resume the MAP fit is the checkpointed one: the bounds and metric built from it are
    // then those of the first session, bit for bit.
    st.map = st.manifest ? st.manifest->map : model.find_map();
    return st;
  }
  RunManifest lead;
  sync.step([&] {
    if (!sync.leader()) return;
    if (resuming) {
      lead = load_run_manifest(ck->dir);
      return;
    }
    lead.config = cfg;
    lead.n = data.n();
    lead.d = data.d();
    lead.data_hash = fingerprint;
    lead.map = model.find_map();
    lead.simd = kernels::simd_name();
  });
  sync.share(lead);
  sync.step([&] {
    check_manifest(lead, resuming ? run_manifest_path(ck->dir) : "the leader's set-up", resuming,
                   cfg, data, fingerprint, model.dim(), warnings);
  });
  st.map = lead.map;
  if (resuming) st.manifest = std::move(lead);
  return st;
}

/// The chains' draw sinks, and on resume their loaded states and the rows of their draw files.
struct ChainSessions {
  std::vector<std::unique_ptr<DrawSink>> sinks;
  std::vector<std::optional<ChainState>> states;
  std::vector<ChainSession> sessions;
  ChainTimers prev_wall;  // wall_* of earlier sessions, summed over chains
};

/// Makes the sink of every chain of `block` and, on resume, loads and checks every such chain's
/// state and draw file before any chain runs. Entry i is chain block.first + i.
ChainSessions open_sessions(const RunConfig& cfg, ChainBlock block, const CheckpointOptions* ck,
                            const SinkFactory& sinks, const std::vector<std::string>& columns,
                            std::size_t n, std::size_t p, std::size_t k, int threads);

/// Splits the wall time of the parallel region between z set-up, warm-up and sampling in
/// proportion to the chains' own timers (chains may outnumber threads, so there is no common
/// barrier); earlier sessions of a resumed run add their chains' wall shares.
void apportion_wall_time(RunResult& out, const ChainSessions& cs, double setup_serial,
                         double par_seconds);

/// Runs the chains of `block` on `threads` threads; a chain's exception is rethrown after all
/// chains ended. results[i] is chain block.first + i.
template <class M>
void run_chains(const Shared<M>& sh, const RunSetup<M>& setup, ChainBlock block, ChainSessions& cs,
                Progress* progress, int threads, std::vector<ChainResult>& results) {
  const RunConfig& cfg = sh.cfg;
  results.resize(static_cast<std::size_t>(block.count));
  auto one = [&](int i) {  // i: index in the block
    const auto ci = static_cast<std::size_t>(i);
    const int id = block.first + i;
    DrawSink* sink = cs.sinks[ci].get();
    ChainGauge* prog = progress ? &progress->chains[static_cast<std::size_t>(id - 1)] : nullptr;
    ChainSession& ses = cs.sessions[ci];
    if (cfg.algo == Algo::full) {
      results[ci] = Chain<M, false, ImplicitZUpdater>(sh, id, nullptr, sink, ses).run(prog);
    } else if (cfg.z == ZUpdate::implicit) {
      ImplicitZUpdater z =
          setup.rates ? ImplicitZUpdater(*setup.rates) : ImplicitZUpdater(setup.q_dark_to_bright);
      results[ci] = Chain<M, true, ImplicitZUpdater>(sh, id, &z, sink, ses).run(prog);
    } else {
      ExplicitZUpdater z(cfg.resample_fraction);
      results[ci] = Chain<M, true, ExplicitZUpdater>(sh, id, &z, sink, ses).run(prog);
    }
    cs.sinks[ci].reset();  // closes the file in the chain's own task
  };
  if (progress) progress->chains_started.store(true);
  for_each_chain(block.count, threads, one);
}

/// Runs the chains of `cfg` on model M: all of them, or in a part (run_part.hpp) its block.
template <FireflyModel M>
RunResult run_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                    const SinkFactory& sinks, Progress* progress,
                    const CheckpointOptions* checkpoint, const testing::RunHooks& hooks,
                    const RunPart* part) {
  const PartSync sync(part);
  const Stopwatch setup_clock;
  const CheckpointOptions* ck = nullptr;
  std::optional<M> model_opt;
  std::uint64_t fingerprint = 0;
  sync.step([&] {
    ck = checked_checkpoint(checkpoint, sinks);
    model_opt.emplace(data, cfg);  // checks the data (labels, features) before anything else
    // In parts the fingerprint also tells that every process was given the same data.
    if (ck != nullptr || !sync.whole()) fingerprint = data_fingerprint(*data);
  });
  const M& model = *model_opt;
  RunResult out;
  out.config = cfg;
  out.n = data->n();
  out.dim = model.dim();
  out.names = model.param_names();
  RunStart start = agree_start(sync, model, cfg, *data, ck, fingerprint, out.warnings);
  out.map = std::move(start.map);
  std::optional<RunSetup<M>> setup_opt;
  sync.step([&] {
    setup_opt.emplace(prepare_run(model, cfg, out.map, hooks.bound_excess));
    if (ck != nullptr && !ck->resume && sync.leader())
      start_manifest(*ck, cfg, *data, fingerprint, out.map, setup_clock.seconds());
  });
  const RunSetup<M>& setup = *setup_opt;
  out.bound_slack = setup.bound_slack;
  out.q_dark_to_bright = setup.q_dark_to_bright;
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
  const ChainBlock block = sync.block(cfg.chains);
  ChainSessions cs;
  sync.step([&] {
    cs = open_sessions(cfg, block, ck, sinks, sh.columns, data->n(), out.dim, model.layout().k,
                       threads);
  });
  if (start.manifest) out.setup_seconds = start.manifest->setup_seconds;
  const Stopwatch par_clock;
  run_chains(sh, setup, block, cs, progress, threads, out.chains);
  for (const auto& c : out.chains) out.stopped = out.stopped || c.stopped;
  apportion_wall_time(out, cs, setup_serial, par_clock.seconds());
  return out;
}

}  // namespace flymc::detail
