// Single-index models (models/family.hpp, models/glm.hpp): probit's and the Gaussian's
// derivatives and constants (random points, extremes, a 10%-smaller mutant caught), the generic
// FlyMC bound (a lower bound whose collapsed sum equals its terms), the positive model/sampler
// checks, a user's family through flymc::run, Gaussian regression against its closed-form
// posterior (no bright data, no SMH candidates), and SBC for probit and Gaussian regression
// with FlyMC, scalable MH of orders 2 and 3, and NUTS.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/glm.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/robust.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

struct Derivs {
  double f[SingleIndexFamily::kMaxOrder + 1];
};

Derivs at(const SingleIndexFamily& fam, double y, double eta) {
  Derivs d{};
  fam.derivatives(y, eta, SingleIndexFamily::kMaxOrder, d.f);
  return d;
}

/// The points a constant is checked on: a fine grid over [−40, 40] (both branches of probit's
/// tail, the maxima near 1.002 and 2.071), random points, and extremes.
std::vector<double> check_points() {
  std::vector<double> u;
  for (double x = -40.0; x <= 40.0; x += 1e-3) u.push_back(x);
  Rng rng(7, 0);
  for (int i = 0; i < 20000; ++i) u.push_back(10.0 * rng.normal());
  for (double e : {1e3, 1e8, 1e20, 1e150}) {
    u.push_back(e);
    u.push_back(-e);
  }
  return u;
}

/// A data set of n rows (an intercept and d − 1 standard normal features) with responses from
/// `respond(x·θ, rng)`.
template <class Respond>
std::shared_ptr<Dataset> single_index_data(std::size_t n, std::size_t d,
                                           const std::vector<double>& theta, std::uint64_t seed,
                                           Respond respond) {
  auto ds = std::make_shared<Dataset>(n, d, "single-index data");
  Rng rng(seed, 0);
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    double eta = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = j == 0 ? 1.0 : rng.normal();
      eta += x[j] * theta[j];
    }
    ds->mutable_y()[i] = respond(eta, rng);
  }
  return ds;
}

std::shared_ptr<Dataset> probit_data(std::size_t n, std::uint64_t seed) {
  return single_index_data(n, 3, {0.5, -1.0, 0.8}, seed, [](double eta, Rng& rng) {
    return eta + rng.normal() > 0.0 ? 1.0 : -1.0;
  });
}

std::shared_ptr<const Dataset> gaussian_data(std::size_t n, double s, std::uint64_t seed) {
  return single_index_data(n, 3, {0.5, -1.0, 0.8}, seed,
                           [s](double eta, Rng& rng) { return eta + s * rng.normal(); });
}

/// A family without κ, M3 or M4: Poisson counts with the log link, f = yη − e^η (f'' = −e^η is
/// unbounded below).
class PoissonLog final : public SingleIndexFamily {
 public:
  std::string name() const override { return "poisson"; }
  std::string check_label(double y) const override {
    return y >= 0.0 && y == std::floor(y) ? std::string() : std::string("must be a count");
  }
  void derivatives(double y, double eta, int order, double* out) const override {
    const double m = std::exp(eta);
    out[0] = y * eta - m;
    if (order >= 1) out[1] = y - m;
    for (int j = 2; j <= order; ++j) out[j] = -m;
  }
};

/// Probit with its constants scaled by `scale` (a mutant when below 1).
class ScaledProbit final : public SingleIndexFamily {
 public:
  explicit ScaledProbit(double scale) : scale_(scale) {}
  std::string name() const override { return "probit-mutant"; }
  void derivatives(double y, double eta, int order, double* out) const override {
    probit_.derivatives(y, eta, order, out);
  }
  std::optional<double> kappa() const override { return scale_ * *probit_.kappa(); }

 private:
  ProbitFamily probit_;
  double scale_;
};

RunConfig fixed(Algo algo, ModelKind model) {
  RunConfig c = test::fixed_config();
  c.algo = algo;
  c.model = model;
  c.chains = 4;
  c.threads = 2;
  c.warmup = 500;
  c.iters = 2000;
  c.seed = 11;
  return c;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("probit: the derivatives are those of log Phi (central differences, both tails)") {
    const ProbitFamily probit;
    Rng rng(3, 0);
    for (int i = 0; i < 2000; ++i) {
      const double u = i < 40 ? -9.9 - 0.005 * i : 12.0 * rng.normal();  // across the tail switch
      const double y = i % 2 == 0 ? 1.0 : -1.0, eta = y * u, h = 1e-5;
      const Derivs d = at(probit, y, eta), up = at(probit, y, eta + h), dn = at(probit, y, eta - h);
      CAPTURE(eta);
      for (int j = 1; j <= 4; ++j) {
        const double fd = (up.f[j - 1] - dn.f[j - 1]) / (2.0 * h);
        CHECK(std::fabs(fd - d.f[j]) <= 1e-5 * (1.0 + std::fabs(d.f[j - 1])));
      }
    }
    // log Φ in the lower tail: the series and erfc agree where both hold.
    const Derivs a = at(probit, 1.0, -10.0 + 1e-12), b = at(probit, 1.0, -10.0 - 1e-12);
    for (int j = 0; j <= 4; ++j) CHECK(std::fabs(a.f[j] - b.f[j]) <= 1e-7 * std::fabs(b.f[j]));
    CHECK(at(probit, 1.0, 0.0).f[0] == doctest::Approx(std::log(0.5)).epsilon(1e-15));
  }

  TEST_CASE("probit and Gaussian constants bound their derivatives; 10% smaller ones are caught") {
    const ProbitFamily probit;
    double max_kappa = 0.0, max3 = 0.0, max4 = 0.0;
    for (const double u : check_points()) {
      for (const double y : {1.0, -1.0}) {
        const Derivs d = at(probit, y, y * u);
        CAPTURE(u);
        for (double v : d.f) REQUIRE(std::isfinite(v));
        CHECK(d.f[2] <= 0.0);
        max_kappa = std::max(max_kappa, -d.f[2]);
        max3 = std::max(max3, std::fabs(d.f[3]));
        max4 = std::max(max4, std::fabs(d.f[4]));
      }
    }
    CHECK(max_kappa <= *probit.kappa());
    CHECK(max3 <= *probit.m3());
    CHECK(max4 <= *probit.m4());
    // Each constant is nearly attained: a mutant 10% smaller is caught on these points.
    CHECK(max_kappa > 0.9 * *probit.kappa());
    CHECK(max3 > 0.9 * *probit.m3());
    CHECK(max4 > 0.9 * *probit.m4());
    CHECK(max3 > *probit.m3() * (1.0 - 1e-6));  // and rounded up by no more than that

    const GaussianFamily g(0.5);
    const Derivs d = at(g, 1.5, -2.0);
    CHECK(d.f[0] == doctest::Approx(-0.5 * 3.5 * 3.5 / 0.25));
    CHECK(d.f[1] == doctest::Approx(3.5 / 0.25));
    CHECK(-d.f[2] == *g.kappa());
    CHECK(d.f[3] == 0.0);
    CHECK(d.f[4] == 0.0);
    CHECK_THROWS_AS(GaussianFamily(0.0), ConfigError);
    CHECK_THROWS_AS(GaussianFamily(1e-200), ConfigError);  // 1/s² overflows
  }

  TEST_CASE(
      "logistic and Student-t families: derivatives by central differences, and their "
      "constants (kappa, M1, M2, M3, M4) bound them; 10% smaller ones are caught") {
    const LogisticFamily logit;
    const StudentTFamily st(StudentT(4.0, 1.5));
    Rng rng(5, 0);
    // Derivatives against central differences of the one below, both families, both labels.
    for (int i = 0; i < 2000; ++i) {
      const double eta = 8.0 * rng.normal(), h = 1e-5;
      const double y = i % 2 == 0 ? 1.0 : -1.0, r = 6.0 * rng.normal();
      const std::pair<const SingleIndexFamily*, double> cases[] = {{&logit, y}, {&st, r}};
      for (const auto& c : cases) {
        const SingleIndexFamily* fam = c.first;
        const double yy = c.second;
        const Derivs d = at(*fam, yy, eta), up = at(*fam, yy, eta + h), dn = at(*fam, yy, eta - h);
        CAPTURE(fam->name());
        CAPTURE(eta);
        for (int j = 1; j <= 4; ++j) {
          const double fd = (up.f[j - 1] - dn.f[j - 1]) / (2.0 * h);
          CHECK(std::fabs(fd - d.f[j]) <= 1e-6 * (1.0 + std::fabs(d.f[j - 1])));
        }
      }
    }
    // The batched form equals the one-datum form for f (bit for bit) and f' (to rounding).
    std::vector<double> ys = {1.0, -1.0, 1.0, -1.0}, etas = {-800.0, -3.0, 0.5, 40.0}, out(8);
    logit.derivatives(ys.data(), etas.data(), 4, 1, out.data());
    for (std::size_t i = 0; i < 4; ++i) {
      const Derivs d = at(logit, ys[i], etas[i]);
      CHECK(out[i] == doctest::Approx(d.f[0]).epsilon(1e-14));
      CHECK(out[4 + i] == doctest::Approx(d.f[1]).epsilon(1e-14));
    }
    // The constants over every y and eta (the Student-t likelihood depends on y - eta alone).
    double lk = 0, l1 = 0, l2 = 0, l3 = 0, l4 = 0, sk = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    for (const double u : check_points()) {
      for (const double y : {1.0, -1.0}) {
        const Derivs d = at(logit, y, y * u);
        for (double v : d.f) REQUIRE(std::isfinite(v));
        lk = std::max(lk, -d.f[2]);
        l1 = std::max(l1, std::fabs(d.f[1]));
        l2 = std::max(l2, std::fabs(d.f[2]));
        l3 = std::max(l3, std::fabs(d.f[3]));
        l4 = std::max(l4, std::fabs(d.f[4]));
      }
      const Derivs d = at(st, u, 0.0);
      for (double v : d.f) REQUIRE(std::isfinite(v));
      sk = std::max(sk, -d.f[2]);
      s1 = std::max(s1, std::fabs(d.f[1]));
      s2 = std::max(s2, std::fabs(d.f[2]));
      s3 = std::max(s3, std::fabs(d.f[3]));
      s4 = std::max(s4, std::fabs(d.f[4]));
    }
    const double lmax[] = {lk, l1, l2, l3, l4}, smax[] = {sk, s1, s2, s3, s4};
    const double lc[] = {*logit.kappa(), *logit.m1(), *logit.m2(), *logit.m3(), *logit.m4()};
    const double sc[] = {*st.kappa(), *st.m1(), *st.m2(), *st.m3(), *st.m4()};
    for (int k = 0; k < 5; ++k) {
      CAPTURE(k);
      CHECK(lmax[k] <= lc[k]);
      CHECK(lmax[k] > 0.9 * lc[k]);
    }
    for (int k = 0; k < 5; ++k) {
      CAPTURE(k);
      CHECK(smax[k] <= sc[k]);
      CHECK(smax[k] > 0.9 * sc[k]);
    }
    // SMH's closed forms are the families' own derivatives, in the expansion variable u.
    const Expansion e = logit.expand(-1.0, 0.7, 3);
    const Derivs dl = at(logit, -1.0, 0.7);
    CHECK(e.u_hat == -0.7);
    CHECK(-1.0 * e.f1 == doctest::Approx(dl.f[1]).epsilon(1e-14));  // df/dη = σ·df/du
    CHECK(e.f2 == doctest::Approx(dl.f[2]).epsilon(1e-14));
    CHECK(-1.0 * e.f3 == doctest::Approx(dl.f[3]).epsilon(1e-12));
    const Expansion es = st.expand(2.0, 0.5, 2);
    const Derivs ds = at(st, 2.0, 0.5);
    CHECK(es.u_hat == 1.5);
    CHECK(-es.f1 == doctest::Approx(ds.f[1]).epsilon(1e-14));
    CHECK(es.f2 == doctest::Approx(ds.f[2]).epsilon(1e-14));
    const Expansion es3 = st.expand(2.0, 0.5, 3);
    CHECK(es3.f2 == es.f2);
    CHECK(-es3.f3 == doctest::Approx(ds.f[3]).epsilon(1e-14));
    // The SMH set-up cache hands statistics over between equal families only.
    CHECK(st.same_as(StudentTFamily(StudentT(4.0, 1.5))));
    CHECK_FALSE(st.same_as(StudentTFamily(StudentT(4.0, 1.0))));
    CHECK(logit.same_as(*LogisticFamily::shared()));
    CHECK_FALSE(logit.same_as(ProbitFamily()));
    CHECK(GaussianFamily(2.0).same_as(GaussianFamily(2.0)));
  }

  TEST_CASE("generic FlyMC bound: below the likelihood, tight at the MAP, collapsed exactly") {
    const auto ds = probit_data(3000, 5);
    for (const BoundTuning tuning : {BoundTuning::map, BoundTuning::untuned}) {
      RunConfig c = fixed(Algo::flymc, ModelKind::probit);
      c.bound = tuning;
      const GlmModel model(ds, c);
      const MapResult map = model.find_map();
      const GlmBound bound = GlmBound::make(model, c, map);
      std::vector<Index> idx(ds->n());
      for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<Index>(i);
      std::vector<double> eta(ds->n()), delta(ds->n()), dpsi(ds->n());
      AlignedBuffer tp = aligned_zeros(ds->stride()), scratch = aligned_zeros(bound.scratch_size());
      Rng rng(9, 0);
      for (int t = 0; t < 20; ++t) {
        for (std::size_t j = 0; j < ds->d(); ++j)
          tp[j] = map.theta[static_cast<Eigen::Index>(j)] + (t == 0 ? 0.0 : 2.0 * rng.normal());
        ds->dots(0, ds->n(), tp.get(), eta.data());
        const BoundCheck check =
            bound.delta_grads(idx.data(), eta.data(), ds->n(), delta.data(), dpsi.data());
        CHECK(check.violations == 0);
        double terms = 0.0, worst = 0.0;
        for (std::size_t n = 0; n < ds->n(); ++n) {
          terms += bound.log_bound(idx[n], eta[n]);
          CHECK(delta[n] >= 0.0);
          const double direct = bound.log_lik(idx[n], eta[n]) - bound.log_bound(idx[n], eta[n]);
          worst = std::max(worst, std::fabs(direct - delta[n]));
        }
        CHECK(worst < 1e-9);
        CHECK(bound.log_bound_sum(tp.get(), scratch.get()) ==
              doctest::Approx(terms).epsilon(1e-11));
        if (t == 0 && tuning == BoundTuning::map)
          CHECK(*std::max_element(delta.begin(), delta.end()) < 1e-9);
      }
    }
    // A 10% smaller κ is not a bound: data far from their tangent point violate it.
    const GlmModel model(ds, Prior{PriorKind::gaussian, 1.0}, std::make_shared<ScaledProbit>(0.9));
    const MapResult map = model.find_map();
    const GlmBound bad = GlmBound::make(model, fixed(Algo::flymc, ModelKind::custom), map);
    std::vector<Index> idx(ds->n());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<Index>(i);
    std::vector<double> eta(ds->n()), delta(ds->n());
    AlignedBuffer tp = aligned_zeros(ds->stride());
    for (std::size_t j = 0; j < ds->d(); ++j)
      tp[j] = -30.0 * map.theta[static_cast<Eigen::Index>(j)];
    ds->dots(0, ds->n(), tp.get(), eta.data());
    CHECK(bad.deltas(idx.data(), eta.data(), ds->n(), delta.data()).violations > 0);
  }

  TEST_CASE("Gaussian regression: the generic bound is exact (every datum dark)") {
    const auto ds = gaussian_data(2000, 0.7, 4);
    RunConfig c = fixed(Algo::flymc, ModelKind::gaussian);
    c.noise_scale = 0.7;
    const GlmModel model(ds, c);
    const GlmBound bound = GlmBound::make(model, c, model.find_map());
    std::vector<Index> idx(ds->n());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<Index>(i);
    std::vector<double> eta(ds->n()), delta(ds->n());
    AlignedBuffer tp = aligned_zeros(ds->stride());
    for (std::size_t j = 0; j < ds->d(); ++j) tp[j] = 3.0 - double(j);
    ds->dots(0, ds->n(), tp.get(), eta.data());
    CHECK(bound.deltas(idx.data(), eta.data(), ds->n(), delta.data()).violations == 0);
    CHECK(*std::max_element(delta.begin(), delta.end()) < 1e-9);
  }

  TEST_CASE("model checks are positive: a sampler refuses a model that lacks what it needs") {
    RunConfig c = test::fixed_config();
    c.model = ModelKind::custom;
    c.family = std::make_shared<PoissonLog>();
    c.algo = Algo::full;
    CHECK_NOTHROW(check_model_fits(c));
    c.algo = Algo::flymc;
    CHECK_THROWS_WITH_AS(check_model_fits(c), doctest::Contains("kappa"), ConfigError);
    c.algo = Algo::smh;
    CHECK_THROWS_WITH_AS(check_model_fits(c), doctest::Contains("M3"), ConfigError);
    c.smh_order = 3;
    CHECK_THROWS_WITH_AS(check_model_fits(c), doctest::Contains("M4"), ConfigError);
    c.model = ModelKind::probit;
    c.family.reset();
    CHECK_NOTHROW(check_model_fits(c));
    CHECK_NOTHROW(check_model_fits(c, true));  // sharded
    for (const Algo a : {Algo::lipsbps, Algo::zigzag_ss}) {
      c.algo = a;
      CHECK_THROWS_AS(check_model_fits(c), ConfigError);
    }
    // M2 is enough; the approximate samplers need the family alone.
    for (const Algo a : {Algo::bps, Algo::zigzag_cv, Algo::sbps, Algo::minibatch_mh, Algo::sgld}) {
      c.algo = a;
      CHECK_NOTHROW(check_model_fits(c));
    }
    c.model = ModelKind::custom;
    c.family = std::make_shared<PoissonLog>();  // no M2 either
    for (const Algo a : {Algo::bps, Algo::zigzag_cv})
      CHECK_THROWS_WITH_AS(check_model_fits((c.algo = a, c)), doctest::Contains("M2"), ConfigError);
    c.model = ModelKind::probit;
    c.family.reset();
    c.model = ModelKind::softmax;
    c.algo = Algo::flymc;
    CHECK_THROWS_AS(check_model_fits(c, true), ConfigError);
    c.model = ModelKind::custom;
    CHECK_THROWS_WITH_AS(check_model_fits(c), doctest::Contains("in code"), ConfigError);
  }

  TEST_CASE("a user's family through flymc::run: regular NUTS samples it; FlyMC refuses it") {
    const auto ds = single_index_data(400, 2, {0.3, 0.5}, 8, [](double eta, Rng& rng) {
      return PoissonFamily{}.simulate(eta, rng);  // the built-in family's exact draws
    });
    const auto family = std::make_shared<PoissonLog>();
    RunConfig c = fixed(Algo::full, ModelKind::logistic);
    c.kernel = KernelKind::nuts;
    c.iters = 500;
    const RunResult r = run(c, ds, family);
    CHECK(r.config.model == ModelKind::custom);
    for (std::size_t j = 0; j < 2; ++j) {
      const test::DrawMoments m = test::draw_moments(r.coordinate(j));
      CHECK(std::fabs(m.mean - (j == 0 ? 0.3 : 0.5)) < 5.0 * m.sd);  // the truth within 5 sd
    }
    c.algo = Algo::flymc;
    CHECK_THROWS_WITH_AS(run(c, ds, family), doctest::Contains("kappa"), ConfigError);
    ds->mutable_y()[6] = 0.5;
    c.algo = Algo::full;
    CHECK_THROWS_WITH_AS(run(c, ds, family), doctest::Contains("row 7"), DataError);
  }

  TEST_CASE("probit refuses a label that is not +-1, naming the row") {
    auto ds = probit_data(50, 2);
    ds->mutable_y()[11] = 0.5;
    RunConfig c = fixed(Algo::full, ModelKind::probit);
    CHECK_THROWS_WITH_AS(run(c, ds), doctest::Contains("row 12"), DataError);
  }
}

namespace {

/// Gaussian regression with noise sd s under `prior` (gaussian: N(0, 1); or flat) on `ds`: FlyMC,
/// SMH of orders 2 and 3 and regular NUTS against the conjugate posterior, precision XᵀX/s²
/// (+ I), mean Σ·Xᵀy/s².
void check_gaussian_posterior(const std::shared_ptr<const Dataset>& ds, double s,
                              const std::string& prior) {
  const auto d = static_cast<Eigen::Index>(ds->d());
  Mat prec = prior == "flat" ? Mat(Mat::Zero(d, d)) : Mat(Mat::Identity(d, d));
  Vec b = Vec::Zero(d);
  for (std::size_t i = 0; i < ds->n(); ++i) {
    const Eigen::Map<const Vec> x(ds->row(i), d);
    prec += x * x.transpose() / (s * s);
    b += x * ds->y()[i] / (s * s);
  }
  const Mat cov = prec.inverse();
  const Vec mean = cov * b;
  struct Case {
    Algo algo;
    KernelKind kernel;
    int order;
  };
  for (const Case k :
       {Case{Algo::flymc, KernelKind::nuts, 2}, Case{Algo::smh, KernelKind::rwmh, 2},
        Case{Algo::smh, KernelKind::rwmh, 3}, Case{Algo::full, KernelKind::nuts, 2}}) {
    RunConfig c = fixed(k.algo, ModelKind::gaussian);
    c.kernel = k.kernel;
    c.smh_order = k.order;
    c.noise_scale = s;
    c.prior = prior;
    const RunResult r = run(c, ds);
    CAPTURE(to_string(k.algo));
    CAPTURE(k.order);
    for (Eigen::Index j = 0; j < d; ++j) {
      const test::ExactCheck e =
          test::against_exact(r.coordinate(std::size_t(j)), mean[j], std::sqrt(cov(j, j)));
      CHECK(e.mean_z < 4.5);
      CHECK(e.sd_z < 4.5);
    }
    if (k.algo == Algo::flymc) CHECK(r.bright_mean() == 0.0);  // B_n = L_n: nobody bright
    if (k.algo == Algo::smh)
      for (const ChainResult& ch : r.chains) CHECK(ch.sampling_queries == 0);  // no candidate
    CHECK(r.bound_violations() == 0);
  }
}

}  // namespace

TEST_SUITE("statistical") {
  TEST_CASE("Gaussian regression: FlyMC, SMH (orders 2, 3) and NUTS match the exact posterior") {
    const double s = 0.7;
    const auto ds = gaussian_data(2000, s, 4);
    for (const char* prior : {"gaussian", "flat"}) {
      CAPTURE(prior);
      check_gaussian_posterior(ds, s, prior);
    }
  }

  // SBC (tests/sbc_util.hpp's small cases: R = 1000 replicates of n = 50 rows, d = 3).
  SbcOptions family_sbc(ModelKind model, Algo algo, long thin, std::uint64_t seed) {
    SbcOptions o = test::small_sbc(algo, thin, seed, 300);
    o.run.model = model;
    o.run.noise_scale = 2.0;  // Gaussian: a likelihood about as informative as probit's
    o.run.q_dark_to_bright = 0.1;
    o.run.theta_steps = 1;
    return o;
  }
  SbcOptions nuts_sbc(ModelKind model, Algo algo, long thin, std::uint64_t seed) {
    SbcOptions o = family_sbc(model, algo, thin, seed);
    o.run.kernel = KernelKind::nuts;
    o.run.target_accept = 0.6;  // larger energy errors: a wrong draw along the path shows
    return o;
  }

  TEST_CASE("SBC: FlyMC with NUTS on probit regression is calibrated") {
    test::check_small_sbc(nuts_sbc(ModelKind::probit, Algo::flymc, 60, 461));
  }
  TEST_CASE("SBC: regular NUTS on probit regression is calibrated") {
    test::check_small_sbc(nuts_sbc(ModelKind::probit, Algo::full, 5, 462));
  }
  TEST_CASE("SBC: scalable MH on probit regression is calibrated") {
    test::check_small_sbc(family_sbc(ModelKind::probit, Algo::smh, 5, 463));
  }
  TEST_CASE("SBC: scalable MH of the third order on probit regression is calibrated") {
    SbcOptions o = family_sbc(ModelKind::probit, Algo::smh, 5, 464);
    o.run.smh_order = 3;
    test::check_small_sbc(o);
  }
  TEST_CASE("SBC: FlyMC with NUTS on Gaussian regression is calibrated") {
    test::check_small_sbc(nuts_sbc(ModelKind::gaussian, Algo::flymc, 5, 465));
  }
  TEST_CASE("SBC: regular NUTS on Gaussian regression is calibrated") {
    test::check_small_sbc(nuts_sbc(ModelKind::gaussian, Algo::full, 5, 466));
  }
  TEST_CASE("SBC: scalable MH (orders 2 and 3) on Gaussian regression is calibrated") {
    for (const int order : {2, 3}) {
      SbcOptions o = family_sbc(ModelKind::gaussian, Algo::smh, 2, 467 + order);
      o.run.smh_order = order;
      test::check_small_sbc(o);
    }
  }
}

TEST_SUITE("unit") {
  TEST_CASE("SBC: a family given in code simulates its data sets through the model table's path") {
    // Probit given in code is simulated and sampled exactly as --model probit: the same ranks.
    SbcOptions o = test::small_sbc(Algo::full, 1, 91, 50);
    o.reps = 12;
    o.draws = 19;
    o.bins = 4;
    o.run.model = ModelKind::probit;
    const SbcResult built_in = run_sbc(o);
    o.run.model = ModelKind::custom;
    o.run.family = std::make_shared<const ProbitFamily>();
    const SbcResult given = run_sbc(o);
    REQUIRE(given.quantities.size() == built_in.quantities.size());
    for (std::size_t q = 0; q < given.quantities.size(); ++q)
      CHECK(given.quantities[q].counts == built_in.quantities[q].counts);
    // A family that does not simulate is refused by name, before any replicate.
    o.run.family = std::make_shared<const PoissonLog>();
    CHECK_THROWS_WITH_AS(run_sbc(o), doctest::Contains("poisson model cannot simulate"),
                         ConfigError);
    o.run.family.reset();
    CHECK_THROWS_WITH_AS(run_sbc(o), doctest::Contains("--model custom"), ConfigError);
  }
}
