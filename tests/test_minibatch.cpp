// The approximate subsampling samplers (docs/math.md §5, §6): the Barker test's correction
// distribution C_σ, the acceptance probability of the minibatch test, reproducibility, and the
// bias of minibatch MH and SGLD against the exact posterior of a small logistic regression.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/mcmc/minibatch/barker.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/glm.hpp"
#include "flymc/models/logistic.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// Acceptance frequency of `reps` Barker tests on fixed per-datum log ratios l_i with
/// Σ l_i + psi = delta, and the mean batch size.
std::pair<double, double> acceptance(const std::vector<double>& l, double psi, std::size_t b0,
                                     int reps, std::uint64_t seed, double temper = 1.0) {
  Rng rng(seed, 1);
  BatchDrawer drawer(l.size());
  std::vector<double> buf;
  int acc = 0;
  double batch = 0.0;
  for (int r = 0; r < reps; ++r) {
    const BarkerOutcome o = barker_test(
        rng, drawer, b0, psi, BarkerCorrection::standard(), buf,
        [&](const Index* idx, std::size_t k, double* out) {
          for (std::size_t i = 0; i < k; ++i) out[i] = l[idx[i]];
        },
        temper);
    acc += o.accept ? 1 : 0;
    batch += static_cast<double>(o.batch);
  }
  return {acc / double(reps), batch / reps};
}

/// n log ratios μ + τ·z_i (z_i standard normal, fixed by the seed) whose sum is `sum`.
std::vector<double> log_ratios(std::size_t n, double tau, double sum, std::uint64_t seed) {
  Rng rng(seed, 2);
  std::vector<double> l(n);
  double s = 0.0;
  for (auto& v : l) s += v = tau * rng.normal();
  for (auto& v : l) v += (sum - s) / static_cast<double>(n);
  return l;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("C_sigma: N(0, 1) convolved with C_1 is the logistic distribution") {
    const BarkerCorrection& c = BarkerCorrection::standard();
    double total = 0.0;
    for (double w : c.weights()) {
      CHECK(w >= 0.0);
      total += w;
    }
    CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
    // The fit's accuracy, computed exactly for the distribution sample() draws.
    const double err = c.max_cdf_error();
    std::printf("C_sigma (sigma = 1): sup |Phi * C - logistic CDF| = %.3g\n", err);
    // The acceptance probability of a test that decides by Δ* + X_nc + X_corr > 0 differs from
    // σ(Δ) by at most this error, so it is the figure that matters.
    CHECK(err < 1e-3);
    // C_σ is symmetric: its mean is 0. (Its variance, π²/3 − 1 in theory, is not checked: weights
    // of the order of the fit's error far in the tails move it by a few percent without moving
    // any acceptance probability by more than the sup error.)
    double m1 = 0.0;
    const double h = c.cell_width();
    for (std::size_t j = 0; j < c.weights().size(); ++j)
      m1 += c.weights()[j] * (-20.0 + h * static_cast<double>(j));
    CHECK(std::fabs(m1) < 1e-6);
    // And the sampler: N(0, 1) + C draws against the logistic CDF (Kolmogorov–Smirnov; 1.95/√n
    // is the 0.1% critical value), plus the fit's own error.
    Rng rng(7, 1);
    const int n = 200000;
    std::vector<double> x(n);
    for (auto& v : x) v = rng.normal() + c.sample(rng);
    std::sort(x.begin(), x.end());
    double ks = 0.0;
    for (int i = 0; i < n; ++i) {
      const double f = sigmoid(x[static_cast<std::size_t>(i)]);
      ks = std::max({ks, std::fabs(f - double(i) / n), std::fabs(f - double(i + 1) / n)});
    }
    CHECK(ks < 1.95 / std::sqrt(double(n)) + err);
  }

  TEST_CASE("C_sigma is refused where no deconvolution exists") {
    CHECK_THROWS_AS(BarkerCorrection(2.0), ConfigError);  // σ² > π²/3
    CHECK_THROWS_AS(BarkerCorrection(0.0), ConfigError);
  }

  TEST_CASE("BatchDrawer: a grown batch is a sample without replacement") {
    Rng rng(3, 1);
    BatchDrawer d(50);
    for (int rep = 0; rep < 20; ++rep) {
      d.restart();
      d.extend(rng, 10);
      const Index* idx = d.extend(rng, 50);
      std::vector<Index> v(idx, idx + 50);
      std::sort(v.begin(), v.end());
      for (Index i = 0; i < 50; ++i) CHECK(v[i] == i);
    }
  }

  TEST_CASE("the minibatch Barker test accepts with probability sigma(Delta)") {
    // Binomial standard error of the frequency; the tolerance is 4 of them (a false alarm below
    // 1e-4 per case) plus the C_σ fit's error, which shifts the acceptance probability by at most
    // sup |Φ ∗ C − logistic|.
    const int reps = 20000;
    const double cerr = BarkerCorrection::standard().max_cdf_error();
    std::uint64_t seed = 5;
    for (double delta : {-2.0, -0.3, 0.8, 2.5}) {
      ++seed;  // independent noise per case
      CAPTURE(delta);
      const double p = sigmoid(delta);
      const double tol = 4.0 * std::sqrt(p * (1.0 - p) / reps);
      // Small spread: the first batches are too noisy (s² ≥ 1 until b ≈ 400), then the
      // minibatch test decides, from batches of 400 of 20,000.
      const double psi = 0.25;
      const auto l = log_ratios(20000, 1e-3, delta - psi, 11);
      const auto [freq, batch] = acceptance(l, psi, 100, reps, seed);
      std::printf(
          "Barker test, Delta = %+.1f: acceptance %.4f, sigma(Delta) %.4f, mean batch %.0f\n",
          delta, freq, p, batch);
      CHECK(std::fabs(freq - p) < tol + cerr);
      CHECK(batch > 100.0);
      CHECK(batch < 20000.0);
      // Large spread: no batch is precise enough, every test reaches all N data and decides by
      // Barker's rule itself.
      const auto l2 = log_ratios(2000, 0.05, delta - psi, 12);
      const auto [freq2, batch2] = acceptance(l2, psi, 100, reps, seed + 100);
      std::printf("  all-data Barker rule: acceptance %.4f\n", freq2);
      CHECK(batch2 == 2000.0);
      CHECK(std::fabs(freq2 - p) < tol);
    }
  }

  TEST_CASE("the tempered Barker test (K > 1) accepts with probability sigma(Delta / K)") {
    // The seed slides' g(s) = K·σ(s): a test of Δ/K, whose batch variance is K² times smaller.
    const int reps = 20000;
    const double cerr = BarkerCorrection::standard().max_cdf_error();
    const double delta = 3.0, k = 4.0, p = sigmoid(delta / k);
    const auto l = log_ratios(20000, 4e-3, delta - 0.25, 21);  // untempered: b ≈ N needed
    const auto [freq, batch] = acceptance(l, 0.25, 100, reps, 31, k);
    std::printf(
        "tempered Barker test, Delta = %.1f, K = %.0f: acceptance %.4f, sigma(Delta/K) %.4f, "
        "mean batch %.0f\n",
        delta, k, freq, p, batch);
    CHECK(std::fabs(freq - p) < 4.0 * std::sqrt(p * (1.0 - p) / reps) + cerr);
    // Untempered, these log ratios need b ≈ 6,400 (s² = 6400/b·(1 − b/N) < 1); tempered, ≈ 400.
    CHECK(batch < 1000.0);
  }

  TEST_CASE("minibatch MH and SGLD give the same draws with 1 and 2 threads" *
            doctest::test_suite("threaded")) {
    auto ds = test::logistic_data(500, 3, 4);
    for (Algo algo : {Algo::minibatch_mh, Algo::sgld}) {
      CAPTURE(to_string(algo));
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = algo;
      cfg.chains = 3;
      cfg.warmup = 100;
      cfg.iters = 200;
      cfg.batch_size = 50;
      cfg.seed = 17;
      cfg.threads = 1;
      const RunResult a = run(cfg, ds);
      cfg.threads = 2;
      const RunResult b = run(cfg, ds);
      for (std::size_t c = 0; c < 3; ++c) CHECK(a.chains[c].draws == b.chains[c].draws);
      CHECK(a.batch_mean() >= 50.0);
      CHECK_FALSE(std::isnan(a.batch_mean()));
    }
  }
}

TEST_SUITE("statistical") {
  TEST_CASE("minibatch MH and SGLD: measured bias against the exact posterior") {
    // D = 2 (a feature and a bias), N = 2000: the posterior's mean and sd by quadrature. The
    // samplers are approximate, so the bound is not a Monte Carlo one: the bias |mean − exact|
    // must stay under a stated fraction of the posterior sd (on top of 4.5 Monte Carlo errors),
    // and the sd within a stated ratio. The figures are printed.
    auto ds = test::logistic_data(2000, 2, 31, 1.5);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    const test::Moments exact = test::posterior_quadrature(model, map);
    struct Case {
      Algo algo;
      long batch;
      double step, mean_tol, sd_lo, sd_hi;  // bias ≤ mean_tol·sd; sd ratio in [sd_lo, sd_hi]
      double target = 0.0;                  // minibatch MH: --target-accept (0: default)
    };
    // The second minibatch-MH case takes smaller steps (a higher acceptance target), so that the
    // tests decide on batches well below N rather than mostly on all the data.
    for (const Case& k : {Case{Algo::minibatch_mh, 100, 0.0, 0.1, 0.9, 1.1},
                          Case{Algo::minibatch_mh, 100, 0.0, 0.1, 0.9, 1.1, 0.4},
                          Case{Algo::sgld, 200, 0.0, 0.1, 0.9, 1.1}}) {
      CAPTURE(to_string(k.algo));
      CAPTURE(k.target);
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = k.algo;
      cfg.batch_size = k.batch;
      if (k.step > 0.0) cfg.sgld_step = k.step;  // else auto
      if (k.target > 0.0) cfg.target_accept = k.target;
      cfg.chains = 4;
      cfg.warmup = 2000;
      cfg.iters = 40000;
      cfg.seed = 2025;
      const RunResult r = run(cfg, ds);
      for (std::size_t j = 0; j < 2; ++j) {
        const auto [m, se, sd] = test::draw_moments(r.coordinate(j));
        std::printf(
            "%s (target %.2f) theta.%zu: mean %.4f (exact %.4f, bias %.3f sd, mcse %.3f sd), sd "
            "ratio %.3f, "
            "mean batch %.0f, acceptance %.3f\n",
            to_string(k.algo), k.target, j + 1, m, exact.mean[j], (m - exact.mean[j]) / exact.sd[j],
            se / exact.sd[j], sd / exact.sd[j], r.batch_mean(), r.accept_rate());
        CHECK(std::fabs(m - exact.mean[j]) < k.mean_tol * exact.sd[j] + 4.5 * se);
        CHECK(sd / exact.sd[j] > k.sd_lo);
        CHECK(sd / exact.sd[j] < k.sd_hi);
      }
    }
  }

  TEST_CASE("minibatch MH and SGLD read any family: measured bias on probit regression") {
    // The same check as above through the probit family's terms (batched derivatives()).
    auto ds = test::logistic_data(2000, 2, 32, 1.0);
    const GlmModel model(ds, Prior{PriorKind::gaussian, 1.0}, std::make_shared<ProbitFamily>());
    const MapResult map = model.find_map();
    const test::Moments exact = test::posterior_quadrature(model, map);
    for (const Algo algo : {Algo::minibatch_mh, Algo::sgld}) {
      CAPTURE(to_string(algo));
      RunConfig cfg = flymc::test::fixed_config();
      cfg.model = ModelKind::probit;
      cfg.algo = algo;
      cfg.batch_size = algo == Algo::sgld ? 200 : 100;
      cfg.chains = 4;
      cfg.warmup = 2000;
      cfg.iters = 20000;
      cfg.seed = 2026;
      const RunResult r = run(cfg, ds);
      CHECK_FALSE(sampler_info(cfg.algo).exact);
      for (std::size_t j = 0; j < 2; ++j) {
        const auto [m, se, sd] = test::draw_moments(r.coordinate(j));
        std::printf("probit %s theta.%zu: mean %.4f (exact %.4f, bias %.3f sd), sd ratio %.3f\n",
                    to_string(algo), j + 1, m, exact.mean[j], (m - exact.mean[j]) / exact.sd[j],
                    sd / exact.sd[j]);
        CHECK(std::fabs(m - exact.mean[j]) < 0.1 * exact.sd[j] + 4.5 * se);
        CHECK(sd / exact.sd[j] > 0.9);
        CHECK(sd / exact.sd[j] < 1.1);
      }
    }
  }
}
