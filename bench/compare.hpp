#pragma once
// flymc-bench compare: every sampler of the engine on one logistic-regression data set at a fixed
// wall-clock budget each, their cost (ESS/s, queries per effective draw) and their error against
// a long, held-back regular-MCMC reference run, exact and approximate methods labelled as such.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace flymc::bench {

struct CompareOptions {
  std::string data;        ///< a logistic data set; empty: synthetic rows (synth_n × synth_d)
  long synth_n = 1000000;  ///< synthetic data: rows
  long synth_d = 11;       ///< ... and columns (the last one the intercept)
  std::string json;        ///< rows[] and the reference as JSON
  std::string reference;   ///< the reference's means and sds: read if present, else written
  std::string algos =      ///< rows, in order (names as the JSON's `algo`)
      "regular-nuts,regular-hmc,regular-pcn,flymc-mala,flymc-nuts-fly,smh-pcn,smh-rw,"
      "minibatch-mh,sgld,bps,lipsbps,sbps,psbps,zigzag-ss,zigzag-cv";
  int chains = 2, threads = 0;
  std::uint64_t seed = 1;
  double budget_seconds = 30.0;      ///< sampling wall time per algorithm
  double reference_seconds = 240.0;  ///< sampling wall time of the reference run
  /// warm-up iterations (regular MCMC: a quarter; FlyMC: three times; continuous-time samplers:
  /// 10 draws, only burn-in)
  long warmup = 1000;
  long batch_size = 100;  ///< approximate samplers' (first) batch
  /// minibatch-mh: its fixed random-walk step is set so that a test reads about this many data
  /// on average (the Barker-test paper's regime, σ = 1); 0 keeps the step adapted to the
  /// acceptance target, whose tests then read nearly all the data.
  double mh_batch_target = 200.0;
  double prior_sd = 1.0;
  /// FlyMC's per-datum slack scale (RunConfig::slack_scale) for its HMC and NUTS rows, their best
  /// setting on tall data (docs/math.md §1.5).
  double flymc_slack_scale = 1.0;
  /// The piecewise-deterministic samplers' coordinates: "laplace" or "none".
  std::string pdmp_precondition = "laplace";
};

/// Adds the `compare` subcommand, which runs with `o` when chosen.
void add_compare_command(CLI::App& app, CompareOptions& o);

}  // namespace flymc::bench
