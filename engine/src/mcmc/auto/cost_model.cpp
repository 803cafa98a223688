// Auto's price list (flymc/mcmc/auto/cost_model.hpp). The constants were fitted to measured runs
// of each family on the project's 2-core AVX-512 machine (docs/math.md §3.3 gives the runs and
// the fit); only their ratios decide a choice.
#include "flymc/mcmc/auto/cost_model.hpp"

#include <algorithm>

#include "flymc/core/samplers.hpp"
#include "flymc/mcmc/smh/smh.hpp"

namespace flymc {
namespace {

/// One family's prices, in nanoseconds (cost_model.hpp lists what each is per).
struct Prices {
  double query_param = 0.0;       ///< a query, per parameter
  double query_param_grad = 0.0;  ///< ... with a gradient θ-kernel (its queries carry gradients)
  double query_row = 0.0;         ///< a query, per row
  /// A query of a streamed row: per byte, added (a gathered row's cache miss) ...
  double query_byte = 0.0;
  /// ... or per byte, at least (a pass in row order, bound by memory bandwidth)
  double stream_byte = 0.0;
  double grad_param2 = 0.0;   ///< a gradient evaluation, per squared parameter
  double iter = 0.0;          ///< an iteration
  double iter_param2 = 0.0;   ///< an iteration, per squared parameter
  double iter_cubic = 0.0;    ///< an iteration, per cubic tensor entry (third-order SMH)
  double stats_param = 0.0;   ///< a statistics pass, per row and parameter
  double stats_param2 = 0.0;  ///< ... per row and squared parameter
  double stats_cubic = 0.0;   ///< ... per row and cubic tensor entry (third-order SMH)
};

// Regular MCMC: every query is a row of a full pass (value and, for NUTS, gradient), streamed in
// row order when the data do not fit the cache: then memory bandwidth bounds it.
constexpr Prices kRegular{.query_param = 0.13,
                          .query_param_grad = 0.28,
                          .query_row = 1.0,
                          .stream_byte = 0.068,
                          .grad_param2 = 0.35,
                          .iter = 400.0,
                          .iter_param2 = 0.35};
// FlyMC: bright rows packed contiguously, with their cached terms; a z-update's query reads a dark
// row where it is.
constexpr Prices kFlymc{.query_param = 0.45,
                        .query_param_grad = 0.50,
                        .query_row = 6.0,
                        .query_byte = 0.022,
                        .grad_param2 = 0.10,
                        .iter = 600.0,
                        .iter_param2 = 0.35,
                        .stats_param = 0.2,
                        .stats_param2 = 0.04};
// Scalable MH: each query gathers one row at random (a cache miss on tall data, prefetched).
constexpr Prices kSmh{.query_param = 0.40,
                      .query_param_grad = 0.40,
                      .query_row = 8.0,
                      .query_byte = 0.20,
                      .iter = 500.0,
                      .iter_param2 = 0.60,
                      .iter_cubic = 0.50,
                      .stats_param = 0.5,
                      .stats_param2 = 0.07,
                      .stats_cubic = 0.068};
// The piecewise-deterministic samplers: a query is one datum's gradient at an event.
constexpr Prices kPdmp{.query_param = 0.60,
                       .query_param_grad = 0.60,
                       .query_row = 20.0,
                       .query_byte = 0.20,
                       .iter = 2000.0,
                       .iter_param2 = 0.30};

const Prices& prices(Algo algo) {
  switch (sampler_info(algo).cost) {
    case CostFamily::full_data:
      return kRegular;
    case CostFamily::flymc:
      return kFlymc;
    case CostFamily::smh:
      return kSmh;
    default:
      return kPdmp;
  }
}

/// Third-order scalable MH: its iterations and statistics pass carry the cubic tensor.
bool third_order(const RunConfig& cfg) {
  return sampler_info(cfg.algo).cost == CostFamily::smh && cfg.smh_order == 3;
}

bool streamed(const CostShape& s) {
  return static_cast<double>(s.n) * static_cast<double>(s.d) * static_cast<double>(s.bytes) >
         kResidentBytes;
}

}  // namespace

CostShape cost_shape(const Dataset& data, std::size_t p) {
  return {data.total_n(), data.d(), p, data.storage() == Storage::f32 ? 4u : 8u};
}

double work_seconds(const RunConfig& cfg, const CostShape& shape, const Work& w) {
  const Prices& c = prices(cfg.algo);
  const auto p = static_cast<double>(shape.p);
  const double row_bytes = static_cast<double>(shape.d * shape.bytes);
  const double per_param =
      uses_gradient(cfg.kernel) && uses_theta_kernel(cfg.algo) ? c.query_param_grad : c.query_param;
  double query = per_param * p + c.query_row;
  if (streamed(shape))
    query = std::max(query + c.query_byte * row_bytes, c.stream_byte * row_bytes);
  const bool third = third_order(cfg);
  const double cubic = third ? static_cast<double>(smh::cubic_size(shape.p)) : 0.0;
  const double iter = c.iter + c.iter_param2 * p * p + c.iter_cubic * cubic;
  const double ns = w.queries * query + w.grads * c.grad_param2 * p * p + w.iterations * iter;
  return std::max(ns, 0.0) * 1e-9;
}

double statistics_seconds(const RunConfig& cfg, const CostShape& shape, double passes) {
  const Prices& c = prices(cfg.algo);
  const auto p = static_cast<double>(shape.p);
  const bool third = third_order(cfg);
  const double per_row =
      c.stats_param * p + c.stats_param2 * p * (p + 1.0) / 2.0 +
      (third ? c.stats_cubic * static_cast<double>(smh::cubic_size(shape.p)) : 0.0);
  return std::max(passes, 0.0) * static_cast<double>(shape.n) * per_row * 1e-9;
}

}  // namespace flymc
