// A family with a global parameter given in code (models/global_model.hpp, issue 52 Deliver 1):
// a user's family (tests/family_consumer/my_gaussian_scale.hpp) within its envelope; the generic
// model of the engine's Student-t scale family against StudentTSigmaModel (log-likelihood up to a
// constant, gradient, MAP); who samples it and what is refused; a violated envelope stops the run
// naming the family. The closed-form check of its draws is in test_gaussian_sigma.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "family_consumer/my_gaussian_scale.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/global_model.hpp"
#include "flymc/models/student_sigma.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// n rows of weighted linear data with offsets (test::linear_data's, ones column last).
std::shared_ptr<Dataset> weighted_data(std::size_t n, std::uint64_t seed) {
  auto ds = test::linear_data(n, 3, 0.8, seed);
  std::vector<double> w(n), o(n);
  Rng rng(seed, 1);
  for (std::size_t i = 0; i < n; ++i) {
    w[i] = 0.5 + rng.uniform();
    o[i] = 0.2 * rng.normal();
    ds->mutable_y()[i] += o[i];
  }
  ds->set_weights(std::move(w));
  ds->set_offsets(std::move(o));
  return ds;
}

RunConfig global_config(Algo algo) {
  RunConfig c = test::fixed_config();
  c.algo = algo;
  c.kernel = algo == Algo::smh ? KernelKind::rwmh : KernelKind::nuts;
  return c;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("a user's global family: expansion and change against f; remainders in the envelope") {
    const MyGaussianScale fam(ScalePrior{});
    Rng rng(81, 0);
    const double h = 1e-5;
    for (int i = 0; i < 2000; ++i) {
      const double y = 2.0 * rng.normal(), u = y + 3.0 * rng.normal(), s = rng.normal();
      const GlobalExpansion e = fam.expand(y, u, s);
      const double sc = 1.0 + std::fabs(e.fs);
      CHECK(e.fu == doctest::Approx((fam.value(y, u + h, s) - fam.value(y, u - h, s)) / (2 * h))
                        .epsilon(1e-6)
                        .scale(sc));
      CHECK(e.fs == doctest::Approx((fam.value(y, u, s + h) - fam.value(y, u, s - h)) / (2 * h))
                        .epsilon(1e-6)
                        .scale(sc));
      const double dh = rng.normal(), dk = 0.3 * rng.normal();
      CHECK(fam.change(y, u, s, dh, dk) ==
            doctest::Approx(fam.value(y, u + dh, s + dk) - fam.value(y, u, s)).epsilon(1e-9));
      const double gap = fam.change(y, u, s, dh, dk) - e.fu * dh - e.fs * dk -
                         0.5 * e.fuu * dh * dh - e.fus * dh * dk - 0.5 * e.fss * dk * dk;
      const double reach = std::fabs(dh) + std::fabs(dk);
      CHECK(std::fabs(gap) <= fam.envelope_scale(y, u, s) *
                                      fam.envelope_growth(std::fabs(dh), std::fabs(dk)) / 6.0 *
                                      reach * reach * reach * (1.0 + 1e-9) +
                                  1e-12 * sc);
    }
  }

  TEST_CASE("the generic model of the Student-t scale family is StudentTSigmaModel's likelihood") {
    // The family leaves out lgamma((ν + 1)/2) − lgamma(ν/2) − ½·log(πν) per datum: the two models
    // differ by that constant, and agree in gradient and MAP.
    const auto ds = weighted_data(3000, 61);
    RunConfig ct = test::fixed_config();
    ct.model = ModelKind::student_t;
    ct.student_nu = 3.0;
    ct.prior_sigma = "exponential(0.5)";
    const StudentTSigmaModel ref(ds, ct);
    RunConfig cg = test::fixed_config();
    cg.model = ModelKind::custom;
    cg.global_family =
        std::make_shared<const StudentTScaleFamily>(3.0, parse_scale_prior("exponential(0.5)"));
    const GlobalFamilyModel model(ds, cg);
    CHECK(model.param_names() ==
          std::vector<std::string>{"theta.1", "theta.2", "theta.3", "sigma"});
    std::vector<double> a(8, 0.0), b(8, 0.0), ga(8), gr(8);
    a[0] = 0.4, a[1] = -0.1, a[2] = 0.3, a[3] = 0.7;
    b[0] = -0.2, b[1] = 0.5, b[2] = 0.1, b[3] = 1.6;
    CHECK(model.log_lik(a.data()) - model.log_lik(b.data()) ==
          doctest::Approx(ref.log_lik(a.data()) - ref.log_lik(b.data())).epsilon(1e-11));
    (void)model.log_lik_grad(a.data(), ga.data());
    (void)ref.log_lik_grad(a.data(), gr.data());
    for (std::size_t j = 0; j < 4; ++j) CHECK(ga[j] == doctest::Approx(gr[j]).epsilon(1e-11));
    const MapResult m = model.find_map(), r = ref.find_map();
    for (Eigen::Index j = 0; j < 4; ++j) {
      CHECK(m.theta[j] == doctest::Approx(r.theta[j]).epsilon(1e-7));
      CHECK(m.covariance(j, j) == doctest::Approx(r.covariance(j, j)).epsilon(1e-4));
    }
    a[3] = -1.0;  // σ ≤ 0: density 0
    CHECK(model.log_lik(a.data()) == -std::numeric_limits<double>::infinity());
  }

  TEST_CASE("a user's global family: who samples it; refusals name the family") {
    const auto ds = weighted_data(400, 62);
    const auto fam = std::make_shared<const MyGaussianScale>(ScalePrior{});
    const RunResult r = run(global_config(Algo::smh), ds, fam);
    CHECK(r.names.back() == "sigma");
    CHECK(r.bound_violations() == 0);
    CHECK(r.config.model == ModelKind::custom);
    RunConfig automatic = test::fixed_config();  // auto pilots regular MCMC and SMH on it
    automatic.algo = Algo::automatic;
    automatic.ess = 400.0;
    automatic.iters = 20000;
    const RunResult a = run(automatic, ds, fam);
    CHECK(a.names.back() == "sigma");
    CHECK((a.config.algo == Algo::smh || a.config.algo == Algo::full));
    const auto refused = [&](RunConfig c, const std::string& what,
                             std::shared_ptr<const Dataset> data = nullptr) {
      CAPTURE(what);
      try {
        (void)run(c, data ? data : ds, fam);
        FAIL("not refused");
      } catch (const ConfigError& e) {
        CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, std::string(e.what()));
      }
    };
    refused(global_config(Algo::flymc),
            "needs a collapsible lower bound on each datum's likelihood (a single-index family "
            "gives one through kappa, a bound on -f''), which the gaussian_scale model (sigma "
            "inferred) does not offer");
    RunConfig third = global_config(Algo::smh);
    third.smh_order = 3;
    refused(third,
            "needs a bound on each datum's fourth derivative (a single-index family's M4, or a "
            "local envelope), which the gaussian_scale model (sigma inferred) does not offer");
    RunConfig zigzag = global_config(Algo::zigzag_cv);
    zigzag.kernel = KernelKind::rwmh;
    refused(zigzag, "which the gaussian_scale model (sigma inferred) does not offer",
            test::linear_data(400, 3, 0.8, 62));
    RunConfig both = global_config(Algo::full);
    both.model = ModelKind::custom;
    both.global_family = fam;
    both.family = single_index_family([] {
      RunConfig p;
      p.model = ModelKind::probit;
      return p;
    }());
    CHECK_THROWS_WITH_AS(both.validate(), doctest::Contains("not both"), ConfigError);
    RunConfig builtin = global_config(Algo::full);
    builtin.global_family = fam;
    CHECK_THROWS_WITH_AS(builtin.validate(), doctest::Contains("does not take it"), ConfigError);
    auto trials = weighted_data(400, 62);
    trials->set_trials(std::vector<double>(ds->n(), 1.0));
    CHECK_THROWS_WITH_AS(
        run(global_config(Algo::full), trials, fam),
        doctest::Contains("the gaussian_scale model (sigma inferred) does not read"), ConfigError);
    auto bad = weighted_data(400, 62);
    bad->mutable_y()[17] = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(run(global_config(Algo::full), bad, fam),
                         doctest::Contains("row 18: field 1 (response): inf must be finite"),
                         DataError);
  }

  TEST_CASE("a user's global family: an envelope too small stops scalable MH, naming the family") {
    const auto ds = weighted_data(2000, 63);
    const auto small = std::make_shared<const MyGaussianScale>(ScalePrior{}, 0.01);
    RunConfig c = global_config(Algo::smh);
    c.init_jitter = 3.0;
    CHECK_THROWS_WITH_AS(run(c, ds, small), doctest::Contains("the gaussian_scale family"),
                         BoundViolationError);
    c.on_bound_violation = OnViolation::finish;
    const RunResult r = run(c, ds, small);
    CHECK(r.bound_violations() > 0);
    CHECK_FALSE(r.exact());
  }
}
