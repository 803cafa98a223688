#pragma once
/// @file setup.hpp
/// The set-up of a run, before any chain starts: from the model and the MAP fit, the FlyMC bound
/// (with its slack ε), what is estimated from draws of the Laplace approximation (each datum's
/// expected bright probability, giving the automatic ε, the automatic z-proposal rate q and the
/// per-datum rates), the chains' initial metric and step size. Deterministic: the Laplace draws
/// come from a random stream of their own, so the chains' streams are untouched and the set-up is
/// the same at any thread count.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/mcmc/metric.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// The mean dark probability m_n = mean over `draws` of B_n/L_n = e^{−Δ_n} for every datum, from
/// M dense θ draws (M × P values, e.g. from the Laplace approximation): 1 − m_n estimates the
/// datum's expected bright probability. Fixed blocks combined in order: the same on any number
/// of threads.
template <class Bound>
std::vector<double> mean_dark_probability(const Bound& bound, const Dataset& data,
                                          const ParamLayout& lay,
                                          const std::vector<double>& draws) {
  const std::size_t n = data.n(), P = lay.dim(), K = lay.k;
  // The bound's records are indexed by the whole data set's rows (of a shard: first_row on).
  const std::size_t first = data.shard() != nullptr ? data.shard()->first_row : 0;
  const std::size_t m = P > 0 ? draws.size() / P : 0;
  std::vector<double> dark(n, 0.0);
  std::vector<AlignedBuffer> pads;
  for (std::size_t t = 0; t < m; ++t) {
    pads.push_back(aligned_zeros(lay.padded()));
    lay.pad(draws.data() + t * P, pads.back().get());
  }
  constexpr std::size_t kBlock = 2048;
  tbb::parallel_for(std::size_t{0}, (n + kBlock - 1) / kBlock, [&](std::size_t b) {
    const std::size_t lo = b * kBlock, hi = std::min(n, lo + kBlock), len = hi - lo;
    std::vector<Index> idx(len);
    for (std::size_t i = 0; i < len; ++i) idx[i] = static_cast<Index>(first + lo + i);
    std::vector<double> preds(len * K), delta(len);
    for (std::size_t t = 0; t < m; ++t) {
      range_predictors(K, data, lo, lo + len, pads[t].get(), preds.data());
      bound.deltas(idx.data(), preds.data(), len, delta.data());
      for (std::size_t i = 0; i < len; ++i) delta[i] = -delta[i];
      kernels::exp(delta.data(), delta.data(), len);
      for (std::size_t i = 0; i < len; ++i) dark[lo + i] += delta[i];
    }
    for (std::size_t i = lo; i < hi; ++i)
      dark[i] /= static_cast<double>(std::max<std::size_t>(m, 1));
  });
  return dark;
}

/// Σ_n (1 − m_n) over the data's rows in row order (`dark`: the m_n of this process's rows), added
/// one by one as one process holding every row adds them: on a shard the sum goes on from the
/// previous part's.
inline double expected_bright_count(const Dataset& data, const std::vector<double>& dark) {
  return fold_rows(
      data, 0.0,
      [](std::size_t lo, std::size_t hi) {
        return std::pair{lo, hi};
      },
      [&dark](double acc, std::pair<std::size_t, std::size_t> r) {
        for (std::size_t i = r.first; i < r.second; ++i) acc += 1.0 - dark[i];
        return acc;
      },
      [](double acc) { return std::vector<double>{acc}; },
      [](const std::vector<double>& v) { return v.at(0); });
}

/// Per-datum proposal rates for the implicit z-update (docs/math.md §1.5, the paper's discussion):
/// q_n ∝ the datum's expected bright probability p̄_n (`pbar`, e.g. 1 − mean_dark_probability),
/// scaled so that the expected number of dark proposals per sweep, Σ_n q_n (1 − p̄_n), equals
/// the uniform update's q·N, floored at q/10 (every datum keeps being proposed: the chain stays
/// irreducible) and capped at 1. Data likely to be bright are then proposed often and follow θ
/// quickly, the others rarely.
inline ZRates per_datum_rates(const std::vector<double>& pbar, double q) {
  const std::size_t n = pbar.size();
  // κ by bisection: Σ_n min(1, max(q/10, κ p̄_n))·(1 − p̄_n) = q·N.
  const double floor_q = 0.1 * q, budget = q * static_cast<double>(n);
  auto rate = [&](double kappa, double p) { return std::min(1.0, std::max(floor_q, kappa * p)); };
  auto spend = [&](double kappa) {
    double s = 0.0;
    for (double p : pbar) s += rate(kappa, p) * (1.0 - p);
    return s;
  };
  double lo = 0.0, hi = 1.0;
  while (spend(hi) < budget && hi < 1e12) hi *= 2.0;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (spend(mid) < budget ? lo : hi) = mid;
  }
  std::vector<double> log_rates(n);
  for (std::size_t i = 0; i < n; ++i) log_rates[i] = std::log(rate(hi, pbar[i]));
  return ZRates(std::move(log_rates));
}

/// Eight draws of the Laplace approximation N(θ_MAP, Σ) from the stream Rng(seed, 0x5eedf1f1),
/// 8 × P dense values.
std::vector<double> laplace_draws(const MapResult& map, std::uint64_t seed);

/// The initial metric of every chain (RunConfig::metric; docs/math.md §3) that the MAP fit alone
/// determines (all but Metric::fly: chain_metric()).
InverseMetric initial_metric(const RunConfig& cfg, const MapResult& map);

/// −∇² Σ_n log B_n at `at` (dense, P × P): the curvature of FlyMC's collapsed bound. The sum is
/// a quadratic in θ, so its gradient is affine and unit-step differences of the gradient give
/// the Hessian exactly up to rounding: P evaluations of the collapsed statistics, independent
/// of N.
template <class Bound>
Mat bound_curvature(const Bound& bound, const ParamLayout& lay, const Vec& at) {
  const std::size_t P = lay.dim();
  const auto ep = static_cast<Eigen::Index>(P);
  AlignedBuffer tp = aligned_zeros(lay.padded()), gp = aligned_zeros(lay.padded());
  AlignedBuffer scratch = aligned_zeros(bound.scratch_size());
  std::vector<double> theta(at.data(), at.data() + P), g0(P), g1(P);
  auto gradient = [&](std::vector<double>& g) {
    lay.pad(theta.data(), tp.get());
    bound.log_bound_sum(tp.get(), scratch.get(), gp.get());
    lay.unpad(gp.get(), g.data());
  };
  gradient(g0);
  Mat h(ep, ep);
  for (std::size_t j = 0; j < P; ++j) {
    theta[j] += 1.0;
    gradient(g1);
    theta[j] = at[static_cast<Eigen::Index>(j)];
    for (std::size_t i = 0; i < P; ++i)
      h(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = g0[i] - g1[i];
  }
  return 0.5 * (h + h.transpose());
}

/// Metric::fly (docs/math.md §3.2): the inverse of the precision Λ = 1/σ²·I + (−∇² Σ_n log B_n),
/// the prior's (Prior::precision()) plus the collapsed bound's
/// curvature: where the data are dark, p(θ | z) is this Gaussian. With `blend` = w > 0,
/// Λ = (1 − w)·Λ + w·Σ_MAP⁻¹ moves it toward the posterior's Laplace precision, which accounts
/// for the bright data replacing their bound by their likelihood.
template <FireflyModel M>
InverseMetric fly_metric(const M& model, const typename M::Bound& bound, const MapResult& map,
                         double blend) {
  const Eigen::Index p = map.theta.size();
  const Mat eye = Mat::Identity(p, p);
  Mat prec = bound_curvature(bound, model.layout(), map.theta);
  add_prior_precision(model.prior(), prec);
  if (blend > 0.0) prec = (1.0 - blend) * prec + blend * Eigen::LLT<Mat>(map.covariance).solve(eye);
  Mat cov = Eigen::LLT<Mat>(prec).solve(eye);
  return InverseMetric::dense(0.5 * (cov + cov.transpose()));
}
/// The initial step size (slice: interval width): RunConfig::step_size, or the optimal scaling
/// of the kernel in P dimensions in the units of the Laplace fit.
double initial_step_size(const RunConfig& cfg, const MapResult& map, std::size_t p);

/// What the set-up decided for FlyMC. For regular MCMC only q_dark_to_bright is filled (the
/// value an implicit z-update would use, reported but unused).
template <FireflyModel M>
struct RunSetup {
  std::optional<typename M::Bound> bound;  ///< FlyMC's bound, with the slack ε below
  std::optional<ZRates> rates;             ///< per-datum z-proposal rates (RunConfig::q_per_datum)
  double bound_slack = 0.0;                ///< ε, resolved if automatic
  double q_dark_to_bright = 0.0;           ///< q, resolved if automatic
  int passes = 0;  ///< passes over the data rows that built all this (-1: not counted)
};

/// Passes over the data rows that Bound::make makes: Bound::kBuildPasses, or -1 (not counted).
template <class Bound>
constexpr int bound_build_passes() {
  if constexpr (requires { Bound::kBuildPasses; })
    return Bound::kBuildPasses;
  else
    return -1;
}

/// a + b passes, -1 if either is not counted.
constexpr int add_passes(int a, int b) { return a < 0 || b < 0 ? -1 : a + b; }

/// The initial metric of every chain of a run set up as `setup`.
template <FireflyModel M>
InverseMetric chain_metric(const M& model, const RunConfig& cfg, const MapResult& map,
                           const RunSetup<M>& setup) {
  if (cfg.resolved_metric() == Metric::fly && setup.bound)
    return fly_metric(model, *setup.bound, map, cfg.fly_metric_blend);
  return initial_metric(cfg, map);
}

/// RunConfig::slack_scale (docs/math.md §1.5): lowers datum n's log B_n by α·p̄_n, p̄_n = 1 − m_n
/// its expected bright probability under the bound with ε but without this slack (`dark` holds
/// the m_n, the mean B/L, and becomes the mean B/L with it). Only bounds that keep a constant per
/// datum offer it.
template <class Bound>
void add_scaled_slack(Bound& bound, double alpha, std::vector<double>& dark) {
  if constexpr (requires { bound.add_slack(dark); }) {
    std::vector<double> eps(dark.size());
    for (std::size_t i = 0; i < dark.size(); ++i) {
      eps[i] = alpha * (1.0 - dark[i]);
      dark[i] *= std::exp(-eps[i]);
    }
    bound.add_slack(eps);
  } else {
    throw ConfigError("--slack-scale: this model's bound has no per-datum constant");
  }
}

/// Builds the bound and resolves the automatic ε and q (docs/math.md §1.2, §1.5). The expected
/// bright probabilities are estimated only when something needs them (automatic ε, automatic q
/// below its cap, or per-datum rates). `bound_excess` > 0 raises every log B_n by that much: an
/// invalid bound, a fault injected for the tests of violation detection (FaultInjection,
/// sampler.hpp).
template <FireflyModel M>
RunSetup<M> prepare_run(const M& model, const RunConfig& cfg, const MapResult& map,
                        double bound_excess = 0.0) {
  using Bound = typename M::Bound;
  const Dataset& data = model.data();
  const std::size_t total = data.total_n();  // of a shard, the whole data set's rows
  RunSetup<M> out;
  out.bound_slack = cfg.bound_slack.value_or(0.0);
  // The automatic q is the kernel's cap up to N = 32/cap whatever the bright count
  // (auto_q_dark_to_bright).
  const double q_cap = auto_q_cap(cfg.kernel);
  out.q_dark_to_bright = cfg.q_dark_to_bright.value_or(auto_q_dark_to_bright(0.0, total, q_cap));
  if (cfg.algo != Algo::flymc) return out;
  RunConfig bc = cfg;
  bc.bound_slack = out.bound_slack;
  out.bound.emplace(Bound::make(model, bc, map));
  out.passes = bound_build_passes<Bound>();
  const bool auto_slack = !cfg.bound_slack;
  const bool per_datum = cfg.z == ZUpdate::implicit && cfg.q_per_datum;
  const bool auto_q =
      cfg.z == ZUpdate::implicit && !cfg.q_dark_to_bright && out.q_dark_to_bright < q_cap;
  const bool scaled_slack = cfg.slack_scale > 0.0;
  if ((per_datum || scaled_slack) && shard_link(data) != nullptr)
    throw ConfigError(std::string(per_datum ? "--q-per-datum" : "--slack-scale") +
                      " does not run on data sharded over processes yet");
  if (auto_slack || per_datum || auto_q || scaled_slack) {
    std::vector<double> dark =
        mean_dark_probability(*out.bound, data, model.layout(), laplace_draws(map, cfg.seed));
    out.passes = add_passes(out.passes, 1);
    auto expected_bright = [&] { return expected_bright_count(data, dark); };
    if (auto_slack) {
      // ε = ¼ · (expected bright count)/N: about a quarter more bright data, in exchange for no
      // bright datum pulling log p(θ | z) to −∞ at its tight point (docs/math.md §1.5).
      out.bound_slack = 0.25 * expected_bright() / static_cast<double>(total);
      bc.bound_slack = out.bound_slack;
      if constexpr (requires(Bound & b) { b.add_uniform_slack(0.0); }) {
        out.bound->add_uniform_slack(out.bound_slack);
        out.passes = add_passes(out.passes, 1);
      } else {
        // The bound without slack goes first: never two bounds, each a record per datum, at once.
        out.bound.reset();
        out.bound.emplace(Bound::make(model, bc, map));
        out.passes = add_passes(out.passes, bound_build_passes<Bound>());
      }
      const double shrink = std::exp(-out.bound_slack);
      for (double& m : dark) m *= shrink;  // B/L with the slack: e^{−ε}·B/L
    }
    if (scaled_slack) add_scaled_slack(*out.bound, cfg.slack_scale, dark);
    if (auto_q) out.q_dark_to_bright = auto_q_dark_to_bright(expected_bright(), total, q_cap);
    if (per_datum) {
      for (double& m : dark) m = 1.0 - m;
      out.rates.emplace(per_datum_rates(dark, out.q_dark_to_bright));
    }
  }
  if (bound_excess > 0.0) out.bound->raise_for_testing(bound_excess);
  return out;
}

}  // namespace flymc
