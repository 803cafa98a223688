// `flymc report DIR... [--bench J.json...] --out report.html`: one self-contained HTML page of
// plots and tables from run directories and flymc-bench JSON files (flymc/report/report.hpp).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "flymc/report/report.hpp"

namespace flymc::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> dirs, benches;
  std::string out;
  report::ReportOptions options;
};

}  // namespace

void add_report_command(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* r = app.add_subcommand(
      "report",
      "Write one self-contained HTML page (inline SVG) of run directories and bench JSON files: "
      "summary table, traces, rank histograms, autocorrelation, FlyMC's bright data and queries, "
      "bench bar charts and scaling plots");
  r->add_option("DIR", a->dirs, "Run directories (chain-<k>.csv, summary.json of flymc sample)");
  r->add_option("--bench", a->benches,
                "flymc-bench JSON files (table1, tall, compare, scaling, chains); repeatable")
      ->take_all();
  r->add_option("--out", a->out, "The HTML file to write")->required();
  r->add_option("--max-params", a->options.max_params,
                "Parameters plotted per run: all up to this many, else those with the lowest "
                "bulk ESS")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  r->add_option("--max-lag", a->options.max_lag, "Autocorrelation lags plotted")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  r->callback([a] {
    if (a->dirs.empty() && a->benches.empty())
      throw UsageError("report: give at least one run directory or --bench file");
    report::write_report(a->dirs, a->benches, a->out, a->options);
    std::printf("report: %s\n", a->out.c_str());
  });
}

}  // namespace flymc::cli
