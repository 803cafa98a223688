#pragma once
/// @file sampler.hpp
/// Running several independent chains of FlyMC or regular MCMC concurrently (oneTBB, one task per
/// chain). Every chain's random stream is made up front from (seed, chain_id), and within-chain
/// reductions are deterministic, so the same seed gives bit-identical draws at any thread count.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flymc/config.hpp"
#include "flymc/dataset.hpp"
#include "flymc/flymc_state.hpp"
#include "flymc/logistic.hpp"
#include "flymc/profile.hpp"

namespace flymc {

/// Receives one chain's output as it is produced (e.g. a Stan CSV file). Called only from that
/// chain's task; one sink per chain.
class DrawSink {
 public:
  virtual ~DrawSink() = default;
  /// Before the first row: the column names (sampler columns end in "__").
  virtual void begin(const std::vector<std::string>& columns) = 0;
  /// After warm-up: the frozen step size and the (diagonal) inverse metric.
  virtual void adaptation(double step_size, const std::vector<double>& inv_metric) = 0;
  /// One kept draw, values in column order.
  virtual void row(const std::vector<double>& values) = 0;
  /// At the end, the chain's warm-up and sampling wall seconds.
  virtual void end(double warmup_seconds, double sampling_seconds) = 0;
};
/// Makes the sink of chain `chain_id` (1-based), or returns nullptr for none.
using SinkFactory = std::function<std::unique_ptr<DrawSink>(int chain_id)>;

/// One chain's kept draws and statistics.
struct ChainResult {
  int chain_id = 0;
  std::size_t kept = 0;
  std::vector<double> draws;  ///< kept × dim, row-major
  std::vector<double> lp;     ///< log density targeted (log p(θ, z) for FlyMC) per kept draw
  double step_size = 0.0;
  double accept_rate = 0.0;  ///< mean MH acceptance probability over sampling θ-steps
  double bright_mean = 0.0;  ///< mean bright count over sampling iterations
  std::uint64_t sampling_queries = 0;
  Counters counters;  ///< over the whole chain (warm-up and sampling)
  Profile profile;    ///< phase times, when RunConfig::profile is set
  double warmup_seconds = 0.0, sampling_seconds = 0.0;
};

/// Everything a run produced.
struct RunResult {
  RunConfig config;
  std::size_t n = 0, dim = 0;
  std::vector<ChainResult> chains;
  MapResult map;
  double setup_seconds = 0.0;       ///< MAP + bound statistics + initial z (wall)
  double warmup_seconds = 0.0;      ///< wall time of the chains' parallel region spent in warm-up
  double sampling_seconds = 0.0;    ///< ... and in sampling (apportioned by the chains' own timers)
  double queries_per_iter() const;  ///< sampling queries per iteration, mean over chains
  double bright_mean() const;
  double accept_rate() const;
  std::uint64_t bound_violations() const;
  std::uint64_t nonfinite() const;
  /// Kept draws of coordinate j as chains × iterations (for diagnostics).
  std::vector<std::vector<double>> coordinate(std::size_t j) const;
  std::vector<std::vector<double>> lp() const;
};

/// Progress reporting: per-chain iteration counters the caller may poll from another thread.
struct Progress {
  std::vector<std::atomic<long>> done;  ///< iterations finished per chain
  explicit Progress(int chains) : done(static_cast<std::size_t>(chains)) {}
};

/// Runs `cfg` on logistic regression over `data`. Throws ConfigError for an invalid config.
/// @param sinks optional per-chain draw sinks (files); @param progress optional counters.
RunResult run_logistic(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                       const SinkFactory& sinks = {}, Progress* progress = nullptr);

}  // namespace flymc
