#include "flymc/sampler.hpp"

#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>

#include "flymc/adaptation.hpp"
#include "flymc/errors.hpp"

namespace flymc {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::vector<std::string> column_names(std::size_t d) {
  std::vector<std::string> cols = {"lp__", "accept_stat__", "stepsize__", "n_bright__",
                                   "n_queries__"};
  for (std::size_t j = 1; j <= d; ++j) cols.push_back("theta." + std::to_string(j));
  return cols;
}

/// Everything shared read-only by the chains of one run.
struct Shared {
  const RunConfig& cfg;
  const LogisticModel& model;
  const LogisticBound* bound;  // null for regular MCMC
  const MapResult& map;
  double eps0;
  const double* scale;                  // RW proposal scale L (D × stride) or null
  std::vector<double> inv_metric_diag;  // diag(LLᵀ), written to the adaptation block
};

/// Initial θ (padded): θ_MAP plus chain-specific jitter in Laplace standard deviations, or a prior
/// draw.
void initial_theta(const Shared& sh, Rng& rng, double* theta) {
  const std::size_t d = sh.model.dim();
  for (std::size_t j = 0; j < d; ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    if (sh.cfg.init == Init::map) {
      theta[j] = sh.map.theta[jj] +
                 sh.cfg.init_jitter * std::sqrt(sh.map.covariance(jj, jj)) * rng.normal();
    } else {
      theta[j] = sh.model.prior_sd() * rng.normal();
    }
  }
}

/// The chain loop, shared by both algorithms. An iteration is one θ-step (one MH proposal), for
/// FlyMC on p(θ | z); FlyMC resamples z after every `theta_steps`-th iteration. Each θ-step and
/// each z-sweep leaves the joint p(θ, z) invariant (MATH.md 1.5).
template <bool kFly, class ZUp>
ChainResult run_chain(const Shared& sh, int chain_id, ZUp* zup, DrawSink* sink,
                      std::atomic<long>* progress, double& z_init_seconds) {
  const RunConfig& cfg = sh.cfg;
  const Dataset& data = sh.model.data();
  const std::size_t d = sh.model.dim(), stride = sh.model.stride();
  Rng rng(cfg.seed, static_cast<std::uint64_t>(chain_id));
  AlignedBuffer theta = aligned_zeros(stride);
  initial_theta(sh, rng, theta.get());

  ChainResult res;
  res.chain_id = chain_id;
  Counters& cnt = res.counters;
  if (cfg.profile) cnt.profile = &res.profile;
  const auto t_start = Clock::now();

  // Target and initial state.
  BrightSet bright;
  std::optional<FlyTarget> fly;
  std::optional<FullTarget> full;
  double logp;
  if constexpr (kFly) {
    bright = BrightSet(data);
    fly.emplace(sh.model, *sh.bound, bright);
    // z ~ p(z | θ0) exactly: one Gibbs pass over all data, in fixed blocks.
    ZScratch zs;
    std::vector<Index> block;
    for (std::size_t lo = 0; lo < data.n(); lo += 4096) {
      const std::size_t hi = std::min(data.n(), lo + 4096);
      block.resize(hi - lo);
      for (std::size_t i = lo; i < hi; ++i) block[i - lo] = static_cast<Index>(i);
      gibbs_z(*sh.bound, data, bright, theta.get(), block.data(), block.size(), rng, cnt, zs);
    }
    fly->set_base(fly->base_at(theta.get()));
    logp = fly->current();
  } else {
    full.emplace(sh.model);
    logp = full->eval(theta.get(), cnt);
  }
  const auto t_warm = Clock::now();
  z_init_seconds = seconds_between(t_start, t_warm);

  RwmhKernel kernel(d, stride, sh.eps0, sh.scale);
  DualAveraging adapt(sh.eps0, cfg.target_accept);
  const std::vector<std::string> cols = column_names(d);
  if (sink) sink->begin(cols);
  std::vector<double> row(cols.size());

  const long total = cfg.warmup + cfg.iters;
  res.kept = static_cast<std::size_t>((cfg.iters + cfg.thin - 1) / cfg.thin);
  res.draws.reserve(res.kept * d);
  res.lp.reserve(res.kept);
  Clock::time_point t_sample = t_warm;
  double accept_sum = 0.0, bright_sum = 0.0, window_accept = 0.0;
  std::uint64_t queries_at_sampling = cnt.queries, queries_at_row = cnt.queries;
  long window_steps = 0;
  int since_z = 0;

  for (long it = 0; it < total; ++it) {
    const bool sampling = it >= cfg.warmup;
    if (it == cfg.warmup) {
      kernel.step_size = adapt.final_step_size();
      if (sink) sink->adaptation(kernel.step_size, sh.inv_metric_diag);
      t_sample = Clock::now();
      queries_at_sampling = queries_at_row = cnt.queries;
      window_accept = 0.0;
      window_steps = 0;
    }
    double a;
    if constexpr (kFly) {
      a = kernel.step(rng, theta.get(), logp, *fly, cnt);
    } else {
      a = kernel.step(rng, theta.get(), logp, *full, cnt);
    }
    if (!sampling) {
      kernel.step_size = adapt.update(a);
    } else {
      accept_sum += a;
    }
    window_accept += a;
    ++window_steps;
    if constexpr (kFly) {
      // z is resampled after every theta_steps-th θ-step (MATH.md 1.5: any fixed schedule of
      // θ-steps and z-sweeps leaves the joint invariant).
      if (++since_z == cfg.theta_steps) {
        since_z = 0;
        PhaseTimer t(cnt.profile, Phase::z_update);
        zup->update(*sh.bound, data, bright, theta.get(), rng, cnt);
        logp = fly->current();
      }
    }
    if (sampling) {
      const long si = it - cfg.warmup;
      const std::size_t nb = kFly ? bright.size() : data.n();
      bright_sum += static_cast<double>(nb);
      if (si % cfg.thin == 0) {
        PhaseTimer t(cnt.profile, Phase::output);
        res.lp.push_back(logp);
        for (std::size_t j = 0; j < d; ++j) res.draws.push_back(theta[j]);
        if (sink) {
          row[0] = logp;
          row[1] = window_accept / static_cast<double>(std::max(1L, window_steps));
          row[2] = kernel.step_size;
          row[3] = static_cast<double>(nb);
          row[4] = static_cast<double>(cnt.queries - queries_at_row);
          for (std::size_t j = 0; j < d; ++j) row[5 + j] = theta[j];
          sink->row(row);
        }
        queries_at_row = cnt.queries;
        window_accept = 0.0;
        window_steps = 0;
      }
    }
    if (progress && ((it & 1023) == 1023 || it + 1 == total))
      progress->store(it + 1, std::memory_order_relaxed);
  }
  const auto t_end = Clock::now();
  res.step_size = kernel.step_size;
  res.warmup_seconds = seconds_between(t_warm, t_sample);
  res.sampling_seconds = seconds_between(t_sample, t_end);
  res.accept_rate = accept_sum / static_cast<double>(cfg.iters);
  res.bright_mean = bright_sum / static_cast<double>(cfg.iters);
  res.sampling_queries = cnt.queries - queries_at_sampling;
  if (sink) sink->end(res.warmup_seconds, res.sampling_seconds);
  cnt.profile = nullptr;  // points into res; must not outlive this frame
  return res;
}

}  // namespace

double RunResult::queries_per_iter() const {
  double q = 0.0;
  for (const auto& c : chains) q += static_cast<double>(c.sampling_queries);
  return q / (static_cast<double>(config.iters) * static_cast<double>(chains.size()));
}
double RunResult::bright_mean() const {
  double s = 0.0;
  for (const auto& c : chains) s += c.bright_mean;
  return s / static_cast<double>(chains.size());
}
double RunResult::accept_rate() const {
  double s = 0.0;
  for (const auto& c : chains) s += c.accept_rate;
  return s / static_cast<double>(chains.size());
}
std::uint64_t RunResult::bound_violations() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.bound_violations;
  return s;
}
std::uint64_t RunResult::nonfinite() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.nonfinite;
  return s;
}
std::vector<std::vector<double>> RunResult::coordinate(std::size_t j) const {
  std::vector<std::vector<double>> out;
  for (const auto& c : chains) {
    std::vector<double> v(c.kept);
    for (std::size_t i = 0; i < c.kept; ++i) v[i] = c.draws[i * dim + j];
    out.push_back(std::move(v));
  }
  return out;
}
std::vector<std::vector<double>> RunResult::lp() const {
  std::vector<std::vector<double>> out;
  for (const auto& c : chains) out.push_back(c.lp);
  return out;
}

RunResult run_logistic(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                       const SinkFactory& sinks, Progress* progress) {
  cfg.validate();
  if (!data || data->n() == 0 || data->d() == 0)
    throw DataError("logistic regression needs at least one row and one feature");
  for (std::size_t i = 0; i < data->n(); ++i) {
    const double t = data->y()[i];
    if (t != 1.0 && t != -1.0)
      throw DataError(data->source() + ": row " + std::to_string(i + 1) +
                      ": field 1 (label): logistic regression needs labels -1/+1 (or 0/1), got " +
                      std::to_string(t));
  }
  const auto t0 = Clock::now();
  RunResult out;
  out.config = cfg;
  out.n = data->n();
  out.dim = data->d();
  LogisticModel model(data, cfg.prior_sd);
  out.map = model.find_map();
  std::optional<LogisticBound> bound;
  if (cfg.algo == Algo::flymc) {
    bound = cfg.bound == BoundTuning::map
                ? LogisticBound::map_tuned(model, out.map.theta, cfg.bound_slack)
                : LogisticBound::untuned(model, cfg.untuned_xi, out.map.theta, cfg.bound_slack);
  }
  const double setup_serial = seconds_between(t0, Clock::now());

  // Initial RW step: 2.38/√D times the smallest Laplace standard deviation; dual averaging adapts
  // it.
  // Proposal scale: L with LLᵀ = the Laplace covariance (or its diagonal), or the identity.
  const std::size_t d = out.dim, stride = data->stride();
  AlignedBuffer scale;
  std::vector<double> metric_diag(d, 1.0);
  if (cfg.metric != Metric::identity) {
    scale = aligned_zeros(d * stride);
    Mat L = Mat::Zero(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
    if (cfg.metric == Metric::dense) {
      L = out.map.covariance.llt().matrixL();
    } else {
      L.diagonal() = out.map.covariance.diagonal().cwiseSqrt();
    }
    for (std::size_t i = 0; i < d; ++i) {
      for (std::size_t j = 0; j <= i; ++j)
        scale[i * stride + j] = L(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      metric_diag[i] =
          out.map.covariance(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(i));
    }
  }
  // Initial step: 2.38/√D in the metric's units (for the identity, times the smallest Laplace
  // standard deviation); dual averaging adapts it.
  double eps0 = cfg.step_size;
  if (eps0 <= 0.0) {
    const double min_var = out.map.covariance.diagonal().minCoeff();
    eps0 = 2.38 / std::sqrt(static_cast<double>(d)) *
           (cfg.metric == Metric::identity ? std::sqrt(std::max(min_var, 1e-300)) : 1.0);
  }
  const Shared sh{cfg, model, bound ? &*bound : nullptr, out.map, eps0, scale.get(), metric_diag};

  const int nchains = cfg.chains;
  out.chains.resize(static_cast<std::size_t>(nchains));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(nchains));
  std::vector<double> z_init(static_cast<std::size_t>(nchains), 0.0);
  const int threads = cfg.threads > 0 ? cfg.threads : tbb::info::default_concurrency();
  tbb::task_arena arena(threads);
  const auto t_par = Clock::now();
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int>(0, nchains, 1),
        [&](const tbb::blocked_range<int>& r) {
          for (int c = r.begin(); c != r.end(); ++c) {
            const auto ci = static_cast<std::size_t>(c);
            try {
              std::unique_ptr<DrawSink> sink = sinks ? sinks(c + 1) : nullptr;
              std::atomic<long>* prog = progress ? &progress->done[ci] : nullptr;
              if (cfg.algo == Algo::full) {
                out.chains[ci] = run_chain<false, ImplicitZUpdater>(sh, c + 1, nullptr, sink.get(),
                                                                    prog, z_init[ci]);
              } else if (cfg.z == ZUpdate::implicit) {
                ImplicitZUpdater z(cfg.q_dark_to_bright);
                out.chains[ci] = run_chain<true>(sh, c + 1, &z, sink.get(), prog, z_init[ci]);
              } else {
                ExplicitZUpdater z(cfg.resample_fraction);
                out.chains[ci] = run_chain<true>(sh, c + 1, &z, sink.get(), prog, z_init[ci]);
              }
            } catch (...) {
              errors[ci] = std::current_exception();
            }
          }
        },
        tbb::simple_partitioner());
  });
  const double par_seconds = seconds_between(t_par, Clock::now());
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  // Wall time of the parallel region, split between z set-up, warm-up and sampling in proportion
  // to the chains' own timers (chains may outnumber threads, so there is no common barrier).
  double zi = 0.0, w = 0.0, s = 0.0;
  for (std::size_t c = 0; c < out.chains.size(); ++c) {
    zi += z_init[c];
    w += out.chains[c].warmup_seconds;
    s += out.chains[c].sampling_seconds;
  }
  const double tot = std::max(zi + w + s, 1e-300);
  out.setup_seconds = setup_serial + par_seconds * zi / tot;
  out.warmup_seconds = par_seconds * w / tot;
  out.sampling_seconds = par_seconds * s / tot;
  return out;
}

}  // namespace flymc
