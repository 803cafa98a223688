#pragma once
// What the flymc-bench subcommands share: the machine block of every JSON file, the run
// statistics they all read off a RunResult, and writing the JSON.
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "progress_line.hpp"
#include "run_options.hpp"

extern const char* const flymc_bench_git_sha;  // git_sha.cpp, written at build time
#ifndef FLYMC_BUILD_TYPE
#define FLYMC_BUILD_TYPE "unknown"
#endif

namespace flymc::bench {

/// run(), with flymc sample's live progress line while it runs when stderr is a terminal (in a
/// log the benchmark's own line per run is progress enough).
inline RunResult run_shown(const RunConfig& cfg, const std::shared_ptr<const Dataset>& data) {
  if (!isatty(STDERR_FILENO)) return run(cfg, data);
  Progress progress(cfg.chains);
  const cli::ProgressPlan plan{cfg.warmup * cfg.chains, (cfg.warmup + cfg.iters) * cfg.chains};
  cli::ProgressDisplay display(progress, std::size_t(cfg.chains), plan,
                               cli::ProgressDisplay::Mode::live, stderr);
  return run(cfg, data, {}, &progress);
}

inline nlohmann::json machine_info() {
  std::string cpu = "unknown";
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  return {{"cpu", cpu},
          {"cores", std::thread::hardware_concurrency()},
          {"build_type", FLYMC_BUILD_TYPE},
          {"simd", kernels::simd_name()},
          {"blas", std::string(openblas_get_config())},
          {"git_sha", flymc_bench_git_sha}};
}

/// The items of a comma-separated list, empty ones dropped.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = s.find(',', pos);
    const std::string item =
        s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

/// The θ-kernels by their command-line names (the run options' table's).
inline const std::map<std::string, KernelKind>& kernel_names() {
  static const std::map<std::string, KernelKind> names = cli::enum_map<KernelKind>();
  return names;
}

/// min bulk ESS over the coordinates of a run (a coordinate whose ESS is not finite counts 0).
inline double min_ess(const RunResult& r) {
  double m = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < r.dim; ++j) {
    const double e = ess_bulk(r.coordinate(j));
    m = std::min(m, std::isfinite(e) ? e : 0.0);
  }
  return m;
}

/// max R̂ over the coordinates of a run (NaN where R̂ is not defined counts as +inf).
inline double max_rhat(const RunResult& r) {
  double m = 0.0;
  for (std::size_t j = 0; j < r.dim; ++j) {
    const double v = rhat(r.coordinate(j));
    m = std::max(m, std::isfinite(v) ? v : std::numeric_limits<double>::infinity());
  }
  return m;
}

/// One chain's sampling seconds per iteration, averaged over the chains (each chain's own timer).
inline double seconds_per_iter(const RunResult& r) {
  double spi = 0.0;
  for (const auto& c : r.chains) spi += c.sampling_seconds / double(r.config.iters);
  return spi / double(std::max<std::size_t>(r.chains.size(), 1));
}

/// A run's wall seconds from its start to its last draw: set-up, warm-up and sampling (the data
/// set's reading or generation not included).
inline double end_to_end_seconds(const RunResult& r) {
  return r.setup_seconds + r.warmup_seconds + r.sampling_seconds;
}

/// End-to-end wall seconds per 1,000 effective draws (min bulk ESS): what a user waits for them.
inline double seconds_per_1000_ess(const RunResult& r, double min_ess_bulk) {
  return min_ess_bulk > 0.0 ? 1000.0 * end_to_end_seconds(r) / min_ess_bulk
                            : std::numeric_limits<double>::infinity();
}

/// The seconds a user waits for a run to an ESS target: measured, or, for a run its cap cut
/// short, projected (marked so).
struct TargetTime {
  double seconds = std::numeric_limits<double>::quiet_NaN();  ///< NaN: off, or no projection
  bool projected = false;

  /// The table's cell: "12.34", "~567.8" for a projection, "-" when off.
  std::string text() const {
    if (!std::isfinite(seconds)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.2f", projected ? "~" : "", seconds);
    return buf;
  }
  /// Into a row's JSON: time_to_target_seconds (null when none) and time_to_target_projected.
  void write(nlohmann::json& j) const {
    j["time_to_target_seconds"] = std::isfinite(seconds) ? nlohmann::json(seconds) : nullptr;
    j["time_to_target_projected"] = projected;
  }
};

/// A run to an ESS target that its cap ended first: its set-up and warm-up as run, and its
/// sampling extrapolated to `ess` at its rate so far (ESS grows about in proportion to the
/// iterations, the rule the run's own blocks use). NaN when it made no effective draw.
inline double projected_seconds(const RunResult& r, double ess) {
  const double so_far = std::min(r.target.min_ess_bulk, r.target.min_ess_tail);
  if (!(so_far > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  return r.setup_seconds + r.warmup_seconds + r.sampling_seconds * std::max(1.0, ess / so_far);
}

/// What a user waits for with `flymc sample --ess N --max-seconds S`: `cfg` run to N effective
/// draws (bulk and tail, R-hat <= 1.01), its set-up included, plus `before` (reading the data,
/// auto's pilots); past S seconds (0: no cap) the run stops at a block's end and the time is
/// projected (projected_seconds()).
inline TargetTime time_to_target(RunConfig cfg, double ess, double max_seconds,
                                 const std::shared_ptr<const Dataset>& data, double before = 0.0,
                                 const Precomputed& pre = {}) {
  cfg.ess = ess;
  cfg.iters = kEssIterCap;
  cfg.thin = 1;
  cfg.max_seconds = max_seconds;
  const RunResult r = run(cfg, data, {}, nullptr, nullptr, {}, pre);
  if (r.target_reached) return {before + end_to_end_seconds(r), false};
  return {before + projected_seconds(r, ess), true};
}

/// Each parameter's summary (mean, MCSE, ...) of a run.
inline std::vector<ParamSummary> summaries(const RunResult& r) {
  std::vector<ParamSummary> out;
  for (std::size_t j = 0; j < r.dim; ++j) out.push_back(summarize(r.coordinate(j)));
  return out;
}

/// The largest |mean_a − mean_b| / √(mcse_a² + mcse_b²) over the parameters.
inline double max_mean_z(const std::vector<ParamSummary>& a, const std::vector<ParamSummary>& b) {
  double z = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j)
    z = std::max(z, std::fabs(a[j].mean - b[j].mean) / std::hypot(a[j].mcse_mean, b[j].mcse_mean));
  return z;
}

/// Writes {"benchmark": name, "machine": ..., then `body`'s keys} to `path`.
/// @throw Error (exit 73) if the file cannot be created.
inline void write_json(const std::string& path, const std::string& name, nlohmann::json body) {
  if (path.empty()) return;
  body["benchmark"] = name;
  body["machine"] = machine_info();
  std::ofstream f(path);
  if (!f) throw Error(path + ": cannot create", 73);
  f << body.dump(2) << '\n';
  if (!f) throw Error(path + ": write failed", 74);
}

}  // namespace flymc::bench
