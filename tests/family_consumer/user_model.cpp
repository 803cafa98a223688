// A model of your own, outside the library: logistic regression written as a single-index
// family (docs/models.md), sampled through the installed package by FlyMC, scalable MH of
// orders 2 and 3 and regular NUTS, each checked against the built-in logistic model; a
// binomial family that reads each datum's trials, on data with trials, weights and offsets; a
// Poisson family with a local envelope instead of constants, on counts with exposures; and a
// Gaussian family whose noise scale is a parameter (my_gaussian_scale.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <flymc/flymc.hpp>
#include <flymc/models/family.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "my_gaussian_scale.hpp"

// f(t, η) = log σ(tη) for labels t = ±1, and its η-derivatives through p = σ(tη), q = 1 − p.
class MyLogit : public flymc::SingleIndexFamily {
 public:
  std::string name() const override { return "my-logit"; }
  flymc::LabelDomain labels() const override { return flymc::LabelDomain::binary; }
  std::string check_label(double t) const override {
    return t == 1.0 || t == -1.0 ? "" : "must be -1 or +1";
  }
  void derivatives(double t, double eta, int order, double* out) const override {
    const double u = t * eta, e = std::exp(-std::abs(u));  // e in [0, 1]: no overflow
    const double p = u >= 0 ? 1 / (1 + e) : e / (1 + e), q = u >= 0 ? e / (1 + e) : 1 / (1 + e);
    out[0] = std::min(u, 0.0) - std::log1p(e);  // log σ(u)
    if (order >= 1) out[1] = t * q;
    if (order >= 2) out[2] = -p * q;
    if (order >= 3) out[3] = -t * p * q * (q - p);
    if (order >= 4) out[4] = -p * q * (1 - 6 * p * q);
  }
  std::optional<double> kappa() const override { return 0.25; }    // −f'' = pq ≤ 1/4
  std::optional<double> m3() const override { return 0.0962251; }  // 1/(6√3), rounded up
  std::optional<double> m4() const override { return 0.125; }      // at p = 1/2
};

// The logit as a count of successes of each datum's trials m (the data's trials column): the
// family reads them (derivatives_trials), and a datum's constants are m times the one-trial ones
// (datum_scale). f = yη − m·log(1 + e^η).
class MyBinomial : public flymc::SingleIndexFamily {
 public:
  std::string name() const override { return "my-binomial"; }
  std::string check_label(double y) const override {
    return y >= 0 && y == std::floor(y) ? "" : "must be a count";
  }
  void derivatives(double y, double eta, int order, double* out) const override {
    derivatives_trials(y, 1.0, eta, order, out);
  }
  bool reads_trials() const override { return true; }
  void derivatives_trials(double y, double m, double eta, int order, double* out) const override {
    const double s = 1 / (1 + std::exp(-eta)), v = s * (1 - s);
    out[0] = y * eta - m * (std::max(eta, 0.0) + std::log1p(std::exp(-std::abs(eta))));
    if (order >= 1) out[1] = y - m * s;
    if (order >= 2) out[2] = -m * v;
    if (order >= 3) out[3] = -m * v * (1 - 2 * s);
    if (order >= 4) out[4] = -m * v * (1 - 6 * v);
  }
  double datum_scale(double, double m) const override { return m; }
  std::optional<double> kappa() const override { return 0.25; }
  std::optional<double> m3() const override { return 0.0962251; }
  std::optional<double> m4() const override { return 0.125; }
};

// Counts with the log link, f = yη − e^η: no global constant (every derivative from the second
// on is −e^η), so it gives scalable MH a local envelope instead, |f^(k)(y, η̂ + t)| ≤ e^η̂·e^|t|.
class MyPoisson : public flymc::SingleIndexFamily {
 public:
  std::string name() const override { return "my-poisson"; }
  std::string check_label(double y) const override {
    return y >= 0 && y == std::floor(y) ? "" : "must be a count";
  }
  void derivatives(double y, double eta, int order, double* out) const override {
    const double mu = std::exp(eta);
    out[0] = y * eta - mu;
    if (order >= 1) out[1] = y - mu;
    for (int j = 2; j <= order; ++j) out[j] = -mu;
  }
  bool has_envelope() const override { return true; }
  double envelope_scale(double, double eta_hat, int) const override { return std::exp(eta_hat); }
  double envelope_growth(int, double t) const override { return std::exp(t); }
};

// The same family without κ: FlyMC must refuse it.
class NoKappa : public MyLogit {
  std::optional<double> kappa() const override { return std::nullopt; }
};

using Clock = std::chrono::steady_clock;

int main() {
  // 5,000 rows: an intercept and 3 standard normal features, labels drawn from a known θ.
  const double theta[4] = {0.5, -1.0, 0.75, 0.25};
  auto data = std::make_shared<flymc::Dataset>(5000, 4, "synthetic");
  flymc::Rng rng(7, 0);
  for (std::size_t i = 0; i < data->n(); ++i) {
    double* x = data->mutable_row(i);
    x[0] = 1.0;
    double eta = theta[0];
    for (int j = 1; j < 4; ++j) eta += theta[j] * (x[j] = rng.normal());
    data->mutable_y()[i] = rng.uniform() < 1 / (1 + std::exp(-eta)) ? 1.0 : -1.0;
  }

  int failures = 0;
  const auto family = std::make_shared<const MyLogit>();
  for (double eta : {1e300, -1e300}) {  // stable at the extremes
    double d[5];
    family->derivatives(1.0, eta, 4, d);
    const bool ok = std::all_of(d, d + 5, [](double v) { return std::isfinite(v); });
    failures += !ok;
    std::printf("derivatives at eta = %g: %s\n", eta, ok ? "finite  ok" : "not finite  FAIL");
  }

  flymc::RunConfig base;
  base.ess = 0;  // a fixed length: warmup + iters per chain
  base.chains = 2;
  base.warmup = 500;
  base.iters = 2000;

  // The reference: the built-in logistic model, NUTS, twice as many draws.
  flymc::RunConfig ref_cfg = base;
  ref_cfg.algo = flymc::Algo::full;
  ref_cfg.kernel = flymc::KernelKind::nuts;
  ref_cfg.chains = 4;
  ref_cfg.seed = 100;
  auto t0 = Clock::now();
  const flymc::RunResult ref = flymc::run(ref_cfg, data);
  std::printf("%-22s %6.3f s  (reference)\n", "built-in logistic NUTS",
              std::chrono::duration<double>(Clock::now() - t0).count());

  struct Case {
    const char* label;
    flymc::Algo algo;
    int smh_order;
  };
  const Case cases[] = {{"my-logit FlyMC NUTS", flymc::Algo::flymc, 2},
                        {"my-logit SMH order 2", flymc::Algo::smh, 2},
                        {"my-logit SMH order 3", flymc::Algo::smh, 3},
                        {"my-logit NUTS", flymc::Algo::full, 2}};
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    flymc::RunConfig cfg = base;
    cfg.algo = c.algo;
    cfg.smh_order = c.smh_order;
    if (c.algo != flymc::Algo::smh) cfg.kernel = flymc::KernelKind::nuts;  // SMH has its own moves
    cfg.seed = seed++;
    t0 = Clock::now();
    const flymc::RunResult r = flymc::run(cfg, data, family);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    // Each posterior mean against the reference's, in Monte Carlo standard errors of both.
    double worst = 0, min_ess = INFINITY;
    for (std::size_t j = 0; j < r.dim; ++j) {
      const auto x = r.coordinate(j), y = ref.coordinate(j);
      const auto s = flymc::summarize(x), sr = flymc::summarize(y);
      const double z = std::abs(s.mean - sr.mean) / std::hypot(s.mcse_mean, sr.mcse_mean);
      worst = std::max(worst, std::isnan(z) ? INFINITY : z);
      min_ess = std::min(min_ess, s.ess_bulk);
    }
    const bool ok = worst <= 5.0;
    failures += !ok;
    std::printf(
        "%-22s %6.3f s  %6.1f data/iter  min bulk ESS %5.0f  max |mean - ref| %.2f MCSE  %s\n",
        c.label, secs, r.queries_per_iter(), min_ess, worst, ok ? "ok" : "FAIL");
  }

  // Counts of 1 to 4 trials, weights 1 or 2 and offsets: the user's binomial family by scalable
  // MH against the built-in binomial model by NUTS.
  auto counts = std::make_shared<flymc::Dataset>(5000, 4, "synthetic counts");
  std::vector<double> trials(5000), weights(5000), offsets(5000);
  for (std::size_t i = 0; i < counts->n(); ++i) {
    double* x = counts->mutable_row(i);
    x[0] = 1.0;
    double eta = theta[0] + (offsets[i] = 0.3 * rng.normal());
    for (int j = 1; j < 4; ++j) eta += theta[j] * (x[j] = rng.normal());
    trials[i] = 1.0 + static_cast<double>(i % 4);
    weights[i] = i % 3 == 0 ? 2.0 : 1.0;
    double y = 0;
    for (int t = 0; t < int(trials[i]); ++t) y += rng.uniform() < 1 / (1 + std::exp(-eta));
    counts->mutable_y()[i] = y;
  }
  counts->set_trials(trials);
  counts->set_weights(weights);
  counts->set_offsets(offsets);
  flymc::RunConfig bin_ref = ref_cfg;
  bin_ref.model = flymc::ModelKind::binomial;
  const flymc::RunResult bref = flymc::run(bin_ref, counts);
  flymc::RunConfig bin = base;
  bin.algo = flymc::Algo::smh;
  bin.seed = seed++;
  const flymc::RunResult mine = flymc::run(bin, counts, std::make_shared<const MyBinomial>());
  double worst = 0;
  for (std::size_t j = 0; j < mine.dim; ++j) {
    const auto s = flymc::summarize(mine.coordinate(j)), sr = flymc::summarize(bref.coordinate(j));
    const double z = std::abs(s.mean - sr.mean) / std::hypot(s.mcse_mean, sr.mcse_mean);
    worst = std::max(worst, std::isnan(z) ? INFINITY : z);
  }
  failures += !(worst <= 5.0);
  std::printf("%-22s %6.1f data/iter  max |mean - ref| %.2f MCSE  %s\n", "my-binomial SMH",
              mine.queries_per_iter(), worst, worst <= 5.0 ? "ok" : "FAIL");

  // Poisson counts with exposures 1 to 3 (their logs as offsets): the user's family, which has
  // only an envelope, by scalable MH against the built-in Poisson model by NUTS.
  auto events = std::make_shared<flymc::Dataset>(5000, 4, "synthetic events");
  std::vector<double> exposure_logs(5000);
  for (std::size_t i = 0; i < events->n(); ++i) {
    double* x = events->mutable_row(i);
    x[0] = 1.0;
    double eta = 0.5 * theta[0] + (exposure_logs[i] = std::log(1.0 + double(i % 3)));
    for (int j = 1; j < 4; ++j) eta += 0.5 * theta[j] * (x[j] = rng.normal());
    double k = 0, p = std::exp(-std::exp(eta)), u = rng.uniform();  // Poisson by inversion
    for (double mu = std::exp(eta); u > p; p *= mu / ++k) u -= p;
    events->mutable_y()[i] = k;
  }
  events->set_offsets(exposure_logs);
  flymc::RunConfig pois_ref = ref_cfg;
  pois_ref.model = flymc::ModelKind::poisson;
  const flymc::RunResult pref = flymc::run(pois_ref, events);
  const flymc::RunResult my_pois = flymc::run(bin, events, std::make_shared<const MyPoisson>());
  worst = 0;
  for (std::size_t j = 0; j < my_pois.dim; ++j) {
    const auto s = flymc::summarize(my_pois.coordinate(j));
    const auto sr = flymc::summarize(pref.coordinate(j));
    const double z = std::abs(s.mean - sr.mean) / std::hypot(s.mcse_mean, sr.mcse_mean);
    worst = std::max(worst, std::isnan(z) ? INFINITY : z);
  }
  const bool pois_ok = worst <= 5.0 && my_pois.bound_violations() == 0;
  failures += !pois_ok;
  std::printf("%-22s %6.1f data/iter  max |mean - ref| %.2f MCSE  %s\n", "my-poisson SMH",
              my_pois.queries_per_iter(), worst, pois_ok ? "ok" : "FAIL");

  // Real responses with weights and offsets: the user's Gaussian family with σ inferred by
  // scalable MH against the built-in Gaussian model with σ inferred by NUTS (both σ flat).
  auto reals = std::make_shared<flymc::Dataset>(5000, 4, "synthetic responses");
  for (std::size_t i = 0; i < reals->n(); ++i) {
    double* x = reals->mutable_row(i);
    x[0] = 1.0;
    double eta = theta[0] + offsets[i];
    for (int j = 1; j < 4; ++j) eta += theta[j] * (x[j] = rng.normal());
    reals->mutable_y()[i] = eta + 0.8 * rng.normal();
  }
  reals->set_weights(weights);
  reals->set_offsets(offsets);
  flymc::RunConfig gauss_ref = ref_cfg;
  gauss_ref.model = flymc::ModelKind::gaussian;
  const flymc::RunResult gref = flymc::run(gauss_ref, reals);
  const auto scale_family = std::make_shared<const MyGaussianScale>(flymc::ScalePrior{});
  const flymc::RunResult my_gauss = flymc::run(bin, reals, scale_family);
  worst = 0;
  for (std::size_t j = 0; j < my_gauss.dim; ++j) {
    const auto s = flymc::summarize(my_gauss.coordinate(j));
    const auto sr = flymc::summarize(gref.coordinate(j));
    const double z = std::abs(s.mean - sr.mean) / std::hypot(s.mcse_mean, sr.mcse_mean);
    worst = std::max(worst, std::isnan(z) ? INFINITY : z);
  }
  const bool gauss_ok = worst <= 5.0 && my_gauss.bound_violations() == 0 &&
                        my_gauss.names.back() == "sigma" && gref.names.back() == "sigma";
  failures += !gauss_ok;
  std::printf("%-22s %6.1f data/iter  max |mean - ref| %.2f MCSE  %s\n", "my-gaussian-scale SMH",
              my_gauss.queries_per_iter(), worst, gauss_ok ? "ok" : "FAIL");

  // A family without κ has no collapsible bound: FlyMC refuses it, naming κ.
  flymc::RunConfig fly = base;
  fly.algo = flymc::Algo::flymc;
  fly.kernel = flymc::KernelKind::nuts;
  try {
    flymc::run(fly, data, std::make_shared<const NoKappa>());
    std::printf("FlyMC without kappa: ran  FAIL\n");
    ++failures;
  } catch (const flymc::ConfigError& e) {
    const bool ok = std::string(e.what()).find("kappa") != std::string::npos;
    failures += !ok;
    std::printf("FlyMC without kappa: refused (%s)  %s\n", e.what(), ok ? "ok" : "FAIL");
  }
  return failures == 0 ? 0 : 1;
}
