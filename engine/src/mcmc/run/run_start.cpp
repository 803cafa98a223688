// The start of a FlyMC or regular MCMC run (run_start.hpp): checkpoint checks, manifests, the
// chains' sessions and the split of the wall time.
#include "run_start.hpp"

#include <algorithm>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/data/row_fold.hpp"

namespace flymc {

namespace detail {

void check_chain_state(const ChainState& c, const RunConfig& cfg, std::size_t n, std::size_t p,
                       std::size_t k, const StateStore& store) {
  const bool grad_cache = cfg.algo == Algo::flymc && uses_gradient(cfg.kernel);
  const long total = cfg.warmup + cfg.iters;
  std::string bad;
  if (c.theta.size() != p)
    bad = "theta has " + std::to_string(c.theta.size()) + " entries";
  else if (c.bright.size() > n)
    bad = "more bright data than N";
  else if (cfg.algo == Algo::full && !c.bright.empty())
    bad = "a bright set in a regular MCMC run";
  else if (c.tally.iteration > total)
    bad = "iteration beyond the run's end";
  // A run to an ESS target finishes where its target is met (at most at `total`).
  else if (cfg.ess > 0.0 ? c.finished && c.tally.iteration < cfg.warmup
                         : c.finished != (c.tally.iteration == total))
    bad = "inconsistent completion flag";
  else if (c.kept != kept_after(cfg, c.tally.iteration))
    bad = "kept-draw count inconsistent";
  else if (c.tally.since_z >= cfg.resolved_theta_steps())
    bad = "z-sweep schedule out of range";
  else if (grad_cache ? c.grad.size() != p || c.coefs.size() != c.bright.size() * k
                      : !c.grad.empty() || !c.coefs.empty())
    bad = "cached gradient does not fit the kernel";
  if (bad.empty() && !c.bright.empty()) {
    std::vector<char> seen(n, 0);
    for (Index v : c.bright) {
      if (v >= n || seen[v]) {
        bad = "a bright index out of range or listed twice";
        break;
      }
      seen[v] = 1;
    }
  }
  if (!bad.empty())
    throw ConfigError(store.chain_name(c.chain_id) + ": does not fit the run's configuration (" +
                      bad + ")");
}

void check_manifest(const RunManifest& m, const std::string& where, bool resuming,
                    const RunConfig& cfg, const Dataset& data, std::uint64_t fingerprint,
                    std::size_t dim, std::vector<std::string>& warnings) {
  const std::string whose = resuming ? "the checkpointed run" : "the leader process";
  if (m.n != data.total_n() || m.d != data.d() || m.data_hash != fingerprint)
    throw DataError(data.source() + ": the data differ from those of " + whose + " (" +
                    std::to_string(m.n) + " x " + std::to_string(m.d) +
                    " with another fingerprint in " + where + ", now " +
                    std::to_string(data.total_n()) + " x " + std::to_string(data.d()) + ")" +
                    (resuming ? ": resume with the original data file" : ""));
  if (!same_stored_options(cfg, m.config))
    throw ConfigError(where + ": the run configuration differs from " + whose + "'s");
  if (resuming && m.simd != kernels::simd_name())
    warnings.push_back("the run was started by a build with " + m.simd +
                       " kernels and resumed with " + kernels::simd_name() +
                       " kernels: the chains remain valid, but their draws are not bit-identical "
                       "to an uninterrupted run's");
  if (static_cast<std::size_t>(m.map.theta.size()) != dim)
    throw ConfigError(where + ": the MAP point has " + std::to_string(m.map.theta.size()) +
                      " entries, the model " + std::to_string(dim) +
                      " (not a checkpoint of this run, or damaged)");
}

RunManifest load_matching_manifest(const CheckpointOptions& ck, const RunConfig& cfg,
                                   const Dataset& data, std::uint64_t fingerprint, std::size_t dim,
                                   std::vector<std::string>& warnings) {
  RunManifest manifest = ck.store->load_manifest();
  check_manifest(manifest, ck.store->manifest_name(), true, cfg, data, fingerprint, dim, warnings);
  return manifest;
}

const CheckpointOptions* checked_checkpoint(const CheckpointOptions* checkpoint,
                                            const SinkFactory& sinks) {
  if (checkpoint == nullptr || !checkpoint->store) return nullptr;
  if (checkpoint->every < 0)
    throw ConfigError("--checkpoint-every must be >= 1, got " + std::to_string(checkpoint->every));
  if (!sinks)
    throw ConfigError(
        "checkpointing needs a draw sink per chain: the draws before a "
        "checkpoint are read back from it on resume");
  return checkpoint;
}

const CheckpointOptions* sharded_checkpoint(const Dataset& data,
                                            const CheckpointOptions* checkpoint,
                                            const SinkFactory& sinks, bool keeps_draws) {
  const CheckpointOptions* ck = nullptr;
  agree_on_parts(data, [&] {
    ck = keeps_draws ? checked_checkpoint(checkpoint, sinks)
                     : (checkpoint != nullptr && checkpoint->store ? checkpoint : nullptr);
  });
  RowLink* link = shard_link(data);
  if (link == nullptr) return ck;
  const std::vector<double> all = link->all_gather({ck != nullptr ? 1.0 : 0.0});
  if (std::any_of(all.begin(), all.end(), [&](double v) { return v != all.front(); }))
    throw ConfigError(
        "a run on a shard: every process must checkpoint, or none (CheckpointOptions)");
  return ck;
}

void start_manifest(const CheckpointOptions& ck, const RunConfig& cfg, const Dataset& data,
                    std::uint64_t fingerprint, const MapResult& map, double setup_seconds) {
  ck.store->clear();  // stale states of an earlier run in the same directory
  RunManifest m;
  m.config = cfg;
  m.checkpoint_every = ck.every;
  m.data_arg = ck.data_arg;
  m.data_path = ck.data_path;
  m.n = data.total_n();
  m.d = data.d();
  m.data_hash = fingerprint;
  m.map = map;
  m.setup_seconds = setup_seconds;
  m.simd = kernels::simd_name();
  ck.store->save_manifest(m);
}

ChainSessions open_sessions(const RunConfig& cfg, ChainBlock block, const CheckpointOptions* ck,
                            const SinkFactory& sinks, const std::vector<std::string>& columns,
                            std::size_t n, std::size_t p, std::size_t k, int threads,
                            bool keeps_draws) {
  const auto nc = static_cast<std::size_t>(block.count);
  ChainSessions cs;
  cs.sinks.resize(nc);
  cs.states.resize(nc);
  cs.sessions.resize(nc);
  for (std::size_t c = 0; c < nc; ++c) {
    const int id = block.first + static_cast<int>(c);
    if (sinks) cs.sinks[c] = sinks(id);
    ChainSession& ses = cs.sessions[c];
    ses.ck = ck;
    ses.concurrency = static_cast<double>(std::max(1, std::min(block.count, threads)));
    if (ck == nullptr || !ck->resume) continue;
    cs.states[c] = ck->store->load_chain(id);
    if (!cs.states[c]) continue;  // never saved: the chain starts afresh
    const ChainState& st = *cs.states[c];
    check_chain_state(st, cfg, n, p, k, *ck->store);
    if (!keeps_draws) {
      ses.state = &st;
      continue;
    }
    if (!cs.sinks[c])
      throw ConfigError("resuming needs a draw sink for chain " + std::to_string(id));
    ses.rows = cs.sinks[c]->resume(columns, st.sink_position);
    if (ses.rows.size() != st.kept)
      throw ConfigError(ck->store->chain_name(id) + ": records " + std::to_string(st.kept) +
                        " kept draws, the draw file holds " + std::to_string(ses.rows.size()) +
                        " up to the recorded length");
    ses.state = &st;
    cs.prev_wall.wall_z_init += st.timers.wall_z_init;
    cs.prev_wall.wall_warmup += st.timers.wall_warmup;
    cs.prev_wall.wall_sampling += st.timers.wall_sampling;
  }
  return cs;
}

void apportion_wall_time(RunResult& out, const ChainSessions& cs, double setup_serial,
                         double par_seconds) {
  double zi = 0.0, w = 0.0, s = 0.0;
  for (const ChainSession& ses : cs.sessions) {
    zi += ses.z_init;
    w += ses.warmup;
    s += ses.sampling;
  }
  const double tot = std::max(zi + w + s, 1e-300);
  out.setup_seconds += setup_serial + cs.prev_wall.wall_z_init + par_seconds * zi / tot;
  if (zi > 0.0) out.setup_phases.push_back({"initial z", par_seconds * zi / tot, -1});
  out.warmup_seconds = cs.prev_wall.wall_warmup + par_seconds * w / tot;
  out.sampling_seconds = cs.prev_wall.wall_sampling + par_seconds * s / tot;
}

void check_block(ChainBlock block, int chains) {
  if (block.count < 1 || block.first < 1 || block.first + block.count - 1 > chains)
    throw ConfigError("chains " + std::to_string(block.first) + " .. " +
                      std::to_string(block.first + block.count - 1) + " are not a block of the " +
                      std::to_string(chains) + " chains of the run");
}

void PartSync::share(RunManifest& m) const {
  if (part_ == nullptr) return;
  part_->share(m);
}

}  // namespace detail

}  // namespace flymc
