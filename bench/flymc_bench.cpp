// flymc-bench: end-to-end benchmarks in wall-clock effective samples per second.
//   flymc-bench table1 [--data F] [--json FILE]   the FlyMC paper's Table 1, plus ESS/s
//   flymc-bench scaling | chains | tall            tall synthetic data, concurrent chains, tall
//                                                  real data against regular MCMC's best
//   flymc-bench compare                            every sampler at equal wall time, with errors
// Every ratio is measured within one process run, on the same data, model and θ-kernel.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "auto_option.hpp"
#include "bench_common.hpp"
#include "calibrate.hpp"
#include "compare.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "storage.hpp"
#include "tall.hpp"

namespace {

using namespace flymc;
using bench::min_ess;

struct RowStats {
  std::string algo;
  double queries_per_iter, bright_mean, ess1000_min, ess1000_median, ess_per_sec_min;
  double ess_per_query_min, accept, step_size, sampling_seconds, setup_seconds, seconds_per_iter;
  double ess_min;  // min bulk ESS over the parameters, all chains
  long warmup, iters;
  std::optional<bool> target_reached;  // with --target-ess only
  bench::TargetTime time_to_target;    // seconds to --time-to-ess effective draws
};

RowStats measure(const std::string& algo, const RunConfig& cfg,
                 const std::shared_ptr<const Dataset>& data) {
  std::fprintf(stderr, "table1: %-8s %-14s %-5s %d chains x (%ld warm-up + %ld) iterations ...\n",
               to_string(cfg.model), algo.c_str(), to_string(cfg.kernel), cfg.chains, cfg.warmup,
               cfg.iters);
  const RunResult r = bench::run_shown(cfg, data);
  std::vector<double> ess;
  for (std::size_t j = 0; j < r.dim; ++j) {
    const double e = ess_bulk(r.coordinate(j));
    ess.push_back(std::isfinite(e) ? e : 0.0);
  }
  std::sort(ess.begin(), ess.end());
  const double total_iters = double(cfg.iters) * cfg.chains;
  RowStats s;
  s.algo = algo;
  s.queries_per_iter = r.queries_per_iter();
  s.bright_mean = r.bright_mean();
  s.ess1000_min = ess.front() / total_iters * 1000.0;
  s.ess1000_median = ess[ess.size() / 2] / total_iters * 1000.0;
  s.ess_per_sec_min = ess.front() / r.sampling_seconds;
  s.ess_per_query_min = ess.front() / (s.queries_per_iter * total_iters);
  s.accept = r.accept_rate();
  s.step_size = r.chains[0].step_size;
  s.sampling_seconds = r.sampling_seconds;
  s.setup_seconds = r.setup_seconds;
  double spi = 0.0;  // each chain's own timer, averaged
  for (const auto& c : r.chains) spi += c.sampling_seconds / double(cfg.iters);
  s.seconds_per_iter = spi / double(r.chains.size());
  s.ess_min = ess.front();
  s.warmup = cfg.warmup;
  s.iters = cfg.iters;
  return s;
}

/// Iterations of one algorithm in a row.
struct Budget {
  long warmup, iters, thin;
};

/// Seconds per iteration of cfg's chains, from a probe of 10 sampling iterations without
/// warm-up (its set-up is paid once more; the step size is the initial one, close enough for the
/// fixed-length kernels of Table 1).
double probe_seconds_per_iter(RunConfig cfg, const std::shared_ptr<const Dataset>& data) {
  cfg.warmup = 0;
  cfg.iters = 10;
  cfg.thin = 1;
  const RunResult r = bench::run_shown(cfg, data);
  double spi = 0.0;
  for (const auto& c : r.chains) spi += c.sampling_seconds / double(cfg.iters);
  return std::max(spi / double(r.chains.size()), 1e-9);
}

/// Runs cfg until its min bulk ESS reaches `target` (Table1Options::target_ess), every phase
/// budgeted by time as well as by iterations, so that a slow algorithm cannot hold the table
/// up: a probe measures the time per iteration; the warm-up is cut to a quarter of
/// `max_seconds`; a pilot of a twentieth of the budget (at most a fifth of `max_seconds`) then
/// says how many iterations the target needs (plus a quarter), run in full within the budget
/// and `max_seconds` of sampling. The budget's thinning keeps at most 10,000 draws per chain.
/// The row records whether the target was reached.
RowStats measure_to_target(const std::string& algo, RunConfig cfg,
                           const std::shared_ptr<const Dataset>& data, double target,
                           double max_seconds) {
  const long budget = cfg.iters;
  const double spi0 = probe_seconds_per_iter(cfg, data);
  auto within = [spi0](double seconds) { return static_cast<long>(seconds / spi0); };
  if (cfg.warmup > 0) cfg.warmup = std::clamp(within(0.25 * max_seconds), 10L, cfg.warmup);
  RunConfig pilot = cfg;
  pilot.iters = std::clamp(within(0.2 * max_seconds), 20L, std::max(100L, budget / 20));
  pilot.thin = std::max(1L, pilot.iters / 10000);
  RowStats r = measure(algo, pilot, data);
  const double ess = r.ess_min;
  r.target_reached = ess >= target;
  if (ess >= target || pilot.iters >= budget) return r;
  const double per_iter = std::max(ess, 1.0) / double(pilot.iters);
  const double spi = std::max(r.sampling_seconds / double(pilot.iters), 1e-12);
  const double want = std::min({1.25 * target / per_iter, max_seconds / spi, double(budget)});
  cfg.iters = static_cast<long>(std::ceil(want));
  if (cfg.iters <= pilot.iters) return r;
  cfg.thin = std::max(1L, cfg.iters / 10000);
  RowStats full = measure(algo, cfg, data);
  full.target_reached = full.ess_min >= target;
  return full;
}

/// One row of the paper's Table 1: a data set, a model and a θ-kernel, run by regular MCMC,
/// untuned FlyMC and MAP-tuned FlyMC.
struct RowSpec {
  std::string name;      // logistic | softmax | robust
  std::string protocol;  // softmax: paper | strong; empty for the other rows
  std::string dataset;
  std::shared_ptr<const Dataset> data;
  RunConfig base;  // model, kernel, prior and levers shared by the three algorithms
  Budget regular, untuned, flymc;
  // The strong protocol also runs MAP-tuned FlyMC with the metric fitted to p(θ | z)
  // (Metric::fly), FlyMC's own lever, beside the dense Laplace metric the three share.
  bool fly_row = false;
};

struct Table1Options {
  // robust is opt-in (--rows logistic,softmax,robust): its 1.8 M rows are made in process unless
  // --robust-data is given, and its regular-MCMC row reads them ~10 times per slice iteration.
  std::string rows = "logistic,softmax,robust";
  std::string data, softmax_data, robust_data, json, name;
  int chains = 4, threads = 0;
  double scale = 1.0;  // multiplies every iteration budget (quick runs)
  // > 0: each algorithm runs until its min bulk ESS reaches this (a pilot of a twentieth of its
  // budget estimates the iterations needed), within its budget and max_seconds of sampling.
  // 0: the full fixed budgets.
  double target_ess = 0.0;
  double max_seconds = 60.0;
  // > 0: each algorithm also runs with --ess N (within max_seconds of sampling), and the default
  // flymc sample (--algo auto --ess N) on each row's data: the seconds to the target.
  double time_to_ess = 1000.0;
  // The wall-time cap of each of those runs (the default run's pilots included; 0: none); a row
  // that reaches it reports the time its ESS rate so far projects, marked.
  double target_max_seconds = 60.0;
  // Logistic regression (Fashion-MNIST 7-vs-9): enough iterations for a min bulk ESS of a few
  // hundred per algorithm with RW-MH (regular MCMC mixes at ~0.2 ESS per 1000 iterations there,
  // FlyMC at ~0.03).
  long warmup_regular = 20000, iters_regular = 400000, thin_regular = 20;
  long warmup_untuned = 20000, iters_untuned = 400000;
  long warmup_flymc = 200000, iters_flymc = 4000000, thin_flymc = 40;
  KernelKind kernel = KernelKind::rwmh;
  Metric metric = Metric::identity;
  std::uint64_t seed = 1;
  double q = 0.01;
  std::optional<double> slack;  // unset: automatic
  std::optional<int> theta_steps;
  // Softmax (3-class Fashion-MNIST, 256 components) with MALA, and robust regression (synthetic,
  // 1.8 M x 57) with slice sampling.
  KernelKind softmax_kernel = KernelKind::mala, robust_kernel = KernelKind::slice;
  std::size_t robust_n = 1800000, robust_d = 57;
  // Both rows use the dense Laplace metric, fixed (the same proposal for every algorithm of a
  // row; 771 parameters do not mix with a diagonal one in a benchmark's time). Regular MCMC on
  // 1.8 M rows costs ~0.1 s per density, so that row runs 2 chains and few iterations: its
  // min ESS is then in the tens (a rough estimate, far from deciding the speedup's order).
  Budget softmax_regular{1000, 4000, 4}, softmax_untuned{1000, 4000, 4},
      softmax_flymc{2000, 20000, 20};
  // The softmax row's protocols: `paper`, the FlyMC paper's (the same MALA with the identity
  // metric for every algorithm, step size tuned in warm-up), and `strong`, the dense Laplace
  // metric fixed for every algorithm plus FlyMC with the metric fitted to p(θ | z). With the
  // identity metric 771 parameters mix slowly (the step size follows the narrowest direction),
  // so the paper protocol runs longer chains.
  std::string softmax_protocols = "paper,strong";
  Budget softmax_paper_regular{2000, 16000, 16}, softmax_paper_untuned{2000, 16000, 16},
      softmax_paper_flymc{4000, 80000, 80};
  Budget robust_regular{100, 900, 1}, robust_untuned{100, 900, 1}, robust_flymc{5000, 100000, 50};
  int robust_chains = 2;
  double robust_q = 1e-4;  // q·N = 180 dark proposals per sweep at N = 1.8 M
  std::optional<double> softmax_slack, robust_slack;  // unset: automatic
  // Prior sds chosen as the paper did, by out-of-sample performance: the held-out (t10k) log
  // predictive density at the MAP over sd ∈ {0.03, 0.1, 0.3, 1, 3} peaks at 1 for logistic
  // 7-vs-9 (−0.1154 nats) and at 0.3 for softmax 0/1/2 (−0.1095; sd 1: −0.1185).
  double prior_sd = 1.0, softmax_prior_sd = 0.3, robust_prior_sd = 1.0;
};

Budget scaled(const Budget& b, double scale) {
  auto sc = [scale](long v) { return std::max(1L, static_cast<long>(std::llround(v * scale))); };
  Budget out{sc(b.warmup), sc(b.iters), b.thin};
  out.thin = std::clamp(b.thin, 1L, std::max(1L, out.iters / 100));
  out.warmup = b.warmup == 0 ? 0 : out.warmup;
  return out;
}

std::vector<RowSpec> table1_rows(const Table1Options& o) {
  std::vector<RowSpec> rows;
  RunConfig common;
  common.ess = 0.0;  // the rows run their budgets (or measure_to_target's)
  common.chains = o.chains;
  common.threads = o.threads;
  common.seed = o.seed;
  for (const std::string& r : bench::split_list(o.rows)) {
    RowSpec row;
    row.name = r;
    row.base = common;
    if (r == "logistic") {
      if (o.data.empty()) throw UsageError("table1: the logistic row needs --data FILE");
      row.dataset = o.name.empty() ? o.data : o.name;
      row.data = std::make_shared<const Dataset>(load_dataset(o.data, LabelDomain::binary));
      row.base.model = ModelKind::logistic;
      row.base.prior_sd = o.prior_sd;
      row.base.kernel = o.kernel;
      row.base.metric = o.metric;
      row.base.q_dark_to_bright = o.q;
      row.base.bound_slack = o.slack;
      row.base.theta_steps = o.theta_steps;
      row.regular = {o.warmup_regular, o.iters_regular, o.thin_regular};
      row.untuned = {o.warmup_untuned, o.iters_untuned, o.thin_regular};
      row.flymc = {o.warmup_flymc, o.iters_flymc, o.thin_flymc};
    } else if (r == "softmax") {
      if (o.softmax_data.empty())
        throw UsageError("table1: the softmax row needs --softmax-data FILE");
      row.dataset = o.softmax_data;
      row.data =
          std::make_shared<const Dataset>(load_dataset(o.softmax_data, LabelDomain::categorical));
      row.base.model = ModelKind::softmax;
      row.base.prior_sd = o.softmax_prior_sd;
      row.base.kernel = o.softmax_kernel;
      row.base.adapt_metric = false;
      row.base.bound_slack = o.softmax_slack;
      for (const std::string& p : bench::split_list(o.softmax_protocols)) {
        RowSpec pr = row;
        pr.protocol = p;
        if (p == "paper") {
          pr.base.metric = Metric::identity;
          pr.regular = o.softmax_paper_regular;
          pr.untuned = o.softmax_paper_untuned;
          pr.flymc = o.softmax_paper_flymc;
        } else if (p == "strong") {
          pr.base.metric = Metric::dense;
          pr.regular = o.softmax_regular;
          pr.untuned = o.softmax_untuned;
          pr.flymc = o.softmax_flymc;
          pr.fly_row = true;
        } else {
          throw UsageError("table1: --softmax-protocols: unknown protocol '" + p +
                           "' (paper, strong)");
        }
        pr.regular = scaled(pr.regular, o.scale);
        pr.untuned = scaled(pr.untuned, o.scale);
        pr.flymc = scaled(pr.flymc, o.scale);
        rows.push_back(std::move(pr));
      }
      continue;
    } else if (r == "robust") {
      if (o.robust_data.empty()) {  // the paper's OPV analogue, made in process
        row.data = std::make_shared<const Dataset>(synth_robust(o.robust_n, o.robust_d, 1));
        row.dataset = row.data->source();
      } else {
        row.dataset = o.robust_data;
        row.data = std::make_shared<const Dataset>(load_dataset(o.robust_data, LabelDomain::any));
      }
      row.base.model = ModelKind::robust;
      row.base.prior_sd = o.robust_prior_sd;
      row.base.prior = "laplace";  // the paper's sparsity-inducing prior
      row.base.kernel = o.robust_kernel;
      row.base.metric = Metric::dense;
      row.base.adapt_metric = false;
      row.base.chains = o.robust_chains;
      row.base.q_dark_to_bright = o.robust_q;
      row.base.bound_slack = o.robust_slack;
      row.regular = o.robust_regular;
      row.untuned = o.robust_untuned;
      row.flymc = o.robust_flymc;
    } else {
      throw UsageError("table1: --rows: unknown row '" + r + "' (logistic, softmax, robust)");
    }
    row.regular = scaled(row.regular, o.scale);
    row.untuned = scaled(row.untuned, o.scale);
    row.flymc = scaled(row.flymc, o.scale);
    rows.push_back(std::move(row));
  }
  return rows;
}

/// The θ-kernel's name with its metric unless identity ("mala", "mala-dense", "mala-fly").
std::string kernel_label(const RunConfig& c) {
  std::string kernel = to_string(c.kernel);
  if (c.resolved_metric() != Metric::identity)
    kernel += std::string("-") + to_string(c.resolved_metric());
  return kernel;
}

/// One algorithm's figures as a JSON row, speedups against regular MCMC's `r0`.
nlohmann::json row_json(const RowSpec& spec, const std::string& kernel, const RowStats& r,
                        const RowStats& r0) {
  nlohmann::json j = {{"dataset", spec.dataset},
                      {"model", to_string(spec.base.model)},
                      {"kernel", kernel},
                      {"algo", r.algo},
                      {"n", spec.data->n()},
                      {"d", spec.data->d()},
                      {"queries_per_iter", r.queries_per_iter},
                      {"bright_mean", r.bright_mean},
                      {"ess_per_1000_min", r.ess1000_min},
                      {"ess_per_1000_median", r.ess1000_median},
                      {"ess_per_second_min", r.ess_per_sec_min},
                      {"ess_per_query_min", r.ess_per_query_min},
                      {"speedup_queries", r.ess_per_query_min / r0.ess_per_query_min},
                      {"speedup_wall", r.ess_per_sec_min / r0.ess_per_sec_min},
                      {"accept_rate", r.accept},
                      {"step_size", r.step_size},
                      {"seconds_per_iter", r.seconds_per_iter},
                      {"setup_seconds", r.setup_seconds},
                      {"warmup", r.warmup},
                      {"iters", r.iters},
                      {"min_ess_bulk", r.ess_min},
                      {"chains", spec.base.chains},
                      {"sampling_seconds", r.sampling_seconds}};
  r.time_to_target.write(j);
  if (!spec.protocol.empty()) j["protocol"] = spec.protocol;
  if (r.target_reached) j["target_reached"] = *r.target_reached;
  return j;
}

/// The default `flymc sample --data FILE` on a row's data (--algo auto --ess N with the row's
/// model and prior): auto's choice and the seconds from its pilots' start to the target (the
/// data's reading not included, as for the other rows). Null with --time-to-ess 0.
nlohmann::json default_run(const RowSpec& spec, const Table1Options& o) {
  if (o.time_to_ess <= 0.0) return nullptr;
  std::fprintf(stderr, "table1: %-8s the default run (--algo auto --ess %.0f) ...\n",
               to_string(spec.base.model), o.time_to_ess);
  RunConfig c;
  c.model = spec.base.model;
  c.prior = spec.base.prior;
  c.prior_sd = spec.base.prior_sd;
  c.chains = spec.base.chains;
  c.threads = spec.base.threads;
  c.seed = spec.base.seed;
  c.ess = o.time_to_ess;
  c.iters = kEssIterCap;
  c.max_seconds = o.target_max_seconds;  // (the pilots count: the run gets what they leave)
  const AlgoChoice choice = choose_algo(c, spec.data);
  const bench::TargetTime t =
      bench::time_to_target(choice.best().config, o.time_to_ess, choice.best().config.max_seconds,
                            spec.data, choice.pilot_seconds, Precomputed{choice.map, choice.cache});
  nlohmann::json j = {
      {"chosen", choice.best().name}, {"why", choice.why}, {"pilot_seconds", choice.pilot_seconds}};
  t.write(j);
  return j;
}

/// Runs one row's algorithms (regular MCMC first: the speedups' reference) and prints its table.
void table1_row(const RowSpec& spec, const Table1Options& o, nlohmann::json& jrows,
                nlohmann::json& jdefaults, bool with_default) {
  auto config = [&](Algo algo, BoundTuning bound, const Budget& b) {
    RunConfig c = spec.base;
    c.algo = algo;
    c.bound = bound;
    c.warmup = b.warmup;
    c.iters = b.iters;
    c.thin = b.thin;
    return c;
  };
  std::vector<std::pair<RunConfig, std::string>> algos = {
      {config(Algo::full, BoundTuning::map, spec.regular), "regular"},
      {config(Algo::flymc, BoundTuning::untuned, spec.untuned), "flymc-untuned"},
      {config(Algo::flymc, BoundTuning::map, spec.flymc), "flymc-map"}};
  if (spec.fly_row) {
    RunConfig c = config(Algo::flymc, BoundTuning::map, spec.flymc);
    c.metric = Metric::fly;
    algos.emplace_back(c, "flymc-map-fly");
  }
  std::vector<RowStats> rows;
  for (const auto& [cfg, name] : algos) {
    rows.push_back(o.target_ess > 0.0
                       ? measure_to_target(name, cfg, spec.data, o.target_ess, o.max_seconds)
                       : measure(name, cfg, spec.data));
    if (o.time_to_ess > 0.0) {  // the row's sampler with --ess, its warm-up as measured
      RunConfig c = cfg;
      c.warmup = rows.back().warmup;
      std::fprintf(stderr, "table1:   ... to %.0f effective draws with --ess\n", o.time_to_ess);
      rows.back().time_to_target =
          bench::time_to_target(c, o.time_to_ess, o.target_max_seconds, spec.data);
    }
  }
  // The default run depends on the data and the model only: once per data set (the softmax
  // row's two protocols share it).
  const nlohmann::json dflt = with_default ? default_run(spec, o) : nlohmann::json();
  const RowStats& r0 = rows.front();
  char line[512];
  std::string text;
  std::snprintf(line, sizeof line, "\nTable 1, %s%s%s (%s, N = %zu, D = %zu, %s, %s metric)\n",
                spec.name.c_str(), spec.protocol.empty() ? "" : ", protocol ",
                spec.protocol.c_str(), spec.dataset.c_str(), spec.data->n(), spec.data->d(),
                to_string(spec.base.kernel), to_string(spec.base.resolved_metric()));
  text += line;
  std::snprintf(line, sizeof line, "%-14s %12s %9s %13s %13s %11s %10s %10s %7s %10s %10s\n",
                "algorithm", "queries/iter", "bright", "ESS/1000 min", "ESS/1000 med", "min ESS/s",
                "x queries", "x wall", "accept", "us/iter", "to target");
  text += line;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const RowStats& r = rows[i];
    const double sq = r.ess_per_query_min / r0.ess_per_query_min;
    const double sw = r.ess_per_sec_min / r0.ess_per_sec_min;
    const std::string name = r.algo + (r.target_reached == false ? "*" : "");
    std::snprintf(line, sizeof line,
                  "%-14s %12.1f %9.1f %13.3f %13.3f %11.2f %10.2f %10.2f %7.3f %10.2f %10s\n",
                  name.c_str(), r.queries_per_iter, r.bright_mean, r.ess1000_min, r.ess1000_median,
                  r.ess_per_sec_min, sq, sw, r.accept, 1e6 * r.seconds_per_iter,
                  r.time_to_target.text().c_str());
    text += line;
    jrows.push_back(row_json(spec, kernel_label(algos[i].first), r, r0));
  }
  if (!dflt.is_null()) {
    const auto& t = dflt["time_to_target_seconds"];
    const bench::TargetTime tt{t.is_null() ? NAN : double(t),
                               dflt["time_to_target_projected"].get<bool>()};
    std::snprintf(line, sizeof line,
                  "%-14s %12s %9s %13s %13s %11s %10s %10s %7s %10s %10s  (chose %s; pilots "
                  "%.2f s)\n",
                  "default", "", "", "", "", "", "", "", "", "", tt.text().c_str(),
                  dflt["chosen"].get<std::string>().c_str(), double(dflt["pilot_seconds"]));
    text += line;
    nlohmann::json j = dflt;
    j["dataset"] = spec.dataset;
    j["model"] = to_string(spec.base.model);
    if (!spec.protocol.empty()) j["protocol"] = spec.protocol;
    jdefaults.push_back(j);
  }
  std::fputs(text.c_str(), stdout);  // each row's table as soon as it is measured
  std::fflush(stdout);
}

void table1(const Table1Options& o) {
  const std::vector<RowSpec> specs = table1_rows(o);
  nlohmann::json jrows = nlohmann::json::array(), jdefaults = nlohmann::json::array();
  std::set<std::string> defaults_run;
  for (const RowSpec& spec : specs)
    table1_row(spec, o, jrows, jdefaults, defaults_run.insert(spec.dataset).second);
  std::printf(
      "(x queries: ratio of min ESS per likelihood query to regular MCMC, the paper's "
      "measure; x wall: ratio of min ESS per second of wall time; us/iter: one chain's sampling "
      "time per iteration)\n");
  if (o.target_ess > 0.0)
    std::printf("(*: min bulk ESS below --target-ess %g within --max-seconds %g: a rough ratio)\n",
                o.target_ess, o.max_seconds);
  if (!o.json.empty()) {
    bench::write_json(
        o.json, "table1",
        {{"rows", jrows},
         {"target_ess", o.target_ess},
         {"time_to_ess", o.time_to_ess},
         {"defaults", jdefaults},
         {"max_seconds", o.target_ess > 0.0 ? nlohmann::json(o.max_seconds) : nlohmann::json()}});
    std::printf("wrote %s\n", o.json.c_str());
  }
}

struct ScalingOptions {
  std::string json;
  bool large = false;
  int chains = 2, threads = 0;
  std::size_t d = 51;
  std::uint64_t seed = 1;
  long iters_flymc = 200000, warmup_flymc = 20000, thin_flymc = 10;
  // Scalable MH (pCN, ρ tuned in warm-up) at every N: its candidates per iteration fall like
  // N^(-1/2) as the posterior concentrates (docs/math.md §8). 0 iterations: no SMH rows.
  long iters_smh = 20000, warmup_smh = 2000;
  // Regular MCMC iterations = clamp(budget / N, 10^4, 2·10^5): at least 10^4 so that its min ESS
  // is in the tens to hundreds (an ESS estimated from a handful of effective draws is biased),
  // and N = 10^6 still costs only a few minutes.
  double regular_budget = 2e9;
  // Regular MCMC only up to this N: at N = 10^7 its 10^4 iterations would each read 4 GB.
  std::size_t regular_max_n = 1000000;
  std::optional<int> theta_steps;
  std::optional<double> slack;
  // FlyMC's implicit z-update rate; unset: the engine's automatic one (auto_q_dark_to_bright),
  // here q = 32/N (about 4 data are bright), so the z-sweep's cost does not grow with N.
  std::optional<double> q;
};

void scaling(const ScalingOptions& o) {
  std::vector<std::size_t> ns = {10000, 100000, 1000000};
  if (o.large) ns.push_back(10000000);
  nlohmann::json jrows = nlohmann::json::array();
  std::printf("%10s %-10s %9s %12s %12s %10s %12s %9s %9s %10s\n", "N", "algo", "setup_s", "s/iter",
              "queries/it", "bright", "minESS/s", "x wall", "x 1st N", "s/1k ESS");
  double spi_first = 0.0;  // FlyMC's time per iteration at the first (smallest) N
  for (std::size_t n : ns) {
    std::fprintf(stderr, "scaling: generating N = %zu, D = %zu ...\n", n, o.d);
    auto data = std::make_shared<const Dataset>(synth_logistic(n, o.d, o.seed));
    double ess_s_regular = std::numeric_limits<double>::quiet_NaN();
    for (int a = n > o.regular_max_n ? 1 : 0; a < (o.iters_smh > 0 ? 3 : 2); ++a) {
      RunConfig cfg;
      cfg.algo = Algo::flymc;
      cfg.ess = 0.0;  // every row a fixed length
      cfg.chains = o.chains;
      cfg.threads = o.threads;
      cfg.seed = o.seed;
      if (a == 0) {
        cfg.algo = Algo::full;
        cfg.iters = std::clamp(static_cast<long>(o.regular_budget / double(n)), 10000L, 200000L);
        cfg.warmup = std::max(2000L, cfg.iters / 5);
        cfg.thin = std::max(1L, cfg.iters / 20000);
      } else if (a == 2) {
        cfg.algo = Algo::smh;
        cfg.iters = o.iters_smh;
        cfg.warmup = o.warmup_smh;
      } else {
        cfg.algo = Algo::flymc;
        cfg.iters = o.iters_flymc;
        cfg.warmup = o.warmup_flymc;
        cfg.thin = o.thin_flymc;
        cfg.theta_steps = o.theta_steps;
        cfg.bound_slack = o.slack;
        cfg.q_dark_to_bright = o.q;
      }
      const char* name = a == 0 ? "regular" : a == 1 ? "flymc-map" : "smh-pcn";
      std::fprintf(stderr, "scaling: N = %zu %s %ld iterations x %d chains ...\n", n, name,
                   cfg.iters, cfg.chains);
      const RunResult r = run_logistic(cfg, data);
      const double e = min_ess(r);
      const double spi = bench::seconds_per_iter(r);
      const double ess_s = e / r.sampling_seconds;
      if (a == 0) ess_s_regular = ess_s;
      const double sw = ess_s / ess_s_regular;
      if (a == 1 && spi_first == 0.0) spi_first = spi;
      const double growth = a == 1 ? spi / spi_first : std::numeric_limits<double>::quiet_NaN();
      const double per_1000 = bench::seconds_per_1000_ess(r, e);
      std::printf("%10zu %-10s %9.3f %12.3g %12.1f %10.1f %12.3f %9.2f %9.2f %10.2f\n", n, name,
                  r.setup_seconds, spi, r.queries_per_iter(), r.bright_mean(), ess_s, sw, growth,
                  per_1000);
      std::fflush(stdout);
      jrows.push_back(
          {{"n", n},
           {"d", o.d},
           {"algo", name},
           {"setup_seconds", r.setup_seconds},
           {"end_to_end_seconds", bench::end_to_end_seconds(r)},
           {"min_ess_bulk", e},
           {"seconds_per_1000_ess", per_1000},
           {"seconds_per_iter", spi},
           {"queries_per_iter", r.queries_per_iter()},
           {"bright_mean", r.bright_mean()},
           {"ess_per_second_min", ess_s},
           {"speedup_wall", std::isfinite(sw) ? nlohmann::json(sw) : nullptr},
           {"seconds_per_iter_vs_first_n",
            std::isfinite(growth) ? nlohmann::json(growth) : nullptr},
           {"q_dark_to_bright", cfg.algo == Algo::flymc ? r.q_dark_to_bright : 0.0},
           // SMH: the data whose factor was evaluated (two queries each)
           {"candidates_per_iter",
            cfg.algo == Algo::smh ? nlohmann::json(0.5 * r.queries_per_iter()) : nlohmann::json()},
           {"iters", cfg.iters},
           {"chains", cfg.chains}});
    }
  }
  std::printf(
      "(s/iter: wall seconds per iteration of one chain; set-up: MAP + bound statistics; x 1st N: "
      "FlyMC's s/iter over its s/iter at the first N; s/1k ESS: wall seconds of set-up, warm-up "
      "and sampling per 1,000 effective draws; regular MCMC up to N = %zu; smh-pcn's "
      "queries/it are two per candidate datum)\n",
      o.regular_max_n);
  bench::write_json(o.json, "scaling", {{"rows", jrows}});
}

struct ChainsOptions {
  std::string data, json;
  // table1's MAP-tuned FlyMC budget: at ESS/1000 ≈ 0.04 (RW-MH on Fashion-MNIST 7-vs-9) a chain
  // then has a min ESS of ~150, enough for an ESS/s estimate within ~15%; the iteration rate,
  // printed beside it, is the noise-free part of the comparison.
  long iters = 4000000, warmup = 200000, thin = 20;
  std::uint64_t seed = 1;
  int max_chains = 0;
};

void chains_bench(const ChainsOptions& o) {
  auto data = std::make_shared<const Dataset>(load_dataset(o.data, LabelDomain::binary));
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int maxc = o.max_chains > 0 ? o.max_chains : cores;
  nlohmann::json jrows = nlohmann::json::array();
  double base = 0.0, base_rate = 0.0;
  std::printf("%7s %12s %12s %10s %14s %10s\n", "chains", "minESS", "minESS/s", "vs 1 chain",
              "iterations/s", "vs 1 chain");
  for (int c = 1; c <= maxc; ++c) {
    RunConfig cfg;
    cfg.algo = Algo::flymc;
    cfg.ess = 0.0;
    cfg.chains = c;
    cfg.threads = c;
    cfg.iters = o.iters;
    cfg.warmup = o.warmup;
    cfg.thin = o.thin;
    cfg.seed = o.seed;
    const RunResult r = run_logistic(cfg, data);
    const double e = min_ess(r), es = e / r.sampling_seconds;
    const double rate = double(c) * double(cfg.iters) / r.sampling_seconds;  // all chains
    if (c == 1) {
      base = es;
      base_rate = rate;
    }
    std::printf("%7d %12.1f %12.2f %10.2f %14.0f %10.2f\n", c, e, es, es / base, rate,
                rate / base_rate);
    std::fflush(stdout);
    jrows.push_back({{"chains", c},
                     {"min_ess", e},
                     {"ess_per_second_min", es},
                     {"sampling_seconds", r.sampling_seconds},
                     {"ratio_to_one_chain", es / base},
                     {"iterations_per_second", rate},
                     {"rate_ratio_to_one_chain", rate / base_rate}});
  }
  bench::write_json(o.json, "chains", {{"rows", jrows}});
}

/// `flymc-bench table1`: its options, into `t`.
void add_table1_command(CLI::App& app, Table1Options& t) {
  CLI::App* t1 = app.add_subcommand(
      "table1",
      "FlyMC paper Table 1: logistic regression (RW-MH), softmax (MALA), robust regression "
      "(slice sampling); regular MCMC, untuned and MAP-tuned FlyMC per row");
  t1->add_option("--rows", t.rows, "Rows to run, comma-separated: logistic,softmax,robust")
      ->capture_default_str();
  t1->add_option("--data", t.data, "Logistic row: data set (.csv/.npy, labels +-1 or 0/1)");
  t1->add_option("--softmax-data", t.softmax_data, "Softmax row: data set (labels 0..K-1)");
  t1->add_option("--robust-data", t.robust_data,
                 "Robust row: data set (real responses); default: synth-robust generated in "
                 "process (--robust-n x --robust-d, seed 1)");
  t1->add_option("--robust-n", t.robust_n)->capture_default_str();
  t1->add_option("--robust-chains", t.robust_chains, "Robust row: chains")->capture_default_str();
  t1->add_option("--robust-q", t.robust_q, "Robust row: implicit z-update rate q")
      ->capture_default_str();
  t1->add_option("--robust-d", t.robust_d)->capture_default_str();
  t1->add_option("--softmax-protocols", t.softmax_protocols,
                 "Softmax row's protocols, comma-separated: paper (identity-metric MALA for "
                 "all), strong (dense Laplace metric for all, plus FlyMC with --metric fly)")
      ->capture_default_str();
  t1->add_option("--name", t.name, "Logistic data set name in the output");
  t1->add_option("--json", t.json, "Write the figures and the machine as JSON");
  cli::add_run_named(t1, "chains", t.chains, "Chains per algorithm")->capture_default_str();
  cli::add_run_named(t1, "threads", t.threads, "Threads (0: all cores)")->capture_default_str();
  cli::add_run_named(t1, "seed", t.seed, "Seed")->capture_default_str();
  t1->add_option("--scale", t.scale, "Multiply every iteration budget (quick runs: 0.05)")
      ->capture_default_str();
  t1->add_option("--time-to-ess", t.time_to_ess,
                 "Also run each algorithm, and the default flymc sample (--algo auto), with --ess "
                 "N: the seconds to the target (0: skip)")
      ->capture_default_str();
  t1->add_option("--target-max-seconds", t.target_max_seconds,
                 "Wall-time cap of each --time-to-ess run (the default run's pilots included); a "
                 "row it ends reports its projected time, marked ~ (0: no cap)")
      ->capture_default_str();
  t1->add_option("--target-ess", t.target_ess,
                 "Run each algorithm until its min bulk ESS reaches this (pilot-sized, within "
                 "its budget and --max-seconds, warm-up cut to a quarter of that); 0: the full "
                 "fixed budgets")
      ->capture_default_str();
  cli::add_run_named(t1, "max-seconds", t.max_seconds,
                     "With --target-ess: sampling time cap per algorithm")
      ->capture_default_str();
  t1->add_option("--warmup-regular", t.warmup_regular)->capture_default_str();
  t1->add_option("--iters-regular", t.iters_regular)->capture_default_str();
  t1->add_option("--thin-regular", t.thin_regular)->capture_default_str();
  t1->add_option("--warmup-untuned", t.warmup_untuned)->capture_default_str();
  t1->add_option("--iters-untuned", t.iters_untuned)->capture_default_str();
  const auto& kernels = bench::kernel_names();
  cli::add_run_named(t1, "kernel", t.kernel, "Logistic row: theta-kernel")
      ->transform(CLI::CheckedTransformer(kernels))
      ->default_str("rwmh");
  t1->add_option("--softmax-kernel", t.softmax_kernel, "Softmax row: theta-kernel")
      ->transform(CLI::CheckedTransformer(kernels))
      ->default_str("mala");
  t1->add_option("--robust-kernel", t.robust_kernel, "Robust row: theta-kernel")
      ->transform(CLI::CheckedTransformer(kernels))
      ->default_str("slice");
  // The table's metrics but fly, which only FlyMC's rows could take.
  std::map<std::string, Metric> metrics = cli::enum_map<Metric>();
  metrics.erase(enum_name(Metric::fly));
  cli::add_run_named(t1, "metric", t.metric,
                     "Logistic row: kernel metric, the same for every algorithm")
      ->transform(CLI::CheckedTransformer(metrics))
      ->default_str("identity");
  t1->add_option("--warmup-flymc", t.warmup_flymc)->capture_default_str();
  t1->add_option("--iters-flymc", t.iters_flymc)->capture_default_str();
  t1->add_option("--thin-flymc", t.thin_flymc)->capture_default_str();
  cli::add_run_named(t1, "q-dark-to-bright", t.q, "Logistic row: implicit z-update rate q")
      ->capture_default_str();
  cli::add_auto_option(
      t1, "--bound-slack", t.slack, [](double x) { return x >= 0.0; }, ">= 0",
      "Logistic row: slack in log B_n");
  cli::add_auto_option(
      t1, "--softmax-slack", t.softmax_slack, [](double x) { return x >= 0.0; }, ">= 0",
      "Softmax row: slack in log B_n");
  cli::add_run_named(t1, "prior-sd", t.prior_sd, "Logistic row: prior sd")->capture_default_str();
  t1->add_option("--softmax-prior-sd", t.softmax_prior_sd, "Softmax row: prior sd")
      ->capture_default_str();
  t1->add_option("--robust-prior-sd", t.robust_prior_sd, "Robust row: prior sd (Laplace)")
      ->capture_default_str();
  cli::add_auto_option(
      t1, "--robust-slack", t.robust_slack, [](double x) { return x >= 0.0; }, ">= 0",
      "Robust row: slack in log B_n");
  cli::add_auto_option(
      t1, "--theta-steps", t.theta_steps, [](double x) { return x >= 1.0; }, ">= 1",
      "Logistic row: theta-steps per z-sweep");
  t1->callback([&t] { table1(t); });
}

/// `flymc-bench scaling`: its options, into `sc`.
void add_scaling_command(CLI::App& app, ScalingOptions& sc) {
  CLI::App* s1 = app.add_subcommand("scaling", "Synthetic tall data: speedup as N grows");
  s1->add_option("--json", sc.json, "Write the figures as JSON");
  s1->add_flag("--large", sc.large,
               "Also N = 10^7 (4 GB of rows at D = 51; regular MCMC only up to --regular-max-n)");
  s1->add_option("--regular-max-n", sc.regular_max_n, "Largest N regular MCMC runs at")
      ->capture_default_str();
  cli::add_run_named(s1, "chains", sc.chains)->capture_default_str();
  cli::add_run_named(s1, "threads", sc.threads)->capture_default_str();
  s1->add_option("--d", sc.d)->capture_default_str();
  cli::add_run_named(s1, "seed", sc.seed)->capture_default_str();
  s1->add_option("--iters-flymc", sc.iters_flymc)->capture_default_str();
  s1->add_option("--warmup-flymc", sc.warmup_flymc)->capture_default_str();
  s1->add_option("--iters-smh", sc.iters_smh, "Scalable MH's iterations (0: no SMH rows)")
      ->capture_default_str();
  s1->add_option("--warmup-smh", sc.warmup_smh)->capture_default_str();
  s1->add_option("--regular-budget", sc.regular_budget,
                 "Regular MCMC runs clamp(budget/N, 1e4, 2e5) iterations")
      ->capture_default_str();
  cli::add_auto_option(
      s1, "--theta-steps", sc.theta_steps, [](double x) { return x >= 1.0; }, ">= 1",
      "theta-steps per z-sweep");
  cli::add_auto_option(
      s1, "--bound-slack", sc.slack, [](double x) { return x >= 0.0; }, ">= 0",
      "Slack subtracted from every log B_n");
  cli::add_auto_option(
      s1, "--q-dark-to-bright", sc.q, [](double x) { return x > 0.0 && x <= 1.0; }, "in (0, 1]",
      "FlyMC's implicit z-update rate");
  s1->callback([&sc] { scaling(sc); });
}

/// `flymc-bench chains`: its options, into `ch`.
void add_chains_command(CLI::App& app, ChainsOptions& ch) {
  CLI::App* c1 = app.add_subcommand("chains", "min-ESS/s with 1, 2, ... concurrent chains");
  c1->add_option("--data", ch.data, "Logistic data set")->required();
  c1->add_option("--json", ch.json);
  cli::add_run_named(c1, "iters", ch.iters)->capture_default_str();
  cli::add_run_named(c1, "warmup", ch.warmup)->capture_default_str();
  cli::add_run_named(c1, "thin", ch.thin)->capture_default_str();
  cli::add_run_named(c1, "seed", ch.seed)->capture_default_str();
  c1->add_option("--max-chains", ch.max_chains, "0: the core count")->capture_default_str();
  c1->callback([&ch] { chains_bench(ch); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flymc-bench: wall-clock effective samples per second"};
  app.require_subcommand(1);
  Table1Options t;
  ScalingOptions sc;
  ChainsOptions ch;
  add_table1_command(app, t);
  add_scaling_command(app, sc);
  add_chains_command(app, ch);
  bench::TallOptions tall;
  bench::add_tall_command(app, tall);
  bench::CompareOptions cmp;
  bench::add_compare_command(app, cmp);
  bench::StorageOptions storage;
  bench::add_storage_command(app, storage);
  bench::CostModelOptions cost_model;
  bench::add_cost_model_command(app, cost_model);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 64;
  } catch (const flymc::Error& e) {
    std::fprintf(stderr, "flymc-bench: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flymc-bench: internal error: %s\n", e.what());
    return 70;
  }
  return 0;
}
