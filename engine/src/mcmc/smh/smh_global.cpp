// Scalable MH with a global parameter beside the coefficients (docs/math.md §8, the paragraph of
// that name): the set-up of z = (β, s) (each datum expanded in (u, s) to second or third order,
// the whitening, the bounds from the family's envelope of the next order). The run of a model that
// gives a GlobalFamily is in smh.cpp; its chains are SmhChain's.
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

/// What one chunk of the bound pass sums: the largest ‖x̃_n‖² and, for order 3, the parts of the
/// third derivatives' tensor in the whitened coordinates, with a_n = L⁻¹(x_n, 0) (D + 1 entries):
/// the entries a ≤ b ≤ k of Σ_n w_n f_uuu a_n⊗a_n⊗a_n, and M = Σ_n w_n f_uus a_n a_nᵀ,
/// v = Σ_n w_n f_uss a_n and F = Σ_n w_n f_sss, which cubic_with_global() joins to it.
struct BoundSums {
  double reach2 = 0.0;
  std::vector<double> cubic;
  Mat m, v;
  double f = 0.0;
  static constexpr const char* kWhat = "--algo smh";
  void pack(PackedSums& p) const { p.scalar(reach2).array(cubic).matrix(m).matrix(v).scalar(f); }
  static BoundSums unpack(SumsReader& r) {
    BoundSums b;
    b.reach2 = r.scalar();
    b.cubic = r.array();
    b.m = r.matrix<Mat>();
    b.v = r.matrix<Mat>();
    b.f = r.scalar();
    return b;
  }
  BoundSums& operator+=(const BoundSums& o) {
    reach2 = std::max(reach2, o.reach2);
    for (std::size_t k = 0; k < cubic.size(); ++k) cubic[k] += o.cubic[k];
    m += o.m;
    v += o.v;
    f += o.f;
    return *this;
  }
};

/// Order 3: adds to `sums` the tensor's parts of rows [lo, lo + m), whose whitened rows a_n are
/// `a` (m × p, row-major) and predictors at β̂ `u`.
void add_third_order(const SmhStatistics& sh, std::size_t lo, std::size_t m, const double* a,
                     const double* u, BoundSums& sums) {
  const std::size_t p = sh.dim();
  const auto y = sh.data->y(), w = sh.data->weights();
  const double s_hat = sh.theta_hat[static_cast<Eigen::Index>(p - 1)];
  Vec w3(static_cast<Eigen::Index>(m)), wm(w3.size()), wv(w3.size());
  for (std::size_t i = 0; i < m; ++i) {
    const GlobalThird t = sh.global->third(y[lo + i], u[i], s_hat);
    const double wn = w.empty() ? 1.0 : w[lo + i];
    const auto ii = static_cast<Eigen::Index>(i);
    w3[ii] = wn * t.fuuu;
    wm[ii] = wn * t.fuus;
    wv[ii] = wn * t.fuss;
    sums.f += wn * t.fsss;
  }
  CubicScratch scratch(m, p);
  add_cubic_rows(a, m, p, p, w3.data(), sums.cubic.data(), scratch);
  const RowBlock rows(a, static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(p),
                      Eigen::OuterStride<>(static_cast<Eigen::Index>(p)));
  sums.m.noalias() += rows.transpose() * (wm.asDiagonal() * rows);
  sums.v.noalias() += rows.transpose() * wv;
}

/// The whole tensor of z's third derivatives in the whitened coordinates: with L⁻¹e = c·e (L⁻¹
/// lower triangular, e the global's unit vector), T = Σ w f_uuu a⊗a⊗a + c·Σ w f_uus (a⊗a⊗e and
/// its two other orders) + c²·Σ w f_uss (a⊗e⊗e, …) + c³·F e⊗e⊗e, so that T(u, u, u) is
/// Σ_n w_n·(third-order Taylor term of datum n)·6. Entry (a, b, k), a ≤ b ≤ k, of the e-parts is
/// nonzero only where k is the global's index d: c·M_ab (b < d), 2c·M_ad + c²·v_a (a < b = d) and
/// 3c·M_dd + 3c²·v_d + c³·F (all d).
std::vector<double> cubic_with_global(const SmhStatistics& sh, BoundSums& sums) {
  const std::size_t p = sh.dim(), d = p - 1;
  const double c = sh.linv(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  const auto mm = [&](std::size_t i, std::size_t j) {
    return sums.m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
  };
  const auto vv = [&](std::size_t i) { return sums.v(static_cast<Eigen::Index>(i), 0); };
  std::vector<double> t = std::move(sums.cubic);
  std::size_t at = 0;
  for (std::size_t a = 0; a < p; ++a)
    for (std::size_t b = a; b < p; ++b)
      for (std::size_t k = b; k < p; ++k, ++at) {
        if (k != d) continue;
        if (b < d)
          t[at] += c * mm(a, b);
        else if (a < d)
          t[at] += 2.0 * c * mm(a, d) + c * c * vv(a);
        else
          t[at] += 3.0 * c * mm(d, d) + 3.0 * c * c * vv(d) + c * c * c * sums.f;
      }
  return t;
}

/// Each datum's record (û_n and φ_n = w_n·(A_n/6)·(λ‖x̃_n‖ + ‖ẽ‖)³, x̃_n = L⁻¹(x_n, 0), enlarged
/// by a relative 1e-9 and rounded up to a float; order 3: (A_n/24)·(…)⁴ with the fourth
/// derivatives' envelope) and R = max_n ‖x̃_n‖; order 3 also the tensor; then the candidate
/// tables.
void global_bounds(SmhStatistics& sh) {
  const Dataset& ds = *sh.data;
  const std::size_t d = ds.d(), stride = ds.stride(), p = d + 1;
  const bool third = sh.order == 3;
  const AlignedBuffer beta = padded_beta(sh);
  const Mat lb = sh.linv.topLeftCorner(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  const Vec last = sh.linv.row(static_cast<Eigen::Index>(d)).head(static_cast<Eigen::Index>(d));
  const double c = (1.0 + 1e-9) / (third ? 24.0 : 6.0) * std::exp(-sh.bound_excess);
  const double s_hat = sh.theta_hat[static_cast<Eigen::Index>(d)];
  sh.datum.resize(ds.n());
  const auto y = ds.y(), w = ds.weights();
  BoundSums init;
  if (third) {
    init.cubic.assign(smh::cubic_size(p), 0.0);
    init.m = Mat::Zero(static_cast<Eigen::Index>(p), static_cast<Eigen::Index>(p));
    init.v = Mat::Zero(static_cast<Eigen::Index>(p), 1);
  }
  BoundSums all = fold_sums(
      ds, init,
      [&](std::size_t lo, std::size_t hi) {
        BoundSums part = init;
        const RowsF64 xr = ds.rows(lo, hi);
        const std::vector<double> u = predictors(ds, xr, lo, hi, beta.get());
        AlignedBuffer z = aligned_zeros((hi - lo) * stride);
        std::copy(xr.data(), xr.data() + (hi - lo) * stride, z.get());
        blas::trmm_lower_rows(lb.data(), d, z.get(), hi - lo, stride);
        std::vector<double> a(third ? (hi - lo) * p : 0);  // the rows a_n, for order 3
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const double* zi = z.get() + i * stride;
          const double* xi = xr.data() + i * stride;
          double q = 0.0, l = 0.0;
          for (std::size_t j = 0; j < d; ++j) {
            q += zi[j] * zi[j];
            l += last[static_cast<Eigen::Index>(j)] * xi[j];
          }
          if (third) {
            std::copy(zi, zi + d, a.data() + i * p);
            a[i * p + d] = l;
          }
          q += l * l;
          part.reach2 = std::max(part.reach2, q);
          const double norm = sh.eta_scale * std::sqrt(q) + sh.global_reach;
          const double scale = third ? sh.global->fourth_scale(y[lo + i], u[i], s_hat)
                                     : sh.global->envelope_scale(y[lo + i], u[i], s_hat);
          const double wn = w.empty() ? 1.0 : w[lo + i];
          const double power = third ? norm * norm * norm * norm : norm * norm * norm;
          double exact = scale >= 0.0 ? c * wn * scale * power : HUGE_VAL;
          auto up = static_cast<float>(exact);
          if (static_cast<double>(up) < exact)
            up = std::nextafter(up, std::numeric_limits<float>::infinity());
          sh.datum[lo + i] = SmhDatum{u[i], up, 1.0f};
        }
        for (std::size_t b0 = 0; third && b0 < hi - lo; b0 += blas::kSyrkRows)
          add_third_order(sh, lo + b0, std::min(blas::kSyrkRows, hi - lo - b0), a.data() + b0 * p,
                          u.data() + b0, part);
        return part;
      },
      [](BoundSums acc, const BoundSums& part) { return acc += part; });
  sh.reach = std::sqrt(all.reach2);
  if (third) set_cubic(sh, cubic_with_global(sh, all));
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
  const GlobalThird c = order == 3 ? global->third(y, d.u_hat, s_hat) : GlobalThird{};
  // gap(h, k) = f(û + h, ŝ + k) − f(û, ŝ) − the expansion's linear, quadratic (and cubic) terms.
  const auto gap = [&](double h, double kk) {
    const double third_term = order == 3 ? (c.fuuu * h * h * h + 3.0 * c.fuus * h * h * kk +
                                            3.0 * c.fuss * h * kk * kk + c.fsss * kk * kk * kk) /
                                               6.0
                                         : 0.0;
    return global->change(y, d.u_hat, s_hat, h, kk) - (t.fu * h + t.fs * kk) -
           (0.5 * t.fuu * h * h + t.fus * h * kk + 0.5 * t.fss * kk * kk) - third_term;
  };
  const double change = gap(e, k) - gap(e2, k2);
  if (std::isnan(change)) return HUGE_VAL;  // a step whose values overflow: a certain rejection
  const auto w = data->weights();
  return w.empty() ? change : w[n] * change;
}

std::shared_ptr<const SmhStatistics> build_smh_global_statistics(
    std::shared_ptr<const Dataset> data, const Prior& prior, const MapResult& zmap,
    std::shared_ptr<const GlobalFamily> global, double bound_excess, int order) {
  if (order == 3 && !global->has_fourth_envelope())
    throw ConfigError("--algo smh --smh-order 3: the " + global->name() +
                      " family gives no third derivatives and fourth-derivative envelope");
  auto sh = std::make_shared<SmhStatistics>(std::move(data), prior, std::move(global), bound_excess,
                                            order);
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
