#include "flymc/mcmc/sampler.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/metric.hpp"
#include "flymc/mcmc/minibatch/approximate.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/pdmp/pdmp.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/smh/smh.hpp"
#include "run_start.hpp"

namespace flymc {

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

// The runner per sampler kind, which the sampler table names.
RunResult run_theta_kernel_request(const RunRequest& r) {
  return model_info(r.cfg.model).runner(r);
}
namespace {

/// run() and run_part(): checks, then the sampler family's or the model's runner.
RunResult dispatch(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                   const SinkFactory& sinks, Progress* progress,
                   const CheckpointOptions* checkpoint, const FaultInjection& faults,
                   const RunPart* part, const Precomputed& pre) {
  detail::PartSync(part).step([&] {
    cfg.validate();
    if (!(faults.bound_excess >= 0.0) || !std::isfinite(faults.bound_excess))
      throw ConfigError("--test-bound-excess must be finite and >= 0, got " +
                        std::to_string(faults.bound_excess));
    if (!data) throw DataError("no data");
    if (data->storage() != cfg.storage) {
      auto name = [](Storage s) { return s == Storage::f32 ? "f32" : "f64"; };
      throw ConfigError(data->source() + ": the data's features are held as " +
                        name(data->storage()) + " but the run says --storage " + name(cfg.storage) +
                        " (load them with that storage)");
    }
    check_model_fits(cfg, data->shard() != nullptr);
    // Scalable MH's and FlyMC's iterations go across a sharded data set's processes
    // (docs/mpi.md); the other samplers' do not yet: a chain would sum only its own process's
    // rows.
    if (data->shard() != nullptr && (!sampler_info(cfg.algo).shardable || part != nullptr))
      throw ConfigError(data->source() + ": of the samplers, only --algo " +
                        algo_names(algos_where([](const SamplerInfo& i) { return i.shardable; })) +
                        " run on data sharded over processes so far, and only with all of their "
                        "chains on every process");
    // Only FlyMC and regular MCMC share their chains between processes so far. (A part that is
    // the whole run, e.g. one MPI process, runs the other samplers as usual.)
    if (part != nullptr && !sampler_info(cfg.algo).shares_chains &&
        part->block != ChainBlock{1, cfg.chains})
      throw ConfigError(std::string("--algo ") + to_string(cfg.algo) +
                        " runs in one process: its chains cannot be shared between processes yet");
    if (part != nullptr) detail::check_block(part->block, cfg.chains);
    if (cfg.algo == Algo::automatic)  // (run() resolves it; a part must be told the choice)
      throw ConfigError(
          "--algo auto: choose the sampler before the processes share the run (choose_algo on "
          "one process, its choice to all), or name it with --algo");
  });
  const SamplerRunner runner = sampler_info(cfg.algo).runner;
  if (runner == nullptr)  // (auto: refused above)
    throw ConfigError(std::string("--algo ") + to_string(cfg.algo) + " has no runner");
  return runner(RunRequest{cfg, std::move(data), sinks, progress, checkpoint, faults, part, pre});
}

}  // namespace

RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data, const SinkFactory& sinks,
              Progress* progress, const CheckpointOptions* checkpoint, const FaultInjection& faults,
              const Precomputed& pre) {
  if (cfg.algo != Algo::automatic)
    return dispatch(cfg, std::move(data), sinks, progress, checkpoint, faults, nullptr, pre);
  // --algo auto: the pilots choose, then the chosen sampler runs with their MAP fit and set-up.
  cfg.validate();
  if (!data) throw DataError("no data");
  if (checkpoint != nullptr && checkpoint->resume)
    throw ConfigError(
        "--algo auto cannot resume: its pilots are not checkpointed; resume with the "
        "configuration the run chose (RunResult::config, or the checkpoint's)");
  AutoOptions opt;
  opt.checkpointed = checkpoint != nullptr && checkpoint->store != nullptr;
  const AlgoChoice choice = choose_algo(cfg, data, opt);
  RunResult r = dispatch(choice.best().config, std::move(data), sinks, progress, checkpoint, faults,
                         nullptr, Precomputed{choice.map, choice.cache});
  r.setup_phases.insert(r.setup_phases.begin(), SetupPhase{"auto pilots", choice.pilot_seconds});
  r.auto_chosen = choice.best().name;
  return r;
}

RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
              const std::shared_ptr<const SingleIndexFamily>& family, const SinkFactory& sinks,
              Progress* progress, const CheckpointOptions* checkpoint) {
  if (!family) throw ConfigError("flymc::run: the single-index family is null");
  RunConfig c = cfg;
  c.model = ModelKind::custom;
  c.family = family;
  return run(c, std::move(data), sinks, progress, checkpoint);
}

RunResult run_part(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                   const SinkFactory& sinks, Progress* progress,
                   const CheckpointOptions* checkpoint, const RunPart& part,
                   const FaultInjection& faults, const Precomputed& pre) {
  return dispatch(cfg, std::move(data), sinks, progress, checkpoint, faults, &part, pre);
}

}  // namespace flymc
