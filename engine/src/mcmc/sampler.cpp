#include "flymc/mcmc/sampler.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/mcmc/metric.hpp"
#include "flymc/mcmc/minibatch/approximate.hpp"
#include "flymc/mcmc/pdmp/pdmp.hpp"
#include "flymc/mcmc/testing.hpp"
#include "run_model.hpp"

namespace flymc {

// The runner per model (sampler_<model>.cpp).
RunResult run_logistic_model(const RunConfig&, std::shared_ptr<const Dataset>, const SinkFactory&,
                             Progress*, const CheckpointOptions*, const testing::RunHooks&,
                             const RunPart*);
RunResult run_softmax_model(const RunConfig&, std::shared_ptr<const Dataset>, const SinkFactory&,
                            Progress*, const CheckpointOptions*, const testing::RunHooks&,
                            const RunPart*);
RunResult run_robust_model(const RunConfig&, std::shared_ptr<const Dataset>, const SinkFactory&,
                           Progress*, const CheckpointOptions*, const testing::RunHooks&,
                           const RunPart*);

namespace detail {

void check_chain_state(const ChainState& c, const RunConfig& cfg, std::size_t n, std::size_t p,
                       std::size_t k, const std::string& dir) {
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
  else if (c.finished != (c.tally.iteration == total))
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
    throw ConfigError(chain_checkpoint_path(dir, c.chain_id) +
                      ": does not fit the run's configuration (" + bad + ")");
}

void check_manifest(const RunManifest& m, const std::string& where, bool resuming,
                    const RunConfig& cfg, const Dataset& data, std::uint64_t fingerprint,
                    std::size_t dim, std::vector<std::string>& warnings) {
  const std::string whose = resuming ? "the checkpointed run" : "the leader process";
  if (m.n != data.n() || m.d != data.d() || m.data_hash != fingerprint)
    throw DataError(data.source() + ": the data differ from those of " + whose + " (" +
                    std::to_string(m.n) + " x " + std::to_string(m.d) +
                    " with another fingerprint in " + where + ", now " + std::to_string(data.n()) +
                    " x " + std::to_string(data.d()) + ")" +
                    (resuming ? ": resume with the original data file" : ""));
  // Every stored option must match (threads and profile are not stored).
  auto options = [](const RunConfig& c) {
    RunManifest e;
    e.config = c;
    return encode_checkpoint(e);
  };
  if (options(cfg) != options(m.config))
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
  RunManifest manifest = load_run_manifest(ck.dir);
  check_manifest(manifest, run_manifest_path(ck.dir), true, cfg, data, fingerprint, dim, warnings);
  return manifest;
}

const CheckpointOptions* checked_checkpoint(const CheckpointOptions* checkpoint,
                                            const SinkFactory& sinks) {
  if (checkpoint == nullptr || checkpoint->dir.empty()) return nullptr;
  if (checkpoint->every < 0)
    throw ConfigError("--checkpoint-every must be >= 1, got " + std::to_string(checkpoint->every));
  if (!sinks)
    throw ConfigError(
        "checkpointing needs a draw sink per chain: the draws before a "
        "checkpoint are read back from it on resume");
  return checkpoint;
}

void start_manifest(const CheckpointOptions& ck, const RunConfig& cfg, const Dataset& data,
                    std::uint64_t fingerprint, const MapResult& map, double setup_seconds) {
  remove_checkpoints(ck.dir);  // stale states of an earlier run in the same directory
  RunManifest m;
  m.config = cfg;
  m.checkpoint_every = ck.every;
  m.data_arg = ck.data_arg;
  m.data_path = ck.data_path;
  m.n = data.n();
  m.d = data.d();
  m.data_hash = fingerprint;
  m.map = map;
  m.setup_seconds = setup_seconds;
  m.simd = kernels::simd_name();
  save_run_manifest(ck.dir, m);
}

ChainSessions open_sessions(const RunConfig& cfg, ChainBlock block, const CheckpointOptions* ck,
                            const SinkFactory& sinks, const std::vector<std::string>& columns,
                            std::size_t n, std::size_t p, std::size_t k, int threads) {
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
    cs.states[c] = load_chain_checkpoint(ck->dir, id);
    if (!cs.states[c]) continue;  // never saved: the chain starts afresh
    const ChainState& st = *cs.states[c];
    check_chain_state(st, cfg, n, p, k, ck->dir);
    if (!cs.sinks[c])
      throw ConfigError("resuming needs a draw sink for chain " + std::to_string(id));
    ses.rows = cs.sinks[c]->resume(columns, st.sink_position);
    if (ses.rows.size() != st.kept)
      throw ConfigError(chain_checkpoint_path(ck->dir, id) + ": records " +
                        std::to_string(st.kept) + " kept draws, the draw file holds " +
                        std::to_string(ses.rows.size()) + " up to the recorded length");
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
  out.warmup_seconds = cs.prev_wall.wall_warmup + par_seconds * w / tot;
  out.sampling_seconds = cs.prev_wall.wall_sampling + par_seconds * s / tot;
}

}  // namespace detail

double RunResult::queries_per_iter() const {
  double q = 0.0;
  for (const auto& c : chains) q += static_cast<double>(c.sampling_queries);
  return q / (static_cast<double>(config.iters) * static_cast<double>(chains.size()));
}
double RunResult::bright_mean() const {
  double s = 0.0;
  for (const auto& c : chains) s += c.bright_mean;
  return s / static_cast<double>(chains.size());
}
double RunResult::accept_rate() const {
  double s = 0.0;
  for (const auto& c : chains) s += c.accept_rate;
  return s / static_cast<double>(chains.size());
}
double RunResult::batch_mean() const {
  if (!uses_batches(config.algo)) return std::numeric_limits<double>::quiet_NaN();
  double s = 0.0;
  for (const auto& c : chains) s += c.batch_mean;
  return s / static_cast<double>(chains.size());
}
std::uint64_t RunResult::bound_violations() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.bound_violations;
  return s;
}
std::uint64_t RunResult::bound_clamps() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.bound_clamps;
  return s;
}
std::uint64_t RunResult::nonfinite() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.nonfinite;
  return s;
}
std::uint64_t RunResult::slice_failures() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.slice_failures;
  return s;
}
std::uint64_t RunResult::divergences() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.sampling_divergences;
  return s;
}
std::vector<std::vector<double>> RunResult::coordinate(std::size_t j) const {
  std::vector<std::vector<double>> out;
  for (const auto& c : chains) {
    std::vector<double> v(c.kept);
    for (std::size_t i = 0; i < c.kept; ++i) v[i] = c.draws[i * dim + j];
    out.push_back(std::move(v));
  }
  return out;
}
std::vector<double> RunResult::path_mean() const {
  std::vector<double> m;
  if (chains.empty() || chains.front().path_mean.empty()) return m;
  m.assign(dim, 0.0);
  for (const auto& c : chains)
    for (std::size_t j = 0; j < dim; ++j) m[j] += c.path_mean[j];
  for (double& v : m) v /= static_cast<double>(chains.size());
  return m;
}
std::vector<std::vector<double>> RunResult::lp() const {
  std::vector<std::vector<double>> out;
  for (const auto& c : chains) out.push_back(c.lp);
  return out;
}

std::vector<std::vector<double>> DrawSink::resume(const std::vector<std::string>&, std::uint64_t) {
  throw ConfigError("this draw sink cannot resume a checkpointed chain");
}

LabelDomain label_domain(ModelKind model) noexcept {
  switch (model) {
    case ModelKind::logistic:
      return LabelDomain::binary;
    case ModelKind::softmax:
      return LabelDomain::categorical;
    case ModelKind::robust:
      return LabelDomain::any;
  }
  return LabelDomain::any;
}

namespace testing {

RunResult run_with_hooks(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                         const SinkFactory& sinks, Progress* progress,
                         const CheckpointOptions* checkpoint, const RunHooks& hooks,
                         const RunPart* part) {
  detail::PartSync(part).step([&] {
    cfg.validate();
    if (!(hooks.bound_excess >= 0.0) || !std::isfinite(hooks.bound_excess))
      throw ConfigError("--test-bound-excess must be finite and >= 0, got " +
                        std::to_string(hooks.bound_excess));
    if (!data) throw DataError("no data");
    // Only FlyMC and regular MCMC share their chains between processes so far. (A part that is
    // the whole run, e.g. one MPI process, runs the other samplers as usual.)
    if (part != nullptr && !uses_theta_kernel(cfg.algo) && part->block != ChainBlock{1, cfg.chains})
      throw ConfigError(std::string("--algo ") + to_string(cfg.algo) +
                        " runs in one process: its chains cannot be shared between processes yet");
    if (part != nullptr) detail::check_block(part->block, cfg.chains);
  });
  if (is_pdmp(cfg.algo)) return run_pdmp(cfg, std::move(data), sinks, progress, checkpoint);
  if (!uses_theta_kernel(cfg.algo))
    return run_approximate(cfg, std::move(data), sinks, progress, checkpoint);
  switch (cfg.model) {
    case ModelKind::logistic:
      return run_logistic_model(cfg, std::move(data), sinks, progress, checkpoint, hooks, part);
    case ModelKind::softmax:
      return run_softmax_model(cfg, std::move(data), sinks, progress, checkpoint, hooks, part);
    case ModelKind::robust:
      return run_robust_model(cfg, std::move(data), sinks, progress, checkpoint, hooks, part);
  }
  throw ConfigError(std::string("model ") + to_string(cfg.model) + " is not available yet");
}

}  // namespace testing

RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data, const SinkFactory& sinks,
              Progress* progress, const CheckpointOptions* checkpoint) {
  return testing::run_with_hooks(cfg, std::move(data), sinks, progress, checkpoint, {});
}

RunResult run_part(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                   const SinkFactory& sinks, Progress* progress,
                   const CheckpointOptions* checkpoint, const RunPart& part) {
  return testing::run_with_hooks(cfg, std::move(data), sinks, progress, checkpoint, {}, &part);
}

}  // namespace flymc
