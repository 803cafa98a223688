#pragma once
// Sub-command registration for the flymc command line. Each sub-command lives in its own file.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "auto_option.hpp"
#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"

namespace flymc::cli {
/// Thrown by a sub-command to end the program with `code` after printing its own message.
struct ExitStatus {
  int code;
};
/// The model and FlyMC options shared by `flymc sample` and `flymc validate` (any options struct
/// with these fields: RunConfig, GewekeOptions): prior, z-update rates, untuned ξ, bound slack.
template <class Options>
void add_model_z_options(CLI::App* s, Options& o) {
  s->add_option("--prior-sd", o.prior_sd,
                "Prior standard deviation of every coefficient (Gaussian or Laplace)")
      ->capture_default_str();
  s->add_option("--resample-fraction", o.resample_fraction, "Explicit z-update fraction")
      ->capture_default_str();
  s->add_option("--untuned-xi", o.untuned_xi, "xi of the untuned bound")->capture_default_str();
  if constexpr (std::is_same_v<Options, RunConfig>) {
    // RunConfig's defaults are automatic, chosen at set-up from 8 Laplace draws.
    add_auto_option(
        s, "--q-dark-to-bright", o.q_dark_to_bright, [](double x) { return x > 0.0 && x <= 1.0; },
        "in (0, 1]",
        "Implicit z-update proposal rate q (with --q-per-datum: the mean rate); auto: "
        "min(cap, max(32, 4 x expected bright count)/N), cap 0.1 for hmc and nuts, 0.01 otherwise");
    add_auto_option(
        s, "--bound-slack", o.bound_slack, [](double x) { return x >= 0.0; }, ">= 0",
        "Slack subtracted from every log B_n; auto: a quarter of the expected bright "
        "fraction (Laplace draws at set-up)");
    s->add_option("--slack-scale", o.slack_scale,
                  "Logistic FlyMC: also subtract alpha x the datum's expected bright probability "
                  "(Laplace draws) from each log B_n; helps HMC and NUTS on tall data")
        ->capture_default_str();
  } else {
    s->add_option("--q-dark-to-bright", o.q_dark_to_bright, "Implicit z-update proposal rate q")
        ->capture_default_str();
    s->add_option("--bound-slack", o.bound_slack, "Slack subtracted from every log B_n")
        ->capture_default_str();
  }
}
/// An option taking one of the names in `values`, stored as the mapped enum. An unknown name is a
/// usage error naming the option and the choices, e.g. "--kernel: gibbs not in {hmc,...}".
template <class E>
void add_enum_option(CLI::App* s, const std::string& name, E& target,
                     const std::map<std::string, E>& values, const std::string& help,
                     const std::string& default_name) {
  std::vector<std::string> names;
  for (const auto& kv : values) names.push_back(kv.first);
  s->add_option_function<std::string>(
       name, [&target, values](const std::string& v) { target = values.at(v); }, help)
      ->check(CLI::IsMember(names))
      ->default_str(default_name);
}
/// The θ-kernel options shared by `flymc sample` and `flymc validate sbc` (RunConfig fields).
void add_kernel_options(CLI::App* s, RunConfig& c);
/// The options of the samplers beside FlyMC (minibatch MH, SGLD, the piecewise-deterministic
/// ones), shared by `flymc sample` and `flymc validate sbc`.
void add_subsampler_options(CLI::App* s, RunConfig& c);
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
