// `flymc sample`: run chains, write DIR/chain-<k>.csv and DIR/summary.json, print the summary.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "commands.hpp"
#include "flymc/core/atomic_file.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/io/output.hpp"
#include "flymc/io/run_dir.hpp"
#include "flymc/io/run_record.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/front_door.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "job_group.hpp"
#include "progress_line.hpp"
#include "run_options.hpp"
#include "table.hpp"

namespace flymc::cli {
namespace {

struct SampleOptions {
  std::string data, out = "flymc-out", resume;
  RunConfig cfg;
  long checkpoint_every = 0;
  bool quiet = false;
  bool shard_data = false;  // --shard-data: under MPI, each process reads only its rows
  bool auto_algo = true;    // --algo auto (the default): choose_algo() picks the sampler once the
                            // data are read
  CLI::App* app = nullptr;
  FaultInjection faults;  // --test-bound-excess (hidden)
};

/// Exit status when SIGINT or SIGTERM stopped the run after its chains saved their states:
/// EX_TEMPFAIL ("try again later"): `flymc sample --resume DIR` continues.
constexpr int kExitStopped = 75;

/// A JSON number, or null for NaN/inf (JSON has no spelling for them).
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

// Set by the signal handler, polled by the chains at iteration boundaries (lock-free atomics are
// async-signal-safe).
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) {
  if (g_stop.load()) {  // the second signal: give up at once, as the default action would
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal.store(sig);
  g_stop.store(true);
  static const char msg[] =
      "\nflymc: stopping: the chains save their state at the next iteration boundary "
      "(signal again to abort at once)\n";
  const ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

/// SIGINT and SIGTERM handlers for the lifetime of the object (checkpointed runs only).
class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

/// Every run option as given (automatic ones unset: null), under RunConfig's field names.
nlohmann::json config_json(const RunConfig& cfg) {
  nlohmann::json j = nlohmann::json::object();
  for_each_option([&](const OptionInfo& o) {
    std::visit(
        [&](const auto& v) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, std::monostate>)
            j[o.key] = nullptr;
          else
            j[o.key] = v;
        },
        get_value(cfg, o));
  });
  return j;
}

/// A run record's value as JSON (run_record.hpp: a number that is not finite is already null).
nlohmann::json record_json(const RecordValue& v) {
  using K = RecordValue::Kind;
  switch (v.kind) {
    case K::boolean:
      return v.boolean;
    case K::integer:
      return v.integer;
    case K::number:
      return v.number;
    case K::text:
      return v.text;
    case K::numbers:
      return v.numbers;
    case K::texts:
      return v.texts;
    case K::records: {
      nlohmann::json out = nlohmann::json::array();
      for (const Record& r : v.records) {
        nlohmann::json o = nlohmann::json::object();
        for (const auto& [name, value] : r) o[name] = record_json(value);
        out.push_back(std::move(o));
      }
      return out;
    }
    case K::null:
      break;
  }
  return nullptr;
}

void write_summary_json(const std::string& path, const RunResult& r,
                        const std::vector<NamedSummary>& params,
                        const std::optional<AlgoChoice>& choice) {
  nlohmann::json j;
  j["params"] = nlohmann::json::array();
  for (const auto& p : params) {
    const auto& s = p.s;
    j["params"].push_back({{"name", p.name},
                           {"mean", num(s.mean)},
                           {"sd", num(s.sd)},
                           {"mcse_mean", num(s.mcse_mean)},
                           {"q5", num(s.q5)},
                           {"q50", num(s.q50)},
                           {"q95", num(s.q95)},
                           {"ess_bulk", num(s.ess_bulk)},
                           {"ess_tail", num(s.ess_tail)},
                           {"rhat", num(s.rhat)}});
  }
  // The run's figures as Python's Result.run has them: one record (flymc/io/run_record.hpp).
  j["run"] = nlohmann::json::object();
  for (const auto& [name, value] : run_record(r, params, choice ? &*choice : nullptr))
    j["run"][name] = record_json(value);
  j["config"] = config_json(r.config);
  write_text_atomic(path, j.dump(2) + '\n');
}

/// Fails with exit code 73 (EX_CANTCREAT) unless a file can be created in `dir`: checked before
/// the data are read, not when the chains open their files after the MAP search.
void check_writable(const std::string& dir) {
  const std::string probe = dir + "/.flymc-write-test-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (f == nullptr)
    throw Error(dir + ": cannot create files in the output directory: " + std::strerror(errno), 73);
  std::fclose(f);
  std::remove(probe.c_str());
}

/// Options `--resume DIR` may be combined with; everything else comes from the checkpoint.
bool allowed_with_resume(const std::string& name) {
  return name == "--resume" || name == "--threads" || name == "--quiet" ||
         name == "--checkpoint-every" || name == "--shard-data" || name == "--max-seconds" ||
         name == "--help";
}

/// The run options given on the command line, --algo aside (table entries, options.hpp).
std::vector<const OptionInfo*> given_options(const SampleOptions& o) {
  std::vector<const OptionInfo*> out;
  for (const CLI::Option* opt : o.app->get_options()) {
    if (opt->count() == 0 || opt->get_name().rfind("--", 0) != 0) continue;
    const OptionInfo* info = find_option(opt->get_name().substr(2));
    if (info != nullptr && std::string_view(info->key) != "algo") out.push_back(info);
  }
  return out;
}

/// What one `flymc sample` invocation runs: the configuration (from the options, or from the
/// checkpoint when resuming), where it writes, and its data.
struct SampleJob {
  RunConfig cfg;
  SamplePlan plan;  // a fresh run's options as checked and sized by the front door
  std::string out, data_arg, data_path;
  bool resume = false;
  long every = 0;  // checkpoint every K iterations; 0: no periodic checkpoints
};

/// A resumed run: its directory must hold a checkpoint, whose configuration and data it takes.
/// Only the options of allowed_with_resume() may be given. Called with the directory locked.
void load_resumed_job(const SampleOptions& o, bool every_given, SampleJob& job) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string ckdir = job.out + "/checkpoint";
  if (!fs::is_directory(ckdir, ec))
    throw ConfigError(job.out +
                      ": no checkpoint to resume (was the run started with "
                      "--checkpoint-every?)");
  const RunManifest manifest = load_run_manifest(ckdir);
  job.cfg = manifest.config;
  job.cfg.threads = o.cfg.threads;
  if (o.app->get_option("--max-seconds")->count() > 0) job.cfg.max_seconds = o.cfg.max_seconds;
  job.data_arg = manifest.data_arg;
  job.data_path = manifest.data_path;
  if (!every_given) job.every = manifest.checkpoint_every;
}

/// Checks the options, takes the output directory's lock (before anything in it is touched),
/// then loads the checkpoint to resume, or clears an earlier run's files for a fresh one. Only
/// the directory's `owner` locks and clears it (the leader of a group of processes, which calls
/// this first).
SampleJob prepare_job(const SampleOptions& o, std::optional<RunDirLock>& lock, bool owner) {
  SampleJob job;
  job.cfg = o.cfg;
  job.out = o.out;
  job.data_arg = o.data;
  job.resume = !o.resume.empty();
  job.every = o.checkpoint_every;
  const bool every_given = o.app->get_option("--checkpoint-every")->count() > 0;
  if (every_given && !can_checkpoint(job.cfg.algo))
    throw ConfigError(std::string("--algo ") + to_string(job.cfg.algo) +
                      " cannot checkpoint or resume yet: leave out --checkpoint-every");
  if (every_given && job.every < 1)
    throw ConfigError("--checkpoint-every must be >= 1 (iterations), got " +
                      std::to_string(job.every));
  if (job.resume) {
    for (const CLI::Option* opt : o.app->get_options())
      if (opt->count() > 0 && !allowed_with_resume(opt->get_name()))
        throw UsageError(
            opt->get_name() +
            " cannot be given with --resume: the run's options come from its "
            "checkpoint (only --threads, --checkpoint-every, --quiet and --shard-data may change)");
    job.out = o.resume;
    std::error_code ec;
    if (!std::filesystem::is_directory(job.out, ec))
      throw ConfigError(job.out + ": no such run directory to resume");
    if (owner) lock.emplace(job.out);
    load_resumed_job(o, every_given, job);
  } else {
    // Every option is checked before any work: values, then the output directory, then the data.
    if (o.data.empty()) throw UsageError("--data is required (or --resume DIR)");
    if (job.out.empty()) throw UsageError("--out must not be empty");
    job.data_path = o.data;
    // No option is silently ignored: the chosen sampler reads each one, and under auto each
    // restricts the candidates to the samplers that read it (the front door's checks).
    SampleRequest req;
    req.cfg = job.cfg;
    req.given = given_options(o);
    req.iters_given = o.app->get_option("--iters")->count() > 0;
    req.ess_given = o.app->get_option("--ess")->count() > 0;
    req.checkpointed = job.every > 0;
    job.plan = plan_sample(req);
    job.cfg = job.plan.cfg;
    if (owner) {
      lock.emplace(job.out);
      clear_run_outputs(job.out);  // an earlier run's files: replaced, never mixed
    }
  }
  job.cfg.validate();
  check_model_fits(job.cfg);
  check_writable(job.out);
  return job;
}

/// The checkpointing of a job, or none (nullopt) when it neither resumes nor checkpoints.
std::optional<CheckpointOptions> checkpoint_options(const SampleJob& job) {
  if (!job.resume && job.every <= 0) return std::nullopt;
  CheckpointOptions ck;
  ck.store = checkpoint_directory(job.out + "/checkpoint");
  ck.every = job.every;
  ck.resume = job.resume;
  ck.stop = &g_stop;
  if (!job.resume) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(job.data_arg, ec);
    ck.data_path = ec ? job.data_arg : abs.lexically_normal().string();
    ck.data_arg = job.data_arg;
  }
  return ck;
}

/// Runs the job, with a progress display on the leader's stderr (polled from its chains' gauges;
/// it ends when the function returns or throws): a live line on a terminal, plain lines in a log.
RunResult run_job(const SampleOptions& o, const JobGroup& group, const SampleJob& job,
                  const SinkFactory& sinks, std::shared_ptr<const Dataset> data,
                  const CheckpointOptions* ck, const Precomputed& pre) {
  const RunConfig& cfg = job.cfg;
  Progress progress(cfg.chains);
  std::optional<ProgressDisplay> display;
  if (!o.quiet && group.leader()) {
    // The leader sees its own chains' gauges: its block, the first and largest (deal_chains),
    // or every chain on a shard of the data.
    const int shown =
        data->shard() != nullptr ? cfg.chains : (cfg.chains + group.size() - 1) / group.size();
    const ProgressPlan plan{cfg.warmup * shown, (cfg.warmup + cfg.iters) * shown, cfg.ess};
    const auto mode =
        isatty(STDERR_FILENO) ? ProgressDisplay::Mode::live : ProgressDisplay::Mode::plain;
    display.emplace(progress, std::size_t(shown), plan, mode, stderr);
  }
  std::optional<StopSignals> signals;
  if (ck != nullptr) signals.emplace();
  return group.run(cfg, std::move(data), sinks, &progress, ck, o.faults, pre);
}

/// "1000+5000 iterations", or for a run to an ESS target "1000 warm-up iterations, then blocks
/// until bulk and tail ESS >= 1000 and R-hat <= 1.01".
std::string run_length_text(const RunConfig& cfg) {
  char buf[256];
  if (cfg.ess <= 0.0) {
    std::snprintf(buf, sizeof buf, "%ld+%ld iterations", cfg.warmup, cfg.iters);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%ld warm-up iterations, then blocks until every bulk and tail ESS >= %.0f and "
                "R-hat <= %.3g (at most %ld iterations%s)",
                cfg.warmup, cfg.ess, cfg.max_rhat, cfg.iters,
                cfg.max_seconds > 0.0 ? (", " + number_text(cfg.max_seconds) + " s").c_str() : "");
  return buf;
}

/// The summary table and the run's figures on stdout.
void print_report(const RunResult& r, const std::vector<NamedSummary>& params,
                  const std::string& out) {
  print_summary_table(stdout, params);
  char flymc_extra[128] = "";  // the automatic choices made at set-up
  if (r.config.algo == Algo::flymc && r.config.z == ZUpdate::implicit)
    std::snprintf(flymc_extra, sizeof flymc_extra, ", bound slack %.3g, q %.3g", r.bound_slack,
                  r.q_dark_to_bright);
  else if (r.config.algo == Algo::flymc)
    std::snprintf(flymc_extra, sizeof flymc_extra, ", bound slack %.3g", r.bound_slack);
  if (uses_batches(r.config.algo))
    std::snprintf(flymc_extra, sizeof flymc_extra, ", %.1f data per batch on average%s",
                  r.batch_mean(), is_exact(r.config.algo) ? "" : " (approximate)");
  char bright[64] = "";  // only FlyMC and regular MCMC keep a bright set
  if (uses_theta_kernel(r.config.algo))
    std::snprintf(bright, sizeof bright, ", %.1f bright on average", r.bright_mean());
  std::printf(
      "\nset-up %.3f s, warm-up %.3f s, sampling %.3f s; %.1f likelihood queries/iter "
      "(%.2f%% of N)%s, acceptance %.3f%s\n",
      r.setup_seconds, r.warmup_seconds, r.sampling_seconds, r.queries_per_iter(),
      100.0 * r.queries_per_iter() / double(r.n), bright, r.accept_rate(), flymc_extra);
  if (is_pdmp(r.config.algo)) {
    std::printf("path time per draw %.4g, refresh rate %.4g; path means (exact along segments):",
                r.pdmp_spacing, r.refresh_rate);
    for (double m : r.path_mean()) std::printf(" %.4g", m);
    std::printf("\n");
  }
  std::string phases;
  for (const SetupPhase& p : r.setup_phases) {
    char one[96];
    std::snprintf(one, sizeof one, "%s%s %.3f s", phases.empty() ? "" : ", ", p.name.c_str(),
                  p.seconds);
    phases += one;
    if (p.passes >= 0)
      phases += " (" + std::to_string(p.passes) + (p.passes == 1 ? " pass)" : " passes)");
  }
  if (!phases.empty()) std::printf("set-up phases: %s\n", phases.c_str());
  std::printf("draws: %s/chain-{1..%d}.csv, summary: %s/summary.json\n", out.c_str(),
              r.config.chains, out.c_str());
}

/// Warnings go to stderr even with --quiet: convergence (Vehtari et al. 2021 ask for R-hat <
/// 1.01 and a bulk ESS of at least 100 per chain), and anything that makes draws inexact or
/// suspicious.
void print_warnings(const RunResult& r, const std::vector<NamedSummary>& params) {
  const RunConfig& cfg = r.config;
  double rhat = 0.0, ess = std::numeric_limits<double>::infinity();
  for (const auto& p : params) {
    rhat = std::max(rhat, std::isnan(p.s.rhat) ? 0.0 : p.s.rhat);
    ess = std::min(ess, std::isnan(p.s.ess_bulk) ? 0.0 : p.s.ess_bulk);
  }
  if (rhat > 1.01 || ess < 100.0 * cfg.chains)
    std::fprintf(stderr,
                 "flymc: warning: the chains have not mixed enough for reliable estimates (max "
                 "R-hat %.3f, min bulk ESS %.0f; aim for R-hat < 1.01 and ESS >= 100 per "
                 "chain): run more iterations (--iters, --warmup)%s\n",
                 rhat, ess,
                 cfg.algo == Algo::flymc ? "; FlyMC iterations are cheap but mix more slowly "
                                           "than regular MCMC's"
                                         : "");
  if (!is_exact(cfg.algo))
    std::fprintf(stderr,
                 "flymc: note: --algo %s is approximate: its draws follow an approximation of "
                 "the posterior (docs/math.md), and its R-hat and ESS say nothing of that bias\n",
                 to_string(cfg.algo));
  auto count = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  if (r.bound_violations() > 0 && is_pdmp(cfg.algo) && !is_exact(cfg.algo))
    std::fprintf(stderr,
                 "flymc: note: %llu proposals exceeded --algo %s's adaptive bound (per chain in "
                 "the draw files' end comments and bound_violations__): each biases the path "
                 "slightly (docs/math.md section 7.3)\n",
                 count(r.bound_violations()), to_string(cfg.algo));
  if (r.slice_failures() > 0)
    std::fprintf(stderr,
                 "flymc: warning: %llu slice-sampling updates gave up without finding a point in "
                 "the slice (the chain stayed put; per chain in the draw files' end comments): "
                 "the cached density disagreed with the target, so the draws may not be exact\n",
                 count(r.slice_failures()));
  if (r.divergences() > 0)
    std::fprintf(stderr,
                 "flymc: warning: %llu divergent HMC/NUTS trajectories after warm-up (HMC rejects "
                 "them, NUTS stops building the tree; the draws stay exact, but a higher "
                 "--target-accept mixes better)\n",
                 count(r.divergences()));
  if (r.nonfinite() > 0)
    std::fprintf(stderr, "flymc: warning: %llu proposals rejected for a non-finite density\n",
                 count(r.nonfinite()));
}

/// `v` with `digits` significant digits ("%.3g").
std::string format_g(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

/// --algo auto: runs the pilots and tells the user what they predict.
AlgoChoice choose_job_algo(const SampleOptions& o, const SampleJob& job,
                           const std::shared_ptr<const Dataset>& data) {
  if (!o.quiet)
    std::fprintf(stderr, "flymc: --algo auto: a pilot of every exact sampler that fits ...\n");
  if (!o.quiet && !job.plan.restriction.empty())
    std::fprintf(stderr, "flymc: --algo auto: only the samplers that read %s are candidates\n",
                 job.plan.restriction.c_str());
  const AlgoChoice c = choose_for(job.plan, data);
  if (o.quiet) return c;
  for (const AutoCandidate& a : c.candidates) {
    if (!a.skipped.empty()) {
      std::fprintf(stderr, "  %-22s skipped: %s\n", a.name.c_str(), a.skipped.c_str());
      continue;
    }
    std::fprintf(stderr,
                 "  %-22s predicted %8.3g s, min ESS/s %9.4g  (pilot: %ld iterations on %zu rows, "
                 "min ESS %.3g, %.2f s)%s\n",
                 a.name.c_str(), a.predicted_seconds, a.ess_per_second, a.pilot_iters, a.pilot_rows,
                 a.pilot_ess, a.pilot_seconds, a.rough ? " rough" : "");
  }
  std::string speedup;
  if (c.predicted_speedup > 0.0)
    speedup = " (" + format_g(c.predicted_speedup, 3) + " x the best regular MCMC's ESS/s)";
  std::fprintf(stderr, "flymc: --algo auto chose %s: %s%s; the pilots took %.2f s\n",
               c.best().name.c_str(), c.why.c_str(), speedup.c_str(), c.pilot_seconds);
  if (c.pilots_short)
    std::fprintf(stderr,
                 "flymc: warning: --algo auto's pilots stopped at their time limit with few "
                 "effective draws, so the prediction is rough: compare the two best with longer "
                 "runs\n");
  return c;
}

/// --algo auto: the leader runs the pilots; every process takes its choice, sent as the front
/// door's choice_message (the candidates are the same everywhere, so the index travels, with what
/// the chosen run takes over from its pilot), and the figure its draw files record.
std::optional<AlgoChoice> choose_group_algo(const SampleOptions& o, const JobGroup& group,
                                            SampleJob& job,
                                            const std::shared_ptr<const Dataset>& data,
                                            std::string& speedup_text) {
  std::optional<AlgoChoice> choice;
  group.together([&] {
    if (group.leader()) choice = choose_job_algo(o, job, data);
  });
  double speedup = 0.0;
  job.cfg =
      chosen_config(job.plan, *data,
                    group.from_leader(choice ? choice_message(*choice) : std::string()), &speedup);
  speedup_text = number_text(speedup);
  return choice;
}

/// --shard-data's limits, checked on every process before the data are read (the same options
/// everywhere, so the same error).
void check_shardable(const SampleOptions& o, const SampleJob& job) {
  if ((o.auto_algo && !job.resume) || !runs_on_shards(job.cfg))
    throw ConfigError("--shard-data runs " + shard_samplers_text() +
                      " only: the other samplers' iterations, and the pilots of --algo auto, do "
                      "not go across processes yet");
  check_model_fits(job.cfg, true);
  if (!job.data_path.ends_with(".npy") && !hdf5_location(job.data_path))
    throw ConfigError(
        "--shard-data reads .npy files and HDF5 data sets (each process its own "
        "rows); " +
        job.data_path + " is neither");
}

void sample_job(const SampleOptions& o, const JobGroup& group) {
  std::optional<RunDirLock> lock;  // the leader's, held until the run's files are complete
  SampleJob job;
  group.leader_first([&] { job = prepare_job(o, lock, group.leader()); });
  std::shared_ptr<const Dataset> data;
  const Stopwatch read_clock;
  if (o.shard_data) check_shardable(o, job);
  data = group.load(job.data_path, label_domain(job.cfg.model), o.shard_data, job.cfg.storage,
                    data_columns(job.cfg));
  const double read_seconds = read_clock.seconds();
  std::optional<AlgoChoice> choice;
  std::vector<std::pair<std::string, std::string>> extra = {{"data", job.data_arg}};
  if (o.auto_algo && !job.resume) {
    std::string speedup;
    choice = choose_group_algo(o, group, job, data, speedup);
    extra.emplace_back("algo_auto_predicted_speedup", speedup);
  }
  if (o.faults.bound_excess > 0.0)
    extra.emplace_back("test_bound_excess", number_text(o.faults.bound_excess));
  const SinkFactory sinks = stan_csv_sinks(job.out, job.cfg, extra);
  const std::optional<CheckpointOptions> ck = checkpoint_options(job);
  const RunConfig& cfg = job.cfg;
  if (!o.quiet && group.leader())
    std::fprintf(stderr,
                 "flymc: %s: %zu rows x %zu features; %s %s, %s kernel, %d chains%s, %s%s\n",
                 job.data_path.c_str(), data->total_n(), data->d(), to_string(cfg.model),
                 to_string(cfg.algo), to_string(cfg.kernel), cfg.chains,
                 group.size() > 1 ? (" on " + std::to_string(group.size()) + " processes" +
                                     (data->shard() != nullptr ? ", the rows sharded" : ""))
                                        .c_str()
                                  : "",
                 run_length_text(cfg).c_str(), job.resume ? " (resuming)" : "");
  // The pilots' MAP fit (the leader's: the others take the leader's set-up in any case).
  const Precomputed pre = choice ? Precomputed{choice->map, choice->cache} : Precomputed{};
  RunResult r = run_job(o, group, job, sinks, data, ck ? &*ck : nullptr, pre);
  // From the file to the chains' start: reading the data and the pilots come before run().
  if (choice) add_pilots_phase(r, *choice);
  r.setup_phases.insert(r.setup_phases.begin(), SetupPhase{"read", read_seconds, 1});
  if (!group.leader()) {
    if (r.stopped) throw ExitStatus{kExitStopped};
    return;  // the leader reports the whole run
  }
  for (const std::string& w : r.warnings) std::fprintf(stderr, "flymc: warning: %s\n", w.c_str());
  if (r.stopped) {
    const int sig = g_signal.load();
    std::fprintf(stderr,
                 "flymc: stopped by %s; the chains saved their state in %s/checkpoint. Continue "
                 "with: flymc sample --resume %s\n",
                 sig == SIGTERM  ? "SIGTERM"
                 : sig == SIGINT ? "SIGINT"
                                 : "request",
                 job.out.c_str(), job.out.c_str());
    throw ExitStatus{kExitStopped};
  }
  const auto params = summarize_params(r);
  write_summary_json(job.out + "/summary.json", r, params, choice);
  if (cfg.ess > 0.0 && !r.target_reached)
    std::fprintf(stderr,
                 "flymc: the ESS target was not reached: %s after %ld sampling iterations per "
                 "chain (min bulk ESS %.0f, min tail ESS %.0f, max R-hat %.3f; target %.0f and "
                 "%.2f); summary.json has run.target_reached false\n",
                 r.target_timed_out ? "--max-seconds passed" : "--iters reached", r.config.iters,
                 r.target.min_ess_bulk, r.target.min_ess_tail, r.target.max_rhat, cfg.ess,
                 cfg.max_rhat);
  if (!o.quiet) print_report(r, params, job.out);
  print_warnings(r, params);
}

void run_sample(const SampleOptions& o) {
  const JobGroup group;
  try {
    sample_job(o, group);
  } catch (...) {
    group.fail(std::current_exception());
  }
}

}  // namespace

const std::map<std::string, Algo>& algo_names() {
  static const std::map<std::string, Algo> names = enum_map<Algo>();
  return names;
}

void add_sample_command(CLI::App& app) {
  auto o = std::make_shared<SampleOptions>();
  RunConfig& c = o->cfg;
  CLI::App* s = app.add_subcommand(
      "sample", "Draw posterior samples (by default the exact sampler auto predicts fastest)");
  o->app = s;
  s->add_option("--data", o->data,
                "Data file (.csv or .npy; label first); required unless --resume");
  // Every run option from the table (flymc/core/options.hpp); --algo also takes auto.
  for_each_option([&](const OptionInfo& opt) {
    if (!opt.in_cli) return;
    if (std::string_view(opt.key) != "algo") {
      add_run_option(s, c, opt);
      return;
    }
    const std::vector<std::string> algos = enum_name_list<Algo>();
    s->add_option_function<std::string>(
         "--algo",
         [o](const std::string& v) {
           o->cfg.algo = algo_names().at(v);
           o->auto_algo = o->cfg.algo == Algo::automatic;
         },
         std::string(opt.help) + ". " + samplers_help())
        ->check(CLI::IsMember(algos))
        ->default_str("auto");
  });
  s->add_option("--out", o->out, "Output directory")->capture_default_str();
  s->add_flag("--quiet", o->quiet, "No progress line or table");
  std::string shard_models;
  for (const SamplerInfo& i : kSamplers)
    if (i.shardable && i.kind != SamplerKind::automatic)
      shard_models += std::string(shard_models.empty() ? "" : "; ") + "--algo " + i.name + ": " +
                      models_run_text(i.algo, 2, true);
  s->add_flag("--shard-data", o->shard_data,
              "Under mpirun: each process reads only its block of the .npy file's (or HDF5 "
              "data set's) rows, and every chain runs on every process, its steps collective; "
              "the draws equal a one-process run's (docs/mpi.md). Models: " +
                  shard_models);
  s->add_option("--checkpoint-every", o->checkpoint_every,
                "Each chain saves its state every K iterations (warm-up included) in "
                "OUT/checkpoint; pick K so that saves are seconds apart. SIGINT/SIGTERM then "
                "stop cleanly after a save (exit 75)")
      ->type_name("K");
  s->add_option("--resume", o->resume,
                "Continue the checkpointed run in DIR (with its own options; --threads, "
                "--checkpoint-every and --quiet may change); the draws are bit-identical to an "
                "uninterrupted run's")
      ->type_name("DIR");
  s->footer(
      "Checkpoint and resume: with --checkpoint-every K, DIR/checkpoint holds every chain's "
      "state; after a kill or a reboot, 'flymc sample --resume DIR' continues, and the draws "
      "equal an uninterrupted run's. Exit codes: 0 done, 64 usage, 65 data, 73/74 output, 75 "
      "stopped by SIGINT/SIGTERM after a checkpoint (resume it), 78 configuration or "
      "checkpoint.");
  // Test hook, hidden from --help: an invalid bound, to test violation reporting end to end.
  s->add_option("--test-bound-excess", o->faults.bound_excess)->group("");
  s->callback([o] { run_sample(*o); });
}

}  // namespace flymc::cli
