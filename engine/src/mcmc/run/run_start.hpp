#pragma once
// Private: how a FlyMC or regular MCMC run starts, before its chains run: the collective steps of a
// run in parts (PartSync), the MAP fit or the checkpoint's manifest every process starts from, the
// checks of a checkpoint against the run, and each chain's session (its sink, and on resume its
// saved state and the rows of its draw file). Defined in run_start.cpp, except the templates.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/chain_state.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/state_store.hpp"
#include "run_chains.hpp"

namespace flymc::detail {

/// Kept draws after `it` iterations: sampling iterations si = it' − warmup with si % thin == 0.
inline std::uint64_t kept_after(const RunConfig& cfg, long it) {
  if (it <= cfg.warmup) return 0;
  return static_cast<std::uint64_t>((it - cfg.warmup + cfg.thin - 1) / cfg.thin);
}

/// Per chain, per session: checkpointing and resume inputs, and the session's timer seconds.
struct ChainSession {
  const CheckpointOptions* ck = nullptr;              // null: checkpointing off
  const ChainState* state = nullptr;                  // resume from this state
  std::vector<std::vector<double>> rows;              // rows already in the draw file (resume)
  double concurrency = 1.0;                           // min(chains, threads) of this session
  double z_init = 0.0, warmup = 0.0, sampling = 0.0;  // this session's timer seconds (out)
};

/// Fills the draws and lp of a chain from the rows of its draw file: lp__ first, θ's p values
/// after the first `sampler_columns` columns.
inline void restore_draws(std::size_t sampler_columns, std::size_t p,
                          std::vector<std::vector<double>>& rows, ChainResult& res) {
  res.draws.reserve(std::max(res.kept, rows.size()) * p);
  res.lp.reserve(std::max(res.kept, rows.size()));
  for (const auto& r : rows) {
    res.lp.push_back(r[0]);
    const double* theta = r.data() + sampler_columns;
    res.draws.insert(res.draws.end(), theta, theta + p);
  }
  rows.clear();
  rows.shrink_to_fit();
}

/// The fields every chain's saved state starts with: its id, whether it finished, the byte length
/// of its draw file (synced first: the file is durable before the state that cites it), its
/// kept draws, random stream and counters.
inline ChainState chain_state_head(int id, bool finished, DrawSink& sink, std::size_t kept,
                                   const Rng& rng, const Counters& counters) {
  ChainState c;
  c.chain_id = id;
  c.finished = finished;
  c.sink_position = sink.sync();
  c.kept = kept;
  c.rng = rng.state();
  c.counters = counters;
  c.counters.profile = nullptr;  // not part of the state
  return c;
}

/// A saved state's timers: earlier sessions' (`prev`) plus this session's z set-up, warm-up and
/// sampling seconds, and their wall-clock shares at the session's concurrency.
inline ChainTimers saved_timers(const ChainTimers& prev, const ChainSession& ses, double warm,
                                double samp) {
  ChainTimers t;
  t.z_init = prev.z_init + ses.z_init;
  t.warmup = prev.warmup + warm;
  t.sampling = prev.sampling + samp;
  t.wall_z_init = prev.wall_z_init + ses.z_init / ses.concurrency;
  t.wall_warmup = prev.wall_warmup + warm / ses.concurrency;
  t.wall_sampling = prev.wall_sampling + samp / ses.concurrency;
  return t;
}

/// Throws ConfigError unless a loaded chain state fits the run (a state from another run or a
/// damaged file that still passed its checksum).
void check_chain_state(const ChainState& c, const RunConfig& cfg, std::size_t n, std::size_t p,
                       std::size_t k, const StateStore& store);

/// Checks that the data and the configuration are those of `m`, the manifest of the run to resume
/// (`resuming`, read from `where`) or the leader's set-up of a run in parts; resuming, a change of
/// SIMD kernels is a warning. @throw DataError, ConfigError naming `where`.
void check_manifest(const RunManifest& m, const std::string& where, bool resuming,
                    const RunConfig& cfg, const Dataset& data, std::uint64_t fingerprint,
                    std::size_t dim, std::vector<std::string>& warnings);

/// Loads the manifest of the run to resume from `ck->store` and checks it (check_manifest).
RunManifest load_matching_manifest(const CheckpointOptions& ck, const RunConfig& cfg,
                                   const Dataset& data, std::uint64_t fingerprint, std::size_t dim,
                                   std::vector<std::string>& warnings);

/// Writes the manifest of a fresh checkpointed run (after clearing stale chain states).
void start_manifest(const CheckpointOptions& ck, const RunConfig& cfg, const Dataset& data,
                    std::uint64_t fingerprint, const MapResult& map, double setup_seconds);

/// The checkpoint options of a run (null when off), checked. @throw ConfigError.
const CheckpointOptions* checked_checkpoint(const CheckpointOptions* checkpoint,
                                            const SinkFactory& sinks);
/// The same for a run on `data`, which may be a shard: there only the first part keeps the draws
/// (`keeps_draws`), so only it needs a sink per chain, and every process must checkpoint alike
/// (collective on a shard).
const CheckpointOptions* sharded_checkpoint(const Dataset& data,
                                            const CheckpointOptions* checkpoint,
                                            const SinkFactory& sinks, bool keeps_draws);

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
  bool found = false;                   // this process searched for the MAP (its passes count)
};

/// The leader's part of the start: loads the manifest to resume, or finds the MAP fit (or takes
/// `pre`'s); in a part,
/// shares it and every process checks its own data and configuration against it.
template <class M>
RunStart agree_start(const PartSync& sync, const M& model, const RunConfig& cfg,
                     const Dataset& data, const CheckpointOptions* ck, std::uint64_t fingerprint,
                     const Precomputed& pre, std::vector<std::string>& warnings) {
  const bool resuming = ck != nullptr && ck->resume;
  RunStart st;
  if (sync.whole()) {
    // (On a shard, every process loads and checks it: an error on one is thrown on all.)
    if (resuming)
      agree_on_parts(data, [&] {
        st.manifest = load_matching_manifest(*ck, cfg, data, fingerprint, model.dim(), warnings);
      });
    // On resume the MAP fit is the checkpointed one: the bounds and metric built from it are
    // then those of the first session, bit for bit.
    st.map = st.manifest ? st.manifest->map : start_map(model, pre, st.found);
    return st;
  }
  RunManifest lead;
  sync.step([&] {
    if (!sync.leader()) return;
    if (resuming) {
      lead = ck->store->load_manifest();
      return;
    }
    lead.config = cfg;
    lead.n = data.n();
    lead.d = data.d();
    lead.data_hash = fingerprint;
    lead.map = start_map(model, pre, st.found);
    lead.simd = kernels::simd_name();
  });
  sync.share(lead);
  sync.step([&] {
    check_manifest(lead, resuming ? ck->store->manifest_name() : "the leader's set-up", resuming,
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
/// state and draw file before any chain runs. Entry i is chain block.first + i. `keeps_draws`
/// false: a process of a sharded run that only follows the chains (no sinks, no draw files:
/// their states alone).
ChainSessions open_sessions(const RunConfig& cfg, ChainBlock block, const CheckpointOptions* ck,
                            const SinkFactory& sinks, const std::vector<std::string>& columns,
                            std::size_t n, std::size_t p, std::size_t k, int threads,
                            bool keeps_draws = true);

/// Splits the wall time of the parallel region between z set-up, warm-up and sampling in
/// proportion to the chains' own timers (chains may outnumber threads, so there is no common
/// barrier); earlier sessions of a resumed run add their chains' wall shares.
void apportion_wall_time(RunResult& out, const ChainSessions& cs, double setup_serial,
                         double par_seconds);

}  // namespace flymc::detail
