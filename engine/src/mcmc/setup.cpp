// The non-template part of a run's set-up (flymc/mcmc/setup.hpp).
#include "flymc/mcmc/setup.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>

#include "flymc/core/rng.hpp"

namespace flymc {

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
    case Metric::fly:  // needs the bound: chain_metric() builds it; the Laplace one stands in
      return InverseMetric::dense(map.covariance);
  }
  return InverseMetric::identity(p);
}

double initial_step_size(const RunConfig& cfg, const MapResult& map, std::size_t p) {
  if (cfg.step_size) return *cfg.step_size;
  // In the metric's units the posterior has sd ≈ 1 (Laplace); with the identity metric the
  // smallest Laplace sd sets the scale. Then the textbook optimal scalings in dimension P:
  // RW 2.38/√P (Roberts, Gelman & Gilks 1997), MALA 1.65·P^(−1/6) (Roberts & Rosenthal 1998),
  // HMC and NUTS P^(−1/4) (Beskos et al. 2013), slice width 2 sd (Neal 2003: about the slice's
  // size).
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
    case KernelKind::nuts:  // the same leapfrog; dual averaging then finds the step size
      return scale * std::pow(dp, -0.25);
    case KernelKind::slice:
      return scale * 2.0;
    case KernelKind::pcn:  // √(1 − ρ²) = min(1, ε): start as the independence sampler
    case KernelKind::imh:
      return 1.0;
  }
  return scale;
}

}  // namespace flymc
