// Gaussian regression with its noise scale σ inferred (issue 52, step c;
// models/gaussian_sigma.hpp): the collapsed log-likelihood against the sum over rows (weights and
// offsets included) and its gradient against central differences; the MAP under flat priors against
// least squares; the samplers and options that refuse it; and regular NUTS against the closed-form
// posterior under flat priors on β and σ (σ² ~ Inv-Gamma((n − d − 1)/2, RSS/2), β a multivariate t
// around the least-squares fit), and so are regular NUTS and scalable MH on the same posterior
// through a user's family with a global parameter (tests/family_consumer/my_gaussian_scale.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "family_consumer/my_gaussian_scale.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/gaussian_sigma.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

RunConfig sigma_config() {
  RunConfig c = test::fixed_config();
  c.model = ModelKind::gaussian;
  c.algo = Algo::full;
  c.kernel = KernelKind::nuts;
  return c;
}

/// Least squares: β̂ and RSS.
std::pair<Vec, double> least_squares(const Dataset& ds) {
  const auto d = static_cast<Eigen::Index>(ds.d());
  Mat a = Mat::Zero(d, d);
  Vec b = Vec::Zero(d);
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const Eigen::Map<const Vec> x(ds.row(i), d);
    a += x * x.transpose();
    b += x * ds.y()[i];
  }
  const Vec beta = a.ldlt().solve(b);
  double rss = 0.0;
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const double r = ds.y()[i] - Eigen::Map<const Vec>(ds.row(i), d).dot(beta);
    rss += r * r;
  }
  return {beta, rss};
}

/// The draws of (β, σ) against the closed-form posterior under flat priors on β and σ: σ² ~
/// Inv-Gamma(α, β'), α = (n − d − 1)/2, β' = RSS/2, so E[σ] = √β'·Γ(α − ½)/Γ(α) and E[σ²] =
/// β'/(α − 1); β a t with ν = n − d − 1 around β̂, covariance RSS/(ν − 2)·(XᵀX)⁻¹.
void check_closed_form(const Dataset& ds, const RunResult& r) {
  const std::size_t n = ds.n(), d = ds.d();
  const auto [beta, rss] = least_squares(ds);
  const auto dd = static_cast<Eigen::Index>(d);
  Mat a = Mat::Zero(dd, dd);
  for (std::size_t i = 0; i < n; ++i) {
    const Eigen::Map<const Vec> x(ds.row(i), dd);
    a += x * x.transpose();
  }
  const Mat ainv = a.inverse();
  const double alpha = 0.5 * static_cast<double>(n - d - 1), half_rss = 0.5 * rss;
  const double mean_sigma =
      std::sqrt(half_rss) * std::exp(std::lgamma(alpha - 0.5) - std::lgamma(alpha));
  const double sd_sigma = std::sqrt(half_rss / (alpha - 1.0) - mean_sigma * mean_sigma);
  const double nu = static_cast<double>(n - d - 1);
  for (std::size_t j = 0; j <= d; ++j) {
    CAPTURE(j);
    const auto jj = static_cast<Eigen::Index>(j);
    const double mean = j < d ? beta[jj] : mean_sigma;
    const double sd = j < d ? std::sqrt(rss / (nu - 2.0) * ainv(jj, jj)) : sd_sigma;
    const test::ExactCheck e = test::against_exact(r.coordinate(j), mean, sd);
    CHECK(e.mean_z < 4.5);
    CHECK(e.sd_z < 4.5);
    CHECK(e.mcse_in_sd < 0.05);
  }
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("gaussian sigma: the collapsed log-likelihood is the rows' sum; its gradient") {
    auto ds = test::linear_data(3000, 4, 0.7, 21);
    std::vector<double> w(ds->n()), o(ds->n());
    Rng rng(4, 0);
    for (std::size_t i = 0; i < ds->n(); ++i) {
      w[i] = 0.5 + rng.uniform();
      o[i] = 0.3 * rng.normal();
    }
    ds->set_weights(w);
    ds->set_offsets(o);
    RunConfig c = sigma_config();
    c.prior_sigma = "student_t(3, 0, 2)";
    const GaussianSigmaModel model(ds, c);
    CHECK(model.dim() == 5);
    CHECK(model.param_names().back() == "sigma");
    const ScalePrior sp = parse_scale_prior(c.prior_sigma);
    AlignedBuffer tp = aligned_zeros(model.layout().padded()), gp = aligned_zeros(8);
    for (const double sigma : {0.3, 0.7, 2.5}) {
      const double beta[4] = {0.9, -0.1, 0.2, 0.3};
      std::copy(beta, beta + 4, tp.get());
      tp[4] = sigma;
      double sum = sp.log_density(sigma);
      for (std::size_t i = 0; i < ds->n(); ++i) {
        double r = ds->y()[i] - o[i];
        for (std::size_t j = 0; j < 4; ++j) r -= beta[j] * ds->row(i)[j];
        sum += w[i] * (-std::log(sigma) - 0.5 * r * r / (sigma * sigma));
      }
      CHECK(model.log_lik(tp.get()) == doctest::Approx(sum).epsilon(1e-11));
      const double f = model.log_lik_grad(tp.get(), gp.get());
      CHECK(f == model.log_lik(tp.get()));
      CHECK(test::gradient_error(model, tp.get(), 5) < 1e-6);
    }
    tp[4] = 0.0;
    CHECK(model.log_lik(tp.get()) == -std::numeric_limits<double>::infinity());
    tp[4] = -1.0;
    CHECK(model.log_lik(tp.get()) == -std::numeric_limits<double>::infinity());
  }

  TEST_CASE("gaussian sigma: the MAP under flat priors is least squares, sigma^2 = RSS/n") {
    const auto ds = test::linear_data(500, 3, 1.3, 22);
    RunConfig c = sigma_config();
    c.prior = "flat";
    const MapResult map = GaussianSigmaModel(ds, c).find_map();
    const auto [beta, rss] = least_squares(*ds);
    for (Eigen::Index j = 0; j < 3; ++j)
      CHECK(map.theta[j] == doctest::Approx(beta[j]).epsilon(1e-9));
    CHECK(map.theta[3] == doctest::Approx(std::sqrt(rss / 500.0)).epsilon(1e-9));
    // The Laplace covariance of β at the mode: σ̂²(XᵀX)⁻¹.
    CHECK(map.covariance.allFinite());
  }

  TEST_CASE("gaussian sigma: who samples it, and options that do not apply") {
    const auto ds = test::linear_data(200, 3, 1.0, 23);
    RunConfig c = sigma_config();
    c.iters = 50;
    c.warmup = 50;
    const RunResult r = run(c, ds);
    CHECK(r.names.back() == "sigma");
    for (const Algo a : {Algo::flymc, Algo::smh, Algo::bps, Algo::sgld}) {
      CAPTURE(to_string(a));
      c.algo = a;
      c.kernel = KernelKind::rwmh;
      if (a == Algo::sgld) c.ess = 0.0;
      CHECK_THROWS_WITH_AS(run(c, ds), doctest::Contains("with sigma inferred"), ConfigError);
    }
    c.algo = Algo::full;
    c.noise_scale = 1.0;
    c.prior_sigma = "normal(0, 1)";
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--prior-sigma"), ConfigError);
    c.noise_scale.reset();
    c.prior_sigma = "normal(1, 1)";
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("location must be 0"), ConfigError);
    c.prior_sigma = "exponential(0)";
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("RATE"), ConfigError);
    c.prior_sigma = "flat";
    c.prior = "flat";
    CHECK_THROWS_WITH_AS(run(c, test::linear_data(4, 3, 1.0, 24)),
                         doctest::Contains("posterior is improper"), ConfigError);
  }
}

TEST_SUITE("statistical") {
  TEST_CASE("gaussian sigma, flat priors: regular NUTS matches the closed-form posterior") {
    const auto ds = test::linear_data(60, 3, 1.5, 25);
    RunConfig c = sigma_config();
    c.prior = "flat";
    c.iters = 4000;
    check_closed_form(*ds, run(c, ds));
  }

  TEST_CASE(
      "a user's Gaussian scale family, flat priors: regular NUTS and scalable MH through "
      "flymc::run match the closed-form posterior") {
    // The same posterior through the generic model of a family given in code
    // (tests/family_consumer/my_gaussian_scale.hpp): every datum evaluated, or only SMH's
    // candidates.
    const auto ds = test::linear_data(60, 3, 1.5, 25);
    const auto fam = std::make_shared<const MyGaussianScale>(ScalePrior{});
    RunConfig c = test::fixed_config();
    c.algo = Algo::full;
    c.kernel = KernelKind::nuts;
    c.prior = "flat";
    c.iters = 4000;
    check_closed_form(*ds, run(c, ds, fam));
    c.algo = Algo::smh;
    c.kernel = KernelKind::rwmh;
    c.iters = 20000;
    const RunResult r = run(c, ds, fam);
    CHECK(r.bound_violations() == 0);
    check_closed_form(*ds, r);
  }

  TEST_CASE("SBC: regular NUTS on Gaussian regression with sigma inferred is calibrated") {
    SbcOptions o = test::small_sbc(Algo::full, 5, 491, 300);
    o.run.model = ModelKind::gaussian;
    o.run.kernel = KernelKind::nuts;
    o.run.prior = "normal(0, 1)";
    o.run.prior_sigma = "normal(0, 2)";  // half-normal
    test::check_small_sbc(o);
  }
}
