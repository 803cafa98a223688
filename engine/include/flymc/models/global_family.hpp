#pragma once
/// @file global_family.hpp
/// A datum's log-likelihood through its linear predictor and one global parameter shared by every
/// datum (docs/math.md §8, "A global parameter beside the coefficients"): f(y, u, s), with u = x·β
/// + o the predictor (its offset included) and s an unconstrained global (s = log σ for a scale).
/// Scalable MH samples z = (β, s): it expands each datum to second order in (u, s) around (û_n, ŝ),
/// collapses the Taylor parts into (D + 1)-dimensional sums, and bounds each remainder by an
/// envelope of f's third derivatives over the box a proposal spans. The models with a global
/// parameter give one (StudentTSigmaModel::global_family_ptr,
/// NegBinomialPhiModel::global_family_ptr); a library user gives a PositiveGlobalFamily of their
/// own to flymc::run, whose model is then GlobalFamilyModel (models/global_model.hpp).
#include <cmath>
#include <memory>
#include <string>

#include "flymc/core/prior_spec.hpp"

namespace flymc {

/// The second-order expansion of f at (û, ŝ): its partial derivatives there (f itself is not
/// kept: it cancels from every difference of remainders).
struct GlobalExpansion {
  double fu = 0.0, fs = 0.0, fuu = 0.0, fus = 0.0, fss = 0.0;
};

/// f's third partial derivatives at a point (scalable MH of the third order).
struct GlobalThird {
  double fuuu = 0.0, fuus = 0.0, fuss = 0.0, fsss = 0.0;
};

/// f(y, u, s) and what scalable MH needs of it. Implementations are immutable and thread-safe.
class GlobalFamily {
 public:
  virtual ~GlobalFamily() = default;
  /// A short name for messages ("student_t").
  virtual std::string name() const = 0;
  /// The global's name as a parameter of the draws ("sigma"), its reported value from s and s
  /// from a reported value (σ = e^s).
  virtual std::string param_name() const = 0;
  virtual double reported(double s) const = 0;
  virtual double unconstrained(double value) const = 0;
  /// d reported / ds at s (the Jacobian that carries a covariance between the two).
  virtual double reported_slope(double s) const = 0;

  /// f(y, u, s) itself, where the constants free of u and s may be left out (regular MCMC and
  /// the MAP search of a family given in code evaluate it; −∞ where the datum is impossible).
  virtual double value(double y, double u, double s) const = 0;
  /// Why the family refuses response y ("" if it takes it; a model of a family given in code
  /// checks every response through it, after checking that it is finite).
  virtual std::string check_response(double /*y*/) const { return {}; }
  /// The expansion at (y, û, ŝ).
  virtual GlobalExpansion expand(double y, double u_hat, double s_hat) const = 0;
  /// f(y, û + h, ŝ + k) − f(y, û, ŝ), computed without the cancellation of two values of f.
  virtual double change(double y, double u_hat, double s_hat, double h, double k) const = 0;

  /// The envelope of the third derivatives (docs/math.md §8): with λ = eta_scale(ŝ), for every
  /// y, û and (u, s) with |u − û| ≤ t_u and |s − ŝ| ≤ t_s,
  ///   max over a + b = 3 of λ^−a·|∂^a_u ∂^b_s f(y, u, s)| ≤ envelope_scale(y, û, ŝ)·growth(t_u,
  ///   t_s),
  /// growth non-decreasing in both. Then a datum's remainder along a direction (h, k) is bounded
  /// by (scale·growth/6)·(λ|h| + |k|)³.
  virtual double eta_scale(double s_hat) const = 0;
  virtual double envelope_scale(double y, double u_hat, double s_hat) const = 0;
  virtual double envelope_growth(double t_u, double t_s) const = 0;

  /// Scalable MH of the third order (optional; `--smh-order 3`): f's third derivatives, and an
  /// envelope of its fourth with the same λ, for every y, û and (u, s) in the box,
  ///   max over a + b = 4 of λ^−a·|∂^a_u ∂^b_s f(y, u, s)| ≤ fourth_scale(y, û, ŝ)·
  ///   fourth_growth(t_u, t_s),
  /// growth non-decreasing in both. A family that gives them says so (has_fourth_envelope); the
  /// defaults throw std::logic_error.
  virtual bool has_fourth_envelope() const { return false; }
  virtual GlobalThird third(double y, double u, double s) const;
  virtual double fourth_scale(double y, double u_hat, double s_hat) const;
  virtual double fourth_growth(double t_u, double t_s) const;

  /// The global's prior as a density of s (its transform's Jacobian included), and a curvature
  /// c ≥ 0 for the quadratic stand-in that whitens the proposals (any c ≥ 0 keeps them exact).
  virtual double log_prior(double s) const = 0;
  virtual double prior_curvature(double s) const = 0;

  /// The same likelihood and prior (auto's pilot hands its set-up over only then).
  virtual bool same_as(const GlobalFamily& other) const = 0;
};

/// A global that is positive, v = e^s (a scale or a dispersion), with its prior on v
/// (`--prior-sigma`, `--prior-phi`; for a family given in code, parse_scale_prior of the same
/// syntax): the transform, and the prior as a density of s. The draws show v.
class PositiveGlobalFamily : public GlobalFamily {
 public:
  double reported(double s) const final { return std::exp(s); }
  double unconstrained(double value) const final { return std::log(value); }
  double reported_slope(double s) const final { return std::exp(s); }
  /// log p(e^s) + s (the Jacobian dv/ds = v).
  double log_prior(double s) const final;
  /// −d²/ds² of log_prior, with the prior's MAP curvature for −(log p)'' (ScalePrior), at least 0.
  double prior_curvature(double s) const final;
  const ScalePrior& prior() const noexcept { return prior_; }

 protected:
  explicit PositiveGlobalFamily(const ScalePrior& p) : prior_(p) {}

 private:
  ScalePrior prior_;
};

/// Student-t regression with its scale σ = e^s inferred (StudentTSigmaModel): with
/// α = (ν + 1)/2, ρ = (y − u)·e^{−s}/√ν and the constants dropped,
///   f(y, u, s) = −s − α·log(1 + ρ²).
/// Its derivatives of order a + b are α·κ^a·P_ab(ρ) (a of them in u, κ = e^{−s}/√ν), P_ab bounded:
/// with λ = κ̂ the envelope of the third is 4α·e^{3·t_s} (the largest, |P_21(0)| = 4), of the
/// fourth 12α·e^{4·t_s} (|P_40(0)| = 12), the same for every datum.
class StudentTScaleFamily final : public PositiveGlobalFamily {
 public:
  /// @throw ConfigError unless ν is finite and > 0.
  StudentTScaleFamily(double nu, const ScalePrior& sigma_prior);
  std::string name() const override { return "student_t"; }
  std::string param_name() const override { return "sigma"; }
  GlobalExpansion expand(double y, double u_hat, double s_hat) const override;
  double change(double y, double u_hat, double s_hat, double h, double k) const override;
  double eta_scale(double s_hat) const override;
  double envelope_scale(double, double, double) const override { return 4.0 * alpha_; }
  double envelope_growth(double t_u, double t_s) const override;
  bool has_fourth_envelope() const override { return true; }
  GlobalThird third(double y, double u, double s) const override;
  double fourth_scale(double, double, double) const override { return 12.0 * alpha_; }
  double fourth_growth(double t_u, double t_s) const override;
  bool same_as(const GlobalFamily& other) const override;

  double value(double y, double u, double s) const noexcept override;

 private:
  double nu_, alpha_, inv_sqrt_nu_;
};

/// Negative binomial regression with its dispersion φ = e^s inferred (NegBinomialPhiModel): with
/// w = u − s, S the softplus and G(φ) = log Γ(y + φ) − log Γ(φ), the constants dropped,
///   f(y, u, s) = y·w − (y + φ)·S(w) + G(φ).
/// Its third derivatives are y·(log σ)‴(w) (at most y/(6√3) in every direction), G's (at most
/// y/(6√3)), and −φ·H(w) with |H| ≤ E(w) = σ(w)·(1 + S(w)), where E(w + t) ≤ E(w)·e^t·(1 + t):
/// with λ = 1 the envelope is (y/(3√3) + φ̂·E(ŵ))·e^{t_u + 2t_s}·(1 + t_u + t_s). Its fourth
/// derivatives: y·(log σ)⁗ and G's at most y/8 each, the φ-terms again at most φ·E(w): the
/// fourth's envelope is (y/4 + φ̂·E(ŵ)) times the same growth.
class NegBinomialDispersionFamily final : public PositiveGlobalFamily {
 public:
  explicit NegBinomialDispersionFamily(const ScalePrior& phi_prior)
      : PositiveGlobalFamily(phi_prior) {}
  std::string name() const override { return "negbin"; }
  std::string param_name() const override { return "phi"; }
  GlobalExpansion expand(double y, double u_hat, double s_hat) const override;
  double change(double y, double u_hat, double s_hat, double h, double k) const override;
  double eta_scale(double) const override { return 1.0; }
  double envelope_scale(double y, double u_hat, double s_hat) const override;
  double envelope_growth(double t_u, double t_s) const override;
  bool has_fourth_envelope() const override { return true; }
  GlobalThird third(double y, double u, double s) const override;
  double fourth_scale(double y, double u_hat, double s_hat) const override;
  double fourth_growth(double t_u, double t_s) const override { return envelope_growth(t_u, t_s); }
  bool same_as(const GlobalFamily& other) const override;

  double value(double y, double u, double s) const noexcept override;
};

}  // namespace flymc
