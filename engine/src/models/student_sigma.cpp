#include "flymc/models/student_sigma.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "global_sums.hpp"
#include "model_checks.hpp"
#include "newton.hpp"
#include "padded_objective.hpp"

namespace flymc {
namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowsMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;

/// |ρ| beyond which log1p(ρ²) is taken as 2·log|ρ| (equal to double precision; ρ² would
/// overflow near 2^512).
constexpr double kBig = 0x1p500;

using Part = detail::GlobalSums;

/// W = Σ w_n and Σ w_n (y_n − o_n)², summed over the data (over every part of a shard), each
/// response checked to be finite.
struct RowSums {
  double w = 0.0, wr2 = 0.0;
  static constexpr const char* kWhat = "Student-t regression";
  void pack(PackedSums& p) const { p.scalar(w).scalar(wr2); }
  static RowSums unpack(SumsReader& r) {
    RowSums s;
    s.w = r.scalar();
    s.wr2 = r.scalar();
    return s;
  }
};

RowSums response_sums(const Dataset& ds) {
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;
  const auto y = ds.y(), w = ds.weights(), o = ds.offsets();
  return fold_sums(
      ds, RowSums{},
      [&](std::size_t lo, std::size_t hi) {
        RowSums s;
        for (std::size_t i = lo; i < hi; ++i) {
          if (!std::isfinite(y[i]))
            throw DataError(ds.source() + ": row " + std::to_string(first + i + 1) +
                            ": field 1 (response): must be finite");
          const double wi = w.empty() ? 1.0 : w[i], r = y[i] - (o.empty() ? 0.0 : o[i]);
          s.w += wi;
          s.wr2 += wi * r * r;
        }
        return s;
      },
      [](RowSums acc, const RowSums& p) {
        acc.w += p.w;
        acc.wr2 += p.wr2;
        return acc;
      });
}

}  // namespace

StudentTSigmaModel::StudentTSigmaModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
    : data_(std::move(data)),
      nu_(cfg.student_nu),
      a_(0.5 * (cfg.student_nu + 1.0)),
      sigma_prior_(parse_scale_prior(cfg.prior_sigma)),
      global_(std::make_shared<const StudentTScaleFamily>(cfg.student_nu, sigma_prior_)) {
  if (!data_ || data_->total_n() == 0 || data_->d() == 0)
    throw DataError("Student-t regression needs at least one row and one feature");
  const Dataset& ds = *data_;
  if (!ds.trials().empty())
    throw ConfigError(ds.source() + ": Student-t regression does not read trials (--trials)");
  const RowSums sums = response_sums(ds);
  w_ = sums.w;
  detail::check_features(ds, "Student-t regression");
  d_ = ds.d();
  stride_ = (d_ + 1 + 7) / 8 * 8;
  coefficient_prior_ = prior_of(cfg, d_);
  prior_ = with_flat_global(coefficient_prior_, d_);
  // As σ grows each datum's density falls like 1/σ, as the Gaussian's: with a flat prior on σ
  // and k flat coefficients the posterior is proper only for W > k + 1.
  std::size_t flat = 0;
  for (std::size_t j = 0; j < d_; ++j) flat += coefficient_prior_.term(j).kind == PriorKind::flat;
  if (sigma_prior_.kind == ScalePrior::Kind::flat && !(w_ > static_cast<double>(flat) + 1.0))
    throw ConfigError("Student-t regression: with flat priors on sigma and on " +
                      std::to_string(flat) +
                      " coefficients the posterior is improper unless the total weight of the "
                      "rows exceeds " +
                      std::to_string(flat + 1) + " (it is " + number_text(w_) +
                      "); give sigma a proper prior (--prior-sigma)");
  log_norm_ =
      w_ * (std::lgamma(a_) - std::lgamma(0.5 * nu_) - 0.5 * std::log(std::numbers::pi * nu_));
  rms_ = std::sqrt(sums.wr2 / w_);
  if (!(rms_ > 0.0) || !std::isfinite(rms_)) rms_ = 1.0;
  blas::use_single_thread();
}

std::vector<std::string> StudentTSigmaModel::param_names() const {
  std::vector<std::string> names = coefficient_names(*data_);
  names.emplace_back("sigma");
  return names;
}

double StudentTSigmaModel::objective(const Vec& theta, Vec* grad, Mat* hess, Mat* fisher) const {
  const auto d = static_cast<Eigen::Index>(d_);
  const double sigma = theta[d];
  if (!(sigma > 0.0) || !std::isfinite(sigma)) {
    if (grad != nullptr) grad->setZero(d + 1);
    return -std::numeric_limits<double>::infinity();
  }
  const Dataset& ds = *data_;
  const double a = a_, sqrt_c = sigma * std::sqrt(nu_), inv_sqrt_c = 1.0 / sqrt_c,
               log_sqrt_c = std::log(sqrt_c);
  const Vec beta = theta.head(d);
  const bool want_g = grad != nullptr, want_h = hess != nullptr, want_e = fisher != nullptr;
  Part init;
  if (want_g) init.g = Vec::Zero(d + 1);
  if (want_h) init.h = Mat::Zero(d + 1, d + 1);
  if (want_e) init.e = Mat::Zero(d + 1, d + 1);
  const Part rows = fold_sums(
      ds, init,
      [&](std::size_t lo, std::size_t hi) {
        const auto m = static_cast<Eigen::Index>(hi - lo);
        const RowsF64 block = ds.rows(lo, hi);
        const RowsMap x(block.data(), m, d, Eigen::OuterStride<>(ds.stride()));
        const Vec eta = x * beta;
        const auto y = ds.y(), w = ds.weights(), o = ds.offsets();
        Vec ga(want_g ? m : 0), hb(want_h ? m : 0), hc(want_h ? m : 0), ew(want_e ? m : 0);
        Part p = init;
        double f_s = 0.0, f_ss = 0.0;
        for (Eigen::Index i = 0; i < m; ++i) {
          const std::size_t n = lo + static_cast<std::size_t>(i);
          const double wn = w.empty() ? 1.0 : w[n];
          const double r = y[n] - (o.empty() ? 0.0 : o[n]) - eta[i], rho = r * inv_sqrt_c;
          const bool big = std::fabs(rho) > kBig;  // (ρ itself may overflow: log|r| − log √c)
          p.f -=
              wn * a * (big ? 2.0 * (std::log(std::fabs(r)) - log_sqrt_c) : std::log1p(rho * rho));
          // q = 1/(1 + ρ²) and ρq, ρ²q without forming ρ² where it would overflow.
          const double q = big ? 0.0 : 1.0 / (1.0 + rho * rho);
          const double rq = big ? 1.0 / rho : rho * q, r2q = big ? 1.0 : rho * rho * q;
          if (want_g) {
            ga[i] = wn * 2.0 * a * inv_sqrt_c * rq;
            f_s += wn * (2.0 * a * r2q - 1.0) / sigma;
          }
          if (want_h) {
            hb[i] = -wn * 2.0 * a * inv_sqrt_c * inv_sqrt_c * q * (1.0 - r2q - r2q);
            hc[i] = -wn * 4.0 * a * inv_sqrt_c / sigma * rq * q;
            f_ss += wn * (1.0 - 2.0 * a * r2q - 4.0 * a * r2q * q) / (sigma * sigma);
          }
          if (want_e) ew[i] = wn;
        }
        if (want_g) {
          p.g.head(d).noalias() = x.transpose() * ga;
          p.g[d] = f_s;
        }
        if (want_h) {
          p.h.topLeftCorner(d, d).noalias() = x.transpose() * (hb.asDiagonal() * x);
          p.h.col(d).head(d).noalias() = x.transpose() * hc;
          p.h(d, d) = f_ss;
        }
        if (want_e) p.e.topLeftCorner(d, d).noalias() = x.transpose() * (ew.asDiagonal() * x);
        return p;
      },
      [](Part acc, const Part& p) { return acc += p; });
  const double f = rows.f + log_norm_ - w_ * std::log(sigma) + sigma_prior_.log_density(sigma);
  if (want_g) {
    *grad = rows.g;
    (*grad)[d] += sigma_prior_.gradient(sigma);
  }
  if (want_h) {
    *hess = rows.h;
    hess->row(d).head(d) = hess->col(d).head(d).transpose();
    (*hess)(d, d) -= sigma_prior_.map_curvature(sigma);
  }
  if (want_e) {
    // Per datum the expected information is (ν + 1)/((ν + 3)σ²) for the location and
    // 2ν/((ν + 3)σ²) for σ, with no cross term.
    *fisher = -(nu_ + 1.0) / ((nu_ + 3.0) * sigma * sigma) * rows.e;
    (*fisher)(d, d) = -2.0 * nu_ * w_ / ((nu_ + 3.0) * sigma * sigma);
  }
  return f;
}

double StudentTSigmaModel::log_lik(const double* theta) const {
  return detail::padded_objective(d_ + 1, theta, nullptr,
                                  [this](auto&&... a) { return objective(a...); });
}

double StudentTSigmaModel::log_lik_grad(const double* theta, double* grad) const {
  return detail::padded_objective(d_ + 1, theta, grad,
                                  [this](auto&&... a) { return objective(a...); });
}

MapResult StudentTSigmaModel::find_map(double tol, int max_iter) const {
  // From β = 0 and σ the responses' root mean square; where the likelihood is not log-concave
  // the steps take the expected information (objective's `fisher`).
  Vec t = Vec::Zero(static_cast<Eigen::Index>(d_ + 1));
  t[static_cast<Eigen::Index>(d_)] = std::log(rms_);
  return detail::map_in_log_global(
      [this](const Vec& th, Vec* g, Mat* h, Mat* e) { return objective(th, g, h, e); }, prior_,
      coefficient_prior_, std::move(t), 0.0, tol, max_iter, "Student-t regression");
}

}  // namespace flymc
