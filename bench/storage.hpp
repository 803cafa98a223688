#pragma once
// flymc-bench storage: the same runs on the data held as float64 and as float32 (--storage f32),
// in one process: their time (reading, set-up, sampling), the data's bytes, and the posterior
// shift of float storage in Monte Carlo standard errors.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace flymc::bench {

struct StorageOptions {
  std::string data, json;
  /// Samplers, comma-separated: smh (pCN), flymc (NUTS, the fly metric), full (NUTS, the dense
  /// Laplace metric fixed), as flymc-bench tall configures them.
  std::string algos = "smh,flymc";
  int chains = 2, threads = 0, rounds = 2;
  std::uint64_t seed = 1;
  long warmup = 1000, iters = 4000;
};

/// Adds the `storage` subcommand, which runs with `o` when chosen.
void add_storage_command(CLI::App& app, StorageOptions& o);

}  // namespace flymc::bench
