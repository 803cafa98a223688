// Geweke's joint-distribution test (flymc/validate/validate.hpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/fly/theta_kernels.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/validate/validate.hpp"

namespace flymc {

using namespace validate_detail;

void GewekeOptions::validate() const {
  if (n < 1) throw ConfigError("--n must be >= 1");
  if (d < 1) throw ConfigError("--d must be >= 1");
  if (!(prior_sd > 0.0) || !std::isfinite(prior_sd))
    throw ConfigError("--prior-sd must be positive and finite");
  if (!(q_dark_to_bright > 0.0 && q_dark_to_bright <= 1.0))
    throw ConfigError("--q-dark-to-bright must be in (0, 1]");
  if (!(resample_fraction > 0.0 && resample_fraction <= 1.0))
    throw ConfigError("--resample-fraction must be in (0, 1]");
  if (!(untuned_xi >= 0.0) || !std::isfinite(untuned_xi))
    throw ConfigError("--untuned-xi must be finite and >= 0");
  if (!(bound_slack >= 0.0) || !std::isfinite(bound_slack))
    throw ConfigError("--bound-slack must be finite and >= 0");
  if (!(step_size > 0.0) || !std::isfinite(step_size))
    throw ConfigError("--step-size must be positive and finite");
  if (theta_steps < 1) throw ConfigError("--theta-steps must be >= 1");
  if (hmc_steps < 1) throw ConfigError("--hmc-steps must be >= 1");
  if (sweeps < 1) throw ConfigError("--sweeps must be >= 1");
  if (chains < 1) throw ConfigError("--chains must be >= 1");
  if (batches < 2) throw ConfigError("--batches must be >= 2");
  if (iters < batches) throw ConfigError("--iters must be >= --batches");
  if (burn < 0) throw ConfigError("--burn must be >= 0");
  if (mc_draws < 2L * chains) throw ConfigError("--mc-draws must be >= 2 x chains");
  if (threads < 0) throw ConfigError("--threads must be >= 0");
  if (!(alpha > 0.0 && alpha < 1.0)) throw ConfigError("--alpha must be in (0, 1)");
}

bool GewekeResult::passed() const {
  return std::all_of(stats.begin(), stats.end(), [](const GewekeStat& g) { return g.pass; });
}

double expected_bright_fraction_untuned(const double* rows, std::size_t n, std::size_t d,
                                        std::size_t stride, double prior_sd, double xi,
                                        double slack) {
  const double lam = jj_lambda(xi);
  const double c = std::exp(-slack + lam * xi * xi) / std::cosh(0.5 * xi);
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    double nx = 0.0;
    for (std::size_t j = 0; j < d; ++j) nx += rows[i * stride + j] * rows[i * stride + j];
    const double s2 = prior_sd * prior_sd * nx, u = 1.0 + 2.0 * lam * s2;
    sum += 1.0 - c / std::sqrt(u) * std::exp(s2 / (8.0 * u));
  }
  return sum / static_cast<double>(n);
}

namespace {

/// Test functions g(θ, y, z): θ_j, θ_j², θ_j·s_j with s = (1/n) Σ t_n x_n, and for FlyMC the
/// bright fraction z̄ and the bright margin (1/n) Σ z_n t_n x_n·θ.
struct GewekeLayout {
  std::size_t d;
  bool fly;
  std::size_t count() const { return 3 * d + (fly ? 2 : 0); }
};

std::vector<std::string> geweke_names(const GewekeLayout& l) {
  std::vector<std::string> v;
  for (std::size_t j = 1; j <= l.d; ++j) v.push_back("theta." + std::to_string(j));
  for (std::size_t j = 1; j <= l.d; ++j) v.push_back("theta." + std::to_string(j) + "^2");
  for (std::size_t j = 1; j <= l.d; ++j)
    v.push_back("theta." + std::to_string(j) + "*s." + std::to_string(j));
  if (l.fly) {
    v.push_back("bright_frac");
    v.push_back("bright_margin");
  }
  return v;
}

/// θ, y parts of the test functions into g[0, 3d).
void theta_y_functions(const Dataset& ds, const double* theta, double* g) {
  const std::size_t d = ds.d(), n = ds.n();
  const auto y = ds.y();
  for (std::size_t j = 0; j < d; ++j) {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += y[i] * ds.row(i)[j];
    s /= static_cast<double>(n);
    g[j] = theta[j];
    g[d + j] = theta[j] * theta[j];
    g[2 * d + j] = theta[j] * s;
  }
}

/// The bound for the current labels (rebuilt whenever y changes): untuned anchored at θ (the
/// anchor affects rounding only), or MAP-tuned at the full-data MAP of these labels.
LogisticBound make_bound(const GewekeOptions& o, const LogisticModel& model, const double* theta) {
  if (o.bound == BoundTuning::map) {
    const MapResult map = model.find_map();
    return LogisticBound::map_tuned(model, map.theta, o.bound_slack);
  }
  Vec anchor(static_cast<Eigen::Index>(model.dim()));
  for (Eigen::Index j = 0; j < anchor.size(); ++j) anchor[j] = theta[j];
  return LogisticBound::untuned(model, o.untuned_xi, anchor, o.bound_slack);
}

/// Per-task accumulators: batch sums of every test function.
struct Accum {
  std::vector<double> batch_means;  // batches × functions
  std::vector<double> sum, sum_sq;  // for i.i.d. standard errors
  long count = 0;
  double accept = 0.0;
  long steps = 0;
  std::uint64_t violations = 0, nonfinite = 0;
};

/// One chain of the successive-conditional simulator.
Accum successive_conditional(const GewekeOptions& o, const Dataset& design, int chain,
                             std::atomic<long>* progress) {
  const std::size_t d = o.d, n = o.n, stride = design.stride();
  const GewekeLayout lay{d, o.algo == Algo::flymc};
  const std::size_t ng = lay.count();
  Rng rng(o.seed, static_cast<std::uint64_t>(chain));
  auto ds = std::make_shared<Dataset>(n, d, "geweke chain " + std::to_string(chain));
  for (std::size_t i = 0; i < n; ++i)
    std::copy(design.row(i), design.row(i) + stride, ds->mutable_row(i));
  ThetaState st;
  st.theta.resize(d);
  st.grad.assign(d, 0.0);
  for (std::size_t j = 0; j < d; ++j) st.theta[j] = o.prior_sd * rng.normal();
  const double* theta = st.theta.data();

  std::vector<Index> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = static_cast<Index>(i);
  // A fixed step size and metric: adaptation would break the invariance being tested.
  RunConfig kc;
  kc.kernel = o.kernel;
  kc.hmc_steps = o.hmc_steps;
  kc.slice_mode = o.slice_mode;
  kc.metric = Metric::identity;
  kc.adapt_metric = false;
  ThetaKernel kernel(kc, d, InverseMetric::identity(d), o.step_size);
  Counters cnt;
  ZScratch zs;
  ImplicitZUpdater imp(o.q_dark_to_bright);
  ExplicitZUpdater expl(o.resample_fraction);
  const long per_batch = o.iters / o.batches;
  const long total = o.burn + per_batch * o.batches;
  Accum acc;
  acc.batch_means.assign(static_cast<std::size_t>(o.batches) * ng, 0.0);
  std::vector<double> g(ng);
  for (long t = 0; t < total; ++t) {
    // (y, z) | θ: y ~ p(y | θ), then z ~ p(z | θ, y) exactly under the bound rebuilt for y.
    {
      AlignedBuffer tp = aligned_zeros(stride);
      std::copy(theta, theta + d, tp.get());
      simulate_labels(*ds, tp.get(), rng);
    }
    const LogisticModel model(ds, o.prior_sd);
    double a_sum = 0.0;
    if (lay.fly) {
      const LogisticBound bound = make_bound(o, model, theta);
      BrightSet bright(*ds);
      FlyTarget fly(model, bound, bright);
      fly.set_current(theta);
      gibbs_z(bound, *ds, bright, fly.current_padded(), all.data(), n, rng, cnt, zs);
      auto refresh = [&] {
        if (kernel.needs_gradient()) {
          st.logp = fly.eval_grad(theta, st.grad.data(), cnt);
          fly.accept();
        } else {
          st.logp = fly.current();
        }
      };
      refresh();
      // (θ, z) | y: the FlyMC transition, `sweeps` rounds of θ-steps then a z-sweep.
      for (int s = 0; s < o.sweeps; ++s) {
        for (int k = 0; k < o.theta_steps; ++k) {
          a_sum += kernel.step(rng, st, fly, cnt).accept_stat;
        }
        if (o.z == ZUpdate::implicit) {
          imp.update(bound, *ds, bright, fly.current_padded(), rng, cnt);
        } else {
          expl.update(bound, *ds, bright, fly.current_padded(), rng, cnt);
        }
        refresh();
      }
      theta_y_functions(*ds, theta, g.data());
      double margin = 0.0;
      for (std::size_t i = 0; i < bright.size(); ++i) {
        const Index m = bright.bright(i);
        margin += ds->y()[m] * kernels::dot(ds->row(m), fly.current_padded(), stride);
      }
      g[3 * d] = static_cast<double>(bright.size()) / static_cast<double>(n);
      g[3 * d + 1] = margin / static_cast<double>(n);
    } else {
      FullTarget full(model);
      st.logp = kernel.needs_gradient() ? full.eval_grad(theta, st.grad.data(), cnt)
                                        : full.eval(theta, cnt);
      for (int s = 0; s < o.sweeps * o.theta_steps; ++s)
        a_sum += kernel.step(rng, st, full, cnt).accept_stat;
      theta_y_functions(*ds, theta, g.data());
    }
    if (t >= o.burn) {
      acc.accept += a_sum;
      acc.steps += o.sweeps * o.theta_steps;
      const auto b = static_cast<std::size_t>((t - o.burn) / per_batch);
      for (std::size_t k = 0; k < ng; ++k)
        acc.batch_means[b * ng + k] += g[k] / static_cast<double>(per_batch);
    }
    if (progress && (t & 1023) == 1023) progress->fetch_add(1024, std::memory_order_relaxed);
  }
  acc.violations = cnt.bound_violations;
  acc.nonfinite = cnt.nonfinite;
  return acc;
}

/// One block of the marginal-conditional simulator: θ ~ p(θ), y ~ p(y | θ); the z-functions are
/// Rao–Blackwellized, E[z_n | θ, y] = 1 − B_n/L_n under the bound built for y.
Accum marginal_conditional(const GewekeOptions& o, const Dataset& design, long draws, int block) {
  const std::size_t d = o.d, n = o.n, stride = design.stride();
  const GewekeLayout lay{d, o.algo == Algo::flymc};
  const std::size_t ng = lay.count();
  Rng rng(o.seed, 1000000u + static_cast<std::uint64_t>(block));
  auto ds = std::make_shared<Dataset>(n, d, "geweke marginal-conditional");
  for (std::size_t i = 0; i < n; ++i)
    std::copy(design.row(i), design.row(i) + stride, ds->mutable_row(i));
  AlignedBuffer theta = aligned_zeros(stride);
  Accum acc;
  acc.sum.assign(ng, 0.0);
  acc.sum_sq.assign(ng, 0.0);
  std::vector<double> g(ng);
  for (long t = 0; t < draws; ++t) {
    for (std::size_t j = 0; j < d; ++j) theta[j] = o.prior_sd * rng.normal();
    simulate_labels(*ds, theta.get(), rng);
    theta_y_functions(*ds, theta.get(), g.data());
    if (lay.fly) {
      const LogisticModel model(ds, o.prior_sd);
      const LogisticBound bound = make_bound(o, model, theta.get());
      double frac = 0.0, margin = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        const Index m = static_cast<Index>(i);
        const double dot = kernels::dot(ds->row(i), theta.get(), stride);
        const double delta = std::max(0.0, bound.log_lik(m, dot) - bound.log_bound(m, dot));
        const double p = -std::expm1(-delta);
        frac += p;
        margin += p * ds->y()[i] * dot;
      }
      g[3 * d] = frac / static_cast<double>(n);
      g[3 * d + 1] = margin / static_cast<double>(n);
    }
    for (std::size_t k = 0; k < ng; ++k) {
      acc.sum[k] += g[k];
      acc.sum_sq[k] += g[k] * g[k];
    }
  }
  acc.count = draws;
  return acc;
}

}  // namespace

GewekeResult run_geweke(const GewekeOptions& o, std::atomic<long>* progress) {
  o.validate();
  const auto t0 = Clock::now();
  const std::size_t d = o.d, n = o.n;
  const GewekeLayout lay{d, o.algo == Algo::flymc};
  const std::size_t ng = lay.count();
  // The design is fixed for the whole test (Geweke conditions on the covariates).
  Dataset design(n, d, "geweke design");
  {
    Rng rng(o.seed, ~std::uint64_t{0});
    simulate_design(design, rng);
  }
  // Tasks: the chains, then as many marginal-conditional blocks.
  const int blocks = o.chains;
  std::vector<Accum> sc(static_cast<std::size_t>(o.chains)), mc(static_cast<std::size_t>(blocks));
  parallel_tasks(o.chains + blocks, o.threads, [&](int i) {
    if (i < o.chains) {
      sc[static_cast<std::size_t>(i)] = successive_conditional(o, design, i, progress);
    } else {
      const int b = i - o.chains;
      const long per = o.mc_draws / blocks + (b < o.mc_draws % blocks ? 1 : 0);
      mc[static_cast<std::size_t>(b)] = marginal_conditional(o, design, per, b);
    }
  });

  GewekeResult out;
  out.options = o;
  out.threshold = o.alpha / static_cast<double>(ng);
  const auto names = geweke_names(lay);
  double exact_bright = std::numeric_limits<double>::quiet_NaN();
  if (lay.fly && o.bound == BoundTuning::untuned)
    exact_bright = expected_bright_fraction_untuned(design.data(), n, d, design.stride(),
                                                    o.prior_sd, o.untuned_xi, o.bound_slack);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto nbatch = static_cast<double>(o.chains) * o.batches;
  for (std::size_t k = 0; k < ng; ++k) {
    GewekeStat s;
    s.name = names[k];
    // Successive-conditional: grand mean of the batch means; se from their spread.
    double m = 0.0;
    for (const Accum& a : sc)
      for (int b = 0; b < o.batches; ++b) m += a.batch_means[static_cast<std::size_t>(b) * ng + k];
    m /= nbatch;
    double v = 0.0;
    for (const Accum& a : sc)
      for (int b = 0; b < o.batches; ++b) {
        const double e = a.batch_means[static_cast<std::size_t>(b) * ng + k] - m;
        v += e * e;
      }
    v /= nbatch - 1.0;
    s.sc_mean = m;
    s.sc_se = std::sqrt(v / nbatch);
    // Marginal-conditional: i.i.d. draws.
    double sum = 0.0, sq = 0.0;
    long cnt = 0;
    for (const Accum& a : mc) {
      sum += a.sum[k];
      sq += a.sum_sq[k];
      cnt += a.count;
    }
    const auto c = static_cast<double>(cnt);
    s.mc_mean = sum / c;
    s.mc_se = std::sqrt(std::max(0.0, (sq - sum * sum / c) / (c - 1.0)) / c);
    // Exact expectations: θ's marginal is the prior; the bright fraction under the untuned bound.
    s.exact = nan;
    if (k < d) s.exact = 0.0;
    if (k >= d && k < 2 * d) s.exact = o.prior_sd * o.prior_sd;
    if (lay.fly && k == 3 * d) s.exact = exact_bright;
    s.z = std::isnan(s.exact) ? (s.sc_mean - s.mc_mean) / std::hypot(s.sc_se, s.mc_se)
                              : (s.sc_mean - s.exact) / s.sc_se;
    s.p_value = normal_two_sided_p(s.z);
    s.pass = s.p_value >= out.threshold;
    out.stats.push_back(s);
  }
  long steps = 0;
  for (const Accum& a : sc) {
    out.accept_rate += a.accept;
    steps += a.steps;
    out.bound_violations += a.violations;
    out.nonfinite += a.nonfinite;
  }
  out.accept_rate /= static_cast<double>(std::max(1L, steps));
  out.seconds = seconds_between(t0, Clock::now());
  return out;
}

std::string format_report(const GewekeResult& r) {
  const GewekeOptions& o = r.options;
  std::string s =
      "Geweke (2004) joint-distribution test: logistic regression, n = " + std::to_string(o.n) +
      ", d = " + std::to_string(o.d) + fmt(", prior sd %g\n", o.prior_sd);
  s += "sampler: " + sampler_description(o.algo, o.bound, o.z, o.kernel, o.q_dark_to_bright,
                                         o.resample_fraction, o.bound_slack, o.theta_steps);
  s += fmt(", step size %g", o.step_size) + ", " + std::to_string(o.sweeps) +
       " sweep(s) per transition\n";
  s += std::to_string(o.chains) + " successive-conditional chains x " + std::to_string(o.iters) +
       " transitions (burn-in " + std::to_string(o.burn) + ", " + std::to_string(o.batches) +
       " batches each), " + std::to_string(o.mc_draws) + " marginal-conditional draws, seed " +
       std::to_string(o.seed) + fmt(", %.1f s\n", r.seconds);
  s += fmt("theta-step acceptance %.3f", r.accept_rate) + ", bound violations " +
       std::to_string(r.bound_violations) + ", non-finite proposals " +
       std::to_string(r.nonfinite) + "\n\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-16s %11s %9s %11s %9s %11s %8s %10s  %s\n", "function",
                "marg-cond", "se", "succ-cond", "se", "exact", "z", "p-value", "verdict");
  s += buf;
  for (const GewekeStat& g : r.stats) {
    std::snprintf(buf, sizeof buf, "%-16s %11.5f %9.2e %11.5f %9.2e %11s %8.2f %10.3g  %s\n",
                  g.name.c_str(), g.mc_mean, g.mc_se, g.sc_mean, g.sc_se,
                  std::isnan(g.exact) ? "-" : fmt("%.5f", g.exact).c_str(), g.z, g.p_value,
                  g.pass ? "pass" : "FAIL");
    s += buf;
  }
  s += "\nz = (succ-cond - exact)/se where the expectation is known, else (succ-cond - "
       "marg-cond)/sqrt(se^2 + se^2); batch-means standard errors\n";
  {
    long failed = 0;
    for (const GewekeStat& g : r.stats) failed += g.pass ? 0 : 1;
    s += "two-sided p >= " + fmt("%.3g", r.threshold) + " per function (family-wise " +
         fmt("%g", o.alpha) + ", Bonferroni over " + std::to_string(r.stats.size()) + ")\n";
    s += r.passed() ? std::string("result: PASS\n")
                    : "result: FAIL (" + std::to_string(failed) + " of " +
                          std::to_string(r.stats.size()) + " functions)\n";
  }
  return s;
}

}  // namespace flymc
