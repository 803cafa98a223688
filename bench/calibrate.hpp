#pragma once
// flymc-bench cost-model: auto's candidates run for fixed lengths on each data set, their counted
// work beside their measured core-seconds and the cost model's price of that work
// (flymc/mcmc/auto/cost_model.hpp). The rows are what the model's constants are fitted to, and
// the check that its ranking still holds on a machine.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace flymc::bench {

struct CostModelOptions {
  std::vector<std::string> data;  ///< data sets (file, or file:model for another model)
  std::string json;
  int chains = 2, threads = 2;
  std::uint64_t seed = 1;
  long iters = 2000;         ///< the subsampling samplers' sampling iterations (warm-up: half)
  long regular_iters = 200;  ///< regular MCMC's, on up to 10^5 rows (scaled down above)
  std::string only;          ///< candidates to run, comma-separated (empty: all)
};

/// Adds the `cost-model` subcommand, which runs with `o` when chosen.
void add_cost_model_command(CLI::App& app, CostModelOptions& o);

}  // namespace flymc::bench
