// Robust regression (docs/math.md §2.3) beyond the model contract: Δ_n, ∂Δ_n/∂ψ and log L_n against
// long double references where double arithmetic would cancel or overflow (t → 0, t → −1, huge
// residuals), the MAP with outliers and from a far start, data and configuration errors, the
// synth-robust generator, and (statistical) every sampler against the exact posterior of a
// two-parameter model computed by quadrature.
#include <doctest/doctest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/robust.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMax = std::numeric_limits<double>::max();

/// One row with response 0 and the single feature 1: the residual at predictor ψ is −ψ.
std::shared_ptr<const Dataset> zero_response() {
  auto ds = std::make_shared<Dataset>(1, 1, "zero");
  ds->mutable_row(0)[0] = 1.0;
  return ds;
}

/// t − log1p(t) in long double: its alternating series where the difference cancels
/// (|t| < 0.1), else (q − 1) − log q with q = 1 + t passed in (formed directly near t = −1).
long double ref_t_minus_log1p(long double t, long double q) {
  if (std::fabs(t) >= 0.1L) return (q - 1.0L) - std::log(q);
  long double g = 0.0L, term = t;
  for (int k = 2; k < 40; ++k) {
    term *= -t;  // (−1)^(k−1) t^k
    g -= term / k;
  }
  return g;
}

/// Worst error of a sweep, relative to the reference, in units of ε.
struct Worst {
  double rel = 0.0;
  double at_r = 0.0, at_xi = 0.0;
  void add(double got, long double ref, double r, double xi) {
    if (std::fabs(ref) < 1e-290L) return;  // absolute error ≤ 1e-300 there, checked apart
    const double e = static_cast<double>(std::fabs((got - ref) / ref)) / kEps;
    if (e > rel) rel = e, at_r = r, at_xi = xi;
  }
};

/// Residuals that stress every branch: at and around the tangent point ±ξ (t → 0), far inside
/// it (t → −1 when ξ² ≫ c), log-uniform moderate values, and huge ones up to the double limit.
std::vector<double> residuals(double xi, double c, Rng& rng) {
  std::vector<double> r;
  if (xi > 0.0) {
    r.push_back(xi);
    for (int k = 1; k <= 16; ++k) {
      r.push_back(xi * (1.0 + std::pow(10.0, -k)));
      r.push_back(xi * (1.0 - std::pow(10.0, -k)));
    }
    r.push_back(std::nextafter(xi, kInf));
    r.push_back(std::nextafter(xi, 0.0));
    for (double f : {1e-3, 1e-8, 0.5, 0.7, 0.75, 1.2, 1.5, 2.0}) r.push_back(xi * f);
  }
  for (double v : {0.0, 1e-300, 1e-10, std::sqrt(c) * 1e-3, std::sqrt(c)}) r.push_back(v);
  for (int i = 0; i < 400; ++i) r.push_back(std::pow(10.0, -4.0 + 8.0 * rng.uniform()));
  for (double v : {1e10, 1e100, 1e150, 1e154, 1.5e154, 1e155, 1e200, 1e300, kMax}) r.push_back(v);
  const std::size_t n = r.size();
  for (std::size_t i = 0; i < n; ++i) r.push_back(-r[i]);
  return r;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("robust bound: Delta >= 0 and accurate near t = 0, t -> -1 and at huge residuals") {
    const auto ds = zero_response();
    Rng rng(3, 1);
    Worst wd, wg;
    std::size_t points = 0;
    for (const std::pair<double, double>& ns :
         {std::pair{4.0, 1.0}, {1.0, 1e-3}, {30.0, 2.0}, {0.5, 10.0}}) {
      const double nu = ns.first, s = ns.second;
      const RobustModel model(ds, Prior{PriorKind::gaussian, 1.0}, nu, s);
      const StudentT& st = model.student();
      for (double xi : {0.0, 1e-3, 0.5, 1.5, 10.0, 1e4, 1e8, 1e100}) {
        for (double slack : {0.0, 1e-3}) {
          CAPTURE(nu);
          CAPTURE(s);
          CAPTURE(xi);
          CAPTURE(slack);
          const RobustBound bound = RobustBound::untuned(model, xi, Vec::Zero(1), slack);
          const std::vector<double> r = residuals(xi, st.c, rng);
          const std::size_t k = r.size();
          std::vector<Index> idx(k, 0);
          std::vector<double> psi(k), delta(k), dpsi(k);
          for (std::size_t i = 0; i < k; ++i) psi[i] = -r[i];
          const BoundCheck chk =
              bound.delta_grads(idx.data(), psi.data(), k, delta.data(), dpsi.data());
          CHECK(chk.violations == 0);
          CHECK(chk.clamped == 0);
          const long double a = st.a, c = st.c, X = xi;
          for (std::size_t i = 0; i < k; ++i) {
            CAPTURE(r[i]);
            REQUIRE(!std::isnan(delta[i]));
            CHECK(delta[i] >= 0.0);
            const long double R = r[i];
            const long double t = (R - X) * (R + X) / (c + X * X);
            const long double q = (c + R * R) / (c + X * X);
            const long double ref = a * ref_t_minus_log1p(t, q) + slack;
            if (ref > kMax) {
              CHECK(delta[i] == kInf);  // Δ's value beyond the double range
            } else {
              CHECK(std::fabs(delta[i] - ref) <= 16.0L * kEps * ref + 1e-300L);
              wd.add(delta[i], ref, r[i], xi);
            }
            // ∂Δ/∂ψ = −2a·r(r² − ξ²)/((c + r²)(c + ξ²))
            const long double gref = -2.0L * a * R * (t / q) / (c + X * X);
            if (std::fabs(gref) > kMax) {
              CHECK(std::isinf(dpsi[i]));
            } else if (delta[i] > 0.0) {
              CHECK(std::fabs(dpsi[i] - gref) <= 16.0L * kEps * std::fabs(gref) + 1e-300L);
              wg.add(dpsi[i], gref, r[i], xi);
            }
            // log L_n stays finite at every finite residual: C − a·log1p(r²/c).
            const double ll = bound.log_lik(0, psi[i]);
            const long double lref = st.log_norm - a * std::log1p(R * R / c);
            REQUIRE(std::isfinite(ll));
            CHECK(std::fabs(ll - lref) <= 8.0L * kEps * (std::fabs(st.log_norm) + std::fabs(lref)));
            ++points;
          }
        }
      }
    }
    MESSAGE("Delta: " << points << " points, max relative error " << wd.rel
                      << " eps (r = " << wd.at_r << ", xi = " << wd.at_xi << "); dDelta/dpsi max "
                      << wg.rel << " eps (r = " << wg.at_r << ", xi = " << wg.at_xi << ")");
  }

  TEST_CASE("robust bound: a raised bound is counted as violated, within rounding as clamped") {
    const auto ds = test::robust_data(300, 3, 4);
    const RobustModel model(ds, Prior{PriorKind::gaussian, 1.0}, 4.0, 1.0);
    const MapResult map = model.find_map();
    RobustBound bound = RobustBound::map_tuned(model, map.theta);
    AlignedBuffer tp = aligned_zeros(ds->stride());
    for (std::size_t j = 0; j < 3; ++j) tp[j] = map.theta[static_cast<Eigen::Index>(j)];
    std::vector<Index> idx(300);
    std::vector<double> psi(300), delta(300);
    for (Index i = 0; i < 300; ++i) {
      idx[i] = i;
      psi[i] = kernels::dot(ds->row(i), tp.get(), ds->stride());
    }
    // Tight at θ_MAP: Δ_n = 0 exactly, not clamped.
    BoundCheck chk = bound.deltas(idx.data(), psi.data(), 300, delta.data());
    CHECK(chk.violations == 0);
    CHECK(chk.clamped == 0);
    for (double v : delta) CHECK(v == 0.0);
    bound.raise_for_testing(1e-6);
    chk = bound.deltas(idx.data(), psi.data(), 300, delta.data());
    CHECK(chk.violations == 300);
    for (double v : delta) CHECK(v == 0.0);
    // The collapsed sum moved with the per-datum bounds.
    AlignedBuffer scratch = aligned_zeros(bound.scratch_size());
    double sum = 0.0;
    for (Index i = 0; i < 300; ++i) sum += bound.log_bound(i, psi[i]);
    CHECK(bound.log_bound_sum(tp.get(), scratch.get()) == doctest::Approx(sum).epsilon(1e-12));
  }

  TEST_CASE("robust MAP: a stationary maximum with gross outliers, from a far start, and N = 1") {
    const auto clean = test::robust_data(3000, 5, 11);
    const auto dirty = test::robust_data(3000, 5, 11, 1.0, 7, 1e3);  // every 7th response +1000
    for (PriorKind kind : {PriorKind::gaussian, PriorKind::laplace}) {
      CAPTURE(static_cast<int>(kind));
      const RobustModel model(dirty, Prior{kind, 1.0}, 4.0, 1.0);
      const MapResult map = model.find_map();
      const Vec g = model.grad_log_post(map.theta);
      CHECK(g.cwiseAbs().maxCoeff() < 1e-6);
      // A maximum: every coordinate move of 1e-2 posterior sd lowers the log posterior.
      AlignedBuffer tp = aligned_zeros(dirty->stride());
      auto log_post = [&](const Vec& th) {
        for (Eigen::Index j = 0; j < th.size(); ++j) tp[static_cast<std::size_t>(j)] = th[j];
        return model.log_lik(tp.get()) + model.log_prior(th.data());
      };
      const double at_map = log_post(map.theta);
      CHECK(at_map == doctest::Approx(map.log_post).epsilon(1e-12));
      for (Eigen::Index j = 0; j < map.theta.size(); ++j)
        for (double sgn : {-1.0, 1.0}) {
          Vec th = map.theta;
          th[j] += sgn * 1e-2 * std::sqrt(map.covariance(j, j));
          CHECK(log_post(th) < at_map);
        }
      // Robustness: 429 responses off by 1000 barely move the MAP (least squares would move
      // the bias by ~140).
      const MapResult ref = RobustModel(clean, Prior{kind, 1.0}, 4.0, 1.0).find_map();
      CHECK((map.theta - ref.theta).cwiseAbs().maxCoeff() < 0.05);
    }
    // Far start: responses offset by 100, residuals at θ = 0 far beyond √c, where the exact
    // Hessian is indefinite; the search goes through MM steps and must still end stationary.
    {
      const auto base = test::robust_data(2000, 3, 12);
      auto far = std::make_shared<Dataset>(2000, 3, "far");
      for (std::size_t i = 0; i < 2000; ++i) {
        std::copy(base->row(i), base->row(i) + 3, far->mutable_row(i));
        far->mutable_y()[i] = base->y()[i] + 100.0;
      }
      const RobustModel model(far, Prior{PriorKind::gaussian, 1e3}, 4.0, 1.0);
      const MapResult map = model.find_map();
      CHECK(model.grad_log_post(map.theta).cwiseAbs().maxCoeff() < 1e-6);
      CHECK(map.theta[2] > 95.0);  // the bias carries the offset
      CHECK(map.covariance.llt().info() == Eigen::Success);
    }
    // N = 1: the prior makes the posterior proper.
    {
      auto one = std::make_shared<Dataset>(1, 2, "one");
      one->mutable_row(0)[0] = 2.0;
      one->mutable_row(0)[1] = 1.0;
      one->mutable_y()[0] = 3.0;
      const RobustModel model(one, Prior{PriorKind::gaussian, 1.0}, 4.0, 1.0);
      const MapResult map = model.find_map();
      CHECK(model.grad_log_post(map.theta).cwiseAbs().maxCoeff() < 1e-9);
      CHECK(map.covariance.llt().info() == Eigen::Success);
    }
  }

  TEST_CASE("robust model: data errors name the row and field; bad options are ConfigErrors") {
    auto make = [](std::size_t row, std::size_t field, double v) {
      auto ds = std::make_shared<Dataset>(4, 3, "mem.csv");
      for (std::size_t i = 0; i < 4; ++i) {
        for (std::size_t j = 0; j < 3; ++j) ds->mutable_row(i)[j] = 0.5 * double(i + j);
        ds->mutable_y()[i] = 1.0;
      }
      if (field == 1) {
        ds->mutable_y()[row - 1] = v;
      } else {
        ds->mutable_row(row - 1)[field - 2] = v;
      }
      return std::shared_ptr<const Dataset>(ds);
    };
    auto message = [](const std::shared_ptr<const Dataset>& ds) {
      try {
        RobustModel m(ds, Prior{}, 4.0, 1.0);
      } catch (const DataError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(message(make(3, 1, nan)).find("mem.csv: row 3: field 1 (response)") != std::string::npos);
    CHECK(message(make(2, 1, -1e101)).find("row 2: field 1 (response)") != std::string::npos);
    CHECK(message(make(2, 3, kInf)).find("row 2: field 3 (x2)") != std::string::npos);
    CHECK(message(make(4, 4, 1e101)).find("row 4: field 4 (x3)") != std::string::npos);
    CHECK(message(make(4, 4, 1e99)) == "no error");
    // Through the sampler's dispatch too.
    RunConfig cfg = flymc::test::fixed_config();
    cfg.model = ModelKind::robust;
    CHECK_THROWS_AS(run(cfg, make(1, 2, nan)), DataError);

    const auto ok = make(1, 1, 1.0);
    CHECK_THROWS_AS(RobustModel(ok, Prior{}, 0.0, 1.0), ConfigError);
    CHECK_THROWS_AS(RobustModel(ok, Prior{}, kInf, 1.0), ConfigError);
    CHECK_THROWS_AS(RobustModel(ok, Prior{}, 4.0, -1.0), ConfigError);
    CHECK_THROWS_AS(RobustModel(ok, Prior{}, 1e200, 1e100), ConfigError);  // c = νs² overflows
    CHECK_THROWS_AS(RobustModel(ok, Prior{PriorKind::gaussian, 0.0}, 4.0, 1.0), ConfigError);
    const RobustModel model(ok, Prior{}, 4.0, 1.0);
    CHECK_THROWS_AS(RobustBound::untuned(model, 1e101, Vec::Zero(3)), ConfigError);
    CHECK_THROWS_AS(RobustBound::untuned(model, -1.0, Vec::Zero(3)), ConfigError);
    CHECK_THROWS_AS(RobustBound::untuned(model, 1.0, Vec::Zero(3), -0.1), ConfigError);
    CHECK_THROWS_AS(RobustBound::untuned(model, 1.0, Vec::Zero(2)), ConfigError);
  }

  TEST_CASE("synth_robust: determinism, thread independence, the documented recipe" *
            doctest::test_suite("threaded")) {
    const std::size_t n = 150000, d = 17;  // 3 blocks of 65536 rows; 16 features, 2 factors
    const Dataset a = synth_robust(n, d, 42);
    REQUIRE(a.n() == n);
    REQUIRE(a.d() == d);
    const Dataset b = synth_robust(n, d, 42);
    Dataset serial;
    {
      tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
      serial = synth_robust(n, d, 42);
    }
    const std::size_t bytes = n * a.stride() * sizeof(double);
    CHECK(std::memcmp(a.data(), b.data(), bytes) == 0);
    CHECK(std::memcmp(a.data(), serial.data(), bytes) == 0);
    CHECK(std::memcmp(a.y().data(), serial.y().data(), n * sizeof(double)) == 0);
    CHECK(std::memcmp(a.data(), synth_robust(n, d, 43).data(), bytes) != 0);

    const SynthRobustParams p = synth_robust_params(d, 42);
    REQUIRE(p.theta.size() == d);
    REQUIRE(p.factors == 2);
    // Features: mean 0, variance 1, the factor model's correlation; the bias column is 1.
    std::vector<double> sum(d, 0.0), sq(d, 0.0);
    double cross = 0.0, tail = 0.0;
    bool bias_ok = true;
    for (std::size_t i = 0; i < n; ++i) {
      const double* x = a.row(i);
      double m = 0.0;
      for (std::size_t j = 0; j < d; ++j) {
        sum[j] += x[j];
        sq[j] += x[j] * x[j];
        m += x[j] * p.theta[j];
      }
      cross += x[0] * x[1];
      bias_ok = bias_ok && x[d - 1] == 1.0;
      tail += std::fabs(a.y()[i] - m) > 3.0 ? 1.0 : 0.0;
    }
    CHECK(bias_ok);
    for (std::size_t j = 0; j + 1 < d; ++j) {
      CAPTURE(j);
      CHECK(std::fabs(sum[j] / n) < 0.02);
      CHECK(std::fabs(sq[j] / n - 1.0) < 0.03);
    }
    double b00 = 1.0, b11 = 1.0, b01 = 0.0;
    for (std::size_t k = 0; k < p.factors; ++k) {
      const double l0 = p.loadings[k], l1 = p.loadings[p.factors + k];
      b00 += l0 * l0, b11 += l1 * l1, b01 += l0 * l1;
    }
    CHECK(std::fabs(cross / n - b01 / std::sqrt(b00 * b11)) < 0.02);
    // Student-t(4) noise: P(|ε| > 3) = 0.039942 (a Gaussian's would be 0.0027).
    const double pt = 0.039942;
    CHECK(std::fabs(tail / n - pt) < 5.0 * std::sqrt(pt * (1 - pt) / n));
    // The noise scale multiplies the noise and nothing else (same draws).
    const Dataset s2 = synth_robust(n, d, 42, 4.0, 2.0);
    CHECK(std::memcmp(a.data(), s2.data(), bytes) == 0);
    bool scaled = true;
    for (std::size_t i = 0; i < n; i += 97) {
      double m = 0.0;
      for (std::size_t j = 0; j < d; ++j) m += a.row(i)[j] * p.theta[j];
      scaled = scaled && std::fabs((s2.y()[i] - m) - 2.0 * (a.y()[i] - m)) <=
                             1e-12 * (1.0 + std::fabs(s2.y()[i]) + std::fabs(m));
    }
    CHECK(scaled);
    // The paper's shape: 57 columns, sparse weights.
    const SynthRobustParams opv = synth_robust_params(57, 1);
    std::size_t nonzero = 0;
    for (double t : opv.theta) nonzero += t != 0.0;
    CHECK(nonzero > 3);
    CHECK(nonzero < 25);
    CHECK(opv.factors == 7);
    // Bias only: d = 1 has no factors.
    const Dataset one = synth_robust(10, 1, 5, 2.5, 0.5);
    CHECK(one.row(9)[0] == 1.0);
    CHECK_THROWS_AS((void)synth_robust(0, 3, 1), ConfigError);
    CHECK_THROWS_AS((void)synth_robust(3, 0, 1), ConfigError);
    CHECK_THROWS_AS((void)synth_robust(3, 3, 1, 0.0), ConfigError);
    CHECK_THROWS_AS((void)synth_robust(3, 3, 1, 4.0, -1.0), ConfigError);
    CHECK_THROWS_AS((void)synth_robust(3, 3, 1, std::numeric_limits<double>::quiet_NaN()),
                    ConfigError);
  }
}

TEST_SUITE("statistical") {
  TEST_CASE(
      "robust: FlyMC (both bounds, both z-updaters) and regular MCMC match the exact posterior") {
    // D = 2 (a feature and a bias), every 10th response an outlier, the paper's Laplace prior.
    const auto ds = test::robust_data(300, 2, 7, 1.5, 10, 20.0);
    RunConfig base = flymc::test::fixed_config();
    base.model = ModelKind::robust;
    base.prior = "laplace";
    const RobustModel model(ds, base);
    const MapResult map = model.find_map();
    const test::Moments exact = test::posterior_quadrature(model, map);

    struct Case {
      const char* name;
      Algo algo;
      BoundTuning bound;
      ZUpdate z;
      KernelKind kernel;
      long iters;
    };
    const Case cases[] = {
        {"regular slice", Algo::full, BoundTuning::map, ZUpdate::implicit, KernelKind::slice,
         20000},
        {"regular rwmh", Algo::full, BoundTuning::map, ZUpdate::implicit, KernelKind::rwmh, 40000},
        {"flymc map implicit slice", Algo::flymc, BoundTuning::map, ZUpdate::implicit,
         KernelKind::slice, 30000},
        {"flymc map explicit slice", Algo::flymc, BoundTuning::map, ZUpdate::explicit_,
         KernelKind::slice, 30000},
        {"flymc untuned implicit slice", Algo::flymc, BoundTuning::untuned, ZUpdate::implicit,
         KernelKind::slice, 30000},
        {"flymc untuned explicit slice", Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_,
         KernelKind::slice, 30000},
        {"flymc map implicit rwmh", Algo::flymc, BoundTuning::map, ZUpdate::implicit,
         KernelKind::rwmh, 80000},
        {"flymc untuned explicit rwmh", Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_,
         KernelKind::rwmh, 200000},
    };
    for (const Case& k : cases) {
      CAPTURE(k.name);
      RunConfig cfg = base;
      cfg.algo = k.algo;
      cfg.bound = k.bound;
      cfg.z = k.z;
      cfg.kernel = k.kernel;
      cfg.q_dark_to_bright = 0.05;
      cfg.resample_fraction = 0.05;
      cfg.chains = 2;
      cfg.warmup = 2000;
      cfg.iters = k.iters;
      cfg.seed = 2025;
      cfg.init = Init::prior;
      const RunResult r = run(cfg, ds);
      CHECK(r.bound_violations() == 0);
      CHECK(r.nonfinite() == 0);
      for (std::size_t j = 0; j < 2; ++j) {
        CAPTURE(j);
        const test::ExactCheck c = test::against_exact(r.coordinate(j), exact.mean[j], exact.sd[j]);
        CHECK(c.mean_z < 4.5);
        CHECK(c.sd_z < 4.5);
        CHECK(c.mcse_in_sd < 0.05);  // precise enough for the comparison to mean something
      }
    }
  }
}
