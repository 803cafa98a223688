// Priors as users write them (issue 52, step b): the written forms (core/prior_spec.hpp) and
// their errors; each coordinate's density, gradient and MAP curvature (models/prior.hpp);
// today's gaussian and laplace keeping their arithmetic; per-coefficient lists and the
// intercept's own prior; the closed-form posterior of Gaussian regression under flat and
// per-coefficient normal priors by its MAP (test_family.cpp samples it under a flat prior by
// FlyMC, scalable MH and NUTS); improper posteriors
// refused (separable data, collinear features, softmax); and SBC under Student-t, Laplace and
// normal priors with an intercept.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/prior_spec.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/glm.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/prior.hpp"
#include "flymc/models/softmax.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

RunConfig with_prior(const std::string& prior, const std::string& intercept_prior = "",
                     bool intercept = false) {
  RunConfig c;
  c.prior = prior;
  c.prior_intercept = intercept_prior;
  c.intercept = intercept;
  return c;
}

/// The conjugate posterior of Gaussian regression with noise sd s under independent normal
/// priors N(m_j, S_j²) (S_j = ∞: flat): precision XᵀX/s² + diag(1/S²), mean Σ(Xᵀy/s² + m/S²).
struct Conjugate {
  Vec mean;
  Mat cov;
};
Conjugate conjugate(const Dataset& ds, double s, const std::vector<double>& m,
                    const std::vector<double>& sd) {
  const auto d = static_cast<Eigen::Index>(ds.d());
  Mat prec = Mat::Zero(d, d);
  Vec b = Vec::Zero(d);
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const Eigen::Map<const Vec> x(ds.row(i), d);
    prec += x * x.transpose() / (s * s);
    b += x * ds.y()[i] / (s * s);
  }
  for (Eigen::Index j = 0; j < d; ++j)
    if (std::isfinite(sd[j])) {
      prec(j, j) += 1.0 / (sd[j] * sd[j]);
      b[j] += m[j] / (sd[j] * sd[j]);
    }
  const Mat cov = prec.inverse();
  return {cov * b, cov};
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("priors: the written forms, and errors naming the option and what is wrong") {
    const PriorSpec n = parse_prior_spec("normal(0, 10)");
    CHECK(n.kind == PriorKind::gaussian);
    CHECK(n.loc == std::vector<double>{0.0});
    CHECK(n.scale == std::vector<double>{10.0});
    CHECK_FALSE(n.keyword);
    const PriorSpec t = parse_prior_spec(" student_t( 3 ,[1, -2.5,0] , 2.5e0 ) ");
    CHECK(t.kind == PriorKind::student_t);
    CHECK(t.nu == 3.0);
    CHECK(t.loc == std::vector<double>{1.0, -2.5, 0.0});
    CHECK(t.length() == 3);
    CHECK(parse_prior_spec("laplace(0, [1, 2])").kind == PriorKind::laplace);
    CHECK(parse_prior_spec("flat").kind == PriorKind::flat);
    CHECK(parse_prior_spec("gaussian").keyword);
    CHECK(parse_prior_spec("laplace").keyword);
    const auto bad = [](const char* text, const char* says) {
      CAPTURE(text);
      CHECK_THROWS_WITH_AS(parse_prior_spec(text, "--prior"), doctest::Contains(says), ConfigError);
      CHECK_THROWS_WITH_AS(parse_prior_spec(text, "--prior"), doctest::Contains("--prior '"),
                           ConfigError);
    };
    bad("normal(0, -1)", "the scale S must be in [1e-150, 1e150], got -1");
    bad("normal(0, 0)", "got 0");
    bad("cauchy(0, 1)", "unknown distribution 'cauchy'");
    bad("uniform", "unknown distribution 'uniform'");
    bad("", "no distribution");
    bad("normal(0 1)", "expected ','");
    bad("normal(0, 1", "expected ')'");
    bad("normal(0, 1) x", "after the closing parenthesis");
    bad("normal(nan, 1)", "expected a finite number");
    bad("student_t(0, 0, 1)", "NU must be one number > 0");
    bad("student_t([1, 2], 0, 1)", "NU must be one number > 0");
    bad("laplace(0, [1, 2], 3)", "expected ')'");
    bad("normal([0, 1, 2], [1, 2])", "different lengths (3 and 2)");
    bad("laplace(0, -2)", "the scale B must be");
  }

  TEST_CASE("priors: a run's options combine, or are refused naming the option") {
    CHECK_THROWS_WITH_AS(run_priors(with_prior("gaussian", "normal(0, 5)")),
                         doctest::Contains("--prior-intercept needs --intercept"), ConfigError);
    CHECK_THROWS_WITH_AS(run_priors(with_prior("normal([0, 1], 1)", "", true)),
                         doctest::Contains("give the intercept's with --prior-intercept"),
                         ConfigError);
    CHECK_THROWS_WITH_AS(run_priors(with_prior("normal(0, 1)", "normal([0, 1], 1)", true)),
                         doctest::Contains("one coefficient"), ConfigError);
    RunConfig c = with_prior("normal(0, 3)");
    c.prior_sd = 2.0;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--prior-sd sets the sd of --prior"),
                         ConfigError);
    c = with_prior("flat");
    c.init = Init::prior;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("a flat prior has no draws"), ConfigError);
    c = with_prior("student_t(3, 0, 1)");
    c.algo = Algo::zigzag_cv;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("one centred Gaussian prior"),
                         ConfigError);
    c.prior = "normal(0, 2)";
    CHECK_NOTHROW(c.validate());
    c.prior = "normal(1, 2)";
    CHECK_THROWS_AS(c.validate(), ConfigError);
    c.prior = "flymc";
    c.algo = Algo::full;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("unknown distribution 'flymc'"),
                         ConfigError);
  }

  TEST_CASE("priors: each coordinate's gradient by central differences; MAP curvatures minorize") {
    const PriorTerm terms[] = {{PriorKind::gaussian, 0.7, 2.0, 0.0},
                               {PriorKind::laplace, -1.0, 0.5, 0.0},
                               {PriorKind::student_t, 2.0, 1.5, 3.0},
                               {PriorKind::student_t, 0.0, 0.1, 0.5},
                               {PriorKind::flat, 0.0, 1.0, 0.0}};
    Rng rng(7, 0);
    for (const PriorTerm& p : terms) {
      CAPTURE(static_cast<int>(p.kind));
      for (int k = 0; k < 200; ++k) {
        const double t = p.loc + 3.0 * p.scale * rng.normal(), h = 1e-6 * p.scale;
        if (p.kind == PriorKind::laplace && std::fabs(t - p.loc) < 2.0 * h) continue;
        const double fd = (p.log_density(t + h) - p.log_density(t - h)) / (2.0 * h);
        CHECK(p.gradient(t) == doctest::Approx(fd).epsilon(1e-6).scale(1.0 / p.scale));
        // The quadratic with the MAP curvature at t lies below log p (a minorizer touching at
        // t), so Newton steps with it and a line search climb.
        const double c = p.map_curvature(t), u = t + 5.0 * p.scale * rng.normal();
        const double quad =
            p.log_density(t) + p.gradient(t) * (u - t) - 0.5 * c * (u - t) * (u - t);
        CHECK(quad <= p.log_density(u) + 1e-12 * (1.0 + std::fabs(quad)));
        CHECK(c >= 0.0);
      }
    }
    // The stand-in precisions: 1/S², a Laplace's of the same variance, a Student-t's at its mode.
    CHECK(terms[0].precision() == doctest::Approx(0.25));
    CHECK(terms[1].precision() == doctest::Approx(2.0));  // variance 2b² = 0.5
    CHECK(terms[2].precision() == doctest::Approx(4.0 / (3.0 * 2.25)));
    CHECK(terms[4].precision() == 0.0);
    // Log space far out: no overflow or NaN.
    CHECK(std::isfinite(terms[2].log_density(1e300)));
    CHECK(std::isfinite(terms[2].gradient(1e300)));
    CHECK(std::isfinite(terms[3].gradient(-1e200)));
  }

  TEST_CASE("priors: each density, exponentiated, integrates to its distribution's constant") {
    // t = loc + scale·tan(u) maps (−π/2, π/2) onto the line, dt = scale·sec²(u) du: the
    // integrand is smooth and bounded for every kind here, and the midpoint rule exact to ~1e-8.
    struct Case {
      PriorTerm term;
      double constant;  // ∫ exp(log_density)
    };
    const double pi = std::numbers::pi;
    const auto t_constant = [&](double nu, double s) {
      return s * std::sqrt(nu * pi) * std::exp(std::lgamma(0.5 * nu) - std::lgamma(0.5 * nu + 0.5));
    };
    for (const Case& k : {Case{{PriorKind::gaussian, 0.7, 2.0, 0.0}, std::sqrt(2.0 * pi) * 2.0},
                          Case{{PriorKind::laplace, -1.0, 0.5, 0.0}, 2.0 * 0.5},
                          Case{{PriorKind::student_t, 2.0, 1.5, 3.0}, t_constant(3.0, 1.5)},
                          Case{{PriorKind::student_t, 0.0, 0.1, 1.0}, t_constant(1.0, 0.1)}}) {
      CAPTURE(static_cast<int>(k.term.kind));
      const int m = 200000;
      double sum = 0.0;
      for (int i = 0; i < m; ++i) {
        const double u = -0.5 * pi + pi * (i + 0.5) / m, c = std::cos(u);
        sum += std::exp(k.term.log_density(k.term.loc + k.term.scale * std::tan(u))) *
               k.term.scale / (c * c);
      }
      CHECK(sum * pi / m == doctest::Approx(k.constant).epsilon(1e-6));
    }
  }

  TEST_CASE("priors: gaussian and laplace keep today's arithmetic; lists and the intercept") {
    const double theta[3] = {0.3, -1.2, 2.5};
    RunConfig c = with_prior("gaussian");
    c.prior_sd = 2.0;
    Prior p = prior_of(c, 3);
    CHECK(p.terms.empty());
    const double sq = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2];
    CHECK(p.log_density(theta, 3) == doctest::Approx(-0.5 * sq / 4.0).epsilon(1e-15));
    c.prior = "laplace";
    p = prior_of(c, 3);
    CHECK(p.terms.empty());
    CHECK(p.kind == PriorKind::laplace);
    CHECK(p.sd == 2.0);
    // normal(0, S) and laplace(0, B) are the same priors on the short path.
    CHECK(prior_of(with_prior("normal(0, 2)"), 3) == Prior(PriorKind::gaussian, 2.0));
    CHECK(prior_of(with_prior("flat"), 3).any_flat());
    // Lists: a value per feature; the intercept's prior on coordinate 0.
    p = prior_of(with_prior("normal([1, 2], [3, 4])", "student_t(3, 0, 10)", true), 3);
    REQUIRE(p.terms.size() == 3);
    CHECK(p.terms[0] == PriorTerm{PriorKind::student_t, 0.0, 10.0, 3.0});
    CHECK(p.terms[1] == PriorTerm{PriorKind::gaussian, 1.0, 3.0, 0.0});
    CHECK(p.terms[2] == PriorTerm{PriorKind::gaussian, 2.0, 4.0, 0.0});
    CHECK(p.log_density(theta, 3) ==
          doctest::Approx(-2.0 * std::log1p(0.09 / 300.0) - 0.5 * (2.2 * 2.2 / 9.0) -
                          0.5 * (0.5 * 0.5 / 16.0)));
    CHECK_FALSE(p.uniform_precision());
    CHECK_THROWS_WITH_AS(prior_of(with_prior("normal([1, 2], 1)"), 3),
                         doctest::Contains("lists of 2 values; the data have 3 features"),
                         ConfigError);
  }

  TEST_CASE("priors: Gaussian regression's MAP and Laplace covariance are the closed form") {
    const double s = 0.8;
    const auto ds = test::linear_data(300, 3, s, 11);
    const auto family = std::make_shared<GaussianFamily>(s);
    const double inf = std::numeric_limits<double>::infinity();
    struct Case {
      const char* prior;
      std::vector<double> m, sd;
    };
    for (const Case& k : {Case{"flat", {0, 0, 0}, {inf, inf, inf}},
                          Case{"normal([2, -1, 0.5], [0.1, 1, 3])", {2, -1, 0.5}, {0.1, 1, 3}}}) {
      CAPTURE(k.prior);
      const GlmModel model(ds, prior_of(with_prior(k.prior), 3), family);
      const MapResult map = model.find_map();
      const Conjugate exact = conjugate(*ds, s, k.m, k.sd);
      for (Eigen::Index j = 0; j < 3; ++j) {
        CHECK(map.theta[j] == doctest::Approx(exact.mean[j]).epsilon(1e-9));
        for (Eigen::Index i = 0; i < 3; ++i)
          CHECK(map.covariance(i, j) == doctest::Approx(exact.cov(i, j)).epsilon(1e-9));
      }
    }
  }

  TEST_CASE(
      "priors: an improper posterior is refused: separable data, collinear features, softmax") {
    // Labels from the sign of a linear predictor, without noise: a hyperplane splits them.
    auto sep = std::make_shared<Dataset>(200, 3, "separable");
    Rng rng(3, 0);
    for (std::size_t i = 0; i < sep->n(); ++i) {
      double* x = sep->mutable_row(i);
      x[0] = rng.normal();
      x[1] = rng.normal();
      x[2] = 1.0;
      sep->mutable_y()[i] = x[0] - 0.5 * x[1] + 0.2 > 0.0 ? 1.0 : -1.0;
    }
    RunConfig c = with_prior("flat");
    c.algo = Algo::full;
    c.kernel = KernelKind::nuts;
    c.ess = 0.0;
    c.iters = 100;
    CHECK_THROWS_WITH_AS(run(c, sep), doctest::Contains("posterior is improper"), ConfigError);
    c.model = ModelKind::probit;
    CHECK_THROWS_WITH_AS(run(c, sep), doctest::Contains("posterior is improper"), ConfigError);
    // The same data with a proper prior, and non-separable data with a flat one, run.
    c.model = ModelKind::logistic;
    c.prior = "normal(0, 10)";
    CHECK_NOTHROW(run(c, sep));
    c.prior = "flat";
    CHECK_NOTHROW(run(c, test::logistic_data(200, 3, 5)));
    // Gaussian regression on a feature repeated: the data do not determine its two coefficients.
    auto twice = test::linear_data(100, 3, 0.5, 12);
    for (std::size_t i = 0; i < twice->n(); ++i) twice->mutable_row(i)[1] = twice->row(i)[0];
    c.model = ModelKind::gaussian;
    CHECK_THROWS_WITH_AS(run(c, twice), doctest::Contains("posterior is improper"), ConfigError);
    c.model = ModelKind::softmax;
    CHECK_THROWS_WITH_AS(SoftmaxModel(test::softmax_data(60, 3, 3, 4), prior_of(c, 3)),
                         doctest::Contains("flat prior leaves the posterior improper"),
                         ConfigError);
  }

  TEST_CASE("intercept: a column of ones named intercept, with its own prior, on every sampler") {
    const auto ds = test::linear_data(400, 2, 0.5, 13);
    RunConfig c = with_prior("normal(0, 5)", "student_t(3, 0, 10)", true);
    c.model = ModelKind::gaussian;
    c.noise_scale = 0.5;
    c.ess = 0.0;
    c.iters = 200;
    c.warmup = 200;
    c.chains = 2;
    for (const Algo a : {Algo::full, Algo::flymc, Algo::smh}) {
      CAPTURE(to_string(a));
      c.algo = a;
      c.kernel = a == Algo::smh ? KernelKind::rwmh : KernelKind::nuts;
      const RunResult r = run(c, ds);
      REQUIRE(r.names.size() == 3);
      CHECK(r.names[0] == "intercept");
      CHECK(r.names[1] == "theta.1");
      CHECK(r.names[2] == "theta.2");
      // The data's last column is ones too: the data fix intercept + theta.2 (at 0.1, sd 0.025).
      const auto ic = r.coordinate(0), last = r.coordinate(2);
      double sum = 0.0;
      std::size_t count = 0;
      for (std::size_t ch = 0; ch < ic.size(); ++ch)
        for (std::size_t i = 0; i < ic[ch].size(); ++i, ++count) sum += ic[ch][i] + last[ch][i];
      CHECK(std::fabs(sum / static_cast<double>(count) - 0.1) < 0.1);
    }
  }
}

TEST_SUITE("statistical") {
  // SBC (tests/sbc_util.hpp's small cases) with an intercept and priors that are neither
  // centred nor normal: every coefficient's draw from its own prior must be what the sampler
  // conditions on.
  SbcOptions prior_sbc(Algo algo, long thin, std::uint64_t seed) {
    SbcOptions o = test::small_sbc(algo, thin, seed, 300);
    o.n = 20;  // few rows, narrow priors: the prior weighs about as much as the likelihood
    o.run.intercept = true;
    o.run.prior_intercept = "student_t(3, 0.5, 0.5)";
    o.run.prior = "laplace([-0.5, 0.3], [0.3, 0.5])";
    return o;
  }
  TEST_CASE("SBC: regular NUTS on logistic regression under Student-t and Laplace priors") {
    SbcOptions o = prior_sbc(Algo::full, 5, 481);
    o.run.kernel = KernelKind::nuts;
    test::check_small_sbc(o);
  }
  TEST_CASE("SBC: scalable MH on logistic regression under Student-t and normal priors") {
    SbcOptions o = prior_sbc(Algo::smh, 5, 482);
    o.run.prior = "normal([-0.5, 0.3], [0.4, 0.7])";
    test::check_small_sbc(o);
  }
}
