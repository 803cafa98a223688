#include "flymc/models/family.hpp"

#include <cmath>
#include <string>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"

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

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kHalfLog2Pi = 0.91893853320467274178;
/// Below u = −kTail, Φ(u) and φ(u) come from the asymptotic series (erfc and exp would
/// underflow soon after); its eight terms there leave a relative error below 1e-17.
constexpr double kTail = 30.0;

/// log Φ(u), the inverse Mills ratio r = φ(u)/Φ(u) and w = u + r for one u. In the lower tail
/// r → −u and w → 0: w is formed from the series of 1 − tΦ(−t)/φ(t) there, not as a difference.
struct Mills {
  double log_cdf, r, w;
};

Mills mills(double u) noexcept {
  if (u > 0.0) {
    const double q = 0.5 * std::erfc(u * kInvSqrt2);  // 1 − Φ(u), small: log1p keeps it
    const double r = kInvSqrt2Pi * std::exp(-0.5 * u * u) / (1.0 - q);
    return {std::log1p(-q), r, u + r};
  }
  if (u > -kTail) {
    const double p = 0.5 * std::erfc(-u * kInvSqrt2);
    const double r = kInvSqrt2Pi * std::exp(-0.5 * u * u) / p;
    return {std::log(p), r, u + r};
  }
  // Φ(−t) = φ(t)/t·S, S = 1 − z + 3z² − 15z³ + …, z = 1/t²; s1 = 1 − S.
  const double t = -u, z = 1.0 / (t * t);
  const double s1 =
      z * (1.0 - z * (3.0 - z * (15.0 - z * (105.0 - z * (945.0 - z * (10395.0 - z * 135135.0))))));
  const double s = 1.0 - s1;
  return {-(0.5 * t) * t - std::log(t) - kHalfLog2Pi + std::log1p(-s1), t / s, t * s1 / s};
}

}  // namespace

std::string ProbitFamily::check_label(double y) const {
  return y == 1.0 || y == -1.0 ? std::string() : std::string("must be -1 or +1");
}

void ProbitFamily::derivatives(double y, double eta, int order, double* out) const {
  // f(t, η) = g(tη), g = log Φ, so f^(j) = t^j·g^(j)(tη), with g' = r, g'' = −r·w,
  // g''' = −g''·w − r(1 + g''), g'''' = −g'''·w − 2g''(1 + g'') − r·g''' (w = u + r).
  const Mills m = mills(y * eta);
  out[0] = m.log_cdf;
  if (order < 1) return;
  out[1] = y * m.r;
  if (order < 2) return;
  const double g2 = -m.r * m.w;
  out[2] = g2;
  if (order < 3) return;
  const double g3 = -g2 * m.w - m.r * (1.0 + g2);
  out[3] = y * g3;
  if (order < 4) return;
  out[4] = -g3 * m.w - 2.0 * g2 * (1.0 + g2) - m.r * g3;
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

std::shared_ptr<const SingleIndexFamily> single_index_family(const RunConfig& cfg) {
  switch (cfg.model) {
    case ModelKind::probit:
      return std::make_shared<const ProbitFamily>();
    case ModelKind::gaussian:
      return std::make_shared<const GaussianFamily>(cfg.noise_scale);
    case ModelKind::custom:
      if (!cfg.family)
        throw ConfigError(
            "--model custom is a model given in code: pass its SingleIndexFamily to "
            "flymc::run(cfg, data, family)");
      return cfg.family;
    case ModelKind::logistic:
    case ModelKind::softmax:
    case ModelKind::robust:
      break;
  }
  return nullptr;
}

void require_constant(const SingleIndexFamily& family, char need, const std::string& what) {
  const std::optional<double> c = need == 'k'   ? family.kappa()
                                  : need == '3' ? family.m3()
                                                : family.m4();
  const char* name = need == 'k'   ? "kappa (a bound on -f'', for the collapsible bound)"
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
