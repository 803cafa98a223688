// Numerical robustness of the samplers on hostile logistic data: margins |x·θ| up to 1e4,
// features up to 1e6 in magnitude, perfectly separable data, duplicated rows, an all-zero feature
// and a single class. Every sampler (regular MCMC; FlyMC with both bounds and both z-updates) must
// keep every draw and lp finite, count no bound violation and no non-finite proposal, and the MAP
// search must converge (Newton decrement ~0 at θ_MAP). Features beyond 1e100 in magnitude (or not
// finite) are refused up front: sums of x² would overflow.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

struct Scenario {
  std::string name;
  std::shared_ptr<const Dataset> data;
};

/// n × d data; row(i, x) fills x (d entries) and returns the label.
template <class Row>
std::shared_ptr<const Dataset> make(std::size_t n, std::size_t d, Row row) {
  auto ds = std::make_shared<Dataset>(n, d, "robustness");
  for (std::size_t i = 0; i < n; ++i) ds->mutable_y()[i] = row(i, ds->mutable_row(i));
  return ds;
}

double sign_label(double a) { return a >= 0.0 ? 1.0 : -1.0; }

std::vector<Scenario> scenarios() {
  std::vector<Scenario> out;
  {  // Noisy labels plus 20 far-away, correctly labelled rows: margins ~1e4 at θ_MAP.
    Rng rng(11, 0);
    out.push_back({"margins up to 1e4", make(400, 3, [&](std::size_t i, double* x) {
                     const double s = i % 20 == 0 ? 4000.0 : 1.0;
                     x[0] = s * rng.normal();
                     x[1] = s * rng.normal();
                     x[2] = 1.0;
                     const double a = 2.0 * x[0] - 1.5 * x[1] + 0.3;
                     if (s > 1.0) return sign_label(a);
                     return rng.uniform() < 1.0 / (1.0 + std::exp(-a)) ? 1.0 : -1.0;
                   })});
  }
  {  // Features of magnitude up to 1e6 next to features of magnitude 1.
    Rng rng(12, 0);
    out.push_back({"features up to 1e6", make(300, 3, [&](std::size_t, double* x) {
                     x[0] = 1e6 * rng.normal();
                     x[1] = rng.normal();
                     x[2] = 1.0;
                     const double a = 1e-6 * x[0] + x[1] - 0.5;
                     return rng.uniform() < 1.0 / (1.0 + std::exp(-a)) ? 1.0 : -1.0;
                   })});
  }
  {  // Perfectly separable with a wide gap: the likelihood alone has no maximum.
    Rng rng(13, 0);
    out.push_back({"perfectly separable", make(300, 3, [&](std::size_t, double* x) {
                     x[0] = rng.normal();
                     x[1] = rng.normal();
                     x[2] = 1.0;
                     const double a = x[0] + x[1];
                     x[0] += a >= 0.0 ? 3.0 : -3.0;  // push the classes apart
                     return sign_label(a);
                   })});
  }
  {  // 12 distinct rows, each repeated 25 times, one of them with both labels; an all-zero feature.
    Rng rng(14, 0);
    std::vector<double> base(12 * 2);
    for (double& v : base) v = 3.0 * rng.normal();
    out.push_back({"duplicated rows, zero feature", make(300, 4, [&](std::size_t i, double* x) {
                     const std::size_t k = i % 12;
                     x[0] = base[2 * k];
                     x[1] = base[2 * k + 1];
                     x[2] = 0.0;
                     x[3] = 1.0;
                     if (k == 0) return i % 24 == 0 ? 1.0 : -1.0;
                     return sign_label(x[0] - x[1]);
                   })});
  }
  {  // One class only: θ_MAP is pushed as far as the prior lets it.
    Rng rng(15, 0);
    out.push_back({"single class, large features", make(200, 2, [&](std::size_t, double* x) {
                     x[0] = 1e3 * rng.normal();
                     x[1] = 1.0;
                     return 1.0;
                   })});
  }
  return out;
}

struct Sampler {
  const char* name;
  Algo algo;
  BoundTuning bound;
  ZUpdate z;
};
constexpr Sampler kSetups[] = {
    {"full", Algo::full, BoundTuning::map, ZUpdate::implicit},
    {"flymc map implicit", Algo::flymc, BoundTuning::map, ZUpdate::implicit},
    {"flymc map explicit", Algo::flymc, BoundTuning::map, ZUpdate::explicit_},
    {"flymc untuned implicit", Algo::flymc, BoundTuning::untuned, ZUpdate::implicit},
    {"flymc untuned explicit", Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_},
};

double max_margin(const Dataset& ds, const Vec& theta) {
  AlignedBuffer tp = aligned_zeros(ds.stride());
  for (std::size_t j = 0; j < ds.d(); ++j) tp[j] = theta[static_cast<Eigen::Index>(j)];
  double m = 0.0;
  for (std::size_t i = 0; i < ds.n(); ++i)
    m = std::max(m, std::fabs(kernels::dot(ds.row(i), tp.get(), ds.stride())));
  return m;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("MAP search converges on hostile data: finite θ_MAP, Newton decrement ~0") {
    for (const Scenario& s : scenarios()) {
      CAPTURE(s.name);
      LogisticModel model(s.data, 1.0);
      const MapResult map = model.find_map();
      CAPTURE(map.theta.transpose());
      CAPTURE(map.iterations);
      REQUIRE(map.theta.allFinite());
      REQUIRE(map.covariance.allFinite());
      CHECK(std::isfinite(map.log_post));
      CHECK(map.iterations < 100);
      CHECK((map.covariance.diagonal().array() > 0.0).all());
      // Scale-free convergence test: gᵀ H⁻¹ g at θ_MAP, with H⁻¹ the Laplace covariance.
      const Vec g = model.grad_log_post(map.theta);
      const double decrement = g.dot(map.covariance * g);
      CHECK(decrement < 1e-8);
      MESSAGE(s.name << ": max |x.theta_MAP| = " << max_margin(*s.data, map.theta)
                     << ", Newton iterations " << map.iterations);
    }
  }

  TEST_CASE("features too large for x² sums, or not finite, are a DataError naming row and field") {
    for (double bad : {1e160, -1e300, std::nan(""), std::numeric_limits<double>::infinity()}) {
      CAPTURE(bad);
      auto ds = std::make_shared<Dataset>(5000, 3, "mem");
      for (std::size_t i = 0; i < ds->n(); ++i) {
        ds->mutable_row(i)[0] = 1e100;  // the largest magnitude accepted
        ds->mutable_row(i)[1] = 1.0;
        ds->mutable_y()[i] = i % 2 == 0 ? 1.0 : -1.0;
      }
      ds->mutable_row(4321)[2] = bad;
      ds->mutable_row(4500)[1] = bad;
      std::string msg;
      try {
        LogisticModel model(ds, 1.0);
      } catch (const DataError& e) {
        msg = e.what();
      }
      CHECK(msg.find("mem: row 4322: field 4 (x3): feature ") == 0);
      ds->mutable_row(4321)[2] = 0.0;
      ds->mutable_row(4500)[1] = 0.0;
      CHECK_NOTHROW(LogisticModel(ds, 1.0));
    }
  }

  TEST_CASE("the JJ bound stays below the likelihood on hostile data, at and around θ_MAP") {
    for (const Scenario& s : scenarios()) {
      CAPTURE(s.name);
      const Dataset& ds = *s.data;
      LogisticModel model(s.data, 1.0);
      const MapResult map = model.find_map();
      const auto tuned = LogisticBound::map_tuned(model, map.theta);
      const auto untuned = LogisticBound::untuned(model, 1.5, map.theta);
      std::vector<Index> idx(ds.n());
      for (std::size_t i = 0; i < ds.n(); ++i) idx[i] = static_cast<Index>(i);
      Rng rng(5, 0);
      for (int rep = 0; rep < 20; ++rep) {
        AlignedBuffer tp = aligned_zeros(ds.stride());
        for (std::size_t j = 0; j < ds.d(); ++j) {
          const auto jj = static_cast<Eigen::Index>(j);
          // rep 0 is θ_MAP itself (the tuned bound is tight there: Δ ~ 0 for every datum)
          tp[j] = map.theta[jj] +
                  (rep == 0 ? 0.0 : 3.0 * std::sqrt(map.covariance(jj, jj)) * rng.normal());
        }
        std::vector<double> dots(ds.n()), delta(ds.n());
        for (std::size_t i = 0; i < ds.n(); ++i)
          dots[i] = kernels::dot(ds.row(i), tp.get(), ds.stride());
        for (const LogisticBound* b : {&tuned, &untuned}) {
          CHECK(b->deltas(idx.data(), dots.data(), ds.n(), delta.data()).violations == 0);
          for (double v : delta) REQUIRE(std::isfinite(v));
        }
      }
    }
  }

  TEST_CASE("every sampler keeps draws and lp finite on hostile data, without bound violations" *
            doctest::test_suite("threaded")) {
    for (const Scenario& s : scenarios()) {
      for (const Sampler& k : kSetups) {
        CAPTURE(s.name);
        CAPTURE(k.name);
        RunConfig cfg = flymc::test::fixed_config();
        cfg.algo = k.algo;
        cfg.bound = k.bound;
        cfg.z = k.z;
        cfg.chains = 2;
        cfg.warmup = 150;
        cfg.iters = 250;
        cfg.seed = 3;
        cfg.q_dark_to_bright = 0.1;
        cfg.resample_fraction = 0.1;
        for (Init init : {Init::map, Init::prior}) {
          cfg.init = init;
          const RunResult r = run_logistic(cfg, s.data);
          CHECK(r.bound_violations() == 0);
          CHECK(r.nonfinite() == 0);
          for (const ChainResult& c : r.chains) {
            REQUIRE(c.draws.size() == c.kept * r.dim);
            std::size_t bad_draws = 0, bad_lp = 0;
            for (double v : c.draws) bad_draws += std::isfinite(v) ? 0 : 1;
            for (double v : c.lp) bad_lp += std::isfinite(v) ? 0 : 1;
            CHECK(bad_draws == 0);
            CHECK(bad_lp == 0);
            CHECK(std::isfinite(c.step_size));
            CHECK(c.step_size > 0.0);
            CHECK(std::isfinite(c.accept_rate));
          }
        }
      }
    }
  }
}
