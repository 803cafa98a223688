// The model contract (model.hpp), checked for every model by one templated suite, after the
// paper authors' model tests (firefly-monte-carlo): the bound is below the likelihood, the
// collapsed sum equals the per-datum sum, the MAP-tuned bound is tight at its anchor, and every
// gradient (full-data log-likelihood, collapsed bound, ∂Δ/∂ψ, FlyTarget's log p(θ | z)) agrees
// with central finite differences. A model joins the suite with a ModelFixture specialization.
//
// Tolerances: values are compared with a relative 1e-10 (sums of ~10² terms of size ~1 in double
// precision); central differences with step h = 1e-5 have truncation error O(h²·f''') ~ 1e-10
// and rounding error O(ε·|f|/h) ~ 1e-9 for |f| ~ 10², so gradients are compared at 1e-5
// relative to their scale — far below the error of a wrong term (a dropped factor 1/2 or sign
// changes them by O(1)).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/model.hpp"
#include "flymc/models/robust.hpp"
#include "flymc/models/softmax.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// How each model's test data and configuration are made.
template <class M>
struct ModelFixture;

template <>
struct ModelFixture<LogisticModel> {
  static std::shared_ptr<const Dataset> data() { return test::logistic_data(60, 4, 5, 1.5); }
  static RunConfig config() { return RunConfig{}; }
};

template <>
struct ModelFixture<SoftmaxModel> {
  // 80 rows, 3 features and a bias, K = 3 classes.
  static std::shared_ptr<const Dataset> data() { return test::softmax_data(80, 4, 3, 5, 1.5); }
  static RunConfig config() {
    RunConfig c = flymc::test::fixed_config();
    c.model = ModelKind::softmax;
    c.softmax_bound = SoftmaxBoundKind::bohning;
    return c;
  }
};

/// Softmax with the tight bound (per datum the tighter of Böhning's and the Jebara–Choromanska
/// curvatures; a distinct type for the type lists).
struct SoftmaxTightModel : SoftmaxModel {
  using SoftmaxModel::SoftmaxModel;
};
template <>
struct ModelFixture<SoftmaxTightModel> {
  static std::shared_ptr<const Dataset> data() { return ModelFixture<SoftmaxModel>::data(); }
  static RunConfig config() {
    RunConfig c = ModelFixture<SoftmaxModel>::config();
    c.softmax_bound = SoftmaxBoundKind::tight;
    return c;
  }
};

template <>
struct ModelFixture<RobustModel> {
  // Every 10th response shifted by 30: outliers whose residuals sit far out in the Student-t's
  // tails, where its curvature changes sign.
  static std::shared_ptr<const Dataset> data() {
    return test::robust_data(60, 4, 5, 1.5, 10, 30.0);
  }
  static RunConfig config() {
    RunConfig cfg = flymc::test::fixed_config();
    cfg.model = ModelKind::robust;
    return cfg;
  }
};

/// Robust regression with the paper's Laplace prior (a distinct type for the type lists).
struct RobustLaplaceModel : RobustModel {
  using RobustModel::RobustModel;
};
template <>
struct ModelFixture<RobustLaplaceModel> {
  static std::shared_ptr<const Dataset> data() { return ModelFixture<RobustModel>::data(); }
  static RunConfig config() {
    RunConfig cfg = ModelFixture<RobustModel>::config();
    cfg.prior = "laplace";
    cfg.student_nu = 3.0;
    cfg.noise_scale = 0.7;
    cfg.untuned_xi = 0.5;
    return cfg;
  }
};

/// A point near θ_MAP: θ_MAP + scale·(Laplace sd)·η.
Vec near_map(const MapResult& map, Rng& rng, double scale) {
  Vec t = map.theta;
  for (Eigen::Index j = 0; j < t.size(); ++j)
    t[j] += scale * std::sqrt(map.covariance(j, j)) * rng.normal();
  return t;
}

template <class M>
AlignedBuffer padded(const M& model, const Vec& theta) {
  const ParamLayout lay = model.layout();
  AlignedBuffer p = aligned_zeros(lay.padded());
  lay.pad(theta.data(), p.get());
  return p;
}

/// K predictors of every datum at padded θ.
template <class M>
std::vector<double> all_predictors(const M& model, const double* theta_pad) {
  const ParamLayout lay = model.layout();
  const Dataset& ds = model.data();
  std::vector<double> out(ds.n() * lay.k);
  packed_predictors(lay.k, ds.data(), ds.n(), ds.stride(), theta_pad, out.data());
  return out;
}

std::vector<Index> all_indices(std::size_t n) {
  std::vector<Index> idx(n);
  for (std::size_t i = 0; i < n; ++i) idx[i] = static_cast<Index>(i);
  return idx;
}

/// Central-difference gradient of f at dense θ.
template <class F>
Vec numeric_gradient(F&& f, const Vec& theta, double h = 1e-5) {
  Vec g(theta.size());
  for (Eigen::Index j = 0; j < theta.size(); ++j) {
    Vec a = theta, b = theta;
    a[j] += h;
    b[j] -= h;
    g[j] = (f(a) - f(b)) / (2.0 * h);
  }
  return g;
}

void check_gradient(const Vec& analytic, const Vec& numeric) {
  const double scale = std::max(1.0, numeric.cwiseAbs().maxCoeff());
  for (Eigen::Index j = 0; j < analytic.size(); ++j) {
    CAPTURE(j);
    CHECK(std::fabs(analytic[j] - numeric[j]) <= 1e-5 * scale);
  }
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE_TEMPLATE("model contract: bound below likelihood, collapsed sum, tightness", M,
                     LogisticModel, SoftmaxModel, SoftmaxTightModel, RobustModel,
                     RobustLaplaceModel) {
    const auto ds = ModelFixture<M>::data();
    for (BoundTuning tuning : {BoundTuning::map, BoundTuning::untuned}) {
      for (double slack : {0.0, 0.01}) {
        CAPTURE(static_cast<int>(tuning));
        CAPTURE(slack);
        RunConfig cfg = ModelFixture<M>::config();
        cfg.bound = tuning;
        cfg.bound_slack = slack;
        const M model(ds, cfg);
        const MapResult map = model.find_map();
        const auto bound = M::Bound::make(model, cfg, map);
        const std::size_t n = model.num_data(), K = model.layout().k;
        const auto idx = all_indices(n);
        AlignedBuffer scratch = aligned_zeros(bound.scratch_size());
        Rng rng(17, 3);
        for (int trial = 0; trial < 5; ++trial) {
          // At the MAP (where a MAP-tuned bound is tight), then at points up to 5 sd away.
          const Vec theta = trial == 0 ? map.theta : near_map(map, rng, 1.0 + trial);
          AlignedBuffer tp = padded(model, theta);
          const auto preds = all_predictors(model, tp.get());
          std::vector<double> delta(n);
          const BoundCheck chk = bound.deltas(idx.data(), preds.data(), n, delta.data());
          CHECK(chk.violations == 0);
          double sum_bound = 0.0, sum_lik = 0.0;
          for (std::size_t i = 0; i < n; ++i) {
            const double ll = bound.log_lik(static_cast<Index>(i), preds.data() + i * K);
            const double lb = bound.log_bound(static_cast<Index>(i), preds.data() + i * K);
            CHECK(lb <= ll + 1e-12 * (1.0 + std::fabs(ll)));
            CHECK(delta[i] >= 0.0);
            CHECK(delta[i] == doctest::Approx(std::max(0.0, ll - lb)).epsilon(1e-9).scale(1.0));
            if (trial == 0 && tuning == BoundTuning::map)
              CHECK(ll - lb == doctest::Approx(slack).epsilon(1e-9).scale(1.0));
            sum_bound += lb;
            sum_lik += ll;
          }
          // Collapsed statistics = per-datum sum; model log-likelihood = per-datum sum.
          CHECK(bound.log_bound_sum(tp.get(), scratch.get(), nullptr) ==
                doctest::Approx(sum_bound).epsilon(1e-10));
          CHECK(model.log_lik(tp.get()) == doctest::Approx(sum_lik).epsilon(1e-10));
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("model contract: gradients agree with finite differences", M, LogisticModel,
                     SoftmaxModel, SoftmaxTightModel, RobustModel, RobustLaplaceModel) {
    const auto ds = ModelFixture<M>::data();
    RunConfig cfg = ModelFixture<M>::config();
    cfg.bound_slack = 0.01;
    const M model(ds, cfg);
    const MapResult map = model.find_map();
    const auto bound = M::Bound::make(model, cfg, map);
    const ParamLayout lay = model.layout();
    const std::size_t p = lay.dim(), n = model.num_data(), K = lay.k;
    AlignedBuffer scratch = aligned_zeros(bound.scratch_size());
    Rng rng(23, 1);
    const Vec theta = near_map(map, rng, 2.0);

    // MAP: the posterior gradient vanishes there.
    {
      AlignedBuffer tp = padded(model, map.theta);
      AlignedBuffer gp = aligned_zeros(lay.padded());
      model.log_lik_grad(tp.get(), gp.get());
      std::vector<double> g(p);
      lay.unpad(gp.get(), g.data());
      model.prior().add_gradient(map.theta.data(), p, g.data());
      for (double v : g) CHECK(std::fabs(v) < 1e-6);
    }
    // Full-data log-likelihood.
    {
      auto f = [&](const Vec& t) { return model.log_lik(padded(model, t).get()); };
      AlignedBuffer tp = padded(model, theta);
      AlignedBuffer gp = aligned_zeros(lay.padded());
      CHECK(model.log_lik_grad(tp.get(), gp.get()) == doctest::Approx(f(theta)).epsilon(1e-12));
      Vec g(static_cast<Eigen::Index>(p));
      lay.unpad(gp.get(), g.data());
      check_gradient(g, numeric_gradient(f, theta));
      for (std::size_t j = 0; j < lay.padded(); ++j)
        if (j % lay.stride >= lay.d) CHECK(gp[j] == 0.0);  // padding stays zero
    }
    // Collapsed bound.
    {
      auto f = [&](const Vec& t) {
        return bound.log_bound_sum(padded(model, t).get(), scratch.get(), nullptr);
      };
      AlignedBuffer tp = padded(model, theta);
      AlignedBuffer gp = aligned_zeros(lay.padded());
      bound.log_bound_sum(tp.get(), scratch.get(), gp.get());
      Vec g(static_cast<Eigen::Index>(p));
      lay.unpad(gp.get(), g.data());
      check_gradient(g, numeric_gradient(f, theta));
    }
    // ∂Δ_n/∂ψ_n per datum, by differences in ψ.
    {
      AlignedBuffer tp = padded(model, theta);
      const auto preds = all_predictors(model, tp.get());
      const auto idx = all_indices(n);
      std::vector<double> delta(n), dpsi(n * K);
      bound.delta_grads(idx.data(), preds.data(), n, delta.data(), dpsi.data());
      const double h = 1e-6;
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < K; ++k) {
          std::vector<double> a(preds.begin() + i * K, preds.begin() + (i + 1) * K), b = a;
          a[k] += h;
          b[k] -= h;
          const auto id = static_cast<Index>(i);
          const double fa = bound.log_lik(id, a.data()) - bound.log_bound(id, a.data());
          const double fb = bound.log_lik(id, b.data()) - bound.log_bound(id, b.data());
          CAPTURE(i);
          CHECK(dpsi[i * K + k] == doctest::Approx((fa - fb) / (2.0 * h)).epsilon(1e-6).scale(1));
        }
      }
    }
    // FlyMC's log p(θ | z) with a few bright data, and its gradient.
    {
      BrightSet bright(model.data());
      FlyTarget<M> target(model, bound, bright);
      for (Index i = 0; i < n; i += 3) bright.brighten(i, 0.0);
      Counters c;
      auto f = [&](const Vec& t) { return target.eval(t.data(), c); };
      Vec g(static_cast<Eigen::Index>(p));
      const double lp = target.eval_grad(theta.data(), g.data(), c);
      CHECK(lp == doctest::Approx(f(theta)).epsilon(1e-12));
      check_gradient(g, numeric_gradient(f, theta));
      // and the regular target
      FullTarget<M> full(model);
      auto ff = [&](const Vec& t) { return full.eval(t.data(), c); };
      CHECK(full.eval_grad(theta.data(), g.data(), c) == doctest::Approx(ff(theta)).epsilon(1e-12));
      check_gradient(g, numeric_gradient(ff, theta));
    }
  }
}
