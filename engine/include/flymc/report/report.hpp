#pragma once
/// @file report.hpp
/// `flymc report`: one self-contained HTML page (inline SVG and an inline style sheet; no
/// scripts, fonts or images) from run directories and flymc-bench JSON files.
///
/// From a run directory (the chain-<k>.csv draw files and summary.json of `flymc sample`,
/// docs/output.md): the run's configuration and figures, the posterior summary table with the
/// doubtful rows highlighted (R̂ > 1.01, or bulk or tail ESS below 100 per chain: the thresholds
/// Vehtari et al. 2021 recommend), the sampler columns over the run (bright data and likelihood
/// queries per iteration for FlyMC, acceptance, step size, ...), and per parameter (at most
/// ReportOptions::max_params, those with the lowest bulk ESS) trace plots, rank histograms and
/// autocorrelations of every chain. From bench JSON: bar charts of min ESS/s and speedups, and
/// `flymc-bench scaling`'s time per iteration against N on log axes.
///
/// Errors, as `flymc summary` reports them: a missing directory throws flymc::UsageError (exit
/// 64); a directory without draw files or a corrupt draw file throws flymc::DataError (exit 65)
/// naming the file (and for draw files the line and field); so does a bench file of a shape this
/// reader does not know, naming the file and what is missing. An output that cannot be written
/// throws flymc::Error (73 or 74).
///
/// Thread safety: the functions share no state; call them from any thread.
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/io/stan_csv.hpp"

namespace flymc::report {

/// What the page shows and how much of it.
struct ReportOptions {
  /// Parameters plotted per run: all up to this many, else this many with the lowest bulk ESS.
  std::size_t max_params = 12;
  /// Autocorrelation lags plotted (fewer for short chains: at most half a chain).
  std::size_t max_lag = 40;
  /// Bins of the rank histograms (fewer when a chain has fewer draws than 5 per bin).
  std::size_t rank_bins = 20;
  /// Points per chain in a trace; longer chains are reduced to the minimum and maximum of equal
  /// buckets of draws, which keeps spikes and stuck stretches visible.
  std::size_t max_trace_points = 1000;
  /// Rows with R̂ above this are highlighted.
  double rhat_max = 1.01;
  /// Rows with bulk or tail ESS below this times the number of chains are highlighted.
  double ess_per_chain_min = 100;
};

/// One run directory as read for the report.
struct RunData {
  std::string dir;
  /// The draw files chain-<k>.csv in order of k.
  std::vector<StanCsv> chains;
  /// Kept draws per chain used (the shortest chain's count: an interrupted run's chains differ).
  std::size_t draws = 0;
  /// summary.json's "run" object, each value formatted; empty without summary.json.
  std::vector<std::pair<std::string, std::string>> run_figures;
  bool has_summary = false;
};

/// Reads `dir`'s draw files and summary.json (optional).
/// @throw UsageError when `dir` is not a directory; DataError naming the directory or file (and
/// line and field) when it holds no chain-<k>.csv, a file is corrupt, the files' columns differ,
/// no chain holds a kept draw, or summary.json is not JSON.
RunData load_run(const std::string& dir);

/// A bar chart of a bench file: one bar per row.
struct BarChartData {
  std::string title, y_label;
  std::vector<std::string> names;
  std::vector<double> values;  ///< NaN where the file has none (drawn as "n/a")
  /// Colour family per bar: 0 regular MCMC, 1 FlyMC, 2 the other samplers.
  std::vector<int> family;
  /// A dashed reference line (e.g. speedup 1), NaN for none.
  double reference = std::numeric_limits<double>::quiet_NaN();
};

/// A line chart of a bench file on log-log axes: one series per algorithm.
struct LineChartData {
  std::string title, x_label, y_label;
  std::vector<std::string> names;
  std::vector<std::vector<double>> x, y;
  double reference = std::numeric_limits<double>::quiet_NaN();
};

/// A flymc-bench JSON file reduced to what the page draws.
struct BenchData {
  std::string path;
  std::string kind;     ///< its "benchmark": table1, tall, compare, scaling or chains
  std::string heading;  ///< e.g. the data set
  std::string machine;  ///< one line from its "machine" object, "" if absent
  std::vector<BarChartData> bars;
  std::vector<LineChartData> lines;
};

/// Reads a flymc-bench JSON file (table1, tall, compare, scaling, chains).
/// @throw DataError naming the file and what is missing or of the wrong type (e.g.
/// `t.json: rows[2]: "ess_per_second_min" missing (a number)`), for a file that is not JSON, and
/// for Google Benchmark output and unknown "benchmark" names.
BenchData load_bench(const std::string& path);

/// Ranks of the pooled draws of all chains (1..S, ties get their average rank), counted per
/// chain in `bins` equal intervals of rank: result[c][b]. Under convergence each chain's counts
/// are uniform, about draws-per-chain / bins each (Vehtari et al. 2021, section 4.1). NaN draws
/// are not counted.
std::vector<std::vector<std::size_t>> rank_histogram(const ChainDraws& x, std::size_t bins);

/// Autocorrelation of one chain at lags 0..max_lag (max_lag clamped to size − 1): the
/// autocovariance with divisor n over the variance. All NaN for a constant or non-finite chain.
std::vector<double> autocorrelation(std::span<const double> x, std::size_t max_lag);

/// The page for `runs` and `benches`.
std::string compose_page(std::span<const RunData> runs, std::span<const BenchData> benches,
                         const ReportOptions& options = {});

/// Loads every run directory and bench file and writes the page to `out` (atomically: a reader
/// never sees half a page). @throw DataError for bad input (before anything is written), Error 73
/// or 74 when `out` cannot be written.
void write_report(const std::vector<std::string>& dirs, const std::vector<std::string>& benches,
                  const std::string& out, const ReportOptions& options = {});

}  // namespace flymc::report
