// The piecewise-deterministic samplers (docs/math.md §7): the event-time solvers, the
// reflection, the path read-out, the exact samplers' bounds against the rates they bound,
// reproducibility across thread counts, SBC of the exact samplers (bps, lipsbps, zigzag-ss,
// zigzag-cv) and the measured bias of the approximate ones (sbps, psbps).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "flymc/core/blas.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/pdmp/band.hpp"
#include "flymc/mcmc/pdmp/bounds.hpp"
#include "flymc/mcmc/pdmp/event_time.hpp"
#include "flymc/mcmc/pdmp/path.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// ∫_0^t [a + b s]_+ ds by its closed form on the positive stretch (a reference independent of
/// affine_rate_time's algebra).
double affine_integral(double a, double b, double t) {
  if (b == 0.0) return a > 0.0 ? a * t : 0.0;
  const double z = -a / b;  // the zero crossing
  double lo = 0.0, hi = t;
  if (b > 0.0) lo = std::clamp(z, 0.0, t);
  if (b < 0.0) hi = std::clamp(z, 0.0, t);
  if (hi <= lo) return 0.0;
  return a * (hi - lo) + 0.5 * b * (hi * hi - lo * lo);
}

/// The rate a sampler's estimator can take at θ along w, maximised over the data it may draw.
struct RateCase {
  const pdmp::PdmpConstants& c;
  const Dataset& ds;
  /// c_i(θ) for every datum.
  std::vector<double> coefs(const std::vector<double>& th) const {
    std::vector<double> out(ds.n());
    for (std::size_t i = 0; i < ds.n(); ++i) {
      double a = 0.0;
      for (std::size_t j = 0; j < c.p; ++j) a += ds.row(i)[j] * th[j];
      out[i] = pdmp::datum_coef(LogisticFamily(), ds.y()[i], a);
    }
    return out;
  }
};

/// One step of FNV-1a over the bytes of x.
std::uint64_t fnv1a(std::uint64_t h, double x) {
  unsigned char b[sizeof x];
  std::memcpy(b, &x, sizeof x);
  for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// A PDMP run of `algo` with the given sizes and seed (the tests' common set-up).
RunConfig pdmp_config(Algo algo, int chains, long warmup, long iters, long batch,
                      std::uint64_t seed) {
  RunConfig cfg = flymc::test::fixed_config();
  cfg.algo = algo;
  cfg.chains = chains;
  cfg.warmup = warmup;
  cfg.iters = iters;
  cfg.batch_size = batch;
  cfg.seed = seed;
  return cfg;
}

/// The data with column j multiplied by col[j].
std::shared_ptr<const Dataset> scaled_columns(const Dataset& raw, const std::vector<double>& col) {
  auto ds = std::make_shared<Dataset>(raw.n(), raw.d(), "scaled");
  for (std::size_t i = 0; i < raw.n(); ++i)
    for (std::size_t j = 0; j < raw.d(); ++j) ds->mutable_row(i)[j] = col[j] * raw.row(i)[j];
  ds->mutable_y().assign(raw.y().begin(), raw.y().end());
  return ds;
}

/// Every datum the estimators may draw, at points along random segments from random θ (near the
/// MAP and far from it, where the prior's growing gradient matters): the bounds of bps,
/// lipsbps and both Zig-Zags stay above the rates, with prior precision `q` (empty: 1/σ² I).
void check_bounds(const std::shared_ptr<const Dataset>& ds, const Mat& q, std::uint64_t seed) {
  const LogisticModel model(ds, 0.7);
  const MapResult map = model.find_map();
  auto c = pdmp::PdmpConstants::make(model.data(), *model.family_ptr(), model.prior().precision(0),
                                     map.theta, q);
  c.fill_curvature(model.data());
  auto ss = c, cvc = c;  // Zig-Zag's weighted draws: by |x_ij|, and by |x_ij|·‖x_i‖
  ss.fill_zigzag(model.data(), false);
  cvc.fill_zigzag(model.data(), true);
  const RateCase rc{c, *ds};
  Rng rng(seed, 1);
  for (int rep = 0; rep < 300; ++rep) {
    const double far = rep % 3 == 0 ? 20.0 : 0.5;
    std::vector<double> th(3), v(3), zz(3);
    for (std::size_t j = 0; j < 3; ++j)
      th[j] = map.theta[static_cast<Eigen::Index>(j)] + far * rng.normal();
    pdmp::sphere_velocity(rng, v.data(), 3);
    for (double& x : zz) x = rng.uniform() < 0.5 ? -1.0 : 1.0;
    double dist = 0.0;
    for (std::size_t j = 0; j < 3; ++j) dist += std::pow(th[j] - c.theta_map[j], 2);
    dist = std::sqrt(dist);
    const auto full = pdmp::bps_bound(c, c.sum_norm, th.data(), v.data());
    const auto lip = pdmp::bps_bound(c, c.sum_norm, th.data(), v.data());
    pdmp::AffineBound curv;  // from the gradient at s = 0, the first point
    for (double s : {0.0, 0.01, 0.3, 2.0, 15.0}) {
      std::vector<double> x(3), xz(3);
      for (std::size_t j = 0; j < 3; ++j) {
        x[j] = th[j] + v[j] * s;
        xz[j] = th[j] + zz[j] * s;
      }
      const auto cf = rc.coefs(x), cz = rc.coefs(xz);
      double vg_full = 0.0, vx = 0.0;
      for (std::size_t j = 0; j < 3; ++j) vx += v[j] * c.prior_grad(j, x.data());
      vg_full = vx;
      for (std::size_t i = 0; i < c.n; ++i) {
        double xv = 0.0;
        for (std::size_t j = 0; j < 3; ++j) xv += ds->row(i)[j] * v[j];
        vg_full += cf[i] * xv;
        // lipSBPS's estimate from a batch of one datum drawn with probability ‖x_i‖/Σ‖x_k‖
        // (a batch mean is a mean of these); a datum with x_i = 0 is never drawn.
        if (c.norm[i] > 0.0)
          CHECK(std::max(0.0, vx + c.sum_norm / c.norm[i] * cf[i] * xv) <=
                lip.at(s) * (1.0 + 1e-12));
        for (std::size_t j = 0; j < 3; ++j) {
          // Zig-Zag's estimates from datum i, each scaled by W_j / w_ij (its weighted draw).
          const double prior = c.prior_grad(j, xz.data()), xi = ds->row(i)[j];
          if (xi == 0.0) continue;  // weight 0: never drawn
          const double wss = ss.pick[j].total() / std::fabs(xi);
          const double wcv = cvc.pick[j].total() / (std::fabs(xi) * c.norm[i]);
          const double e_ss = zz[j] * (prior + wss * cz[i] * xi);
          const double e_cv =
              zz[j] * (prior + c.grad_lik_map[j] + wcv * (cz[i] - c.coef_map[i]) * xi);
          CHECK(std::max(0.0, e_ss) <=
                pdmp::zigzag_ss_bound(ss, j, th.data(), zz.data()).at(s) * (1.0 + 1e-12));
          CHECK(std::max(0.0, e_cv) <=
                pdmp::zigzag_cv_bound(cvc, j, th.data(), zz.data(), dist).at(s) * (1.0 + 1e-12) +
                    1e-12);
        }
      }
      CHECK(std::max(0.0, vg_full) <= full.at(s) * (1.0 + 1e-12));
      if (s == 0.0) {
        std::vector<double> g(3, 0.0);
        c.add_prior_grad(x.data(), g.data());
        for (std::size_t i = 0; i < c.n; ++i)
          for (std::size_t j = 0; j < 3; ++j) g[j] += cf[i] * ds->row(i)[j];
        curv = pdmp::bps_curvature_bound(c, g.data(), v.data());
        CHECK(curv.a == doctest::Approx(vg_full).epsilon(1e-9));
      }
      CHECK(std::max(0.0, vg_full) <= curv.at(s) * (1.0 + 1e-12) + 1e-9);
    }
  }
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("affine_rate_time inverts the integrated rate, zero crossings included") {
    Rng rng(11, 1);
    int finite = 0;
    for (int rep = 0; rep < 20000; ++rep) {
      const double a = 4.0 * rng.normal(), b = rep % 5 == 0 ? 0.0 : 3.0 * rng.normal();
      const double e = pdmp::exp1(rng);
      const double t = pdmp::affine_rate_time(a, b, e);
      CAPTURE(a);
      CAPTURE(b);
      CAPTURE(e);
      // Never reached: the whole positive part integrates to less than e.
      const double total =
          b < 0.0 ? (a > 0.0 ? a * a / (-2.0 * b) : 0.0) : (b == 0.0 && a <= 0.0 ? 0.0 : INFINITY);
      if (!std::isfinite(t)) {
        CHECK(total <= e);
        continue;
      }
      ++finite;
      REQUIRE(t >= 0.0);
      CHECK(affine_integral(a, b, t) == doctest::Approx(e).epsilon(1e-10));
      // The first such time: the rate is positive just before it.
      CHECK(a + b * t >= -1e-9 * (std::fabs(a) + std::fabs(b) * t));
    }
    CHECK(finite > 10000);
    CHECK(pdmp::affine_rate_time(-1.0, 2.0, 1.0) == doctest::Approx(0.5 + 1.0));
    CHECK(pdmp::affine_rate_time(2.0, 0.0, 1.0) == doctest::Approx(0.5));
    CHECK(std::isinf(pdmp::affine_rate_time(-1.0, 0.0, 1.0)));
    CHECK(std::isinf(pdmp::affine_rate_time(1.0, -1.0, 0.6)));  // at most 1/2 ever
  }

  TEST_CASE("the piecewise-linear rate: integral, inverse and sign changes") {
    Rng rng(12, 1);
    for (int rep = 0; rep < 500; ++rep) {
      pdmp::PiecewiseLinearRate r;
      double t = rng.uniform();
      const int nodes = 2 + static_cast<int>(rng.below(12));
      for (int m = 0; m < nodes; ++m) {
        r.add(t, 2.0 * rng.normal());  // crosses zero often
        t += 0.05 + rng.uniform();
      }
      const double total = r.integral(t);
      for (int k = 0; k < 5; ++k) {
        const double e = 0.3 * pdmp::exp1(rng);
        const double s = r.first_time(e);
        if (e > total) {
          CHECK(std::isinf(s));
          continue;
        }
        REQUIRE(std::isfinite(s));
        CHECK(r.integral(s) == doctest::Approx(e).epsilon(1e-9));
        CHECK(r.at(s) >= 0.0);
      }
    }
    // A rate that is negative, then crosses zero inside a piece: 0 until t = 1, then t − 1.
    pdmp::PiecewiseLinearRate r;
    r.add(0.0, -1.0);
    r.add(3.0, 2.0);
    CHECK(r.integral(3.0) == doctest::Approx(2.0));
    CHECK(r.first_time(0.5) == doctest::Approx(2.0));
    CHECK(r.at(0.5) == 0.0);
  }

  TEST_CASE("the piecewise-linear rate's event times follow 1 − exp(−Λ(t))") {
    // Kolmogorov–Smirnov on Λ(T) of drawn times T, censored at the last node: Λ(T) ~ Exp(1).
    pdmp::PiecewiseLinearRate r;
    const double ys[] = {0.5, -0.4, 1.2, 0.0, 2.0, -1.0, 0.7};
    for (int m = 0; m < 7; ++m) r.add(0.5 * m, ys[m]);
    Rng rng(13, 1);
    const int n = 40000;
    const double cap = r.integral(3.0);
    std::vector<double> u;
    for (int i = 0; i < n; ++i) {
      const double t = r.first_time(pdmp::exp1(rng));
      u.push_back(std::isinf(t) ? 1.0 - std::exp(-cap) : 1.0 - std::exp(-r.integral(t)));
    }
    std::sort(u.begin(), u.end());
    double ks = 0.0;
    for (int i = 0; i < n; ++i) {
      const double x = u[static_cast<std::size_t>(i)];
      if (x >= 1.0 - std::exp(-cap) - 1e-12) break;  // the censored atom
      ks = std::max({ks, std::fabs(x - double(i) / n), std::fabs(x - double(i + 1) / n)});
    }
    CHECK(ks < 1.95 / std::sqrt(double(n)));  // the 0.1% critical value
  }

  TEST_CASE("reflection keeps |v|, reverses v·g and is an involution; sphere draws are unit") {
    Rng rng(14, 1);
    for (int rep = 0; rep < 1000; ++rep) {
      const std::size_t p = 1 + rng.below(9);
      std::vector<double> v(p), g(p), w;
      pdmp::sphere_velocity(rng, v.data(), p);
      double vv = 0.0;
      for (double x : v) vv += x * x;
      CHECK(vv == doctest::Approx(1.0).epsilon(1e-14));
      for (double& x : g) x = 10.0 * rng.normal();
      double vg = 0.0;
      for (std::size_t j = 0; j < p; ++j) vg += v[j] * g[j];
      w = v;
      pdmp::reflect(w.data(), g.data(), p);
      double ww = 0.0, wg = 0.0;
      for (std::size_t j = 0; j < p; ++j) {
        ww += w[j] * w[j];
        wg += w[j] * g[j];
      }
      CHECK(ww == doctest::Approx(1.0).epsilon(1e-12));
      CHECK(wg == doctest::Approx(-vg).epsilon(1e-9).scale(10.0));
      pdmp::reflect(w.data(), g.data(), p);
      for (std::size_t j = 0; j < p; ++j) CHECK(w[j] == doctest::Approx(v[j]).epsilon(1e-12));
    }
    std::vector<double> v = {0.6, 0.8}, zero = {0.0, 0.0};
    pdmp::reflect(v.data(), zero.data(), 2);
    CHECK(v == std::vector<double>{0.6, 0.8});
  }

  TEST_CASE("the path read-out: grid points and segment-integrated means are exact") {
    // θ(t) in 1-D: from 0 at speed +1 for 2.5, then speed −2 for 1.5 (to −0.5), then +0.5.
    pdmp::PathGrid path(1, 0.5, 3, 6);  // grid 0.5 … 4.5, sampling window (1.5, 4.5]
    std::vector<std::pair<long, double>> got;
    auto emit = [&](long k, const double* x) { got.emplace_back(k, x[0]); };
    const double w1 = 1.0, w2 = -2.0, w3 = 0.5;
    double x0 = 0.0;
    path.advance(&x0, &w1, 2.5, emit);
    CHECK(path.sampling());
    x0 = 2.5;
    path.advance(&x0, &w2, 1.5, emit);
    x0 = -0.5;
    path.advance(&x0, &w3, path.remaining(), emit);
    CHECK(path.done());
    REQUIRE(got.size() == 9);
    const double expect[] = {0.5, 1.0, 1.5, 2.0, 2.5, 1.5, 0.5, -0.5, -0.25};
    for (std::size_t k = 0; k < 9; ++k) {
      CHECK(got[k].first == static_cast<long>(k) + 1);
      CHECK(got[k].second == doctest::Approx(expect[k]).epsilon(1e-14));
    }
    // ∫_{1.5}^{4.5} θ = ∫_{1.5}^{2.5} t dt + ∫_0^{1.5} (2.5 − 2s) ds + ∫_0^{0.5} (−0.5 + s/2) ds.
    const double integral =
        (2.5 * 2.5 - 1.5 * 1.5) / 2.0 + (2.5 * 1.5 - 1.5 * 1.5) + (-0.5 * 0.5 + 0.25 * 0.25);
    CHECK(path.mean()[0] == doctest::Approx(integral / 3.0).epsilon(1e-14));
  }

  TEST_CASE("the regression band fits a line and stays above it") {
    pdmp::RegressionBand band(3.0, 100.0);
    Rng rng(15, 1);
    for (int j = 0; j < 200; ++j) {
      const double tau = 0.01 * j;
      band.add(tau, 2.0 - 5.0 * tau + 0.01 * rng.normal(), 1e-4);
    }
    CHECK(band.mean(1.0) == doctest::Approx(-3.0).epsilon(1e-2));
    CHECK(band.mean(3.0) == doctest::Approx(-13.0).epsilon(1e-2));
    for (double tau : {0.0, 1.0, 5.0}) CHECK(band.upper(tau) > band.mean(tau));
    // One observation: the slope is the prior's, the band widens at k·σ_β per unit time.
    band.clear();
    band.add(0.0, 1.0, 0.25);
    CHECK(band.mean(2.0) == doctest::Approx(1.0));
    CHECK(band.upper(10.0) == doctest::Approx(1.0 + 3.0 * std::sqrt(0.25 + 1e6 + 0.25)));
  }

  TEST_CASE("c_i stays finite and within (-1, 1) at extreme predictors") {
    for (double t : {-1.0, 1.0})
      for (double a : {-1e308, -800.0, -40.0, 0.0, 40.0, 800.0, 1e308}) {
        const double c = pdmp::datum_coef(LogisticFamily(), t, a);
        CAPTURE(a);
        CHECK(std::isfinite(c));
        CHECK(std::fabs(c) <= 1.0);
        CHECK(c * t <= 0.0);  // −t·σ(−t·a): pulls toward the label
      }
    CHECK(pdmp::datum_coef(LogisticFamily(), 1.0, 0.0) == -0.5);
  }

  TEST_CASE("the exact samplers' bounds dominate their rates on random segments") {
    auto ds = test::logistic_data(60, 3, 21, 1.5);
    check_bounds(ds, {}, 16);
  }

  TEST_CASE("the bounds dominate the rates with a diagonal prior precision") {
    // The diagonally preconditioned samplers' prior, λ_j orders of magnitude apart, on features
    // of very different scales (docs/math.md §7.6).
    auto ds = scaled_columns(*test::logistic_data(60, 3, 22, 1.5), {0.05, 3.0, 1.0});
    const Mat q = Vec::Map(std::vector<double>{400.0, 0.01, 2.5}.data(), 3).asDiagonal();
    check_bounds(ds, q, 17);
  }

  TEST_CASE("the bounds dominate the rates with a dense prior precision") {
    // The Cholesky-preconditioned samplers' prior TᵀT/σ²: strongly correlated, with
    // off-diagonal entries of both signs, so that a Zig-Zag rate's prior part moves with the
    // other coordinates' velocities (bounds.hpp's slope_j).
    auto ds = test::logistic_data(60, 3, 23, 1.5);
    Mat t(3, 3);
    t << 2.0, 0.0, 0.0, -1.5, 0.3, 0.0, 0.7, 4.0, 0.05;
    check_bounds(ds, t.transpose() * t * 2.0, 18);
  }

  TEST_CASE("the piecewise-deterministic samplers give the same draws with 1 and 2 threads" *
            doctest::test_suite("threaded")) {
    auto ds = test::logistic_data(300, 3, 4);
    for (Algo algo :
         {Algo::bps, Algo::lipsbps, Algo::sbps, Algo::psbps, Algo::zigzag_ss, Algo::zigzag_cv}) {
      CAPTURE(to_string(algo));
      RunConfig cfg = pdmp_config(algo, 3, 50, 100, 30, 17);
      cfg.threads = 1;
      const RunResult a = run(cfg, ds);
      cfg.threads = 2;
      const RunResult b = run(cfg, ds);
      for (std::size_t c = 0; c < 3; ++c) {
        CHECK(a.chains[c].draws == b.chains[c].draws);
        CHECK(a.chains[c].path_mean == b.chains[c].path_mean);
        CHECK(a.chains[c].counters.queries == b.chains[c].counters.queries);
        CHECK(a.chains[c].draws.size() == 300);
      }
      CHECK(a.path_mean().size() == 3);
      if (is_exact(algo)) CHECK(a.bound_violations() == 0);
      CHECK(a.chains[0].sampling_queries > 0);
    }
  }

  TEST_CASE("--pdmp-precondition none gives the draws of the samplers before preconditioning") {
    // FNV-1a of the draws' and path means' bits, recorded at the parent commit of the
    // preconditioning (b5ffc5a): the raw-coordinate samplers must be unchanged bit for bit, except
    // those changed since on purpose: BPS (the curvature bound, docs/math.md §7.1), lipSBPS
    // (batches drawn by ‖x_i‖, §7.1) and both Zig-Zags (data drawn by weight, §7.2), re-recorded
    // then, and both Zig-Zags again when they began drawing their data four proposals ahead
    // (§7.2: the same process, the random words in another order). Bits
    // depend on the build as the pinned draws' do (test_pinned_draws.cpp), so the exact check
    // runs on a build like the recording one; elsewhere the runs only have to complete.
    const std::string recorded = "simd=avx512 flags=-O3 -DNDEBUG march=znver3 blas=Cooperlake";
    const std::string build = std::string("simd=") + kernels::simd_name() +
                              " flags=" + FLYMC_BUILD_FLAGS + " blas=" + blas::core_name();
    if (build != recorded) MESSAGE("not the recording build ('" << build << "'): no bit check");
    auto ds = test::logistic_data(200, 3, 41, 1.5);
    const std::pair<Algo, std::uint64_t> pinned[] = {
        {Algo::bps, 0x1a17bad4632d3719ull},       {Algo::lipsbps, 0xfd38c1431223875aull},
        {Algo::sbps, 0x5062505385468055ull},      {Algo::psbps, 0xd84cf77521898b5aull},
        {Algo::zigzag_ss, 0x4f45e368f1bac12cull}, {Algo::zigzag_cv, 0xc8653fb99330bcf6ull}};
    for (const auto& entry : pinned) {
      // Named copies, not structured bindings: CAPTURE's lambda cannot capture those in clang 14.
      const Algo algo = entry.first;
      const std::uint64_t hash = entry.second;
      RunConfig cfg = pdmp_config(algo, 2, 30, 60, 20, 99);
      cfg.threads = 1;
      cfg.pdmp_precondition = PdmpPrecondition::none;
      const RunResult r = run(cfg, ds);
      std::uint64_t h = 14695981039346656037ull;
      for (const auto& ch : r.chains) {
        for (double x : ch.draws) h = fnv1a(h, x);
        for (double x : ch.path_mean) h = fnv1a(h, x);
      }
      std::printf("pinned %s: 0x%016llxull\n", to_string(algo), static_cast<unsigned long long>(h));
      CAPTURE(std::string(to_string(algo)));
      CHECK((h == hash || build != recorded));
    }
  }

  TEST_CASE("the piecewise-deterministic samplers refuse what they cannot run") {
    auto ds = test::logistic_data(50, 2, 4);
    RunConfig cfg = flymc::test::fixed_config();
    cfg.algo = Algo::bps;
    cfg.prior = "laplace";
    CHECK_THROWS_AS(run(cfg, ds), ConfigError);
    cfg.prior = "gaussian";
    cfg.model = ModelKind::probit;  // probit's f' is unbounded: no M1
    cfg.algo = Algo::lipsbps;
    CHECK_THROWS_WITH_AS(run(cfg, ds), doctest::Contains("M1"), ConfigError);
    cfg.algo = Algo::zigzag_ss;
    CHECK_THROWS_WITH_AS(run(cfg, ds), doctest::Contains("M1"), ConfigError);
    cfg.model = ModelKind::softmax;
    cfg.algo = Algo::bps;
    CHECK_THROWS_AS(run(cfg, ds), ConfigError);
    cfg.model = ModelKind::logistic;
    cfg.pdmp_spacing = 0.0;
    CHECK_THROWS_AS(run(cfg, ds), ConfigError);
    cfg.pdmp_spacing.reset();
    cfg.refresh_rate = -1.0;
    CHECK_THROWS_AS(run(cfg, ds), ConfigError);
    cfg.refresh_rate.reset();
    CheckpointOptions ck;
    ck.store = checkpoint_directory("unused");
    CHECK_THROWS_AS(run(cfg, ds, {}, nullptr, &ck), ConfigError);
  }
}

TEST_SUITE("statistical") {
  // SBC of the exact samplers (tests/sbc_util.hpp): the time per draw is the automatic spacing.
  SbcOptions pdmp_sbc(Algo algo, long thin, std::uint64_t seed) {
    return test::small_sbc(algo, thin, seed, 100);
  }
  void check_pdmp_sbc(const SbcOptions& o) { test::check_small_sbc(o); }

  TEST_CASE("SBC: BPS (full gradient, thinning) is calibrated") {
    check_pdmp_sbc(pdmp_sbc(Algo::bps, 10, 201));
  }
  TEST_CASE("SBC: lipSBPS (batch gradients, Lipschitz bound) is calibrated") {
    check_pdmp_sbc(pdmp_sbc(Algo::lipsbps, 8, 202));
  }
  TEST_CASE("SBC: Zig-Zag with subsampling is calibrated") {
    check_pdmp_sbc(pdmp_sbc(Algo::zigzag_ss, 20, 203));
  }
  TEST_CASE("SBC: Zig-Zag with control variates is calibrated") {
    check_pdmp_sbc(pdmp_sbc(Algo::zigzag_cv, 10, 204));
  }
  // The samplers read any single-index family's M1 and M2: Student-t regression (the only other
  // family with both) for the bounded-gradient pair, probit (M2 only) for the curvature pair.
  SbcOptions family_pdmp_sbc(ModelKind model, Algo algo, long thin, std::uint64_t seed) {
    SbcOptions o = pdmp_sbc(algo, thin, seed);
    o.run.model = model;
    return o;
  }
  TEST_CASE("SBC: lipSBPS on robust regression (the Student-t family's M1) is calibrated") {
    check_pdmp_sbc(family_pdmp_sbc(ModelKind::robust, Algo::lipsbps, 8, 205));
  }
  TEST_CASE("SBC: Zig-Zag with subsampling on robust regression is calibrated") {
    check_pdmp_sbc(family_pdmp_sbc(ModelKind::robust, Algo::zigzag_ss, 20, 206));
  }
  TEST_CASE("SBC: BPS on probit regression (the probit family's M2) is calibrated") {
    check_pdmp_sbc(family_pdmp_sbc(ModelKind::probit, Algo::bps, 10, 207));
  }
  TEST_CASE("SBC: Zig-Zag with control variates on probit regression is calibrated") {
    check_pdmp_sbc(family_pdmp_sbc(ModelKind::probit, Algo::zigzag_cv, 10, 208));
  }

  TEST_CASE("preconditioned exact samplers on badly scaled features agree with NUTS") {
    // Features scaled by 1, 10 and 100 (and a bias): posterior sds two orders of magnitude apart.
    // Each exact sampler, in the Laplace-scaled coordinates (the default), against a long
    // regular-NUTS run: every mean within 4 combined MCSEs, every sd within 10%.
    auto ds = scaled_columns(*test::logistic_data(300, 4, 51, 1.0), {1.0, 10.0, 100.0, 1.0});
    RunConfig ref_cfg = flymc::test::fixed_config();
    ref_cfg.algo = Algo::full;
    ref_cfg.kernel = KernelKind::nuts;
    ref_cfg.chains = 4;
    ref_cfg.warmup = 1000;
    ref_cfg.iters = 20000;
    ref_cfg.seed = 77;
    const RunResult ref = run(ref_cfg, ds);
    for (Algo algo : {Algo::bps, Algo::lipsbps, Algo::zigzag_ss, Algo::zigzag_cv}) {
      const RunResult r = run(pdmp_config(algo, 4, 200, 5000, 30, 78), ds);
      CHECK(r.bound_violations() == 0);
      for (std::size_t j = 0; j < 4; ++j) {
        CAPTURE(to_string(algo));
        CAPTURE(j);
        const auto [m0, se0, sd0] = test::draw_moments(ref.coordinate(j));
        const auto [m, se, sd] = test::draw_moments(r.coordinate(j));
        std::printf("%s theta.%zu: mean %.5g (NUTS %.5g, %.2f combined mcse), sd ratio %.3f\n",
                    to_string(algo), j + 1, m, m0, (m - m0) / std::hypot(se, se0), sd / sd0);
        CHECK(std::fabs(m - m0) < 4.0 * std::hypot(se, se0));
        CHECK(std::fabs(sd / sd0 - 1.0) < 0.1);
      }
    }
  }

  TEST_CASE("SBPS and pSBPS: measured bias against the exact posterior") {
    // D = 2 (a feature and a bias), N = 2000: the posterior's mean and sd by quadrature. SBPS is
    // approximate (its band is not a bound), so the tolerance is not a Monte Carlo one: the bias
    // of the draws' mean and of the path mean must stay under 0.15 posterior sd on top of 4.5
    // Monte Carlo errors (the draws' batch-means MCSE, larger than the path mean's), and the sd
    // within 10%. Zig-Zag with control variates, exact, runs beside them as a control that the
    // test can pass. The figures are printed.
    auto ds = test::logistic_data(2000, 2, 31, 1.5);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    const test::Moments exact = test::posterior_quadrature(model, map);
    for (Algo algo : {Algo::sbps, Algo::psbps, Algo::zigzag_cv}) {
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = algo;
      cfg.chains = 4;
      cfg.warmup = 500;
      cfg.iters = 5000;
      cfg.seed = 2025;
      const RunResult r = run(cfg, ds);
      const auto pm = r.path_mean();
      const double tol = is_exact(algo) ? 0.0 : 0.15;
      for (std::size_t j = 0; j < 2; ++j) {
        CAPTURE(to_string(algo));
        CAPTURE(j);
        const auto [m, se, sd] = test::draw_moments(r.coordinate(j));
        std::printf(
            "%s theta.%zu: mean %.4f, path mean %.4f (exact %.4f: bias %.3f / %.3f sd, mcse "
            "%.3f sd), sd ratio %.3f; %.0f queries per draw, acceptance %.3f, %llu bound "
            "violations\n",
            to_string(algo), j + 1, m, pm[j], exact.mean[j], (m - exact.mean[j]) / exact.sd[j],
            (pm[j] - exact.mean[j]) / exact.sd[j], se / exact.sd[j], sd / exact.sd[j],
            r.queries_per_iter(), r.accept_rate(),
            static_cast<unsigned long long>(r.bound_violations()));
        CHECK(std::fabs(m - exact.mean[j]) < tol * exact.sd[j] + 4.5 * se);
        CHECK(std::fabs(pm[j] - exact.mean[j]) < tol * exact.sd[j] + 4.5 * se);
        CHECK(sd / exact.sd[j] > 0.9);
        CHECK(sd / exact.sd[j] < 1.1);
      }
      // SBPS counts its violations; the exact sampler has none.
      CHECK((r.bound_violations() > 0) == !is_exact(algo));
    }
  }
}
