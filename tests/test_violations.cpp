// A family whose constants are wrong (RunConfig::on_bound_violation): every exact sampler that
// checks a bound stops with BoundViolationError naming the family, the datum and its predictor,
// through flymc::run as through the command line; asked to finish, the run ends marked not
// exact, with a warning. (The command line's side is in test_cli_checkpoint.cpp.)
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// Probit regression with every constant ten times too small, as a library user's mistake would
/// make them: κ (FlyMC's bound), M2 (Zig-Zag with control variates) and M3 (scalable MH).
class TenfoldProbit final : public SingleIndexFamily {
 public:
  std::string name() const override { return "tenfold-probit"; }
  LabelDomain labels() const override { return LabelDomain::binary; }
  void derivatives(double y, double eta, int order, double* out) const override {
    probit_.derivatives(y, eta, order, out);
  }
  std::optional<double> kappa() const override { return 0.1 * *probit_.kappa(); }
  std::optional<double> m2() const override { return 0.1 * *probit_.m2(); }
  std::optional<double> m3() const override { return 0.1 * *probit_.m3(); }

 private:
  ProbitFamily probit_;
};

RunConfig short_run(Algo algo) {
  RunConfig c = test::fixed_config();
  c.algo = algo;
  if (algo == Algo::flymc) c.kernel = KernelKind::nuts;
  c.chains = 4;
  c.threads = 2;
  c.warmup = 300;
  c.iters = 600;
  c.seed = 5;
  return c;
}

/// The message of the error `algo` stops with on these data.
std::string stop_message(Algo algo, const std::shared_ptr<const Dataset>& ds) {
  const auto family = std::make_shared<TenfoldProbit>();
  try {
    (void)run(short_run(algo), ds, family);
  } catch (const BoundViolationError& e) {
    return e.what();
  }
  return "(no BoundViolationError)";
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("a family's constant ten times too small stops FlyMC, SMH and Zig-Zag-CV, naming it") {
    const auto ds = test::logistic_data(3000, 3, 21);
    const std::string fly = stop_message(Algo::flymc, ds);
    CAPTURE(fly);
    CHECK(fly.find("tenfold-probit family") != std::string::npos);
    CHECK(fly.find("FlyMC's lower bound") != std::string::npos);
    CHECK(fly.find("at datum ") != std::string::npos);
    CHECK(fly.find("eta = ") != std::string::npos);
    const std::string smh = stop_message(Algo::smh, ds);
    CAPTURE(smh);
    CHECK(smh.find("remainder bound") != std::string::npos);
    CHECK(smh.find("at datum ") != std::string::npos);
    const std::string zz = stop_message(Algo::zigzag_cv, ds);
    CAPTURE(zz);
    CHECK(zz.find("event-rate bound") != std::string::npos);
    CHECK(zz.find("tenfold-probit") != std::string::npos);
  }

  TEST_CASE("asked to finish, a run with violations ends marked not exact, with a warning") {
    const auto ds = test::logistic_data(3000, 3, 21);
    RunConfig c = short_run(Algo::flymc);
    c.on_bound_violation = OnViolation::finish;
    const RunResult r = run(c, ds, std::make_shared<TenfoldProbit>());
    CHECK(r.bound_violations() > 0);
    CHECK_FALSE(r.exact());
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.warnings[0].find("not exact") != std::string::npos);
    CHECK(r.warnings[0].find("at datum ") != std::string::npos);
    // The right constants: no violation, exact, no warning.
    const RunResult ok = run(c, ds, std::make_shared<ProbitFamily>());
    CHECK(ok.bound_violations() == 0);
    CHECK(ok.exact());
    CHECK(ok.warnings.empty());
  }

  TEST_CASE("a bound raised by the fault hook stops a run at the datum it names") {
    // Raising every log B_n by 1e-3 leaves it above the likelihood of the data whose Δ_n at the
    // MAP is smaller: a violation at the first of them that a z-update or θ-step evaluates.
    const auto ds = test::logistic_data(2000, 3, 9);
    RunConfig c = short_run(Algo::flymc);
    FaultInjection hooks;
    hooks.bound_excess = 1e-3;
    CHECK_THROWS_WITH_AS(run(c, ds, {}, nullptr, nullptr, hooks),
                         doctest::Contains("the logistic model violates FlyMC's lower bound"),
                         BoundViolationError);
  }
}
