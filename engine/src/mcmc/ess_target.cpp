// Runs sized in effective draws (flymc/mcmc/ess_target.hpp): the check at a block's end and the
// schedule of block ends.
#include "flymc/mcmc/ess_target.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "flymc/diagnostics/diagnostics.hpp"

namespace flymc {

TargetStatus target_status(const std::vector<const std::vector<double>*>& draws, std::size_t dim,
                           const RunConfig& cfg, long sampling_iters) {
  TargetStatus s;
  s.sampling_iters = sampling_iters;
  const auto kept = static_cast<std::size_t>((sampling_iters + cfg.thin - 1) / cfg.thin);
  std::vector<double> bulk(dim), tail(dim), rh(dim);
  // Each coordinate's diagnostics are independent and computed alike at any thread count.
  tbb::parallel_for(std::size_t{0}, dim, [&](std::size_t j) {
    ChainDraws x(draws.size(), std::vector<double>(kept));
    for (std::size_t c = 0; c < draws.size(); ++c)
      for (std::size_t i = 0; i < kept; ++i) x[c][i] = (*draws[c])[i * dim + j];
    bulk[j] = ess_bulk(x);
    tail[j] = ess_tail(x);
    rh[j] = rhat(x);
  });
  // NaN (too few draws, or a constant coordinate) counts as not there yet.
  auto finite_or = [](double v, double alt) { return std::isfinite(v) ? v : alt; };
  s.min_ess_bulk = s.min_ess_tail = std::numeric_limits<double>::infinity();
  bool rhat_known = true;
  for (std::size_t j = 0; j < dim; ++j) {
    s.min_ess_bulk = std::min(s.min_ess_bulk, finite_or(bulk[j], 0.0));
    s.min_ess_tail = std::min(s.min_ess_tail, finite_or(tail[j], 0.0));
    rhat_known = rhat_known && std::isfinite(rh[j]);
    s.max_rhat = std::max(s.max_rhat, finite_or(rh[j], 0.0));
  }
  if (!rhat_known) s.max_rhat = std::numeric_limits<double>::quiet_NaN();
  if (dim == 0) s.min_ess_bulk = s.min_ess_tail = 0.0;
  s.reached = dim > 0 && s.min_ess_bulk >= cfg.ess && s.min_ess_tail >= cfg.ess &&
              s.max_rhat <= cfg.max_rhat;
  return s;
}

long first_block_end(const RunConfig& cfg) {
  const double per_chain = std::ceil(cfg.ess / static_cast<double>(std::max(1, cfg.chains)));
  const long b =
      std::clamp(static_cast<long>(std::min(per_chain, 1e12)), kMinBlock, kMaxFirstBlock);
  return std::min(b, cfg.iters);
}

long next_block_end(const RunConfig& cfg, const TargetStatus& s) {
  const long done = std::max(1L, s.sampling_iters);
  const double d = static_cast<double>(done);
  const double m = std::min(s.min_ess_bulk, s.min_ess_tail);
  double want = 2.0 * d;  // nothing measured yet: double
  if (m >= cfg.ess)
    want = 1.5 * d;  // ESS there, R̂ not yet
  else if (m > 0.0)
    want = 1.1 * d * cfg.ess / m;  // ESS grows about linearly in the iterations
  const double lo = d + std::max(static_cast<double>(kMinBlock) / 2.0, 0.1 * d);
  want = std::clamp(want, lo, 2.0 * d);
  const long next = static_cast<long>(std::min(std::ceil(want), 1e12));
  return std::min(next, cfg.iters);
}

}  // namespace flymc
