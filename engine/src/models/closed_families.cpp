// Logistic and Student-t regression as single-index families (flymc/models/logistic.hpp,
// robust.hpp): closed forms in each family's own expansion variable u, so that scalable MH
// computes exactly what it computed when it knew these two models by name.
#include <cmath>
#include <memory>
#include <string>

#include "flymc/core/rng.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/robust.hpp"

namespace flymc {

// ---------------------------------------------------------------------------------------------
// Logistic regression, u = t·η.

Expansion LogisticFamily::taylor(double u_hat, int order) noexcept {
  // σ(|û|) = 1/(1 + e) and σ(−|û|) = e/(1 + e) with e = exp(−|û|) ≤ 1: one exponential, and
  // neither probability is formed as 1 − the other, which would lose the small one.
  const double e = std::exp(-std::fabs(u_hat)), inv = 1.0 / (1.0 + e);
  const double big = inv, small = e * inv;  // σ(|û|), σ(−|û|)
  Expansion t{u_hat, u_hat >= 0.0 ? small : big, -big * small};
  if (order == 3) {
    // σ(−û) − σ(û) = ∓(1 − e)/(1 + e), with 1 − e from expm1 (no cancellation near û = 0):
    // f3 = f2·(σ(−û) − σ(û)).
    const double diff = -std::expm1(-std::fabs(u_hat)) * inv;
    t.f3 = u_hat >= 0.0 ? -t.f2 * diff : t.f2 * diff;
  }
  return t;
}

double LogisticFamily::gap(const Expansion& t, double h, int order) noexcept {
  if (order == 3)
    return kernels::log_sigmoid(t.u_hat + h) - h * (t.f1 + h * (0.5 * t.f2 + t.f3 * h / 6.0));
  return kernels::log_sigmoid(t.u_hat + h) - h * (t.f1 + 0.5 * t.f2 * h);
}

std::string LogisticFamily::check_label(double y) const {
  return y == 1.0 || y == -1.0 ? std::string() : std::string("must be -1 or +1");
}

void LogisticFamily::derivatives(double y, double eta, int order, double* out) const {
  // f(t, η) = g(tη), g = log σ: f^(j) = t^j·g^(j)(tη), t = ±1.
  // f' = t·σ(−u) from the stable log-sigmoid, as the piecewise-deterministic samplers have
  // always computed a datum's gradient coefficient.
  const double u = y * eta;
  out[0] = kernels::log_sigmoid(u);
  if (order < 1) return;
  out[1] = y * std::exp(kernels::log_sigmoid(-u));
  if (order < 2) return;
  const Expansion t = taylor(u, order >= 3 ? 3 : 2);
  const double p = -t.f2;  // σ(u)σ(−u)
  const double g[kMaxOrder + 1] = {out[0], t.f1, t.f2, t.f3, -p * (1.0 - 6.0 * p)};
  for (int j = 2; j <= order; ++j) out[j] = j % 2 == 1 ? y * g[j] : g[j];
}

void LogisticFamily::derivatives(const double* y, const double* eta, std::size_t k, int order,
                                 double* out) const {
  if (order > 1) return SingleIndexFamily::derivatives(y, eta, k, order, out);
  // f = log σ(u) and f' = t·σ(−u) = t·exp(log σ(−u)), u = t·η, each by one vectorized
  // log-sigmoid over the batch.
  for (std::size_t i = 0; i < k; ++i) out[i] = y[i] * eta[i];
  kernels::log_sigmoid(out, out, k);
  if (order == 0) return;
  double* d1 = out + k;
  for (std::size_t i = 0; i < k; ++i) d1[i] = -(y[i] * eta[i]);
  kernels::log_sigmoid(d1, d1, k);
  for (std::size_t i = 0; i < k; ++i) d1[i] = y[i] * std::exp(d1[i]);
}

Expansion LogisticFamily::expand(double y, double eta_hat, int order) const {
  return taylor(y * eta_hat, order);
}

double LogisticFamily::remainder_change(double, double u_hat, double h, double h2,
                                        int order) const {
  const Expansion t = taylor(u_hat, order);
  return gap(t, h, order) - gap(t, h2, order);
}

bool LogisticFamily::same_as(const SingleIndexFamily& other) const {
  return dynamic_cast<const LogisticFamily*>(&other) != nullptr;
}

double LogisticFamily::simulate(double eta, Rng& rng) const {
  return std::log(rng.uniform_pos()) < kernels::log_sigmoid(eta) ? 1.0 : -1.0;
}

const std::shared_ptr<const SingleIndexFamily>& LogisticFamily::shared() {
  static const std::shared_ptr<const SingleIndexFamily> one =
      std::make_shared<const LogisticFamily>();
  return one;
}

// ---------------------------------------------------------------------------------------------
// Student-t regression, u = y − η.

namespace {

/// ρ/(1 + ρ²) and 1/(1 + ρ²) without forming ρ² where it could overflow.
struct RhoTerms {
  double q, rho_q;
};
RhoTerms rho_terms(double rho) noexcept {
  const bool big = std::fabs(rho) > 1.0;
  return {big ? 1.0 / (rho * rho * (1.0 + 1.0 / (rho * rho))) : 1.0 / (1.0 + rho * rho),
          big ? 1.0 / (rho + 1.0 / rho) : rho * (1.0 / (1.0 + rho * rho))};
}

}  // namespace

Expansion StudentTFamily::taylor(const StudentT& st, double u_hat, int order) noexcept {
  const double rho = u_hat * st.inv_sqrt_c, ic = st.inv_sqrt_c;
  const RhoTerms r = rho_terms(rho);
  Expansion e{u_hat, -2.0 * st.a * ic * r.rho_q, -2.0 * st.a * ic * ic * r.q * (2.0 * r.q - 1.0)};
  if (order == 3) e.f3 = 4.0 * st.a * ic * ic * ic * r.rho_q * r.q * (4.0 * r.q - 1.0);
  return e;
}

double StudentTFamily::gap(const StudentT& st, const Expansion& e, double h, int order) noexcept {
  if (order == 3) return st.log_lik(e.u_hat + h) - h * (e.f1 + h * (0.5 * e.f2 + e.f3 * h / 6.0));
  return st.log_lik(e.u_hat + h) - h * (e.f1 + 0.5 * e.f2 * h);
}

std::optional<double> StudentTFamily::m3() const {
  constexpr double kMaxG = 0.72855339059327380;  // max |ρ(3 − ρ²)/(1 + ρ²)³|, rounded up
  const double inv_c15 = t_.inv_sqrt_c * t_.inv_sqrt_c * t_.inv_sqrt_c;
  return 4.0 * t_.a * kMaxG * inv_c15 * (1.0 + 1e-12);
}

std::optional<double> StudentTFamily::m4() const {
  const double ic2 = t_.inv_sqrt_c * t_.inv_sqrt_c;
  return 12.0 * t_.a * ic2 * ic2 * (1.0 + 1e-12);
}

void StudentTFamily::derivatives(double y, double eta, int order, double* out) const {
  // f(y, η) = g(u), u = y − η: f^(j) = (−1)^j·g^(j)(u). With q = 1/(1 + ρ²), (3 − ρ²)q = 4q − 1
  // and (ρ⁴ − 6ρ² + 1)q² = 1 − 8q + 8q², so g''' = (4a/c^{3/2})·ρq·q(4q − 1) and
  // g'''' = (12a/c²)·q²(1 − 8q + 8q²), finite at every residual.
  const double u = y - eta;
  out[0] = t_.log_lik(u);
  if (order < 1) return;
  const Expansion e = taylor(t_, u, 3);
  const RhoTerms r = rho_terms(u * t_.inv_sqrt_c);
  const double ic = t_.inv_sqrt_c;
  const double g4 =
      12.0 * t_.a * ic * ic * ic * ic * r.q * r.q * (1.0 - 8.0 * r.q + 8.0 * r.q * r.q);
  const double g[kMaxOrder + 1] = {out[0], e.f1, e.f2, e.f3, g4};
  for (int j = 1; j <= order; ++j) out[j] = j % 2 == 1 ? -g[j] : g[j];
}

Expansion StudentTFamily::expand(double y, double eta_hat, int order) const {
  return taylor(t_, y - eta_hat, order);
}

double StudentTFamily::remainder_change(double, double u_hat, double h, double h2,
                                        int order) const {
  const Expansion e = taylor(t_, u_hat, order);
  return gap(t_, e, h, order) - gap(t_, e, h2, order);
}

bool StudentTFamily::same_as(const SingleIndexFamily& other) const {
  const auto* o = dynamic_cast<const StudentTFamily*>(&other);
  return o != nullptr && o->t_.nu == t_.nu && o->t_.scale == t_.scale;
}

}  // namespace flymc
