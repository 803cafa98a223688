#pragma once
// flymc-bench tall: FlyMC against regular MCMC's best on tall data, every algorithm run until its
// min bulk ESS reaches a target (or a time cap), in one process.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "flymc/core/config.hpp"
#include "flymc/data/columns.hpp"

namespace flymc::bench {

struct TallOptions {
  std::string data, json;
  std::string model = "logistic";  ///< logistic, softmax or robust
  /// The data file's response, weight, trials and offset columns (--response ... --offset).
  DataColumns columns;
  /// Check `--algo auto`: its candidates' predictions against the measured rows of the same
  /// names, and its choice's measured ESS/s against the best measured exact row's.
  bool check_auto = true;
  int chains = 2, threads = 0;
  std::uint64_t seed = 1;
  /// Every algorithm runs until its min bulk ESS (over parameters, all chains) reaches this,
  /// estimated from a pilot run, unless that would take more than max_seconds of sampling.
  double target_ess = 150.0;
  double max_seconds = 900.0;
  /// Each row's time to this many effective draws with --ess, and the default run's (0: off).
  double time_to_ess = 1000.0;
  /// The wall-time cap of each of those runs (0: none): a row that reaches it reports the time
  /// its ESS rate so far projects, marked.
  double target_max_seconds = 120.0;
  std::string regular = "nuts,hmc";  ///< regular MCMC's kernels (dense metric)
  /// Regular MCMC's metrics, comma-separated: adapted (the dense Laplace covariance re-estimated
  /// in Stan's windows) and/or laplace (the dense Laplace covariance kept fixed, rows named
  /// regular-<kernel>-laplace). With the few hundred warm-up iterations tall data afford, the
  /// windows' estimate of a dense D × D covariance is noisier than the Laplace covariance it
  /// starts from, so the fixed metric is the stronger competitor there; both are measured and
  /// the ratios are to the best.
  std::string regular_metric = "adapted,laplace";
  std::string flymc = "rwmh,mala,hmc,nuts";  ///< FlyMC's kernels
  /// FlyMC's metrics, comma-separated: dense (Laplace, adapted) and/or fly (docs/math.md §3.2,
  /// rows named flymc-<kernel>-fly).
  std::string flymc_metric = "dense,fly";
  double fly_metric_blend = 0.0;
  /// FlyMC's per-datum slack scale (RunConfig::slack_scale) for the trajectory kernels, HMC and
  /// NUTS, whose mixing it helps on tall data; the other kernels run without it (docs/math.md
  /// §1.5). Logistic regression only.
  double flymc_slack_scale = 1.0;
  long warmup_regular = 300, pilot_regular = 150;
  long warmup_flymc = 3000, pilot_flymc = 20000;
  /// Scalable MH's proposals, comma-separated (pcn, rw; rows smh-<proposal>; logistic regression
  /// only, so other models skip them), with their warm-up and pilot iterations.
  std::string smh = "pcn,rw";
  long warmup_smh = 2000, pilot_smh = 20000;
  int hmc_steps_regular = 16, hmc_steps_flymc = 8;
  double prior_sd = 1.0;
  std::string prior = "gaussian";  // Table 1's robust row uses laplace
  double dispersion = 0.0;         // --model negbin's; 0: not given
  std::string prior_sigma;         // --model gaussian's and student_t's σ prior; empty: default
  double nu = 0.0;                 // --model robust's and student_t's ν; 0: the default
};

/// Adds the `tall` subcommand, which runs with `o` when chosen.
void add_tall_command(CLI::App& app, TallOptions& o);

}  // namespace flymc::bench
