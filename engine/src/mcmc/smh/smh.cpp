// Scalable Metropolis–Hastings (flymc/mcmc/smh/smh.hpp): the run's set-up (each datum's
// expansion at θ̂ by its family, whitening, per-datum bounds, alias tables) and its run.
#include "flymc/mcmc/smh/smh.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "../run/run_blocks.hpp"
#include "../run/run_chains.hpp"
#include "../run/run_skeleton.hpp"
#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/models/global_model.hpp"
#include "flymc/models/model_kinds.hpp"
#include "flymc/models/negbin_phi.hpp"
#include "flymc/models/student_sigma.hpp"
#include "smh_chain.hpp"

namespace flymc {

namespace smh {

double cubic_form(const double* t, const double* u, std::size_t d) noexcept {
  double s = 0.0;
  for (std::size_t a = 0; a < d; ++a)
    for (std::size_t b = a; b < d; ++b) {
      double dot = 0.0;
      for (std::size_t k = b; k < d; ++k) dot += t[k - b] * u[k];
      s += u[a] * u[b] * dot;
      t += d - b;
    }
  return s;
}

}  // namespace smh

namespace detail {
namespace {

using RowBlock =
    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
               Eigen::OuterStride<>>;

/// Rows [lo, hi) of `ds` (widened in `x`) as an (hi − lo) × D matrix.
RowBlock rows(const Dataset& ds, const RowsF64& x, std::size_t lo, std::size_t hi) {
  return RowBlock(x.data(), static_cast<Eigen::Index>(hi - lo), static_cast<Eigen::Index>(ds.d()),
                  Eigen::OuterStride<>(static_cast<Eigen::Index>(ds.stride())));
}

/// A sum of matrices over the rows of a sharded data set (row_fold.hpp).
struct MatrixSum {
  Mat m;
  static constexpr const char* kWhat = "--algo smh";
  void pack(PackedSums& p) const { p.matrix(m); }
  static MatrixSum unpack(SumsReader& r) { return {r.matrix<Mat>()}; }
};
/// The data's predictors at θ̂, ŝ_n = x_n·θ̂, of rows [lo, hi) (widened in `xr`).
std::vector<double> predictors(const SmhStatistics& sh, const RowsF64& xr, std::size_t lo,
                               std::size_t hi, const double* theta_p) {
  std::vector<double> s(hi - lo);
  kernels::dots_packed(xr.data(), hi - lo, sh.data->stride(), theta_p, s.data());
  return s;
}

/// θ̂ padded to the data's stride.
AlignedBuffer padded_theta_hat(const SmhStatistics& sh) {
  AlignedBuffer th = aligned_zeros(sh.data->stride());
  std::copy(sh.theta_hat.data(), sh.theta_hat.data() + sh.dim(), th.get());
  return th;
}

/// H_L = −Σ_n f''(ŝ_n) x_n x_nᵀ, full, in a pass of its own (summed in chunk order, over the
/// whole data set if it is a shard): for a MAP search that did not leave it.
Mat curvature_pass(const SmhStatistics& sh) {
  const Dataset& ds = *sh.data;
  const AlignedBuffer th = padded_theta_hat(sh);
  const auto y = ds.y();
  const auto dd = static_cast<Eigen::Index>(ds.d());
  Mat h = fold_sums(
              ds, MatrixSum{},
              [&](std::size_t lo, std::size_t hi) {
                const RowsF64 xr = ds.rows(lo, hi);
                const std::vector<double> s = predictors(sh, xr, lo, hi, th.get());
                std::vector<double> w(hi - lo);
                for (std::size_t i = 0; i < hi - lo; ++i)
                  w[i] = -sh.taylor(static_cast<Index>(lo + i), y[lo + i], s[i]).f2;
                MatrixSum part{Mat::Zero(dd, dd)};
                add_weighted_outer(part.m, ds, xr.data(), w);
                return part;
              },
              [](MatrixSum acc, MatrixSum part) {
                return acc.m.size() == 0 ? part : MatrixSum{acc.m + part.m};
              })
              .m;
  return h.selfadjointView<Eigen::Upper>();
}

}  // namespace

/// Slab a of add_cubic_rows' tensor is the upper triangle of the symmetric
/// Σ_i (w_i z_ia)·z_i[a:] z_i[a:]ᵀ, formed by two SYRKs: the rows whose weight w_i z_ia is positive
/// and those whose weight is negative, each scaled by √|w_i z_ia|. That is the d³/6 multiply-adds a
/// row of a direct loop, at BLAS speed instead of in loops of a few dozen.
void add_cubic_rows(const double* z, std::size_t m, std::size_t d, std::size_t stride,
                    const double* w, double* t, CubicScratch& scratch) {
  double *pos = scratch.pos.data(), *neg = scratch.neg.data(), *c = scratch.c.data();
  for (std::size_t a = 0; a < d; ++a) {
    const std::size_t n = d - a;
    std::size_t mp = 0, mn = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const double* zi = z + i * stride + a;
      const double wa = w[i] * zi[0];
      if (wa == 0.0) continue;
      const double r = std::sqrt(std::fabs(wa));
      double* dst = wa > 0.0 ? pos + n * mp++ : neg + n * mn++;
      for (std::size_t j = 0; j < n; ++j) dst[j] = r * zi[j];
    }
    std::fill_n(c, n * n, 0.0);
    if (mp > 0) blas::syrk_accumulate(pos, mp, n, n, c, 1.0);
    if (mn > 0) blas::syrk_accumulate(neg, mn, n, n, c, -1.0);
    for (std::size_t b = 0; b < n; ++b)  // C is column-major: (b, k) at k·n + b
      for (std::size_t k = b; k < n; ++k) *t++ += c[k * n + b];
  }
}

namespace {

/// The packed tensor (entries a ≤ b ≤ k) in kernels::cubic_form's layout: segment (a, b) padded
/// with zeros to a multiple of 8 entries.
AlignedBuffer pad_cubic(const std::vector<double>& packed, std::size_t d) {
  AlignedBuffer out = aligned_zeros(kernels::cubic_padded_size(d));
  const double* src = packed.data();
  double* dst = out.get();
  for (std::size_t a = 0; a < d; ++a)
    for (std::size_t b = a; b < d; ++b) {
      const std::size_t n = d - b;
      std::copy(src, src + n, dst);
      src += n;
      dst += (n + 7) / 8 * 8;
    }
  return out;
}

/// Each entry a ≤ b ≤ k times the number of index orders it stands for in T(u, u, u): 6 if the
/// three differ, 3 if two are equal, 1 if all are.
void count_index_orders(std::vector<double>& t, std::size_t d) {
  std::size_t at = 0;
  for (std::size_t a = 0; a < d; ++a)
    for (std::size_t b = a; b < d; ++b)
      for (std::size_t k = b; k < d; ++k, ++at)
        t[at] *= a == b && b == k ? 1.0 : (a == b || b == k ? 3.0 : 6.0);
}

/// φ_n = (M/6)·‖L⁻¹x_n‖³ (order 2) or (M/24)·‖L⁻¹x_n‖⁴ (order 3) for rows `x` (`rows` of them,
/// the data's stride) into `out`, by one triangular product with `linv` = L⁻¹ on an L2-sized
/// copy of each block of rows (d²/2 multiply-adds a row, half of x_nᵀ·(H⁻¹x_n)'s); `c` = (M/6 or
/// M/24)·(1 + 1e-9)·e^(−excess), with M = 1 and each row's own M in `scale` where the family has
/// an envelope (`scale` null otherwise). Order 3 also adds w3_n·x̃_n⊗x̃_n⊗x̃_n to `cubic`.
/// Returns max_n ‖L⁻¹x_n‖² over the rows.
double bound_block(const SmhStatistics& sh, const Mat& linv, const double* x, std::size_t rows,
                   double c, const double* scale, SmhDatum* out, const double* w3, double* cubic) {
  const std::size_t d = sh.dim(), stride = sh.data->stride();
  constexpr std::size_t kBlock = blas::kSyrkRows;
  const detail::ScratchLease z(kBlock * stride);
  std::optional<CubicScratch> cs;
  if (sh.order == 3) cs.emplace(kBlock, d);
  double reach2 = 0.0;
  for (std::size_t b0 = 0; b0 < rows; b0 += kBlock) {
    const std::size_t m = std::min(kBlock, rows - b0);
    std::copy(x + b0 * stride, x + (b0 + m) * stride, z.get());
    blas::trmm_lower_rows(linv.data(), d, z.get(), m, stride);
    for (std::size_t i = 0; i < m; ++i) {
      const double* zi = z.get() + i * stride;
      double q = 0.0;
      for (std::size_t j = 0; j < d; ++j) q += zi[j] * zi[j];
      reach2 = std::max(reach2, q);
      double exact = sh.order == 3 ? c * q * q : c * q * std::sqrt(q);
      if (scale != nullptr)  // a scale that is not a number ≥ 0 makes the bound infinite
        exact = scale[b0 + i] >= 0.0 ? exact * scale[b0 + i] : HUGE_VAL;
      auto up = static_cast<float>(exact);
      if (static_cast<double>(up) < exact)
        up = std::nextafter(up, std::numeric_limits<float>::infinity());
      out[b0 + i].phi = up;
    }
    if (cs) add_cubic_rows(z.get(), m, d, stride, w3 + b0, cubic, *cs);
  }
  return reach2;
}

/// The pass with H known: per datum ŝ_n's Taylor expansion (û, σ) and its bound
/// φ_n = (M/6)·‖L⁻¹x_n‖³ = (M/6)·(x_nᵀH⁻¹x_n)^{3/2}, enlarged by a relative 1e-9 so that
/// rounding in ‖L⁻¹x_n‖ cannot make a bound fall below its remainder, then rounded up to a float
/// (SmhDatum); and g summed in chunk order (over the whole data set if it is a shard). The
/// candidate tables are built from the rounded values: the thinning is exact for the bound it
/// draws from, whichever that is, as long as it dominates.
/// What one chunk of the set-up's pass sums: g's share and, for order 3, the tensor's; and the
/// largest ‖L⁻¹x_n‖² it saw.
struct ExpandPartial {
  Mat g;
  std::vector<double> cubic;
  double reach2 = 0.0;

  static constexpr const char* kWhat = "--algo smh";
  void pack(PackedSums& p) const { p.matrix(g).array(cubic).scalar(reach2); }
  static ExpandPartial unpack(SumsReader& r) {
    ExpandPartial e;
    e.g = r.matrix<Mat>();
    e.cubic = r.array();
    e.reach2 = r.scalar();
    return e;
  }
};

void expand_and_bound(SmhStatistics& sh) {
  const Dataset& ds = *sh.data;
  const std::size_t n = ds.n();
  const AlignedBuffer th = padded_theta_hat(sh);
  sh.datum.resize(n);
  const auto y = ds.y();
  // With an envelope each datum's own scale stands for M (bound_block).
  const double c = (sh.envelope ? 1.0 : sh.m) / (sh.order == 3 ? 24.0 : 6.0) * (1.0 + 1e-9) *
                   std::exp(-sh.bound_excess);
  const std::size_t cubic_entries = sh.order == 3 ? smh::cubic_size(sh.dim()) : 0;
  const Mat& linv = sh.linv;
  ExpandPartial all = fold_sums(
      ds, ExpandPartial{},
      [&](std::size_t lo, std::size_t hi) {
        const RowsF64 xr = ds.rows(lo, hi);
        const std::vector<double> s = predictors(sh, xr, lo, hi, th.get());
        Vec coef(static_cast<Eigen::Index>(hi - lo));
        std::vector<double> w3(sh.order == 3 ? hi - lo : 0), scale(sh.envelope ? hi - lo : 0);
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const Expansion t = sh.taylor(static_cast<Index>(lo + i), y[lo + i], s[i]);
          const double sign = sh.sign(y[lo + i]);
          sh.datum[lo + i].u_hat = t.u_hat;
          sh.datum[lo + i].sign = static_cast<float>(sign);
          // ∂/∂θ of f(u), u = σ·x·θ + const, is σ·f'(u)·x; the curvature is f''(u)·x xᵀ (σ² = 1),
          // the third derivatives σ·f‴(u)·x⊗x⊗x (σ³ = σ).
          coef[static_cast<Eigen::Index>(i)] = sign * t.f1;
          if (sh.order == 3) w3[i] = sign * t.f3;
          if (sh.envelope) scale[i] = sh.family->envelope_scale(y[lo + i], t.u_hat, sh.order + 1);
        }
        ExpandPartial part{Mat(), std::vector<double>(cubic_entries, 0.0)};
        part.reach2 =
            bound_block(sh, linv, xr.data(), hi - lo, c, sh.envelope ? scale.data() : nullptr,
                        sh.datum.data() + lo, w3.data(), part.cubic.data());
        if (sh.extras)  // each datum's bound times its factor, still rounded up to a float
          for (std::size_t i = lo; i < hi; ++i) {
            const double exact = double(sh.datum[i].phi) * sh.bound_factor(static_cast<Index>(i));
            auto up = static_cast<float>(exact);
            if (static_cast<double>(up) < exact)
              up = std::nextafter(up, std::numeric_limits<float>::infinity());
            sh.datum[i].phi = up;
          }
        part.g = rows(ds, xr, lo, hi).transpose() * coef;
        return part;
      },
      [](ExpandPartial acc, ExpandPartial part) {
        if (acc.g.size() == 0) return part;
        acc.g += part.g;
        for (std::size_t k = 0; k < acc.cubic.size(); ++k) acc.cubic[k] += part.cubic[k];
        acc.reach2 = std::max(acc.reach2, part.reach2);
        return acc;
      });
  sh.grad = all.g.col(0);
  sh.reach = std::sqrt(all.reach2);
  if (sh.order == 3) set_cubic(sh, std::move(all.cubic));
  candidate_tables(sh);
}

}  // namespace

void set_cubic(SmhStatistics& sh, std::vector<double> entries) {
  count_index_orders(entries, sh.dim());
  sh.cubic = std::move(entries);
  sh.cubic_padded = pad_cubic(sh.cubic, sh.dim());
}

void add_weighted_outer(Mat& h, const Dataset& ds, const double* x, const std::vector<double>& w) {
  const std::size_t d = ds.d(), stride = ds.stride();
  constexpr std::size_t kBlock = blas::kSyrkRows;
  AlignedBuffer block = aligned_zeros(kBlock * stride);
  std::vector<double> roots(kBlock);
  const bool negative = std::any_of(w.begin(), w.end(), [](double v) { return v < 0.0; });
  for (const double sign : {1.0, -1.0}) {
    if (sign < 0.0 && !negative) return;
    for (std::size_t b0 = 0; b0 < w.size(); b0 += kBlock) {
      const std::size_t m = std::min(kBlock, w.size() - b0);
      for (std::size_t i = 0; i < m; ++i) roots[i] = std::sqrt(std::max(sign * w[b0 + i], 0.0));
      blas::syrk_scaled_rows(x + b0 * stride, m, d, stride, roots.data(), block.get(), h.data(),
                             sign);
    }
  }
}

/// The two stages of drawing a candidate (SmhShared): Φ_b of every block of the data set (a
/// data-wide fold, so every process of a shard gets all of them), the table over blocks, and a
/// table within each of this process's blocks.
void candidate_tables(SmhStatistics& sh) {
  const Dataset& ds = *sh.data;
  const auto phi = [&](std::size_t i) { return static_cast<double>(sh.datum[i].phi); };
  const std::vector<double> block_phi = fold_rows(
      ds, std::vector<double>{},
      [&](std::size_t lo, std::size_t hi) {
        double s = 0.0;
        for (std::size_t i = lo; i < hi; ++i) s += phi(i);
        return s;
      },
      [](std::vector<double> acc, double s) {
        acc.push_back(s);
        return acc;
      },
      [](const std::vector<double>& v) { return v; },
      [](const std::vector<double>& v) { return v; });
  sh.phi_sum = 0.0;
  for (const double b : block_phi) sh.phi_sum += b;
  // Every process sees the same sum, so all of them refuse together.
  if (!std::isfinite(sh.phi_sum))
    throw ConfigError("--algo smh: the " + (sh.global ? sh.global->name() : sh.family->name()) +
                      " family's bounds are not finite at the MAP (an envelope's scale overflowed "
                      "or is not a number >= 0)");
  if (sh.phi_sum > 0.0) sh.block_alias = AliasTable(block_phi);
  const RowShard* shard = ds.shard();
  sh.first_block = shard != nullptr ? shard->first_row / kReduceGrain : 0;
  sh.link = shard_link(ds);
  // Each block's weights are gathered from the records as its table is built, so that no
  // N-long array of them is ever held.
  sh.row_alias = BlockAliasTable(ds.n(), kReduceGrain, [&](std::size_t first, std::span<double> w) {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = phi(first + i);
  });
}

Expansion SmhStatistics::datum_expand(Index n, double s_hat) const noexcept {
  const auto off = data->offsets();
  const double u = off.empty() ? s_hat : s_hat + off[n];
  double d[SingleIndexFamily::kMaxOrder + 1] = {};
  datum_derivatives(*family, *data, n, u, order == 3 ? 3 : 2, d);
  return Expansion{u, d[1], d[2], order == 3 ? d[3] : 0.0};
}

double SmhStatistics::datum_remainder_change(Index n, double u_hat, double h,
                                             double h2) const noexcept {
  // A family with an envelope expands in u = η (family.hpp), so its own remainder serves, times
  // the datum's weight; its closed form keeps the precision the bound's test needs.
  if (envelope && !family->reads_trials()) {
    const auto w = data->weights();
    const double change = family->remainder_change(data->y()[n], u_hat, h, h2, order);
    return w.empty() ? change : w[n] * change;
  }
  double d[SingleIndexFamily::kMaxOrder + 1] = {};
  datum_derivatives(*family, *data, n, u_hat, order == 3 ? 3 : 2, d);
  const double f3 = order == 3 ? d[3] : 0.0;
  const auto gap = [&](double step) {
    double f = 0.0;
    datum_derivatives(*family, *data, n, u_hat + step, 0, &f);
    return f - step * (d[1] + step * (0.5 * d[2] + f3 * step / 6.0));
  };
  return gap(h) - gap(h2);
}

double SmhStatistics::bound_factor(Index n) const noexcept {
  return datum_constant_factor(*family, *data, n);
}

std::shared_ptr<const SmhStatistics> build_smh_statistics(
    std::shared_ptr<const Dataset> data, const Prior& prior, const MapResult& map,
    std::shared_ptr<const SingleIndexFamily> family, double bound_excess, int order) {
  if (!family->has_envelope()) require_constant(*family, order == 3 ? '4' : '3', "--algo smh");
  auto sh = std::make_shared<SmhStatistics>(std::move(data), prior, std::move(family), bound_excess,
                                            order);
  sh->theta_hat = map.theta;
  sh->precision = prior.precision(0);
  if (!prior.uniform_precision()) {
    sh->precisions.resize(map.theta.size());
    for (Eigen::Index j = 0; j < sh->precisions.size(); ++j)
      sh->precisions[j] = prior.precision(static_cast<std::size_t>(j));
  }
  // A MAP search leaves the likelihood's curvature at θ̂ only where it formed it with −f''(ŝ_n)
  // itself (MapResult::lik_curvature; GlmModel::find_map leaves none where it clipped a weight).
  const bool taken = map.lik_curvature.size() != 0;
  Mat h = taken ? map.lik_curvature : curvature_pass(*sh);
  add_prior_precision(prior, h);
  const Eigen::LLT<Mat> llt(h);
  if (llt.info() != Eigen::Success)
    throw ConfigError("--algo smh: the Hessian at the MAP is not positive definite");
  sh->chol = llt.matrixL();
  sh->linv = Mat::Identity(h.rows(), h.cols());
  sh->chol.triangularView<Eigen::Lower>().solveInPlace(sh->linv);
  sh->linv_t = sh->linv.transpose();
  sh->passes = taken ? 1 : 2;
  expand_and_bound(*sh);
  return sh;
}

}  // namespace detail

namespace detail {
namespace {

/// The chains of one SMH run, each saving and resuming its state where its session asks, to the
/// run's end (a fixed length or an ESS target). On a shard every process runs every chain, one
/// after another (each proposal's test is collective).
BlockOutcome run_smh_chains(const SmhShared& sh, ChainSessions& cs, Progress* progress,
                            RunResult& out) {
  auto make = [&](int i) {
    const auto ci = static_cast<std::size_t>(i);
    return std::make_unique<SmhChain>(sh, i + 1, cs.sinks[ci].get(), cs.sessions[ci]);
  };
  auto finish = [&](int i, SmhChain& c) {
    ChainResult r = c.finish();
    cs.sinks[static_cast<std::size_t>(i)].reset();  // closes the file in the chain's own task
    return r;
  };
  return run_blocks<SmhChain>(sh.cfg, cost_shape(sh.data, sh.dim()), sh.cfg.chains, 1,
                              sh.link != nullptr, progress, make, finish, out.chains,
                              block_sync(nullptr, sh.link));
}

/// SMH's run of model M through the run skeleton (run_skeleton.hpp). Its statistics are the
/// expansion at θ̂ and the bounds (SmhStatistics), taken from `pre`'s cache where they fit (auto's
/// pilot built them) or built and left there.
template <class M>
RunResult run_smh_model(const RunRequest& r) {
  ModelRun<M> run(r);
  const M& model = run.model();
  RunResult& out = run.result();
  const std::shared_ptr<const SingleIndexFamily> fam = model.family_ptr();
  std::shared_ptr<const SmhStatistics> stats;
  run.set_up([&] {
    const SetupCache* cache = r.pre.cache.get();
    if (cache && cache->smh &&
        cache->smh->fits(r.data, model.prior(), *fam, out.map, r.faults.bound_excess,
                         r.cfg.smh_order)) {
      stats = cache->smh;
      return 0;
    }
    stats = build_smh_statistics(r.data, model.prior(), out.map, fam, r.faults.bound_excess,
                                 r.cfg.smh_order);
    if (r.pre.cache) r.pre.cache->smh = stats;
    return stats->passes;
  });
  run.begin_chains();
  const SmhShared sh{r.cfg,    model.data(), model.prior(),
                     out.map,  stats,        smh_draw_columns(out.names),
                     r.faults, run.link(),   run.leader()};
  run.open_sessions(sh.columns, 0);
  return run.finish(
      [&](ChainBlock, ChainSessions& cs) { return run_smh_chains(sh, cs, r.progress, out); });
}

/// The MAP in z = (β, s) from the model's (β, v), v = reported(s) the global as the draws show
/// it: its covariance carried by the Jacobian, and auto's chain starts likewise.
MapResult map_in_z(const MapResult& map, const GlobalFamily& g) {
  MapResult z = map;
  const Eigen::Index d = map.theta.size() - 1;
  z.theta[d] = g.unconstrained(map.theta[d]);
  const double slope = g.reported_slope(z.theta[d]);
  z.covariance.row(d) /= slope;
  z.covariance.col(d) /= slope;
  for (Vec& c : z.chain_starts) c[d] = g.unconstrained(c[d]);
  z.lik_curvature.resize(0, 0);
  return z;
}

/// SMH's run of model M, whose likelihood has a global parameter (M::global_family_ptr): the
/// chains move in z = (β, s) and report the global as the model names it (σ = e^s).
template <class M>
RunResult run_smh_global_model(const RunRequest& r) {
  ModelRun<M> run(r);
  const M& model = run.model();
  RunResult& out = run.result();
  const std::shared_ptr<const GlobalFamily> g = model.global_family_ptr();
  const MapResult zmap = map_in_z(out.map, *g);
  std::shared_ptr<const SmhStatistics> stats;
  run.set_up([&] {
    const SetupCache* cache = r.pre.cache.get();
    if (cache && cache->smh &&
        cache->smh->fits(r.data, model.prior(), *g, zmap, r.faults.bound_excess, r.cfg.smh_order)) {
      stats = cache->smh;
      return 0;
    }
    stats = build_smh_global_statistics(r.data, model.prior(), zmap, g, r.faults.bound_excess,
                                        r.cfg.smh_order);
    if (r.pre.cache) r.pre.cache->smh = stats;
    return stats->passes;
  });
  run.begin_chains();
  const SmhShared sh{r.cfg,    model.data(), model.prior(),
                     zmap,     stats,        smh_draw_columns(out.names),
                     r.faults, run.link(),   run.leader()};
  run.open_sessions(sh.columns, 0);
  return run.finish(
      [&](ChainBlock, ChainSessions& cs) { return run_smh_chains(sh, cs, r.progress, out); });
}

}  // namespace
}  // namespace detail

RunResult run_smh_request(const RunRequest& r) {
  if (r.cfg.model == ModelKind::student_t)
    return detail::run_smh_global_model<StudentTSigmaModel>(r);
  if (infers_phi(r.cfg)) return detail::run_smh_global_model<NegBinomialPhiModel>(r);
  if (has_global_family(r.cfg)) return detail::run_smh_global_model<GlobalFamilyModel>(r);
  return with_single_index_model(
      r.cfg.model, []<class M>(const RunRequest& req) { return detail::run_smh_model<M>(req); }, r);
}

}  // namespace flymc
