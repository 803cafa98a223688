#include "flymc/validate/validate.hpp"

#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <numbers>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/bright_set.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/theta_kernels.hpp"
#include "flymc/mcmc/z_updates.hpp"
#include "flymc/models/logistic.hpp"

namespace flymc {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// σ(a) without overflow for either sign.
double sigmoid(double a) noexcept {
  if (a >= 0.0) return 1.0 / (1.0 + std::exp(-a));
  const double e = std::exp(a);
  return e / (1.0 + e);
}

/// Labels ±1 with P(+1) = σ(x_n·θ) for every row; `theta` is padded to the stride.
void simulate_labels(Dataset& ds, const double* theta, Rng& rng) {
  auto& y = ds.mutable_y();
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const double a = kernels::dot(ds.row(i), theta, ds.stride());
    y[i] = rng.uniform() < sigmoid(a) ? 1.0 : -1.0;
  }
}

/// Fills the features: d − 1 standard normals and a last bias column of ones.
void simulate_design(Dataset& ds, Rng& rng) {
  const std::size_t d = ds.d();
  for (std::size_t i = 0; i < ds.n(); ++i) {
    double* x = ds.mutable_row(i);
    for (std::size_t j = 0; j + 1 < d; ++j) x[j] = rng.normal();
    x[d - 1] = 1.0;
  }
}

int resolve_threads(int t) { return t > 0 ? t : tbb::info::default_concurrency(); }

/// Sample lag-1 autocorrelation; 1 for a constant sequence (it never moved).
double lag1_autocorrelation(const std::vector<double>& x) {
  const std::size_t n = x.size();
  if (n < 3) return std::numeric_limits<double>::quiet_NaN();
  double m = 0.0;
  for (double v : x) m += v;
  m /= static_cast<double>(n);
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    den += (x[i] - m) * (x[i] - m);
    if (i + 1 < n) num += (x[i] - m) * (x[i + 1] - m);
  }
  return den > 0.0 ? num / den : 1.0;
}

/// Runs body(i) for i in [0, count) on `threads` workers, one task per index; rethrows the first
/// exception (by index) after all tasks finished.
template <class Body>
void parallel_tasks(int count, int threads, Body&& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  tbb::task_arena arena(resolve_threads(threads));
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int>(0, count, 1),
        [&](const tbb::blocked_range<int>& r) {
          for (int i = r.begin(); i != r.end(); ++i) {
            try {
              body(i);
            } catch (...) {
              errors[static_cast<std::size_t>(i)] = std::current_exception();
            }
          }
        },
        tbb::simple_partitioner());
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::string sampler_description(Algo algo, BoundTuning bound, ZUpdate z, KernelKind k, double q,
                                double f, double slack, int theta_steps) {
  std::string s = std::string(to_string(algo)) + ", kernel " + to_string(k);
  if (algo == Algo::flymc) {
    s += std::string(", bound ") + to_string(bound) + ", z " + to_string(z);
    s += z == ZUpdate::implicit ? (q > 0.0 ? fmt(" (q %g)", q) : std::string(" (q auto)"))
                                : fmt(" (fraction %g)", f);
    if (slack > 0.0) s += fmt(", bound slack %g", slack);
    if (theta_steps > 1) s += ", theta-steps " + std::to_string(theta_steps);
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Distribution functions.

double log_gamma(double a) {
  if (!(a > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  // Lanczos (1964) with g = 7 and the 9 coefficients of Godfrey (2001), as tabulated e.g. in
  // Toth's "Lanczos approximation" notes; the reflection formula covers a < 1/2.
  static constexpr double c[9] = {
      0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
      771.32342877765313,   -176.61502916214059,   12.507343278686905,
      -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  if (a < 0.5)
    return std::log(std::numbers::pi / std::sin(std::numbers::pi * a)) - log_gamma(1.0 - a);
  const double x = a - 1.0;
  double s = c[0];
  for (int i = 1; i < 9; ++i) s += c[i] / (x + i);
  const double t = x + 7.5;
  return 0.5 * std::log(2.0 * std::numbers::pi) + (x + 0.5) * std::log(t) - t + std::log(s);
}

namespace {
constexpr double kGammaEps = 1e-15;
constexpr int kGammaMaxIter = 100000;

/// P(a, x) by the series e^{−x} x^a / Γ(a) · Σ_k x^k / (a (a+1) ... (a+k)), for x < a + 1.
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term, ap = a;
  for (int k = 0; k < kGammaMaxIter; ++k) {
    ap += 1.0;
    term *= x / ap;
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * kGammaEps) break;
  }
  return sum * std::exp(-x + a * std::log(x) - log_gamma(a));
}

/// Q(a, x) by the continued fraction e^{−x} x^a / Γ(a) · 1/(x+1−a− 1(1−a)/(x+3−a− 2(2−a)/(x+5−a−
/// ...))), evaluated by the modified Lentz method, for x ≥ a + 1.
double gamma_q_fraction(double a, double x) {
  constexpr double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < kGammaMaxIter; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < kGammaEps) break;
  }
  return h * std::exp(-x + a * std::log(x) - log_gamma(a));
}
}  // namespace

double regularized_gamma_p(double a, double x) {
  if (!(a > 0.0) || !(x >= 0.0)) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return 0.0;
  if (std::isinf(x)) return 1.0;
  return x < a + 1.0 ? gamma_p_series(a, x) : 1.0 - gamma_q_fraction(a, x);
}

double regularized_gamma_q(double a, double x) {
  if (!(a > 0.0) || !(x >= 0.0)) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return 1.0;
  if (std::isinf(x)) return 0.0;
  return x < a + 1.0 ? 1.0 - gamma_p_series(a, x) : gamma_q_fraction(a, x);
}

double chi_square_sf(double x, int dof) {
  if (dof < 1 || std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0.0) return 1.0;
  return regularized_gamma_q(0.5 * dof, 0.5 * x);
}

double normal_two_sided_p(double z) {
  if (std::isnan(z)) return std::numeric_limits<double>::quiet_NaN();
  return std::erfc(std::fabs(z) / std::numbers::sqrt2);
}

// ---------------------------------------------------------------------------------------------
// SBC.

void SbcOptions::validate() const {
  if (n < 1) throw ConfigError("--n must be >= 1");
  if (d < 1) throw ConfigError("--d must be >= 1");
  if (reps < 2) throw ConfigError("--reps must be >= 2, got " + std::to_string(reps));
  if (draws < 1) throw ConfigError("--draws must be >= 1, got " + std::to_string(draws));
  if (thin < 1) throw ConfigError("--thin must be >= 1, got " + std::to_string(thin));
  if (bins < 2 || bins > draws + 1)
    throw ConfigError("--bins must be in [2, draws + 1 = " + std::to_string(draws + 1) + "], got " +
                      std::to_string(bins));
  if (threads < 0) throw ConfigError("--threads must be >= 0, got " + std::to_string(threads));
  if (!(alpha > 0.0 && alpha < 1.0)) throw ConfigError("--alpha must be in (0, 1)");
  if (run.model != ModelKind::logistic || run.prior != PriorKind::gaussian)
    throw ConfigError(
        "SBC simulates logistic-regression data from a Gaussian prior: --model logistic and "
        "--prior gaussian");
  RunConfig c = run;
  c.chains = 1;
  c.iters = draws * thin;
  c.thin = thin;
  c.threads = 1;
  c.validate();
}

bool SbcResult::passed() const {
  if (options.approximate) return true;
  return std::all_of(quantities.begin(), quantities.end(),
                     [](const RankTest& q) { return q.pass; });
}

namespace {

struct SbcRep {
  std::vector<long> ranks;
  std::vector<double> ess, lag1;
  double accept = 0.0, bright = 0.0;
  std::uint64_t violations = 0, nonfinite = 0;
};

SbcRep run_sbc_rep(const SbcOptions& opt, int rep) {
  const std::size_t d = opt.d, n = opt.n;
  const auto L = static_cast<std::size_t>(opt.draws);
  Rng rng(opt.seed, static_cast<std::uint64_t>(rep));
  const std::size_t stride = padded_stride(d);
  // θ* ~ prior, then the data given θ*.
  AlignedBuffer theta_star = aligned_zeros(stride);
  for (std::size_t j = 0; j < d; ++j) theta_star[j] = opt.run.prior_sd * rng.normal();
  auto ds = std::make_shared<Dataset>(n, d, "sbc replicate " + std::to_string(rep));
  simulate_design(*ds, rng);
  simulate_labels(*ds, theta_star.get(), rng);

  RunConfig cfg = opt.run;
  cfg.chains = 1;
  cfg.iters = opt.draws * opt.thin;
  cfg.thin = opt.thin;
  cfg.threads = 1;
  cfg.seed = rng();
  const RunResult res = run_logistic(cfg, ds);
  const ChainResult& ch = res.chains.at(0);
  if (ch.kept != L) throw Error("sbc: expected " + std::to_string(L) + " kept draws");

  SbcRep out;
  out.ranks.assign(d + 1, 0);
  out.ess.assign(d + 1, 0.0);
  out.lag1.assign(d + 1, 0.0);
  out.accept = ch.accept_rate;
  out.bright = ch.bright_mean;
  out.violations = ch.counters.bound_violations;
  out.nonfinite = ch.counters.nonfinite;

  const LogisticModel model(ds, opt.run.prior_sd);
  std::vector<std::vector<double>> q(d + 1, std::vector<double>(L));
  AlignedBuffer tp = aligned_zeros(stride);
  for (std::size_t i = 0; i < L; ++i) {
    for (std::size_t j = 0; j < d; ++j) tp[j] = q[j][i] = ch.draws[i * d + j];
    q[d][i] = model.log_lik(tp.get());
  }
  std::vector<double> star(d + 1);
  for (std::size_t j = 0; j < d; ++j) star[j] = theta_star[j];
  star[d] = model.log_lik(theta_star.get());
  for (std::size_t k = 0; k <= d; ++k) {
    out.ranks[k] = std::count_if(q[k].begin(), q[k].end(), [&](double v) { return v < star[k]; });
    const double e = L >= 4 ? ess_bulk({q[k]}) : std::numeric_limits<double>::quiet_NaN();
    out.ess[k] = std::isnan(e) ? 0.0 : e / static_cast<double>(L);
    const double r1 = lag1_autocorrelation(q[k]);
    out.lag1[k] = std::isnan(r1) ? 0.0 : r1;
  }
  return out;
}

}  // namespace

SbcResult run_sbc(const SbcOptions& opt, std::atomic<int>* progress) {
  opt.validate();
  const auto t0 = Clock::now();
  const std::size_t d = opt.d, nq = d + 1;
  const auto R = static_cast<std::size_t>(opt.reps);
  std::vector<SbcRep> reps(R);
  parallel_tasks(opt.reps, opt.threads, [&](int r) {
    reps[static_cast<std::size_t>(r)] = run_sbc_rep(opt, r);
    if (progress) progress->fetch_add(1, std::memory_order_relaxed);
  });

  SbcResult out;
  out.options = opt;
  out.threshold = opt.alpha / static_cast<double>(nq);
  const long L = opt.draws;
  const int B = opt.bins;
  // Ranks take L + 1 values; rank r falls in bin ⌊r·B/(L+1)⌋, whose expected count is R times
  // the share of rank values it holds (exactly R/B when B divides L + 1).
  std::vector<double> expected(static_cast<std::size_t>(B), 0.0);
  for (long r = 0; r <= L; ++r)
    expected[static_cast<std::size_t>(r * B / (L + 1))] +=
        static_cast<double>(R) / static_cast<double>(L + 1);
  for (std::size_t k = 0; k < nq; ++k) {
    RankTest t;
    t.name = k < d ? "theta." + std::to_string(k + 1) : "loglik";
    t.counts.assign(static_cast<std::size_t>(B), 0);
    t.expected = expected;
    for (const SbcRep& rp : reps) {
      t.ranks.push_back(rp.ranks[k]);
      ++t.counts[static_cast<std::size_t>(rp.ranks[k] * B / (L + 1))];
      t.ess_ratio += rp.ess[k] / static_cast<double>(R);
      t.lag1 += rp.lag1[k] / static_cast<double>(R);
    }
    for (int b = 0; b < B; ++b) {
      const auto bi = static_cast<std::size_t>(b);
      const double diff = static_cast<double>(t.counts[bi]) - expected[bi];
      t.chi2 += diff * diff / expected[bi];
      t.max_deviation = std::max(t.max_deviation, std::fabs(diff) / expected[bi]);
    }
    t.dof = B - 1;
    t.p_value = chi_square_sf(t.chi2, t.dof);
    t.pass = opt.approximate || t.p_value >= out.threshold;
    out.quantities.push_back(std::move(t));
  }
  for (const SbcRep& rp : reps) {
    out.accept_rate += rp.accept / static_cast<double>(R);
    out.bright_mean += rp.bright / static_cast<double>(R);
    out.bound_violations += rp.violations;
    out.nonfinite += rp.nonfinite;
  }
  out.seconds = seconds_since(t0);
  return out;
}

namespace {

/// One text-histogram line per bin: '#' bars scaled so the largest count fits in `width`
/// characters, and '|' where the expected count ends.
void append_histogram(std::string& s, const RankTest& t, long draws, int width) {
  const std::size_t B = t.counts.size();
  double top = 0.0;
  for (std::size_t b = 0; b < B; ++b)
    top = std::max({top, static_cast<double>(t.counts[b]), t.expected[b]});
  const double scale = top > 0.0 ? width / top : 0.0;
  char buf[64];
  for (std::size_t b = 0; b < B; ++b) {
    // first rank value in bin b: ⌈b(L+1)/B⌉
    const long lo = static_cast<long>((b * static_cast<std::size_t>(draws + 1) + B - 1) / B);
    const long hi = static_cast<long>(((b + 1) * static_cast<std::size_t>(draws + 1) + B - 1) / B);
    std::snprintf(buf, sizeof buf, "  %4ld-%-4ld %5ld ", lo, hi - 1, t.counts[b]);
    s += buf;
    const auto bar = static_cast<int>(std::lround(static_cast<double>(t.counts[b]) * scale));
    const auto mark = static_cast<int>(std::lround(t.expected[b] * scale));
    const int len = std::max(bar, mark + 1);
    for (int i = 0; i < len; ++i) s += i == mark ? '|' : (i < bar ? '#' : ' ');
    while (!s.empty() && s.back() == ' ') s.pop_back();
    s += '\n';
  }
}

}  // namespace

std::string format_report(const SbcResult& r) {
  const SbcOptions& o = r.options;
  const RunConfig& c = o.run;
  std::string s = "SBC (Talts et al. 2018): logistic regression, n = " + std::to_string(o.n) +
                  ", d = " + std::to_string(o.d) + fmt(", prior sd %g\n", c.prior_sd);
  // An automatic q or slack is described as such (q ≤ 0, slack 0 are not printed as values).
  s += "sampler: " + sampler_description(c.algo, c.bound, c.z, c.kernel,
                                         c.q_dark_to_bright.value_or(0.0), c.resample_fraction,
                                         c.bound_slack.value_or(0.0), c.resolved_theta_steps());
  if (c.resolved_metric() != Metric::identity)
    s += std::string(", metric ") + to_string(c.resolved_metric()) +
         (c.adapt_metric ? " (adapted)" : " (Laplace)");
  s += "\n" + std::to_string(o.reps) + " replicates x " + std::to_string(o.draws) +
       " kept draws (thin " + std::to_string(o.thin) + ", warm-up " + std::to_string(c.warmup) +
       "), " + std::to_string(o.bins) + " bins, seed " + std::to_string(o.seed) +
       fmt(", %.1f s\n", r.seconds);
  s += fmt("mean acceptance %.3f", r.accept_rate) + fmt(", mean bright count %.1f", r.bright_mean);
  s += ", bound violations " + std::to_string(r.bound_violations) + ", non-finite proposals " +
       std::to_string(r.nonfinite) + "\n\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-10s %9s %4s %10s %8s %7s %7s  %s\n", "quantity", "chi2", "dof",
                "p-value", "max dev", "ESS/L", "lag-1", o.approximate ? "" : "verdict");
  s += buf;
  for (const RankTest& t : r.quantities) {
    std::snprintf(buf, sizeof buf, "%-10s %9.2f %4d %10.3g %8.3f %7.2f %7.3f  %s\n", t.name.c_str(),
                  t.chi2, t.dof, t.p_value, t.max_deviation, t.ess_ratio, t.lag1,
                  o.approximate ? "" : (t.pass ? "pass" : "FAIL"));
    s += buf;
  }
  s += "\n";
  double min_ess = 1.0;
  for (const RankTest& t : r.quantities) min_ess = std::min(min_ess, t.ess_ratio);
  if (min_ess < 0.8)
    s += "warning: the kept draws are autocorrelated (ESS/L " + fmt("%.2f", min_ess) +
         " < 0.8): ranks of an exact sampler are then not uniform; raise --thin\n";
  if (o.approximate) {
    double worst_chi2 = 0.0, worst_dev = 0.0;
    for (const RankTest& t : r.quantities) {
      worst_chi2 = std::max(worst_chi2, t.chi2);
      worst_dev = std::max(worst_dev, t.max_deviation);
    }
    s += "approximate sampler: deviation from calibration (no verdict): largest chi2 " +
         fmt("%.2f", worst_chi2) + " on " + std::to_string(o.bins - 1) +
         " dof, largest relative bin deviation " + fmt("%.3f", worst_dev) + "\n";
  } else {
    long failed = 0;
    for (const RankTest& t : r.quantities) failed += t.pass ? 0 : 1;
    s += "uniformity of ranks: chi-square over " + std::to_string(o.bins) +
         " bins, p >= " + fmt("%.3g", r.threshold) + " per quantity (family-wise " +
         fmt("%g", o.alpha) + ", Bonferroni over " + std::to_string(r.quantities.size()) + ")\n";
    s += r.passed() ? std::string("result: PASS\n")
                    : "result: FAIL (" + std::to_string(failed) + " of " +
                          std::to_string(r.quantities.size()) + " quantities)\n";
  }
  s += "\nrank histograms (rank range, count; '|' marks the expected count)\n";
  for (const RankTest& t : r.quantities) {
    s += t.name + "\n";
    append_histogram(s, t, o.draws, 50);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Geweke.

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
  if (options.approximate) return true;
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
    s.pass = o.approximate || s.p_value >= out.threshold;
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
  out.seconds = seconds_since(t0);
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
                "marg-cond", "se", "succ-cond", "se", "exact", "z", "p-value",
                o.approximate ? "" : "verdict");
  s += buf;
  for (const GewekeStat& g : r.stats) {
    std::snprintf(buf, sizeof buf, "%-16s %11.5f %9.2e %11.5f %9.2e %11s %8.2f %10.3g  %s\n",
                  g.name.c_str(), g.mc_mean, g.mc_se, g.sc_mean, g.sc_se,
                  std::isnan(g.exact) ? "-" : fmt("%.5f", g.exact).c_str(), g.z, g.p_value,
                  o.approximate ? "" : (g.pass ? "pass" : "FAIL"));
    s += buf;
  }
  s += "\nz = (succ-cond - exact)/se where the expectation is known, else (succ-cond - "
       "marg-cond)/sqrt(se^2 + se^2); batch-means standard errors\n";
  if (o.approximate) {
    double worst = 0.0;
    for (const GewekeStat& g : r.stats) worst = std::max(worst, std::fabs(g.z));
    s += "approximate sampler: deviation (no verdict): largest |z| " + fmt("%.2f", worst) + "\n";
  } else {
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
