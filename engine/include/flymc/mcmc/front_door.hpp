#pragma once
/// @file front_door.hpp
/// One front door for every caller (the command line, Python's flymc.sample(), a library user):
/// the options as given become a checked, sized plan before any data are read (plan_sample),
/// then sample() runs it, `--algo auto`'s pilots first, and returns the run with auto's choice.
/// summary.json and Python's Result.run are both written from that pair (io/run_record.hpp).
///
///     flymc::SampleRequest req;
///     req.cfg.model = flymc::ModelKind::logistic;         // --algo auto --ess 1000 by default
///     const flymc::SamplePlan plan = flymc::plan_sample(req);
///     const flymc::Sampled s = flymc::sample(plan, data);  // s.run, s.choice
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc {

/// What a caller asks for.
struct SampleRequest {
  RunConfig cfg;  ///< the options as given; cfg.algo may be Algo::automatic (the default)
  /// The run options the caller set, --algo aside (command-line options given, Python keywords
  /// not at their defaults): each must be read by the sampler, and under auto each restricts
  /// the candidates to the samplers that read it, so that none is silently ignored.
  std::vector<const OptionInfo*> given;
  /// The run's length rule (size_run_length): --iters alone asks for exactly that many
  /// iterations; otherwise the run goes to an ESS target.
  bool iters_given = false, ess_given = false;
  bool checkpointed = false;  ///< the run will checkpoint (auto keeps the samplers that can)
};

/// A request checked and sized: what sample() runs.
struct SamplePlan {
  RunConfig cfg;                         ///< validated, its length sized
  std::vector<const OptionInfo*> given;  ///< as requested
  std::string restriction;  ///< auto: the given options that restrict its candidates ("" if none)
  bool checkpointed = false;
  bool automatic() const noexcept { return cfg.algo == Algo::automatic; }
};

/// Checks a request before any data are read: every given option is read by the model and the
/// sampler (or, under auto, restricts its candidates), the run's length (size_run_length), the
/// configuration (RunConfig::validate) and the model's fit with the sampler (check_model_fits).
/// @throw UsageError, ConfigError naming the option.
SamplePlan plan_sample(const SampleRequest& req);

/// `--algo auto`'s pilots on `data` for `plan` (choose_algo with the plan's given options and
/// checkpointing). The chosen candidate's config is the run to make.
AlgoChoice choose_for(const SamplePlan& plan, const std::shared_ptr<const Dataset>& data);

/// Auto's choice as one line of text, for the processes of a job that did not run the pilots: the
/// chosen candidate's index, what its run takes over from its pilot (step size, ρ, warm-up, the
/// time left) and the predicted speedup, each read back exactly. The caller carries it (the CLI
/// over MPI: the engine core has no MPI).
std::string choice_message(const AlgoChoice& choice);

/// What the leader chose, on a process that did not run the pilots: the run `message`
/// (choice_message) names for `plan` on `data`, the same config as the leader's (the candidates
/// are the same everywhere). `speedup` (if non-null) gets the predicted speedup.
/// @throw std::invalid_argument for a message choice_message() did not write.
RunConfig chosen_config(const SamplePlan& plan, const Dataset& data, const std::string& message,
                        double* speedup = nullptr);

/// The chosen run's setup phases begin with the pilots' ("auto pilots").
void add_pilots_phase(RunResult& r, const AlgoChoice& choice);

/// A run and, for `--algo auto`, the choice its pilots made.
struct Sampled {
  RunResult run;
  std::optional<AlgoChoice> choice;
};

/// Runs `plan` on `data` in this process: auto's pilots first when the plan's algorithm is
/// automatic, then the run (with their MAP fit and set-up). `sinks`, `progress`, `checkpoint`
/// and `faults` are run()'s.
Sampled sample(const SamplePlan& plan, std::shared_ptr<const Dataset> data,
               const SinkFactory& sinks = {}, Progress* progress = nullptr,
               const CheckpointOptions* checkpoint = nullptr, const FaultInjection& faults = {});

}  // namespace flymc
