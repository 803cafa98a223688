#pragma once
/// @file choose_algo.hpp
/// `--algo auto`: the exact sampler predicted to give the most effective draws per second on the
/// user's data, chosen among every exact configuration that fits the model (docs/math.md §3.3).
///
/// The candidates are the strongest configurations the benchmarks know, not the user's kernel:
/// regular MCMC (NUTS with the Laplace covariance as a fixed metric, NUTS with a dense metric
/// adapted from it, the Laplace-invariant pCN), FlyMC (NUTS on p(θ | z) with the fly metric),
/// scalable MH with the pCN proposal, and Zig-Zag with control variates. auto_candidates() lists
/// them for a model and the data's shape; choose_algo() runs a short pilot of each and keeps the
/// one predicted to end the run soonest.
///
/// Why counted work, not seconds: the same command must give the same draws on a busy machine as
/// on an idle one, and at any thread count. Every pilot's length, every give-up and budget
/// decision and the ranking are made on the cost model's price of the pilots' counted work
/// (iterations, likelihood queries, gradients, set-up passes; cost_model.hpp), in core-seconds
/// of the machine it was calibrated on. The clock only reports (pilot_seconds, predicted
/// seconds) and enforces the user's RunConfig::max_seconds, which may cut a pilot short: only
/// then can the choice depend on the machine.
///
/// Why pilots: a sampler's mixing per iteration is not a function of the data's shape alone
/// (FlyMC's penalty differs by an order of magnitude between data sets with similar bright
/// counts; SMH's acceptance depends on how Gaussian the posterior is), so each candidate runs.
/// Regular MCMC's pilots run on a seeded random subset of at most AutoOptions::regular_rows rows,
/// their queries scaled by N / rows and priced as queries on all N rows (streamed from memory
/// when they do not fit the cache): a full-data gradient costs time linear in N, while the
/// Laplace-preconditioned geometry, hence ESS per iteration, barely changes with N. The subsampling
/// samplers' pilots run on all the data (their iterations are cheap by design).
#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

struct SetupCache;  // flymc/mcmc/sampler.hpp

/// The pilots' lengths and time limit.
struct AutoOptions {
  /// NUTS: long enough that the step size settles and the ESS of the slowest coordinate is
  /// estimated within tens of percent (shorter pilots misranked NUTS and pCN on 7-vs-9).
  long regular_warmup = 500, regular_iters = 1000;
  /// Regular pCN: one query per iteration, so a longer pilot costs little; a short one overrates
  /// a chain that sticks now and then (its rare long rejections runs are missed).
  long pcn_warmup = 1000, pcn_iters = 10000;
  long flymc_warmup = 1000, flymc_iters = 1000;
  long smh_warmup = 1000, smh_iters = 2000;
  long pdmp_warmup = 200, pdmp_iters = 2000;
  std::size_t regular_rows = 20000;  ///< regular MCMC's pilots run on at most this many rows
  long timing_iters = 3;  ///< with fewer rows than N: MALA iterations on all N timing a query
  /// A pilot whose min bulk ESS is below this runs again with four times the sampling
  /// iterations: an ESS of one or two is noise, and a ratio of two such pilots is a ratio of
  /// their run times (a chain that makes one effective draw per thousands of iterations, as
  /// RW-MH on 51 correlated coefficients does, looks as good as any other).
  double min_pilot_ess = 10.0;
  /// All the pilots of a run of fixed length together, in core-seconds (cost_model.hpp): a
  /// longer run is only started when its price fits the pilot's share of this budget (the
  /// budget left over the candidates left; each run costs about four times the last).
  double budget_seconds = 60.0;
  /// The run will checkpoint: only the samplers that can (FlyMC, regular MCMC) are candidates.
  bool checkpointed = false;
  /// The options the user gave (command line, Python keywords): a candidate whose sampler does
  /// not read one of them is skipped, saying which (none of them may be
  /// OptionInfo::chosen_by_auto).
  std::vector<const OptionInfo*> given;
  /// With more rows than regular_rows, the subsampling samplers' pilots run first, and regular
  /// MCMC's are skipped when one of them already beats regular MCMC's bound: at most 5 effective
  /// draws per draw per chain at one full-data query per iteration, priced by the timing
  /// iterations (docs/math.md §3.3). False runs every pilot.
  bool skip_beaten_regular = true;
  /// A run to an ESS target (RunConfig::ess): each pilot runs to this ESS (or a fifth of the
  /// target, if less), with these warm-ups (long enough for the step size and ρ to settle),
  /// so that piloting costs a small part of the run it decides.
  double pilot_ess = 50.0;
  /// A run to an ESS target: the pilots' chains (at most the run's). Fixed, not the thread
  /// count: a pilot's draws decide where the run's chains start.
  int pilot_chains = 2;
  double pilot_max_rhat = 1.1;  ///< the pilots' R̂ limit (a stuck chain, not convergence)
  long target_regular_warmup = 100, target_pcn_warmup = 250, target_flymc_warmup = 250,
       target_smh_warmup = 250;
  /// A run to an ESS target: after the first pilot, the others together may cost at most this
  /// share of the best predicted run's core-seconds; each is stopped at its share (at a block's
  /// end, RunConfig::max_cost) and dropped if it has not met its ESS by then: it could not pay
  /// for itself.
  double pilot_budget_share = 0.2;
  /// A run of fixed length: the pilots after the first also pay for themselves (one is not
  /// started when the least it can cost exceeds what is left of pilot_budget_share of the best
  /// predicted run). False pilots every candidate (within budget_seconds).
  bool fixed_pays_for_itself = true;
  /// A run to an ESS target: a pilot after the first gives up at a block's end once its ESS
  /// rate so far predicts its sampling alone at more than this many times the best run's
  /// predicted core-seconds (RunConfig::give_up_cost): it could not win, and a pilot far behind
  /// would otherwise spend all of its share. Near-ties run their whole pilot. 0: never.
  double give_up_factor = 2.0;
  /// A run to an ESS target: the chosen candidate takes over its pilot's adaptation (the step
  /// size; SMH's ρ) when the pilot met its ESS, and its warm-up is cut to at most this many
  /// iterations (the rest of what warm-up is for, adapting from a guess, the pilot did). Not for
  /// an adapted metric, whose windows need the whole warm-up. 0: no reuse.
  long reuse_warmup = 200;
  /// A run to an ESS target: the chosen candidate's chains also start where its pilot's chains
  /// ended (MapResult::chain_starts; the pilot's last draws, and earlier ones for chains beyond
  /// the pilot's), when the pilot met its ESS on all the rows, and its warm-up is cut to at most
  /// this many iterations: the chains start in the posterior's bulk, and only the step size
  /// settles. Negative: the chains start at θ_MAP plus jitter.
  long reuse_state_warmup = 50;
};

/// One configuration `--algo auto` weighs, and what its pilot predicted.
struct AutoCandidate {
  std::string name;  ///< the benchmark's row name: regular-nuts-laplace, flymc-nuts-fly, smh-pcn, …
  RunConfig
      config;  ///< the run it would make: the user's options with its algorithm, kernel, metric
  /// Empty when a pilot ran; otherwise why not (the model does not take it, or its cost model
  /// rules it out).
  std::string skipped;
  /// Predicted min ESS per core-second of sampling on all the data (the cost model's price of the
  /// pilot's counted work): bulk ESS, and for a run to an ESS target the smaller of bulk and
  /// tail ESS.
  double ess_per_second = 0.0;
  /// Predicted core-seconds from the end of the pilots to the end of the run: the set-up the
  /// pilots have not already built, the warm-up, and the sampling to the request (the ESS target
  /// or the iterations). Auto chooses the candidate with the fewest.
  double predicted_cost = 0.0;
  /// predicted_cost in wall seconds on min(chains, threads) cores (reporting only).
  double predicted_seconds = 0.0;
  double pilot_ess = 0.0;      ///< the pilot's min bulk ESS (its last run)
  long pilot_iters = 0;        ///< sampling iterations of the pilot's last run
  std::size_t pilot_rows = 0;  ///< rows the pilot ran on
  double pilot_seconds = 0.0;  ///< wall time of the pilot, set-up included (reporting only)
  double pilot_cost = 0.0;     ///< the pilot's price in core-seconds (its MAP fit excluded)
  bool rough = false;          ///< the pilot ended below AutoOptions::min_pilot_ess
  /// The step size the pilot's warm-up adapted, its chains' mean (SMH with pCN: its tuned ρ);
  /// NaN when no pilot ran.
  double pilot_step_size = std::numeric_limits<double>::quiet_NaN();
  /// Where the run's chains would start (AutoOptions::reuse_state_warmup): draws of the pilot's
  /// chains, one per chain of the run; empty when the pilot ran on a subset of the rows.
  std::vector<Vec> pilot_states;
};

/// What `--algo auto` decided and why.
struct AlgoChoice {
  std::vector<AutoCandidate> candidates;  ///< in auto_candidates() order
  std::size_t chosen = 0;                 ///< index of the winner in `candidates`
  /// The chosen candidate's predicted ESS per core-second over the best regular-MCMC candidate's (1
  /// when a regular configuration won); when every regular pilot was skipped for its bound
  /// (AutoOptions::skip_beaten_regular), over that bound: a lower bound of the speedup.
  double predicted_speedup = 0.0;
  double pilot_seconds = 0.0;  ///< wall time of all the pilots
  /// The MAP fit on all the data the pilots shared; hand it to the chosen run (Precomputed) so
  /// that it does not search again. Null when no pilot ran on all the data.
  std::shared_ptr<const MapResult> map;
  /// The set-up the pilots on all the data built that the chosen sampler can take over (its SMH
  /// pilot's expansion and bounds); hand it to the chosen run with the map (Precomputed).
  std::shared_ptr<SetupCache> cache;
  /// The winner's or the runner-up's pilot ended short of min_pilot_ess within its time: the
  /// comparison that decided is rough.
  bool pilots_short = false;
  /// Why the chosen candidate won, in a sentence (the header line and summary.json).
  std::string why;

  const AutoCandidate& best() const { return candidates.at(chosen); }
  Algo algo() const { return best().config.algo; }
};

/// The candidates for `cfg`'s model, prior and options (chains, threads, seed, warm-up and
/// sampling lengths are kept; algorithm, kernel, metric and their tuning are the candidate's),
/// with `skipped` set for those the model or the data's shape rule out, or that cannot checkpoint
/// when the run will (`checkpointed`). Deterministic: every MPI
/// process builds the same list, so a choice travels as its index.
std::vector<AutoCandidate> auto_candidates(const RunConfig& cfg, const Dataset& data,
                                           bool checkpointed = false,
                                           std::span<const OptionInfo* const> given = {});

/// Runs a pilot of every candidate not skipped and picks the one predicted to end the run
/// soonest (a run to an ESS target), or with the most ESS per core-second of sampling (a run of
/// fixed length), by the cost model's prices (cost_model.hpp): the same choice and pilots at any
/// load and thread count, unless the user's max_seconds cuts a pilot. For an ESS target the pilots
/// are short runs to a small ESS, piloted in the order in which they are likeliest to win (regular
/// MCMC first on data of at most regular_rows rows, the subsampling samplers first above), and a
/// pilot that could not pay for itself within pilot_budget_share of the best run is stopped or not
/// started (docs/math.md §3.3). The pilots use random streams of their own, so a run of the chosen
/// candidate's config with cfg.seed (and Precomputed{choice.map, choice.cache}) draws exactly what
/// the same options given by hand would. The first run on all the data finds θ_MAP; the later ones
/// take it (Precomputed).
/// @throw ConfigError, DataError as run() does.
AlgoChoice choose_algo(const RunConfig& cfg, const std::shared_ptr<const Dataset>& data,
                       const AutoOptions& opt = {});

}  // namespace flymc
