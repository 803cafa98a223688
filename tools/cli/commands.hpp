#pragma once
// Sub-command registration for the flymc command line. Each sub-command lives in its own file.
#include <CLI/CLI.hpp>

namespace flymc::cli {
/// Thrown by a sub-command to end the program with `code` after printing its own message.
struct ExitStatus {
  int code;
};
/// `flymc data fmnist|synth-logistic ...`
void add_data_command(CLI::App& app);
/// `flymc sample ...`
void add_sample_command(CLI::App& app);
/// `flymc summary DIR`
void add_summary_command(CLI::App& app);
/// `flymc validate sbc|geweke ...`
void add_validate_command(CLI::App& app);
}  // namespace flymc::cli
