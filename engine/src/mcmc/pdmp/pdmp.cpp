#include "flymc/mcmc/pdmp/pdmp.hpp"

#include <cmath>
#include <optional>
#include <string>

#include "../run_chains.hpp"
#include "bouncy.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "zigzag.hpp"

namespace flymc {

namespace {
// SBPS: nodes of the band's interpolation per time scale (bouncy.cpp places 64 of them ahead).
constexpr double kBandNodesPerScale = 16.0;

bool is_zigzag(Algo a) { return a == Algo::zigzag_ss || a == Algo::zigzag_cv; }

/// S of the coordinates u = S⁻¹θ the chains move in (docs/math.md §7.6): the Laplace sds at
/// θ_MAP, or empty (S = I) for --pdmp-precondition none. A coordinate whose sd is not a finite
/// positive number keeps the scale 1, so that a failed fit cannot break the run.
std::vector<double> chain_scale(const RunConfig& cfg, const MapResult& map) {
  if (cfg.pdmp_precondition == PdmpPrecondition::none) return {};
  std::vector<double> s(static_cast<std::size_t>(map.covariance.rows()), 1.0);
  for (std::size_t j = 0; j < s.size(); ++j) {
    const double v = map.covariance(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j));
    if (std::isfinite(v) && v > 0.0 && std::isfinite(std::sqrt(v))) s[j] = std::sqrt(v);
  }
  return s;
}

/// The features S x, built once per run and shared by every chain (u·(S x) = θ·x).
std::shared_ptr<const Dataset> scaled_data(const Dataset& ds, const std::vector<double>& s) {
  auto out = std::make_shared<Dataset>(ds.n(), ds.d(), ds.source());
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const double* x = ds.row(i);
    double* y = out->mutable_row(i);
    for (std::size_t j = 0; j < ds.d(); ++j) y[j] = s[j] * x[j];
  }
  out->mutable_y().assign(ds.y().begin(), ds.y().end());
  return out;
}

/// The prior's precision weights in u: λ_j = s_j²/σ², so weight s_j² (empty for S = I).
std::vector<double> prior_weight(const std::vector<double>& s) {
  std::vector<double> w(s.size());
  for (std::size_t j = 0; j < s.size(); ++j) w[j] = s[j] * s[j];
  return w;
}

/// u_MAP = S⁻¹θ_MAP, the control variates' point in the chains' coordinates.
Vec chain_map(const MapResult& map, const std::vector<double>& s) {
  Vec u = map.theta;
  for (std::size_t j = 0; j < s.size(); ++j) u[static_cast<Eigen::Index>(j)] /= s[j];
  return u;
}

/// σ_β of SBPS's slope prior: the trace of the Laplace precision in the chains' coordinates
/// (S Σ⁻¹ S), at least its largest eigenvalue, so the prior is weak beside what G's slope w·H·w
/// can be for |w| ≈ 1.
double slope_prior_sd(const MapResult& map, const std::vector<double>& s) {
  const Mat prec = map.covariance.inverse();
  double tr = 0.0;
  for (Eigen::Index j = 0; j < prec.rows(); ++j)
    tr += s.empty() ? prec(j, j)
                    : prec(j, j) * s[static_cast<std::size_t>(j)] * s[static_cast<std::size_t>(j)];
  return std::isfinite(tr) && tr > 0.0 ? tr : 1.0;
}
}  // namespace

double pdmp_time_scale(Algo algo, const MapResult& map, const std::vector<double>& scale) {
  const auto p = map.covariance.rows();
  double s = 0.0;
  for (Eigen::Index j = 0; j < p; ++j) {
    const double sd = std::sqrt(map.covariance(j, j));
    s += scale.empty() ? sd : sd / scale[static_cast<std::size_t>(j)];
  }
  s /= static_cast<double>(p);
  return is_zigzag(algo) ? s : s * std::sqrt(static_cast<double>(p));
}

RunResult run_pdmp(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                   const SinkFactory& sinks, Progress* progress,
                   const CheckpointOptions* checkpoint) {
  cfg.validate();  // the model and prior checks (run() validated already; callers may not)
  const Stopwatch setup_clock;
  const LogisticModel model(data, cfg);
  RunResult out = detail::start_logistic_run(cfg, model, checkpoint);
  const std::vector<double> scale = chain_scale(cfg, out.map);
  std::optional<LogisticModel> scaled;
  if (!scale.empty()) scaled.emplace(scaled_data(*data, scale), cfg);
  const LogisticModel& chain_model = scaled ? *scaled : model;
  const auto consts = pdmp::LogisticPdmpConstants::make(chain_model, chain_map(out.map, scale),
                                                        prior_weight(scale));
  const double time_scale = pdmp_time_scale(cfg.algo, out.map, scale);
  const detail::PdmpShared sh{
      cfg,
      chain_model,
      out.map,
      consts,
      scale,
      cfg.pdmp_spacing.value_or(time_scale),
      is_zigzag(cfg.algo) ? 0.0 : cfg.refresh_rate.value_or(1.0 / time_scale),
      time_scale / kBandNodesPerScale,
      slope_prior_sd(out.map, scale),
      pdmp_draw_columns(out.names)};
  out.pdmp_spacing = sh.spacing;
  if (!is_zigzag(cfg.algo)) out.refresh_rate = sh.refresh;
  out.setup_seconds = setup_clock.seconds();
  if (is_zigzag(cfg.algo)) {
    detail::run_independent_chains(cfg, sinks, progress, out, [&](int id, DrawSink* sink) {
      return detail::ZigZagChain(sh, id, sink);
    });
  } else {
    detail::run_independent_chains(cfg, sinks, progress, out, [&](int id, DrawSink* sink) {
      return detail::BouncyChain(sh, id, sink);
    });
  }
  return out;
}

}  // namespace flymc
