// flymc-bench compare (bench/compare.hpp). Every algorithm gets the same sampling wall time on
// the same data (a pilot run measures its iterations per second), and is judged by its min bulk
// ESS per second, its likelihood queries per effective draw, and the error of its posterior
// means and standard deviations against a reference run that none of the rows shares a random
// stream with (long regular NUTS with the dense adapted metric, the strongest exact baseline).
// An exact algorithm's error is Monte Carlo error, which shrinks with its ESS; an approximate
// algorithm's error also holds its bias, which does not.
#include "compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "bench_common.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"

namespace flymc::bench {
namespace {

/// Draws of the reference run no row shares: a seed offset far from any row's.
constexpr std::uint64_t kReferenceSeedOffset = 0x5eed0fba5e11beULL;

/// The reference posterior: per-parameter mean and sd, and how well the run knows them.
struct Reference {
  std::vector<std::string> names;
  std::vector<double> mean, sd, mcse;
  double min_ess = 0.0, max_rhat = 0.0, seconds = 0.0;
  std::size_t n = 0;
};

struct CompareRow {
  std::string algo;
  RunResult result;
  double min_ess = 0.0, max_rhat = 0.0, ess_per_second = 0.0, queries_per_ess = 0.0;
  double mean_error_sd_max = 0.0, sd_error_rel_max = 0.0;
  /// max_j |mean_j − reference mean_j| / √(mcse_j² + reference mcse_j²): within about 3.5 for an
  /// exact sampler whose MCSE is right (the largest of D standard normals), above for a bias.
  double mean_z_max = 0.0;
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

KernelKind kernel_named(const std::string& k) {
  const auto& names = kernel_names();
  const auto it = names.find(k);
  if (it == names.end()) throw UsageError("compare: unknown kernel '" + k + "'");
  return it->second;
}

/// The samplers that are neither FlyMC nor regular MCMC, by their command-line names.
std::optional<Algo> sampler_named(const std::string& name) {
  for (Algo a : {Algo::minibatch_mh, Algo::sgld, Algo::bps, Algo::lipsbps, Algo::sbps, Algo::psbps,
                 Algo::zigzag_ss, Algo::zigzag_cv})
    if (name == to_string(a)) return a;
  return std::nullopt;
}

/// The run configuration of the row named `algo` (before its budget is set).
RunConfig row_config(const CompareOptions& o, const std::string& algo) {
  RunConfig c;
  c.ess = 0.0;  // every row runs its budget
  c.model = ModelKind::logistic;
  c.chains = o.chains;
  c.threads = o.threads;
  c.seed = o.seed;
  c.prior_sd = o.prior_sd;
  c.metric = Metric::dense;
  c.warmup = o.warmup;
  c.batch_size = o.batch_size;
  c.pdmp_precondition = o.pdmp_precondition == "none"           ? PdmpPrecondition::none
                        : o.pdmp_precondition == "laplace-diag" ? PdmpPrecondition::laplace_diag
                                                                : PdmpPrecondition::laplace;
  if (starts_with(algo, "regular-")) {
    c.algo = Algo::full;
    c.kernel = kernel_named(algo.substr(8));
    c.warmup = std::max(100L, o.warmup / 4);  // a full-data iteration costs N queries
  } else if (starts_with(algo, "flymc-")) {
    std::string k = algo.substr(6);
    if (k.size() > 4 && k.compare(k.size() - 4, 4, "-fly") == 0) {
      c.metric = Metric::fly;
      k.resize(k.size() - 4);
    }
    c.algo = Algo::flymc;
    c.kernel = kernel_named(k);
    if (c.kernel == KernelKind::hmc || c.kernel == KernelKind::nuts)
      c.slack_scale = o.flymc_slack_scale;
    c.warmup = 3 * o.warmup;  // cheap iterations; the metric adapts in Stan's windows
  } else if (starts_with(algo, "smh-")) {
    const std::optional<SmhProposal> p = parse_enum<SmhProposal>(algo.substr(4));
    if (!p) throw UsageError("compare: unknown SMH proposal in '" + algo + "' (smh-pcn, smh-rw)");
    c.algo = Algo::smh;
    c.proposal = *p;
    c.metric = Metric::automatic;  // SMH scales its proposals by the Laplace fit itself
  } else if (const std::optional<Algo> a = sampler_named(algo)) {
    c.algo = *a;
    // A continuous-time sampler's warm-up only discards path from θ_MAP (pSBPS also fits its
    // preconditioner), and one draw of full-gradient BPS can cost thousands of passes over the
    // data: a short burn-in, so that the budget goes to sampling.
    if (is_pdmp(c.algo)) c.warmup = 10;
  } else {
    throw UsageError("compare: unknown algorithm '" + algo +
                     "' (regular-<kernel>, flymc-<kernel>[-fly], smh-pcn, smh-rw, minibatch-mh, "
                     "sgld, bps, lipsbps, sbps, psbps, zigzag-ss, zigzag-cv)");
  }
  return c;
}

/// Runs c for about `seconds` of sampling wall time: pilots of growing length until one
/// samples for at least a second (or 2% of the budget), then the measured run at the pilot's
/// rate. Every run repeats the warm-up, so the pilots do not change the measured run's draws.
RunResult run_for(const std::string& algo, RunConfig c, double seconds,
                  const std::shared_ptr<const Dataset>& data) {
  c.iters = is_pdmp(c.algo) ? 10 : 100;
  c.thin = 1;
  for (;;) {
    std::fprintf(stderr, "compare: %-16s pilot %d chains x (%ld + %ld) iterations ...\n",
                 algo.c_str(), c.chains, c.warmup, c.iters);
    const RunResult pilot = bench::run_shown(c, data);
    const double rate = std::max(pilot.sampling_seconds, 1e-9) / double(c.iters);
    const long want = static_cast<long>(std::ceil(seconds / rate));
    if (pilot.sampling_seconds >= std::min(1.0, 0.02 * seconds) || want <= c.iters) {
      if (want <= c.iters) return pilot;
      c.iters = want;
      break;
    }
    c.iters = std::min(want, 10 * c.iters);
  }
  c.thin = std::max(1L, c.iters / 10000);  // enough kept draws for the ESS, bounded memory
  std::fprintf(stderr, "compare: %-16s %d chains x (%ld + %ld) iterations (%.0f s) ...\n",
               algo.c_str(), c.chains, c.warmup, c.iters, seconds);
  return bench::run_shown(c, data);
}

/// minibatch-mh at a fixed step set so that a Barker test reads about `target` data on average:
/// bisection on log(step) over short runs of one chain (the mean batch grows with the step).
/// Returns the configuration unchanged when even the adapted step's tests read fewer.
RunConfig calibrate_minibatch(const CompareOptions& o, RunConfig c,
                              const std::shared_ptr<const Dataset>& data) {
  if (o.mh_batch_target <= 0.0) return c;
  RunConfig probe = c;
  probe.chains = 1;
  probe.warmup = 0;
  probe.iters = 400;
  auto batch_at = [&](double step) {
    probe.step_size = step;
    return bench::run_shown(probe, data).batch_mean();
  };
  const double rw = 2.38 / std::sqrt(double(data->d()));  // RW scaling in the metric's units
  double lo = std::log(rw * 1e-5), hi = std::log(rw);
  if (batch_at(rw) <= o.mh_batch_target) return c;
  for (int i = 0; i < 14; ++i) {
    const double mid = 0.5 * (lo + hi);
    (batch_at(std::exp(mid)) > o.mh_batch_target ? hi : lo) = mid;
  }
  c.step_size = std::exp(lo);
  c.warmup = 0;  // no adaptation: the step stays; the chains start at θ_MAP (jittered)
  std::fprintf(stderr, "compare: minibatch-mh step %.3g for about %.0f data per test\n",
               *c.step_size, o.mh_batch_target);
  return c;
}

Reference run_reference(const CompareOptions& o, const std::shared_ptr<const Dataset>& data) {
  RunConfig c = row_config(o, "regular-nuts");
  c.seed = o.seed + kReferenceSeedOffset;
  c.chains = std::max(o.chains, 2);
  const RunResult r = run_for("reference", c, o.reference_seconds, data);
  Reference ref;
  ref.names = r.names;
  ref.n = r.n;
  ref.seconds = r.sampling_seconds;
  ref.min_ess = min_ess(r);
  ref.max_rhat = max_rhat(r);
  for (std::size_t j = 0; j < r.dim; ++j) {
    const ParamSummary s = summarize(r.coordinate(j));
    ref.mean.push_back(s.mean);
    ref.sd.push_back(s.sd);
    ref.mcse.push_back(s.mcse_mean);
  }
  return ref;
}

nlohmann::json reference_json(const Reference& r) {
  return {{"algo", "regular-nuts"},
          {"n", r.n},
          {"names", r.names},
          {"mean", r.mean},
          {"sd", r.sd},
          {"mcse_mean", r.mcse},
          {"min_ess", r.min_ess},
          {"max_rhat", r.max_rhat},
          {"seconds", r.seconds}};
}

/// The reference from `o.reference` when that file exists (it must be of these data), else a
/// fresh run, written there when a path is given.
Reference load_or_run_reference(const CompareOptions& o,
                                const std::shared_ptr<const Dataset>& data) {
  if (!o.reference.empty()) {
    std::ifstream f(o.reference);
    if (f) {
      nlohmann::json j;
      try {
        f >> j;
        Reference r;
        r.names = j.at("names").get<std::vector<std::string>>();
        r.mean = j.at("mean").get<std::vector<double>>();
        r.sd = j.at("sd").get<std::vector<double>>();
        r.mcse = j.at("mcse_mean").get<std::vector<double>>();
        r.n = j.at("n").get<std::size_t>();
        r.min_ess = j.at("min_ess").get<double>();
        r.max_rhat = j.at("max_rhat").get<double>();
        r.seconds = j.at("seconds").get<double>();
        if (r.n != data->n() || r.mean.size() != data->d() || r.sd.size() != data->d())
          throw DataError(o.reference + ": a reference of other data (rows or columns differ)");
        return r;
      } catch (const nlohmann::json::exception& e) {
        throw DataError(o.reference + ": not a compare reference: " + e.what());
      }
    }
  }
  Reference r = run_reference(o, data);
  if (!o.reference.empty()) {
    std::ofstream f(o.reference);
    if (!f || !(f << reference_json(r).dump(2) << '\n'))
      throw Error(o.reference + ": cannot write", 73);
  }
  return r;
}

CompareRow measure_row(const CompareOptions& o, const std::string& algo, const Reference& ref,
                       const std::shared_ptr<const Dataset>& data) {
  RunConfig c = row_config(o, algo);
  if (c.algo == Algo::minibatch_mh) c = calibrate_minibatch(o, c, data);
  CompareRow row;
  row.algo = algo;
  row.result = run_for(algo, c, o.budget_seconds, data);
  const RunResult& r = row.result;
  row.min_ess = min_ess(r);
  row.max_rhat = max_rhat(r);
  row.ess_per_second = row.min_ess / r.sampling_seconds;
  const double queries = r.queries_per_iter() * double(r.config.iters) * double(r.chains.size());
  row.queries_per_ess = queries / std::max(row.min_ess, 1e-300);
  for (std::size_t j = 0; j < r.dim; ++j) {
    const ParamSummary s = summarize(r.coordinate(j));
    row.mean_error_sd_max =
        std::max(row.mean_error_sd_max, std::fabs(s.mean - ref.mean[j]) / ref.sd[j]);
    row.sd_error_rel_max = std::max(row.sd_error_rel_max, std::fabs(s.sd / ref.sd[j] - 1.0));
    row.mean_z_max = std::max(
        row.mean_z_max, std::fabs(s.mean - ref.mean[j]) / std::hypot(s.mcse_mean, ref.mcse[j]));
  }
  return row;
}

nlohmann::json row_json(const CompareRow& row) {
  const RunResult& r = row.result;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  return {{"algo", row.algo},
          {"exact", is_exact(r.config.algo)},
          {"kernel", to_string(r.config.kernel)},
          {"slack_scale", r.config.slack_scale},
          {"ess_per_second_min", row.ess_per_second},
          {"queries_per_ess", row.queries_per_ess},
          {"mean_error_sd_max", row.mean_error_sd_max},
          {"sd_error_rel_max", row.sd_error_rel_max},
          {"mean_z_max", num(row.mean_z_max)},
          {"batch_mean", num(r.config.algo == Algo::minibatch_mh ? r.batch_mean() : nan)},
          {"bound_violations", r.bound_violations()},
          {"min_ess_bulk", row.min_ess},
          {"max_rhat", num(row.max_rhat)},
          {"queries_per_iter", r.queries_per_iter()},
          {"seconds", r.sampling_seconds},
          {"warmup_seconds", r.warmup_seconds},
          {"iters", r.config.iters},
          {"warmup", r.config.warmup},
          {"chains", r.config.chains},
          {"step_size", r.chains.empty() ? 0.0 : r.chains[0].step_size},
          {"accept_rate", r.accept_rate()}};
}

void print_rows(const std::vector<CompareRow>& rows) {
  std::printf("%-16s %-5s %9s %7s %10s %12s %9s %7s %9s %8s %10s %7s\n", "algorithm", "exact",
              "min ESS", "max R^", "min ESS/s", "queries/ESS", "mean err", "mean z", "sd err",
              "batch", "violations", "seconds");
  for (const CompareRow& row : rows) {
    const RunResult& r = row.result;
    const bool mb = r.config.algo == Algo::minibatch_mh;
    std::printf("%-16s %-5s %9.1f %7.3f %10.3f %12.4g %9.4f %7.2f %9.4f %8.1f %10llu %7.1f\n",
                row.algo.c_str(), is_exact(r.config.algo) ? "yes" : "no", row.min_ess, row.max_rhat,
                row.ess_per_second, row.queries_per_ess, row.mean_error_sd_max, row.mean_z_max,
                row.sd_error_rel_max, mb ? r.batch_mean() : std::nan(""),
                static_cast<unsigned long long>(r.bound_violations()), r.sampling_seconds);
  }
  std::printf(
      "(mean err: largest |mean - reference mean| / reference sd over the parameters; mean z: "
      "the same in combined MCSEs of the row and the reference; sd err: "
      "largest |sd / reference sd - 1|; batch: minibatch-mh's mean data per test; violations: "
      "proposals above an adaptive bound, SBPS/pSBPS's bias diagnostic)\n");
}

void compare(const CompareOptions& o) {
  const auto data = std::make_shared<const Dataset>(
      o.data.empty() ? synth_logistic(static_cast<std::size_t>(o.synth_n),
                                      static_cast<std::size_t>(o.synth_d), o.seed)
                     : load_dataset(o.data, LabelDomain::binary));
  const std::string name = o.data.empty() ? "synthetic N=" + std::to_string(o.synth_n) +
                                                " D=" + std::to_string(o.synth_d)
                                          : o.data;
  const Reference ref = load_or_run_reference(o, data);
  std::vector<CompareRow> rows;
  for (const std::string& a : split_list(o.algos)) rows.push_back(measure_row(o, a, ref, data));
  std::printf("\nCompare: %s (N = %zu, D = %zu), %d chains, %.0f s of sampling each\n",
              name.c_str(), data->n(), data->d(), o.chains, o.budget_seconds);
  std::printf("reference: regular NUTS, min ESS %.0f, max R^ %.3f, %.0f s\n", ref.min_ess,
              ref.max_rhat, ref.seconds);
  print_rows(rows);
  nlohmann::json jrows = nlohmann::json::array();
  for (const CompareRow& r : rows) jrows.push_back(row_json(r));
  write_json(o.json, "compare",
             {{"dataset", name},
              {"n", data->n()},
              {"d", data->d()},
              {"budget_seconds", o.budget_seconds},
              {"reference", reference_json(ref)},
              {"rows", jrows}});
}

}  // namespace

void add_compare_command(CLI::App& app, CompareOptions& o) {
  CLI::App* c = app.add_subcommand(
      "compare",
      "Every sampler on one logistic data set at equal sampling wall time: ESS/s, queries per "
      "ESS, and error against a held-back long regular-NUTS reference");
  c->add_option("--data", o.data, "Logistic data set (.csv/.npy); default: synthetic data");
  c->add_option("--synth-n", o.synth_n, "synthetic data: rows")->capture_default_str();
  c->add_option("--synth-d", o.synth_d, "synthetic data: columns")->capture_default_str();
  c->add_option("--algos", o.algos, "rows, comma-separated")->capture_default_str();
  c->add_option("--json", o.json, "Write rows[] and the reference as JSON");
  c->add_option("--reference", o.reference,
                "the reference's means and sds: read if the file exists, else run and write it");
  c->add_option("--budget", o.budget_seconds, "sampling seconds per algorithm")
      ->capture_default_str();
  c->add_option("--reference-seconds", o.reference_seconds, "sampling seconds of the reference")
      ->capture_default_str();
  cli::add_run_named(c, "chains", o.chains)->capture_default_str();
  cli::add_run_named(c, "threads", o.threads, "0: all cores")->capture_default_str();
  cli::add_run_named(c, "seed", o.seed)->capture_default_str();
  cli::add_run_named(
      c, "warmup", o.warmup,
      "warm-up iterations (regular MCMC: a quarter; FlyMC: three times; continuous-time "
      "samplers: 10 draws)")
      ->capture_default_str();
  cli::add_run_named(c, "batch-size", o.batch_size, "approximate samplers' (first) batch")
      ->capture_default_str();
  c->add_option("--mh-batch-target", o.mh_batch_target,
                "minibatch-mh: fixed step for about this many data per test (0: adapted step)")
      ->capture_default_str();
  cli::add_run_named(c, "prior-sd", o.prior_sd)->capture_default_str();
  c->add_option("--flymc-slack-scale", o.flymc_slack_scale,
                "FlyMC's --slack-scale for its HMC and NUTS rows")
      ->capture_default_str();
  cli::add_run_named(
      c, "pdmp-precondition", o.pdmp_precondition,
      "continuous-time samplers' coordinates: laplace (theta = L u, L the Laplace "
      "covariance's Cholesky factor), laplace-diag (theta over its Laplace sds) or none")
      ->check(CLI::IsMember({"laplace", "laplace-diag", "none"}))
      ->capture_default_str();
  c->callback([&o] { compare(o); });
}

}  // namespace flymc::bench
