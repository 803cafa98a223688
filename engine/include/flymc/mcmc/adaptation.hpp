#pragma once
/// @file adaptation.hpp
/// Step-size adaptation by dual averaging (Nesterov 2009; Hoffman & Gelman 2014, section 3.2.1,
/// with Stan's defaults γ = 0.05, t0 = 10, κ = 0.75, μ = log(10 ε0)). Separate from the kernels,
/// as Stan's adapters are.
#include <cmath>

namespace flymc {

class DualAveraging {
 public:
  DualAveraging() = default;
  DualAveraging(double eps0, double target, double gamma = 0.05, double t0 = 10.0,
                double kappa = 0.75) noexcept
      : mu_(std::log(10.0 * eps0)),
        target_(target),
        gamma_(gamma),
        t0_(t0),
        kappa_(kappa),
        log_eps_(std::log(eps0)) {}

  /// Feeds one acceptance statistic; returns the step size for the next iteration.
  double update(double accept_stat) noexcept {
    if (!std::isfinite(accept_stat)) accept_stat = 0.0;
    ++t_;
    const double eta = 1.0 / (t_ + t0_);
    h_bar_ = (1.0 - eta) * h_bar_ + eta * (target_ - accept_stat);
    log_eps_ = mu_ - std::sqrt(t_) / gamma_ * h_bar_;
    const double w = std::pow(t_, -kappa_);
    log_eps_bar_ = w * log_eps_ + (1.0 - w) * log_eps_bar_;
    return std::exp(log_eps_);
  }
  /// The averaged step size to freeze after warm-up.
  double final_step_size() const noexcept {
    return t_ > 0 ? std::exp(log_eps_bar_) : std::exp(log_eps_);
  }

  struct State {
    double mu, target, gamma, t0, kappa, t, h_bar, log_eps, log_eps_bar;
  };
  State state() const noexcept {
    return {mu_, target_, gamma_, t0_, kappa_, t_, h_bar_, log_eps_, log_eps_bar_};
  }
  void set_state(const State& s) noexcept {
    mu_ = s.mu, target_ = s.target, gamma_ = s.gamma, t0_ = s.t0, kappa_ = s.kappa, t_ = s.t;
    h_bar_ = s.h_bar, log_eps_ = s.log_eps, log_eps_bar_ = s.log_eps_bar;
  }

 private:
  double mu_ = 0.0, target_ = 0.8, gamma_ = 0.05, t0_ = 10.0, kappa_ = 0.75;
  double t_ = 0.0, h_bar_ = 0.0, log_eps_ = 0.0, log_eps_bar_ = 0.0;
};

}  // namespace flymc
