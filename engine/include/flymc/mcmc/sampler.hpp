#pragma once
/// @file sampler.hpp
/// Running several independent chains of FlyMC or regular MCMC concurrently (oneTBB, one task per
/// chain). Every chain's random stream is made up front from (seed, chain_id), and within-chain
/// reductions are deterministic, so the same seed gives bit-identical draws at any thread count.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/profile.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/ess_target.hpp"
#include "flymc/mcmc/state_store.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// Receives one chain's output as it is produced (e.g. a Stan CSV file). Called only from that
/// chain's task; one sink per chain.
class DrawSink {
 public:
  virtual ~DrawSink() = default;
  /// Before the first row: the column names (sampler columns end in "__").
  virtual void begin(const std::vector<std::string>& columns) = 0;
  /// After warm-up: the frozen step size and the inverse metric: its diagonal, or with `dense`
  /// all of it row by row.
  virtual void adaptation(double step_size, const std::vector<double>& inv_metric, bool dense) = 0;
  /// One kept draw, values in column order.
  virtual void row(const std::vector<double>& values) = 0;
  /// At the end: the chain's warm-up and sampling seconds and its counters (bound checks).
  virtual void end(double warmup_seconds, double sampling_seconds, const Counters& counters) = 0;
  /// Piecewise-deterministic samplers with RunConfig::save_events: a point where the path
  /// starts, changes direction or ends, at path time `time`, position `theta` (p entries, in θ).
  /// `kind` is a PathEvent; `coordinate` the flipped coordinate (1-based) of a Zig-Zag flip,
  /// else 0. Called before end(). The default ignores it.
  virtual void path_event(double time, int kind, int coordinate, const double* theta,
                          std::size_t p) {
    (void)time, (void)kind, (void)coordinate, (void)theta, (void)p;
  }
  /// Checkpoints: makes everything written so far durable and returns the position to record
  /// with the chain's state (for a file, its byte length). The default returns 0.
  virtual std::uint64_t sync() { return 0; }
  /// Resuming, instead of begin(): cuts the output back to `position` (a value sync()
  /// returned), continues after it, and returns the rows written before it, each as passed to
  /// row(). `columns` are the columns begin() was given. The default throws ConfigError.
  virtual std::vector<std::vector<double>> resume(const std::vector<std::string>& columns,
                                                  std::uint64_t position);
};
/// The kinds of DrawSink::path_event (the events file's kind__ column, docs/output.md).
enum PathEvent : int {
  kPathStart = 0,
  kPathBounce = 1,
  kPathRefresh = 2,
  kPathFlip = 3,
  kPathEnd = 4
};
/// Makes the sink of chain `chain_id` (1-based), or returns nullptr for none.
using SinkFactory = std::function<std::unique_ptr<DrawSink>(int chain_id)>;

/// Checkpointing of a run into a StateStore (state_store.hpp; io/checkpoint.hpp's
/// checkpoint_directory() keeps one file per state in a directory). Each chain saves its complete
/// state every `every` iterations (warm-up included) and when it stops, after making its draw
/// sink durable; a resumed run continues every chain from its latest state and gives
/// bit-identical draws to an uninterrupted run (at any thread count). Saving does not touch the
/// random streams, so the draws do not depend on `every` either. Off when `store` is null; with
/// it off, a run costs one predictable branch per iteration more.
///
/// Thread safety: read by every chain's task; only `*stop` may change during a run.
struct CheckpointOptions {
  std::shared_ptr<StateStore> store;  ///< where the states are kept (null: checkpointing off)
  long every = 0;         ///< K >= 1: each chain saves after every K-th iteration; 0: on stop only
  bool resume = false;    ///< continue from the states in `store`; its manifest must match
  std::string data_arg;   ///< the data file as given, recorded in the manifest (fresh runs)
  std::string data_path;  ///< its absolute path, recorded in the manifest (fresh runs)
  /// Polled by every chain at each iteration boundary; when it becomes true, each chain saves
  /// its state and returns, and the run returns with RunResult::stopped. Set it from a signal
  /// handler (std::atomic<bool> is lock-free).
  const std::atomic<bool>* stop = nullptr;
};

/// One chain's kept draws and statistics.
struct ChainResult {
  int chain_id = 0;
  std::size_t kept = 0;
  std::vector<double> draws;  ///< kept × dim, row-major (dense θ, model.hpp)
  std::vector<double> lp;     ///< log density targeted (log p(θ, z) for FlyMC) per kept draw
  double step_size = 0.0;
  double accept_rate = 0.0;  ///< mean MH acceptance probability over sampling θ-steps
  double bright_mean = 0.0;  ///< mean bright count over sampling iterations
  double batch_mean = 0.0;   ///< batching samplers: mean data per batch over sampling iterations
  std::uint64_t sampling_queries = 0;
  std::uint64_t sampling_divergences = 0;  ///< HMC/NUTS divergences after warm-up
  Counters counters;                       ///< over the whole chain (warm-up and sampling)
  Profile profile;                         ///< phase times, when RunConfig::profile is set
  double warmup_seconds = 0.0, sampling_seconds = 0.0;
  bool stopped = false;  ///< stopped before the end (CheckpointOptions::stop); draws are partial
  /// Piecewise-deterministic samplers: the time average of θ over the sampling part of the
  /// continuous path, integrated exactly along its linear segments (empty for the others).
  std::vector<double> path_mean;
};

/// One phase of a run's set-up (summary.json's run.setup_phases, docs/output.md).
struct SetupPhase {
  std::string name;      ///< read, checks, fingerprint, map, statistics, chains
  double seconds = 0.0;  ///< wall time
  int passes = -1;       ///< passes over all the data rows (-1: not counted)
};

/// Everything a run produced.
struct RunResult {
  RunConfig config;
  std::size_t n = 0, dim = 0;      ///< data rows, and parameters (K·D)
  std::vector<std::string> names;  ///< parameter names (theta.j, or W.k.j for softmax)
  std::vector<ChainResult> chains;
  MapResult map;
  double bound_slack = 0.0;  ///< the slack ε used (RunConfig::bound_slack, resolved if automatic)
  /// The implicit z-update rate q used (RunConfig::q_dark_to_bright, resolved if automatic).
  double q_dark_to_bright = 0.0;
  double setup_seconds = 0.0;  ///< MAP + bound statistics + initial z (wall)
  /// The set-up's phases in order (their seconds add up to about setup_seconds; a resumed run
  /// has only this session's).
  std::vector<SetupPhase> setup_phases;
  double warmup_seconds = 0.0;    ///< wall time of the chains' parallel region spent in warm-up
  double sampling_seconds = 0.0;  ///< ... and in sampling (apportioned by the chains' own timers)
  bool stopped = false;           ///< stopped on request: chains are partial, resume to finish
  /// Piecewise-deterministic samplers: the path time per draw Δ and the refresh rate λ_ref used
  /// (resolved when automatic; NaN for the other algorithms, and λ_ref for Zig-Zag).
  double pdmp_spacing = std::numeric_limits<double>::quiet_NaN();
  double refresh_rate = std::numeric_limits<double>::quiet_NaN();
  /// A run to an ESS target (RunConfig::ess; config.iters is then the sampling iterations run):
  /// whether the last block's end met it, whether --max-seconds ended the run first, and what
  /// that check found.
  bool target_reached = false;
  /// A run of Algo::automatic: the candidate its pilots chose (choose_algo.hpp), "" otherwise;
  /// config then holds the chosen configuration, setup_phases begins with "auto pilots".
  std::string auto_chosen;
  bool target_timed_out = false;
  TargetStatus target;
  std::vector<std::string> warnings;  ///< for the user, e.g. a resume on other SIMD kernels
  double queries_per_iter() const;    ///< sampling queries per iteration, mean over chains
  double bright_mean() const;
  double accept_rate() const;
  /// Samplers that batch the data (uses_batches(): minibatch MH, SGLD, lipSBPS, SBPS, pSBPS):
  /// mean data per batch over the sampling iterations (NaN otherwise).
  double batch_mean() const;
  std::uint64_t bound_violations() const;
  /// Whether the draws are exact: an exact sampler (is_exact) whose bounds held throughout (a
  /// run with RunConfig::on_bound_violation = finish may end with violations; `warnings` then
  /// says so).
  bool exact() const;
  std::uint64_t bound_clamps() const;
  std::uint64_t nonfinite() const;
  std::uint64_t slice_failures() const;
  /// HMC/NUTS divergences after warm-up (warm-up ones, while the step size adapts, are expected).
  std::uint64_t divergences() const;
  /// Kept draws of coordinate j as chains × iterations (for diagnostics).
  std::vector<std::vector<double>> coordinate(std::size_t j) const;
  std::vector<std::vector<double>> lp() const;
  /// Piecewise-deterministic samplers: the chains' path means averaged (every chain runs the
  /// same path time); empty for the other algorithms.
  std::vector<double> path_mean() const;
};

/// One chain's live figures for a progress display. The chain's task publishes them every few
/// iterations (relaxed stores: a reader may see a slightly older value of one field than of
/// another, which a display tolerates); any thread may read them. Padded to a cache line so that
/// chains publishing at once do not contend.
struct alignas(64) ChainGauge {
  std::atomic<long> done{0};            ///< iterations finished, warm-up included
  std::atomic<double> accept_sum{0.0};  ///< acceptance probabilities summed in this session
  std::atomic<long> accept_steps{0};    ///< ... over this many steps (0: no acceptance)
  std::atomic<double> bright{std::numeric_limits<double>::quiet_NaN()};  ///< FlyMC: bright now

  /// Iterations finished only (samplers without acceptance or bright set).
  void publish(long iterations) noexcept { done.store(iterations, std::memory_order_relaxed); }
  void publish(long iterations, double accepted, long steps, double bright_now) noexcept {
    accept_sum.store(accepted, std::memory_order_relaxed);
    accept_steps.store(steps, std::memory_order_relaxed);
    bright.store(bright_now, std::memory_order_relaxed);
    done.store(iterations, std::memory_order_relaxed);
  }
};

/// Progress reporting: what a caller may poll from another thread while run() works.
struct Progress {
  std::vector<ChainGauge> chains;           ///< per chain of the run, chain k at index k - 1
  std::atomic<bool> chains_started{false};  ///< set-up (θ_MAP, bounds) is over
  /// The set-up phase under way (SetupPhase::name's constant string; null before the first).
  std::atomic<const char*> setup_phase{nullptr};
  /// A run to an ESS target (RunConfig::ess): the iteration (warm-up included) at which the
  /// current block ends, and the smaller of the min bulk and min tail ESS at the last block's
  /// end (NaN before the first).
  std::atomic<long> block_end{0};
  std::atomic<double> ess_now{std::numeric_limits<double>::quiet_NaN()};
  explicit Progress(int nchains) : chains(static_cast<std::size_t>(nchains)) {}
};

/// Faults a run injects on request, so that its callers can test how they handle them: a stop
/// at a given iteration, with or without saving (a clean stop, or a kill), and an invalid bound
/// whose violations the run must detect and report. The command line's hidden
/// `--test-bound-excess` sets bound_excess; a default FaultInjection injects nothing.
struct FaultInjection {
  /// Every chain stops when it reaches this iteration (-1: never), as if CheckpointOptions::stop
  /// were raised there. Needs checkpointing (the stop is a checkpoint's business).
  long stop_at = -1;
  /// With stop_at: the chains save nothing when they stop, as if the process had been killed.
  bool stop_without_saving = false;
  /// Raises every log B_n by this much (> 0): an invalid bound, so that the detection and
  /// reporting of bound violations can be tested.
  double bound_excess = 0.0;
};

namespace detail {
struct SmhStatistics;
}

/// Set-up one run builds that a later run may take over (`--algo auto`: its SMH pilot's
/// expansion and bounds go to the SMH run it chooses). Each entry records what it was built from
/// (data set, likelihood, prior, MAP fit), and a run takes it only if that is its own; otherwise
/// it builds its own and leaves it here. For runs made one after another, not concurrently.
struct SetupCache {
  std::shared_ptr<const detail::SmhStatistics> smh;  ///< SMH's expansion at θ̂ and its bounds
};

/// Work a run may take over from an earlier run on the same data set and model options (model,
/// prior, likelihood parameters) instead of repeating it: `--algo auto` hands the MAP fit of its
/// first full-data run to the pilots after it and to the run it chooses, each of which would
/// otherwise read all the data several times to find the same θ_MAP. The caller vouches for the
/// match; run() checks the dimension. The draws are those of a run that found it itself.
struct Precomputed {
  std::shared_ptr<const MapResult> map;  ///< θ_MAP and the Laplace covariance (null: find them)
  std::shared_ptr<SetupCache> cache;     ///< set-up to take over or to leave (null: neither)
};

struct RunPart;
/// Everything one run of a resolved configuration is given: the arguments of run() and
/// run_part(), as the sampler table's runners (samplers.hpp) take them.
struct RunRequest {
  const RunConfig& cfg;
  std::shared_ptr<const Dataset> data;
  const SinkFactory& sinks;
  Progress* progress = nullptr;
  const CheckpointOptions* checkpoint = nullptr;
  const FaultInjection& faults;
  const RunPart* part = nullptr;  ///< null: the whole run in this process
  const Precomputed& pre;
};

/// Runs `cfg` (its model, algorithm and θ-kernel) over `data`; with Algo::automatic (the
/// default) the pilots of choose_algo() pick the algorithm first. Throws ConfigError for an invalid
/// config, DataError for data the model cannot take (labels, non-finite features).
/// @param sinks optional per-chain draw sinks (files); @param progress optional counters.
/// @param checkpoint optional checkpointing (needs `sinks`: the draws before a checkpoint are
/// read back from them on resume).
/// @param faults faults to inject (FaultInjection; none by default).
/// @param pre set-up work already done (Precomputed; none by default). A resumed run takes its
/// MAP fit from the checkpoint instead.
/// @throw ConfigError for a missing, corrupt or mismatching checkpoint on resume, DataError if
/// the data differ from the checkpointed run's, ConfigError for a negative or non-finite
/// faults.bound_excess; BoundViolationError when a chain finds the model's bound violated (a
/// wrong constant) and cfg.on_bound_violation is OnViolation::stop (the default).
RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
              const SinkFactory& sinks = {}, Progress* progress = nullptr,
              const CheckpointOptions* checkpoint = nullptr, const FaultInjection& faults = {},
              const Precomputed& pre = {});

/// Runs a single-index model given in code (models/family.hpp; docs/models.md): run() with
/// cfg.model = ModelKind::custom and cfg.family = `family`. Every exact sampler whose needs the
/// family's constants meet can run it (model_needs.hpp), `--algo auto` among them.
RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
              const std::shared_ptr<const SingleIndexFamily>& family, const SinkFactory& sinks = {},
              Progress* progress = nullptr, const CheckpointOptions* checkpoint = nullptr);

/// Runs a model given in code with a positive global parameter (models/global_family.hpp,
/// models/global_model.hpp; docs/models.md, "A global parameter of your own"): run() with
/// cfg.model = ModelKind::custom and cfg.global_family = `family`. Regular MCMC and scalable MH of
/// the second order run it (sharded data and `--algo auto` included); FlyMC refuses it.
RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
              const std::shared_ptr<const PositiveGlobalFamily>& family,
              const SinkFactory& sinks = {}, Progress* progress = nullptr,
              const CheckpointOptions* checkpoint = nullptr);

/// run() with the model cfg.model, kept for callers of the first releases (logistic regression
/// was the only model then).
inline RunResult run_logistic(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                              const SinkFactory& sinks = {}, Progress* progress = nullptr,
                              const CheckpointOptions* checkpoint = nullptr) {
  return run(cfg, std::move(data), sinks, progress, checkpoint);
}

}  // namespace flymc
