// Count regression. Poisson regression through scalable MH's local envelope (issue 52 step d;
// docs/math.md §2.4):
// the envelope dominates each derivative the expansions leave out and is tight (a 10%-smaller one
// fails); the closed-form remainder stays within the bound the test compares it with, at tiny and
// huge steps; scalable MH of both orders, with offsets and weights, runs from a far start without
// a violated bound and agrees with regular NUTS; FlyMC still refuses the model; auto offers SMH;
// and SBC of SMH at both orders. Negative binomial regression with a known dispersion (its
// constants (y + r) times logistic's, an envelope without growth, and FlyMC's κ_n = (y + r)/4):
// derivatives, constants, draws, SMH and FlyMC against NUTS, FlyMC's bound, and SBC.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/glm.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// n rows of an intercept and, with d = 3, two normal features, with exposures 1 to 5 (their logs
/// as offsets), weights 1 or 2 and Poisson counts, from `seed`.
std::shared_ptr<Dataset> counts(std::size_t n, std::uint64_t seed, std::size_t d = 3) {
  const PoissonFamily fam;
  auto ds = std::make_shared<Dataset>(n, d, "counts");
  Rng rng(seed, 0);
  std::vector<double> off(n), w(n);
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    x[0] = 1.0;
    double eta = 0.5;
    for (std::size_t j = 1; j < d; ++j) {
      x[j] = rng.normal();
      eta += (j == 1 ? 0.3 : -0.4) * x[j];
    }
    off[i] = std::log(1.0 + double(i % 5));
    w[i] = rng.uniform() < 0.3 ? 2.0 : 1.0;
    ds->mutable_y()[i] = fam.simulate(eta + off[i], rng);
  }
  ds->set_offsets(off);
  ds->set_weights(w);
  return ds;
}

/// n rows as counts() makes them (d = 3, no weights), the counts negative binomial with
/// dispersion r.
std::shared_ptr<Dataset> nb_counts(std::size_t n, std::uint64_t seed, double r) {
  auto ds = counts(n, seed);
  const NegBinomialFamily fam(r);
  Rng rng(seed + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const double* x = ds->row(i);
    ds->mutable_y()[i] = fam.simulate(0.5 + 0.3 * x[1] - 0.4 * x[2] + ds->offsets()[i], rng);
  }
  ds->set_weights({});
  return ds;
}

RunConfig poisson_run(Algo algo, KernelKind kernel) {
  RunConfig c = test::fixed_config();
  c.model = ModelKind::poisson;
  c.algo = algo;
  c.kernel = kernel;
  c.chains = 2;
  c.threads = 2;
  c.warmup = 500;
  c.iters = 2000;
  c.seed = 7;
  return c;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("poisson envelope: dominates f''' and f'''' everywhere and is attained") {
    const PoissonFamily fam;
    CHECK(fam.has_envelope());
    CHECK(!fam.m3());
    CHECK(!fam.m4());
    double tightest = 0.0;
    for (const double y : {0.0, 1.0, 7.0, 300.0})
      for (double eta_hat = -30.0; eta_hat <= 20.0; eta_hat += 1.7)
        for (const double t : {0.0, 1e-9, 1e-3, 0.2, 1.0, 3.0, 12.0, 30.0})
          for (const double sign : {1.0, -1.0})
            for (const int k : {3, 4}) {
              double d[5];
              fam.derivatives(y, eta_hat + sign * t, 4, d);
              const double env = fam.envelope_scale(y, eta_hat, k) * fam.envelope_growth(k, t);
              CAPTURE(y);
              CAPTURE(eta_hat);
              CAPTURE(sign * t);
              CHECK(std::fabs(d[k]) <= env * (1.0 + 1e-12));
              tightest = std::max(tightest, std::fabs(d[k]) / env);
            }
    CHECK(tightest > 1.0 / 1.1);  // an envelope 10% smaller would fail somewhere
  }

  TEST_CASE("poisson remainder: within the envelope's bound at tiny and huge steps") {
    // What scalable MH compares: |r(h) − r(h2)| with e^û·g(m)·min(|h|³ + |h2|³, 3m²|h − h2|)/6
    // (order 2; /24 with fourth powers at order 3), m = max(|h|, |h2|). A remainder formed as
    // f(û + h) − f1·h − … loses it to cancellation at small steps; the closed form must not.
    const PoissonFamily fam;
    Rng rng(11, 0);
    for (int i = 0; i < 20000; ++i) {
      const double u_hat = -20.0 + 35.0 * rng.uniform();
      const double h = std::pow(10.0, -9.0 + 10.0 * rng.uniform()) * (rng.uniform() < 0.5 ? -1 : 1);
      const double h2 = rng.uniform() < 0.3 ? h * (1.0 + 1e-3 * rng.normal())
                                            : std::pow(10.0, -9.0 + 10.0 * rng.uniform()) *
                                                  (rng.uniform() < 0.5 ? -1 : 1);
      const double m = std::max(std::fabs(h), std::fabs(h2)), step = std::fabs(h - h2);
      const double scale = std::exp(u_hat) * std::exp(m);
      CAPTURE(u_hat);
      CAPTURE(h);
      CAPTURE(h2);
      const double b2 =
          scale / 6.0 *
          std::min(std::pow(std::fabs(h), 3) + std::pow(std::fabs(h2), 3), 3.0 * m * m * step);
      CHECK(std::fabs(fam.remainder_change(0.0, u_hat, h, h2, 2)) <= b2 * (1.0 + 1e-9));
      const double b3 =
          scale / 24.0 * std::min(std::pow(h, 4) + std::pow(h2, 4), 4.0 * m * m * m * step);
      CHECK(std::fabs(fam.remainder_change(0.0, u_hat, h, h2, 3)) <= b3 * (1.0 + 1e-9));
    }
    // At moderate steps it is the remainder the derivatives give (the base class's form).
    for (const double u_hat : {-3.0, 0.4, 5.0})
      for (const double h : {-2.0, -0.3, 0.05, 0.7, 1.5})
        for (const int order : {2, 3}) {
          const double h2 = 0.37 - h;
          const double want = fam.SingleIndexFamily::remainder_change(4.0, u_hat, h, h2, order);
          CHECK(fam.remainder_change(4.0, u_hat, h, h2, order) ==
                doctest::Approx(want).epsilon(1e-9));
        }
    // A step whose exponential overflows: a proposal there is certainly rejected, never NaN.
    CHECK(fam.remainder_change(0.0, 1.0, 0.1, 800.0, 2) == HUGE_VAL);
    CHECK(fam.remainder_change(0.0, 1.0, 800.0, 800.0, 3) == 0.0);
  }

  TEST_CASE(
      "poisson: scalable MH of both orders from a far start, offsets and weights, agrees "
      "with regular NUTS") {
    // The chains start 5 Laplace sds out, where the envelope's growth is largest: no bound may be
    // violated on the way in. With one
    // coefficient (an intercept) every datum's step is ‖ã_n‖·|u| exactly, so the growth is needed
    // (without it, a move up exceeds the bound), and on 40 rows candidates are many.
    for (const std::size_t d : {std::size_t{1}, std::size_t{3}})
      for (const int order : {2, 3}) {
        CAPTURE(d);
        CAPTURE(order);
        const auto ds = counts(d == 1 ? 40 : 3000, 5, d);
        const RunResult r0 = run(poisson_run(Algo::full, KernelKind::nuts), ds);
        RunConfig c = poisson_run(Algo::smh, KernelKind::rwmh);
        c.smh_order = order;
        c.init_jitter = 5.0;
        c.iters = 6000;
        const RunResult r = run(c, ds);
        CHECK(r.bound_violations() == 0);
        for (std::size_t j = 0; j < d; ++j) {
          CAPTURE(j);
          const test::RunsCheck k = test::compare_draws(r.coordinate(j), r0.coordinate(j));
          CHECK(k.mean_z < 4.5);
          CHECK(k.var_z < 4.5);
        }
      }
  }

  TEST_CASE("poisson: FlyMC refuses it by name; scalable MH and auto take it") {
    const auto ds = counts(300, 6);
    RunConfig c = poisson_run(Algo::flymc, KernelKind::nuts);
    CHECK_THROWS_WITH_AS(run(c, ds), doctest::Contains("kappa"), ConfigError);
    RunConfig a = poisson_run(Algo::automatic, KernelKind::nuts);
    bool smh = false;
    for (const AutoCandidate& cand : auto_candidates(a, *ds, false, {}))
      smh = smh || (cand.config.algo == Algo::smh && cand.skipped.empty());
    CHECK(smh);
  }
}

TEST_SUITE("unit") {
  TEST_CASE("negbin: derivatives, constants (dominate, attained), draws' mean and variance") {
    double tightest[3] = {0.0, 0.0, 0.0};
    for (const double r : {0.5, 2.0, 30.0}) {
      const NegBinomialFamily fam(r);
      CHECK(fam.has_envelope());
      REQUIRE(fam.kappa_reads_response());
      for (const double y : {0.0, 3.0, 50.0})
        for (double eta = -20.0; eta <= 15.0; eta += 0.37) {
          CAPTURE(r);
          CAPTURE(y);
          CAPTURE(eta);
          double d[5], up[5], down[5];
          const double h = 1e-6;
          fam.derivatives(y, eta, 4, d);
          fam.derivatives(y, eta + h, 4, up);
          fam.derivatives(y, eta - h, 4, down);
          for (int j = 0; j < 4; ++j)
            CHECK(d[j + 1] == doctest::Approx((up[j] - down[j]) / (2 * h))
                                  .epsilon(1e-6)
                                  .scale(y + r + std::fabs(d[j])));
          for (const int k : {3, 4}) {
            const double env = fam.envelope_scale(y, eta, k) * fam.envelope_growth(k, 5.0);
            CHECK(std::fabs(d[k]) <= env * (1.0 + 1e-12));
            tightest[k - 3] = std::max(tightest[k - 3], std::fabs(d[k]) / env);
          }
          // FlyMC's κ_n = κ·(y + r) bounds the datum's curvature −f''.
          const double kappa = *fam.kappa() * fam.kappa_scale(y);
          CHECK(-d[2] <= kappa * (1.0 + 1e-12));
          tightest[2] = std::max(tightest[2], -d[2] / kappa);
        }
    }
    for (const double t : tightest) CHECK(t > 1.0 / 1.1);  // a constant 10% smaller would fail
    CHECK_THROWS_AS(NegBinomialFamily(0.0), ConfigError);
    // Mean μ and variance μ + μ²/r of 40,000 draws, within 4.5 standard errors (the variance's
    // from a fourth moment estimated by the draws themselves).
    Rng rng(5, 0);
    for (const double r : {0.4, 3.0, 50.0})
      for (const double mu : {0.2, 4.0, 300.0}) {
        CAPTURE(r);
        CAPTURE(mu);
        const NegBinomialFamily fam(r);
        const int n = 40000;
        std::vector<double> k(n);
        double s = 0.0;
        for (double& v : k) s += v = fam.simulate(std::log(mu), rng);
        const double mean = s / n, var_true = mu + mu * mu / r;
        double m2 = 0.0, m4 = 0.0;
        for (const double v : k) {
          m2 += (v - mean) * (v - mean);
          m4 += std::pow(v - mean, 4);
        }
        m2 /= n;
        m4 /= n;
        CHECK(std::fabs(mean - mu) < 4.5 * std::sqrt(var_true / n));
        CHECK(std::fabs(m2 - var_true) < 4.5 * std::sqrt((m4 - m2 * m2) / n));
      }
  }

  TEST_CASE("negbin remainder: within the datum's bound; the expansion is the derivatives'") {
    // |r(h) − r(h2)| ≤ (y + r)·M·min(|h|^k + |h2|^k, k·m^(k−1)|h − h2|)/k! (k = 3 at order 2, 4
    // at order 3; m = max(|h|, |h2|)), at counts up to 20,000, whose y·η the closed form never
    // forms. Steps from 10⁻³ (a datum's at 10⁷ rows is larger) and not within 10⁻³ of each other:
    // closer, the change falls below the rounding of log σ, as logistic regression's does
    // (scalable MH's bound is the whole proposal's, never that close).
    Rng rng(12, 0);
    for (const double r : {0.5, 2.0, 30.0})
      for (const double y : {0.0, 3.0, 50.0, 20000.0}) {
        const NegBinomialFamily fam(r);
        for (int i = 0; i < 3000; ++i) {
          const double u_hat = -8.0 + 16.0 * rng.uniform();
          const auto step = [&rng] {
            return std::pow(10.0, -3.0 + 4.0 * rng.uniform()) * (rng.uniform() < 0.5 ? -1 : 1);
          };
          const double h = step(), h2 = step();
          if (std::fabs(h - h2) < 1e-3 * std::max(std::fabs(h), std::fabs(h2))) continue;
          const double m = std::max(std::fabs(h), std::fabs(h2)), gap = std::fabs(h - h2);
          CAPTURE(r);
          CAPTURE(y);
          CAPTURE(u_hat);
          CAPTURE(h);
          CAPTURE(h2);
          const double b2 =
              (y + r) * LogisticFamily::kM3 / 6.0 *
              std::min(std::pow(std::fabs(h), 3) + std::pow(std::fabs(h2), 3), 3.0 * m * m * gap);
          CHECK(std::fabs(fam.remainder_change(y, u_hat, h, h2, 2)) <= b2 * (1.0 + 1e-9));
          const double b3 = (y + r) * LogisticFamily::kM4 / 24.0 *
                            std::min(std::pow(h, 4) + std::pow(h2, 4), 4.0 * m * m * m * gap);
          CHECK(std::fabs(fam.remainder_change(y, u_hat, h, h2, 3)) <= b3 * (1.0 + 1e-9));
        }
        for (const double eta : {-6.0, -0.2, 0.0, 0.9, 7.0}) {
          double d[4];
          fam.derivatives(y, eta, 3, d);
          const Expansion e = fam.expand(y, eta, 3);
          CHECK(e.f1 == doctest::Approx(d[1]).epsilon(1e-12).scale(y + r));
          CHECK(e.f2 == doctest::Approx(d[2]).epsilon(1e-12).scale(y + r));
          CHECK(e.f3 == doctest::Approx(d[3]).epsilon(1e-12).scale(y + r));
          for (const double h : {-2.0, -0.3, 0.05, 0.7, 1.5})
            for (const int order : {2, 3}) {
              const double want =
                  fam.SingleIndexFamily::remainder_change(y, eta, h, 0.37 - h, order);
              CHECK(fam.remainder_change(y, eta, h, 0.37 - h, order) ==
                    doctest::Approx(want).epsilon(1e-9).scale(y < 100 ? 1.0 : 1e-3 * y));
            }
        }
      }
  }

  TEST_CASE("negbin: scalable MH of both orders and FlyMC agree with regular NUTS") {
    const auto ds = nb_counts(3000, 8, 2.0);
    RunConfig ref = poisson_run(Algo::full, KernelKind::nuts);
    ref.model = ModelKind::negbin;
    ref.dispersion = 2.0;
    const RunResult r0 = run(ref, ds);
    // Scalable MH of both orders, and FlyMC (order 0 here) on its per-datum κ_n = (y + r)/4,
    // each from 5 Laplace sds out.
    for (const int order : {2, 3, 0}) {
      CAPTURE(order);
      RunConfig c = ref;
      c.algo = order == 0 ? Algo::flymc : Algo::smh;
      if (order != 0) {
        c.kernel = KernelKind::rwmh;
        c.smh_order = order;
      }
      c.init_jitter = 5.0;
      c.iters = order == 0 ? 4000 : 6000;
      const RunResult r = run(c, ds);
      CHECK(r.bound_violations() == 0);
      for (std::size_t j = 0; j < 3; ++j) {
        CAPTURE(j);
        const test::RunsCheck k = test::compare_draws(r.coordinate(j), r0.coordinate(j));
        CHECK(k.mean_z < 4.5);
        CHECK(k.var_z < 4.5);
      }
    }
  }

  TEST_CASE("negbin: FlyMC's bound with weights is below each datum, tight at its anchor") {
    // κ_n = w_n·(y_n + r)/4: the weights and the response both scale a datum's curvature.
    const auto ds = counts(2000, 9);  // weights 1 or 2 and offsets
    const NegBinomialFamily fam(2.0);
    Rng rng(10, 0);
    for (std::size_t i = 0; i < ds->n(); ++i)
      ds->mutable_y()[i] = fam.simulate(0.5 + 0.3 * ds->row(i)[1] + ds->offsets()[i], rng);
    RunConfig c = poisson_run(Algo::flymc, KernelKind::nuts);
    c.model = ModelKind::negbin;
    c.dispersion = 2.0;
    const GlmModel model(ds, c);
    const MapResult map = model.find_map();
    const GlmBound bound = GlmBound::make(model, c, map);
    std::vector<Index> idx(ds->n());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<Index>(i);
    std::vector<double> eta(ds->n()), delta(ds->n());
    AlignedBuffer tp = aligned_zeros(ds->stride()), scratch = aligned_zeros(bound.scratch_size());
    for (int t = 0; t < 10; ++t) {
      for (std::size_t j = 0; j < ds->d(); ++j)
        tp[j] = map.theta[static_cast<Eigen::Index>(j)] + (t == 0 ? 0.0 : 3.0 * rng.normal());
      ds->dots(0, ds->n(), tp.get(), eta.data());
      CHECK(bound.deltas(idx.data(), eta.data(), ds->n(), delta.data()).violations == 0);
      double terms = 0.0;
      for (std::size_t n = 0; n < ds->n(); ++n) terms += bound.log_bound(idx[n], eta[n]);
      CHECK(bound.log_bound_sum(tp.get(), scratch.get()) == doctest::Approx(terms).epsilon(1e-11));
      if (t == 0) CHECK(*std::max_element(delta.begin(), delta.end()) < 1e-9);
    }
  }
}

TEST_SUITE("statistical") {
  TEST_CASE("SBC: FlyMC with NUTS on negative binomial regression with offsets is calibrated") {
    SbcOptions o = test::small_sbc(Algo::flymc, 20, 544, 200);
    o.run.model = ModelKind::negbin;
    o.run.dispersion = 3.0;
    o.run.kernel = KernelKind::nuts;
    o.offsets = true;
    test::check_small_sbc(o);
  }
  TEST_CASE("SBC: scalable MH (orders 2 and 3) and regular NUTS on negative binomial regression") {
    for (const int order : {2, 3, 0}) {
      SbcOptions o = test::small_sbc(order == 0 ? Algo::full : Algo::smh, order == 0 ? 3 : 5,
                                     541 + order, 200);
      o.run.model = ModelKind::negbin;
      o.run.dispersion = 3.0;
      o.run.kernel = order == 0 ? KernelKind::nuts : KernelKind::rwmh;
      o.run.smh_order = order == 0 ? 2 : order;
      o.offsets = true;
      test::check_small_sbc(o);
    }
  }
  TEST_CASE("SBC: scalable MH (orders 2 and 3) on Poisson regression with offsets") {
    for (const int order : {2, 3}) {
      SbcOptions o = test::small_sbc(Algo::smh, 5, 531 + order, 200);
      o.run.model = ModelKind::poisson;
      o.run.kernel = KernelKind::rwmh;
      o.run.smh_order = order;
      o.offsets = true;
      test::check_small_sbc(o);
    }
  }
}
