#include "flymc/models/global_family.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "gamma_series.hpp"

namespace flymc {
namespace {

/// |ρ| beyond which ρ² is not formed (it would overflow near 2^512).
constexpr double kBig = 0x1p250;

}  // namespace

double PositiveGlobalFamily::log_prior(double s) const {
  return prior_.log_density(std::exp(s)) + s;  // p(v)·dv/ds
}

double PositiveGlobalFamily::prior_curvature(double s) const {
  // −d²/ds² of log p(e^s) + s is −(p''v² + p'v) with p = log p; map_curvature bounds −p''.
  const double v = std::exp(s);
  const double c = prior_.map_curvature(v) * v * v - prior_.gradient(v) * v;
  return std::isfinite(c) ? std::max(c, 0.0) : 0.0;
}

GlobalThird GlobalFamily::third(double, double, double) const {
  throw std::logic_error(name() + ": no third derivatives (has_fourth_envelope() is false)");
}
double GlobalFamily::fourth_scale(double, double, double) const {
  throw std::logic_error(name() + ": no fourth-derivative envelope");
}
double GlobalFamily::fourth_growth(double, double) const {
  throw std::logic_error(name() + ": no fourth-derivative envelope");
}

StudentTScaleFamily::StudentTScaleFamily(double nu, const ScalePrior& sigma_prior)
    : PositiveGlobalFamily(sigma_prior),
      nu_(nu),
      alpha_(0.5 * (nu + 1.0)),
      inv_sqrt_nu_(1.0 / std::sqrt(nu)) {
  if (!(nu > 0.0) || !std::isfinite(nu))
    throw ConfigError("--nu must be finite and > 0, got " + number_text(nu));
}

double StudentTScaleFamily::value(double y, double u, double s) const noexcept {
  const double r = y - u, rho = r * std::exp(-s) * inv_sqrt_nu_;
  const double l = std::fabs(rho) > kBig
                       ? 2.0 * (std::log(std::fabs(r)) - s + std::log(inv_sqrt_nu_))
                       : std::log1p(rho * rho);
  return -s - alpha_ * l;
}

GlobalExpansion StudentTScaleFamily::expand(double y, double u_hat, double s_hat) const {
  // With x = ρ²/(1 + ρ²) and ρq = ρ/(1 + ρ²), both finite at every ρ (x → 1, ρq → 0), and
  // g(ρ) = −α·log(1 + ρ²): f_u = −κg', f_s = −1 − ρg', f_uu = κ²g'', f_us = κg' + κρg'',
  // f_ss = ρg' + ρ²g''.
  const double kappa = std::exp(-s_hat) * inv_sqrt_nu_, rho = (y - u_hat) * kappa;
  const bool big = std::fabs(rho) > kBig;
  const double x = big ? 1.0 : rho * rho / (1.0 + rho * rho);
  const double rq = big ? 1.0 / rho : rho / (1.0 + rho * rho), q = 1.0 - x, a = alpha_;
  GlobalExpansion e;
  e.fu = 2.0 * a * kappa * rq;
  e.fs = -1.0 + 2.0 * a * x;
  e.fuu = -2.0 * a * kappa * kappa * q * (1.0 - 2.0 * x);
  e.fus = -4.0 * a * kappa * rq * q;
  e.fss = -4.0 * a * x * q;
  return e;
}

GlobalThird StudentTScaleFamily::third(double y, double u, double s) const {
  // With x, ρq and q as in expand and L = log(1 + ρ²): f's derivatives of order 3 are α·κ^a times
  // L‴, 2L″ + ρL‴, L′ + 3ρL″ + ρ²L‴ and ρL′ + 3ρ²L″ + ρ³L‴ (a = 3, 2, 1, 0), here in x, ρq, q.
  const double kappa = std::exp(-s) * inv_sqrt_nu_, rho = (y - u) * kappa;
  const bool big = std::fabs(rho) > kBig;
  const double x = big ? 1.0 : rho * rho / (1.0 + rho * rho);
  const double rq = big ? 1.0 / rho : rho / (1.0 + rho * rho), q = 1.0 - x, a = alpha_;
  GlobalThird t;
  t.fuuu = 4.0 * a * kappa * kappa * kappa * rq * q * (x - 3.0 * q);
  t.fuus = 4.0 * a * kappa * kappa * q * ((q - x) + x * (x - 3.0 * q));
  t.fuss = a * kappa * rq * (2.0 + 6.0 * (q - x) + 4.0 * x * (x - 3.0 * q));
  t.fsss = a * x * (2.0 + 6.0 * (q - x) + 4.0 * x * (x - 3.0 * q));
  return t;
}

double StudentTScaleFamily::fourth_growth(double, double t_s) const {
  return std::exp(4.0 * t_s);  // κ^a ≤ κ̂^a·e^{a·t_s}, a ≤ 4
}

double StudentTScaleFamily::change(double y, double u_hat, double s_hat, double h, double k) const {
  const double c = inv_sqrt_nu_ * std::exp(-s_hat);
  const double r0 = y - u_hat, r1 = r0 - h;
  const double rho0 = r0 * c, rho1 = r1 * c * std::exp(-k);
  if (std::fabs(rho0) > kBig || std::fabs(rho1) > kBig)
    return value(y, u_hat + h, s_hat + k) - value(y, u_hat, s_hat);
  // log(1 + ρ₁²) − log(1 + ρ₀²) = log1p((ρ₁ − ρ₀)(ρ₁ + ρ₀)/(1 + ρ₀²)).
  return -k - alpha_ * std::log1p((rho1 - rho0) * (rho1 + rho0) / (1.0 + rho0 * rho0));
}

double StudentTScaleFamily::eta_scale(double s_hat) const {
  return std::exp(-s_hat) * inv_sqrt_nu_;
}

double StudentTScaleFamily::envelope_growth(double, double t_s) const {
  return std::exp(3.0 * t_s);  // κ^a ≤ κ̂^a·e^{a·t_s}, a ≤ 3
}

bool StudentTScaleFamily::same_as(const GlobalFamily& other) const {
  const auto* o = dynamic_cast<const StudentTScaleFamily*>(&other);
  return o != nullptr && o->nu_ == nu_ && o->prior() == prior();
}

namespace {

/// Σ_{j<y} 1/(φ + j) = ψ(y + φ) − ψ(φ) and Σ_{j<y} 1/(φ + j)² = ψ′(φ) − ψ′(y + φ), exactly for
/// the first kGammaExact terms and from the series beyond.
struct DigammaSums {
  double d1 = 0.0, d2 = 0.0;
};
DigammaSums digamma_sums(double y, double phi) noexcept {
  DigammaSums t;
  const int exact = static_cast<int>(std::min(y, double(detail::kGammaExact)));
  for (int j = 0; j < exact; ++j) {
    const double inv = 1.0 / (phi + j);
    t.d1 += inv;
    t.d2 += inv * inv;
  }
  if (y > detail::kGammaExact) {
    const double from = phi + detail::kGammaExact;
    t.d1 += detail::digamma_large(y + phi) - detail::digamma_large(from);
    t.d2 -= detail::trigamma_large(y + phi) - detail::trigamma_large(from);
  }
  return t;
}

/// G(φ₁) − G(φ₀), G(φ) = log Γ(y + φ) − log Γ(φ), as Σ_{j<y} log1p((φ₁ − φ₀)/(φ₀ + j)) for the
/// first kGammaExact terms and from the series beyond; `dphi` = φ₁ − φ₀.
double gamma_change(double y, double phi0, double dphi) noexcept {
  double g = 0.0;
  const int exact = static_cast<int>(std::min(y, double(detail::kGammaExact)));
  for (int j = 0; j < exact; ++j) g += std::log1p(dphi / (phi0 + j));
  if (y > detail::kGammaExact) {
    const double phi1 = phi0 + dphi, from = detail::kGammaExact;
    g += (detail::log_gamma_large(y + phi1) - detail::log_gamma_large(y + phi0)) -
         (detail::log_gamma_large(from + phi1) - detail::log_gamma_large(from + phi0));
  }
  return g;
}

/// ∂³/∂s³ of G(e^s) = Σ_{j<y} x_j(1 − x_j)(1 − 2x_j), x_j = φ/(φ + j): term by term for the first
/// kGammaExact (no cancellation), beyond as φΣ1/(φ+j) − 3φ²Σ1/(φ+j)² + 2φ³Σ1/(φ+j)³ from the
/// polygamma series.
double gamma_third(double y, double phi) noexcept {
  double g = 0.0;
  const int exact = static_cast<int>(std::min(y, double(detail::kGammaExact)));
  for (int j = 1; j < exact; ++j) {
    const double inv = 1.0 / (phi + j), x = phi * inv, rest = j * inv;
    g += x * rest * (rest - x);
  }
  if (y > detail::kGammaExact) {
    const double from = phi + detail::kGammaExact, to = y + phi;
    const double d1 = detail::digamma_large(to) - detail::digamma_large(from);
    const double d2 = detail::trigamma_large(from) - detail::trigamma_large(to);
    const double d3 = 0.5 * (detail::tetragamma_large(to) - detail::tetragamma_large(from));
    g += phi * (d1 - phi * (3.0 * d2 - 2.0 * phi * d3));
  }
  return g;
}

/// softplus(w) = log(1 + e^w), finite for every finite w.
double softplus(double w) noexcept {
  return std::max(w, 0.0) + std::log1p(std::exp(-std::fabs(w)));
}

/// sup over a ∈ [0, 1] of |a(1 − a)(1 − 2a)| = 1/(6√3), rounded up: the third derivative of
/// log σ, and each term of G's, at most this.
constexpr double kLogisticM3 = 0.0962251;

}  // namespace

double NegBinomialDispersionFamily::value(double y, double u, double s) const noexcept {
  const double phi = std::exp(s), w = u - s;
  return y * w - (y + phi) * softplus(w) + std::lgamma(y + phi) - std::lgamma(phi);
}

GlobalExpansion NegBinomialDispersionFamily::expand(double y, double u_hat, double s_hat) const {
  const double phi = std::exp(s_hat), w = u_hat - s_hat, k = y + phi;
  const double ex = std::exp(-std::fabs(w)), inv = 1.0 / (1.0 + ex);
  const double sig = w >= 0.0 ? inv : ex * inv, v = ex * inv * inv, sp = softplus(w);
  const DigammaSums g = digamma_sums(y, phi);
  GlobalExpansion e;
  e.fu = y - k * sig;
  e.fs = -y - phi * sp + k * sig + phi * g.d1;
  e.fuu = -k * v;
  e.fus = -phi * sig + k * v;
  e.fss = -phi * sp + 2.0 * phi * sig - k * v + phi * g.d1 - phi * phi * g.d2;
  return e;
}

double NegBinomialDispersionFamily::change(double y, double u_hat, double s_hat, double h,
                                           double k) const {
  const double phi0 = std::exp(s_hat), dphi = phi0 * std::expm1(k), phi1 = phi0 + dphi;
  const double w0 = u_hat - s_hat, w1 = w0 + h - k;
  const double sp0 = softplus(w0), sp1 = softplus(w1);
  return y * (h - k) - y * (sp1 - sp0) - (phi1 * sp1 - phi0 * sp0) + gamma_change(y, phi0, dphi);
}

double NegBinomialDispersionFamily::envelope_scale(double y, double u_hat, double s_hat) const {
  const double w = u_hat - s_hat, sig = 1.0 / (1.0 + std::exp(-w));
  return 2.0 * kLogisticM3 * y + std::exp(s_hat) * sig * (1.0 + softplus(w));
}

double NegBinomialDispersionFamily::envelope_growth(double t_u, double t_s) const {
  // φ ≤ φ̂·e^{t_s}; w moves by at most t = t_u + t_s, and E(ŵ + t) ≤ E(ŵ)·e^t·(1 + t).
  return std::exp(t_u + 2.0 * t_s) * (1.0 + t_u + t_s);
}

GlobalThird NegBinomialDispersionFamily::third(double y, double u, double s) const {
  // y·log σ(w) gives ±y·σ″(w); −φ·S(w) gives −φ·(1 − d/dw)^b S^{(a)}(w): σ″, 2σv, σ²(2σ − 1) and
  // S − 3σ + 2v(1 + σ) (v = σ(1 − σ), σ″ = v(1 − 2σ)); G adds to the last.
  const double phi = std::exp(s), w = u - s;
  const double ex = std::exp(-std::fabs(w)), inv = 1.0 / (1.0 + ex);
  const double sig = w >= 0.0 ? inv : ex * inv, v = ex * inv * inv, sp = softplus(w);
  const double s2 = v * (1.0 - 2.0 * sig);
  GlobalThird t;
  t.fuuu = -(y + phi) * s2;
  t.fuus = y * s2 - phi * 2.0 * sig * v;
  t.fuss = -y * s2 - phi * sig * sig * (2.0 * sig - 1.0);
  t.fsss = y * s2 - phi * (sp - 3.0 * sig + 2.0 * v * (1.0 + sig)) + gamma_third(y, phi);
  return t;
}

double NegBinomialDispersionFamily::fourth_scale(double y, double u_hat, double s_hat) const {
  const double w = u_hat - s_hat, sig = 1.0 / (1.0 + std::exp(-w));
  return 0.25 * y + std::exp(s_hat) * sig * (1.0 + softplus(w));
}

bool NegBinomialDispersionFamily::same_as(const GlobalFamily& other) const {
  const auto* o = dynamic_cast<const NegBinomialDispersionFamily*>(&other);
  return o != nullptr && o->prior() == prior();
}

}  // namespace flymc
