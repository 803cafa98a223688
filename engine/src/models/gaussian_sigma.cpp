#include "flymc/models/gaussian_sigma.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/data/row_fold.hpp"
#include "model_checks.hpp"
#include "newton.hpp"
#include "padded_objective.hpp"

namespace flymc {
namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowsMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;

/// Rows [lo, hi) of `ds`: their features (a view of the chunk's doubles), weights and responses
/// less offsets.
struct Chunk {
  RowsF64 rows;
  Vec w, y;
  RowsMap x() const noexcept {
    return {rows.data(), w.size(), static_cast<Eigen::Index>(d), Eigen::OuterStride<>(stride)};
  }
  std::size_t d, stride;
};

Chunk chunk(const Dataset& ds, std::size_t lo, std::size_t hi) {
  const auto m = static_cast<Eigen::Index>(hi - lo);
  Chunk c{ds.rows(lo, hi), Vec::Ones(m), Vec(m), ds.d(), ds.stride()};
  const auto w = ds.weights(), o = ds.offsets(), y = ds.y();
  for (Eigen::Index i = 0; i < m; ++i) {
    const std::size_t n = lo + static_cast<std::size_t>(i);
    if (!w.empty()) c.w[i] = w[n];
    c.y[i] = y[n] - (o.empty() ? 0.0 : o[n]);
  }
  return c;
}

/// W, A and b (the first pass), as doubles for the processes of a sharded data set (row_fold.hpp).
struct Gram {
  double w = 0.0;
  Mat a;
  Vec b;
  static constexpr const char* kWhat = "Gaussian regression";
  void pack(PackedSums& p) const { p.scalar(w).matrix(a).array(b); }
  static Gram unpack(SumsReader& r) {
    Gram g;
    g.w = r.scalar();
    g.a = r.matrix<Mat>();
    const std::vector<double> b = r.array();
    g.b = Eigen::Map<const Vec>(b.data(), static_cast<Eigen::Index>(b.size()));
    return g;
  }
};

/// The first pass over the data (every part of a shard).
Gram gram_pass(const Dataset& ds) {
  const auto d = static_cast<Eigen::Index>(ds.d());
  Gram init{0.0, Mat::Zero(d, d), Vec::Zero(d)};
  return fold_sums(
      ds, init,
      [&](std::size_t lo, std::size_t hi) {
        const Chunk c = chunk(ds, lo, hi);
        const RowMat wx = c.w.asDiagonal() * c.x();
        return Gram{c.w.sum(), c.x().transpose() * wx, wx.transpose() * c.y};
      },
      [](Gram acc, const Gram& g) {
        acc.w += g.w;
        acc.a += g.a;
        acc.b += g.b;
        return acc;
      });
}

/// Q(β) = Σ_n w_n (y_n − o_n − x_n·β)² (the second pass).
double residual_pass(const Dataset& ds, const Vec& beta) {
  return sum_rows(ds, [&](std::size_t lo, std::size_t hi) {
    const Chunk c = chunk(ds, lo, hi);
    const Vec r = c.y - c.x() * beta;
    return c.w.dot(r.cwiseProduct(r));
  });
}

}  // namespace

GaussianSigmaModel::GaussianSigmaModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
    : data_(std::move(data)), sigma_prior_(parse_scale_prior(cfg.prior_sigma)) {
  if (!data_ || data_->total_n() == 0 || data_->d() == 0)
    throw DataError("Gaussian regression needs at least one row and one feature");
  const Dataset& ds = *data_;
  // Every part of a shard checks its rows; an error on any is thrown on all (the first's).
  agree_on_parts(ds, [&] {
    if (!ds.trials().empty())
      throw ConfigError(ds.source() + ": Gaussian regression does not read trials (--trials)");
    const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;
    for (std::size_t i = 0; i < ds.n(); ++i)
      if (!std::isfinite(ds.y()[i]))
        throw DataError(ds.source() + ": row " + std::to_string(first + i + 1) +
                        ": field 1 (response): must be finite");
    detail::check_features(ds, "Gaussian regression");
  });
  d_ = ds.d();
  stride_ = (d_ + 1 + 7) / 8 * 8;
  coefficient_prior_ = prior_of(cfg, d_);
  const Prior& coefficients = coefficient_prior_;
  prior_ = with_flat_global(coefficients, d_);
  const Gram g = gram_pass(ds);
  w_ = g.w;
  a_ = g.a;
  // With a flat prior on σ, p(σ | data) ∝ σ^−(W − k) far out (k flat coefficients integrated
  // out): proper only for W > k + 1.
  std::size_t flat = 0;
  for (std::size_t j = 0; j < d_; ++j) flat += coefficients.term(j).kind == PriorKind::flat;
  if (sigma_prior_.kind == ScalePrior::Kind::flat && !(w_ > static_cast<double>(flat) + 1.0))
    throw ConfigError("Gaussian regression: with flat priors on sigma and on " +
                      std::to_string(flat) +
                      " coefficients the posterior is improper unless the "
                      "total weight of the rows exceeds " +
                      std::to_string(flat + 1) + " (it is " + number_text(w_) +
                      "); give sigma a proper prior (--prior-sigma)");
  // β̃: the fit under the priors' Gaussian stand-ins, a well-conditioned reference point for Q.
  const auto d = static_cast<Eigen::Index>(d_);
  Mat h = a_;
  Vec rhs = g.b;
  for (Eigen::Index j = 0; j < d; ++j) {
    const PriorTerm t = coefficients.term(static_cast<std::size_t>(j));
    h(j, j) += t.precision();
    rhs[j] += t.precision() * t.loc;
  }
  const Eigen::LDLT<Mat> ldlt(h);
  ref_ = ldlt.info() == Eigen::Success ? Vec(ldlt.solve(rhs)) : Vec(Vec::Zero(d));
  if (!ref_.allFinite()) ref_.setZero();
  ref_grad_ = g.b - a_ * ref_;
  ref_q_ = residual_pass(ds, ref_);
  blas::use_single_thread();
}

std::vector<std::string> GaussianSigmaModel::param_names() const {
  std::vector<std::string> names = coefficient_names(*data_);
  names.emplace_back("sigma");
  return names;
}

double GaussianSigmaModel::residual_sum(const double* beta) const {
  const auto d = static_cast<Eigen::Index>(d_);
  const Vec delta = Eigen::Map<const Vec>(beta, d) - ref_;
  const double q = ref_q_ - 2.0 * delta.dot(ref_grad_) + delta.dot(a_ * delta);
  return std::max(q, 0.0);  // rounding below an exact fit's 0
}

double GaussianSigmaModel::objective(const Vec& theta, Vec* grad, Mat* neg_hess) const {
  const auto d = static_cast<Eigen::Index>(d_);
  const double sigma = theta[d];
  if (!(sigma > 0.0) || !std::isfinite(sigma)) {
    if (grad != nullptr) grad->setZero(d + 1);
    return -std::numeric_limits<double>::infinity();
  }
  const Vec delta = theta.head(d) - ref_;
  const Vec ad = a_ * delta;
  const double q = std::max(ref_q_ - 2.0 * delta.dot(ref_grad_) + delta.dot(ad), 0.0);
  const double s2 = sigma * sigma;
  const double f = -w_ * std::log(sigma) - 0.5 * q / s2 + sigma_prior_.log_density(sigma);
  if (grad != nullptr) {
    grad->resize(d + 1);
    grad->head(d) = (ref_grad_ - ad) / s2;
    (*grad)[d] = -w_ / sigma + q / (s2 * sigma) + sigma_prior_.gradient(sigma);
  }
  if (neg_hess != nullptr) {
    neg_hess->resize(d + 1, d + 1);
    neg_hess->topLeftCorner(d, d) = a_ / s2;
    const Vec cross = -2.0 * (ref_grad_ - ad) / (s2 * sigma);
    neg_hess->col(d).head(d) = cross;
    neg_hess->row(d).head(d) = cross.transpose();
    (*neg_hess)(d, d) = 3.0 * q / (s2 * s2) - w_ / s2 + sigma_prior_.map_curvature(sigma);
  }
  return f;
}

double GaussianSigmaModel::log_lik(const double* theta) const {
  return detail::padded_objective(d_ + 1, theta, nullptr,
                                  [this](auto&&... a) { return objective(a...); });
}

double GaussianSigmaModel::log_lik_grad(const double* theta, double* grad) const {
  return detail::padded_objective(d_ + 1, theta, grad,
                                  [this](auto&&... a) { return objective(a...); });
}

MapResult GaussianSigmaModel::find_map(double tol, int max_iter) const {
  const Stopwatch clock;
  const auto d = static_cast<Eigen::Index>(d_), p = d + 1;
  const auto log_post = [&](const Vec& th, Vec* g, Mat* h) {
    double f = objective(th, g, h);
    f += prior_.log_density(th.data(), d_ + 1);
    if (g != nullptr) prior_.add_gradient(th.data(), d_ + 1, g->data());
    if (h != nullptr)
      for (Eigen::Index j = 0; j < d; ++j)
        (*h)(j, j) += prior_.map_curvature(static_cast<std::size_t>(j), th[j]);
    return f;
  };
  MapResult r;
  r.theta = Vec(p);
  r.theta.head(d) = ref_;
  r.theta[d] = std::sqrt(std::max(ref_q_, 1e-300) / std::max(w_, 1.0));  // σ's fit at β̃
  Vec g;
  Mat h;
  double f = log_post(r.theta, &g, &h);
  // σ's curvature 3Q/σ⁴ − W/σ² is negative far from the mode: the steps take at least W/σ².
  r.iterations = detail::newton_with_global(
      log_post, [this, d](const Vec& th) { return w_ / (th[d] * th[d]); }, r.theta, f, g, h, tol,
      max_iter);
  r.log_post = f;
  const Eigen::LLT<Mat> llt(h);
  detail::check_laplace_precision(coefficient_prior_, llt, "Gaussian regression");
  r.covariance = llt.solve(Mat::Identity(p, p));
  r.covariance = 0.5 * (r.covariance + r.covariance.transpose());
  r.passes = 2;
  r.curvature_passes = 1;
  r.seconds = clock.seconds();
  return r;
}

}  // namespace flymc
