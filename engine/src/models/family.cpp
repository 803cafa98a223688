#include "flymc/models/family.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/models/logistic.hpp"

namespace flymc {

std::string SingleIndexFamily::check_label(double y) const {
  return std::isfinite(y) ? std::string() : std::string("must be finite");
}

void SingleIndexFamily::derivatives(const double* y, const double* eta, std::size_t k, int order,
                                    double* out) const {
  double one[kMaxOrder + 1];
  for (std::size_t i = 0; i < k; ++i) {
    derivatives(y[i], eta[i], order, one);
    for (int j = 0; j <= order; ++j) out[static_cast<std::size_t>(j) * k + i] = one[j];
  }
}

Expansion SingleIndexFamily::expand(double y, double eta_hat, int order) const {
  double d[kMaxOrder + 1] = {};
  derivatives(y, eta_hat, order == 3 ? 3 : 2, d);
  return Expansion{eta_hat, d[1], d[2], order == 3 ? d[3] : 0.0};
}

double SingleIndexFamily::remainder_change(double y, double u_hat, double h, double h2,
                                           int order) const {
  const Expansion t = expand(y, u_hat, order);
  const auto gap = [&](double step) {
    return log_lik(y, u_hat + step) - step * (t.f1 + step * (0.5 * t.f2 + t.f3 * step / 6.0));
  };
  return gap(h) - gap(h2);
}

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kHalfLog2Pi = 0.91893853320467274178;

/// Below u = −kTail the lower tail's asymptotic series in z = 1/u² give log Φ(u) and every
/// derivative; above it, erfc does. Near the switch both agree to about 1e-7 relative in the
/// fourth derivative (the worst): erfc's forms lose digits to cancellation as u falls
/// (1 + g'' → 0), the series gain them.
constexpr double kTail = 10.0;
constexpr int kTerms = 14;
/// Φ(−t) = φ(t)/t·Σ_k s_k z^k, s_k = (−1)^k (2k − 1)!!.
constexpr double kCdf[kTerms] = {1.0,
                                 -1.0,
                                 3.0,
                                 -15.0,
                                 105.0,
                                 -945.0,
                                 10395.0,
                                 -135135.0,
                                 2027025.0,
                                 -34459425.0,
                                 654729075.0,
                                 -13749310575.0,
                                 316234143225.0,
                                 -7905853580625.0};
/// r(−t) = φ/Φ = t·Σ_k c_k z^k (the reciprocal series).
constexpr double kRatio[kTerms] = {1.0,
                                   1.0,
                                   -2.0,
                                   10.0,
                                   -74.0,
                                   706.0,
                                   -8162.0,
                                   110410.0,
                                   -1708394.0,
                                   29752066.0,
                                   -576037442.0,
                                   12277827850.0,
                                   -285764591114.0,
                                   7213364729026.0};
/// g''(−t) = −r·w = Σ_k b_k z^k; the third and fourth derivatives follow term by term
/// (d/du = −d/dt).
constexpr double kCurv[kTerms] = {-1.0,
                                  1.0,
                                  -6.0,
                                  50.0,
                                  -518.0,
                                  6354.0,
                                  -89782.0,
                                  1435330.0,
                                  -25625910.0,
                                  505785122.0,
                                  -10944711398.0,
                                  257834384850.0,
                                  -6572585595622.0,
                                  180334118225650.0};

/// Σ_k m(k)·coef[k]·z^k over k ≥ from, divided by z^from (Horner).
template <class M>
double series(const double* coef, int from, double z, M m) noexcept {
  double s = 0.0;
  for (int k = kTerms - 1; k >= from; --k) s = s * z + m(k) * coef[k];
  return s;
}
double series(const double* coef, double z) noexcept {
  return series(coef, 0, z, [](int) { return 1.0; });
}

/// log Φ(u) and its first four derivatives g^(j)(u) into g[0..4].
void log_cdf_derivatives(double u, double* g) noexcept {
  if (u <= -kTail) {
    const double t = -u, inv_t = 1.0 / t, z = inv_t * inv_t;
    g[0] = -(0.5 * t) * t - std::log(t) - kHalfLog2Pi + std::log(series(kCdf, z));
    g[1] = t * series(kRatio, z);
    g[2] = series(kCurv, z);
    g[3] = inv_t * z * series(kCurv, 1, z, [](int k) { return 2.0 * k; });
    g[4] = z * z * series(kCurv, 1, z, [](int k) { return 2.0 * k * (2.0 * k + 1.0); });
    return;
  }
  double r;
  if (u > 0.0) {
    const double q = 0.5 * std::erfc(u * kInvSqrt2);  // 1 − Φ(u), small: log1p keeps it
    r = kInvSqrt2Pi * std::exp(-0.5 * u * u) / (1.0 - q);
    g[0] = std::log1p(-q);
  } else {
    const double p = 0.5 * std::erfc(-u * kInvSqrt2);
    r = kInvSqrt2Pi * std::exp(-0.5 * u * u) / p;
    g[0] = std::log(p);
  }
  // With w = u + r: g' = r, g'' = −r·w, g''' = −g''·w − r(1 + g''),
  // g'''' = −g'''·w − 2g''(1 + g'') − r·g'''.
  const double w = u + r;
  g[1] = r;
  g[2] = -r * w;
  g[3] = -g[2] * w - r * (1.0 + g[2]);
  g[4] = -g[3] * w - 2.0 * g[2] * (1.0 + g[2]) - r * g[3];
}

}  // namespace

std::string ProbitFamily::check_label(double y) const {
  return y == 1.0 || y == -1.0 ? std::string() : std::string("must be -1 or +1");
}

bool ProbitFamily::same_as(const SingleIndexFamily& other) const {
  return dynamic_cast<const ProbitFamily*>(&other) != nullptr;
}

bool GaussianFamily::same_as(const SingleIndexFamily& other) const {
  const auto* o = dynamic_cast<const GaussianFamily*>(&other);
  return o != nullptr && o->scale_ == scale_;
}

double SingleIndexFamily::simulate(double, Rng&) const {
  throw ConfigError("the " + name() +
                    " model cannot simulate responses (SingleIndexFamily::simulate), which "
                    "simulation-based calibration needs");
}

// A latent Gaussian crossing zero.
double ProbitFamily::simulate(double eta, Rng& rng) const {
  return eta + rng.normal() > 0.0 ? 1.0 : -1.0;
}
double GaussianFamily::simulate(double eta, Rng& rng) const { return eta + scale_ * rng.normal(); }

void ProbitFamily::derivatives(double y, double eta, int order, double* out) const {
  // f(t, η) = g(tη), g = log Φ: f^(j) = t^j·g^(j)(tη), t = ±1.
  double g[kMaxOrder + 1];
  log_cdf_derivatives(y * eta, g);
  for (int j = 0; j <= order; ++j) out[j] = j % 2 == 1 ? y * g[j] : g[j];
}

GaussianFamily::GaussianFamily(double noise_scale) : scale_(noise_scale) {
  precision_ = 1.0 / (noise_scale * noise_scale);
  if (!(noise_scale > 0.0) || !std::isfinite(noise_scale) || !std::isfinite(precision_) ||
      !(precision_ > 0.0))
    throw ConfigError("--noise-scale must be finite and > 0 with 1/s^2 finite, got " +
                      number_text(noise_scale));
}

void GaussianFamily::derivatives(double y, double eta, int order, double* out) const {
  const double r = y - eta;
  out[0] = -0.5 * precision_ * r * r;
  if (order >= 1) out[1] = precision_ * r;
  if (order >= 2) out[2] = -precision_;
  for (int j = 3; j <= order; ++j) out[j] = 0.0;
}

std::string BinomialFamily::check_label(double y) const {
  return y >= 0.0 && y == std::floor(y) ? std::string()
                                        : std::string("must be a count of successes (0, 1, ...)");
}

void BinomialFamily::derivatives_trials(double y, double m, double eta, int order,
                                        double* out) const {
  if (link_ == Link::logit) {
    // f = yη − m·log(1 + e^η); with s = σ(η) and v = s(1 − s): f' = y − ms, f'' = −mv,
    // f''' = −mv(1 − 2s), f'''' = −mv(1 − 6v).
    const double softplus = std::max(eta, 0.0) + std::log1p(std::exp(-std::fabs(eta)));
    const double s = 1.0 / (1.0 + std::exp(-eta)), v = s * (1.0 - s);
    out[0] = y * eta - m * softplus;
    if (order >= 1) out[1] = y - m * s;
    if (order >= 2) out[2] = -m * v;
    if (order >= 3) out[3] = -m * v * (1.0 - 2.0 * s);
    if (order >= 4) out[4] = -m * v * (1.0 - 6.0 * v);
    return;
  }
  // f = y·g(η) + (m − y)·g(−η), g = log Φ: f^(j) = y·g^(j)(η) + (m − y)·(−1)^j·g^(j)(−η).
  double up[kMaxOrder + 1] = {}, down[kMaxOrder + 1] = {};
  if (y > 0.0) log_cdf_derivatives(eta, up);
  if (m - y > 0.0) log_cdf_derivatives(-eta, down);
  for (int j = 0; j <= order; ++j) out[j] = y * up[j] + (m - y) * (j % 2 == 1 ? -down[j] : down[j]);
}

// Per trial, logistic or probit regression's constants (a trial's f is theirs at ±η).
const SingleIndexFamily& BinomialFamily::trial() const {
  static const LogisticFamily logit;
  static const ProbitFamily probit;
  return link_ == Link::logit ? static_cast<const SingleIndexFamily&>(logit) : probit;
}
std::optional<double> BinomialFamily::kappa() const { return trial().kappa(); }
std::optional<double> BinomialFamily::m1() const { return trial().m1(); }
std::optional<double> BinomialFamily::m2() const { return trial().m2(); }
std::optional<double> BinomialFamily::m3() const { return trial().m3(); }
std::optional<double> BinomialFamily::m4() const { return trial().m4(); }

bool BinomialFamily::same_as(const SingleIndexFamily& other) const {
  const auto* o = dynamic_cast<const BinomialFamily*>(&other);
  return o != nullptr && o->link_ == link_;
}

double BinomialFamily::simulate(double eta, Rng& rng) const {
  if (link_ == Link::probit) return eta + rng.normal() > 0.0 ? 1.0 : 0.0;
  return rng.uniform() < 1.0 / (1.0 + std::exp(-eta)) ? 1.0 : 0.0;
}

std::string PoissonFamily::check_label(double y) const {
  return y >= 0.0 && y == std::floor(y) ? std::string()
                                        : std::string("must be a count (0, 1, ...)");
}

void PoissonFamily::derivatives(double y, double eta, int order, double* out) const {
  const double mu = std::exp(eta);
  out[0] = y * eta - mu;
  if (order >= 1) out[1] = y - mu;
  for (int j = 2; j <= order; ++j) out[j] = -mu;
}

namespace {

/// e^h − Σ_{j≤k} h^j/j!, the exponential series past its h^k term: by that series where |h| is
/// small (its terms all of one sign for h > 0, alternating and shrinking for h < 0, so the sum
/// keeps its relative precision), else from expm1.
double exp_tail(double h, int k) noexcept {
  double term = 1.0;
  if (std::fabs(h) > 0.5) {
    double head = 0.0;  // Σ_{1≤j≤k} h^j/j!
    for (int j = 1; j <= k; ++j) head += term *= h / j;
    return std::expm1(h) - head;
  }
  for (int j = 1; j <= k + 1; ++j) term *= h / j;
  double sum = 0.0;
  for (int j = k + 2; term != 0.0 && std::fabs(term) > 1e-18 * std::fabs(sum); ++j) {
    sum += term;
    term *= h / j;
  }
  return sum;
}

}  // namespace

double PoissonFamily::remainder_change(double, double u_hat, double h, double h2, int order) const {
  // f(û + h) − f1·h − ½f2·h² [− ⅙f3·h³] = yû − e^û·(1 + E(h)): the change between two steps is
  // −e^û·(E(h) − E(h2)). A step so far that E overflows makes its remainder −∞: the change is
  // +∞ at a proposal there (a certain rejection), never NaN.
  const int k = order == 3 ? 3 : 2;
  const double a = exp_tail(h, k), b = exp_tail(h2, k);
  return a == b ? 0.0 : -std::exp(u_hat) * (a - b);
}

bool PoissonFamily::same_as(const SingleIndexFamily& other) const {
  return dynamic_cast<const PoissonFamily*>(&other) != nullptr;
}

double PoissonFamily::simulate(double eta, Rng& rng) const {
  const double mu = std::exp(eta);
  if (mu < 10.0) {  // inversion: the smallest k whose cumulative probability exceeds u
    double u = rng.uniform(), p = std::exp(-mu), k = 0.0;
    while (u > p) {
      u -= p;
      k += 1.0;
      p *= mu / k;
    }
    return k;
  }
  // PTRS (W. Hörmann, "The transformed rejection method for generating Poisson random
  // variables", Insurance: Mathematics and Economics 12, 1993): a dominating hat from a
  // transformed uniform, with a quick acceptance region and the exact test beyond it.
  const double s = std::sqrt(mu), log_mu = std::log(mu), b = 0.931 + 2.53 * s;
  const double a = -0.059 + 0.02483 * b, inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2.0);
  while (true) {
    const double u = rng.uniform() - 0.5, v = rng.uniform(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + mu + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
        -mu + k * log_mu - std::lgamma(k + 1.0))
      return k;
  }
}

NegBinomialFamily::NegBinomialFamily(double dispersion)
    : r_(dispersion), log_r_(std::log(dispersion)) {
  if (!(dispersion > 0.0) || !std::isfinite(dispersion))
    throw ConfigError("--dispersion must be finite and > 0, got " + number_text(dispersion));
}

std::string NegBinomialFamily::check_label(double y) const {
  return y >= 0.0 && y == std::floor(y) ? std::string()
                                        : std::string("must be a count (0, 1, ...)");
}

void NegBinomialFamily::derivatives(double y, double eta, int order, double* out) const {
  // log(r + e^η) = log r + softplus(x), x = η − log r; s = σ(x), v = s(1 − s), from e^(−|x|) so
  // that neither probability is formed as 1 − the other.
  const double x = eta - log_r_, e = std::exp(-std::fabs(x)), inv = 1.0 / (1.0 + e);
  const double s = x >= 0.0 ? inv : e * inv, v = inv * e * inv, a = y + r_;
  out[0] = y * eta - a * (log_r_ + std::max(x, 0.0) + std::log1p(e));
  if (order >= 1) out[1] = y - a * s;
  if (order >= 2) out[2] = -a * v;
  // 1 − 2s = ∓(1 − e)/(1 + e), with 1 − e from expm1 (no cancellation near x = 0).
  const double one_minus_2s = (x >= 0.0 ? 1.0 : -1.0) * std::expm1(-std::fabs(x)) * inv;
  if (order >= 3) out[3] = -a * v * one_minus_2s;
  if (order >= 4) out[4] = -a * v * (1.0 - 6.0 * v);
}

double NegBinomialFamily::envelope_scale(double y, double, int k) const {
  return (y + r_) * (k == 3 ? LogisticFamily::kM3 : LogisticFamily::kM4);
}

// f(y, η) = yη + (y + r)·log σ(w), w = log r − η (up to a constant): its η-derivatives are
// (y + r) times log σ's at w, the odd ones with their sign turned.
Expansion NegBinomialFamily::expand(double y, double eta_hat, int order) const {
  const Expansion t = LogisticFamily::taylor(log_r_ - eta_hat, order);
  const double a = y + r_;
  return Expansion{eta_hat, y - a * t.f1, a * t.f2, -a * t.f3};
}

double NegBinomialFamily::remainder_change(double y, double u_hat, double h, double h2,
                                           int order) const {
  const Expansion t = LogisticFamily::taylor(log_r_ - u_hat, order);
  return (y + r_) * (LogisticFamily::gap(t, -h, order) - LogisticFamily::gap(t, -h2, order));
}

bool NegBinomialFamily::same_as(const SingleIndexFamily& other) const {
  const auto* o = dynamic_cast<const NegBinomialFamily*>(&other);
  return o != nullptr && o->r_ == r_;
}

double NegBinomialFamily::simulate(double eta, Rng& rng) const {
  const double rate = gamma_draw(r_, rng) * std::exp(eta) / r_;
  return PoissonFamily{}.simulate(std::log(rate), rng);
}

std::shared_ptr<const SingleIndexFamily> negbin_family(const RunConfig& cfg) {
  // With φ inferred the model is NegBinomialPhiModel, which no family describes.
  if (!cfg.dispersion)
    throw ConfigError(
        "--model negbin with phi inferred (no --dispersion) has no single-index family "
        "(NegBinomialPhiModel samples it); with --dispersion PHI it has one");
  return std::make_shared<const NegBinomialFamily>(*cfg.dispersion);
}

std::shared_ptr<const SingleIndexFamily> poisson_family(const RunConfig&) {
  return std::make_shared<const PoissonFamily>();
}

std::shared_ptr<const SingleIndexFamily> binomial_family(const RunConfig& cfg) {
  return std::make_shared<const BinomialFamily>(
      cfg.link == Link::probit ? BinomialFamily::Link::probit : BinomialFamily::Link::logit);
}

std::shared_ptr<const SingleIndexFamily> probit_family(const RunConfig&) {
  return std::make_shared<const ProbitFamily>();
}
std::shared_ptr<const SingleIndexFamily> gaussian_family(const RunConfig& cfg) {
  if (!cfg.noise_scale)
    throw ConfigError(
        "--model gaussian without --noise-scale infers sigma, a parameter beside the "
        "coefficients: it is not a single-index family");
  return std::make_shared<const GaussianFamily>(*cfg.noise_scale);
}
std::shared_ptr<const SingleIndexFamily> custom_family(const RunConfig& cfg) {
  if (!cfg.family)
    throw ConfigError(
        "--model custom is a model given in code: pass its SingleIndexFamily to "
        "flymc::run(cfg, data, family)");
  return cfg.family;
}

std::shared_ptr<const SingleIndexFamily> single_index_family(const RunConfig& cfg) {
  const FamilyMaker make = model_info(cfg.model).family;
  return make != nullptr ? make(cfg) : nullptr;
}

void datum_derivatives(const SingleIndexFamily& family, const Dataset& data, std::size_t n,
                       double u, int order, double* out) {
  const auto trials = data.trials(), w = data.weights();
  if (trials.empty())
    family.derivatives(data.y()[n], u, order, out);
  else
    family.derivatives_trials(data.y()[n], trials[n], u, order, out);
  if (!w.empty())
    for (int j = 0; j <= order; ++j) out[j] *= w[n];
}

double datum_constant_factor(const SingleIndexFamily& family, const Dataset& data, std::size_t n) {
  const auto trials = data.trials(), w = data.weights();
  const double scale = trials.empty() ? 1.0 : family.datum_scale(data.y()[n], trials[n]);
  return w.empty() ? scale : w[n] * scale;
}

void require_constant(const SingleIndexFamily& family, char need, const std::string& what) {
  const std::optional<double> c = need == 'k'   ? family.kappa()
                                  : need == '1' ? family.m1()
                                  : need == '2' ? family.m2()
                                  : need == '3' ? family.m3()
                                                : family.m4();
  const char* name = need == 'k'   ? "kappa (a bound on -f'', for the collapsible bound)"
                     : need == '1' ? "M1 (a bound on |f'|)"
                     : need == '2' ? "M2 (a bound on |f''|)"
                     : need == '3' ? "M3 (a bound on |f'''|)"
                                   : "M4 (a bound on |f''''|)";
  if (!c)
    throw ConfigError(what + " needs the model's " + name + ", which the " + family.name() +
                      " family does not give");
  if (!(*c >= 0.0) || !std::isfinite(*c))
    throw ConfigError("the " + family.name() + " family's " + name +
                      " must be finite and >= 0, got " + number_text(*c));
}

}  // namespace flymc
