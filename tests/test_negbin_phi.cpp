// Negative binomial regression with its dispersion φ inferred (issue 52, step e, regular MCMC;
// models/negbin_phi.hpp): the histogram's Γ terms against lgamma and their derivatives; the
// log-likelihood against the negative binomial pmf summed over rows (weights and offsets), its
// gradient against central differences; the MAP's gradient; the samplers and options that refuse
// it; regular NUTS against the posterior computed by quadrature on a grid; and SBC. Its global
// family for scalable MH (models/global_family.hpp): the expansion and the change against f, the
// envelope of the third derivatives dominating them (attained as the predictor falls, so 10%
// less fails), each remainder within its bound; scalable MH from a far start against regular
// NUTS, and its SBC.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/negbin_phi.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

RunConfig phi_config() {
  RunConfig c = test::fixed_config();
  c.model = ModelKind::negbin;
  c.algo = Algo::full;
  c.kernel = KernelKind::nuts;
  c.prior_phi = "exponential(0.1)";
  return c;
}

/// n rows: a ones column and d − 1 standard normals; counts negative binomial with mean
/// e^{x·β + o} and dispersion phi.
std::shared_ptr<Dataset> nb_data(std::size_t n, std::size_t d, const std::vector<double>& beta,
                                 double phi, std::uint64_t seed, bool offsets = false) {
  auto ds = std::make_shared<Dataset>(n, d, "nb");
  Rng rng(seed, 0);
  const NegBinomialFamily fam(phi);
  std::vector<double> o;
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    x[0] = 1.0;
    for (std::size_t j = 1; j < d; ++j) x[j] = rng.normal();
    double eta = 0.0;
    for (std::size_t j = 0; j < d; ++j) eta += beta[j] * x[j];
    if (offsets) eta += o.emplace_back(0.3 * rng.normal());
    ds->mutable_y()[i] = fam.simulate(eta, rng);
  }
  ds->set_offsets(std::move(o));
  return ds;
}

/// log NB(y | μ = e^η, φ), the whole pmf.
double nb_log_pmf(double y, double eta, double phi) {
  const double log_q = std::log(phi + std::exp(eta));
  return std::lgamma(y + phi) - std::lgamma(phi) - std::lgamma(y + 1.0) + phi * std::log(phi) +
         y * eta - (y + phi) * log_q;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("negbin phi: the histogram's Gamma terms against lgamma, their derivatives") {
    // Counts on both sides of the exact sums' end (64) and far beyond.
    const std::vector<double> ys = {0, 1, 5, 63, 64, 65, 200, 5000, 64, 3};
    auto ds = std::make_shared<Dataset>(ys.size(), 1, "counts");
    for (std::size_t i = 0; i < ys.size(); ++i) {
      ds->mutable_row(i)[0] = 1.0;
      ds->mutable_y()[i] = ys[i];
    }
    const NegBinomialPhiModel model(ds, phi_config());
    for (const double phi : {0.05, 0.3, 2.0, 50.0, 1e4}) {
      CAPTURE(phi);
      double want = 0.0;
      for (const double y : ys) want += std::lgamma(y + phi) - std::lgamma(phi);
      const auto t = model.gamma_terms(phi);
      CHECK(t.f == doctest::Approx(want).epsilon(1e-12));
      const double h = 1e-5 * phi;
      const auto up = model.gamma_terms(phi + h), down = model.gamma_terms(phi - h);
      CHECK(t.d1 == doctest::Approx((up.f - down.f) / (2 * h)).epsilon(1e-6));
      CHECK(t.d2 == doctest::Approx((up.d1 - down.d1) / (2 * h)).epsilon(1e-6));
    }
  }

  TEST_CASE("negbin phi: the log-likelihood is the pmf's sum over rows; its gradient") {
    auto ds = nb_data(2000, 3, {0.5, 0.4, -0.3}, 1.7, 31, true);
    std::vector<double> w(ds->n());
    Rng rng(5, 0);
    for (double& v : w) v = 0.5 + rng.uniform();
    ds->set_weights(w);
    const RunConfig c = phi_config();
    const NegBinomialPhiModel model(ds, c);
    CHECK(model.dim() == 4);
    CHECK(model.param_names().back() == "phi");
    const ScalePrior sp = parse_scale_prior(c.prior_phi);
    AlignedBuffer tp = aligned_zeros(model.layout().padded()), gp = aligned_zeros(8);
    // The dropped constant Σ w·log y! is the same at every θ: compare differences.
    double ref_model = 0.0, ref_pmf = 0.0;
    bool first = true;
    for (const double phi : {0.2, 1.7, 40.0}) {
      CAPTURE(phi);
      const double beta[3] = {0.6, 0.3, -0.2};
      std::copy(beta, beta + 3, tp.get());
      tp[3] = phi;
      double pmf = sp.log_density(phi);
      for (std::size_t i = 0; i < ds->n(); ++i) {
        double eta = ds->offsets()[i];
        for (std::size_t j = 0; j < 3; ++j) eta += beta[j] * ds->row(i)[j];
        pmf += w[i] * (nb_log_pmf(ds->y()[i], eta, phi) + std::lgamma(ds->y()[i] + 1.0));
      }
      const double f = model.log_lik(tp.get());
      if (first) {
        ref_model = f;
        ref_pmf = pmf;
        first = false;
      }
      CHECK(f - ref_model == doctest::Approx(pmf - ref_pmf).epsilon(1e-9).scale(1.0));
      CHECK(model.log_lik_grad(tp.get(), gp.get()) == f);
      CHECK(test::gradient_error(model, tp.get(), 4) < 1e-6);
    }
    tp[3] = 0.0;
    CHECK(model.log_lik(tp.get()) == -std::numeric_limits<double>::infinity());
    tp[3] = -2.0;
    CHECK(model.log_lik(tp.get()) == -std::numeric_limits<double>::infinity());
  }

  TEST_CASE("negbin phi: the MAP zeroes the gradient in (beta, log phi), near the truth") {
    const auto ds = nb_data(20000, 3, {0.5, 0.4, -0.3}, 2.5, 32);
    const RunConfig c = phi_config();
    const NegBinomialPhiModel model(ds, c);
    const MapResult map = model.find_map();
    CHECK(map.covariance.allFinite());
    AlignedBuffer tp = aligned_zeros(model.layout().padded()), gp = aligned_zeros(8);
    std::copy(map.theta.data(), map.theta.data() + 4, tp.get());
    model.log_lik_grad(tp.get(), gp.get());
    model.prior().add_gradient(tp.get(), 4, gp.get());
    gp[3] = gp[3] * tp[3] + 1.0;  // d/d log φ of the log density of (β, log φ)
    const double truth[4] = {0.5, 0.4, -0.3, 2.5};
    for (Eigen::Index j = 0; j < 4; ++j) {
      CAPTURE(j);
      CHECK(std::fabs(gp[j]) < 1e-6);
      const double sd = std::sqrt(map.covariance(j, j));
      CHECK(std::fabs(map.theta[j] - truth[j]) < 4.0 * sd);
    }
  }

  TEST_CASE("negbin phi: who samples it, and options that do not apply") {
    const auto ds = nb_data(300, 2, {0.8, 0.3}, 2.0, 33);
    RunConfig c = phi_config();
    c.iters = 50;
    c.warmup = 50;
    const RunResult r = run(c, ds);
    CHECK(r.names.back() == "phi");
    for (const Algo a : {Algo::flymc, Algo::bps, Algo::sgld}) {  // SMH of both orders runs it
      CAPTURE(to_string(a));
      c.algo = a;
      c.kernel = KernelKind::rwmh;
      if (a == Algo::sgld) c.ess = 0.0;
      CHECK_THROWS_WITH_AS(run(c, ds), doctest::Contains("with phi inferred"), ConfigError);
    }
    c.algo = Algo::automatic;
    c.kernel = KernelKind::nuts;
    c.ess = RunConfig{}.ess;
    const Algo chosen = choose_algo(c, ds).best().config.algo;
    CHECK((chosen == Algo::full || chosen == Algo::smh));
    c.algo = Algo::full;
    c.dispersion = 2.0;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--prior-phi"), ConfigError);
    c.dispersion.reset();
    c.prior_phi = "flat";
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("improper"), ConfigError);
    c.prior_phi = "normal(2, 1)";
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--prior-phi"), ConfigError);
  }
}

namespace {

/// max over a + b = 3 of |∂^a_u ∂^b_s f| at (y, u, s) (λ = 1): the third derivatives by central
/// differences of the expansion's second ones.
double third(const NegBinomialDispersionFamily& fam, double y, double u, double s) {
  const double h = 1e-5;
  const GlobalExpansion up = fam.expand(y, u + h, s), un = fam.expand(y, u - h, s);
  const GlobalExpansion sp = fam.expand(y, u, s + h), sn = fam.expand(y, u, s - h);
  return std::max({std::fabs(up.fuu - un.fuu), std::fabs(sp.fuu - sn.fuu),
                   std::fabs(up.fss - un.fss), std::fabs(sp.fss - sn.fss)}) /
         (2 * h);
}

/// A random point (y, uu, s) within the box |uu − u| ≤ t_u, |s − ŝ| ≤ t_s around (u, ŝ): counts
/// on both sides of the exact sums' end (64), predictors and dispersions far apart.
struct BoxPoint {
  double y, u, s_hat, t_u, t_s, uu, s;
};
BoxPoint box_point(Rng& rng, int i) {
  BoxPoint b{};
  b.y = i % 3 == 0 ? std::floor(200.0 * rng.uniform()) : std::floor(6.0 * rng.uniform());
  b.u = 4.0 * rng.normal();
  b.s_hat = 2.0 * rng.normal();
  b.t_u = 0.5 * rng.uniform();
  b.t_s = 0.5 * rng.uniform();
  b.uu = b.u + b.t_u * (2.0 * rng.uniform() - 1.0);
  b.s = b.s_hat + b.t_s * (2.0 * rng.uniform() - 1.0);
  return b;
}

/// max over a + b = 4 of |∂^a_u ∂^b_s f| at (y, u, s) (λ = 1): the fourth derivatives by central
/// differences of the family's third ones.
double fourth(const NegBinomialDispersionFamily& fam, double y, double u, double s) {
  const double h = 1e-5;
  const GlobalThird up = fam.third(y, u + h, s), un = fam.third(y, u - h, s);
  const GlobalThird sp = fam.third(y, u, s + h), sn = fam.third(y, u, s - h);
  return std::max({std::fabs(up.fuuu - un.fuuu), std::fabs(sp.fuuu - sn.fuuu),
                   std::fabs(sp.fuus - sn.fuus), std::fabs(sp.fuss - sn.fuss),
                   std::fabs(sp.fsss - sn.fsss)}) /
         (2 * h);
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE(
      "negbin phi global family, order 3: third derivatives against the expansion's; the "
      "fourth's envelope dominates, attained as the predictor falls; remainders within it") {
    const NegBinomialDispersionFamily fam(ScalePrior{});
    Rng rng(83, 0);
    const double h = 1e-5;
    for (int i = 0; i < 3000; ++i) {
      const BoxPoint b = box_point(rng, i);
      const double y = b.y, u = b.u, s_hat = b.s_hat, t_u = b.t_u, t_s = b.t_s, uu = b.uu, s = b.s;
      CAPTURE(y);
      CAPTURE(uu);
      CAPTURE(s);
      const GlobalThird c = fam.third(y, uu, s);
      const GlobalExpansion up = fam.expand(y, uu + h, s), un = fam.expand(y, uu - h, s);
      const GlobalExpansion sp = fam.expand(y, uu, s + h), sn = fam.expand(y, uu, s - h);
      const double sc = y + std::exp(s) + 1.0;
      CHECK(c.fuuu == doctest::Approx((up.fuu - un.fuu) / (2 * h)).epsilon(1e-6).scale(sc));
      CHECK(c.fuus == doctest::Approx((sp.fuu - sn.fuu) / (2 * h)).epsilon(1e-6).scale(sc));
      CHECK(c.fuss == doctest::Approx((sp.fus - sn.fus) / (2 * h)).epsilon(1e-6).scale(sc));
      CHECK(c.fsss == doctest::Approx((sp.fss - sn.fss) / (2 * h)).epsilon(1e-6).scale(sc));
      CHECK(fourth(fam, y, uu, s) <=
            fam.fourth_scale(y, u, s_hat) * fam.fourth_growth(t_u, t_s) * (1.0 + 1e-5));
      // The third-order remainder at (uu, s) along (dh, dk) within its bound.
      const GlobalExpansion e = fam.expand(y, uu, s);
      const double dh = 0.3 * rng.normal(), dk = 0.1 * rng.normal();
      const double gap = fam.change(y, uu, s, dh, dk) - e.fu * dh - e.fs * dk -
                         0.5 * e.fuu * dh * dh - e.fus * dh * dk - 0.5 * e.fss * dk * dk -
                         (c.fuuu * dh * dh * dh + 3.0 * c.fuus * dh * dh * dk +
                          3.0 * c.fuss * dh * dk * dk + c.fsss * dk * dk * dk) /
                             6.0;
      const double r = std::fabs(dh) + std::fabs(dk);
      CHECK(std::fabs(gap) <= fam.fourth_scale(y, uu, s) *
                                      fam.fourth_growth(std::fabs(dh), std::fabs(dk)) / 24.0 * r *
                                      r * r * r +
                                  1e-11 * sc);
    }
    // As the predictor falls (y = 0) |f_uuuu| tends to the envelope: 10% less is exceeded.
    const double at = fourth(fam, 0.0, -20.0, 0.5);
    CHECK(at > 0.9 * fam.fourth_scale(0.0, -20.0, 0.5));
    CHECK(at <= fam.fourth_scale(0.0, -20.0, 0.5) * (1.0 + 1e-5));
    const GlobalThird far = fam.third(1e6, 700.0, -30.0);
    CHECK(std::isfinite(far.fuuu + far.fuus + far.fuss + far.fsss));
  }

  TEST_CASE("negbin phi global family: expansion and change against f; its envelope dominates") {
    const NegBinomialDispersionFamily fam(ScalePrior{});
    Rng rng(81, 0);
    const double h = 1e-5;
    for (int i = 0; i < 3000; ++i) {
      const BoxPoint b = box_point(rng, i);
      const double y = b.y, u = b.u, s_hat = b.s_hat, t_u = b.t_u, t_s = b.t_s, uu = b.uu, s = b.s;
      CAPTURE(y);
      CAPTURE(uu);
      CAPTURE(s);
      const GlobalExpansion e = fam.expand(y, uu, s);
      const double sc = y + std::exp(s) + 1.0;
      CHECK(e.fu == doctest::Approx((fam.value(y, uu + h, s) - fam.value(y, uu - h, s)) / (2 * h))
                        .epsilon(1e-6)
                        .scale(sc));
      CHECK(e.fs == doctest::Approx((fam.value(y, uu, s + h) - fam.value(y, uu, s - h)) / (2 * h))
                        .epsilon(1e-6)
                        .scale(sc));
      const double dh = 0.3 * rng.normal(), dk = 0.1 * rng.normal();
      CHECK(fam.change(y, uu, s, dh, dk) ==
            doctest::Approx(fam.value(y, uu + dh, s + dk) - fam.value(y, uu, s))
                .epsilon(1e-9)
                .scale(sc));
      CHECK(third(fam, y, uu, s) <=
            fam.envelope_scale(y, u, s_hat) * fam.envelope_growth(t_u, t_s) * (1.0 + 1e-5));
      // The remainder of the expansion at (uu, s) along (dh, dk) within its bound.
      const double gap = fam.change(y, uu, s, dh, dk) - e.fu * dh - e.fs * dk -
                         0.5 * e.fuu * dh * dh - e.fus * dh * dk - 0.5 * e.fss * dk * dk;
      const double r = std::fabs(dh) + std::fabs(dk);
      CHECK(std::fabs(gap) <= fam.envelope_scale(y, uu, s) *
                                      fam.envelope_growth(std::fabs(dh), std::fabs(dk)) / 6.0 * r *
                                      r * r +
                                  1e-11 * sc);
    }
    // As the predictor falls (y = 0) |f_uuu| tends to the envelope: 10% less is exceeded.
    const double at = third(fam, 0.0, -20.0, 0.5);
    CHECK(at > 0.9 * fam.envelope_scale(0.0, -20.0, 0.5));
    CHECK(at <= fam.envelope_scale(0.0, -20.0, 0.5) * (1.0 + 1e-5));
  }

  TEST_CASE("negbin phi: scalable MH from a far start, offsets and weights, agrees with NUTS") {
    auto ds = nb_data(3000, 3, {0.5, 0.4, -0.3}, 2.0, 35, true);
    std::vector<double> w(ds->n());
    Rng rng(8, 0);
    for (double& v : w) v = 0.5 + rng.uniform();
    ds->set_weights(w);
    const RunConfig ref = phi_config();
    const RunResult r0 = run(ref, ds);
    for (const int order : {2, 3}) {
      CAPTURE(order);
      RunConfig c = ref;
      c.algo = Algo::smh;
      c.kernel = KernelKind::rwmh;
      c.smh_order = order;
      c.init_jitter = 5.0;  // φ's coordinate included: the envelope's growth is largest there
      c.iters = 6000;
      const RunResult r = run(c, ds);
      CHECK(r.bound_violations() == 0);
      CHECK(r.names.back() == "phi");
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
  TEST_CASE("negbin phi: regular NUTS matches the posterior computed by quadrature") {
    // An intercept alone: the posterior of (β₀, φ) is two-dimensional, and a 600 × 600 grid in
    // (β₀, log φ) over ±9 Laplace sds gives its means and sds to far below the chains' MCSE.
    const std::size_t n = 150;
    const auto ds = nb_data(n, 1, {0.7}, 3.0, 34);
    RunConfig c = phi_config();
    c.prior = "normal(0, 3)";
    c.prior_phi = "exponential(0.2)";
    c.iters = 4000;
    const MapResult map = NegBinomialPhiModel(ds, c).find_map();
    const double sb = std::sqrt(map.covariance(0, 0));
    const double sl = std::sqrt(map.covariance(1, 1)) / map.theta[1];  // log φ's
    std::map<double, double> histogram;
    for (std::size_t i = 0; i < n; ++i) histogram[ds->y()[i]] += 1.0;
    const int g = 600;
    double z = 0.0, m[2] = {0, 0}, s2[2] = {0, 0}, top = -1e300;
    std::vector<double> lp(g * g);
    for (int a = 0; a < g; ++a)
      for (int b = 0; b < g; ++b) {
        const double beta = map.theta[0] + sb * (-9.0 + 18.0 * a / (g - 1));
        const double phi = map.theta[1] * std::exp(sl * (-9.0 + 18.0 * b / (g - 1)));
        double v = -beta * beta / 18.0 - 0.2 * phi + std::log(phi);  // priors, Jacobian of log φ
        for (const auto& [y, count] : histogram) v += count * nb_log_pmf(y, beta, phi);
        lp[a * g + b] = v;
        top = std::max(top, v);
      }
    for (int a = 0; a < g; ++a)
      for (int b = 0; b < g; ++b) {
        const double beta = map.theta[0] + sb * (-9.0 + 18.0 * a / (g - 1));
        const double phi = map.theta[1] * std::exp(sl * (-9.0 + 18.0 * b / (g - 1)));
        const double p = std::exp(lp[a * g + b] - top);
        z += p;
        m[0] += p * beta;
        m[1] += p * phi;
        s2[0] += p * beta * beta;
        s2[1] += p * phi * phi;
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

  TEST_CASE("SBC: regular NUTS on negative binomial regression with phi inferred") {
    SbcOptions o = test::small_sbc(Algo::full, 4, 561, 300);
    o.run.model = ModelKind::negbin;
    o.run.kernel = KernelKind::nuts;
    o.run.prior = "normal(0, 1)";
    o.run.prior_phi = "normal(0, 5)";  // half-normal
    o.offsets = true;
    test::check_small_sbc(o);
  }

  TEST_CASE("SBC: scalable MH of the third order on negative binomial regression with phi") {
    SbcOptions o = test::small_sbc(Algo::smh, 5, 563, 200);
    o.run.model = ModelKind::negbin;
    o.run.smh_order = 3;
    o.run.prior = "normal(0, 1)";
    o.run.prior_phi = "normal(0, 5)";  // half-normal
    o.offsets = true;
    test::check_small_sbc(o);
  }

  TEST_CASE("SBC: scalable MH on negative binomial regression with phi inferred") {
    SbcOptions o = test::small_sbc(Algo::smh, 5, 562, 200);
    o.run.model = ModelKind::negbin;
    o.run.prior = "normal(0, 1)";
    o.run.prior_phi = "normal(0, 5)";  // half-normal
    o.offsets = true;
    test::check_small_sbc(o);
  }
}
