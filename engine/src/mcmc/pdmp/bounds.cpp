#include "flymc/mcmc/pdmp/bounds.hpp"

#include <algorithm>
#include <cmath>

#include "flymc/kernels/kernels.hpp"

namespace flymc::pdmp {

double logistic_coef(double label, double dot) noexcept {
  return -label * std::exp(kernels::log_sigmoid(-label * dot));
}

LogisticPdmpConstants LogisticPdmpConstants::make(const LogisticModel& model, const Vec& theta_map,
                                                  const std::vector<double>& weight) {
  const Dataset& ds = model.data();
  LogisticPdmpConstants c;
  c.n = ds.n();
  c.p = model.dim();
  c.precision = model.prior().precision();
  c.weight = weight.empty() ? std::vector<double>(c.p, 1.0) : weight;
  c.max_abs.assign(c.p, 0.0);
  c.cv.assign(c.p, 0.0);
  c.theta_map.assign(theta_map.data(), theta_map.data() + c.p);
  c.grad_lik_map.assign(c.p, 0.0);
  c.coef_map.resize(c.n);
  AlignedBuffer tp = aligned_zeros(ds.stride());
  std::copy(c.theta_map.begin(), c.theta_map.end(), tp.get());
  const auto y = ds.y();
  for (std::size_t i = 0; i < c.n; ++i) {
    const double* x = ds.row(i);
    double norm2 = 0.0;
    for (std::size_t j = 0; j < c.p; ++j) norm2 += x[j] * x[j];
    const double norm = std::sqrt(norm2);
    c.sum_norm += norm;
    c.max_norm = std::max(c.max_norm, norm);
    for (std::size_t j = 0; j < c.p; ++j) {
      c.max_abs[j] = std::max(c.max_abs[j], std::fabs(x[j]));
      c.cv[j] = std::max(c.cv[j], std::fabs(x[j]) * norm);
    }
    c.coef_map[i] = logistic_coef(y[i], kernels::dot(x, tp.get(), ds.stride()));
    for (std::size_t j = 0; j < c.p; ++j) c.grad_lik_map[j] += c.coef_map[i] * x[j];
  }
  const double quarter_n = 0.25 * static_cast<double>(c.n);
  for (double& v : c.cv) v *= quarter_n;
  return c;
}

AffineBound bps_bound(const LogisticPdmpConstants& c, double lik, const double* theta,
                      const double* w) noexcept {
  // wt = wᵀQθ/precision and wlw = wᵀQw/precision: the weight multiplies first, so that unit
  // weights leave the sums as the scalar prior's.
  double wt = 0.0, ww = 0.0, wlw = 0.0;
  for (std::size_t j = 0; j < c.p; ++j) {
    const double lw = c.weight[j] * w[j];
    wt += lw * theta[j];
    ww += w[j] * w[j];
    wlw += lw * w[j];
  }
  return {std::sqrt(ww) * lik + c.precision * wt, c.precision * wlw};
}

AffineBound zigzag_ss_bound(const LogisticPdmpConstants& c, std::size_t j, const double* theta,
                            const double* v) noexcept {
  const double lam = c.prec(j);
  return {static_cast<double>(c.n) * c.max_abs[j] + lam * v[j] * theta[j], lam};
}

AffineBound zigzag_cv_bound(const LogisticPdmpConstants& c, std::size_t j, const double* theta,
                            const double* v, double dist) noexcept {
  const double lam = c.prec(j);
  return {lam * v[j] * theta[j] + v[j] * c.grad_lik_map[j] + c.cv[j] * dist,
          lam + c.cv[j] * std::sqrt(static_cast<double>(c.p))};
}

}  // namespace flymc::pdmp
