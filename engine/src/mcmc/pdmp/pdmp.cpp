#include "flymc/mcmc/pdmp/pdmp.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "../run/run_blocks.hpp"
#include "../run/run_chains.hpp"
#include "../run/run_skeleton.hpp"
#include "bouncy.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/models/model_kinds.hpp"
#include "zigzag.hpp"

namespace flymc {

namespace {
// SBPS: nodes of the band's interpolation per time scale (bouncy.cpp places 64 of them ahead).
constexpr double kBandNodesPerScale = 16.0;

bool is_zigzag(Algo a) { return a == Algo::zigzag_ss || a == Algo::zigzag_cv; }

/// T of the coordinates u = T⁻¹θ the chains move in (docs/math.md §7.6): the Cholesky factor of
/// the Laplace covariance (laplace), its diagonal's square roots (laplace-diag), or empty, T = I
/// (none). Where the fit gives no usable factor (a covariance that is not positive definite, a
/// variance that is not a finite positive number) the diagonal, then the identity, stands in for
/// it, so that a failed fit cannot break the run.
Mat chain_transform(const RunConfig& cfg, const MapResult& map) {
  if (cfg.pdmp_precondition == PdmpPrecondition::none) return {};
  const Mat& cov = map.covariance;
  if (cfg.pdmp_precondition == PdmpPrecondition::laplace) {
    const Eigen::LLT<Mat> llt(cov);
    if (llt.info() == Eigen::Success && llt.matrixL().toDenseMatrix().allFinite())
      return llt.matrixL().toDenseMatrix();
  }
  Mat t = Mat::Identity(cov.rows(), cov.cols());
  for (Eigen::Index j = 0; j < cov.rows(); ++j) {
    const double v = cov(j, j);
    if (std::isfinite(v) && v > 0.0 && std::isfinite(std::sqrt(v))) t(j, j) = std::sqrt(v);
  }
  return t;
}

/// The features Tᵀx (rows of X T, one GEMM), built once per run and shared by every chain:
/// u·(Tᵀx) = θ·x.
std::shared_ptr<const Dataset> transformed_data(const Dataset& ds, const Mat& t) {
  using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  // Doubles even from float storage: the products of the stored values, not rounded again.
  auto out = std::make_shared<Dataset>(ds.n(), ds.d(), ds.source());
  const auto p = static_cast<Eigen::Index>(ds.d());
  const Stride stride(static_cast<Eigen::Index>(ds.stride()));
  for (std::size_t lo = 0; lo < ds.n(); lo += kReduceGrain) {  // in chunks: rows may be floats
    const std::size_t hi = std::min(ds.n(), lo + kReduceGrain);
    const auto m = static_cast<Eigen::Index>(hi - lo);
    const RowsF64 rows = ds.rows(lo, hi);
    const Eigen::Map<const RowMat, 0, Stride> x(rows.data(), m, p, stride);
    Eigen::Map<RowMat, 0, Stride> y(out->mutable_row(lo), m, p, stride);
    y.noalias() = x * t;
  }
  out->mutable_y().assign(ds.y().begin(), ds.y().end());
  return out;
}

/// The prior's precision in u: TᵀT/σ² (empty for T = I).
Mat prior_precision(const Mat& t, double precision) {
  if (t.size() == 0) return {};
  return precision * (t.transpose() * t);
}

/// u_MAP = T⁻¹θ_MAP, the control variates' point in the chains' coordinates.
Vec chain_map(const MapResult& map, const Mat& t) {
  if (t.size() == 0) return map.theta;
  return t.triangularView<Eigen::Lower>().solve(map.theta);
}

/// σ_β of SBPS's slope prior: the trace of the Laplace precision in the chains' coordinates
/// (TᵀΣ⁻¹T), at least its largest eigenvalue, so the prior is weak beside what G's slope w·H·w
/// can be for |w| ≈ 1.
double slope_prior_sd(const MapResult& map, const Mat& t) {
  const Mat prec = map.covariance.inverse();
  const double tr = t.size() == 0 ? prec.trace() : (t.transpose() * prec * t).trace();
  return std::isfinite(tr) && tr > 0.0 ? tr : 1.0;
}
}  // namespace

double pdmp_time_scale(Algo algo, const MapResult& map, const Mat& transform) {
  const auto p = map.covariance.rows();
  Mat cov = map.covariance;  // in u: T⁻¹ Σ T⁻ᵀ
  if (transform.size() != 0) {
    const Mat a = transform.triangularView<Eigen::Lower>().solve(cov);
    cov = transform.triangularView<Eigen::Lower>().solve(a.transpose());
  }
  double s = 0.0;
  for (Eigen::Index j = 0; j < p; ++j) s += std::sqrt(cov(j, j));
  s /= static_cast<double>(p);
  return is_zigzag(algo) ? s : s * std::sqrt(static_cast<double>(p));
}

/// The chains of a piecewise-deterministic run, to its end (a fixed length or an ESS target),
/// each with its draw sink made and closed in its own task; the parallel region's wall time is
/// split between warm-up and sampling by the chains' own timers.
template <class C>
void run_pdmp_chains(const detail::PdmpShared& sh, const SinkFactory& sinks, Progress* progress,
                     RunResult& out) {
  const RunConfig& cfg = sh.cfg;
  std::vector<std::unique_ptr<DrawSink>> owned(static_cast<std::size_t>(cfg.chains));
  auto make = [&](int i) {
    auto& sink = owned[static_cast<std::size_t>(i)];
    if (sinks) sink = sinks(i + 1);
    return std::make_unique<C>(sh, i + 1, sink.get());
  };
  auto finish = [&](int i, C& c) {
    ChainResult r = c.finish();
    owned[static_cast<std::size_t>(i)].reset();  // closes the file in the chain's own task
    return r;
  };
  if (progress) progress->chains_started.store(true);
  const Stopwatch par_clock;
  const detail::BlockOutcome b =
      detail::run_blocks<C>(cfg, cost_shape(sh.data, sh.data.d()), cfg.chains, 1, false, progress,
                            make, finish, out.chains);
  detail::take_outcome(b, out);
  detail::split_wall_time(out, par_clock.seconds());
}

namespace {

/// A run of model M's family (its MAP search, then the chains on the family's per-datum
/// gradients and the model's own full-data pass).
template <class M>
RunResult run_pdmp_model(const RunRequest& r) {
  const RunConfig& cfg = r.cfg;
  detail::ModelRun<M> run(r);
  const M& model = run.model();
  RunResult& out = run.result();
  // The statistics: the chains' coordinates u = T⁻¹θ (their data's features Tᵀx) and the
  // event bounds' constants there.
  Mat transform;
  std::optional<M> moved;
  std::optional<pdmp::PdmpConstants> consts;
  double time_scale = 1.0;
  run.set_up([&] {
    transform = chain_transform(cfg, out.map);
    if (transform.size() != 0) moved.emplace(transformed_data(*r.data, transform), cfg);
    const Dataset& chain_data = moved ? moved->data() : model.data();
    const double precision = model.prior().precision(0);  // centred Gaussian (validate_pdmp)
    consts.emplace(pdmp::PdmpConstants::make(chain_data, *model.family_ptr(), precision,
                                             chain_map(out.map, transform),
                                             prior_precision(transform, precision)));
    if (cfg.algo == Algo::bps) consts->fill_curvature(chain_data);
    if (cfg.algo == Algo::lipsbps) consts->fill_lipsbps();
    if (is_zigzag(cfg.algo)) consts->fill_zigzag(chain_data, cfg.algo == Algo::zigzag_cv);
    time_scale = pdmp_time_scale(cfg.algo, out.map, transform);
    return -1;
  });
  const M& chain_model = moved ? *moved : model;
  const detail::PdmpShared sh{
      cfg,
      chain_model.data(),
      *model.family_ptr(),
      [&chain_model](const double* u, double* g) { return chain_model.log_lik_grad(u, g); },
      model.prior().sd,
      out.map,
      *consts,
      transform,
      cfg.pdmp_spacing.value_or(time_scale),
      is_zigzag(cfg.algo) ? 0.0 : cfg.refresh_rate.value_or(1.0 / time_scale),
      time_scale / kBandNodesPerScale,
      slope_prior_sd(out.map, transform),
      pdmp_draw_columns(out.names)};
  out.pdmp_spacing = sh.spacing;
  if (!is_zigzag(cfg.algo)) out.refresh_rate = sh.refresh;
  return run.finish_unsaved([&](RunResult& o) {
    if (is_zigzag(cfg.algo))
      run_pdmp_chains<detail::ZigZagChain>(sh, r.sinks, r.progress, o);
    else
      run_pdmp_chains<detail::BouncyChain>(sh, r.sinks, r.progress, o);
  });
}

}  // namespace

RunResult run_pdmp_request(const RunRequest& r) {
  return with_single_index_model(
      r.cfg.model, []<class M>(const RunRequest& req) { return run_pdmp_model<M>(req); }, r);
}

}  // namespace flymc
