#include "flymc/mcmc/pdmp/pdmp.hpp"

#include <cmath>
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

/// σ_β of SBPS's slope prior: the trace of the Laplace precision, at least its largest
/// eigenvalue, so the prior is weak beside what G's slope w·H·w can be for |w| ≈ 1.
double slope_prior_sd(const MapResult& map) {
  const Mat prec = map.covariance.inverse();
  const double tr = prec.trace();
  return std::isfinite(tr) && tr > 0.0 ? tr : 1.0;
}
}  // namespace

double pdmp_time_scale(Algo algo, const MapResult& map) {
  const auto p = map.covariance.rows();
  double s = 0.0;
  for (Eigen::Index j = 0; j < p; ++j) s += std::sqrt(map.covariance(j, j));
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
  const auto consts = pdmp::LogisticPdmpConstants::make(model, out.map.theta);
  const double scale = pdmp_time_scale(cfg.algo, out.map);
  const detail::PdmpShared sh{cfg,
                              model,
                              out.map,
                              consts,
                              cfg.pdmp_spacing.value_or(scale),
                              is_zigzag(cfg.algo) ? 0.0 : cfg.refresh_rate.value_or(1.0 / scale),
                              scale / kBandNodesPerScale,
                              slope_prior_sd(out.map),
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
