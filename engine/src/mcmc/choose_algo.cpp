// --algo auto (flymc/mcmc/choose_algo.hpp): a FlyMC pilot and a regular-MCMC pilot, compared by
// min bulk ESS per second of sampling.
#include "flymc/mcmc/choose_algo.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc {
namespace {

/// The pilots' master seed: unrelated to the run's own streams (Rng mixes seed and stream).
constexpr std::uint64_t kPilotSeedMix = 0xa1905eed5ca1ab1eULL;

double min_ess_bulk(const RunResult& r) {
  double m = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < r.dim; ++j) {
    const double e = ess_bulk(r.coordinate(j));
    m = std::min(m, std::isfinite(e) ? e : 0.0);
  }
  return std::isfinite(m) ? m : 0.0;
}

/// Sampling wall time per likelihood query of one chain (the chains run concurrently).
double seconds_per_query(const RunResult& r) {
  const double q = static_cast<double>(r.config.iters) * r.queries_per_iter();
  return std::max(r.sampling_seconds, 1e-9) / std::max(q, 1.0);
}

/// A pilot's last run and its min bulk ESS.
struct Pilot {
  RunResult result;
  double min_ess = 0.0;
};

/// Kept draws per chain beyond which a longer pilot thins: a pilot is extended because its chain
/// is strongly autocorrelated, where thinning loses little ESS, and its draws stay in memory.
constexpr long kMaxPilotDraws = 20000;

/// Runs `c` on `data`, and again with four times the sampling iterations while its min bulk ESS
/// is below opt.min_pilot_ess and the next run should end within opt.max_pilot_seconds of the
/// first run's start. Every run starts afresh from the same seed (run() does not resume): the
/// shorter runs before the last cost about a third of its sampling, plus their warm-ups.
Pilot run_pilot(RunConfig c, const std::shared_ptr<const Dataset>& data, const AutoOptions& opt) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (;;) {
    const auto t0 = clock::now();
    Pilot p{run(c, data), 0.0};
    p.min_ess = min_ess_bulk(p.result);
    const auto now = clock::now();
    const double last = std::chrono::duration<double>(now - t0).count();
    const double spent = std::chrono::duration<double>(now - start).count();
    if (p.min_ess >= opt.min_pilot_ess || spent + 4.0 * last > opt.max_pilot_seconds) return p;
    c.iters *= 4;
    c.thin = std::max(1L, c.iters / kMaxPilotDraws);
  }
}

/// A pilot's min bulk ESS per second of sampling; a pilot that produced no effective draw still
/// counts one, so a ratio of two pilots stays finite.
double ess_per_second(const Pilot& p, double time_scale) {
  const double seconds = std::max(p.result.sampling_seconds * time_scale, 1e-9);
  return std::max(p.min_ess, 1.0) / seconds;
}

RunConfig pilot_config(const RunConfig& cfg, Algo algo, long warmup, long iters) {
  RunConfig c = cfg;
  c.algo = algo;
  c.seed = cfg.seed ^ kPilotSeedMix;
  c.warmup = warmup;
  c.iters = iters;
  c.thin = 1;
  c.profile = false;
  if (algo == Algo::full && c.resolved_metric() == Metric::fly) c.metric = Metric::dense;
  return c;
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

}  // namespace

std::shared_ptr<const Dataset> subset_rows(const Dataset& data, const std::vector<Index>& rows) {
  auto out = std::make_shared<Dataset>(rows.size(), data.d(), data.source());
  std::vector<double>& y = out->mutable_y();
  y.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(out->mutable_row(i), data.row(rows[i]), data.stride() * sizeof(double));
    y[i] = data.y()[rows[i]];
  }
  return out;
}

AlgoChoice choose_algo(const RunConfig& cfg, const std::shared_ptr<const Dataset>& data,
                       const AutoOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  AlgoChoice out;
  const long fly_iters = opt.flymc_iters * (cfg.kernel == KernelKind::rwmh ? 10 : 1);
  const Pilot fly =
      run_pilot(pilot_config(cfg, Algo::flymc, opt.flymc_warmup, fly_iters), data, opt);
  out.flymc_ess_per_second = ess_per_second(fly, 1.0);
  out.flymc_pilot_ess = fly.min_ess;
  out.flymc_pilot_iters = fly.result.config.iters;

  const std::size_t n = data->n();
  out.regular_pilot_rows = std::min(n, std::max<std::size_t>(opt.regular_rows, 1));
  std::shared_ptr<const Dataset> sub = data;
  if (out.regular_pilot_rows < n)
    sub = subset_rows(*data, random_rows(n, out.regular_pilot_rows, cfg.seed ^ kPilotSeedMix));
  const Pilot reg_pilot =
      run_pilot(pilot_config(cfg, Algo::full, opt.regular_warmup, opt.regular_iters), sub, opt);
  const RunResult& reg = reg_pilot.result;
  out.regular_pilot_ess = reg_pilot.min_ess;
  out.regular_pilot_iters = reg.config.iters;
  out.pilots_short = std::min(fly.min_ess, reg_pilot.min_ess) < opt.min_pilot_ess;
  double scale = 1.0;
  if (sub != data) {
    // Queries scale with the rows; a query's time does not quite (a subset may fit in cache
    // where all the data do not), so a few MALA iterations on all of it time one.
    RunConfig t = pilot_config(cfg, Algo::full, 0, opt.timing_iters);
    t.kernel = KernelKind::mala;
    t.metric = Metric::identity;
    const RunResult timing = run(t, data);
    scale = static_cast<double>(n) / static_cast<double>(out.regular_pilot_rows) *
            seconds_per_query(timing) / seconds_per_query(reg);
  }
  out.regular_ess_per_second = ess_per_second(reg_pilot, scale);

  out.predicted_speedup = out.flymc_ess_per_second / out.regular_ess_per_second;
  out.algo = out.predicted_speedup >= 1.0 ? Algo::flymc : Algo::full;
  out.pilot_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace flymc
