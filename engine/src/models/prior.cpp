#include "flymc/models/prior.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "flymc/core/errors.hpp"

namespace flymc {

double PriorTerm::log_density(double t) const noexcept {
  const double r = (t - loc) / scale;
  switch (kind) {
    case PriorKind::gaussian:
      return -0.5 * r * r;
    case PriorKind::laplace:
      return -std::fabs(r);
    case PriorKind::student_t:
      return student_t_log_kernel(r, nu);
    case PriorKind::flat:
      return 0.0;
  }
  return 0.0;
}

double PriorTerm::gradient(double t) const noexcept {
  const double x = t - loc;
  switch (kind) {
    case PriorKind::gaussian:
      return -x / (scale * scale);
    case PriorKind::laplace:
      return x > 0.0 ? -1.0 / scale : x < 0.0 ? 1.0 / scale : 0.0;
    case PriorKind::student_t:
      return -(nu + 1.0) * x / (nu * scale * scale + x * x);
    case PriorKind::flat:
      return 0.0;
  }
  return 0.0;
}

double PriorTerm::precision() const noexcept {
  switch (kind) {
    case PriorKind::gaussian:
      return 1.0 / (scale * scale);
    case PriorKind::laplace:
      return 0.5 / (scale * scale);
    case PriorKind::student_t:
      return (nu + 1.0) / (nu * scale * scale);
    case PriorKind::flat:
      return 0.0;
  }
  return 0.0;
}

double PriorTerm::map_curvature(double t) const noexcept {
  const double x = t - loc;
  switch (kind) {
    case PriorKind::gaussian:
      return 1.0 / (scale * scale);
    case PriorKind::laplace:
      return 1.0 / (scale * std::fmax(std::fabs(x), 1e-8 * scale));
    case PriorKind::student_t:
      return (nu + 1.0) / (nu * scale * scale + x * x);
    case PriorKind::flat:
      return 0.0;
  }
  return 0.0;
}

double Prior::log_density(const double* theta, std::size_t p) const noexcept {
  double s = 0.0;
  if (!terms.empty()) {
    for (std::size_t j = 0; j < p; ++j) s += terms[j].log_density(theta[j]);
    return s;
  }
  if (kind == PriorKind::gaussian) {
    for (std::size_t j = 0; j < p; ++j) s += theta[j] * theta[j];
    return -0.5 * s / (sd * sd);
  }
  if (kind == PriorKind::flat) return 0.0;
  // Laplace(0, b) with b = sd/√2: log p = −|θ|/b.
  for (std::size_t j = 0; j < p; ++j) s += std::fabs(theta[j]);
  return -s * (std::sqrt(2.0) / sd);
}

void Prior::add_gradient(const double* theta, std::size_t p, double* grad) const noexcept {
  if (!terms.empty()) {
    for (std::size_t j = 0; j < p; ++j) grad[j] += terms[j].gradient(theta[j]);
    return;
  }
  if (kind == PriorKind::gaussian) {
    const double prec = 1.0 / (sd * sd);
    for (std::size_t j = 0; j < p; ++j) grad[j] -= prec * theta[j];
    return;
  }
  if (kind == PriorKind::flat) return;
  const double inv_b = std::sqrt(2.0) / sd;
  for (std::size_t j = 0; j < p; ++j)
    grad[j] -= theta[j] > 0.0 ? inv_b : theta[j] < 0.0 ? -inv_b : 0.0;
}

PriorTerm Prior::term(std::size_t j) const noexcept {
  if (!terms.empty()) return terms[j];
  if (kind == PriorKind::laplace) return {kind, 0.0, sd / std::numbers::sqrt2, 0.0};
  return {kind, 0.0, sd, 0.0};
}

double Prior::precision(std::size_t j) const noexcept {
  if (!terms.empty()) return terms[j].precision();
  return kind == PriorKind::flat ? 0.0 : 1.0 / (sd * sd);
}

double Prior::map_curvature(std::size_t j, double theta_j) const noexcept {
  if (!terms.empty()) return terms[j].map_curvature(theta_j);
  if (kind == PriorKind::gaussian) return 1.0 / (sd * sd);
  if (kind == PriorKind::flat) return 0.0;
  const double b = sd / std::sqrt(2.0);
  return 1.0 / (b * std::fmax(std::fabs(theta_j), 1e-8 * sd));
}

bool Prior::uniform_precision() const noexcept {
  return std::all_of(terms.begin(), terms.end(),
                     [&](const PriorTerm& t) { return t.precision() == terms[0].precision(); });
}

bool Prior::any_flat() const noexcept {
  if (terms.empty()) return kind == PriorKind::flat;
  return std::any_of(terms.begin(), terms.end(),
                     [](const PriorTerm& t) { return t.kind == PriorKind::flat; });
}

bool Prior::curvature_exact() const noexcept {
  if (terms.empty()) return kind != PriorKind::laplace;
  return std::all_of(terms.begin(), terms.end(), [](const PriorTerm& t) {
    return t.kind == PriorKind::gaussian || t.kind == PriorKind::flat;
  });
}

Prior Prior::repeated(std::size_t k) const {
  Prior out = *this;
  for (std::size_t b = 1; b < k; ++b) out.terms.insert(out.terms.end(), terms.begin(), terms.end());
  return out;
}

bool Prior::centred_gaussian() const noexcept {
  return terms.empty() && kind == PriorKind::gaussian;
}

Prior Prior::gaussian_stand_in() const {
  if (terms.empty()) return kind == PriorKind::flat ? *this : Prior{PriorKind::gaussian, sd, {}};
  Prior g = *this;
  for (PriorTerm& t : g.terms)
    if (t.kind != PriorKind::flat && t.kind != PriorKind::gaussian)
      t = {PriorKind::gaussian, t.loc, 1.0 / std::sqrt(t.precision()), 0.0};
  return g;
}

double Prior::init_sd(std::size_t j) const noexcept {
  if (terms.empty()) return sd;
  return 1.0 / std::sqrt(terms[j].precision());
}

namespace {

/// Coefficient i's (of the spec's `n`) value of a list: its one value, or its i-th.
double arg(const std::vector<double>& v, std::size_t i, double fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[i];
}

PriorTerm term_of(const PriorSpec& s, std::size_t i, double keyword_sd) {
  if (s.keyword)
    return s.kind == PriorKind::laplace
               ? PriorTerm{s.kind, 0.0, keyword_sd / std::numbers::sqrt2, 0.0}
               : PriorTerm{s.kind, 0.0, keyword_sd, 0.0};
  return {s.kind, arg(s.loc, i, 0.0), arg(s.scale, i, 1.0), s.nu};
}

/// The short path's form of one term used everywhere, where it has one.
bool as_uniform(const PriorTerm& t, Prior& out, bool keyword, double keyword_sd) {
  if (t.loc != 0.0) return false;
  if (t.kind == PriorKind::flat) {
    out = {PriorKind::flat, 1.0, {}};
  } else if (t.kind == PriorKind::gaussian) {
    out = {PriorKind::gaussian, t.scale, {}};
  } else if (t.kind == PriorKind::laplace) {
    out = {PriorKind::laplace, keyword ? keyword_sd : t.scale * std::numbers::sqrt2, {}};
  } else {
    return false;
  }
  return true;
}

}  // namespace

Prior prior_of(const RunConfig& cfg, std::size_t d) {
  const RunPriors specs = run_priors(cfg);
  const std::size_t first = cfg.intercept ? 1 : 0;  // coefficient 0 is the intercept
  const std::size_t features = d - std::min(first, d);
  const std::size_t n = specs.coefficients.length();
  if (n > 1 && n != features)
    throw ConfigError("--prior '" + cfg.prior + "' has lists of " + std::to_string(n) +
                      " values; the data have " + std::to_string(features) + " feature" +
                      (features == 1 ? "" : "s"));
  std::vector<PriorTerm> terms(d);
  for (std::size_t j = 0; j < d; ++j)
    terms[j] = j < first ? term_of(specs.intercept, 0, cfg.prior_sd)
                         : term_of(specs.coefficients, j - first, cfg.prior_sd);
  Prior out;
  const bool same = std::all_of(terms.begin(), terms.end(),
                                [&](const PriorTerm& t) { return t == terms.front(); });
  if (same && !terms.empty() &&
      as_uniform(terms.front(), out, specs.coefficients.keyword, cfg.prior_sd))
    return out;
  out.terms = std::move(terms);
  return out;
}

Prior with_flat_global(const Prior& coefficients, std::size_t d) {
  std::vector<PriorTerm> terms(d + 1);
  for (std::size_t j = 0; j < d; ++j) terms[j] = coefficients.term(j);
  terms[d] = {PriorKind::flat, 0.0, 1.0, 0.0};
  return {PriorKind::gaussian, 1.0, std::move(terms)};
}

}  // namespace flymc
