// The vocabulary every sampler room shares (flymc/mcmc/sampler.hpp): a run's result and what a
// draw sink does by default. The front door, which runs them, is front_door.cpp.
#include "flymc/mcmc/sampler.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/samplers.hpp"

namespace flymc {

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
double RunResult::batch_mean() const {
  if (!uses_batches(config.algo)) return std::numeric_limits<double>::quiet_NaN();
  double s = 0.0;
  for (const auto& c : chains) s += c.batch_mean;
  return s / static_cast<double>(chains.size());
}
bool RunResult::exact() const { return is_exact(config.algo) && bound_violations() == 0; }

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
std::uint64_t RunResult::slice_failures() const {
  std::uint64_t s = 0;
  for (const auto& c : chains) s += c.counters.slice_failures;
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
std::vector<double> RunResult::path_mean() const {
  std::vector<double> m;
  if (chains.empty() || chains.front().path_mean.empty()) return m;
  m.assign(dim, 0.0);
  for (const auto& c : chains)
    for (std::size_t j = 0; j < dim; ++j) m[j] += c.path_mean[j];
  for (double& v : m) v /= static_cast<double>(chains.size());
  return m;
}
std::vector<std::vector<double>> RunResult::lp() const {
  std::vector<std::vector<double>> out;
  for (const auto& c : chains) out.push_back(c.lp);
  return out;
}

std::vector<std::vector<double>> DrawSink::resume(const std::vector<std::string>&, std::uint64_t) {
  throw ConfigError("this draw sink cannot resume a checkpointed chain");
}

}  // namespace flymc
