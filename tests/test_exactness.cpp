// Every sampler against the exact posterior. Data with D = 2 (a feature and a bias) let the
// posterior mean and standard deviation be computed by quadrature on a fine grid; each sampler's
// estimates must agree within 4.5 Monte Carlo standard errors (batch means over 40 batches per
// chain), a false-alarm rate below 1e-4 per comparison for a correct sampler at these seeds.
#include <doctest/doctest.h>

#include <cmath>

#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

test::Moments quadrature(const LogisticModel& model, const MapResult& map) {
  return test::posterior_quadrature(model, map);
}

using test::mean_and_mcse;

}  // namespace

TEST_SUITE("statistical") {
  TEST_CASE(
      "FlyMC (both bounds, both z-updaters, levers) and regular MCMC match the exact posterior") {
    auto ds = test::logistic_data(400, 2, 31, 1.5);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    const test::Moments exact = quadrature(model, map);

    struct Case {
      const char* name;
      Algo algo;
      BoundTuning bound;
      ZUpdate z;
      double slack;
      int theta_steps;
      double q;
      double slack_scale = 0.0;
    };
    const Case cases[] = {
        {"regular", Algo::full, BoundTuning::map, ZUpdate::implicit, 0.0, 1, 0.01},
        {"flymc map implicit", Algo::flymc, BoundTuning::map, ZUpdate::implicit, 0.0, 1, 0.05},
        {"flymc map explicit", Algo::flymc, BoundTuning::map, ZUpdate::explicit_, 0.0, 1, 0.05},
        {"flymc untuned implicit", Algo::flymc, BoundTuning::untuned, ZUpdate::implicit, 0.0, 1,
         0.05},
        {"flymc untuned explicit", Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_, 0.0, 1,
         0.05},
        {"flymc map implicit slack+3 steps", Algo::flymc, BoundTuning::map, ZUpdate::implicit, 0.01,
         3, 0.05},
        {"flymc map implicit per-datum slack", Algo::flymc, BoundTuning::map, ZUpdate::implicit,
         0.0, 1, 0.05, 2.0},
    };
    for (const Case& k : cases) {
      CAPTURE(std::string(k.name));
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = k.algo;
      cfg.bound = k.bound;
      cfg.z = k.z;
      cfg.bound_slack = k.slack;
      cfg.slack_scale = k.slack_scale;
      cfg.theta_steps = k.theta_steps;
      cfg.q_dark_to_bright = k.q;
      cfg.resample_fraction = 0.05;
      cfg.chains = 2;
      cfg.warmup = 2000;
      cfg.iters = k.algo == Algo::full ? 40000 : 80000;
      cfg.seed = 2024;
      cfg.init = Init::prior;
      const RunResult r = run_logistic(cfg, ds);
      CHECK(r.bound_violations() == 0);
      for (std::size_t j = 0; j < 2; ++j) {
        CAPTURE(j);
        const test::ExactCheck c = test::against_exact(r.coordinate(j), exact.mean[j], exact.sd[j]);
        CHECK(c.mean_z < 4.5);
        CHECK(c.sd_z < 4.5);
        CHECK(c.mcse_in_sd < 0.05);  // small enough for the comparison to mean something
      }
    }
  }

  TEST_CASE("every theta-kernel, adapted in warm-up, matches the exact posterior") {
    // Each kernel at its defaults: warm-up adapts the step size (dual averaging) and a diagonal
    // metric (Stan's windows) from the Laplace covariance; RW-MH, whose default is the identity,
    // is given the diagonal metric here as well. Regular MCMC and FlyMC with a MAP-tuned bound and
    // implicit z-updates, and with the untuned bound and explicit z-updates.
    auto ds = test::logistic_data(400, 2, 31, 1.5);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    const test::Moments exact = quadrature(model, map);
    struct Kernel {
      const char* name;
      KernelKind kind;
      SliceMode mode;
      long iters;  // per chain, regular MCMC; FlyMC runs twice as many
    };
    const Kernel kernels[] = {{"rwmh", KernelKind::rwmh, SliceMode::direction, 40000},
                              {"mala", KernelKind::mala, SliceMode::direction, 10000},
                              {"hmc", KernelKind::hmc, SliceMode::direction, 4000},
                              {"slice direction", KernelKind::slice, SliceMode::direction, 8000},
                              {"slice coordinate", KernelKind::slice, SliceMode::coordinate, 4000}};
    struct Sampler {
      const char* name;
      Algo algo;
      BoundTuning bound;
      ZUpdate z;
    };
    const Sampler samplers[] = {
        {"regular", Algo::full, BoundTuning::map, ZUpdate::implicit},
        {"flymc map implicit", Algo::flymc, BoundTuning::map, ZUpdate::implicit},
        {"flymc untuned explicit", Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_}};
    std::uint64_t seed = 3000;
    for (const Kernel& k : kernels) {
      for (const Sampler& sm : samplers) {
        CAPTURE(std::string(k.name));
        CAPTURE(std::string(sm.name));
        RunConfig cfg = flymc::test::fixed_config();
        cfg.algo = sm.algo;
        cfg.bound = sm.bound;
        cfg.z = sm.z;
        cfg.kernel = k.kind;
        cfg.slice_mode = k.mode;
        cfg.metric = Metric::diag;
        cfg.q_dark_to_bright = 0.05;
        cfg.resample_fraction = 0.05;
        cfg.chains = 2;
        cfg.warmup = 1000;
        cfg.iters = sm.algo == Algo::full ? k.iters : 2 * k.iters;
        cfg.seed = ++seed;
        cfg.init = Init::prior;
        const RunResult r = run_logistic(cfg, ds);
        CHECK(r.bound_violations() == 0);
        CHECK(r.nonfinite() == 0);
        for (std::size_t j = 0; j < 2; ++j) {
          CAPTURE(j);
          const auto draws = r.coordinate(j);
          double m = 0.0, se = 0.0;
          std::tie(m, se) = mean_and_mcse(draws, [](double x) { return x; });
          CAPTURE(m);
          CAPTURE(se);
          CHECK(std::fabs(m - exact.mean[j]) < 4.5 * se);
          const double mu = exact.mean[j];
          const auto [v, se_v] =
              mean_and_mcse(draws, [mu](double x) { return (x - mu) * (x - mu); });
          const double sd = std::sqrt(v), se_sd = se_v / (2.0 * sd);
          CHECK(std::fabs(sd - exact.sd[j]) < 4.5 * se_sd);
          CHECK(se < 0.05 * exact.sd[j]);
          CHECK(se_sd < 0.05 * exact.sd[j]);
        }
      }
    }
  }

  TEST_CASE("the same seed gives bit-identical draws with 1 and 2 threads" *
            doctest::test_suite("threaded")) {
    auto ds = test::logistic_data(10000, 4, 41);  // > one 4096-row chunk: parallel reductions
    for (Algo algo : {Algo::full, Algo::flymc}) {
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = algo;
      cfg.chains = 3;
      cfg.warmup = 200;
      cfg.iters = algo == Algo::full ? 300 : 3000;
      cfg.seed = 77;
      cfg.threads = 1;
      const RunResult a = run_logistic(cfg, ds);
      cfg.threads = 2;
      const RunResult b = run_logistic(cfg, ds);
      for (std::size_t c = 0; c < 3; ++c) {
        REQUIRE(a.chains[c].draws.size() == b.chains[c].draws.size());
        CHECK(a.chains[c].draws == b.chains[c].draws);
        CHECK(a.chains[c].lp == b.chains[c].lp);
      }
      // and different chains differ
      CHECK(a.chains[0].draws != a.chains[1].draws);
    }
  }
}
