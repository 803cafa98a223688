// Simulation-based calibration (flymc/validate/validate.hpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "common.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/theta_kernels.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/gaussian_sigma.hpp"
#include "flymc/models/glm.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/negbin_phi.hpp"
#include "flymc/models/robust.hpp"
#include "flymc/models/softmax.hpp"
#include "flymc/models/student_sigma.hpp"
#include "flymc/validate/validate.hpp"

namespace flymc {

using namespace validate_detail;

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
  // A single-index family must simulate its responses (a family given in code need not): one
  // draw from a scratch stream refuses it here rather than inside a replicate.
  if (inferred_global(run) != nullptr) {
    if (trials) throw ConfigError("SBC with trials: the model does not read trials");
  } else if (const auto family = single_index_family(run)) {
    Rng probe;
    (void)family->simulate(0.0, probe);
    if (trials && !family->reads_trials())
      throw ConfigError("SBC with trials: the " + family->name() + " model does not read trials");
  } else if (trials || offsets) {
    throw ConfigError("SBC with trials or offsets needs a single-index model");
  }
  if (run.model == ModelKind::softmax && (classes < 2 || classes > 64))
    throw ConfigError("--classes must be in [2, 64], got " + std::to_string(classes));
  if (run_priors(run).any_flat() ||
      (inferred_global(run) != nullptr &&
       parse_scale_prior(inferred_global_prior(run)).kind == ScalePrior::Kind::flat))
    throw ConfigError("SBC draws its parameters from the prior: a flat prior has no draws");
  RunConfig c = run;
  c.chains = 1;
  c.iters = draws * thin;
  c.thin = thin;
  c.threads = 1;
  c.validate();
}

bool SbcResult::passed() const {
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

/// The dimension of θ the replicates simulate: K·d for softmax, d otherwise.
std::size_t sbc_dim(const SbcOptions& o) {
  if (inferred_global(o.run) != nullptr) return o.d + 1;  // the coefficients, then σ or φ
  return o.run.model == ModelKind::softmax ? o.classes * o.d : o.d;
}

/// θ*_j ~ its prior: normal, Laplace (by inversion) or Student-t (z / √(χ²_ν/ν)).
double prior_draw(const PriorTerm& t, Rng& rng) {
  if (t.kind == PriorKind::gaussian) return t.loc + t.scale * rng.normal();
  if (t.kind == PriorKind::student_t) {
    const double chi2 = 2.0 * gamma_draw(0.5 * t.nu, rng);
    return t.loc + t.scale * rng.normal() / std::sqrt(chi2 / t.nu);
  }
  const double u = rng.uniform() - 0.5, b = t.scale;
  return t.loc + (u < 0.0 ? b * std::log1p(2.0 * u) : -b * std::log1p(-2.0 * u));
}

/// σ* (or φ*) ~ its prior on σ > 0: |S·z| (half-normal), |S·t_ν| (half-t), or an exponential.
double sigma_draw(const ScalePrior& p, Rng& rng) {
  if (p.kind == ScalePrior::Kind::exponential) return -std::log(rng.uniform_pos()) / p.rate;
  if (p.kind == ScalePrior::Kind::half_normal) return std::fabs(p.scale * rng.normal());
  const double chi2 = 2.0 * gamma_draw(0.5 * p.nu, rng);
  return std::fabs(p.scale * rng.normal() / std::sqrt(chi2 / p.nu));
}

/// Gaussian regression's responses with σ inferred: y = x·β* + σ*·z, σ* the last of θ*.
void simulate_gaussian(Dataset& ds, const std::vector<double>& theta, Rng& rng) {
  const double sigma = theta.back();
  for (std::size_t i = 0; i < ds.n(); ++i) {
    double mean = 0.0;
    for (std::size_t j = 0; j < ds.d(); ++j) mean += theta[j] * ds.row(i)[j];
    ds.mutable_y()[i] = mean + sigma * rng.normal();
  }
}

/// Softmax labels: class k with probability softmax(W x)_k; true when the top class occurred (the
/// model takes K = largest label + 1).
bool simulate_classes(Dataset& ds, const std::vector<double>& w, std::size_t K, Rng& rng) {
  const std::size_t d = ds.d();
  std::vector<double> p(K);
  bool top = false;
  for (std::size_t i = 0; i < ds.n(); ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < K; ++k) {
      p[k] = 0.0;
      for (std::size_t j = 0; j < d; ++j) p[k] += w[k * d + j] * ds.row(i)[j];
      m = std::max(m, p[k]);
    }
    double z = 0.0;
    for (double& v : p) z += (v = std::exp(v - m));
    double u = rng.uniform() * z;
    std::size_t k = 0;
    while (k + 1 < K && u >= p[k]) u -= p[k++];
    ds.mutable_y()[i] = static_cast<double>(k);
    top = top || k + 1 == K;
  }
  return top;
}

/// Robust regression responses y = x·θ + s·t_ν, t_ν = z / √(χ²_ν/ν); Student-t regression's with
/// s = σ*, the last of θ*.
void simulate_responses(Dataset& ds, const std::vector<double>& theta, const RunConfig& c,
                        Rng& rng) {
  const double s = c.model == ModelKind::student_t ? theta.back() : c.noise_scale.value_or(1.0);
  for (std::size_t i = 0; i < ds.n(); ++i) {
    double mean = 0.0;
    for (std::size_t j = 0; j < ds.d(); ++j) mean += theta[j] * ds.row(i)[j];
    const double chi2 = 2.0 * gamma_draw(0.5 * c.student_nu, rng);
    ds.mutable_y()[i] = mean + s * rng.normal() / std::sqrt(chi2 / c.student_nu);
  }
}

/// A single-index model's responses, each drawn by its family at its linear predictor (plus its
/// offset, with SbcOptions::offsets), summed over its trials (SbcOptions::trials).
void simulate_single_index(Dataset& ds, const std::vector<double>& theta, const SbcOptions& opt,
                           Rng& rng) {
  RunConfig run = opt.run;
  if (infers_phi(run)) run.dispersion = theta.back();  // φ*, the last of θ*
  const std::shared_ptr<const SingleIndexFamily> family = single_index_family(run);
  std::vector<double> trials, offsets;
  for (std::size_t i = 0; i < ds.n(); ++i) {
    double mean = 0.0;
    for (std::size_t j = 0; j < ds.d(); ++j) mean += theta[j] * ds.row(i)[j];
    if (opt.offsets) mean += offsets.emplace_back(0.5 * rng.normal());
    const int m = opt.trials ? 1 + static_cast<int>(5.0 * rng.uniform()) : 1;
    if (opt.trials) trials.push_back(m);
    double y = 0.0;
    for (int t = 0; t < m; ++t) y += family->simulate(mean, rng);
    ds.mutable_y()[i] = y;
  }
  ds.set_trials(std::move(trials));
  ds.set_offsets(std::move(offsets));
}

/// One simulated data set with its θ* (dense), from the replicate's stream. Softmax draws
/// (θ*, y) afresh until the top class occurs: conditioning on an event of y alone leaves
/// θ* | y the posterior, so the ranks stay uniform.
std::shared_ptr<Dataset> simulate_replicate(const SbcOptions& opt, int rep, Rng& rng,
                                            std::vector<double>& theta_star) {
  const std::size_t d = opt.d, P = sbc_dim(opt);
  auto ds = std::make_shared<Dataset>(opt.n, d, "sbc replicate " + std::to_string(rep));
  theta_star.assign(P, 0.0);
  const Prior prior = prior_of(opt.run, d);
  const bool sigma = infers_sigma(opt.run), global = inferred_global(opt.run) != nullptr;
  const ScalePrior global_prior =
      global ? parse_scale_prior(inferred_global_prior(opt.run)) : ScalePrior{};
  while (true) {
    for (std::size_t j = 0; j < P; ++j)
      theta_star[j] =
          global && j == d ? sigma_draw(global_prior, rng) : prior_draw(prior.term(j % d), rng);
    simulate_design(*ds, rng);
    if (opt.run.intercept) {  // coefficient 0 multiplies the ones (--intercept), not the last
      for (std::size_t i = 0; i < ds->n(); ++i) {
        double* x = ds->mutable_row(i);
        x[0] = 1.0;
        if (d > 1) x[d - 1] = rng.normal();
      }
      ds->mark_intercept(true);
    }
    if (opt.run.model == ModelKind::logistic) {
      AlignedBuffer tp = aligned_zeros(ds->stride());
      std::copy(theta_star.begin(), theta_star.end(), tp.get());
      simulate_labels(*ds, tp.get(), rng);
      return ds;
    }
    if (opt.run.model == ModelKind::robust || opt.run.model == ModelKind::student_t) {
      simulate_responses(*ds, theta_star, opt.run, rng);
      return ds;
    }
    if (sigma) {
      simulate_gaussian(*ds, theta_star, rng);
      return ds;
    }
    if (opt.run.model != ModelKind::softmax) {  // every single-index model, by its family
      simulate_single_index(*ds, theta_star, opt, rng);
      return ds;
    }
    if (simulate_classes(*ds, theta_star, opt.classes, rng)) return ds;
  }
}

/// Σ_n log L_n at dense θ under the replicate's model.
template <class M>
double model_log_lik(const M& model, const double* dense) {
  const ParamLayout lay = model.layout();
  AlignedBuffer tp = aligned_zeros(lay.padded());
  lay.pad(dense, tp.get());
  return model.log_lik(tp.get());
}

/// The log-likelihood of every kept draw (out[0, L)) and of θ* (out[L]).
template <class M>
std::vector<double> log_liks(const M& model, const ChainResult& ch, std::size_t P,
                             const std::vector<double>& theta_star) {
  std::vector<double> out(ch.kept + 1);
  for (std::size_t i = 0; i < ch.kept; ++i) out[i] = model_log_lik(model, &ch.draws[i * P]);
  out[ch.kept] = model_log_lik(model, theta_star.data());
  return out;
}

std::vector<double> log_liks(const RunConfig& cfg, std::shared_ptr<const Dataset> ds,
                             const ChainResult& ch, std::size_t P,
                             const std::vector<double>& theta_star) {
  if (cfg.model == ModelKind::logistic) return log_liks(LogisticModel(ds, cfg), ch, P, theta_star);
  if (cfg.model == ModelKind::softmax) return log_liks(SoftmaxModel(ds, cfg), ch, P, theta_star);
  if (cfg.model == ModelKind::robust) return log_liks(RobustModel(ds, cfg), ch, P, theta_star);
  if (cfg.model == ModelKind::student_t)
    return log_liks(StudentTSigmaModel(ds, cfg), ch, P, theta_star);
  if (infers_sigma(cfg)) return log_liks(GaussianSigmaModel(ds, cfg), ch, P, theta_star);
  if (infers_phi(cfg)) return log_liks(NegBinomialPhiModel(ds, cfg), ch, P, theta_star);
  return log_liks(GlmModel(ds, cfg), ch, P, theta_star);  // every single-index model
}

SbcRep run_sbc_rep(const SbcOptions& opt, int rep) {
  const std::size_t P = sbc_dim(opt);
  const auto L = static_cast<std::size_t>(opt.draws);
  Rng rng(opt.seed, static_cast<std::uint64_t>(rep));
  std::vector<double> theta_star;
  const std::shared_ptr<const Dataset> ds = simulate_replicate(opt, rep, rng, theta_star);

  RunConfig cfg = opt.run;
  cfg.ess = 0.0;  // a fixed number of kept draws per replicate
  cfg.chains = 1;
  cfg.iters = opt.draws * opt.thin;
  cfg.thin = opt.thin;
  cfg.threads = 1;
  cfg.seed = rng();
  const RunResult res = run(cfg, ds);
  const ChainResult& ch = res.chains.at(0);
  if (ch.kept != L || res.dim != P) throw Error("sbc: unexpected draws from the run");

  SbcRep out;
  out.ranks.assign(P + 1, 0);
  out.ess.assign(P + 1, 0.0);
  out.lag1.assign(P + 1, 0.0);
  out.accept = ch.accept_rate;
  out.bright = ch.bright_mean;
  out.violations = ch.counters.bound_violations;
  out.nonfinite = ch.counters.nonfinite;

  const std::vector<double> ll = log_liks(cfg, ds, ch, P, theta_star);
  std::vector<std::vector<double>> q(P + 1, std::vector<double>(L));
  for (std::size_t i = 0; i < L; ++i) {
    for (std::size_t j = 0; j < P; ++j) q[j][i] = ch.draws[i * P + j];
    q[P][i] = ll[i];
  }
  std::vector<double> star(theta_star);
  star.push_back(ll[L]);
  for (std::size_t k = 0; k <= P; ++k) {
    out.ranks[k] = std::count_if(q[k].begin(), q[k].end(), [&](double v) { return v < star[k]; });
    const double e = L >= 4 ? ess_bulk({q[k]}) : std::numeric_limits<double>::quiet_NaN();
    out.ess[k] = std::isnan(e) ? 0.0 : e / static_cast<double>(L);
    const double r1 = lag1_autocorrelation(q[k]);
    out.lag1[k] = std::isnan(r1) ? 0.0 : r1;
  }
  return out;
}

/// The quantities' names: the model's parameter names, then loglik.
std::vector<std::string> sbc_names(const SbcOptions& o) {
  std::vector<std::string> names;
  const std::size_t K = o.run.model == ModelKind::softmax ? o.classes : 1;
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < o.d; ++j)
      names.push_back(K == 1 ? "theta." + std::to_string(j + 1)
                             : "W." + std::to_string(k + 1) + "." + std::to_string(j + 1));
  if (const char* global = inferred_global(o.run)) names.emplace_back(global);
  names.push_back("loglik");
  return names;
}

}  // namespace

SbcResult run_sbc(const SbcOptions& opt, std::atomic<int>* progress) {
  opt.validate();
  const auto t0 = Clock::now();
  const std::vector<std::string> names = sbc_names(opt);
  const std::size_t nq = names.size();
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
    t.name = names[k];
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
    t.pass = t.p_value >= out.threshold;
    out.quantities.push_back(std::move(t));
  }
  for (const SbcRep& rp : reps) {
    out.accept_rate += rp.accept / static_cast<double>(R);
    out.bright_mean += rp.bright / static_cast<double>(R);
    out.bound_violations += rp.violations;
    out.nonfinite += rp.nonfinite;
  }
  out.seconds = seconds_between(t0, Clock::now());
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
  std::string s = "SBC (Talts et al. 2018): ";
  s += to_string(c.model);
  s += " model, n = " + std::to_string(o.n) + ", d = " + std::to_string(o.d);
  if (c.model == ModelKind::softmax) s += ", " + std::to_string(o.classes) + " classes";
  s += ", ";
  s += "prior " + c.prior;
  if (parse_prior_spec(c.prior).keyword) s += fmt(", sd %g", c.prior_sd);
  if (c.intercept)
    s += ", intercept prior " + (c.prior_intercept.empty() ? c.prior : c.prior_intercept);
  s += "\n";
  // An automatic q or slack is described as such (q ≤ 0, slack 0 are not printed as values).
  s += "sampler: " + sampler_description(c.algo, c.bound, c.z, c.kernel,
                                         c.q_dark_to_bright.value_or(0.0), c.resample_fraction,
                                         c.bound_slack.value_or(0.0), c.resolved_theta_steps());
  if (c.resolved_metric() != Metric::identity)
    s += std::string(", metric ") + to_string(c.resolved_metric()) +
         (c.adapt_metric ? " (adapted)" : " (Laplace)");
  s += '\n';
  s += std::to_string(o.reps) + " replicates x " + std::to_string(o.draws) + " kept draws (thin " +
       std::to_string(o.thin) + ", warm-up " + std::to_string(c.warmup) + "), " +
       std::to_string(o.bins) + " bins, seed " + std::to_string(o.seed) +
       fmt(", %.1f s\n", r.seconds);
  s += fmt("mean acceptance %.3f", r.accept_rate) + fmt(", mean bright count %.1f", r.bright_mean);
  s += ", bound violations " + std::to_string(r.bound_violations) + ", non-finite proposals " +
       std::to_string(r.nonfinite) + "\n\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-10s %9s %4s %10s %8s %7s %7s  %s\n", "quantity", "chi2", "dof",
                "p-value", "max dev", "ESS/L", "lag-1", "verdict");
  s += buf;
  for (const RankTest& t : r.quantities) {
    std::snprintf(buf, sizeof buf, "%-10s %9.2f %4d %10.3g %8.3f %7.2f %7.3f  %s\n", t.name.c_str(),
                  t.chi2, t.dof, t.p_value, t.max_deviation, t.ess_ratio, t.lag1,
                  t.pass ? "pass" : "FAIL");
    s += buf;
  }
  s += "\n";
  double min_ess = 1.0;
  for (const RankTest& t : r.quantities) min_ess = std::min(min_ess, t.ess_ratio);
  if (min_ess < 0.8)
    s += "warning: the kept draws are autocorrelated (ESS/L " + fmt("%.2f", min_ess) +
         " < 0.8): ranks of an exact sampler are then not uniform; raise --thin\n";
  {
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

}  // namespace flymc
