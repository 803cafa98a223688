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
#include <vector>

#include "commands.hpp"
#include "flymc/core/atomic_file.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/io/output.hpp"
#include "flymc/io/run_dir.hpp"
#include "flymc/mcmc/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "job_group.hpp"
#include "progress_line.hpp"
#include "table.hpp"

namespace flymc::cli {
namespace {

struct SampleOptions {
  std::string data, out = "flymc-out", resume;
  RunConfig cfg;
  long checkpoint_every = 0;
  bool quiet = false;
  bool auto_algo = false;  // --algo auto: choose_algo() sets cfg.algo after the data are read
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

void write_summary_json(const std::string& path, const RunResult& r,
                        const std::vector<NamedSummary>& params,
                        const std::optional<AlgoChoice>& choice) {
  nlohmann::json j;
  j["params"] = nlohmann::json::array();
  double min_ess = std::numeric_limits<double>::infinity();
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
    min_ess = std::min(min_ess, std::isnan(s.ess_bulk) ? 0.0 : s.ess_bulk);
  }
  j["run"] = {{"algo", to_string(r.config.algo)},
              {"exact", is_exact(r.config.algo)},
              {"batch_mean", num(r.batch_mean())},
              {"algo_chosen", choice ? nlohmann::json(to_string(choice->algo)) : nlohmann::json()},
              {"predicted_speedup", choice ? num(choice->predicted_speedup) : nlohmann::json()},
              {"chains", r.config.chains},
              {"warmup", r.config.warmup},
              {"iters", r.config.iters},
              {"setup_seconds", r.setup_seconds},
              {"warmup_seconds", r.warmup_seconds},
              {"sampling_seconds", r.sampling_seconds},
              {"queries_per_iter", r.queries_per_iter()},
              {"bright_mean", num(r.bright_mean())},
              {"accept_rate", r.accept_rate()},
              {"min_ess_bulk", num(min_ess)},
              {"min_ess_bulk_per_second", num(min_ess / r.sampling_seconds)}};
  j["run"]["bound_violations"] = r.bound_violations();
  // The piecewise-deterministic samplers: the path's time averages, integrated exactly along its
  // segments, and the resolved spacing and refresh rate (null for the other algorithms).
  const std::vector<double> pm = r.path_mean();
  j["run"]["path_mean"] = pm.empty() ? nlohmann::json() : nlohmann::json(pm);
  j["run"]["pdmp_spacing"] = num(r.pdmp_spacing);
  j["run"]["refresh_rate"] = num(r.refresh_rate);
  j["run"]["pdmp_precondition"] = is_pdmp(r.config.algo)
                                      ? nlohmann::json(to_string(r.config.pdmp_precondition))
                                      : nlohmann::json();
  // FlyMC's set-up choices, resolved where automatic (null for regular MCMC).
  const bool fly = r.config.algo == Algo::flymc;
  j["run"]["bound_slack"] = fly ? nlohmann::json(r.bound_slack) : nlohmann::json();
  j["run"]["q_dark_to_bright"] = fly && r.config.z == ZUpdate::implicit
                                     ? nlohmann::json(r.q_dark_to_bright)
                                     : nlohmann::json();
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
         name == "--checkpoint-every" || name == "--help";
}

/// What one `flymc sample` invocation runs: the configuration (from the options, or from the
/// checkpoint when resuming), where it writes, and its data.
struct SampleJob {
  RunConfig cfg;
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
  if (every_given && !uses_theta_kernel(job.cfg.algo))
    throw ConfigError(std::string("--algo ") + to_string(job.cfg.algo) +
                      " cannot checkpoint or resume yet: leave out --checkpoint-every");
  if (every_given && job.every < 1)
    throw ConfigError("--checkpoint-every must be >= 1 (iterations), got " +
                      std::to_string(job.every));
  if (job.resume) {
    for (const CLI::Option* opt : o.app->get_options())
      if (opt->count() > 0 && !allowed_with_resume(opt->get_name()))
        throw UsageError(opt->get_name() +
                         " cannot be given with --resume: the run's options come from its "
                         "checkpoint (only --threads, --checkpoint-every and --quiet may change)");
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
    job.cfg.validate();
    if (owner) {
      lock.emplace(job.out);
      clear_run_outputs(job.out);  // an earlier run's files: replaced, never mixed
    }
  }
  job.cfg.validate();
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
                  const CheckpointOptions* ck) {
  const RunConfig& cfg = job.cfg;
  Progress progress(cfg.chains);
  std::optional<ProgressDisplay> display;
  if (!o.quiet && group.leader()) {
    // The leader sees its own chains' gauges: its block, the first and largest (deal_chains).
    const int shown = (cfg.chains + group.size() - 1) / group.size();
    const ProgressPlan plan{cfg.warmup * shown, (cfg.warmup + cfg.iters) * shown};
    const auto mode =
        isatty(STDERR_FILENO) ? ProgressDisplay::Mode::live : ProgressDisplay::Mode::plain;
    display.emplace(progress, std::size_t(shown), plan, mode, stderr);
  }
  std::optional<StopSignals> signals;
  if (ck != nullptr) signals.emplace();
  return group.run(cfg, std::move(data), sinks, &progress, ck, o.faults);
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
  else if (r.bound_violations() > 0)
    std::fprintf(stderr,
                 "flymc: warning: %llu bound violations (log B_n > log L_n beyond rounding, per "
                 "chain in the draw files' end comments): the bound is invalid and the draws "
                 "are not exact\n",
                 count(r.bound_violations()));
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

/// --algo auto: runs the pilots, tells the user what they predict, and sets the job's algorithm.
AlgoChoice choose_job_algo(const SampleOptions& o, SampleJob& job,
                           const std::shared_ptr<const Dataset>& data) {
  if (!o.quiet)
    std::fprintf(stderr, "flymc: --algo auto: pilot runs of FlyMC and regular MCMC ...\n");
  const AlgoChoice c = choose_algo(job.cfg, data);
  job.cfg.algo = c.algo;
  if (!o.quiet)
    std::fprintf(stderr,
                 "flymc: --algo auto chose %s: predicted min bulk ESS/s FlyMC %.3g, regular "
                 "%.3g (pilot on %zu rows, scaled to %zu), FlyMC/regular %.3g; pilots of %ld "
                 "and %ld iterations (min bulk ESS %.3g and %.3g) took %.1f s\n",
                 to_string(c.algo), c.flymc_ess_per_second, c.regular_ess_per_second,
                 c.regular_pilot_rows, data->n(), c.predicted_speedup, c.flymc_pilot_iters,
                 c.regular_pilot_iters, c.flymc_pilot_ess, c.regular_pilot_ess, c.pilot_seconds);
  if (c.pilots_short)
    std::fprintf(stderr,
                 "flymc: warning: --algo auto's pilots stopped at their time limit with few "
                 "effective draws, so the prediction is rough: compare --algo flymc and --algo "
                 "full with longer runs\n");
  return c;
}

/// --algo auto: the leader runs the pilots; every process takes its choice (and the figure its
/// draw files record).
std::optional<AlgoChoice> choose_group_algo(const SampleOptions& o, const JobGroup& group,
                                            SampleJob& job,
                                            const std::shared_ptr<const Dataset>& data,
                                            std::string& speedup_text) {
  std::optional<AlgoChoice> choice;
  group.together([&] {
    if (group.leader()) choice = choose_job_algo(o, job, data);
  });
  job.cfg.algo = static_cast<Algo>(group.from_leader(static_cast<int>(job.cfg.algo)));
  speedup_text = group.from_leader(choice ? number_text(choice->predicted_speedup) : "");
  return choice;
}

void sample_job(const SampleOptions& o, const JobGroup& group) {
  std::optional<RunDirLock> lock;  // the leader's, held until the run's files are complete
  SampleJob job;
  group.leader_first([&] { job = prepare_job(o, lock, group.leader()); });
  std::shared_ptr<const Dataset> data;
  group.together([&] {
    data = std::make_shared<const Dataset>(load_data(job.data_path, label_domain(job.cfg.model)));
  });
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
    std::fprintf(
        stderr,
        "flymc: %s: %zu rows x %zu features; %s %s, %s kernel, %d chains%s, %ld+%ld "
        "iterations%s\n",
        job.data_path.c_str(), data->n(), data->d(), to_string(cfg.model), to_string(cfg.algo),
        to_string(cfg.kernel), cfg.chains,
        group.size() > 1 ? (" on " + std::to_string(group.size()) + " processes").c_str() : "",
        cfg.warmup, cfg.iters, job.resume ? " (resuming)" : "");
  const RunResult r = run_job(o, group, job, sinks, data, ck ? &*ck : nullptr);
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

void add_kernel_options(CLI::App* s, RunConfig& c) {
  const std::map<std::string, KernelKind> kernels{{"rwmh", KernelKind::rwmh},
                                                  {"mala", KernelKind::mala},
                                                  {"hmc", KernelKind::hmc},
                                                  {"nuts", KernelKind::nuts},
                                                  {"slice", KernelKind::slice}};
  add_enum_option(s, "--kernel", c.kernel, kernels,
                  "theta-kernel: random-walk MH, MALA, HMC (leapfrog), NUTS (No-U-Turn, "
                  "multinomial as in Stan) or slice sampling",
                  "rwmh");
  const std::map<std::string, Metric> metrics{{"auto", Metric::automatic},
                                              {"identity", Metric::identity},
                                              {"diag", Metric::diag},
                                              {"dense", Metric::dense},
                                              {"fly", Metric::fly}};
  add_enum_option(
      s, "--metric", c.metric, metrics,
      "Kernel metric (RW proposal covariance, MALA preconditioner, HMC and NUTS "
      "inverse mass matrix, slice scale): identity, or diag/dense starting from the Laplace "
      "covariance; fly (FlyMC): dense, fitted to p(theta | z) from the prior and the collapsed "
      "bound's curvature; auto: identity for rwmh, diag otherwise",
      "auto");
  s->add_option("--fly-metric-blend", c.fly_metric_blend,
                "--metric fly: weight in [0, 1] of the posterior's Laplace precision blended into "
                "the metric's precision")
      ->capture_default_str();
  s->add_flag("--adapt-metric,!--no-adapt-metric", c.adapt_metric,
              "Re-estimate a diag/dense metric from warm-up draws in Stan's windows (default on)");
  s->add_option("--hmc-steps", c.hmc_steps, "Leapfrog steps per HMC trajectory")
      ->capture_default_str();
  s->add_option("--max-treedepth", c.max_treedepth,
                "NUTS: most doublings of a trajectory (at most 2^D - 1 leapfrog steps)")
      ->capture_default_str();
  const std::map<std::string, SliceMode> modes{{"direction", SliceMode::direction},
                                               {"coordinate", SliceMode::coordinate}};
  add_enum_option(s, "--slice-mode", c.slice_mode, modes,
                  "Slice sampling along a random direction or every coordinate in turn",
                  "direction");
  add_auto_option(
      s, "--target-accept", c.target_accept, [](double x) { return x > 0.0 && x < 1.0; },
      "in (0, 1)",
      "Step-size adaptation target; auto: 0.234 rwmh, 0.574 mala, 0.8 hmc and nuts, 0.5 "
      "slice");
  add_auto_option(
      s, "--step-size", c.step_size, [](double x) { return x > 0.0; }, "> 0",
      "Initial step size (slice: interval width); auto: from the Laplace fit");
  const std::map<std::string, PriorKind> priors{{"gaussian", PriorKind::gaussian},
                                                {"laplace", PriorKind::laplace}};
  add_enum_option(s, "--prior", c.prior, priors,
                  "Prior on every coefficient: gaussian or laplace (sd --prior-sd)", "gaussian");
  s->add_option("--nu", c.student_nu, "Robust regression: Student-t degrees of freedom")
      ->capture_default_str();
  s->add_option("--noise-scale", c.noise_scale, "Robust regression: Student-t scale")
      ->capture_default_str();
}

void add_subsampler_options(CLI::App* s, RunConfig& c) {
  s->add_option("--batch-size", c.batch_size,
                "Approximate samplers: data per batch (minibatch-mh: the first batch of every "
                "acceptance test, doubled while its variance is too large; sgld: every gradient's "
                "batch, scaled by N/batch-size)")
      ->capture_default_str();
  add_auto_option(
      s, "--pdmp-spacing", c.pdmp_spacing, [](double x) { return x > 0.0 && x <= 1e100; }, "> 0",
      "Piecewise-deterministic samplers: path time between draws (one draw per iteration; "
      "--warmup iterations of path time are discarded); auto: the mean Laplace sd in the "
      "particle's coordinates (1 with --pdmp-precondition laplace), times sqrt(D) for the BPS "
      "family");
  add_auto_option(
      s, "--refresh-rate", c.refresh_rate, [](double x) { return x >= 0.0 && x <= 1e100; }, ">= 0",
      "BPS family: velocity refreshments per unit path time (0: none); auto: one per "
      "automatic --pdmp-spacing");
  const std::map<std::string, PdmpPrecondition> preconds{
      {"laplace", PdmpPrecondition::laplace},
      {"laplace-diag", PdmpPrecondition::laplace_diag},
      {"none", PdmpPrecondition::none}};
  add_enum_option(s, "--pdmp-precondition", c.pdmp_precondition, preconds,
                  "Piecewise-deterministic samplers: laplace moves the particle in u with "
                  "theta = L u, L the Cholesky factor of the Laplace covariance at the MAP; "
                  "laplace-diag scales theta by the Laplace sds only; none moves in theta itself "
                  "(all exact; the draws are theta)",
                  "laplace");
  s->add_option("--barker-temper", c.barker_temper,
                "minibatch-mh: K >= 1; K > 1 tests Delta/K, which samples the TEMPERED posterior "
                "p(theta | data)^(1/K) with smaller batches (the seed slides' g(s) = K sigma(s))")
      ->capture_default_str();
  add_auto_option(
      s, "--sgld-step", c.sgld_step, [](double x) { return x > 0.0 && x <= 1.0; }, "in (0, 1]",
      "sgld: fixed step h in units of the metric (the Laplace covariance with the default diag "
      "metric); auto: min(0.05, 0.1 x batch-size / N)");
}

const std::map<std::string, Algo>& algo_names() {
  static const std::map<std::string, Algo> names{
      {"flymc", Algo::flymc},        {"full", Algo::full},   {"minibatch-mh", Algo::minibatch_mh},
      {"sgld", Algo::sgld},          {"bps", Algo::bps},     {"lipsbps", Algo::lipsbps},
      {"sbps", Algo::sbps},          {"psbps", Algo::psbps}, {"zigzag-ss", Algo::zigzag_ss},
      {"zigzag-cv", Algo::zigzag_cv}};
  return names;
}

void add_sample_command(CLI::App& app) {
  auto o = std::make_shared<SampleOptions>();
  RunConfig& c = o->cfg;
  CLI::App* s = app.add_subcommand("sample", "Draw posterior samples (FlyMC or regular MCMC)");
  o->app = s;
  s->add_option("--data", o->data,
                "Data file (.csv or .npy; label first); required unless --resume");
  const std::map<std::string, ModelKind> models{{"logistic", ModelKind::logistic},
                                                {"softmax", ModelKind::softmax},
                                                {"robust", ModelKind::robust}};
  add_enum_option(s, "--model", c.model, models,
                  "logistic (labels +-1 or 0/1), softmax (labels 0..K-1) or robust (Student-t "
                  "linear regression, real responses)",
                  "logistic");
  s->add_option_function<std::string>(
       "--algo",
       [o](const std::string& v) {
         o->auto_algo = v == "auto";
         if (v != "auto") o->cfg.algo = algo_names().at(v);
       },
       "flymc, full (regular MCMC), auto: short pilots of both with the chosen kernel "
       "predict their min bulk ESS per second, and the faster runs; the approximate "
       "subsampling samplers (logistic regression): minibatch-mh (minibatch Metropolis-Hastings "
       "with the Barker test) or sgld (stochastic gradient Langevin dynamics); or the "
       "piecewise-deterministic samplers (logistic regression, Gaussian prior): bps (bouncy "
       "particle sampler, full gradient), lipsbps (BPS on batch gradients, Lipschitz bound), "
       "zigzag-ss (Zig-Zag with subsampling), zigzag-cv (Zig-Zag with control variates at the "
       "MAP), all exact, and the APPROXIMATE sbps (stochastic BPS, adaptive bound) and psbps "
       "(SBPS with a diagonal preconditioner frozen after warm-up)")
      ->check(CLI::IsMember({"auto", "flymc", "full", "minibatch-mh", "sgld", "bps", "lipsbps",
                             "sbps", "psbps", "zigzag-ss", "zigzag-cv"}))
      ->default_str("flymc");
  add_subsampler_options(s, c);
  s->add_flag("--save-events", c.save_events,
              "Piecewise-deterministic samplers: also write events-<k>.csv beside chain-<k>.csv, "
              "the path's start, every bounce, refreshment or flip, and its end (path time, kind, "
              "position); the path is linear between them");
  const std::map<std::string, BoundTuning> bounds{{"map", BoundTuning::map},
                                                  {"untuned", BoundTuning::untuned}};
  add_enum_option(s, "--bound", c.bound, bounds, "map (MAP-tuned) or untuned", "map");
  const std::map<std::string, SoftmaxBoundKind> softmax_bounds{
      {"bohning", SoftmaxBoundKind::bohning}, {"tight", SoftmaxBoundKind::tight}};
  add_enum_option(s, "--softmax-bound", c.softmax_bound, softmax_bounds,
                  "softmax: bohning (fixed curvature) or tight (per datum the tighter of "
                  "Bohning's and the Jebara-Choromanska bounds)",
                  "tight");
  const std::map<std::string, ZUpdate> zs{{"implicit", ZUpdate::implicit},
                                          {"explicit", ZUpdate::explicit_}};
  add_enum_option(s, "--z", c.z, zs, "z-update: implicit or explicit", "implicit");
  add_kernel_options(s, c);
  const std::map<std::string, Init> inits{{"map", Init::map}, {"prior", Init::prior}};
  add_enum_option(s, "--init", c.init, inits, "map (MAP + jitter) or prior draw", "map");
  s->add_option("--chains", c.chains, "Number of chains")->capture_default_str();
  s->add_option("--warmup", c.warmup, "Warm-up iterations")->capture_default_str();
  s->add_option("--iters", c.iters, "Sampling iterations")->capture_default_str();
  s->add_option("--thin", c.thin, "Keep every K-th draw")->capture_default_str();
  // (CLI11 would wrap a negative seed around to 2^64 - 1: refused instead.)
  s->add_option("--seed", c.seed, "Random seed (an integer >= 0)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  s->add_option("--threads", c.threads, "Worker threads (0: all cores)")->capture_default_str();
  add_model_z_options(s, c);
  s->add_flag("--q-per-datum", c.q_per_datum,
              "Implicit z-update: per-datum rates q_n proportional to the expected bright "
              "probability (Laplace draws at set-up), at the uniform rate's mean cost");
  add_auto_option(
      s, "--theta-steps", c.theta_steps, [](double x) { return x >= 1.0; }, ">= 1",
      "theta-steps per z-sweep; auto: 10 for rwmh, 1 for the other kernels");
  s->add_option("--out", o->out, "Output directory")->capture_default_str();
  s->add_flag("--quiet", o->quiet, "No progress line or table");
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
