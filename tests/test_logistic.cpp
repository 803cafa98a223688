// Model-contract tests for logistic regression and its Jaakkola–Jordan bound (docs/math.md §2.1).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "flymc/kernels/kernels.hpp"
#include "flymc/models/logistic.hpp"
#include "models/newton.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {
AlignedBuffer padded(const Vec& v, std::size_t stride) {
  AlignedBuffer p = aligned_zeros(stride);
  for (Eigen::Index j = 0; j < v.size(); ++j) p[static_cast<std::size_t>(j)] = v[j];
  return p;
}
double dot_row(const Dataset& ds, std::size_t n, const double* th) {
  return kernels::dot(ds.row(n), th, ds.stride());
}
}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("JJ bound never exceeds the likelihood and is tight at ±xi, up to |a| = 1e4") {
    auto ds = test::logistic_data(200, 4, 1);
    LogisticModel model(ds, 1.0);
    Rng rng(7, 0);
    for (double xi : {0.0, 1e-6, 0.3, 1.5, 7.0, 40.0, 1e3}) {
      auto bound = LogisticBound::untuned(model, xi, Vec::Zero(4));
      for (int k = 0; k < 20000; ++k) {
        // margins spread log-uniformly up to 1e4 in magnitude
        const double mag = std::pow(10.0, -3.0 + 7.0 * rng.uniform());
        const double dot = (rng.uniform() < 0.5 ? -1.0 : 1.0) * mag;
        const Index n = static_cast<Index>(rng.below(200));
        const double lb = bound.log_bound(n, dot), ll = bound.log_lik(n, dot);
        REQUIRE(std::isfinite(lb));
        REQUIRE(std::isfinite(ll));
        CHECK(lb <= ll + 1e-12 * (1.0 + std::fabs(ll)));
      }
      // tight at a = ±xi (a = t·dot, so dot = ±xi·t)
      for (Index n = 0; n < 10; ++n) {
        for (double s : {-1.0, 1.0}) {
          const double dot = s * xi * ds->y()[n];
          CHECK(bound.log_bound(n, dot) ==
                doctest::Approx(bound.log_lik(n, dot)).epsilon(1e-12).scale(1.0));
        }
      }
    }
  }

  TEST_CASE(
      "collapsed bound sum equals the per-datum sum, and its gradient matches finite differences") {
    auto ds = test::logistic_data(3000, 7, 2);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    for (int tuned = 0; tuned < 2; ++tuned) {
      for (double slack : {0.0, 0.01}) {
        auto bound = tuned ? LogisticBound::map_tuned(model, map.theta, slack)
                           : LogisticBound::untuned(model, 1.5, map.theta, slack);
        AlignedBuffer scratch = aligned_zeros(2 * ds->stride());
        Rng rng(3, static_cast<std::uint64_t>(tuned));
        for (int rep = 0; rep < 5; ++rep) {
          Vec th = map.theta;
          for (Eigen::Index j = 0; j < th.size(); ++j) th[j] += 0.5 * rng.normal();
          AlignedBuffer tp = padded(th, ds->stride());
          long double direct = 0.0L;
          for (std::size_t n = 0; n < ds->n(); ++n)
            direct += bound.log_bound(static_cast<Index>(n), dot_row(*ds, n, tp.get()));
          std::vector<double> grad(7);
          const double collapsed = bound.log_bound_sum(tp.get(), scratch.get(), grad.data());
          CHECK(collapsed == doctest::Approx(static_cast<double>(direct)).epsilon(1e-11));
          for (std::size_t j = 0; j < 7; ++j) {
            const double h = 1e-5;
            AlignedBuffer tpp = padded(th, ds->stride()), tpm = padded(th, ds->stride());
            tpp[j] += h;
            tpm[j] -= h;
            const double fd = (bound.log_bound_sum(tpp.get(), scratch.get()) -
                               bound.log_bound_sum(tpm.get(), scratch.get())) /
                              (2 * h);
            CHECK(grad[j] == doctest::Approx(fd).epsilon(1e-6));
          }
        }
      }
    }
  }

  TEST_CASE("MAP-tuned bound is tight at theta_MAP: every Delta_n is ~0 there") {
    auto ds = test::logistic_data(2000, 5, 3);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    auto bound = LogisticBound::map_tuned(model, map.theta);
    AlignedBuffer tp = padded(map.theta, ds->stride());
    for (Index n = 0; n < ds->n(); ++n) {
      const double dot = dot_row(*ds, n, tp.get());
      CHECK(bound.log_lik(n, dot) - bound.log_bound(n, dot) ==
            doctest::Approx(0.0).scale(1.0).epsilon(1e-12));
    }
  }

  TEST_CASE("MAP: gradient vanishes and matches finite differences of the log posterior") {
    auto ds = test::logistic_data(5000, 6, 4);
    LogisticModel model(ds, 2.0);
    const MapResult map = model.find_map();
    CHECK(map.iterations < 30);
    const Vec g = model.grad_log_post(map.theta);
    CHECK(g.norm() < 1e-6);
    Vec th = map.theta + Vec::Constant(6, 0.1);
    const Vec g2 = model.grad_log_post(th);
    for (Eigen::Index j = 0; j < 6; ++j) {
      Vec tp = th, tm = th;
      const double h = 1e-5;
      tp[j] += h;
      tm[j] -= h;
      AlignedBuffer pp = padded(tp, ds->stride()), pm = padded(tm, ds->stride());
      const double fd = ((model.log_lik(pp.get()) + model.log_prior(tp.data())) -
                         (model.log_lik(pm.get()) + model.log_prior(tm.data()))) /
                        (2 * h);
      CHECK(g2[j] == doctest::Approx(fd).epsilon(1e-6));
    }
  }

  TEST_CASE("newton_move: a rise below the objective's rounding ends the search at once") {
    // Replays the MAP search on 10^7 synthetic rows: |f| ~ 10^7, and a Newton step predicting a
    // rise of ~1e-9 failed the Armijo test by rounding, then was halved down to 1e-12 of itself,
    // one data pass per halving, before the search gave up. Here every trial point reads 3e-9
    // lower than its true value, far above the predicted rise and far below 1e-12·|f|.
    const flymc::Vec theta0 = flymc::Vec::Constant(1, 3e-5);
    int calls = 0;
    auto objective = [&](const flymc::Vec& th) {
      ++calls;
      return 1e7 - 0.5 * th.squaredNorm() - (th == theta0 ? 0.0 : 3e-9);
    };
    flymc::Vec theta = theta0;
    double f = objective(theta);
    const flymc::Vec g = -theta, step = -theta;  // the gradient, and H⁻¹g with H = I
    REQUIRE(g.dot(step) > 2.0 * 1e-10);          // above the convergence tolerance
    const auto move = flymc::detail::newton_move(objective, theta, f, g, step, 1e-10);
    CHECK(move == flymc::detail::NewtonMove::converged);
    CHECK(calls == 2);       // f at θ0, then the full step only
    CHECK(theta[0] == 0.0);  // the step is taken, as at convergence
    // A genuine failure, a rise far above the rounding that the step misses, still halves.
    calls = 0;
    auto steep = [&](const flymc::Vec& th) {
      ++calls;
      return -th.squaredNorm() * (th[0] > 0.0 ? 1.0 : 1e6);
    };
    theta = flymc::Vec::Constant(1, 1.0);
    f = steep(theta);
    const flymc::Vec g2 = flymc::Vec::Constant(1, -2.0), step2 = flymc::Vec::Constant(1, -3.0);
    CHECK(flymc::detail::newton_move(steep, theta, f, g2, step2, 1e-10) ==
          flymc::detail::NewtonMove::stepped);
    CHECK(calls > 2);
    CHECK(theta[0] > 0.0);
  }

  TEST_CASE("MAP on tall data: from a subsample's MAP, gradient passes and one Hessian pass") {
    // 400,000 rows: the search first finds the MAP of every 4th row, its likelihood weighted by
    // 4, then finishes on all rows with steps that keep the subsample's curvature (a gradient
    // pass each) and forms all the rows' Hessian once, at the end. One row fewer is below the
    // threshold: Newton from θ = 0, a Hessian each pass.
    auto ds = test::logistic_data(400000, 8, 11);
    LogisticModel model(ds, 2.0);
    const MapResult map = model.find_map();
    std::vector<Index> most(ds->n() - 1);
    for (std::size_t i = 0; i < most.size(); ++i) most[i] = static_cast<Index>(i);
    const MapResult from_zero = LogisticModel(subset_rows(*ds, most), 2.0).find_map();
    CHECK(from_zero.passes >= 6);
    CHECK(from_zero.curvature_passes >= 6);
    const Vec g = model.grad_log_post(map.theta);
    CHECK(g.dot(map.covariance * g) < 1e-12);  // the Newton decrement: converged
    CHECK(map.curvature_passes == 1);
    CHECK(map.passes >= 2);
    CHECK(map.passes <= 10);
    // The likelihood's curvature at θ_MAP, kept for SMH's expansion there, is the covariance's.
    Mat prec = map.lik_curvature;
    prec.diagonal().array() += 0.25;
    CHECK((map.covariance * prec - Mat::Identity(8, 8)).cwiseAbs().maxCoeff() < 1e-10);
    // The covariance is the inverse negative Hessian at θ_MAP (rows' weights σ(a)σ(−a)).
    Mat h = Mat::Zero(8, 8);
    for (std::size_t n = 0; n < ds->n(); n += 13) {
      const Eigen::Map<const Vec> x(ds->row(n), 8);
      const double a = x.dot(map.theta);
      const double w = 1.0 / ((1.0 + std::exp(a)) * (1.0 + std::exp(-a)));
      h += 13.0 * w * x * x.transpose();
    }
    h.diagonal().array() += 0.25;
    const Mat rel = map.covariance * h - Mat::Identity(8, 8);
    CHECK(rel.cwiseAbs().maxCoeff() < 0.05);  // every 13th row: an 8% sample of the Hessian
  }
}
