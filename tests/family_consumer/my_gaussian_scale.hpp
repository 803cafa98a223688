#pragma once
// A family with a global parameter as a library user would write it (models/global_family.hpp):
// Gaussian regression with its noise scale σ = e^s inferred, f(y, u, s) = −s − ½(y − u)²e^{−2s}
// (the constant −½·log 2π dropped). Its third derivatives are f_uus = 2q, f_uss = 4rq and
// f_sss = 4r²q with q = e^{−2s}, r = y − u: with λ = 1 every one is at most 4(1 + |r|)²q, and
// over |u − û| ≤ t_u, |s − ŝ| ≤ t_s that is at most 4(1 + |r̂|)²e^{−2ŝ}·(1 + t_u)²e^{2t_s}.
// The engine's own Gaussian regression with σ inferred collapses the sums exactly instead
// (models/gaussian_sigma.hpp); this one is a user's, sampled through the installed package by
// user_model.cpp and by the unit tests (test_global_model.cpp, test_gaussian_sigma.cpp).
#include <cmath>
#include <flymc/models/global_family.hpp>
#include <string>

class MyGaussianScale final : public flymc::PositiveGlobalFamily {
 public:
  explicit MyGaussianScale(const flymc::ScalePrior& sigma_prior, double envelope_factor = 1.0)
      : PositiveGlobalFamily(sigma_prior), factor_(envelope_factor) {}
  std::string name() const override { return "gaussian_scale"; }
  std::string param_name() const override { return "sigma"; }
  double value(double y, double u, double s) const override {
    const double r = y - u;
    return -s - 0.5 * r * r * std::exp(-2.0 * s);
  }
  flymc::GlobalExpansion expand(double y, double u, double s) const override {
    const double r = y - u, q = std::exp(-2.0 * s);
    return {r * q, -1.0 + r * r * q, -q, -2.0 * r * q, -2.0 * r * r * q};
  }
  double change(double y, double u, double s, double h, double k) const override {
    // ½q[(r − h)²e^{−2k} − r²] = ½q[(r − h)²·expm1(−2k) + h² − 2rh]: no two values subtracted.
    const double r = y - u, q = std::exp(-2.0 * s);
    return -k - 0.5 * q * ((r - h) * (r - h) * std::expm1(-2.0 * k) + h * h - 2.0 * r * h);
  }
  double eta_scale(double) const override { return 1.0; }
  double envelope_scale(double y, double u, double s) const override {
    const double a = 1.0 + std::fabs(y - u);
    return factor_ * 4.0 * a * a * std::exp(-2.0 * s);
  }
  double envelope_growth(double t_u, double t_s) const override {
    return (1.0 + t_u) * (1.0 + t_u) * std::exp(2.0 * t_s);
  }
  bool same_as(const flymc::GlobalFamily& other) const override {
    const auto* o = dynamic_cast<const MyGaussianScale*>(&other);
    return o != nullptr && o->prior() == prior() && o->factor_ == factor_;
  }

 private:
  double factor_;  // 1; less in a test that a smaller envelope is caught
};
