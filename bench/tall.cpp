// flymc-bench tall (bench/tall.hpp). Regular MCMC's strongest configurations (gradient kernels
// with the dense metric, adapted in Stan's windows from the Laplace covariance) against FlyMC with
// each θ-kernel, on the same data in one process, 2 chains each by default. Each algorithm's
// budget is what its estimate needs: a pilot run gives its ESS per iteration, and the measured
// run is sized for the target min bulk ESS (capped in time), so every ratio rests on enough
// effective draws whatever the algorithm's mixing.
#include "tall.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/model_needs.hpp"

namespace flymc::bench {
namespace {

struct TallRow {
  std::string algo;
  RunResult result;
  double min_ess = 0.0, max_rhat = 0.0, ess_per_second = 0.0;
  std::vector<ParamSummary> summary;
  /// Seconds from reading the data to --time-to-ess effective draws (projected past its cap).
  bench::TargetTime time_to_target;
};

/// What a user waits for: the row's sampler run with `--ess o.time_to_ess` (as `flymc sample`
/// would, its set-up included) from the data's reading to the target, projected when the run
/// reaches --target-max-seconds first (NaN when the column is off).
bench::TargetTime time_to_target(const TallOptions& o, const RunConfig& c,
                                 const std::shared_ptr<const Dataset>& d, double before,
                                 const Precomputed& pre = {}) {
  if (o.time_to_ess <= 0.0) return {};
  std::fprintf(stderr, "tall:   ... to %.0f effective draws with --ess\n", o.time_to_ess);
  return bench::time_to_target(
      c, o.time_to_ess, c.max_seconds > 0.0 ? c.max_seconds : o.target_max_seconds, d, before, pre);
}

ModelKind model_kind(const std::string& m) {
  if (const auto k = parse_enum<ModelKind>(m)) return *k;
  throw UsageError("tall: --model: one of the models of flymc sample --model, got '" + m + "'");
}

/// The model's own options as given (--dispersion, --prior-sigma, --nu), for the JSON: the report
/// tells runs of one model with different constants apart by them.
std::string model_options(const TallOptions& o) {
  std::string out;
  const auto add = [&out](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
  if (o.dispersion != 0.0) add("--dispersion " + number_text(o.dispersion));
  if (!o.prior_sigma.empty()) add("--prior-sigma '" + o.prior_sigma + "'");
  if (o.nu != 0.0) add("--nu " + number_text(o.nu));
  return out;
}

RunConfig algo_config(const TallOptions& o, Algo algo, KernelKind kernel, bool fly_metric,
                      bool adapt_metric = true) {
  RunConfig c;
  c.ess = 0.0;  // rows of a measured length (time_to_target runs them with --ess)
  c.model = model_kind(o.model);
  c.algo = algo;
  c.kernel = kernel;
  c.chains = o.chains;
  c.threads = o.threads;
  c.seed = o.seed;
  c.prior_sd = o.prior_sd;
  c.prior = o.prior;
  c.response_column = o.columns.response;
  c.weights_column = o.columns.weights;
  c.trials_column = o.columns.trials;
  c.offset_column = o.columns.offset;
  if (o.dispersion != 0.0) c.dispersion = o.dispersion;
  if (!o.prior_sigma.empty()) c.prior_sigma = o.prior_sigma;
  if (o.nu != 0.0) c.student_nu = o.nu;
  c.metric = Metric::dense;
  c.adapt_metric = adapt_metric;
  if (fly_metric) {
    c.metric = Metric::fly;
    c.fly_metric_blend = o.fly_metric_blend;
  }
  if (algo == Algo::flymc && c.model == ModelKind::logistic &&
      (kernel == KernelKind::hmc || kernel == KernelKind::nuts))
    c.slack_scale = o.flymc_slack_scale;
  c.hmc_steps = algo == Algo::full ? o.hmc_steps_regular : o.hmc_steps_flymc;
  c.warmup = algo == Algo::full ? o.warmup_regular : o.warmup_flymc;
  c.iters = algo == Algo::full ? o.pilot_regular : o.pilot_flymc;
  if (algo == Algo::flymc && kernel == KernelKind::rwmh) c.iters *= 10;  // cheap, slow-mixing
  if (kernel == KernelKind::pcn || kernel == KernelKind::imh) {          // one query per iteration
    c.warmup *= 10;
    c.iters *= 10;
  }
  return c;
}

/// At most 10,000 kept draws per chain: enough for the ESS estimate, bounded memory.
long thin_for(long iters) { return std::max(1L, iters / 10000); }

RunResult timed_run(const std::string& algo, RunConfig c, const std::shared_ptr<const Dataset>& d) {
  c.thin = thin_for(c.iters);
  std::fprintf(stderr, "tall: %-14s %d chains x (%ld warm-up + %ld) iterations ...\n", algo.c_str(),
               c.chains, c.warmup, c.iters);
  return bench::run_shown(c, d);
}

/// Runs `cfg` as a pilot, then, if the pilot's min ESS falls short of the target, again with the
/// iterations the pilot's ESS per iteration says the target needs (at most max_seconds).
TallRow measure(const TallOptions& o, const std::string& algo, RunConfig cfg,
                const std::shared_ptr<const Dataset>& data, double read_seconds) {
  TallRow row;
  row.algo = algo;
  row.time_to_target = time_to_target(o, cfg, data, read_seconds);
  row.result = timed_run(algo, cfg, data);
  double e = min_ess(row.result);
  if (e < o.target_ess) {
    const double per_iter = std::max(e, 1.0) / double(cfg.iters);
    const double spi = std::max(seconds_per_iter(row.result), 1e-9);
    const double want = 1.25 * o.target_ess / per_iter;
    const double cap = o.max_seconds / spi;
    cfg.iters = static_cast<long>(std::ceil(std::min(want, cap)));
    if (cfg.iters > row.result.config.iters) {
      row.result = timed_run(algo, cfg, data);
      e = min_ess(row.result);
    }
  }
  row.min_ess = e;
  row.max_rhat = max_rhat(row.result);
  row.ess_per_second = e / row.result.sampling_seconds;
  row.summary = summaries(row.result);
  return row;
}

KernelKind kernel(const std::string& k) {
  const auto& kernels = kernel_names();
  const auto it = kernels.find(k);
  if (it == kernels.end()) throw UsageError("tall: unknown kernel '" + k + "'");
  return it->second;
}

const TallRow* find_row(const std::vector<TallRow>& rows, const std::string& algo) {
  for (const TallRow& r : rows)
    if (r.algo == algo) return &r;
  return nullptr;
}

std::vector<TallRow> run_all(const TallOptions& o, const std::shared_ptr<const Dataset>& data,
                             double read_seconds) {
  std::vector<TallRow> rows;
  for (const std::string& m : split_list(o.regular_metric)) {
    if (m != "adapted" && m != "laplace")
      throw UsageError("tall: --regular-metric: adapted, laplace");
    const bool adapted = m == "adapted";
    for (const std::string& k : split_list(o.regular)) {
      // pCN and IMH move on the Laplace Gaussian itself (no metric to adapt): one row, regular-<k>.
      const bool laplace_kernel = kernel(k) == KernelKind::pcn || kernel(k) == KernelKind::imh;
      const std::string name = "regular-" + k + (adapted || laplace_kernel ? "" : "-laplace");
      if (find_row(rows, name)) continue;
      rows.push_back(measure(o, name, algo_config(o, Algo::full, kernel(k), false, adapted), data,
                             read_seconds));
    }
  }
  if (model_kind(o.model) != ModelKind::softmax)
    for (const std::string& p : split_list(o.smh)) {
      // A trailing 3 asks for the third-order expansion (--smh-order 3): rows smh-pcn3, smh-rw3.
      const bool third = !p.empty() && p.back() == '3';
      const auto proposal = parse_enum<SmhProposal>(third ? p.substr(0, p.size() - 1) : p);
      if (!proposal) throw UsageError("tall: --smh: pcn, rw, pcn3, rw3");
      RunConfig c = algo_config(o, Algo::smh, KernelKind::rwmh, false);
      c.metric = Metric::automatic;  // SMH scales its proposals by the Laplace fit itself
      c.proposal = *proposal;
      c.smh_order = third ? 3 : 2;
      c.warmup = o.warmup_smh;
      c.iters = o.pilot_smh;
      rows.push_back(measure(o, "smh-" + p, c, data, read_seconds));
    }
  for (const std::string& m : split_list(o.flymc_metric)) {
    if (m != "dense" && m != "fly") throw UsageError("tall: --flymc-metric: dense or fly");
    const bool fly = m == "fly";
    for (const std::string& k : split_list(o.flymc)) {
      const std::string name = "flymc-" + k + (fly ? "-fly" : "");
      const RunConfig c = algo_config(o, Algo::flymc, kernel(k), fly);
      try {  // a model FlyMC cannot serve (Poisson, negative binomial) has no FlyMC rows
        check_model_fits(c, false, data->has_row_extras());
      } catch (const ConfigError& e) {
        std::fprintf(stderr, "tall: no %s row: %s\n", name.c_str(), e.what());
        continue;
      }
      rows.push_back(measure(o, name, c, data, read_seconds));
    }
  }
  return rows;
}

nlohmann::json row_json(const TallRow& r, const Dataset& data, double best_regular,
                        const TallRow* best) {
  const RunResult& res = r.result;
  return {
      {"algo", r.algo},
      {"kernel", to_string(res.config.kernel)},
      // SMH scales its proposals by the Laplace precision itself, whatever the metric option.
      {"metric", res.config.algo == Algo::smh
                     ? std::string("laplace-whitened")
                     : std::string(to_string(res.config.resolved_metric()))},
      {"metric_adapted", res.config.adapt_metric && res.config.resolved_metric() != Metric::fly},
      {"slack_scale", res.config.slack_scale},
      {"n", data.n()},
      {"d", res.dim},
      {"queries_per_iter", res.queries_per_iter()},
      {"bright_mean", res.bright_mean()},
      {"min_ess_bulk", r.min_ess},
      {"max_rhat", r.max_rhat},
      {"ess_per_second_min", r.ess_per_second},
      {"seconds", res.sampling_seconds},
      {"warmup_seconds", res.warmup_seconds},
      {"setup_seconds", res.setup_seconds},
      {"end_to_end_seconds", bench::end_to_end_seconds(res)},
      {"seconds_per_1000_ess", bench::seconds_per_1000_ess(res, r.min_ess)},
      {"seconds_per_iter", seconds_per_iter(res)},
      {"iters", res.config.iters},
      {"warmup", res.config.warmup},
      {"chains", res.config.chains},
      {"step_size", res.chains.empty() ? 0.0 : res.chains[0].step_size},
      {"accept_rate", res.accept_rate()},
      {"divergences", res.divergences()},
      {"speedup_vs_best_regular", r.ess_per_second / best_regular},
      {"max_mean_z_vs_best_regular", best ? max_mean_z(r.summary, best->summary) : 0.0}};
}

/// `--algo auto` on the same data and options: every candidate's predicted ESS/s beside the
/// measured row of the same name, and the chosen candidate's measured ESS/s over the best
/// measured exact row's (null where the chosen candidate has no row).
nlohmann::json check_auto(const TallOptions& o, const std::shared_ptr<const Dataset>& data,
                          const std::vector<TallRow>& rows) {
  std::fprintf(stderr, "tall: --algo auto: pilots ...\n");
  // Auto's cost rule weighs set-up against the run's iterations, so it is asked about a run as
  // long as the subsampling rows it is compared with (SMH's lengths), not the regular pilots'.
  RunConfig nominal = algo_config(o, Algo::full, KernelKind::nuts, false);
  nominal.warmup = o.warmup_smh;
  nominal.iters = o.pilot_smh;
  const AlgoChoice c = choose_algo(nominal, data);
  // The best exact row by both protocols: min ESS per second of sampling, and seconds per 1,000
  // effective draws end to end (set-up included), which is what auto's cost rule weighs.
  double best = 0.0, best_e2e = 0.0;
  for (const TallRow& r : rows) {
    if (!is_exact(r.result.config.algo)) continue;
    best = std::max(best, r.ess_per_second);
    const double e2e = r.min_ess > 0.0 ? bench::seconds_per_1000_ess(r.result, r.min_ess) : 0.0;
    if (e2e > 0.0 && (best_e2e == 0.0 || e2e < best_e2e)) best_e2e = e2e;
  }
  nlohmann::json cands = nlohmann::json::array();
  for (const AutoCandidate& a : c.candidates) {
    const TallRow* row = find_row(rows, a.name);
    cands.push_back({{"name", a.name},
                     {"skipped", a.skipped.empty() ? nlohmann::json() : nlohmann::json(a.skipped)},
                     {"predicted_ess_per_second",
                      a.skipped.empty() ? nlohmann::json(a.ess_per_second) : nlohmann::json()},
                     {"pilot_seconds", a.pilot_seconds},
                     {"measured_ess_per_second",
                      row ? nlohmann::json(row->ess_per_second) : nlohmann::json()}});
  }
  const TallRow* chosen = find_row(rows, c.best().name);
  const double chosen_e2e = chosen && chosen->min_ess > 0.0
                                ? bench::seconds_per_1000_ess(chosen->result, chosen->min_ess)
                                : 0.0;
  // What a user of --algo auto waits for 1,000 effective draws: the pilots, then the chosen run.
  nlohmann::json per_1000;
  if (chosen && chosen->min_ess > 0.0)
    per_1000 =
        1000.0 * (c.pilot_seconds + bench::end_to_end_seconds(chosen->result)) / chosen->min_ess;
  return {{"chosen", c.best().name},
          {"run", {{"warmup", nominal.warmup}, {"iters", nominal.iters}}},
          {"seconds_per_1000_ess_with_pilots", per_1000},
          {"predicted_speedup", c.predicted_speedup},
          {"rough", c.pilots_short},
          {"pilot_seconds", c.pilot_seconds},
          {"candidates", cands},
          {"auto_vs_best",
           chosen && best > 0.0 ? nlohmann::json(chosen->ess_per_second / best) : nlohmann::json()},
          {"auto_vs_best_end_to_end", chosen_e2e > 0.0 && best_e2e > 0.0
                                          ? nlohmann::json(best_e2e / chosen_e2e)
                                          : nlohmann::json()}};
}

/// The default run, `flymc sample --data FILE` (--algo auto --ess N): its pilots, then its
/// chosen run to the target; seconds from the data's reading, and the choice.
nlohmann::json default_run(const TallOptions& o, const std::shared_ptr<const Dataset>& data,
                           double read_seconds) {
  if (o.time_to_ess <= 0.0) return nullptr;
  std::fprintf(stderr, "tall: the default run (--algo auto --ess %.0f) ...\n", o.time_to_ess);
  RunConfig c = algo_config(o, Algo::flymc, KernelKind::rwmh, false);
  c.warmup = RunConfig{}.warmup;
  c.ess = o.time_to_ess;
  c.iters = kEssIterCap;
  c.max_seconds = o.target_max_seconds;  // (the pilots count: the run gets what they leave)
  const AlgoChoice choice = choose_algo(c, data);
  const bench::TargetTime t =
      time_to_target(o, choice.best().config, data, read_seconds + choice.pilot_seconds,
                     Precomputed{choice.map, choice.cache});
  nlohmann::json j = {
      {"chosen", choice.best().name}, {"why", choice.why}, {"pilot_seconds", choice.pilot_seconds}};
  t.write(j);
  return j;
}

void print_auto(const nlohmann::json& a) {
  if (a.is_null()) return;
  std::printf("\n--algo auto chose %s for a run of %ld + %ld iterations (pilots %.1f s%s)\n",
              a["chosen"].get<std::string>().c_str(), a["run"]["warmup"].get<long>(),
              a["run"]["iters"].get<long>(), double(a["pilot_seconds"]),
              a["rough"].get<bool>() ? ", rough" : "");
  std::printf("  %-22s %14s %14s\n", "candidate", "predicted ESS/s", "measured ESS/s");
  for (const auto& c : a["candidates"]) {
    const auto value = [](const nlohmann::json& v) { return v.is_null() ? NAN : double(v); };
    std::printf("  %-22s %14.4g %14.4g%s\n", c["name"].get<std::string>().c_str(),
                value(c["predicted_ess_per_second"]), value(c["measured_ess_per_second"]),
                c["skipped"].is_null() ? "" : "  (skipped)");
  }
  if (!a["auto_vs_best"].is_null())
    std::printf("  the choice measured %.3g x the best measured exact row by min ESS/s\n",
                double(a["auto_vs_best"]));
  if (a.contains("auto_vs_best_end_to_end") && !a["auto_vs_best_end_to_end"].is_null())
    std::printf("  and %.3g x the best by seconds per 1,000 effective draws end to end\n",
                double(a["auto_vs_best_end_to_end"]));
  if (!a["seconds_per_1000_ess_with_pilots"].is_null())
    std::printf("  end to end with the pilots: %.1f s per 1,000 effective draws\n",
                double(a["seconds_per_1000_ess_with_pilots"]));
}

void tall(const TallOptions& o) {
  const Stopwatch read_clock;
  const LabelDomain labels = label_domain(model_kind(o.model));
  const auto data =
      std::make_shared<const Dataset>(load_dataset(o.data, labels, Storage::f64, o.columns));
  const double read_seconds = read_clock.seconds();
  const std::vector<TallRow> rows = run_all(o, data, read_seconds);
  const nlohmann::json defaults = default_run(o, data, read_seconds);
  const nlohmann::json autos = o.check_auto ? check_auto(o, data, rows) : nlohmann::json();
  const TallRow* best = nullptr;
  for (const TallRow& r : rows)
    if (r.result.config.algo == Algo::full && (!best || r.ess_per_second > best->ess_per_second))
      best = &r;
  const double best_es = best ? best->ess_per_second : 1.0;
  std::printf("\nTall data: %s (N = %zu, D = %zu), %d chains per algorithm\n", o.data.c_str(),
              data->n(), data->d(), o.chains);
  std::printf("%-20s %12s %9s %9s %7s %11s %10s %9s %8s %10s %7s %10s\n", "algorithm",
              "queries/iter", "bright", "min ESS", "max R^", "min ESS/s", "x best reg", "us/iter",
              "seconds", "s/1k ESS", "mean z", "to target");
  nlohmann::json jrows = nlohmann::json::array(), posteriors = nlohmann::json::object();
  for (const TallRow& r : rows) {
    nlohmann::json j = row_json(r, *data, best_es, best);
    r.time_to_target.write(j);
    std::printf("%-20s %12.1f %9.1f %9.1f %7.3f %11.3f %10.2f %9.2f %8.1f %10.2f %7.2f %10s\n",
                r.algo.c_str(), r.result.queries_per_iter(), r.result.bright_mean(), r.min_ess,
                r.max_rhat, r.ess_per_second, double(j["speedup_vs_best_regular"]),
                1e6 * seconds_per_iter(r.result), r.result.sampling_seconds,
                bench::seconds_per_1000_ess(r.result, r.min_ess),
                double(j["max_mean_z_vs_best_regular"]), r.time_to_target.text().c_str());
    jrows.push_back(j);
    nlohmann::json post = nlohmann::json::array();
    for (std::size_t p = 0; p < r.summary.size(); ++p)
      post.push_back({{"name", r.result.names[p]},
                      {"mean", r.summary[p].mean},
                      {"mcse_mean", r.summary[p].mcse_mean}});
    posteriors[r.algo] = post;
  }
  if (!defaults.is_null()) {
    const auto& t = defaults["time_to_target_seconds"];
    const bench::TargetTime tt{t.is_null() ? NAN : double(t),
                               defaults["time_to_target_projected"].get<bool>()};
    std::printf(
        "%-20s %12s %9s %9s %7s %11s %10s %9s %8s %10s %7s %10s  (chose %s; pilots %.2f s)\n",
        "default (auto)", "", "", "", "", "", "", "", "", "", "", tt.text().c_str(),
        defaults["chosen"].get<std::string>().c_str(), double(defaults["pilot_seconds"]));
  }
  std::printf(
      "(min ESS/s: min bulk ESS over parameters per second of sampling wall time; x best reg: "
      "ratio to the best regular-MCMC row; s/1k ESS: wall seconds of set-up, warm-up and sampling "
      "per 1,000 effective draws; mean z: largest |mean difference| / combined MCSE against "
      "that row)\n");
  std::printf(
      "(to target: seconds from the data's reading to min bulk and tail ESS >= %.0f and R-hat <= "
      "1.01, each row's sampler run with --ess, set-up included; default: flymc sample's "
      "--algo auto --ess, pilots included; ~: the run reached --target-max-seconds (%.0f s) "
      "first, and its sampling is projected at its ESS rate so far)\n",
      o.time_to_ess, o.target_max_seconds);
  print_auto(autos);
  write_json(o.json, "tall",
             {{"dataset", o.data},
              {"model", o.model},
              {"model_options", model_options(o)},
              {"prior", o.prior},
              {"prior_sd", o.prior_sd},
              {"rows", jrows},
              {"auto", autos},
              {"default", defaults},
              {"time_to_ess", o.time_to_ess},
              {"posteriors", posteriors},
              {"target_ess", o.target_ess}});
}

}  // namespace

void add_tall_command(CLI::App& app, TallOptions& o) {
  CLI::App* t = app.add_subcommand(
      "tall",
      "Tall data: regular MCMC's best (gradient kernels, dense adapted metric) against FlyMC "
      "with each theta-kernel, budgets sized for a min bulk ESS target");
  t->add_option("--data", o.data, "Data set (.csv/.npy)")->required();
  cli::add_run_named(t, "model", o.model)->capture_default_str();
  t->add_flag("--auto,!--no-auto", o.check_auto,
              "also run --algo auto's pilots and compare its choice with the measured rows");
  t->add_option("--json", o.json, "Write rows[] and posteriors{} as JSON");
  cli::add_run_named(t, "chains", o.chains)->capture_default_str();
  cli::add_run_named(t, "threads", o.threads, "0: all cores")->capture_default_str();
  cli::add_run_named(t, "seed", o.seed)->capture_default_str();
  t->add_option("--time-to-ess", o.time_to_ess,
                "Also run each row's sampler, and the default flymc sample (--algo auto), with "
                "--ess N: the seconds from the data's reading to the target (0: skip)")
      ->capture_default_str();
  t->add_option("--target-ess", o.target_ess, "min bulk ESS each algorithm is run to")
      ->capture_default_str();
  cli::add_run_named(t, "max-seconds", o.max_seconds, "sampling time cap per algorithm")
      ->capture_default_str();
  t->add_option("--target-max-seconds", o.target_max_seconds,
                "wall-time cap of each --time-to-ess run (pilots included for the default run); "
                "a run it ends reports its projected time, marked ~ (0: no cap)")
      ->capture_default_str();
  t->add_option("--regular", o.regular, "regular MCMC's kernels, comma-separated")
      ->capture_default_str();
  t->add_option("--regular-metric", o.regular_metric,
                "regular MCMC's metrics, comma-separated: adapted (Stan's windows from the "
                "Laplace covariance), laplace (the Laplace covariance, fixed)")
      ->capture_default_str();
  t->add_option("--flymc", o.flymc, "FlyMC's kernels, comma-separated")->capture_default_str();
  t->add_option("--flymc-metric", o.flymc_metric,
                "FlyMC's metrics, comma-separated: dense (Laplace, adapted), fly (p(theta | z))")
      ->capture_default_str();
  cli::add_run_named(t, "fly-metric-blend", o.fly_metric_blend)->capture_default_str();
  t->add_option("--flymc-slack-scale", o.flymc_slack_scale,
                "FlyMC's --slack-scale for HMC and NUTS (logistic regression)")
      ->capture_default_str();
  t->add_option("--warmup-regular", o.warmup_regular)->capture_default_str();
  t->add_option("--pilot-regular", o.pilot_regular, "regular MCMC's pilot iterations")
      ->capture_default_str();
  t->add_option("--warmup-flymc", o.warmup_flymc)->capture_default_str();
  t->add_option("--pilot-flymc", o.pilot_flymc, "FlyMC's pilot iterations (x10 for rwmh)")
      ->capture_default_str();
  t->add_option("--smh", o.smh,
                "scalable MH's proposals, comma-separated: pcn, rw, and pcn3, rw3 with the "
                "third-order expansion (--smh-order 3: the models with a bound or an envelope "
                "on the fourth derivative, all but robust and softmax; empty: none)")
      ->capture_default_str();
  t->add_option("--warmup-smh", o.warmup_smh)->capture_default_str();
  t->add_option("--pilot-smh", o.pilot_smh, "scalable MH's pilot iterations")
      ->capture_default_str();
  t->add_option("--hmc-steps-regular", o.hmc_steps_regular)->capture_default_str();
  t->add_option("--hmc-steps-flymc", o.hmc_steps_flymc)->capture_default_str();
  cli::add_run_named(t, "response", o.columns.response);
  cli::add_run_named(t, "weights", o.columns.weights);
  cli::add_run_named(t, "trials", o.columns.trials);
  cli::add_run_named(t, "offset", o.columns.offset);
  cli::add_run_named(t, "prior-sd", o.prior_sd)->capture_default_str();
  cli::add_run_named(t, "prior", o.prior)->capture_default_str();
  cli::add_run_named(t, "dispersion", o.dispersion);
  cli::add_run_named(t, "prior-sigma", o.prior_sigma);
  cli::add_run_named(t, "nu", o.nu);
  t->callback([&o] { tall(o); });
}

}  // namespace flymc::bench
