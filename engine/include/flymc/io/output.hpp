#pragma once
/// @file output.hpp
/// Draw files (one Stan CSV per chain) and the run summary computed from the kept draws.
#include <string>
#include <utility>
#include <vector>

#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc {

/// Sinks writing `dir/chain-<k>.csv` in CmdStan's layout. `dir` is created if missing.
/// `extra_config` is appended to the config comments (e.g. the data file).
/// @throw Error (73) if the directory cannot be created.
SinkFactory stan_csv_sinks(const std::string& dir, const RunConfig& cfg,
                           std::vector<std::pair<std::string, std::string>> extra_config = {});

/// Posterior summary of one scalar quantity.
struct NamedSummary {
  std::string name;
  ParamSummary s;
};

/// Diagnostics per parameter (theta.1 … theta.D) from the kept draws of all chains.
std::vector<NamedSummary> summarize_params(const RunResult& r);
/// Same, from draw files (columns not ending in "__"), e.g. for `flymc summary DIR`.
std::vector<NamedSummary> summarize_columns(const std::vector<std::string>& columns,
                                            const std::vector<ChainDraws>& per_column);

}  // namespace flymc
