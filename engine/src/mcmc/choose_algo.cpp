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

/// A pilot's min bulk ESS per second of sampling; a pilot that produced no effective draw still
/// counts one, so a ratio of two pilots stays finite.
double ess_per_second(const RunResult& r, double time_scale) {
  const double seconds = std::max(r.sampling_seconds * time_scale, 1e-9);
  return std::max(min_ess_bulk(r), 1.0) / seconds;
}

/// Sampling wall time per likelihood query of one chain (the chains run concurrently).
double seconds_per_query(const RunResult& r) {
  const double q = static_cast<double>(r.config.iters) * r.queries_per_iter();
  return std::max(r.sampling_seconds, 1e-9) / std::max(q, 1.0);
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
  const RunResult fly = run(pilot_config(cfg, Algo::flymc, opt.flymc_warmup, fly_iters), data);
  out.flymc_ess_per_second = ess_per_second(fly, 1.0);

  const std::size_t n = data->n();
  out.regular_pilot_rows = std::min(n, std::max<std::size_t>(opt.regular_rows, 1));
  std::shared_ptr<const Dataset> sub = data;
  if (out.regular_pilot_rows < n)
    sub = subset_rows(*data, random_rows(n, out.regular_pilot_rows, cfg.seed ^ kPilotSeedMix));
  const RunResult reg =
      run(pilot_config(cfg, Algo::full, opt.regular_warmup, opt.regular_iters), sub);
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
  out.regular_ess_per_second = ess_per_second(reg, scale);

  out.predicted_speedup = out.flymc_ess_per_second / out.regular_ess_per_second;
  out.algo = out.predicted_speedup >= 1.0 ? Algo::flymc : Algo::full;
  out.pilot_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace flymc
