#include "flymc/mcmc/pdmp/bounds.hpp"

#include <algorithm>
#include <cmath>

#include "flymc/core/parallel.hpp"
#include "flymc/kernels/kernels.hpp"

namespace flymc::pdmp {

double datum_coef(const SingleIndexFamily& family, double y, double dot) noexcept {
  double d[2];
  family.derivatives(y, dot, 1, d);
  return -d[1];
}

double PdmpConstants::prior_grad(std::size_t j, const double* theta) const noexcept {
  if (q.size() == 0) return precision * theta[j];
  return q.row(static_cast<Eigen::Index>(j)).dot(Eigen::Map<const Vec>(theta, q.cols()));
}

void PdmpConstants::add_prior_grad(const double* theta, double* g) const noexcept {
  if (q.size() == 0) {
    for (std::size_t j = 0; j < p; ++j) g[j] += precision * theta[j];
    return;
  }
  const auto pp = static_cast<Eigen::Index>(p);
  Eigen::Map<Vec>(g, pp).noalias() += q * Eigen::Map<const Vec>(theta, pp);
}

PdmpConstants PdmpConstants::make(const Dataset& ds, const SingleIndexFamily& family,
                                  double precision, const Vec& theta_map, const Mat& q) {
  PdmpConstants c;
  c.n = ds.n();
  c.p = ds.d();
  c.m1 = family.m1().value_or(0.0);
  c.m2 = family.m2().value_or(0.0);
  c.precision = precision;
  c.q = q;
  c.slope.assign(c.p, c.precision);
  if (q.size() != 0)
    for (std::size_t j = 0; j < c.p; ++j)
      c.slope[j] = q.row(static_cast<Eigen::Index>(j)).cwiseAbs().sum();
  c.norm.resize(c.n);
  c.theta_map.assign(theta_map.data(), theta_map.data() + c.p);
  c.grad_lik_map.assign(c.p, 0.0);
  c.coef_map.resize(c.n);
  AlignedBuffer tp = aligned_zeros(ds.stride()), buf = aligned_zeros(ds.stride());
  std::copy(c.theta_map.begin(), c.theta_map.end(), tp.get());
  const auto y = ds.y();
  for (std::size_t i = 0; i < c.n; ++i) {
    const double* x = ds.row_f64(i, buf.get());
    double norm2 = 0.0;
    for (std::size_t j = 0; j < c.p; ++j) norm2 += x[j] * x[j];
    const double norm = std::sqrt(norm2);
    c.norm[i] = norm;
    c.sum_norm += norm;
    c.max_norm = std::max(c.max_norm, norm);
    c.coef_map[i] = datum_coef(family, y[i], kernels::dot(x, tp.get(), ds.stride()));
    for (std::size_t j = 0; j < c.p; ++j) c.grad_lik_map[j] += c.coef_map[i] * x[j];
  }
  return c;
}

void PdmpConstants::fill_curvature(const Dataset& ds) {
  using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  const auto pp = static_cast<Eigen::Index>(p);
  curvature = Mat::Zero(pp, pp);
  for (std::size_t lo = 0; lo < n; lo += kReduceGrain) {  // in chunks: rows may be floats
    const std::size_t hi = std::min(n, lo + kReduceGrain);
    const RowsF64 rows = ds.rows(lo, hi);
    const Eigen::Map<const RowMat, 0, Stride> x(rows.data(), static_cast<Eigen::Index>(hi - lo), pp,
                                                Stride(static_cast<Eigen::Index>(ds.stride())));
    curvature.selfadjointView<Eigen::Lower>().rankUpdate(x.transpose(), m2);
  }
  curvature = curvature.selfadjointView<Eigen::Lower>();
  if (q.size() == 0) {
    curvature.diagonal().array() += precision;
  } else {
    curvature += q;
  }
}

void PdmpConstants::fill_zigzag(const Dataset& ds, bool control_variates) {
  pick.assign(p, AliasTable());
  std::vector<double> w(n);
  for (std::size_t j = 0; j < p; ++j) {
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      w[i] = std::fabs(ds.value(i, j)) * (control_variates ? norm[i] : 1.0);
      total += w[i];
    }
    if (total > 0.0) pick[j] = AliasTable(w);
  }
}

void PdmpConstants::fill_lipsbps() { by_norm = sum_norm > 0.0 ? AliasTable(norm) : AliasTable(); }

AffineBound bps_curvature_bound(const PdmpConstants& c, const double* g, const double* w) noexcept {
  const auto pp = static_cast<Eigen::Index>(c.p);
  const Eigen::Map<const Vec> wv(w, pp), gv(g, pp);
  return {wv.dot(gv), wv.dot(c.curvature * wv)};
}

AffineBound bps_bound(const PdmpConstants& c, double lik, const double* theta,
                      const double* w) noexcept {
  double ww = 0.0;
  for (std::size_t j = 0; j < c.p; ++j) ww += w[j] * w[j];
  if (c.q.size() == 0) {
    double wt = 0.0;
    for (std::size_t j = 0; j < c.p; ++j) wt += w[j] * theta[j];
    return {std::sqrt(ww) * lik + c.precision * wt, c.precision * ww};
  }
  const auto pp = static_cast<Eigen::Index>(c.p);
  const Eigen::Map<const Vec> wv(w, pp), tv(theta, pp);
  const Vec qw = c.q * wv;  // Q symmetric: wᵀQθ = (Qw)·θ
  return {std::sqrt(ww) * lik + qw.dot(tv), qw.dot(wv)};
}

AffineBound zigzag_ss_bound(const PdmpConstants& c, std::size_t j, const double* theta,
                            const double* v) noexcept {
  const double lik = c.m1 * c.pick_total(j);
  if (c.q.size() == 0) {
    const double lam = c.precision;
    return {lik + lam * v[j] * theta[j], lam};
  }
  return {lik + v[j] * c.prior_grad(j, theta), c.slope[j]};
}

AffineBound zigzag_cv_bound(const PdmpConstants& c, std::size_t j, const double* theta,
                            const double* v, double dist) noexcept {
  const double prior =
      c.q.size() == 0 ? c.precision * v[j] * theta[j] : v[j] * c.prior_grad(j, theta);
  const double cj = c.m2 * c.pick_total(j);
  return {prior + v[j] * c.grad_lik_map[j] + cj * dist,
          c.slope[j] + cj * std::sqrt(static_cast<double>(c.p))};
}

}  // namespace flymc::pdmp
