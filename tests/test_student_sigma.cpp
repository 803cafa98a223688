// Student-t regression with its scale σ inferred (issue 52, step e; models/student_sigma.hpp):
// the log-likelihood against the Student-t density summed over rows (weights and offsets), its
// gradient against central differences, finite at extreme residuals; the MAP's gradient from a
// start among outliers; the samplers and options that refuse it; regular NUTS against the
// posterior computed by quadrature on a grid; SBC. Its global family for scalable MH
// (models/global_family.hpp): the expansion and the change against the density, the envelope
// of the third derivatives dominating them and attained (a 10% smaller one fails); scalable MH
// from a far start against regular NUTS, and its SBC.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/student_sigma.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

RunConfig student_config() {
  RunConfig c = test::fixed_config();
  c.model = ModelKind::student_t;
  c.algo = Algo::full;
  c.kernel = KernelKind::nuts;
  c.prior_sigma = "exponential(0.5)";
  return c;
}

/// n rows: a ones column and d − 1 standard normals; y = x·β + o + σ·t_ν.
std::shared_ptr<Dataset> t_data(std::size_t n, std::size_t d, const std::vector<double>& beta,
                                double sigma, double nu, std::uint64_t seed, bool offsets = false) {
  auto ds = std::make_shared<Dataset>(n, d, "t");
  Rng rng(seed, 0);
  std::vector<double> o;
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    x[0] = 1.0;
    for (std::size_t j = 1; j < d; ++j) x[j] = rng.normal();
    double eta = 0.0;
    for (std::size_t j = 0; j < d; ++j) eta += beta[j] * x[j];
    if (offsets) eta += o.emplace_back(0.3 * rng.normal());
    const double chi2 = 2.0 * gamma_draw(0.5 * nu, rng);
    ds->mutable_y()[i] = eta + sigma * rng.normal() / std::sqrt(chi2 / nu);
  }
  ds->set_offsets(std::move(o));
  return ds;
}

/// log t_ν(y | μ, σ), the whole density.
double t_log_pdf(double y, double mu, double sigma, double nu) {
  const double z = (y - mu) / sigma;
  return std::lgamma(0.5 * (nu + 1.0)) - std::lgamma(0.5 * nu) -
         0.5 * std::log(std::numbers::pi * nu) - std::log(sigma) -
         0.5 * (nu + 1.0) * std::log1p(z * z / nu);
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("student_t sigma: the log-likelihood is the density's sum over rows; its gradient") {
    auto ds = t_data(2000, 3, {0.5, 0.4, -0.3}, 1.3, 4.0, 41, true);
    std::vector<double> w(ds->n());
    Rng rng(6, 0);
    for (double& v : w) v = 0.5 + rng.uniform();
    ds->set_weights(w);
    RunConfig c = student_config();
    c.student_nu = 3.0;
    const StudentTSigmaModel model(ds, c);
    CHECK(model.dim() == 4);
    CHECK(model.param_names().back() == "sigma");
    const ScalePrior sp = parse_scale_prior(c.prior_sigma);
    AlignedBuffer tp = aligned_zeros(model.layout().padded()), gp = aligned_zeros(8);
    for (const double sigma : {0.05, 1.3, 40.0}) {
      CAPTURE(sigma);
      const double beta[3] = {0.6, 0.3, -0.2};
      std::copy(beta, beta + 3, tp.get());
      tp[3] = sigma;
      double want = sp.log_density(sigma);
      for (std::size_t i = 0; i < ds->n(); ++i) {
        double mu = ds->offsets()[i];
        for (std::size_t j = 0; j < 3; ++j) mu += beta[j] * ds->row(i)[j];
        want += w[i] * t_log_pdf(ds->y()[i], mu, sigma, 3.0);
      }
      const double f = model.log_lik(tp.get());
      CHECK(f == doctest::Approx(want).epsilon(1e-12));
      CHECK(model.log_lik_grad(tp.get(), gp.get()) == f);
      CHECK(test::gradient_error(model, tp.get(), 4) < 1e-6);
    }
    tp[3] = 0.0;
    CHECK(model.log_lik(tp.get()) == -std::numeric_limits<double>::infinity());
    tp[3] = -2.0;
    CHECK(model.log_lik(tp.get()) == -std::numeric_limits<double>::infinity());
  }

  TEST_CASE("student_t sigma: finite at extreme residuals and scales") {
    auto ds = std::make_shared<Dataset>(3, 1, "extreme");
    const double ys[3] = {1e300, -1e300, 0.0};
    for (std::size_t i = 0; i < 3; ++i) {
      ds->mutable_row(i)[0] = 1.0;
      ds->mutable_y()[i] = ys[i];
    }
    const StudentTSigmaModel model(ds, student_config());
    AlignedBuffer tp = aligned_zeros(model.layout().padded()), gp = aligned_zeros(8);
    for (const double sigma : {1e-200, 1.0, 1e200}) {
      CAPTURE(sigma);
      tp[0] = 0.5;
      tp[1] = sigma;
      CHECK(std::isfinite(model.log_lik_grad(tp.get(), gp.get())));
      CHECK(std::isfinite(gp[0]));
      CHECK(std::isfinite(gp[1]));
    }
  }

  TEST_CASE("student_t sigma: the MAP zeroes the gradient in (beta, log sigma), near the truth") {
    // Heavy tails (ν = 2) put outliers where the exact Hessian at the start is indefinite.
    auto ds = t_data(20000, 3, {0.5, 0.4, -0.3}, 0.7, 2.0, 42);
    RunConfig c = student_config();
    c.student_nu = 2.0;
    const StudentTSigmaModel model(ds, c);
    const MapResult map = model.find_map();
    CHECK(map.covariance.allFinite());
    AlignedBuffer tp = aligned_zeros(model.layout().padded()), gp = aligned_zeros(8);
    std::copy(map.theta.data(), map.theta.data() + 4, tp.get());
    model.log_lik_grad(tp.get(), gp.get());
    model.prior().add_gradient(tp.get(), 4, gp.get());
    gp[3] = gp[3] * tp[3] + 1.0;  // d/d log σ of the log density of (β, log σ)
    const double truth[4] = {0.5, 0.4, -0.3, 0.7};
    for (Eigen::Index j = 0; j < 4; ++j) {
      CAPTURE(j);
      CHECK(std::fabs(gp[j]) < 1e-6);
      const double sd = std::sqrt(map.covariance(j, j));
      CHECK(std::fabs(map.theta[j] - truth[j]) < 4.0 * sd);
    }
  }

  TEST_CASE("student_t sigma: who samples it, and options that do not apply") {
    const auto ds = t_data(300, 2, {0.8, 0.3}, 1.0, 4.0, 43);
    RunConfig c = student_config();
    c.iters = 50;
    c.warmup = 50;
    const RunResult r = run(c, ds);
    CHECK(r.names.back() == "sigma");
    for (const Algo a : {Algo::flymc, Algo::bps, Algo::sgld}) {  // SMH of both orders runs it
      CAPTURE(to_string(a));
      c.algo = a;
      c.kernel = KernelKind::rwmh;
      if (a == Algo::sgld) c.ess = 0.0;
      CHECK_THROWS_WITH_AS(run(c, ds), doctest::Contains("--model student_t (sigma inferred)"),
                           ConfigError);
    }
    c.algo = Algo::automatic;
    c.kernel = KernelKind::nuts;
    c.ess = RunConfig{}.ess;
    const Algo chosen = choose_algo(c, ds).best().config.algo;
    CHECK((chosen == Algo::full || chosen == Algo::smh));
    c.algo = Algo::full;
    c.noise_scale = 2.0;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--model robust --noise-scale"),
                         ConfigError);
    c.noise_scale.reset();
    c.model = ModelKind::robust;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--prior-sigma"), ConfigError);
    c.model = ModelKind::student_t;
    c.prior_sigma = "flat";
    c.prior = "flat";
    auto two = t_data(2, 2, {0.0, 0.0}, 1.0, 4.0, 44);
    CHECK_THROWS_WITH_AS(StudentTSigmaModel(two, c), doctest::Contains("improper"), ConfigError);
  }
}

namespace {

/// max over a + b = 3 of λ^−a·|∂^a_u ∂^b_s f| at (y, u, s), λ = eta_scale(ŝ): the third
/// derivatives by central differences of the expansion's second ones.
double scaled_third(const StudentTScaleFamily& fam, double y, double u, double s, double lambda) {
  const double h = 1e-5;
  const GlobalExpansion up = fam.expand(y, u + h, s), un = fam.expand(y, u - h, s);
  const GlobalExpansion sp = fam.expand(y, u, s + h), sn = fam.expand(y, u, s - h);
  const double fuuu = (up.fuu - un.fuu) / (2 * h), fuus = (sp.fuu - sn.fuu) / (2 * h);
  const double fuss = (up.fss - un.fss) / (2 * h), fsss = (sp.fss - sn.fss) / (2 * h);
  return std::max({std::fabs(fuuu) / (lambda * lambda * lambda),
                   std::fabs(fuus) / (lambda * lambda), std::fabs(fuss) / lambda, std::fabs(fsss)});
}

/// A random point: a response, a residual over many scales, ŝ, and s within 0.5 of it.
std::array<double, 4> box_point(Rng& rng) {
  const double y = 3.0 * rng.normal(), u = y + std::exp(3.0 * rng.normal()) * rng.normal();
  const double s_hat = 2.0 * rng.normal(), t = 0.5 * rng.uniform();
  return {y, u, s_hat, s_hat + t * (2.0 * rng.uniform() - 1.0)};
}

/// max over a + b = 4 of λ^−a·|∂^a_u ∂^b_s f| at (y, u, s): the fourth derivatives by central
/// differences of the family's third ones.
double scaled_fourth(const StudentTScaleFamily& fam, double y, double u, double s, double lambda) {
  const double h = 1e-5;
  const GlobalThird up = fam.third(y, u + h, s), un = fam.third(y, u - h, s);
  const GlobalThird sp = fam.third(y, u, s + h), sn = fam.third(y, u, s - h);
  const double d[5] = {(up.fuuu - un.fuuu) / (2 * h), (sp.fuuu - sn.fuuu) / (2 * h),
                       (sp.fuus - sn.fuus) / (2 * h), (sp.fuss - sn.fuss) / (2 * h),
                       (sp.fsss - sn.fsss) / (2 * h)};
  double m = 0.0;
  for (int a = 4; a >= 0; --a) m = std::max(m, std::fabs(d[4 - a]) / std::pow(lambda, a));
  return m;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE(
      "student_t global family, order 3: third derivatives against the expansion's; the fourth's "
      "envelope dominates, attained at a zero residual; remainders within it") {
    for (const double nu : {1.0, 4.0, 30.0}) {
      CAPTURE(nu);
      const StudentTScaleFamily fam(nu, ScalePrior{});
      const double alpha = 0.5 * (nu + 1.0), h = 1e-5;
      Rng rng(73, 0);
      double attained = 0.0;
      for (int i = 0; i < 2000; ++i) {
        const std::array<double, 4> p = box_point(rng);
        const double y = p[0], u = p[1], s_hat = p[2], s = p[3];
        const GlobalThird c = fam.third(y, u, s);
        const GlobalExpansion up = fam.expand(y, u + h, s), un = fam.expand(y, u - h, s);
        const GlobalExpansion sp = fam.expand(y, u, s + h), sn = fam.expand(y, u, s - h);
        const double k = fam.eta_scale(s);  // each derivative in u scales as κ
        CHECK(c.fuuu == doctest::Approx((up.fuu - un.fuu) / (2 * h)).scale(k * k * k));
        CHECK(c.fuus == doctest::Approx((sp.fuu - sn.fuu) / (2 * h)).scale(k * k));
        CHECK(c.fuss == doctest::Approx((sp.fus - sn.fus) / (2 * h)).scale(k));
        CHECK(c.fsss == doctest::Approx((sp.fss - sn.fss) / (2 * h)).scale(1.0));
        const double lambda = fam.eta_scale(s_hat);
        const double fourth = scaled_fourth(fam, y, u, s, lambda);
        CHECK(fourth <= fam.fourth_scale(y, u, s_hat) *
                            fam.fourth_growth(0.0, std::fabs(s - s_hat)) * (1.0 + 1e-5));
        attained =
            std::max(attained, fourth / (12.0 * alpha * std::exp(4.0 * std::fabs(s - s_hat))));
        // The third-order remainder at (u, s) along (dh, dk) within its bound.
        const GlobalExpansion e = fam.expand(y, u, s);
        const double dh = 0.3 * rng.normal(), dk = 0.1 * rng.normal();
        const double gap = fam.change(y, u, s, dh, dk) - e.fu * dh - e.fs * dk -
                           0.5 * e.fuu * dh * dh - e.fus * dh * dk - 0.5 * e.fss * dk * dk -
                           (c.fuuu * dh * dh * dh + 3.0 * c.fuus * dh * dh * dk +
                            3.0 * c.fuss * dh * dk * dk + c.fsss * dk * dk * dk) /
                               6.0;
        const double reach = k * std::fabs(dh) + std::fabs(dk);
        CHECK(std::fabs(gap) <= fam.fourth_scale(y, u, s) *
                                        fam.fourth_growth(std::fabs(dh), std::fabs(dk)) / 24.0 *
                                        reach * reach * reach * reach * (1.0 + 1e-9) +
                                    1e-12 * std::max(1.0, std::fabs(e.fs * dk)));
      }
      // At a zero residual and s = ŝ, λ^−4·|f_uuuu| = 12α: a constant 10% smaller is exceeded.
      const double at_zero = scaled_fourth(fam, 1.5, 1.5, 0.3, fam.eta_scale(0.3));
      CHECK(at_zero == doctest::Approx(12.0 * alpha).epsilon(1e-5));
      CHECK(at_zero > 0.9 * fam.fourth_scale(1.5, 1.5, 0.3));
      CHECK(attained <= 1.0 + 1e-5);
      const GlobalThird far = fam.third(1e300, -1e300, 0.0);
      CHECK(std::isfinite(far.fuuu + far.fuus + far.fuss + far.fsss));
    }
  }

  TEST_CASE("student_t global family: expansion and change against f; its envelope dominates") {
    for (const double nu : {1.0, 4.0, 30.0}) {
      CAPTURE(nu);
      const StudentTScaleFamily fam(nu, ScalePrior{});
      const double alpha = 0.5 * (nu + 1.0), h = 1e-5;
      Rng rng(71, 0);
      double attained = 0.0;
      for (int i = 0; i < 2000; ++i) {
        const std::array<double, 4> p = box_point(rng);
        const double y = p[0], u = p[1], s_hat = p[2], s = p[3];
        const GlobalExpansion e = fam.expand(y, u, s);
        const double sc = std::max(1.0, std::fabs(e.fs));
        CHECK(e.fu == doctest::Approx((fam.value(y, u + h, s) - fam.value(y, u - h, s)) / (2 * h))
                          .epsilon(1e-5)
                          .scale(sc * std::exp(-s)));
        CHECK(e.fs == doctest::Approx((fam.value(y, u, s + h) - fam.value(y, u, s - h)) / (2 * h))
                          .epsilon(1e-5)
                          .scale(sc));
        const double dh = 0.3 * rng.normal(), dk = 0.1 * rng.normal();
        CHECK(fam.change(y, u, s, dh, dk) ==
              doctest::Approx(fam.value(y, u + dh, s + dk) - fam.value(y, u, s)).epsilon(1e-9));
        const double lambda = fam.eta_scale(s_hat);
        const double third = scaled_third(fam, y, u, s, lambda);
        CHECK(third <= fam.envelope_scale(y, u, s_hat) *
                           fam.envelope_growth(0.0, std::fabs(s - s_hat)) * (1.0 + 1e-6));
        // The remainder of the expansion at (u, s) along (dh, dk) within its bound.
        const double gap = fam.change(y, u, s, dh, dk) - e.fu * dh - e.fs * dk -
                           0.5 * e.fuu * dh * dh - e.fus * dh * dk - 0.5 * e.fss * dk * dk;
        const double reach = fam.eta_scale(s) * std::fabs(dh) + std::fabs(dk);
        CHECK(std::fabs(gap) <= fam.envelope_scale(y, u, s) *
                                        fam.envelope_growth(std::fabs(dh), std::fabs(dk)) / 6.0 *
                                        reach * reach * reach * (1.0 + 1e-9) +
                                    1e-12 * std::max(1.0, std::fabs(e.fs * dk)));
        attained = std::max(attained, third / (4.0 * alpha * std::exp(3.0 * std::fabs(s - s_hat))));
      }
      // At a zero residual and s = ŝ, λ^−2·|f_uus| = 4α: a constant 10% smaller is exceeded.
      const double at_zero = scaled_third(fam, 1.5, 1.5, 0.3, fam.eta_scale(0.3));
      CHECK(at_zero == doctest::Approx(4.0 * alpha).epsilon(1e-6));
      CHECK(at_zero > 0.9 * fam.envelope_scale(1.5, 1.5, 0.3));
      CHECK(attained <= 1.0 + 1e-6);
      // Finite at extreme residuals.
      const GlobalExpansion far = fam.expand(1e300, -1e300, 0.0);
      CHECK(std::isfinite(far.fu + far.fs + far.fuu + far.fus + far.fss));
      CHECK(std::isfinite(fam.change(1e300, -1e300, 0.0, 1.0, 0.1)));
    }
  }

  TEST_CASE(
      "student_t sigma: scalable MH from a far start, offsets and weights, agrees with NUTS") {
    // The chains start 5 Laplace sds out (σ's included), where the envelope's growth e^{3t} is
    // largest: no bound may be violated on the way in.
    auto ds = t_data(3000, 3, {0.5, 0.4, -0.3}, 0.7, 3.0, 46, true);
    std::vector<double> w(ds->n());
    Rng rng(7, 0);
    for (double& v : w) v = 0.5 + rng.uniform();
    ds->set_weights(w);
    RunConfig ref = student_config();
    ref.student_nu = 3.0;
    const RunResult r0 = run(ref, ds);
    for (const int order : {2, 3}) {
      CAPTURE(order);
      RunConfig c = ref;
      c.algo = Algo::smh;
      c.kernel = KernelKind::rwmh;
      c.smh_order = order;
      c.init_jitter = 5.0;
      c.iters = 6000;
      const RunResult r = run(c, ds);
      CHECK(r.bound_violations() == 0);
      CHECK(r.names.back() == "sigma");
      for (std::size_t j = 0; j < 4; ++j) {
        CAPTURE(j);
        const test::RunsCheck k = test::compare_draws(r.coordinate(j), r0.coordinate(j));
        CHECK(k.mean_z < 4.5);
        CHECK(k.var_z < 4.5);
      }
    }
  }
}

TEST_SUITE("statistical") {
  TEST_CASE("student_t sigma: regular NUTS matches the posterior computed by quadrature") {
    // An intercept alone: the posterior of (β₀, σ) is two-dimensional, and a 600 × 600 grid in
    // (β₀, log σ) over ±9 Laplace sds gives its means and sds to far below the chains' MCSE.
    const std::size_t n = 60;
    const double nu = 3.0;
    const auto ds = t_data(n, 1, {0.7}, 2.0, nu, 45);
    RunConfig c = student_config();
    c.student_nu = nu;
    c.prior = "normal(0, 3)";
    c.prior_sigma = "normal(0, 4)";  // half-normal
    c.iters = 4000;
    const MapResult map = StudentTSigmaModel(ds, c).find_map();
    const double sb = std::sqrt(map.covariance(0, 0));
    const double sl = std::sqrt(map.covariance(1, 1)) / map.theta[1];  // log σ's
    const int g = 600;
    double top = -1e300;
    std::vector<double> lp(g * g), bs(g), ss(g);
    for (int a = 0; a < g; ++a) bs[a] = map.theta[0] + sb * (-9.0 + 18.0 * a / (g - 1));
    for (int b = 0; b < g; ++b) ss[b] = map.theta[1] * std::exp(sl * (-9.0 + 18.0 * b / (g - 1)));
    for (int a = 0; a < g; ++a)
      for (int b = 0; b < g; ++b) {
        // Priors, and the Jacobian of log σ: the grid is uniform in it.
        double v = -bs[a] * bs[a] / 18.0 - ss[b] * ss[b] / 32.0 + std::log(ss[b]);
        for (std::size_t i = 0; i < n; ++i) v += t_log_pdf(ds->y()[i], bs[a], ss[b], nu);
        lp[a * g + b] = v;
        top = std::max(top, v);
      }
    double z = 0.0, m[2] = {0, 0}, s2[2] = {0, 0};
    for (int a = 0; a < g; ++a)
      for (int b = 0; b < g; ++b) {
        const double p = std::exp(lp[a * g + b] - top);
        z += p;
        m[0] += p * bs[a];
        m[1] += p * ss[b];
        s2[0] += p * bs[a] * bs[a];
        s2[1] += p * ss[b] * ss[b];
      }
    const RunResult r = run(c, ds);
    for (std::size_t j = 0; j < 2; ++j) {
      CAPTURE(j);
      const double mean = m[j] / z, sd = std::sqrt(s2[j] / z - mean * mean);
      const test::ExactCheck e = test::against_exact(r.coordinate(j), mean, sd);
      CHECK(e.mean_z < 4.5);
      CHECK(e.sd_z < 4.5);
      CHECK(e.mcse_in_sd < 0.05);
    }
  }

  TEST_CASE("SBC: regular NUTS on Student-t regression with sigma inferred") {
    SbcOptions o = test::small_sbc(Algo::full, 4, 571, 300);
    o.run.model = ModelKind::student_t;
    o.run.kernel = KernelKind::nuts;
    o.run.student_nu = 3.0;
    o.run.prior = "normal(0, 1)";
    o.run.prior_sigma = "normal(0, 2)";  // half-normal
    test::check_small_sbc(o);
  }

  TEST_CASE("SBC: scalable MH of the third order on Student-t regression with sigma inferred") {
    SbcOptions o = test::small_sbc(Algo::smh, 5, 573, 200);
    o.run.model = ModelKind::student_t;
    o.run.smh_order = 3;
    o.run.student_nu = 3.0;
    o.run.prior = "normal(0, 1)";
    o.run.prior_sigma = "exponential(1)";
    test::check_small_sbc(o);
  }

  TEST_CASE("SBC: scalable MH on Student-t regression with sigma inferred") {
    SbcOptions o = test::small_sbc(Algo::smh, 5, 572, 200);
    o.run.model = ModelKind::student_t;
    o.run.student_nu = 3.0;
    o.run.prior = "normal(0, 1)";
    o.run.prior_sigma = "exponential(1)";
    test::check_small_sbc(o);
  }
}
