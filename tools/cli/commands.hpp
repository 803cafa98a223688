#pragma once
// Sub-command registration for the flymc command line. Each sub-command lives in its own file.
#include <CLI/CLI.hpp>

namespace flymc::cli {
/// Thrown by a sub-command to end the program with `code` after printing its own message.
struct ExitStatus {
  int code;
};
/// The model and FlyMC options shared by `flymc sample` and `flymc validate` (any options struct
/// with these fields: RunConfig, GewekeOptions): prior, z-update rates, untuned ξ, bound slack.
template <class Options>
void add_model_z_options(CLI::App* s, Options& o) {
  s->add_option("--prior-sd", o.prior_sd, "Gaussian prior standard deviation")
      ->capture_default_str();
  s->add_option("--q-dark-to-bright", o.q_dark_to_bright, "Implicit z-update proposal rate q")
      ->capture_default_str();
  s->add_option("--resample-fraction", o.resample_fraction, "Explicit z-update fraction")
      ->capture_default_str();
  s->add_option("--untuned-xi", o.untuned_xi, "xi of the untuned bound")->capture_default_str();
  s->add_option("--bound-slack", o.bound_slack, "Slack subtracted from every log B_n")
      ->capture_default_str();
}
/// `flymc data fmnist|synth-logistic ...`
void add_data_command(CLI::App& app);
/// `flymc sample ...`
void add_sample_command(CLI::App& app);
/// `flymc summary DIR`
void add_summary_command(CLI::App& app);
/// `flymc validate sbc|geweke ...`
void add_validate_command(CLI::App& app);
}  // namespace flymc::cli
