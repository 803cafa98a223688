// The front door (flymc/mcmc/front_door.hpp): a request checked and sized, auto's pilots, and the
// run of a resolved configuration by its sampler table row's runner (run(), run_part()). The one
// file of the mcmc room that includes the sampler rooms.
#include "flymc/mcmc/front_door.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/model_table.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "run/run_start.hpp"
#include "run/violations.hpp"

namespace flymc {

SamplePlan plan_sample(const SampleRequest& req) {
  SamplePlan plan;
  plan.cfg = req.cfg;
  plan.given = req.given;
  plan.checkpointed = req.checkpointed;
  check_model_reads(plan.cfg.model, plan.given);
  if (plan.automatic())
    auto_readers(plan.given, plan.restriction);
  else
    check_read_by(plan.cfg.algo, plan.given);
  if (req.checkpointed && !can_checkpoint(plan.cfg.algo))
    throw ConfigError(std::string("--algo ") + to_string(plan.cfg.algo) +
                      " cannot checkpoint or resume yet: leave out --checkpoint-every");
  size_run_length(plan.cfg, req.iters_given, req.ess_given);
  if (plan.cfg.max_seconds > 0.0 && plan.cfg.ess <= 0.0)
    throw UsageError(
        "--max-seconds limits a run to an ESS target, and this run has none (--iters "
        "alone asks for exactly that many iterations): give --ess N too");
  plan.cfg.validate();
  check_model_fits(plan.cfg);
  return plan;
}

AlgoChoice choose_for(const SamplePlan& plan, const std::shared_ptr<const Dataset>& data) {
  AutoOptions opt;
  opt.checkpointed = plan.checkpointed;
  opt.given = plan.given;
  return choose_algo(plan.cfg, data, opt);
}

std::string choice_message(const AlgoChoice& choice) {
  const RunConfig& c = choice.best().config;
  return std::to_string(choice.chosen) + " " + (c.step_size ? number_text(*c.step_size) : "-") +
         " " + (c.pcn_rho ? number_text(*c.pcn_rho) : "-") + " " + std::to_string(c.warmup) + " " +
         number_text(c.max_seconds) + " " + number_text(choice.predicted_speedup);
}

RunConfig chosen_config(const SamplePlan& plan, const Dataset& data, const std::string& message,
                        double* speedup) {
  std::istringstream in(message);
  std::size_t chosen = 0;
  std::string step, rho, seconds, gain;
  long warmup = 0;
  if (!(in >> chosen >> step >> rho >> warmup >> seconds >> gain))
    throw std::invalid_argument("not a choice message: '" + message + "'");
  RunConfig cfg = auto_candidates(plan.cfg, data, plan.checkpointed, plan.given).at(chosen).config;
  if (step != "-") cfg.step_size = std::stod(step);
  if (rho != "-") cfg.pcn_rho = std::stod(rho);
  cfg.warmup = warmup;
  cfg.max_seconds = std::stod(seconds);
  if (speedup) *speedup = std::stod(gain);
  return cfg;
}

void add_pilots_phase(RunResult& r, const AlgoChoice& choice) {
  r.setup_phases.insert(r.setup_phases.begin(), SetupPhase{"auto pilots", choice.pilot_seconds});
  r.auto_chosen = choice.best().name;
}

// The runner per sampler kind, which the sampler table names.
RunResult run_theta_kernel_request(const RunRequest& r) {
  return model_info(r.cfg.model).runner(r);
}
namespace {

/// The data as the run's model sees them: with --intercept, a column of ones first (once).
std::shared_ptr<const Dataset> run_data(const RunConfig& cfg, std::shared_ptr<const Dataset> data) {
  if (!cfg.intercept || !data || data->has_intercept()) return data;
  return with_intercept(*data);
}

/// run() and run_part(): checks, then the sampler family's or the model's runner.
RunResult dispatch(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                   const SinkFactory& sinks, Progress* progress,
                   const CheckpointOptions* checkpoint, const FaultInjection& faults,
                   const RunPart* part, const Precomputed& pre) {
  data = run_data(cfg, std::move(data));
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
    check_model_fits(cfg, data->shard() != nullptr, data->has_row_extras());
    check_trials(cfg, *data);
    // Scalable MH's and FlyMC's iterations go across a sharded data set's processes
    // (docs/mpi.md); the other samplers' do not yet (a chain would sum only its own process's
    // rows), except regular MCMC where the likelihood reads only collapsed sums.
    if (data->shard() != nullptr && (!runs_on_shards(cfg) || part != nullptr))
      throw ConfigError(data->source() + ": of the samplers, only " + shard_samplers_text() +
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
  RunResult r =
      runner(RunRequest{cfg, std::move(data), sinks, progress, checkpoint, faults, part, pre});
  detail::mark_violations(r);
  return r;
}

}  // namespace

RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data, const SinkFactory& sinks,
              Progress* progress, const CheckpointOptions* checkpoint, const FaultInjection& faults,
              const Precomputed& pre) {
  if (cfg.algo != Algo::automatic)
    return dispatch(cfg, std::move(data), sinks, progress, checkpoint, faults, nullptr, pre);
  // --algo auto: through the front door, with no option marked as given.
  if (checkpoint != nullptr && checkpoint->resume)
    throw ConfigError(
        "--algo auto cannot resume: its pilots are not checkpointed; resume with the "
        "configuration the run chose (RunResult::config, or the checkpoint's)");
  cfg.validate();
  if (!data) throw DataError("no data");
  check_trials(cfg, *data);
  data = run_data(cfg, std::move(data));
  SamplePlan plan;
  plan.cfg = cfg;
  plan.checkpointed = checkpoint != nullptr && checkpoint->store != nullptr;
  return sample(plan, std::move(data), sinks, progress, checkpoint, faults).run;
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

RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
              const std::shared_ptr<const PositiveGlobalFamily>& family, const SinkFactory& sinks,
              Progress* progress, const CheckpointOptions* checkpoint) {
  if (!family) throw ConfigError("flymc::run: the global family is null");
  RunConfig c = cfg;
  c.model = ModelKind::custom;
  c.family = nullptr;
  c.global_family = family;
  return run(c, std::move(data), sinks, progress, checkpoint);
}

RunResult run_part(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                   const SinkFactory& sinks, Progress* progress,
                   const CheckpointOptions* checkpoint, const RunPart& part,
                   const FaultInjection& faults, const Precomputed& pre) {
  return dispatch(cfg, std::move(data), sinks, progress, checkpoint, faults, &part, pre);
}

Sampled sample(const SamplePlan& plan, std::shared_ptr<const Dataset> data,
               const SinkFactory& sinks, Progress* progress, const CheckpointOptions* checkpoint,
               const FaultInjection& faults) {
  Sampled out;
  if (!plan.automatic()) {
    out.run = run(plan.cfg, std::move(data), sinks, progress, checkpoint, faults);
    return out;
  }
  if (!data) throw DataError("no data");
  out.choice = choose_for(plan, data);
  out.run = dispatch(out.choice->best().config, std::move(data), sinks, progress, checkpoint,
                     faults, nullptr, Precomputed{out.choice->map, out.choice->cache});
  add_pilots_phase(out.run, *out.choice);
  return out;
}

}  // namespace flymc
