#include "flymc/mcmc/sampler.hpp"

#include <cmath>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/mcmc/metric.hpp"
#include "sampler_impl.hpp"

namespace flymc {

// The runner per model (sampler_<model>.cpp).
RunResult run_logistic_model(const RunConfig&, std::shared_ptr<const Dataset>, const SinkFactory&,
                             Progress*, const CheckpointOptions*);
RunResult run_softmax_model(const RunConfig&, std::shared_ptr<const Dataset>, const SinkFactory&,
                            Progress*, const CheckpointOptions*);
RunResult run_robust_model(const RunConfig&, std::shared_ptr<const Dataset>, const SinkFactory&,
                           Progress*, const CheckpointOptions*);

namespace detail {

void check_chain_state(const ChainCheckpoint& c, const RunConfig& cfg, std::size_t n, std::size_t p,
                       std::size_t k, const std::string& dir) {
  const bool grad_cache =
      cfg.algo == Algo::flymc && (cfg.kernel == KernelKind::mala || cfg.kernel == KernelKind::hmc);
  const long total = cfg.warmup + cfg.iters;
  std::string bad;
  if (c.theta.size() != p)
    bad = "theta has " + std::to_string(c.theta.size()) + " entries";
  else if (cfg.algo == Algo::flymc && c.order.size() != n)
    bad = "bright-set size differs from N";
  else if (cfg.algo == Algo::full && !c.order.empty())
    bad = "a bright set in a regular MCMC run";
  else if (c.iteration > total)
    bad = "iteration beyond the run's end";
  else if (c.finished != (c.iteration == total))
    bad = "inconsistent completion flag";
  else if (c.kept != kept_after(cfg, c.iteration))
    bad = "kept-draw count inconsistent";
  else if (c.since_z >= cfg.resolved_theta_steps())
    bad = "z-sweep schedule out of range";
  else if (grad_cache ? c.grad.size() != p || c.coefs.size() != c.num_bright * k
                      : !c.grad.empty() || !c.coefs.empty())
    bad = "cached gradient does not fit the kernel";
  if (bad.empty() && !c.order.empty()) {
    std::vector<char> seen(n, 0);
    for (Index v : c.order) {
      if (v >= n || seen[v]) {
        bad = "the bright-set order is not a permutation of the data";
        break;
      }
      seen[v] = 1;
    }
  }
  if (!bad.empty())
    throw ConfigError(chain_checkpoint_path(dir, c.chain_id) +
                      ": does not fit the run's configuration (" + bad + ")");
}

std::vector<double> laplace_draws(const MapResult& map, std::uint64_t seed) {
  constexpr int kDraws = 8;
  const auto p = static_cast<std::size_t>(map.theta.size());
  const Eigen::LLT<Mat> llt(map.covariance);
  const Mat L = llt.matrixL();
  Rng rng(seed, 0x5eedf1f1ULL);
  std::vector<double> draws(kDraws * p);
  Vec eta(static_cast<Eigen::Index>(p));
  for (int t = 0; t < kDraws; ++t) {
    for (auto& e : eta) e = rng.normal();
    const Vec th = map.theta + L * eta;
    std::copy(th.data(), th.data() + p, draws.begin() + static_cast<std::ptrdiff_t>(t * p));
  }
  return draws;
}

InverseMetric initial_metric(const RunConfig& cfg, const MapResult& map) {
  const auto p = static_cast<std::size_t>(map.theta.size());
  switch (cfg.resolved_metric()) {
    case Metric::automatic:
    case Metric::identity:
      return InverseMetric::identity(p);
    case Metric::diag: {
      std::vector<double> var(p);
      for (std::size_t j = 0; j < p; ++j) {
        const auto jj = static_cast<Eigen::Index>(j);
        var[j] = std::max(map.covariance(jj, jj), 1e-300);
      }
      return InverseMetric::diagonal(std::move(var));
    }
    case Metric::dense:
      return InverseMetric::dense(map.covariance);
  }
  return InverseMetric::identity(p);
}

double initial_step_size(const RunConfig& cfg, const MapResult& map, std::size_t p) {
  if (cfg.step_size > 0.0) return cfg.step_size;
  // In the metric's units the posterior has sd ≈ 1 (Laplace); with the identity metric the
  // smallest Laplace sd sets the scale. Then the textbook optimal scalings in dimension P:
  // RW 2.38/√P (Roberts, Gelman & Gilks 1997), MALA 1.65·P^(−1/6) (Roberts & Rosenthal 1998),
  // HMC P^(−1/4) (Beskos et al. 2013), slice width 2 sd (Neal 2003: about the slice's size).
  double scale = 1.0;
  if (cfg.resolved_metric() == Metric::identity)
    scale = std::sqrt(std::max(map.covariance.diagonal().minCoeff(), 1e-300));
  const double dp = static_cast<double>(std::max<std::size_t>(p, 1));
  switch (cfg.kernel) {
    case KernelKind::rwmh:
      return scale * 2.38 / std::sqrt(dp);
    case KernelKind::mala:
      return scale * 1.65 * std::pow(dp, -1.0 / 6.0);
    case KernelKind::hmc:
      return scale * std::pow(dp, -0.25);
    case KernelKind::slice:
      return scale * 2.0;
  }
  return scale;
}

}  // namespace detail

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
std::uint64_t RunResult::bound_clamps() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.bound_clamps;
  return s;
}
std::uint64_t RunResult::nonfinite() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.nonfinite;
  return s;
}
std::uint64_t RunResult::divergences() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.sampling_divergences;
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

std::vector<std::vector<double>> DrawSink::resume(const std::vector<std::string>&, std::uint64_t) {
  throw ConfigError("this draw sink cannot resume a checkpointed chain");
}

LabelDomain label_domain(ModelKind model) noexcept {
  switch (model) {
    case ModelKind::logistic:
      return LabelDomain::binary;
    case ModelKind::softmax:
      return LabelDomain::categorical;
    case ModelKind::robust:
      return LabelDomain::any;
  }
  return LabelDomain::any;
}

RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data, const SinkFactory& sinks,
              Progress* progress, const CheckpointOptions* checkpoint) {
  cfg.validate();
  if (!data) throw DataError("no data");
  switch (cfg.model) {
    case ModelKind::logistic:
      return run_logistic_model(cfg, std::move(data), sinks, progress, checkpoint);
    case ModelKind::softmax:
      return run_softmax_model(cfg, std::move(data), sinks, progress, checkpoint);
    case ModelKind::robust:
      return run_robust_model(cfg, std::move(data), sinks, progress, checkpoint);
  }
  throw ConfigError(std::string("model ") + to_string(cfg.model) + " is not available yet");
}

}  // namespace flymc
