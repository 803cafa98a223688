// `flymc validate sbc|geweke`: statistical validation of the samplers (engine/validate.hpp).
// Prints the report; exits 1 when a quantity fails.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.hpp"
#include "flymc/core/atomic_file.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/validate/validate.hpp"

namespace flymc::cli {
namespace {

/// The validation ran and found a miscalibrated sampler: exit code 1.
class ValidationFailed : public Error {
 public:
  explicit ValidationFailed(const std::string& what) : Error(what, 1) {}
};

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
/// An automatic (unset) option as null.
nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

void write_json(const std::string& path, const nlohmann::json& j) {
  write_text_atomic(path, j.dump(2) + '\n');
}

/// Polls a counter and prints a progress line on stderr while `work` runs (only on a terminal).
template <class Counter, class Work>
void with_progress(bool show, const Counter& counter, double total, const char* what, Work work) {
  std::atomic<bool> done{false};
  std::thread monitor;
  if (show) {
    monitor = std::thread([&] {
      while (!done.load()) {
        std::fprintf(stderr, "\r%s: %5.1f%%", what,
                     100.0 * static_cast<double>(counter.load()) / total);
        std::fflush(stderr);
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
      std::fprintf(stderr, "\r%40s\r", "");
    });
  }
  try {
    work();
  } catch (...) {
    done = true;
    if (monitor.joinable()) monitor.join();
    throw;
  }
  done = true;
  if (monitor.joinable()) monitor.join();
}

// Geweke's test runs FlyMC and regular MCMC only; the names are the run options' table's.
const std::map<std::string, Algo> kAlgos{{"flymc", Algo::flymc}, {"full", Algo::full}};
const std::map<std::string, BoundTuning> kBounds = enum_map<BoundTuning>();
const std::map<std::string, ZUpdate> kZs = enum_map<ZUpdate>();
const std::map<std::string, KernelKind> kKernels = enum_map<KernelKind>();
const std::map<std::string, SliceMode> kSliceModes = enum_map<SliceMode>();

// ---------------------------------------------------------------------------------------------
struct SbcCli {
  SbcOptions opt;
  std::string model = "logistic", json;
  bool quiet = false;
};

/// The sampler options both tests report, under the same keys.
nlohmann::json sampler_json(ModelKind model, Algo algo, KernelKind kernel, BoundTuning bound,
                            ZUpdate z, const nlohmann::json& q, double f, double xi,
                            const nlohmann::json& slack, int theta_steps, double prior_sd) {
  return {{"model", to_string(model)},  {"algo", to_string(algo)}, {"kernel", to_string(kernel)},
          {"bound", to_string(bound)},  {"z", to_string(z)},       {"q_dark_to_bright", q},
          {"resample_fraction", f},     {"untuned_xi", xi},        {"bound_slack", slack},
          {"theta_steps", theta_steps}, {"prior_sd", prior_sd}};
}

/// The outcome both tests report: the per-item cut, the verdict, time and the sampler's counts.
void add_outcome(nlohmann::json& j, double threshold, bool passed, double seconds,
                 double accept_rate, std::uint64_t violations, std::uint64_t nonfinite) {
  j["threshold"] = threshold;
  j["passed"] = passed;
  j["seconds"] = seconds;
  j["accept_rate"] = accept_rate;
  j["bound_violations"] = violations;
  j["nonfinite"] = nonfinite;
}

nlohmann::json sbc_json(const SbcResult& r) {
  const SbcOptions& o = r.options;
  const RunConfig& c = o.run;
  nlohmann::json j;
  j["test"] = "sbc";
  j["options"] = sampler_json(c.model, c.algo, c.kernel, c.bound, c.z,
                              optional_json(c.q_dark_to_bright), c.resample_fraction, c.untuned_xi,
                              optional_json(c.bound_slack), c.resolved_theta_steps(), c.prior_sd);
  j["options"].update({{"metric", to_string(c.metric)},
                       {"warmup", c.warmup},
                       {"n", o.n},
                       {"d", o.d},
                       {"classes", o.classes},
                       {"reps", o.reps},
                       {"draws", o.draws},
                       {"thin", o.thin},
                       {"bins", o.bins},
                       {"seed", o.seed},
                       {"alpha", o.alpha}});
  j["quantities"] = nlohmann::json::array();
  for (const RankTest& t : r.quantities)
    j["quantities"].push_back({{"name", t.name},
                               {"chi2", t.chi2},
                               {"dof", t.dof},
                               {"p_value", num(t.p_value)},
                               {"max_deviation", t.max_deviation},
                               {"ess_ratio", num(t.ess_ratio)},
                               {"lag1", num(t.lag1)},
                               {"counts", t.counts},
                               {"expected", t.expected},
                               {"ranks", t.ranks},
                               {"pass", t.pass}});
  add_outcome(j, r.threshold, r.passed(), r.seconds, r.accept_rate, r.bound_violations,
              r.nonfinite);
  j["bright_mean"] = r.bright_mean;
  return j;
}

void run_sbc_command(SbcCli& c) {
  c.opt.run.model = parse_enum<ModelKind>(c.model).value();  // --model checked the name
  c.opt.validate();
  std::atomic<int> done{0};
  SbcResult r;
  with_progress(!c.quiet && isatty(STDERR_FILENO), done, c.opt.reps, "sbc replicates",
                [&] { r = run_sbc(c.opt, &done); });
  if (!c.quiet) std::fputs(format_report(r).c_str(), stdout);
  std::fflush(stdout);
  if (!c.json.empty()) write_json(c.json, sbc_json(r));
  if (!r.passed()) {
    std::string bad;
    for (const RankTest& t : r.quantities)
      if (!t.pass) bad += (bad.empty() ? "" : ", ") + t.name;
    throw ValidationFailed("sbc: ranks not uniform for " + bad);
  }
}

// ---------------------------------------------------------------------------------------------
struct GewekeCli {
  GewekeOptions opt;
  std::string model = "logistic", json;
  bool quiet = false;
};

nlohmann::json geweke_json(const GewekeResult& r) {
  const GewekeOptions& o = r.options;
  nlohmann::json j;
  j["test"] = "geweke";
  j["options"] =
      sampler_json(ModelKind::logistic, o.algo, o.kernel, o.bound, o.z, o.q_dark_to_bright,
                   o.resample_fraction, o.untuned_xi, o.bound_slack, o.theta_steps, o.prior_sd);
  j["options"].update({{"sweeps", o.sweeps},
                       {"step_size", o.step_size},
                       {"n", o.n},
                       {"d", o.d},
                       {"iters", o.iters},
                       {"burn", o.burn},
                       {"chains", o.chains},
                       {"mc_draws", o.mc_draws},
                       {"batches", o.batches},
                       {"seed", o.seed},
                       {"alpha", o.alpha}});
  j["functions"] = nlohmann::json::array();
  for (const GewekeStat& g : r.stats)
    j["functions"].push_back({{"name", g.name},
                              {"mc_mean", g.mc_mean},
                              {"mc_se", g.mc_se},
                              {"sc_mean", g.sc_mean},
                              {"sc_se", g.sc_se},
                              {"exact", num(g.exact)},
                              {"z", num(g.z)},
                              {"p_value", num(g.p_value)},
                              {"pass", g.pass}});
  add_outcome(j, r.threshold, r.passed(), r.seconds, r.accept_rate, r.bound_violations,
              r.nonfinite);
  return j;
}

void run_geweke_command(const GewekeCli& c) {
  if (c.model != "logistic")
    throw ConfigError("--model " + c.model + ": only 'logistic' is available in this build");
  c.opt.validate();
  std::atomic<long> done{0};
  GewekeResult r;
  const double total =
      static_cast<double>(c.opt.chains) * static_cast<double>(c.opt.iters + c.opt.burn);
  with_progress(!c.quiet && isatty(STDERR_FILENO), done, total, "geweke transitions",
                [&] { r = run_geweke(c.opt, &done); });
  if (!c.quiet) std::fputs(format_report(r).c_str(), stdout);
  std::fflush(stdout);
  if (!c.json.empty()) write_json(c.json, geweke_json(r));
  if (!r.passed()) {
    std::string bad;
    for (const GewekeStat& g : r.stats)
      if (!g.pass) bad += (bad.empty() ? "" : ", ") + g.name;
    throw ValidationFailed("geweke: simulators disagree on " + bad);
  }
}

/// Options shared by both sub-commands, bound to the given fields.
void add_sampler_options(CLI::App* s, const std::vector<std::string>& models, std::string& model,
                         const std::map<std::string, Algo>& algos, const std::string& algo_help,
                         Algo& algo, BoundTuning& bound, ZUpdate& z) {
  add_run_named(s, "model", model, "Model")->check(CLI::IsMember(models))->capture_default_str();
  add_run_named(s, "algo", algo, algo_help)
      ->transform(CLI::CheckedTransformer(algos))
      ->default_str(to_string(algo));
  add_run_named(s, "bound", bound, "map (MAP-tuned) or untuned")
      ->transform(CLI::CheckedTransformer(kBounds))
      ->default_str(to_string(bound));
  add_run_named(s, "z", z, "z-update: implicit or explicit")
      ->transform(CLI::CheckedTransformer(kZs))
      ->default_str(to_string(z));
}

}  // namespace

void add_validate_command(CLI::App& app) {
  CLI::App* v = app.add_subcommand(
      "validate", "Check a sampler's exactness: simulation-based calibration or Geweke's test");
  v->require_subcommand(1);

  // flymc validate sbc
  {
    auto c = std::make_shared<SbcCli>();
    SbcOptions& o = c->opt;
    RunConfig& r = o.run;
    CLI::App* s = v->add_subcommand(
        "sbc",
        "Simulation-based calibration (Talts et al. 2018): ranks of the true parameters "
        "among posterior draws, tested for uniformity");
    add_sampler_options(s, enum_name_list<ModelKind>(), c->model, algo_names(),
                        "any sampler of flymc sample: the exact ones, and the approximate "
                        "minibatch-mh, sgld, sbps, psbps, which SBC is expected to reject. " +
                            samplers_help(),
                        r.algo, r.bound, r.z);
    // The sampler's options: every run option of flymc sample but those the replicates set
    // (the table's, so that a new option, --smh-order among them, is here too).
    for_each_option([&](const OptionInfo& opt) {
      static constexpr std::string_view kSetByReplicates[] = {
          "model",   "algo",    "bound",       "z",          "chains", "warmup",
          "iters",   "ess",     "max-seconds", "max-rhat",   "thin",   "seed",
          "threads", "storage", "theta-steps", "save-events"};
      if (opt.in_cli && std::find(std::begin(kSetByReplicates), std::end(kSetByReplicates),
                                  std::string_view(opt.name)) == std::end(kSetByReplicates))
        add_run_option(s, r, opt);
    });
    s->add_option("--reps", o.reps, "Replicates (simulated data sets)")->capture_default_str();
    s->add_option("--n", o.n, "Rows per simulated data set")->capture_default_str();
    s->add_option("--d", o.d, "Coefficients, the bias column included")->capture_default_str();
    s->add_option("--draws", o.draws, "Kept posterior draws L per replicate")
        ->capture_default_str();
    add_run_named(s, "thin", o.thin, "Sampling iterations per kept draw")->capture_default_str();
    add_run_option(s, r, option("warmup"), "Warm-up iterations per replicate");
    s->add_option("--bins", o.bins, "Rank histogram bins")->capture_default_str();
    add_run_named(s, "seed", o.seed, "Random seed")->capture_default_str();
    add_run_named(s, "threads", o.threads, "Worker threads over replicates (0: all cores)")
        ->capture_default_str();
    add_run_option(s, r, option("theta-steps"), "theta-steps per z-sweep");
    s->add_option("--alpha", o.alpha, "Family-wise significance level (Bonferroni)")
        ->capture_default_str();
    s->add_option("--json", c->json, "Write the results to this JSON file");
    s->add_flag("--quiet", c->quiet, "No report on stdout");
    s->add_option("--classes", o.classes, "Softmax: classes K")->capture_default_str();
    s->callback([c] { run_sbc_command(*c); });
  }

  // flymc validate geweke
  {
    auto c = std::make_shared<GewekeCli>();
    GewekeOptions& o = c->opt;
    CLI::App* s = v->add_subcommand(
        "geweke",
        "Geweke's (2004) joint-distribution test of the FlyMC transition, z-updates "
        "included: marginal-conditional vs successive-conditional simulator");
    add_sampler_options(s, {"logistic"}, c->model, kAlgos, "flymc or full (regular MCMC)", o.algo,
                        o.bound, o.z);
    add_run_named(s, "kernel", o.kernel, "theta-kernel (fixed step size, identity metric)")
        ->transform(CLI::CheckedTransformer(kKernels))
        ->default_str(to_string(o.kernel));
    add_run_named(s, "hmc-steps", o.hmc_steps)->capture_default_str();
    add_run_named(s, "slice-mode", o.slice_mode, "Slice sampling: direction or coordinate")
        ->transform(CLI::CheckedTransformer(kSliceModes))
        ->default_str(to_string(o.slice_mode));
    s->add_option("--n", o.n, "Rows of the fixed design")->capture_default_str();
    s->add_option("--d", o.d, "Coefficients, the bias column included")->capture_default_str();
    add_run_named(s, "iters", o.iters, "Successive-conditional transitions per chain")
        ->capture_default_str();
    s->add_option("--burn", o.burn, "Discarded transitions per chain")->capture_default_str();
    add_run_named(s, "chains", o.chains, "Successive-conditional chains")->capture_default_str();
    s->add_option("--mc-draws", o.mc_draws, "Marginal-conditional draws")->capture_default_str();
    s->add_option("--batches", o.batches, "Batches per chain for batch-means standard errors")
        ->capture_default_str();
    add_run_named(s, "step-size", o.step_size,
                  "Fixed step size of the theta-kernel (slice: interval width)")
        ->capture_default_str();
    add_run_named(s, "theta-steps", o.theta_steps, "theta-steps per z-sweep")
        ->capture_default_str();
    s->add_option("--sweeps", o.sweeps, "(theta-steps, z-sweep) rounds per transition")
        ->capture_default_str();
    add_run_named(s, "seed", o.seed, "Random seed")->capture_default_str();
    add_run_named(s, "threads", o.threads, "Worker threads (0: all cores)")->capture_default_str();
    add_model_z_options(s, o);
    s->add_option("--alpha", o.alpha, "Family-wise significance level (Bonferroni)")
        ->capture_default_str();
    s->add_option("--json", c->json, "Write the results to this JSON file");
    s->add_flag("--quiet", c->quiet, "No report on stdout");
    s->callback([c] { run_geweke_command(*c); });
  }
}

}  // namespace flymc::cli
