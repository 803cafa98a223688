#include "flymc/models/global_model.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "flymc/core/blas.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/data/row_fold.hpp"
#include "global_sums.hpp"
#include "model_checks.hpp"
#include "newton.hpp"
#include "padded_objective.hpp"

namespace flymc {
namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowsMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;

using Part = detail::GlobalSums;

/// Throws DataError naming the first row (of the whole data set) whose response is not finite or
/// the family refuses; collective on a shard.
void check_responses(const Dataset& ds, const GlobalFamily& family) {
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;
  const auto y = ds.y();
  (void)sum_rows(ds, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      const std::string why = std::isfinite(y[i]) ? family.check_response(y[i]) : "must be finite";
      if (!why.empty())
        throw DataError(ds.source() + ": row " + std::to_string(first + i + 1) +
                        ": field 1 (response): " + number_text(y[i]) + " " + why + " for the " +
                        family.name() + " model");
    }
    return 0.0;
  });
}

}  // namespace

GlobalFamilyModel::GlobalFamilyModel(std::shared_ptr<const Dataset> data, const RunConfig& cfg)
    : data_(std::move(data)), family_(cfg.global_family) {
  if (!family_) throw ConfigError("a model with a global parameter needs its family");
  if (!data_ || data_->total_n() == 0 || data_->d() == 0)
    throw DataError("the " + family_->name() + " model needs at least one row and one feature");
  const Dataset& ds = *data_;
  if (!ds.trials().empty())
    throw ConfigError(ds.source() + ": the " + family_->name() +
                      " model does not read trials (--trials)");
  check_responses(ds, *family_);
  detail::check_features(ds, "the " + family_->name() + " model");
  d_ = ds.d();
  stride_ = (d_ + 1 + 7) / 8 * 8;
  coefficient_prior_ = prior_of(cfg, d_);
  prior_ = with_flat_global(coefficient_prior_, d_);
  blas::use_single_thread();
}

std::vector<std::string> GlobalFamilyModel::param_names() const {
  std::vector<std::string> names = coefficient_names(*data_);
  names.push_back(family_->param_name());
  return names;
}

double GlobalFamilyModel::objective(const Vec& theta, Vec* grad, Mat* hess) const {
  const auto d = static_cast<Eigen::Index>(d_);
  const double v = theta[d];
  if (!(v > 0.0) || !std::isfinite(v)) {
    if (grad != nullptr) grad->setZero(d + 1);
    return -std::numeric_limits<double>::infinity();
  }
  const Dataset& ds = *data_;
  const GlobalFamily& fam = *family_;
  const double s = std::log(v);
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
        const Vec eta = x * beta;
        const auto y = ds.y(), w = ds.weights(), o = ds.offsets();
        Vec fu(want_g ? m : 0), fuu(want_h ? m : 0), fus(want_h ? m : 0);
        Part p = init;
        for (Eigen::Index i = 0; i < m; ++i) {
          const std::size_t n = lo + static_cast<std::size_t>(i);
          const double wn = w.empty() ? 1.0 : w[n], u = eta[i] + (o.empty() ? 0.0 : o[n]);
          p.f += wn * fam.value(y[n], u, s);
          if (!want_g) continue;
          const GlobalExpansion e = fam.expand(y[n], u, s);
          fu[i] = wn * e.fu;
          p.g[d] += wn * e.fs;
          if (!want_h) continue;
          fuu[i] = wn * e.fuu;
          fus[i] = wn * e.fus;
          p.h(d, d) += wn * e.fss;
        }
        if (want_g) p.g.head(d).noalias() = x.transpose() * fu;
        if (want_h) {
          p.h.topLeftCorner(d, d).noalias() = x.transpose() * (fuu.asDiagonal() * x);
          p.h.col(d).head(d).noalias() = x.transpose() * fus;
        }
        return p;
      },
      [](Part acc, const Part& p) { return acc += p; });
  const ScalePrior& prior = family_->prior();
  const double f = rows.f + prior.log_density(v);
  if (std::isnan(f)) return -std::numeric_limits<double>::infinity();
  // From s to v = e^s: ∂/∂v = f_s/v, ∂²/∂β∂v = f_βs/v, ∂²/∂v² = (f_ss − f_s)/v².
  if (want_g) {
    *grad = rows.g;
    (*grad)[d] = rows.g[d] / v + prior.gradient(v);
  }
  if (want_h) {
    *hess = rows.h;
    hess->col(d).head(d) /= v;
    hess->row(d).head(d) = hess->col(d).head(d).transpose();
    (*hess)(d, d) = (rows.h(d, d) - rows.g[d]) / (v * v) - prior.map_curvature(v);
  }
  return f;
}

double GlobalFamilyModel::log_lik(const double* theta) const {
  return detail::padded_objective(d_ + 1, theta, nullptr,
                                  [this](auto&&... a) { return objective(a...); });
}

double GlobalFamilyModel::log_lik_grad(const double* theta, double* grad) const {
  return detail::padded_objective(d_ + 1, theta, grad,
                                  [this](auto&&... a) { return objective(a...); });
}

MapResult GlobalFamilyModel::find_map(double tol, int max_iter) const {
  return detail::map_in_log_global(
      [this](const Vec& th, Vec* g, Mat* h, Mat*) { return objective(th, g, h); }, prior_,
      coefficient_prior_, Vec::Zero(static_cast<Eigen::Index>(d_ + 1)), 1.0, tol, max_iter,
      "the " + family_->name() + " model");
}

}  // namespace flymc
