// --algo auto (flymc/mcmc/auto/choose_algo.hpp): a pilot of every exact candidate, compared by
// min ESS per core-second of sampling, the core-seconds being the cost model's price of the
// pilot's counted work (cost_model.hpp). No decision here reads a clock: the clock only reports
// (pilot_seconds) and enforces the user's --max-seconds.
#include "flymc/mcmc/auto/choose_algo.hpp"

#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/mcmc/auto/cost_model.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/smh/smh.hpp"

namespace flymc {
namespace {

/// The pilots' master seed: unrelated to the run's own streams (Rng mixes seed and stream).
constexpr std::uint64_t kPilotSeedMix = 0xa1905eed5ca1ab1eULL;

/// Effective draws per draw no chain exceeds: NUTS's antithetic moves give more than one on
/// Gaussian targets, never this many.
constexpr double kMaxEssPerDraw = 5.0;

/// Kept draws per chain beyond which a longer pilot thins: a pilot is extended because its chain
/// is strongly autocorrelated, where thinning loses little ESS, and its draws stay in memory.
constexpr long kMaxPilotDraws = 20000;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double min_ess_bulk(const RunResult& r) {
  double m = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < r.dim; ++j) {
    const double e = ess_bulk(r.coordinate(j));
    m = std::min(m, std::isfinite(e) ? e : 0.0);
  }
  return std::isfinite(m) ? m : 0.0;
}

/// A run's counted work, summed over its chains, split at the end of warm-up. A chain's sampling
/// gradients are its gradients prorated by its sampling queries (a chain counts the queries
/// since sampling began, not the gradients).
struct RunWork {
  Work warmup, sampling;
};

RunWork run_work(const RunResult& r) {
  RunWork w;
  for (const ChainResult& ch : r.chains) {
    const auto queries = static_cast<double>(ch.counters.queries);
    const auto sq = static_cast<double>(ch.sampling_queries);
    const double share = queries > 0.0 ? sq / queries : 0.0;
    const auto grads = static_cast<double>(ch.counters.grad_evals);
    const Work s{static_cast<double>(r.config.iters), sq, grads * share};
    w.sampling += s;
    w.warmup += Work{static_cast<double>(r.config.warmup), queries - sq, grads - s.grads};
  }
  return w;
}

/// The MAP fit on all the data, found by the first run there and taken by every later one, and
/// the set-up the runs there leave (SetupCache).
class SharedMap {
 public:
  explicit SharedMap(std::shared_ptr<const Dataset> all) : all_(std::move(all)) {}
  /// What a run on `data` may take over (nothing on a subset).
  Precomputed for_data(const std::shared_ptr<const Dataset>& data) const {
    if (data != all_) return {};
    return Precomputed{map_, cache_};
  }
  /// Keeps the MAP fit of a run on `data` if it is the first on all the data.
  void keep(const std::shared_ptr<const Dataset>& data, const RunResult& r) {
    if (data == all_ && !map_) map_ = std::make_shared<const MapResult>(r.map);
  }
  std::shared_ptr<const MapResult> map() const { return map_; }
  std::shared_ptr<SetupCache> cache() const { return cache_; }

 private:
  std::shared_ptr<const Dataset> all_;
  std::shared_ptr<const MapResult> map_;
  std::shared_ptr<SetupCache> cache_ = std::make_shared<SetupCache>();
};

/// Runs `c` on `data`, sharing the MAP fit through `shared`.
RunResult run_sharing(const RunConfig& c, const std::shared_ptr<const Dataset>& data,
                      SharedMap& shared) {
  RunResult r = run(c, data, {}, nullptr, nullptr, {}, shared.for_data(data));
  shared.keep(data, r);
  return r;
}

/// A pilot's last run, its min bulk ESS, its counted work, and the core-seconds all of its runs
/// cost (priced on the rows they ran on).
struct Pilot {
  RunResult result;
  double min_ess = 0.0;
  RunWork work;
  double cost = 0.0;
};

/// The passes over the data a run's set-up made for its statistics (0 when it took them over).
double statistics_passes(const RunResult& r) {
  double passes = 0.0;
  for (const SetupPhase& p : r.setup_phases)
    if (p.name == "statistics" && p.passes > 0) passes += p.passes;
  return passes;
}

/// The core-seconds a pilot run cost: its statistics passes, warm-up and sampling, priced on the
/// rows it ran on (the shared MAP fit is not counted).
double run_cost(const RunResult& r, const RunWork& w, const CostShape& shape) {
  return statistics_seconds(r.config, shape, statistics_passes(r)) +
         work_seconds(r.config, shape, w.warmup) + work_seconds(r.config, shape, w.sampling);
}

/// Runs `c` on `data`, and again with four times the sampling iterations while its min bulk ESS
/// is below opt.min_pilot_ess and the runs so far and the next, at four times the last's price,
/// stay within `budget` core-seconds. Every run starts afresh from the same seed (run() does not
/// resume): the shorter runs before the last cost about a third of its sampling, plus their
/// warm-ups. `deadline`: the user's --max-seconds left (0: none).
Pilot run_pilot(RunConfig c, const std::shared_ptr<const Dataset>& data, const AutoOptions& opt,
                double budget, double deadline, SharedMap& shared) {
  const CostShape shape = cost_shape(*data, 0);
  auto priced = [&](Pilot& p) {
    p.work = run_work(p.result);
    CostShape s = shape;
    s.p = p.result.dim;
    p.cost += run_cost(p.result, p.work, s);
  };
  if (c.ess > 0.0) {  // one run to the pilot's ESS, stopped at `budget` (at a block's end)
    c.max_cost = std::isfinite(budget) ? std::max(budget, 1e-9) : 0.0;
    c.max_seconds = deadline;
    Pilot p;
    p.result = run_sharing(c, data, shared);
    p.min_ess = std::min(p.result.target.min_ess_bulk, p.result.target.min_ess_tail);
    priced(p);
    return p;
  }
  double spent = 0.0;
  for (;;) {
    Pilot p;
    p.result = run_sharing(c, data, shared);
    p.min_ess = min_ess_bulk(p.result);
    priced(p);
    const double last = p.cost;
    spent += last;
    p.cost = spent;
    if (p.min_ess >= opt.min_pilot_ess || spent + 4.0 * last > budget) return p;
    c.iters *= 4;
    c.thin = std::max(1L, c.iters / kMaxPilotDraws);
  }
}

/// `count` distinct rows of `n`, drawn uniformly, in increasing order (locality).
std::vector<Index> random_rows(std::size_t n, std::size_t count, std::uint64_t seed) {
  std::vector<Index> all(n);
  std::iota(all.begin(), all.end(), Index{0});
  Rng rng(seed, 0x5b5e7ULL);
  for (std::size_t i = 0; i < count; ++i)  // partial Fisher–Yates
    std::swap(all[i], all[i + static_cast<std::size_t>(rng.below(n - i))]);
  all.resize(count);
  std::sort(all.begin(), all.end());
  return all;
}

/// `cfg` with one candidate's sampler. Options a candidate does not set keep the user's values.
RunConfig with_sampler(RunConfig c, Algo algo, KernelKind kernel, Metric metric) {
  c.algo = algo;
  c.kernel = kernel;
  c.metric = metric;
  c.adapt_metric = true;
  c.step_size.reset();
  c.target_accept.reset();
  c.theta_steps.reset();
  c.pcn_rho.reset();
  c.proposal = SmhProposal::pcn;
  c.smh_order = 2;
  return c;
}

bool is_third_order_smh(const AutoCandidate& c) {
  return c.config.algo == Algo::smh && c.config.smh_order == 3;
}

/// Why the third-order SMH candidate runs no pilot, or "": its tensor pass (about d³/6
/// multiply-adds a row, against the second-order pass's d(d + 1)/2), priced by the cost model,
/// would cost more than the whole second-order run (`run2` core-seconds), so it could not end
/// sooner whatever its ESS per second.
std::string third_order_ruled_out(const RunConfig& third, const CostShape& shape, double run2) {
  if (run2 < 0.0) return "";
  const double pass = statistics_seconds(third, shape, 1.0);
  if (pass <= run2) return "";
  char why[200];
  std::snprintf(why, sizeof why,
                "its tensor pass (about %.2g core-s) would outlast the second-order run (about "
                "%.2g core-s)",
                pass, run2);
  return why;
}

bool is_regular(const AutoCandidate& c) { return c.config.algo == Algo::full; }

/// The pilot of a run to an ESS target: a short run to a small ESS (a fifth of the target at
/// most) after a short warm-up (no longer than the run's).
RunConfig target_pilot_config(RunConfig p, const AutoOptions& opt) {
  const double want = p.ess;
  // A fixed number of chains, never the thread count's: the pilot's draws decide the run's
  // start and length. Chains beyond two add as much work as draws, so the pilot measures the
  // same ESS per core-second for less warm-up.
  p.chains = std::min(p.chains, opt.pilot_chains);
  p.ess = std::max(std::min(opt.pilot_ess, want / 5.0), opt.min_pilot_ess);
  // A pilot estimates ESS per second; R̂ only guards against a stuck chain.
  p.max_rhat = std::max(p.max_rhat, opt.pilot_max_rhat);
  p.max_seconds = 0.0;
  p.iters = kEssIterCap;
  long w = opt.target_regular_warmup;
  if (p.algo == Algo::full && p.kernel == KernelKind::pcn) w = opt.target_pcn_warmup;
  if (p.algo == Algo::flymc) w = opt.target_flymc_warmup;
  if (p.algo == Algo::smh) w = opt.target_smh_warmup;
  p.warmup = std::min(p.warmup, w);
  return p;
}

/// The least a pilot of `c` can cost, in core-seconds: FlyMC's set-up makes a statistics pass for
/// the bound and a Gibbs pass for the initial bright set, SMH's two statistics passes (its
/// expansion and its bounds), and regular MCMC at least one query of each of its `rows` rows per
/// iteration of its warm-up and first block, per chain.
double min_pilot_cost(const AutoCandidate& c, const AutoOptions& opt, const CostShape& all,
                      std::size_t rows) {
  const RunConfig p = target_pilot_config(c.config, opt);
  switch (c.config.algo) {
    case Algo::flymc:
      return statistics_seconds(p, all, 1.0) +
             work_seconds(p, all, Work{0.0, static_cast<double>(all.n) * p.chains, 0.0});
    case Algo::smh:
      return statistics_seconds(p, all, 2.0);
    case Algo::full: {
      CostShape sub = all;
      sub.n = rows;
      const double iters = static_cast<double>((p.warmup + kMinBlock) * p.chains);
      return work_seconds(p, sub, Work{iters, iters * static_cast<double>(rows), 0.0});
    }
    default:
      return 0.0;
  }
}

/// The pilot run of candidate `c`: its own seed, the pilot's lengths, no profiling.
RunConfig pilot_config(const AutoCandidate& c, const AutoOptions& opt) {
  RunConfig p = c.config;
  p.seed = c.config.seed ^ kPilotSeedMix;
  p.thin = 1;
  p.profile = false;
  if (p.ess > 0.0) return target_pilot_config(p, opt);
  p.max_seconds = 0.0;
  switch (p.algo) {
    case Algo::full:
      p.warmup = p.kernel == KernelKind::pcn ? opt.pcn_warmup : opt.regular_warmup;
      p.iters = p.kernel == KernelKind::pcn ? opt.pcn_iters : opt.regular_iters;
      break;
    case Algo::flymc:
      p.warmup = opt.flymc_warmup;
      p.iters = opt.flymc_iters;
      break;
    case Algo::smh:
      p.warmup = opt.smh_warmup;
      p.iters = opt.smh_iters;
      break;
    default:
      p.warmup = opt.pdmp_warmup;
      p.iters = opt.pdmp_iters;
      break;
  }
  return p;
}

/// A candidate's predicted core-seconds from the pilots' end to its run's end, priced on all the
/// rows (`all`): `statistics` (the set-up the pilots do not hand over; the MAP fit is shared, and
/// an SMH candidate's statistics are added afterwards unless the cache holds them), `warmup`
/// iterations per chain (the run's, run_warmup()) at the pilot's counted work per iteration,
/// and the sampling to the request: cfg.ess effective draws at `ess_per_cost` (ESS grows about
/// in proportion to the iterations), or cfg.iters iterations per chain at the pilot's work per
/// iteration. `w` is the pilot's work with its queries already scaled to all the rows.
double predicted_cost(const RunConfig& cfg, long warmup, const RunConfig& pilot, const RunWork& w,
                      const CostShape& all, double ess_per_cost) {
  const double chains = static_cast<double>(cfg.chains);
  auto per_iter = [&](const Work& x, long iters) {
    return iters > 0 ? work_seconds(pilot, all, x) / (static_cast<double>(iters) * pilot.chains)
                     : 0.0;
  };
  const double warm = per_iter(w.warmup, pilot.warmup) * static_cast<double>(warmup) * chains;
  const double sampling =
      cfg.ess > 0.0 ? cfg.ess / std::max(ess_per_cost, 1e-12)
                    : per_iter(w.sampling, pilot.iters) * static_cast<double>(cfg.iters) * chains;
  return warm + sampling;
}

/// The order the candidates are piloted in. On data whose rows all fit the regular pilots
/// (`small`, for a run to an ESS target) regular MCMC is likeliest to win: its candidates go
/// first, the one with the cheapest pilot (the fixed Laplace metric) ahead. Otherwise the
/// subsampling samplers go first, so that a regular pilot beaten by construction is not run.
std::vector<std::size_t> pilot_order(const std::vector<AutoCandidate>& c, bool small) {
  std::vector<std::size_t> order;
  for (const bool regular_pass : {small, !small})
    for (std::size_t i = 0; i < c.size(); ++i)
      if (is_regular(c[i]) == regular_pass) order.push_back(i);
  // The adapted metric's pilot is the dearest (its warm-up re-estimates a dense metric): last.
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) {
    const RunConfig& k = c[i].config;
    return !(k.algo == Algo::full && k.kernel == KernelKind::nuts && k.adapt_metric);
  });
  // Among the subsampling samplers SMH's pilot is the cheapest and, on tall data, the likeliest
  // winner: first, so that the budget rule can spare the others.
  const auto subsampling =
      std::find_if(order.begin(), order.end(), [&](std::size_t i) { return !is_regular(c[i]); });
  std::stable_partition(subsampling, order.end(), [&](std::size_t i) {
    return !is_regular(c[i]) && c[i].config.algo == Algo::smh;
  });
  return order;
}

/// The mean over a run's chains of their adapted step sizes (SMH with pCN: ρ).
double mean_step_size(const RunResult& r) {
  double s = 0.0;
  for (const ChainResult& ch : r.chains) s += ch.step_size;
  return r.chains.empty() ? std::numeric_limits<double>::quiet_NaN()
                          : s / static_cast<double>(r.chains.size());
}

/// The chosen candidate of a run to an ESS target takes over its pilot's adaptation where that
/// leaves the run exact, and says whether it did: a θ-kernel's step size (the run's shorter
/// warm-up goes on adapting from it) or SMH's ρ (then fixed), with the warm-up cut to
/// opt.reuse_warmup. Any fixed step size after warm-up is exact, and the target checks the
/// run's convergence. Not after a pilot short of its ESS, nor for an adapted metric or a
/// piecewise-deterministic sampler.
bool reuse_adaptation(AutoCandidate& c, const AutoOptions& opt) {
  RunConfig& k = c.config;
  if (opt.reuse_warmup <= 0 || c.rough || !std::isfinite(c.pilot_step_size)) return false;
  // pCN and the independence sampler keep the Laplace covariance; NUTS re-estimates a
  // diag or dense metric when asked.
  const Metric m = k.resolved_metric();
  const bool adapts_metric = k.adapt_metric && (m == Metric::dense || m == Metric::diag) &&
                             k.kernel != KernelKind::pcn && k.kernel != KernelKind::imh;
  if (uses_theta_kernel(k.algo) && !adapts_metric && c.pilot_step_size > 0.0) {
    // (pCN's move is √(1 − ρ²) = min(1, step): a step past 1, where its adaptation drifts when
    // every proposal is accepted, means 1)
    const bool laplace_kernel = k.kernel == KernelKind::pcn || k.kernel == KernelKind::imh;
    k.step_size = laplace_kernel ? std::min(c.pilot_step_size, 1.0) : c.pilot_step_size;
  } else if (k.algo == Algo::smh && k.proposal == SmhProposal::pcn && c.pilot_step_size < 1.0) {
    k.pcn_rho = c.pilot_step_size;
  } else {
    return false;
  }
  k.warmup = std::min(k.warmup, opt.reuse_warmup);
  return true;
}

/// The run's `chains` starting points from a pilot's draws: run chain c starts at pilot chain
/// (c mod k)'s last draw in the first round of k, and in later rounds at draws spread back over
/// its sampling, so that no two chains start at one point. Empty when a chain kept no draw.
std::vector<Vec> starts_from(const RunResult& r, int chains) {
  const std::size_t k = r.chains.size(), d = r.dim;
  if (k == 0 || d == 0 || chains <= 0) return {};
  const std::size_t rounds = (static_cast<std::size_t>(chains) + k - 1) / k;
  std::vector<Vec> out;
  for (std::size_t c = 0; c < static_cast<std::size_t>(chains); ++c) {
    const std::vector<double>& x = r.chains[c % k].draws;
    const std::size_t n = x.size() / d;
    if (n == 0) return {};
    const std::size_t at = n - 1 - std::min((c / k) * (n / rounds), n - 1);
    out.emplace_back(Eigen::Map<const Vec>(x.data() + at * d, static_cast<Eigen::Index>(d)));
  }
  return out;
}

/// What the run of a candidate for an ESS target takes over from its pilot, applied to its
/// configuration: the adaptation (reuse_adaptation()) and, returned, whether its chains start
/// at its pilot's draws (AutoOptions::reuse_state_warmup), with the warm-up cut further where
/// both are taken over (otherwise the warm-up still has the adapting to do). Any starting point
/// leaves the chains exact; the target's R̂ and ESS judge their convergence.
bool hand_over(AutoCandidate& c, const AutoOptions& opt) {
  const bool adapted = reuse_adaptation(c, opt);
  const bool states = opt.reuse_state_warmup >= 0 && !c.rough && !c.pilot_states.empty();
  if (states && adapted) c.config.warmup = std::min(c.config.warmup, opt.reuse_state_warmup);
  return states;
}

/// The warm-up candidate `c`'s run would make if chosen (hand_over() on a copy). A prediction at
/// the user's warm-up charged a candidate for iterations its run never makes: on the softmax
/// data regular NUTS's 1,000 at four times FlyMC's cost per iteration.
long run_warmup(AutoCandidate c, const AutoOptions& opt) {
  hand_over(c, opt);
  return c.config.warmup;
}

/// The choice when a single candidate is left: no pilot can change it.
AlgoChoice only_candidate(AlgoChoice out, Clock::time_point start) {
  for (std::size_t i = 0; i < out.candidates.size(); ++i)
    if (out.candidates[i].skipped.empty()) out.chosen = i;
  out.why = "the only candidate left (no pilot ran)";
  out.pilot_seconds = seconds_since(start);
  out.cache = std::make_shared<SetupCache>();
  return out;
}

/// Why the chosen candidate won: its prediction, and the runner-up's.
std::string why_chosen(const RunConfig& cfg, const AlgoChoice& out,
                       const std::vector<std::size_t>& ranked) {
  const AutoCandidate& b = out.best();
  char buf[320];
  if (cfg.ess > 0.0)
    std::snprintf(buf, sizeof buf, "predicted %.3g core-s to %.0f effective draws after the pilots",
                  b.predicted_cost, cfg.ess);
  else
    std::snprintf(buf, sizeof buf, "predicted %.4g min-ESS per core-s (%.3g core-s for the run)",
                  b.ess_per_second, b.predicted_cost);
  std::string why = buf;
  if (ranked.size() > 1) {
    const AutoCandidate& r = out.candidates[ranked[1]];
    if (cfg.ess > 0.0)
      std::snprintf(buf, sizeof buf, "; next %s, %.3g core-s", r.name.c_str(), r.predicted_cost);
    else
      std::snprintf(buf, sizeof buf, "; next %s, %.4g min-ESS per core-s", r.name.c_str(),
                    r.ess_per_second);
    why += buf;
  }
  return why;
}

}  // namespace

std::vector<AutoCandidate> auto_candidates(const RunConfig& cfg, const Dataset& data,
                                           bool checkpointed,
                                           std::span<const OptionInfo* const> given) {
  std::vector<AutoCandidate> out;
  auto add = [&](std::string name, RunConfig c) {
    AutoCandidate a;
    a.name = std::move(name);
    a.config = std::move(c);
    try {
      a.config.validate();
      check_model_fits(a.config, false, data.has_row_extras());
    } catch (const ConfigError& e) {
      a.skipped = e.what();
    }
    out.push_back(std::move(a));
  };
  // Every set-up the sampler table lists, the regular ones (the baseline) first.
  for (const bool regular : {true, false})
    for (const SamplerInfo& s : kSamplers)
      if ((s.algo == Algo::full) == regular)
        for (const AutoSetup& setup : s.auto_setups) {
          RunConfig c = with_sampler(cfg, s.algo, setup.kernel, setup.metric);
          c.adapt_metric = setup.adapt_metric;
          c.smh_order = setup.smh_order;
          if (setup.logistic_slack && c.model == ModelKind::logistic && c.slack_scale == 0.0)
            c.slack_scale = 1.0;
          add(setup.name, std::move(c));
          AutoCandidate& a = out.back();
          if (a.skipped.empty() && setup.max_dim > 0 && data.d() > setup.max_dim)
            a.skipped = "one coordinate per event: not run above " + std::to_string(setup.max_dim) +
                        " coefficients";
        }
  if (checkpointed)
    for (AutoCandidate& a : out)
      if (a.skipped.empty() && !can_checkpoint(a.config.algo))
        a.skipped = "cannot checkpoint yet (--checkpoint-every)";
  // An option the user gave restricts the candidates to the samplers that read it.
  for (AutoCandidate& a : out) {
    std::string unread;
    for (const OptionInfo* o : given)
      if (!o->reads(a.config.algo))
        unread += (unread.empty() ? "--" : ", --") + std::string(o->name);
    if (a.skipped.empty() && !unread.empty())
      a.skipped = "does not read " + unread + ", which you gave";
  }
  return out;
}

namespace {

/// Regular NUTS re-estimating its dense metric needs a whole warm-up of Stan's windows before it
/// can be judged; a pilot short enough to pay for itself cannot give it one (on the softmax data,
/// 771 coefficients, 100 such iterations took over five minutes), and it starts from the Laplace
/// covariance that regular-nuts-laplace keeps. No candidate for a run to an ESS target.
void drop_adapted_nuts(std::vector<AutoCandidate>& candidates) {
  for (AutoCandidate& c : candidates)
    if (c.skipped.empty() && is_regular(c) && c.config.kernel == KernelKind::nuts &&
        c.config.adapt_metric)
      c.skipped =
          "an adapted dense metric needs a whole warm-up of adaptation windows, which no pilot of "
          "a run to an ESS target can afford (regular-nuts-laplace keeps the Laplace covariance "
          "it starts from)";
}

/// One choose_algo() call's pilots: the data and the regular pilots' subset, the MAP fit and
/// set-up they share, and what the pilots so far found, from which the later ones are ruled out
/// or given their budget. Every figure here is the cost model's price of counted work
/// (core-seconds), so the pilots' lengths and the choice depend on the data, the options and the
/// seed alone; the clock is read only for the user's --max-seconds and for reporting.
class Pilots {
 public:
  Pilots(const RunConfig& cfg, const std::shared_ptr<const Dataset>& data, const AutoOptions& opt,
         std::size_t ncandidates)
      : cfg_(cfg),
        opt_(opt),
        data_(data),
        target_(cfg.ess > 0.0),
        n_(data->n()),
        rows_(std::min(n_, std::max<std::size_t>(opt.regular_rows, 1))),
        sub_(rows_ < n_ ? subset_rows(*data, random_rows(n_, rows_, cfg.seed ^ kPilotSeedMix))
                        : data),
        shared_(data),
        all_(cost_shape(*data, 0)),
        stats_cost_(ncandidates, 0.0),
        last_smh_(ncandidates) {}

  /// Whether regular MCMC's pilots run first (every row fits their subset, for an ESS target).
  bool regular_first() const { return target_ && sub_ == data_; }

  /// Why candidate `c` runs no pilot ("" if it runs one), `left` candidates (`c` among them)
  /// being still to pilot; `budget` gets its pilot's limit in core-seconds.
  std::string ruled_out(const AutoCandidate& c, std::size_t left, double& budget) {
    if (cfg_.max_seconds > 0.0 && first_done_ && cfg_.max_seconds <= elapsed())
      return "--max-seconds was spent before its pilot";
    const CostShape all = shape_of();
    if (is_third_order_smh(c)) {
      std::string why = third_order_ruled_out(c.config, all, smh2_run_);
      if (!why.empty()) return why;
    }
    budget = std::numeric_limits<double>::infinity();  // the first target pilot: no limit
    if (first_done_ && (target_ || opt_.fixed_pays_for_itself)) {
      // Piloting pays only while it costs less than it may save of the best run's price.
      const double share = opt_.pilot_budget_share * best_cost_ - spent_after_first_;
      const double least = min_pilot_cost(c, opt_, all, rows_);
      if (share <= 0.0 || least > share) {
        char why[240];
        std::snprintf(why, sizeof why,
                      "its pilot could not pay for itself: the pilots after the first may cost "
                      "%.0f%% of the best run's predicted %.3g core-s, %.3g are left, and it "
                      "would cost at least %.3g",
                      100.0 * opt_.pilot_budget_share, best_cost_, std::max(share, 0.0), least);
        return why;
      }
      if (target_) budget = share;
    }
    if (!target_) budget = std::max(opt_.budget_seconds - spent_, 0.0) / static_cast<double>(left);
    if (!is_regular(c)) return "";
    // (Where every row fits the regular pilots, they run: their own pilot prices them.)
    if (opt_.skip_beaten_regular && rows_ < n_ && best_so_far_ > regular_bound(c)) {
      char why[160];
      std::snprintf(why, sizeof why,
                    "regular MCMC reads all %zu rows per iteration: at most %.3g min-ESS per "
                    "core-s, below %.3g",
                    n_, regular_bound(c), best_so_far_);
      return why;
    }
    return "";
  }

  /// Runs the pilot of candidate `i` within `budget` core-seconds and fills in its prediction.
  void pilot(std::size_t i, AutoCandidate& c, double budget) {
    const bool regular = is_regular(c);
    const auto t0 = Clock::now();
    RunConfig pc = pilot_config(c, opt_);
    // A pilot to p effective draws that needs more than f·(p/N)·C_best core-seconds of sampling
    // predicts more than f·C_best for the run's N: it cannot win. (A regular pilot on a subset
    // prices its own rows: its limit shrinks with them.)
    if (target_ && opt_.give_up_factor > 0.0 && std::isfinite(best_cost_))
      pc.give_up_cost = opt_.give_up_factor * best_cost_ * pc.ess / cfg_.ess / scale(c);
    const Pilot p =
        run_pilot(pc, regular ? sub_ : data_, opt_, budget / scale(c), deadline(), shared_);
    spent_ += p.cost;
    dim_ = p.result.dim;
    if (first_done_) spent_after_first_ += p.cost;
    // The pilot's work on all the rows: a regular pilot's queries scaled from its subset.
    RunWork w = p.work;
    w.warmup.queries *= scale(c);
    w.sampling.queries *= scale(c);
    const CostShape all = shape_of();
    const double sampling = work_seconds(p.result.config, all, w.sampling);
    // A pilot that produced no effective draw still counts one, so ratios stay finite.
    c.ess_per_second = std::max(p.min_ess, 1.0) / std::max(sampling, 1e-12);
    c.pilot_ess = p.min_ess;
    c.pilot_iters = p.result.config.iters;
    c.pilot_rows = regular ? rows_ : n_;
    c.pilot_seconds = seconds_since(t0);
    c.pilot_cost = p.cost;
    c.rough = p.min_ess < (target_ ? p.result.config.ess : opt_.min_pilot_ess);
    c.pilot_step_size = mean_step_size(p.result);
    // A pilot on a subset samples a wider posterior: its draws are no place to start.
    if (target_ && c.pilot_rows == n_) c.pilot_states = starts_from(p.result, cfg_.chains);
    if (c.config.algo == Algo::smh) {
      stats_cost_[i] = statistics_seconds(c.config, all, statistics_passes(p.result));
      last_smh_ = i;
    }
    c.predicted_cost = predicted_cost(cfg_, target_ ? run_warmup(c, opt_) : cfg_.warmup,
                                      p.result.config, w, all, c.ess_per_second);
    best_so_far_ = std::max(best_so_far_, c.ess_per_second);
    best_cost_ = std::min(best_cost_, c.predicted_cost);
    first_done_ = true;
    if (c.config.algo == Algo::smh && c.config.smh_order == 2) smh2_run_ = c.predicted_cost;
  }

  /// After the pilots: the cache holds the statistics of the last SMH pilot, so any other SMH
  /// run builds its own.
  void add_uncached_statistics(std::vector<AutoCandidate>& candidates) const {
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (i != last_smh_ && candidates[i].skipped.empty())
        candidates[i].predicted_cost += stats_cost_[i];
  }

  /// Regular MCMC's bound on min-ESS per core-second over all the rows, +inf before any regular
  /// candidate was weighed (the prices of the first one's queries).
  double regular_bound() const { return regular_bound_; }
  const SharedMap& shared() const { return shared_; }
  /// The seconds since the pilots began (reporting; the user's --max-seconds).
  double elapsed() const { return seconds_since(start_); }

 private:
  /// All the rows as the cost model prices them: the parameters are the pilots' (K·D for
  /// softmax), the features' count until the first pilot tells.
  CostShape shape_of() const {
    CostShape s = all_;
    s.p = dim_ > 0 ? dim_ : data_->d();
    return s;
  }
  /// A regular pilot's queries on its subset → on all the rows.
  double scale(const AutoCandidate& c) const {
    return is_regular(c) ? static_cast<double>(n_) / static_cast<double>(rows_) : 1.0;
  }
  /// Regular MCMC reads every row at least once per iteration: on all N rows its min bulk ESS
  /// per core-second is at most kMaxEssPerDraw / (N · the price of a query).
  double regular_bound(const AutoCandidate& c) {
    const double query = work_seconds(c.config, shape_of(), Work{0.0, 1.0, 0.0});
    regular_bound_ = kMaxEssPerDraw / (static_cast<double>(n_) * query);
    return regular_bound_;
  }
  /// The user's --max-seconds left for the next pilot (0: no limit; tiny once spent).
  double deadline() const {
    if (cfg_.max_seconds <= 0.0) return 0.0;
    return std::max(cfg_.max_seconds - elapsed(), 1e-6);
  }

  const RunConfig& cfg_;
  const AutoOptions& opt_;
  const std::shared_ptr<const Dataset> data_;
  const bool target_;
  const std::size_t n_, rows_;
  const std::shared_ptr<const Dataset> sub_;  // the regular pilots' rows
  const Clock::time_point start_ = Clock::now();
  SharedMap shared_;
  const CostShape all_;  // all the rows (p set by shape_of())
  std::size_t dim_ = 0;  // the parameters, once a pilot ran
  double regular_bound_ = std::numeric_limits<double>::infinity();
  double best_so_far_ = 0.0;                                    // ESS per core-second
  double best_cost_ = std::numeric_limits<double>::infinity();  // predicted run core-seconds
  bool first_done_ = false;                                     // the first pilot ended
  double spent_ = 0.0;              // core-seconds of all the pilots so far
  double spent_after_first_ = 0.0;  // ... of those after the first
  double smh2_run_ = -1.0;          // the second-order SMH candidate's predicted core-seconds
  std::vector<double> stats_cost_;
  std::size_t last_smh_;  // whose SMH statistics the cache holds
};

/// The candidates that ran a pilot, best first: fewest predicted seconds for an ESS target, most
/// ESS per second for a fixed length.
std::vector<std::size_t> ranking(const std::vector<AutoCandidate>& candidates, bool target) {
  std::vector<std::size_t> ranked;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].skipped.empty()) ranked.push_back(i);
  if (ranked.empty()) throw ConfigError("--algo auto: no exact sampler takes these options");
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
    const AutoCandidate &x = candidates[a], &y = candidates[b];
    return target ? x.predicted_cost < y.predicted_cost : x.ess_per_second > y.ess_per_second;
  });
  return ranked;
}

/// The winner's ESS/s over the best regular pilot's, or over the bound that ruled them all out
/// (a lower bound then); 0 when neither is known.
double predicted_speedup(const AlgoChoice& out, double regular_bound) {
  double best_regular = 0.0;
  bool regular_ran = false;
  for (const AutoCandidate& c : out.candidates)
    if (c.skipped.empty() && is_regular(c)) {
      best_regular = std::max(best_regular, c.ess_per_second);
      regular_ran = true;
    }
  if (!regular_ran && std::isfinite(regular_bound)) best_regular = regular_bound;
  return best_regular > 0.0 ? out.best().ess_per_second / best_regular : 0.0;
}

/// The predictions in wall seconds beside core-seconds (reporting only: the chains of a run share
/// min(chains, threads) cores), and the user's --max-seconds left for the chosen run.
void finish_choice(const RunConfig& cfg, AlgoChoice& out) {
  const int threads = cfg.threads > 0 ? cfg.threads : tbb::info::default_concurrency();
  const double lanes = std::max(1, std::min(cfg.chains, threads));
  for (AutoCandidate& c : out.candidates) c.predicted_seconds = c.predicted_cost / lanes;
  if (cfg.max_seconds > 0.0)  // (the first block always runs)
    out.candidates[out.chosen].config.max_seconds =
        std::max(cfg.max_seconds - out.pilot_seconds, 1e-6);
}

}  // namespace

AlgoChoice choose_algo(const RunConfig& cfg, const std::shared_ptr<const Dataset>& data,
                       const AutoOptions& opt) {
  const auto start = Clock::now();
  const bool target = cfg.ess > 0.0;
  AlgoChoice out;
  out.candidates = auto_candidates(cfg, *data, opt.checkpointed, opt.given);
  Pilots pilots(cfg, data, opt, out.candidates.size());
  if (target) drop_adapted_nuts(out.candidates);
  std::size_t left = 0;
  for (const AutoCandidate& c : out.candidates) left += c.skipped.empty() ? 1 : 0;
  if (left == 1) {
    out = only_candidate(std::move(out), start);
    finish_choice(cfg, out);
    return out;
  }
  for (const std::size_t i : pilot_order(out.candidates, pilots.regular_first())) {
    AutoCandidate& c = out.candidates[i];
    if (!c.skipped.empty()) continue;
    double budget = 0.0;
    c.skipped = pilots.ruled_out(c, left--, budget);
    if (c.skipped.empty()) pilots.pilot(i, c, budget);
  }
  pilots.add_uncached_statistics(out.candidates);

  const std::vector<std::size_t> ranked = ranking(out.candidates, target);
  out.chosen = ranked.front();
  out.pilots_short = out.candidates[ranked.front()].rough ||
                     (ranked.size() > 1 && out.candidates[ranked[1]].rough);
  out.predicted_speedup = predicted_speedup(out, pilots.regular_bound());
  out.map = pilots.shared().map();
  // (A pilot with draws ran on all the rows, so their MAP fit is there.)
  AutoCandidate& best = out.candidates[out.chosen];
  if (target && hand_over(best, opt) && out.map) {
    auto m = std::make_shared<MapResult>(*out.map);
    m->chain_starts = best.pilot_states;
    out.map = std::move(m);
  }
  out.why = why_chosen(cfg, out, ranked);
  if (out.map && !out.map->chain_starts.empty())
    out.why += "; its chains start where its pilot's ended";
  out.pilot_seconds = seconds_since(start);
  finish_choice(cfg, out);
  out.cache = pilots.shared().cache();
  // Only what the chosen sampler takes stays in memory beside its run.
  if (out.algo() != Algo::smh) out.cache->smh.reset();
  return out;
}

}  // namespace flymc
