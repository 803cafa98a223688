// Scalable MH with a global parameter beside the coefficients (docs/math.md §8, the paragraph of
// that name): the set-up of z = (β, s) (each datum expanded in (u, s), the whitening, the bounds
// from the family's envelope). The run of a model that gives a GlobalFamily is in smh.cpp; its
// chains are SmhChain's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "../run/run_skeleton.hpp"
#include "flymc/core/blas.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/models/student_sigma.hpp"
#include "smh_chain.hpp"

namespace flymc::detail {
namespace {

using RowBlock =
    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
               Eigen::OuterStride<>>;

/// u_n = x_n·β̂ + o_n of rows [lo, hi) (widened in `xr`), β̂ padded to the data's stride.
std::vector<double> predictors(const Dataset& ds, const RowsF64& xr, std::size_t lo, std::size_t hi,
                               const double* beta_p) {
  std::vector<double> u(hi - lo);
  kernels::dots_packed(xr.data(), hi - lo, ds.stride(), beta_p, u.data());
  const auto off = ds.offsets();
  if (!off.empty())
    for (std::size_t i = 0; i < hi - lo; ++i) u[i] += off[lo + i];
  return u;
}

/// β̂ of z = (β̂, ŝ), padded to the data's stride.
AlignedBuffer padded_beta(const SmhStatistics& sh) {
  AlignedBuffer b = aligned_zeros(sh.data->stride());
  std::copy(sh.theta_hat.data(), sh.theta_hat.data() + sh.data->d(), b.get());
  return b;
}

/// The log-likelihood's gradient and negative Hessian in z at the expansion point, summed over
/// the data in chunk order.
struct ZSums {
  Mat h;  // (D + 1) × (D + 1), the coefficients' block in its upper triangle
  Mat g;  // (D + 1) × 1
  static constexpr const char* kWhat = "--algo smh";
  void pack(PackedSums& p) const { p.matrix(h).matrix(g); }
  static ZSums unpack(SumsReader& r) {
    ZSums s;
    s.h = r.matrix<Mat>();
    s.g = r.matrix<Mat>();
    return s;
  }
};

ZSums gradient_and_curvature(const SmhStatistics& sh) {
  const Dataset& ds = *sh.data;
  const AlignedBuffer beta = padded_beta(sh);
  const auto d = static_cast<Eigen::Index>(ds.d()), p = d + 1;
  return fold_sums(
      ds, ZSums{},
      [&](std::size_t lo, std::size_t hi) {
        const RowsF64 xr = ds.rows(lo, hi);
        const std::vector<double> u = predictors(ds, xr, lo, hi, beta.get());
        const auto m = static_cast<Eigen::Index>(hi - lo);
        Vec fu(m), fus(m);
        std::vector<double> w(hi - lo);
        ZSums part{Mat::Zero(p, p), Mat::Zero(p, 1)};
        for (Eigen::Index i = 0; i < m; ++i) {
          const auto n = static_cast<Index>(lo + static_cast<std::size_t>(i));
          const GlobalExpansion e = sh.global_expand(n, u[static_cast<std::size_t>(i)]);
          fu[i] = e.fu;
          fus[i] = -e.fus;
          w[static_cast<std::size_t>(i)] = -e.fuu;
          part.g(d, 0) += e.fs;
          part.h(d, d) -= e.fss;
        }
        const RowBlock x(xr.data(), m, d, Eigen::OuterStride<>(ds.stride()));
        Mat hb = Mat::Zero(d, d);
        add_weighted_outer(hb, ds, xr.data(), w);
        part.h.topLeftCorner(d, d) = hb;
        part.h.col(d).head(d) = x.transpose() * fus;
        part.g.col(0).head(d) = x.transpose() * fu;
        return part;
      },
      [](ZSums acc, const ZSums& part) {
        if (acc.h.size() == 0) return part;
        acc.h += part.h;
        acc.g += part.g;
        return acc;
      });
}

/// Each datum's record (û_n and φ_n = w_n·(A_n/6)·(λ‖x̃_n‖ + ‖ẽ‖)³, x̃_n = L⁻¹(x_n, 0), enlarged
/// by a relative 1e-9 and rounded up to a float) and R = max_n ‖x̃_n‖; then the candidate tables.
void global_bounds(SmhStatistics& sh) {
  const Dataset& ds = *sh.data;
  const std::size_t d = ds.d(), stride = ds.stride();
  const AlignedBuffer beta = padded_beta(sh);
  const Mat lb = sh.linv.topLeftCorner(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  const Vec last = sh.linv.row(static_cast<Eigen::Index>(d)).head(static_cast<Eigen::Index>(d));
  const double c = (1.0 + 1e-9) / 6.0 * std::exp(-sh.bound_excess);
  sh.datum.resize(ds.n());
  const auto y = ds.y(), w = ds.weights();
  const double reach2 = fold_rows(
      ds, 0.0,
      [&](std::size_t lo, std::size_t hi) {
        const RowsF64 xr = ds.rows(lo, hi);
        const std::vector<double> u = predictors(ds, xr, lo, hi, beta.get());
        AlignedBuffer z = aligned_zeros((hi - lo) * stride);
        std::copy(xr.data(), xr.data() + (hi - lo) * stride, z.get());
        blas::trmm_lower_rows(lb.data(), d, z.get(), hi - lo, stride);
        double r2 = 0.0;
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const double* zi = z.get() + i * stride;
          const double* xi = xr.data() + i * stride;
          double q = 0.0, l = 0.0;
          for (std::size_t j = 0; j < d; ++j) {
            q += zi[j] * zi[j];
            l += last[static_cast<Eigen::Index>(j)] * xi[j];
          }
          q += l * l;
          r2 = std::max(r2, q);
          const double norm = sh.eta_scale * std::sqrt(q) + sh.global_reach;
          const double scale = sh.global->envelope_scale(y[lo + i], u[i], sh.theta_hat[d]);
          const double wn = w.empty() ? 1.0 : w[lo + i];
          double exact = scale >= 0.0 ? c * wn * scale * norm * norm * norm : HUGE_VAL;
          auto up = static_cast<float>(exact);
          if (static_cast<double>(up) < exact)
            up = std::nextafter(up, std::numeric_limits<float>::infinity());
          sh.datum[lo + i] = SmhDatum{u[i], up, 1.0f};
        }
        return r2;
      },
      [](double a, double b) { return std::max(a, b); },
      [](double v) { return std::vector<double>{v}; },
      [](const std::vector<double>& v) { return v.at(0); });
  sh.reach = std::sqrt(reach2);
  candidate_tables(sh);
}

}  // namespace

GlobalExpansion SmhStatistics::global_expand(Index n, double u_hat) const noexcept {
  GlobalExpansion e = global->expand(data->y()[n], u_hat, theta_hat[theta_hat.size() - 1]);
  const auto w = data->weights();
  if (!w.empty()) {
    const double wn = w[n];
    e.fu *= wn;
    e.fs *= wn;
    e.fuu *= wn;
    e.fus *= wn;
    e.fss *= wn;
  }
  return e;
}

double SmhStatistics::global_remainder_change(Index n, const SmhDatum& d, double e, double k,
                                              double e2, double k2) const noexcept {
  const double y = data->y()[n], s_hat = theta_hat[theta_hat.size() - 1];
  const GlobalExpansion t = global->expand(y, d.u_hat, s_hat);
  // gap(h, k) = f(û + h, ŝ + k) − f(û, ŝ) − the expansion's linear and quadratic terms.
  const auto gap = [&](double h, double kk) {
    return global->change(y, d.u_hat, s_hat, h, kk) - (t.fu * h + t.fs * kk) -
           (0.5 * t.fuu * h * h + t.fus * h * kk + 0.5 * t.fss * kk * kk);
  };
  const double change = gap(e, k) - gap(e2, k2);
  if (std::isnan(change)) return HUGE_VAL;  // a step whose values overflow: a certain rejection
  const auto w = data->weights();
  return w.empty() ? change : w[n] * change;
}

std::shared_ptr<const SmhStatistics> build_smh_global_statistics(
    std::shared_ptr<const Dataset> data, const Prior& prior, const MapResult& zmap,
    std::shared_ptr<const GlobalFamily> global, double bound_excess) {
  auto sh =
      std::make_shared<SmhStatistics>(std::move(data), prior, std::move(global), bound_excess);
  const auto p = static_cast<Eigen::Index>(sh->dim()), d = p - 1;
  sh->theta_hat = zmap.theta;
  sh->precisions.resize(p);
  for (Eigen::Index j = 0; j < d; ++j)
    sh->precisions[j] = prior.precision(static_cast<std::size_t>(j));
  sh->precisions[d] = sh->global->prior_curvature(zmap.theta[d]);
  const ZSums sums = gradient_and_curvature(*sh);
  Mat h = sums.h.selfadjointView<Eigen::Upper>();
  h.diagonal() += sh->precisions;
  const Eigen::LLT<Mat> llt(h);
  if (llt.info() != Eigen::Success)
    throw ConfigError("--algo smh: the Hessian at the MAP is not positive definite");
  sh->grad = sums.g.col(0);
  sh->chol = llt.matrixL();
  sh->linv = Mat::Identity(p, p);
  sh->chol.triangularView<Eigen::Lower>().solveInPlace(sh->linv);
  sh->linv_t = sh->linv.transpose();
  sh->eta_scale = sh->global->eta_scale(zmap.theta[d]);
  sh->global_reach = std::fabs(sh->linv(d, d));  // L⁻¹e is L⁻¹'s last column: (0, …, 0, L⁻¹_dd)
  global_bounds(*sh);
  sh->passes = 2;
  return sh;
}

}  // namespace flymc::detail
