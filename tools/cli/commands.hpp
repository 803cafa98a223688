#pragma once
// Sub-command registration for the flymc command line. Each sub-command lives in its own file.
#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"
#include "run_options.hpp"

namespace flymc::cli {
/// Thrown by a sub-command to end the program with `code` after printing its own message.
struct ExitStatus {
  int code;
};
/// Geweke's model and FlyMC options (GewekeOptions has fields of RunConfig's names, not a
/// RunConfig), spelled and explained as the run options' table has them.
template <class Options>
void add_model_z_options(CLI::App* s, Options& o) {
  add_run_named(s, "prior-sd", o.prior_sd)->capture_default_str();
  add_run_named(s, "resample-fraction", o.resample_fraction)->capture_default_str();
  add_run_named(s, "untuned-xi", o.untuned_xi)->capture_default_str();
  add_run_named(s, "q-dark-to-bright", o.q_dark_to_bright, "Implicit z-update proposal rate q")
      ->capture_default_str();
  add_run_named(s, "bound-slack", o.bound_slack, "Slack subtracted from every log B_n")
      ->capture_default_str();
}
/// Every --algo name but auto, as `flymc sample` takes them.
const std::map<std::string, Algo>& algo_names();
/// `flymc data fmnist|synth-logistic ...`
void add_data_command(CLI::App& app);
/// `flymc sample ...`
void add_sample_command(CLI::App& app);
/// `flymc summary DIR`
void add_summary_command(CLI::App& app);
/// `flymc report DIR... [--bench J.json...] --out report.html`
void add_report_command(CLI::App& app);
/// `flymc validate sbc|geweke ...`
void add_validate_command(CLI::App& app);
}  // namespace flymc::cli
