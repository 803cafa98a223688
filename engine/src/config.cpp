#include "flymc/config.hpp"

#include <cmath>
#include <string>

#include "flymc/errors.hpp"

namespace flymc {
namespace {
std::string num(double v) {
  std::string s = std::to_string(v);
  return s;
}
}  // namespace

void RunConfig::validate() const {
  if (chains < 1) throw ConfigError("--chains must be >= 1, got " + std::to_string(chains));
  if (warmup < 0) throw ConfigError("--warmup must be >= 0, got " + std::to_string(warmup));
  if (iters < 1) throw ConfigError("--iters must be >= 1, got " + std::to_string(iters));
  if (thin < 1) throw ConfigError("--thin must be >= 1, got " + std::to_string(thin));
  if (threads < 0) throw ConfigError("--threads must be >= 0, got " + std::to_string(threads));
  if (!(prior_sd > 0.0) || !std::isfinite(prior_sd))
    throw ConfigError("--prior-sd must be positive and finite, got " + num(prior_sd));
  if (!(q_dark_to_bright > 0.0 && q_dark_to_bright <= 1.0))
    throw ConfigError("--q-dark-to-bright must be in (0, 1], got " + num(q_dark_to_bright));
  if (!(resample_fraction > 0.0 && resample_fraction <= 1.0))
    throw ConfigError("--resample-fraction must be in (0, 1], got " + num(resample_fraction));
  if (!(untuned_xi >= 0.0) || !std::isfinite(untuned_xi))
    throw ConfigError("--untuned-xi must be finite and >= 0, got " + num(untuned_xi));
  if (!(bound_slack >= 0.0) || !std::isfinite(bound_slack))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + num(bound_slack));
  if (theta_steps < 1)
    throw ConfigError("--theta-steps must be >= 1, got " + std::to_string(theta_steps));
  if (!(target_accept > 0.0 && target_accept < 1.0))
    throw ConfigError("target acceptance must be in (0, 1), got " + num(target_accept));
  if (!(step_size >= 0.0) || !std::isfinite(step_size))
    throw ConfigError("--step-size must be finite and >= 0, got " + num(step_size));
  if (!(init_jitter >= 0.0) || !std::isfinite(init_jitter))
    throw ConfigError("--init-jitter must be finite and >= 0, got " + num(init_jitter));
}

const char* to_string(Algo a) noexcept { return a == Algo::flymc ? "flymc" : "full"; }
const char* to_string(BoundTuning b) noexcept { return b == BoundTuning::map ? "map" : "untuned"; }
const char* to_string(ZUpdate z) noexcept {
  return z == ZUpdate::implicit ? "implicit" : "explicit";
}
const char* to_string(KernelKind) noexcept { return "rwmh"; }
const char* to_string(Init i) noexcept { return i == Init::map ? "map" : "prior"; }

}  // namespace flymc
