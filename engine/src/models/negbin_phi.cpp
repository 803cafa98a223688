#include "flymc/models/negbin_phi.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <string>

#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/models/family.hpp"
#include "gamma_series.hpp"
#include "global_sums.hpp"
#include "model_checks.hpp"
#include "newton.hpp"
#include "padded_objective.hpp"

namespace flymc {
namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowsMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;

using Part = detail::GlobalSums;

/// The weighted counts of the data (over every part of a shard): Σ w_n y_n, the weight of each
/// count up to `exact` (the larger ones together in the last slot) and of each larger count.
struct CountSums {
  double wy = 0.0;
  std::vector<double> at;
  std::map<double, double> big;
  static constexpr const char* kWhat = "negative binomial regression";
  void pack(PackedSums& p) const {
    std::vector<double> pairs;
    for (const auto& [y, w] : big) pairs.insert(pairs.end(), {y, w});
    p.scalar(wy).array(at).array(pairs);
  }
  static CountSums unpack(SumsReader& r) {
    CountSums s;
    s.wy = r.scalar();
    s.at = r.array();
    const std::vector<double> pairs = r.array();
    for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) s.big[pairs[i]] = pairs[i + 1];
    return s;
  }
  CountSums& operator+=(const CountSums& o) {
    wy += o.wy;
    for (std::size_t j = 0; j < at.size(); ++j) at[j] += o.at[j];
    for (const auto& [y, w] : o.big) big[y] += w;
    return *this;
  }
};

/// CountSums of `ds`, each response checked to be a count.
CountSums count_sums(const Dataset& ds, int exact) {
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;
  const auto y = ds.y(), w = ds.weights();
  const NegBinomialFamily family(1.0);  // its check_label: the counts' domain
  CountSums init;
  init.at.assign(static_cast<std::size_t>(exact) + 1, 0.0);
  return fold_sums(
      ds, init,
      [&](std::size_t lo, std::size_t hi) {
        CountSums s = init;
        for (std::size_t i = lo; i < hi; ++i) {
          if (const std::string why = family.check_label(y[i]);
              !why.empty() || !std::isfinite(y[i]))
            throw DataError(ds.source() + ": row " + std::to_string(first + i + 1) +
                            ": field 1 (response): " + (why.empty() ? "must be finite" : why));
          const double wi = w.empty() ? 1.0 : w[i];
          s.wy += wi * y[i];
          s.at[static_cast<std::size_t>(std::min(y[i], double(exact)))] += wi;
          if (y[i] > exact) s.big[y[i]] += wi;
        }
        return s;
      },
      [](CountSums acc, const CountSums& p) { return acc += p; });
}

}  // namespace

NegBinomialPhiModel::NegBinomialPhiModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
    : data_(std::move(data)),
      phi_prior_(parse_scale_prior(cfg.prior_phi, "--prior-phi")),
      global_(std::make_shared<const NegBinomialDispersionFamily>(phi_prior_)) {
  if (!data_ || data_->total_n() == 0 || data_->d() == 0)
    throw DataError("negative binomial regression needs at least one row and one feature");
  const Dataset& ds = *data_;
  if (!ds.trials().empty())
    throw ConfigError(ds.source() + ": negative binomial regression does not read trials");
  if (phi_prior_.kind == ScalePrior::Kind::flat)
    throw ConfigError("--prior-phi flat: the posterior would be improper; give phi a proper prior");
  detail::check_features(ds, "negative binomial regression");
  d_ = ds.d();
  stride_ = (d_ + 1 + 7) / 8 * 8;
  coefficient_prior_ = prior_of(cfg, d_);
  prior_ = with_flat_global(coefficient_prior_, d_);
  // The weight of each count up to kExact (the larger ones together in the last slot), then
  // tail_[j], the weight of the counts above j, as the sums from the top.
  const CountSums counts = count_sums(ds, kExact);
  wy_ = counts.wy;
  const std::vector<double>& at = counts.at;
  tail_.assign(kExact, 0.0);
  double above = 0.0;
  for (std::size_t j = kExact; j-- > 0;) tail_[j] = above += at[j + 1];
  big_.assign(counts.big.begin(), counts.big.end());
  blas::use_single_thread();
}

std::vector<std::string> NegBinomialPhiModel::param_names() const {
  std::vector<std::string> names = coefficient_names(*data_);
  names.emplace_back("phi");
  return names;
}

NegBinomialPhiModel::GammaTerms NegBinomialPhiModel::gamma_terms(double phi) const noexcept {
  GammaTerms t{0.0, 0.0, 0.0};
  for (int j = 0; j < kExact; ++j) {
    const double c = tail_[static_cast<std::size_t>(j)];
    if (c == 0.0) break;  // the tail counts only fall
    const double inv = 1.0 / (phi + j);
    t.f += c * std::log(phi + j);
    t.d1 += c * inv;
    t.d2 -= c * inv * inv;
  }
  const double from = phi + kExact;
  for (const auto& [y, w] : big_) {
    t.f += w * (detail::log_gamma_large(y + phi) - detail::log_gamma_large(from));
    t.d1 += w * (detail::digamma_large(y + phi) - detail::digamma_large(from));
    t.d2 += w * (detail::trigamma_large(y + phi) - detail::trigamma_large(from));
  }
  return t;
}

double NegBinomialPhiModel::objective(const Vec& theta, Vec* grad, Mat* hess) const {
  const auto d = static_cast<Eigen::Index>(d_);
  const double phi = theta[d];
  if (!(phi > 0.0) || !std::isfinite(phi)) {
    if (grad != nullptr) grad->setZero(d + 1);
    return -std::numeric_limits<double>::infinity();
  }
  const Dataset& ds = *data_;
  const double log_phi = std::log(phi);
  const Vec beta = theta.head(d);
  const bool want_g = grad != nullptr, want_h = hess != nullptr;
  Part init;
  if (want_g) init.g = Vec::Zero(d + 1);
  if (want_h) init.h = Mat::Zero(d + 1, d + 1);
  const Part rows = fold_sums(
      ds, init,
      [&](std::size_t lo, std::size_t hi) {
        const auto m = static_cast<Eigen::Index>(hi - lo);
        const RowsF64 block = ds.rows(lo, hi);
        const RowsMap x(block.data(), m, d, Eigen::OuterStride<>(ds.stride()));
        Vec eta = x * beta;
        const auto y = ds.y(), w = ds.weights(), o = ds.offsets();
        Vec a(want_g ? m : 0), b(want_h ? m : 0), c(want_h ? m : 0);
        Part p = init;
        double f_phi = 0.0, f_phiphi = 0.0;
        for (Eigen::Index i = 0; i < m; ++i) {
          const std::size_t n = lo + static_cast<std::size_t>(i);
          const double yn = y[n], wn = w.empty() ? 1.0 : w[n];
          const double e = eta[i] + (o.empty() ? 0.0 : o[n]), u = e - log_phi;
          // softplus(u), s = σ(u) and v = s(1 − s) from e^(−|u|): no overflow, no 1 − s.
          const double ex = std::exp(-std::fabs(u)), inv = 1.0 / (1.0 + ex);
          const double sp = std::max(u, 0.0) + std::log1p(ex);
          const double s = u >= 0.0 ? inv : ex * inv, v = ex * inv * inv, k = yn + phi;
          p.f += wn * (yn * e - k * sp);
          if (want_g) {
            a[i] = wn * (yn - k * s);
            f_phi += wn * (k * s / phi - sp);
          }
          if (want_h) {
            b[i] = -wn * k * v;
            c[i] = wn * (k * v / phi - s);
            f_phiphi += wn * (2.0 * s - k * (s + v) / phi) / phi;
          }
        }
        if (want_g) {
          p.g.head(d).noalias() = x.transpose() * a;
          p.g[d] = f_phi;
        }
        if (want_h) {
          p.h.topLeftCorner(d, d).noalias() = x.transpose() * (b.asDiagonal() * x);
          p.h.col(d).head(d).noalias() = x.transpose() * c;
          p.h(d, d) = f_phiphi;
        }
        return p;
      },
      [](Part acc, const Part& p) { return acc += p; });
  const GammaTerms gt = gamma_terms(phi);
  double f = rows.f + gt.f - wy_ * log_phi + phi_prior_.log_density(phi);
  if (want_g) {
    *grad = rows.g;
    (*grad)[d] += gt.d1 - wy_ / phi + phi_prior_.gradient(phi);
  }
  if (want_h) {
    *hess = rows.h;
    hess->row(d).head(d) = hess->col(d).head(d).transpose();
    (*hess)(d, d) += gt.d2 + wy_ / (phi * phi) - phi_prior_.map_curvature(phi);
  }
  return f;
}

double NegBinomialPhiModel::log_lik(const double* theta) const {
  return detail::padded_objective(d_ + 1, theta, nullptr,
                                  [this](auto&&... a) { return objective(a...); });
}

double NegBinomialPhiModel::log_lik_grad(const double* theta, double* grad) const {
  return detail::padded_objective(d_ + 1, theta, grad,
                                  [this](auto&&... a) { return objective(a...); });
}

MapResult NegBinomialPhiModel::find_map(double tol, int max_iter) const {
  // From t = 0; log φ's curvature may be negative far from the mode: the steps take at least 1.
  return detail::map_in_log_global(
      [this](const Vec& th, Vec* g, Mat* h, Mat*) { return objective(th, g, h); }, prior_,
      coefficient_prior_, Vec::Zero(static_cast<Eigen::Index>(d_ + 1)), 1.0, tol, max_iter,
      "negative binomial regression");
}

}  // namespace flymc
