// Scalable Metropolis–Hastings (flymc/mcmc/smh/smh.hpp): the Taylor expansions of the logistic
// and Student-t log-likelihoods, the run's set-up (expansion at θ̂, whitening, per-datum bounds,
// alias table) and run_smh().
#include "flymc/mcmc/smh/smh.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>

#include "../run_chains.hpp"
#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/robust.hpp"
#include "smh_chain.hpp"

namespace flymc {

namespace smh {

Taylor logistic_taylor(double u_hat) noexcept {
  // σ(|û|) = 1/(1 + e) and σ(−|û|) = e/(1 + e) with e = exp(−|û|) ≤ 1: one exponential, and
  // neither probability is formed as 1 − the other, which would lose the small one.
  const double e = std::exp(-std::fabs(u_hat)), inv = 1.0 / (1.0 + e);
  const double big = inv, small = e * inv;  // σ(|û|), σ(−|û|)
  return Taylor{u_hat, u_hat >= 0.0 ? small : big, -big * small};
}

double logistic_gap(const Taylor& t, double h) noexcept {
  return kernels::log_sigmoid(t.u_hat + h) - h * (t.f1 + 0.5 * t.f2 * h);
}

Taylor student_taylor(const StudentT& st, double u_hat) noexcept {
  const double rho = u_hat * st.inv_sqrt_c;
  // ρ/(1 + ρ²) and 1/(1 + ρ²) without forming ρ² where it could overflow.
  const bool big = std::fabs(rho) > 1.0;
  const double q = big ? 1.0 / (rho * rho * (1.0 + 1.0 / (rho * rho))) : 1.0 / (1.0 + rho * rho);
  const double rho_q = big ? 1.0 / (rho + 1.0 / rho) : rho * q;
  return Taylor{u_hat, -2.0 * st.a * st.inv_sqrt_c * rho_q,
                -2.0 * st.a * st.inv_sqrt_c * st.inv_sqrt_c * q * (2.0 * q - 1.0)};
}

double student_gap(const StudentT& st, const Taylor& e, double h) noexcept {
  return st.log_lik(e.u_hat + h) - h * (e.f1 + 0.5 * e.f2 * h);
}

double student_m(const StudentT& st) noexcept {
  constexpr double kMaxG = 0.72855339059327380;  // max |ρ(3 − ρ²)/(1 + ρ²)³|, rounded up
  const double inv_c15 = st.inv_sqrt_c * st.inv_sqrt_c * st.inv_sqrt_c;
  return 4.0 * st.a * kMaxG * inv_c15 * (1.0 + 1e-12);
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

/// A chunk's part of the expansion: g and H_L = Σ w_n x_n x_nᵀ (w_n = −f''(ŝ_n)).
struct Expansion {
  Vec g;
  Mat h;
};

/// Adds Σ_i w_i x_i x_iᵀ over the rows `x` (w.size() of them, `ds`'s stride) to h's upper triangle
/// (BLAS SYRK on rows scaled by √|w_i|). The logistic weights are never negative; robust
/// regression's are where a residual is beyond √c (the Student-t log-likelihood is convex there),
/// and those rows are subtracted as a second rank update.
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

/// An Expansion as doubles for a sharded data set's processes: d, then g, then h.
std::vector<double> pack_expansion(const Expansion& e) {
  std::vector<double> v{double(e.g.size())};
  v.insert(v.end(), e.g.data(), e.g.data() + e.g.size());
  v.insert(v.end(), e.h.data(), e.h.data() + e.h.size());
  return v;
}

Expansion unpack_expansion(const std::vector<double>& v) {
  const auto d = static_cast<Eigen::Index>(v.at(0));
  if (v.size() != static_cast<std::size_t>(1 + d + (d > 0 ? d * d : 0)))
    throw Error("--algo smh: a shard's expansion has the wrong size");
  Expansion e;
  e.g = Eigen::Map<const Vec>(v.data() + 1, d);
  if (d > 0) e.h = Eigen::Map<const Mat>(v.data() + 1 + d, d, d);
  return e;
}

/// Pass 1: ŝ_n and the Taylor coefficients per datum; g and H_L summed in chunk order (over the
/// whole data set if it is a shard).
void expand_at_theta_hat(SmhShared& sh) {
  const Dataset& ds = sh.data;
  const std::size_t n = ds.n(), d = ds.d();
  AlignedBuffer th = aligned_zeros(ds.stride());
  std::copy(sh.theta_hat.data(), sh.theta_hat.data() + d, th.get());
  sh.datum.resize(n);
  const auto y = ds.y();
  const auto dd = static_cast<Eigen::Index>(d);
  Expansion total = fold_rows(
      ds, Expansion{},
      [&](std::size_t lo, std::size_t hi) {
        std::vector<double> s(hi - lo), w(hi - lo);
        const RowsF64 xr = ds.rows(lo, hi);
        kernels::dots_packed(xr.data(), hi - lo, ds.stride(), th.get(), s.data());
        Expansion part{Vec::Zero(dd), Mat::Zero(dd, dd)};
        Vec coef(static_cast<Eigen::Index>(hi - lo));
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const smh::Taylor t = sh.taylor(y[lo + i], s[i]);
          const double sign = sh.sign(y[lo + i]);
          sh.datum[lo + i].u_hat = t.u_hat;
          sh.datum[lo + i].sign = static_cast<float>(sign);
          // ∂/∂θ of f(u), u = σ·x·θ + const, is σ·f'(u)·x; the curvature is f''(u)·x xᵀ (σ² = 1).
          coef[static_cast<Eigen::Index>(i)] = sign * t.f1;
          w[i] = -t.f2;
        }
        const RowBlock x = rows(ds, xr, lo, hi);
        part.g.noalias() = x.transpose() * coef;
        add_weighted_outer(part.h, ds, xr.data(), w);
        return part;
      },
      [](Expansion acc, Expansion part) {
        if (acc.g.size() == 0) return part;
        acc.g += part.g;
        acc.h += part.h;
        return acc;
      },
      pack_expansion, unpack_expansion);
  sh.grad = total.g;
  Mat h = total.h.selfadjointView<Eigen::Upper>();
  h.diagonal().array() += sh.precision;
  const Eigen::LLT<Mat> llt(h);
  if (llt.info() != Eigen::Success)
    throw ConfigError("--algo smh: the Hessian at the MAP is not positive definite");
  sh.chol = llt.matrixL();
}

void candidate_tables(SmhShared& sh);

/// Pass 2: φ_n = (M/6)·‖L⁻¹x_n‖³ = (M/6)·(x_nᵀH⁻¹x_n)^{3/2}, enlarged by a relative 1e-9 so that
/// rounding in ‖L⁻¹x_n‖ cannot make a bound fall below its remainder, then rounded up to a float
/// (SmhDatum). The candidate tables are built from the rounded values: the thinning is exact
/// for the bound it draws from, whichever that is, as long as it dominates.
void bound_constants(SmhShared& sh, double bound_excess) {
  const Dataset& ds = sh.data;
  const std::size_t n = ds.n();
  const auto dd = static_cast<Eigen::Index>(ds.d());
  Mat linv = Mat::Identity(dd, dd);
  sh.chol.triangularView<Eigen::Lower>().solveInPlace(linv);
  const Mat hinv = linv.transpose() * linv;
  const double c = sh.m / 6.0 * (1.0 + 1e-9) * std::exp(-bound_excess);
  chunked_for(n, kReduceGrain, [&](std::size_t lo, std::size_t hi) {
    Mat y(dd, static_cast<Eigen::Index>(hi - lo));  // column i: H⁻¹ x_i
    const RowsF64 xr = ds.rows(lo, hi);
    blas::gemm_at_xt(hinv.data(), static_cast<std::size_t>(dd), xr.data(), hi - lo,
                     static_cast<std::size_t>(dd), ds.stride(), y.data());
    for (std::size_t i = lo; i < hi; ++i) {
      const double* x = xr.row(i - lo);
      const double* yi = y.data() + (i - lo) * static_cast<std::size_t>(dd);
      double q = 0.0;
      for (Eigen::Index j = 0; j < dd; ++j) q += x[j] * yi[j];
      const double exact = c * q * std::sqrt(q);
      auto up = static_cast<float>(exact);
      if (static_cast<double>(up) < exact)
        up = std::nextafter(up, std::numeric_limits<float>::infinity());
      sh.datum[i].phi = up;
    }
  });
  candidate_tables(sh);
}

/// The two stages of drawing a candidate (SmhShared): Φ_b of every block of the data set (a
/// data-wide fold, so every process of a shard gets all of them), the table over blocks, and a
/// table within each of this process's blocks.
void candidate_tables(SmhShared& sh) {
  const Dataset& ds = sh.data;
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
  if (sh.phi_sum > 0.0) sh.block_alias = AliasTable(block_phi);
  const RowShard* shard = ds.shard();
  sh.first_block = shard != nullptr ? shard->first_row / kReduceGrain : 0;
  sh.link = shard != nullptr && shard->link->parts() > 1 ? shard->link.get() : nullptr;
  // Each block's weights are gathered from the records as its table is built, so that no
  // N-long array of them is ever held.
  sh.row_alias = BlockAliasTable(ds.n(), kReduceGrain, [&](std::size_t first, std::span<double> w) {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = phi(first + i);
  });
}

}  // namespace

void build_smh_shared(SmhShared& sh, double bound_excess) {
  sh.theta_hat = sh.map.theta;
  sh.precision = sh.prior.precision();
  expand_at_theta_hat(sh);
  bound_constants(sh, bound_excess);
}

}  // namespace detail

RunResult run_smh(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                  const SinkFactory& sinks, Progress* progress, const CheckpointOptions* checkpoint,
                  const Precomputed& pre, const FaultInjection& faults) {
  if (cfg.model == ModelKind::softmax)
    throw ConfigError("--algo smh runs logistic and robust regression, not softmax");
  const Stopwatch setup_clock;
  detail::SetupClock phases(progress);
  auto sample = [&](const auto& model, std::optional<StudentT> student) {
    phases.end(1);  // "checks": building the model checked the labels and features
    RunResult out = detail::start_uncheckpointed_run(cfg, model, checkpoint, pre, phases);
    phases.begin("statistics");
    detail::SmhShared sh(cfg, model.data(), model.prior(), out.map, student);
    sh.columns = smh_draw_columns(out.names);
    detail::build_smh_shared(sh, faults.bound_excess);
    phases.end(2);  // the expansion at θ̂, then the per-datum bound constants
    out.setup_phases = phases.take();
    out.setup_seconds = setup_clock.seconds();
    out.n = model.data().total_n();
    // On a shard every proposal's test is collective: the chains run in turn on every process.
    detail::run_independent_chains(
        cfg, sinks, progress, out,
        [&](int id, DrawSink* sink) { return detail::SmhChain(sh, id, sink); }, sh.link != nullptr);
    return out;
  };
  phases.begin("checks");
  if (cfg.model == ModelKind::robust) {
    const RobustModel model(data, cfg);
    return sample(model, model.student());
  }
  return sample(LogisticModel(data, cfg), std::nullopt);
}

}  // namespace flymc
