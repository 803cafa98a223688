// Scalable Metropolis–Hastings (flymc/mcmc/smh/smh.hpp, docs/math.md §8): the cubic bound against
// the Taylor remainder it must dominate, the sampler's reproducibility and cost, its agreement
// with the exact posterior by quadrature, and SBC for both proposals and for the full-data chains
// it subsamples (the θ-kernels pcn and imh, flymc/mcmc/fly/theta/pcn.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/smh/smh.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/robust.hpp"
#include "flymc/validate/validate.hpp"
#include "mcmc/smh/smh_chain.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// |r(û + h)| over its bound (M/6)|h|³ (r = gap(h) − gap(0), LogisticFamily::gap); `rounding` is
/// the remainder's own rounding error (the terms it is the difference of, times a few ulps),
/// which only matters where the bound is tiny.
struct RemainderCheck {
  double ratio = 0.0;
  bool within = true;
};
RemainderCheck check_remainder(double u_hat, double h, double m_bound) {
  const Expansion t = LogisticFamily::taylor(u_hat, 2);
  const double f0 = LogisticFamily::gap(t, 0.0, 2);
  const double r = LogisticFamily::gap(t, h, 2) - f0;
  const double bound = m_bound / 6.0 * std::fabs(h * h * h);
  const double rounding = 8e-16 * (std::fabs(kernels::log_sigmoid(u_hat + h)) + std::fabs(f0) +
                                   std::fabs(h * t.f1) + std::fabs(0.5 * t.f2 * h * h));
  return {std::fabs(r) / bound, std::fabs(r) <= bound + rounding};
}

/// The same for robust regression's Student-t log-likelihood of the residual u = y − x·θ: at
/// ŝ = x·θ̂ and x·θ = ŝ + h, û = y − ŝ and u = û − h.
RemainderCheck check_student(const StudentT& st, double y, double s_hat, double h, double m) {
  const Expansion e = StudentTFamily::taylor(st, y - s_hat);
  const double f0 = StudentTFamily::gap(st, e, 0.0);
  const double r = StudentTFamily::gap(st, e, -h) - f0;
  const double bound = m / 6.0 * std::fabs(h * h * h);
  const double rounding = 8e-16 * (std::fabs(st.log_lik(y - s_hat - h)) + std::fabs(f0) +
                                   std::fabs(h * e.f1) + std::fabs(0.5 * e.f2 * h * h));
  return {std::fabs(r) / bound, std::fabs(r) <= bound + rounding};
}

/// The third-order expansion's remainder against its bound (M4/24)·h⁴ (LogisticFamily::gap).
RemainderCheck check_remainder3(double u_hat, double h, double m4) {
  const Expansion t = LogisticFamily::taylor(u_hat, 3);
  const double f0 = LogisticFamily::gap(t, 0.0, 3);
  const double r = LogisticFamily::gap(t, h, 3) - f0;
  const double bound = m4 / 24.0 * h * h * h * h;
  const double rounding =
      8e-16 * (std::fabs(kernels::log_sigmoid(u_hat + h)) + std::fabs(f0) + std::fabs(h * t.f1) +
               std::fabs(0.5 * t.f2 * h * h) + std::fabs(t.f3 * h * h * h / 6.0));
  return {std::fabs(r) / bound, std::fabs(r) <= bound + rounding};
}

/// The same for the Student-t log-likelihood's third-order expansion, against (M4/24)·h⁴.
RemainderCheck check_student3(const StudentT& st, double y, double s_hat, double h, double m4) {
  const Expansion e = StudentTFamily::taylor(st, y - s_hat, 3);
  const double f0 = StudentTFamily::gap(st, e, 0.0, 3);
  const double r = StudentTFamily::gap(st, e, -h, 3) - f0;
  const double bound = m4 / 24.0 * h * h * h * h;
  const double rounding =
      8e-16 * (std::fabs(st.log_lik(y - s_hat - h)) + std::fabs(f0) + std::fabs(h * e.f1) +
               std::fabs(0.5 * e.f2 * h * h) + std::fabs(e.f3 * h * h * h / 6.0));
  return {std::fabs(r) / bound, std::fabs(r) <= bound + rounding};
}

RunConfig smh_config(SmhProposal proposal) {
  RunConfig c = flymc::test::fixed_config();
  c.algo = Algo::smh;
  c.proposal = proposal;
  c.chains = 2;
  c.warmup = 500;
  c.iters = 2000;
  c.seed = 11;
  return c;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("SMH: the cubic bound dominates the logistic remainder, extremes included") {
    Rng rng(7, 1);
    const double scales[] = {1e-4, 1e-2, 0.3, 3.0, 40.0, 800.0};
    std::size_t points = 0;
    for (double s_scale : scales)
      for (double h_scale : scales)
        for (int k = 0; k < 400; ++k) {
          const double s_hat = s_scale * rng.normal(), h = h_scale * rng.normal();
          if (h == 0.0) continue;
          CAPTURE(s_hat);
          CAPTURE(h);
          CHECK(check_remainder(s_hat, h, LogisticFamily::kM3).within);
          ++points;
        }
    CHECK(points > 14000);
  }

  TEST_CASE("SMH: the bound is tight, so a bound 10% too small is caught") {
    // Near ŝ = ±1.317, where |f'''| = M, and for small steps, the remainder approaches its bound:
    // a constant 10% too small (the mutant) would be exceeded there.
    Rng rng(8, 1);
    double worst = 0.0;
    // Steps of at least 5e-3, where the remainder's rounding is far below the ratio's margin.
    for (int k = 0; k < 2000; ++k) {
      const double s_hat = (k % 2 == 0 ? 1.0 : -1.0) * (1.2 + 0.25 * rng.uniform());
      const double h = (k % 4 < 2 ? 1.0 : -1.0) * 1e-2 * (0.5 + rng.uniform());
      const RemainderCheck r = check_remainder(s_hat, h, LogisticFamily::kM3);
      CHECK(r.within);
      worst = std::max(worst, r.ratio);
    }
    CHECK(worst > 1.0 / 1.1);
    bool mutant_caught = false;
    for (int k = 0; k < 200 && !mutant_caught; ++k)
      mutant_caught = !check_remainder(1.317, 1e-3 * (k + 1), 0.9 * LogisticFamily::kM3).within;
    CHECK(mutant_caught);
  }

  TEST_CASE("SMH order 3: f3 is log sigma's third derivative, and the quartic bound dominates") {
    // f‴ by central differences of f'' = −σ(u)σ(−u), where it is accurate.
    for (double u : {-6.0, -1.317, -0.3, 0.0, 0.2, 1.0, 4.0}) {
      const double e = 1e-4;
      auto f2 = [](double v) { return LogisticFamily::taylor(v, 2).f2; };
      CAPTURE(u);
      CHECK(LogisticFamily::taylor(u, 3).f3 ==
            doctest::Approx((f2(u + e) - f2(u - e)) / (2 * e)).epsilon(1e-6));
    }
    Rng rng(17, 1);
    const double scales[] = {1e-3, 1e-2, 0.3, 3.0, 40.0, 800.0};
    std::size_t points = 0;
    for (double s_scale : scales)
      for (double h_scale : scales)
        for (int k = 0; k < 300; ++k) {
          const double s_hat = s_scale * rng.normal(), h = h_scale * rng.normal();
          if (h == 0.0) continue;
          CAPTURE(s_hat);
          CAPTURE(h);
          CHECK(check_remainder3(s_hat, h, LogisticFamily::kM4).within);
          ++points;
        }
    CHECK(points > 10000);
    // Tight at û = 0, where |f⁗| = M4, for small steps: a constant 10% too small is exceeded.
    double worst = 0.0;
    for (int k = 0; k < 400; ++k) {
      const double h = (k % 2 == 0 ? 1.0 : -1.0) * 2e-2 * (0.5 + rng.uniform());
      const RemainderCheck r = check_remainder3(1e-3 * rng.normal(), h, LogisticFamily::kM4);
      CHECK(r.within);
      worst = std::max(worst, r.ratio);
    }
    CHECK(worst > 1.0 / 1.1);
    bool mutant_caught = false;
    for (int k = 0; k < 200 && !mutant_caught; ++k)
      mutant_caught = !check_remainder3(0.0, 1e-2 * (k + 1), 0.9 * LogisticFamily::kM4).within;
    CHECK(mutant_caught);
    // The mean-value bound short moves use: |r(h1) − r(h2)| ≤ (M4/6)·max(|h1|, |h2|)³·|h1 − h2|.
    for (int k = 0; k < 3000; ++k) {
      const double s_hat = 3.0 * rng.normal(),
                   h1 = std::pow(10.0, 2.0 * rng.normal()) * rng.normal();
      const double h2 = h1 + (k % 3 == 0 ? 1e-3 : 0.3) * std::fabs(h1) * rng.normal();
      const Expansion t = LogisticFamily::taylor(s_hat, 3);
      const double d = LogisticFamily::gap(t, h1, 3) - LogisticFamily::gap(t, h2, 3);
      const double hm = std::max(std::fabs(h1), std::fabs(h2));
      const double tol =
          4e-15 * (std::fabs(kernels::log_sigmoid(s_hat + h1)) +
                   std::fabs(kernels::log_sigmoid(s_hat + h2)) + std::fabs(t.f1 * hm) +
                   std::fabs(t.f2 * hm * hm) + std::fabs(t.f3 * hm * hm * hm));
      CAPTURE(s_hat);
      CAPTURE(h1);
      CAPTURE(h2);
      CHECK(std::fabs(d) <= LogisticFamily::kM4 / 6.0 * hm * hm * hm * std::fabs(h1 - h2) + tol);
    }
  }

  TEST_CASE("SMH order 3: the collapsed tensor gives the data's summed cubic terms") {
    // ⅙·T̃(u, u, u) from the set-up equals Σ_n ⅙·σ_n f‴(û_n)(x̃_n·u)³ summed directly.
    const auto ds = test::logistic_data(900, 4, 21);
    const Prior prior{PriorKind::gaussian, 1.0};
    const MapResult map = LogisticModel(ds, prior).find_map();
    const auto st = detail::build_smh_statistics(ds, prior, map, LogisticFamily::shared(), 0.0, 3);
    REQUIRE(st->cubic.size() == smh::cubic_size(4));
    const Mat linv = st->chol.triangularView<Eigen::Lower>().solve(Mat::Identity(4, 4));
    Rng rng(5, 2);
    for (int k = 0; k < 5; ++k) {
      Vec u(4);
      for (Eigen::Index j = 0; j < 4; ++j) u[j] = 2.0 * rng.normal();
      double direct = 0.0;
      for (std::size_t n = 0; n < ds->n(); ++n) {
        const Eigen::Map<const Vec> x(ds->row(n), 4);
        const double t = ds->y()[n], s_hat = t * x.dot(map.theta);
        const double h = (linv * x).dot(u);
        direct += t * LogisticFamily::taylor(s_hat, 3).f3 * h * h * h;
      }
      CHECK(smh::cubic_form(st->cubic.data(), u.data(), 4) ==
            doctest::Approx(direct).epsilon(1e-10));
      // The chains read the padded copy through the SIMD kernel.
      std::vector<double> u_pad(4 + 8, 0.0);
      std::copy(u.data(), u.data() + 4, u_pad.begin());
      CHECK(kernels::cubic_form(st->cubic_padded.get(), u_pad.data(), 4) ==
            doctest::Approx(direct).epsilon(1e-10));
    }
  }

  TEST_CASE("SMH: the mean-value bound dominates the remainders' difference, both models") {
    // |r(ŝ + h1) − r(ŝ + h2)| ≤ (M/2)·max(h1², h2²)·|h1 − h2|: the bound short moves use.
    Rng rng(10, 1);
    const StudentT st(4.0, 1.0);
    const double scales[] = {1e-3, 0.1, 1.0, 10.0, 300.0};
    std::size_t points = 0;
    for (double s_scale : scales)
      for (double h_scale : scales)
        for (double step : {1e-4, 1e-2, 1.0})
          for (int k = 0; k < 60; ++k) {
            const double s_hat = s_scale * rng.normal(), h1 = h_scale * rng.normal();
            const double h2 = h1 + step * h_scale * rng.normal();
            const double y = s_scale * rng.normal();
            const double m2 = std::max(h1 * h1, h2 * h2) * std::fabs(h1 - h2) / 2.0;
            const Expansion tl = LogisticFamily::taylor(s_hat, 2);
            const double dl = LogisticFamily::gap(tl, h1, 2) - LogisticFamily::gap(tl, h2, 2);
            const Expansion ts = StudentTFamily::taylor(st, y - s_hat);
            const double ds = StudentTFamily::gap(st, ts, -h1) - StudentTFamily::gap(st, ts, -h2);
            // (rounding: each gap is a difference of terms of about f's size)
            const double hm = std::max(std::fabs(h1), std::fabs(h2));
            const double tol_l = 4e-15 * (std::fabs(kernels::log_sigmoid(s_hat + h1)) +
                                          std::fabs(kernels::log_sigmoid(s_hat + h2)) +
                                          std::fabs(tl.f1 * hm) + std::fabs(tl.f2 * hm * hm));
            const double tol_s = 4e-15 * (std::fabs(st.log_lik(y - s_hat - h1)) +
                                          std::fabs(st.log_lik(y - s_hat - h2)) +
                                          std::fabs(ts.f1 * hm) + std::fabs(ts.f2 * hm * hm));
            CAPTURE(s_hat);
            CAPTURE(h1);
            CAPTURE(h2);
            CHECK(std::fabs(dl) <= LogisticFamily::kM3 * m2 + tol_l);
            CHECK(std::fabs(ds) <= *StudentTFamily(st).m3() * m2 + tol_s);
            ++points;
          }
    CHECK(points == 5 * 5 * 3 * 60);
  }

  TEST_CASE("SMH: the cubic bound dominates the Student-t remainder, extremes included") {
    Rng rng(9, 1);
    const double scales[] = {1e-4, 1e-2, 0.3, 3.0, 40.0, 800.0, 1e12};
    std::size_t points = 0;
    for (const auto& dof_scale :
         {std::pair{4.0, 1.0}, std::pair{1.0, 0.1}, std::pair{30.0, 7.0}, std::pair{0.5, 3.0}}) {
      const double nu = dof_scale.first;
      const StudentT st(nu, dof_scale.second);
      const double m = *StudentTFamily(st).m3();
      for (double r_scale : scales)
        for (double h_scale : scales)
          for (int k = 0; k < 100; ++k) {
            const double y = r_scale * rng.normal(), h = h_scale * rng.normal();
            const double s_hat = 0.3 * rng.normal();
            if (h == 0.0) continue;
            CAPTURE(nu);
            CAPTURE(y);
            CAPTURE(s_hat);
            CAPTURE(h);
            const Expansion e = StudentTFamily::taylor(st, y - s_hat);
            CHECK(std::isfinite(e.f1));
            CHECK(std::isfinite(e.f2));
            CHECK(check_student(st, y, s_hat, h, m).within);
            ++points;
          }
    }
    CHECK(points > 19000);
  }

  TEST_CASE("SMH: the Student-t bound is tight, so a bound 10% too small is caught") {
    // |f'''| = M where the residual is ±(√2 − 1)·√c: small steps there nearly reach the bound.
    const StudentT st(4.0, 1.3);
    const double m = *StudentTFamily(st).m3();
    const double r_star = (std::sqrt(2.0) - 1.0) / st.inv_sqrt_c;
    double worst = 0.0;
    bool mutant_caught = false;
    for (int k = 0; k < 400; ++k) {
      const double h = (k % 2 == 0 ? 1.0 : -1.0) * 1e-3 * (1 + k / 2);
      const RemainderCheck r = check_student(st, r_star, 0.0, h, m);
      CHECK(r.within);
      worst = std::max(worst, r.ratio);
      mutant_caught = mutant_caught || !check_student(st, r_star, 0.0, h, 0.9 * m).within;
    }
    CHECK(worst > 1.0 / 1.1);
    CHECK(mutant_caught);
  }

  TEST_CASE(
      "SMH: the Student-t third-order remainder within (M4/24)h^4, tight at a zero residual") {
    // Random residuals and steps over many scales, four (nu, scale) pairs; |f''''| = M4 at a
    // zero residual, where small steps nearly reach the bound and 0.9·M4 is exceeded.
    Rng rng(11, 1);
    const double scales[] = {1e-3, 0.3, 3.0, 40.0, 1e6};
    double worst = 0.0;
    bool mutant_caught = false;
    for (const auto& dof_scale :
         {std::pair{4.0, 1.0}, std::pair{1.0, 0.1}, std::pair{30.0, 7.0}, std::pair{0.5, 3.0}}) {
      const StudentT st(dof_scale.first, dof_scale.second);
      const double m4 = *StudentTFamily(st).m4();
      for (double r_scale : scales)
        for (double h_scale : scales)
          for (int k = 0; k < 60; ++k) {
            const double y = r_scale * rng.normal(), h = h_scale * rng.normal();
            if (h == 0.0) continue;
            CAPTURE(y);
            CAPTURE(h);
            CHECK(check_student3(st, y, 0.0, h, m4).within);
          }
      for (int k = 0; k < 200; ++k) {
        const double h = (k % 2 == 0 ? 1.0 : -1.0) * 1e-3 * (1 + k / 2) / st.inv_sqrt_c;
        const RemainderCheck r = check_student3(st, 0.0, 0.0, h, m4);
        CHECK(r.within);
        worst = std::max(worst, r.ratio);
        mutant_caught = mutant_caught || !check_student3(st, 0.0, 0.0, h, 0.9 * m4).within;
      }
    }
    CHECK(worst > 1.0 / 1.1);
    CHECK(mutant_caught);
  }

  TEST_CASE("SMH: draws do not depend on the thread count; few data per proposal; no violation" *
            doctest::test_suite("threaded")) {
    auto ds = test::logistic_data(20000, 5, 3);
    struct Case {
      SmhProposal prop;
      int order;
    };
    for (const Case cs : {Case{SmhProposal::pcn, 2}, Case{SmhProposal::rw, 2},
                          Case{SmhProposal::pcn, 3}, Case{SmhProposal::rw, 3}}) {
      const SmhProposal prop = cs.prop;
      CAPTURE(to_string(prop));
      CAPTURE(cs.order);
      RunConfig c = smh_config(prop);
      c.smh_order = cs.order;
      c.threads = 1;
      const RunResult a = run(c, ds);
      c.threads = 2;
      const RunResult b = run(c, ds);
      REQUIRE(a.chains.size() == 2);
      for (std::size_t k = 0; k < 2; ++k) CHECK(a.chains[k].draws == b.chains[k].draws);
      CHECK(a.bound_violations() == 0);
      CHECK(a.accept_rate() > 0.1);
      // Two queries per candidate: far fewer data than N per proposal.
      CHECK(a.queries_per_iter() < 0.05 * 2.0 * 20000.0);
      CHECK(is_exact(a.config.algo));
    }
  }

  TEST_CASE("SMH on robust regression: few data per proposal, no violation, thread-independent" *
            doctest::test_suite("threaded")) {
    auto ds = test::robust_data(20000, 4, 5);
    RunConfig c = smh_config(SmhProposal::pcn);
    c.model = ModelKind::robust;
    c.prior = "laplace";  // the quadratic factor holds the prior as it is
    c.threads = 1;
    const RunResult a = run(c, ds);
    c.threads = 2;
    const RunResult b = run(c, ds);
    for (std::size_t k = 0; k < 2; ++k) CHECK(a.chains[k].draws == b.chains[k].draws);
    CHECK(a.bound_violations() == 0);
    CHECK(a.accept_rate() > 0.3);
    CHECK(a.queries_per_iter() < 0.05 * 2.0 * 20000.0);
  }

  TEST_CASE("SMH counts the violations of a bound made too small (--test-bound-excess)") {
    auto ds = test::logistic_data(3000, 4, 9);
    RunConfig c = smh_config(SmhProposal::pcn);
    FaultInjection faults;
    faults.bound_excess = 3.0;  // every φ_n divided by e³
    CHECK_THROWS_WITH_AS(run(c, ds, {}, nullptr, nullptr, faults),
                         doctest::Contains("scalable MH's remainder bound"), BoundViolationError);
    c.on_bound_violation = OnViolation::finish;
    const RunResult bad = run(c, ds, {}, nullptr, nullptr, faults);
    CHECK(bad.bound_violations() > 0);
    CHECK_FALSE(bad.exact());
    const RunResult good = run(c, ds);
    CHECK(good.bound_violations() == 0);
    CHECK(good.exact());
  }

  TEST_CASE(
      "SMH takes over the expansion and bounds a run on the same data and fit left, only those") {
    // --algo auto's SMH pilot leaves them (SetupCache) for the SMH run it chooses.
    const auto ds = test::logistic_data(3000, 4, 9);
    RunConfig c = smh_config(SmhProposal::pcn);
    c.warmup = 100;
    c.iters = 300;
    const auto statistics_passes = [](const RunResult& r) {
      for (const SetupPhase& p : r.setup_phases)
        if (p.name == "statistics") return p.passes;
      return -2;
    };
    const RunResult own = run(c, ds);
    CHECK(statistics_passes(own) == 1);  // the MAP search left the curvature at θ̂
    auto cache = std::make_shared<SetupCache>();
    RunConfig pilot = c;
    pilot.seed = 99;
    const RunResult first = run(pilot, ds, {}, nullptr, nullptr, {}, Precomputed{nullptr, cache});
    REQUIRE(cache->smh != nullptr);
    const auto built = cache->smh;
    const auto fit = std::make_shared<const MapResult>(first.map);
    const RunResult taken = run(c, ds, {}, nullptr, nullptr, {}, Precomputed{fit, cache});
    CHECK(statistics_passes(taken) == 0);
    REQUIRE(taken.chains.size() == own.chains.size());
    for (std::size_t k = 0; k < own.chains.size(); ++k)
      CHECK(taken.chains[k].draws == own.chains[k].draws);
    CHECK(cache->smh == built);
    // Another prior, other data with the same rows, a bound made too small: built anew.
    RunConfig wider = c;
    wider.prior_sd = 2.0;
    CHECK(statistics_passes(
              run(wider, ds, {}, nullptr, nullptr, {}, Precomputed{nullptr, cache})) == 1);
    CHECK(cache->smh != built);
    cache->smh = built;
    const auto same_rows = test::logistic_data(3000, 4, 9);
    CHECK(statistics_passes(run(c, same_rows, {}, nullptr, nullptr, {}, Precomputed{fit, cache})) ==
          1);
    cache->smh = built;
    FaultInjection faults;
    faults.bound_excess = 0.5;
    c.on_bound_violation = OnViolation::finish;
    const RunResult small = run(c, ds, {}, nullptr, nullptr, faults, Precomputed{fit, cache});
    CHECK(statistics_passes(small) == 1);
    CHECK(small.bound_violations() > 0);
  }

  TEST_CASE("SMH refuses other models, and a pCN rho below 0 or not below 1") {
    auto ds = test::logistic_data(200, 3, 4);
    RunConfig c = smh_config(SmhProposal::pcn);
    c.pcn_rho = 1.0;
    CHECK_THROWS_AS(run(c, ds), ConfigError);
    c.pcn_rho = -0.1;
    CHECK_THROWS_AS(run(c, ds), ConfigError);
    c.pcn_rho.reset();
    c.model = ModelKind::softmax;  // no bound on a third derivative
    CHECK_THROWS_AS(check_model_fits(c), ConfigError);
    c.model = ModelKind::robust;
    CHECK_NOTHROW(check_model_fits(c));
    c.smh_order = 3;  // the Student-t likelihood's M4
    CHECK_NOTHROW(check_model_fits(c));
    c.model = ModelKind::softmax;
    CHECK_THROWS_AS(check_model_fits(c), ConfigError);
    c.model = ModelKind::logistic;
    CHECK_NOTHROW(check_model_fits(c));
    c.smh_order = 4;
    CHECK_THROWS_AS(c.validate(), ConfigError);
  }
}

TEST_SUITE("statistical") {
  TEST_CASE(
      "SMH (pcn and rw; pcn with the third-order expansion) matches the exact posterior by "
      "quadrature") {
    // D = 2 (a feature and a bias): mean and sd by quadrature; each within 4.5 batch-means MCSEs.
    // The chains start from prior draws, far from θ̂, where the thinned process would propose
    // more candidates than data and every factor is evaluated instead.
    auto ds = test::logistic_data(400, 2, 31, 1.5);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    const test::Moments exact = test::posterior_quadrature(model, map);
    struct Case {
      SmhProposal prop;
      int order;
    };
    for (const Case k :
         {Case{SmhProposal::pcn, 2}, Case{SmhProposal::rw, 2}, Case{SmhProposal::pcn, 3}}) {
      const SmhProposal prop = k.prop;
      CAPTURE(to_string(prop));
      CAPTURE(k.order);
      RunConfig cfg = smh_config(prop);
      cfg.smh_order = k.order;
      cfg.warmup = 2000;
      cfg.iters = 60000;
      cfg.seed = 2024;
      cfg.init = Init::prior;
      const RunResult r = run(cfg, ds);
      CHECK(r.bound_violations() == 0);
      for (std::size_t j = 0; j < 2; ++j) {
        CAPTURE(j);
        const test::ExactCheck c = test::against_exact(r.coordinate(j), exact.mean[j], exact.sd[j]);
        CHECK(c.mean_z < 4.5);
        CHECK(c.sd_z < 4.5);
        CHECK(c.mcse_in_sd < 0.05);
      }
    }
  }

  // SBC (tests/sbc_util.hpp).
  SbcOptions smh_sbc(SmhProposal proposal, long thin, std::uint64_t seed) {
    SbcOptions o = test::small_sbc(Algo::smh, thin, seed, 200);
    o.run.proposal = proposal;
    return o;
  }
  void check_smh_sbc(const SbcOptions& o) { test::check_small_sbc(o); }

  // The chains SMH subsamples, on all the data (--kernel pcn|imh): regular MCMC and FlyMC.
  SbcOptions laplace_kernel_sbc(Algo algo, KernelKind kernel, long thin, std::uint64_t seed) {
    SbcOptions o = smh_sbc(SmhProposal::pcn, thin, seed);
    o.run.algo = algo;
    o.run.kernel = kernel;
    o.run.q_dark_to_bright = 0.1;  // FlyMC: z mixes in about 10 sweeps (test_sbc.cpp)
    o.run.theta_steps = 1;
    return o;
  }

  TEST_CASE("SBC: regular MCMC with pCN proposals is calibrated") {
    check_smh_sbc(laplace_kernel_sbc(Algo::full, KernelKind::pcn, 40, 303));
  }
  TEST_CASE("SBC: regular MCMC with the independence sampler is calibrated") {
    check_smh_sbc(laplace_kernel_sbc(Algo::full, KernelKind::imh, 40, 304));
  }
  TEST_CASE("SBC: FlyMC with pCN proposals on p(theta | z) is calibrated") {
    check_smh_sbc(laplace_kernel_sbc(Algo::flymc, KernelKind::pcn, 100, 305));
  }

  TEST_CASE("SBC: scalable MH with pCN proposals is calibrated") {
    check_smh_sbc(smh_sbc(SmhProposal::pcn, 5, 301));
  }
  TEST_CASE("SBC: scalable MH with the third-order expansion and pCN proposals is calibrated") {
    SbcOptions o = smh_sbc(SmhProposal::pcn, 5, 307);
    o.run.smh_order = 3;
    check_smh_sbc(o);
  }
  TEST_CASE("SBC: scalable MH with whitened random-walk proposals is calibrated") {
    check_smh_sbc(smh_sbc(SmhProposal::rw, 60, 302));
  }
  TEST_CASE("SBC: scalable MH with pCN proposals on robust regression is calibrated") {
    SbcOptions o = smh_sbc(SmhProposal::pcn, 5, 306);
    o.run.model = ModelKind::robust;
    check_smh_sbc(o);
  }
  TEST_CASE("SBC: third-order scalable MH with pCN proposals on robust regression") {
    SbcOptions o = smh_sbc(SmhProposal::pcn, 5, 308);
    o.run.model = ModelKind::robust;
    o.run.smh_order = 3;
    check_smh_sbc(o);
  }
}
