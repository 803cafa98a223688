// The set-up of a run (flymc/mcmc/setup.hpp): the bound, the automatic slack ε and z-proposal
// rate q, the per-datum rates, the initial metric and step size, each checked against its
// definition (docs/math.md §1.2, §1.5, §3).
#include <doctest/doctest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "flymc/core/errors.hpp"
#include "flymc/mcmc/fly/theta/common.hpp"
#include "flymc/mcmc/setup.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/softmax.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// Σ_n (1 − m_n): the expected bright count under the Laplace draws, for the bound of `setup`.
template <class M>
double expected_bright(const M& model, const RunSetup<M>& setup, const MapResult& map,
                       std::uint64_t seed) {
  const std::vector<double> dark =
      mean_dark_probability(*setup.bound, model.data(), model.layout(), laplace_draws(map, seed));
  double b = 0.0;
  for (double m : dark) b += 1.0 - m;
  return b;
}

RunConfig flymc_config() {
  RunConfig cfg = flymc::test::fixed_config();
  cfg.seed = 11;
  return cfg;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("set-up: regular MCMC builds no bound and reports the q an implicit update would use") {
    const auto ds = test::logistic_data(500, 4, 3);
    RunConfig cfg = flymc_config();
    cfg.algo = Algo::full;
    const LogisticModel model(ds, cfg.prior_sd);
    const MapResult map = model.find_map();
    const RunSetup<LogisticModel> s = prepare_run(model, cfg, map);
    CHECK(!s.bound);
    CHECK(!s.rates);
    CHECK(s.q_dark_to_bright == auto_q_dark_to_bright(0.0, ds->n()));
    CHECK(s.bound_slack == 0.0);
  }

  TEST_CASE("set-up: explicit slack and q are taken as given, with no Laplace estimates") {
    const auto ds = test::logistic_data(500, 4, 3);
    RunConfig cfg = flymc_config();
    cfg.bound_slack = 0.02;
    cfg.q_dark_to_bright = 0.2;
    const LogisticModel model(ds, cfg.prior_sd);
    const MapResult map = model.find_map();
    const RunSetup<LogisticModel> s = prepare_run(model, cfg, map);
    REQUIRE(s.bound);
    CHECK(s.bound_slack == 0.02);
    CHECK(s.q_dark_to_bright == 0.2);
    CHECK(!s.rates);
  }

  TEST_CASE("set-up: the automatic slack is a quarter of the expected bright fraction") {
    const auto ds = test::logistic_data(3000, 5, 4);
    RunConfig cfg = flymc_config();
    const LogisticModel model(ds, cfg.prior_sd);
    const MapResult map = model.find_map();
    RunConfig zero = cfg;
    zero.bound_slack = 0.0;
    const double b0 = expected_bright(model, prepare_run(model, zero, map), map, cfg.seed);
    const RunSetup<LogisticModel> s = prepare_run(model, cfg, map);  // automatic slack
    CHECK(b0 > 1.0);
    CHECK(s.bound_slack == 0.25 * b0 / static_cast<double>(ds->n()));
    // N <= 10,000: the automatic q stays at 0.01 whatever the bright count.
    CHECK(s.q_dark_to_bright == 0.01);
  }

  TEST_CASE("set-up: --slack-scale lowers each log B_n by alpha times its expected bright share") {
    const auto ds = test::logistic_data(3000, 5, 4);
    RunConfig cfg = flymc_config();
    cfg.bound_slack = 0.001;
    const LogisticModel model(ds, cfg.prior_sd);
    const MapResult map = model.find_map();
    const RunSetup<LogisticModel> plain = prepare_run(model, cfg, map);
    const std::vector<double> dark =
        mean_dark_probability(*plain.bound, *ds, model.layout(), laplace_draws(map, cfg.seed));
    cfg.slack_scale = 2.0;
    const RunSetup<LogisticModel> scaled = prepare_run(model, cfg, map);
    CHECK(scaled.bound_slack == 0.001);
    double moved = 0.0;
    for (Index n = 0; n < 3000; n += 7) {
      double dot = 0.0;
      for (Eigen::Index j = 0; j < 5; ++j) dot += ds->row(n)[j] * map.theta[j];
      const double drop = plain.bound->log_bound(n, dot) - scaled.bound->log_bound(n, dot);
      CHECK(drop == doctest::Approx(2.0 * (1.0 - dark[n])).epsilon(1e-12).scale(1e-14));
      moved += drop;
    }
    CHECK(moved > 0.0);
    // The collapsed sum moved by the same total: at any θ, Σ log B_n differs by Σ α·p̄_n.
    double total = 0.0;
    for (double m : dark) total += 2.0 * (1.0 - m);
    AlignedBuffer tp = aligned_zeros(ds->stride()), scratch = aligned_zeros(2 * ds->stride());
    for (Eigen::Index j = 0; j < 5; ++j) tp[static_cast<std::size_t>(j)] = map.theta[j] + 0.1;
    const double s0 = plain.bound->log_bound_sum(tp.get(), scratch.get());
    const double s1 = scaled.bound->log_bound_sum(tp.get(), scratch.get());
    CHECK(s0 - s1 == doctest::Approx(total).epsilon(1e-9));
    cfg.model = ModelKind::softmax;
    CHECK_THROWS_AS(cfg.validate(), ConfigError);
  }

  TEST_CASE("set-up: for tall data the automatic q keeps max(32, 4B) proposals per sweep") {
    const auto ds = test::logistic_data(40000, 3, 5);
    RunConfig cfg = flymc_config();
    cfg.bound_slack = 0.0;
    const LogisticModel model(ds, cfg.prior_sd);
    const MapResult map = model.find_map();
    const RunSetup<LogisticModel> s = prepare_run(model, cfg, map);
    const double b = expected_bright(model, s, map, cfg.seed);
    CHECK(s.q_dark_to_bright == auto_q_dark_to_bright(b, ds->n()));
    CHECK(s.q_dark_to_bright < 0.01);
    CHECK(s.q_dark_to_bright * static_cast<double>(ds->n()) >= 32.0 - 1e-9);
  }

  TEST_CASE("set-up: HMC and NUTS cap the automatic q at 0.1, the other kernels at 0.01") {
    // 2,000 rows and 20 features: max(32, 4B)/N lies between the two caps, so the trajectory
    // kernels get it and the others 0.01 (docs/math.md §1.2).
    const auto ds = test::logistic_data(2000, 20, 4);
    RunConfig cfg = flymc_config();
    const LogisticModel model(ds, cfg.prior_sd);
    const MapResult map = model.find_map();
    const double n = static_cast<double>(ds->n());
    for (KernelKind k : {KernelKind::hmc, KernelKind::nuts}) {
      cfg.kernel = k;
      const RunSetup<LogisticModel> s = prepare_run(model, cfg, map);
      const double b = expected_bright(model, s, map, cfg.seed);
      const double want = std::max(32.0, 4.0 * b) / n;
      REQUIRE(want > 0.01);
      REQUIRE(want < 0.1);
      CHECK(s.q_dark_to_bright == auto_q_dark_to_bright(b, ds->n(), 0.1));
      CHECK(s.q_dark_to_bright == doctest::Approx(want));
    }
    for (KernelKind k : {KernelKind::rwmh, KernelKind::mala, KernelKind::slice}) {
      cfg.kernel = k;
      CHECK(prepare_run(model, cfg, map).q_dark_to_bright == 0.01);
    }
    // Below N = 32/cap the cap itself, with no Laplace estimate needed.
    CHECK(auto_q_dark_to_bright(0.0, 300, auto_q_cap(KernelKind::nuts)) == 0.1);
    CHECK(auto_q_dark_to_bright(0.0, 300, auto_q_cap(KernelKind::mala)) == 0.01);
  }

  TEST_CASE("set-up: per-datum rates spend the uniform rate's proposals, floored at q/10") {
    const auto ds = test::logistic_data(4000, 4, 6);
    RunConfig cfg = flymc_config();
    cfg.q_per_datum = true;
    cfg.q_dark_to_bright = 0.05;
    const LogisticModel model(ds, cfg.prior_sd);
    const MapResult map = model.find_map();
    const RunSetup<LogisticModel> s = prepare_run(model, cfg, map);
    REQUIRE(s.rates);
    REQUIRE(s.rates->log_q.size() == ds->n());
    const std::vector<double> dark =
        mean_dark_probability(*s.bound, model.data(), model.layout(), laplace_draws(map, cfg.seed));
    double spend = 0.0, min_q = 1.0;
    for (std::size_t n = 0; n < ds->n(); ++n) {
      const double qn = std::exp(s.rates->log_q[n]);
      spend += qn * dark[n];  // proposals come from dark data (s.bound includes the slack)
      min_q = std::min(min_q, qn);
    }
    CHECK(spend == doctest::Approx(0.05 * static_cast<double>(ds->n())).epsilon(1e-6));
    CHECK(min_q >= 0.1 * 0.05 * (1.0 - 1e-12));
  }

  TEST_CASE("set-up: the same on 1 and 2 threads (softmax, automatic slack and q)") {
    const auto ds = test::softmax_data(12000, 4, 3, 7);
    RunConfig cfg = flymc_config();
    cfg.model = ModelKind::softmax;
    const SoftmaxModel model(ds, Prior{});
    const MapResult map = model.find_map();
    auto with_threads = [&](int t) {
      tbb::task_arena arena(t);
      return arena.execute([&] { return prepare_run(model, cfg, map); });
    };
    const RunSetup<SoftmaxModel> a = with_threads(1), b = with_threads(2);
    CHECK(a.bound_slack == b.bound_slack);
    CHECK(a.q_dark_to_bright == b.q_dark_to_bright);
    CHECK(a.bound_slack > 0.0);
  }

  TEST_CASE("set-up: initial step sizes follow the optimal scalings in the metric's units") {
    const auto ds = test::logistic_data(500, 4, 3);
    const LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    const double p = 4.0;
    RunConfig cfg = flymc::test::fixed_config();
    cfg.metric = Metric::diag;
    cfg.kernel = KernelKind::rwmh;
    CHECK(initial_step_size(cfg, map, 4) == doctest::Approx(2.38 / std::sqrt(p)));
    cfg.kernel = KernelKind::mala;
    CHECK(initial_step_size(cfg, map, 4) == doctest::Approx(1.65 * std::pow(p, -1.0 / 6.0)));
    cfg.kernel = KernelKind::hmc;
    CHECK(initial_step_size(cfg, map, 4) == doctest::Approx(std::pow(p, -0.25)));
    cfg.kernel = KernelKind::slice;
    CHECK(initial_step_size(cfg, map, 4) == doctest::Approx(2.0));
    // The identity metric scales by the smallest Laplace sd.
    cfg.metric = Metric::identity;
    cfg.kernel = KernelKind::hmc;
    const double sd_min = std::sqrt(map.covariance.diagonal().minCoeff());
    CHECK(initial_step_size(cfg, map, 4) == doctest::Approx(sd_min * std::pow(p, -0.25)));
    cfg.step_size = 0.3;
    CHECK(initial_step_size(cfg, map, 4) == 0.3);
  }

  TEST_CASE("set-up: the initial metric is the Laplace covariance in the form asked for") {
    const auto ds = test::logistic_data(500, 3, 8);
    const LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    RunConfig cfg = flymc::test::fixed_config();
    cfg.metric = Metric::identity;
    CHECK(initial_metric(cfg, map).form() == InverseMetric::Form::identity);
    cfg.metric = Metric::diag;
    const InverseMetric diag = initial_metric(cfg, map);
    REQUIRE(diag.form() == InverseMetric::Form::diag);
    for (std::size_t j = 0; j < 3; ++j)
      CHECK(diag.inverse_values()[j] ==
            map.covariance(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j)));
    cfg.metric = Metric::dense;
    CHECK(initial_metric(cfg, map).form() == InverseMetric::Form::dense);
    cfg.metric = Metric::automatic;
    cfg.kernel = KernelKind::rwmh;
    CHECK(initial_metric(cfg, map).form() == InverseMetric::Form::identity);
    cfg.kernel = KernelKind::slice;
    CHECK(initial_metric(cfg, map).form() == InverseMetric::Form::diag);
    for (KernelKind k : {KernelKind::mala, KernelKind::hmc, KernelKind::nuts, KernelKind::pcn}) {
      cfg.kernel = k;  // the gradient kernels and pCN start from the dense Laplace covariance
      CHECK(initial_metric(cfg, map).form() == InverseMetric::Form::dense);
    }
  }

  TEST_CASE("set-up: the bound's curvature is exact: 2A for logistic, a Laplacian for softmax") {
    const auto ds = test::logistic_data(400, 4, 5);
    const LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    const LogisticBound bound = LogisticBound::map_tuned(model, map.theta, 0.01);
    const Mat h = bound_curvature(bound, model.layout(), map.theta);
    CHECK((h - 2.0 * bound.A()).norm() <= 1e-10 * bound.A().norm());
    // Anywhere: the collapsed sum is a quadratic.
    const Mat h2 = bound_curvature(bound, model.layout(), Vec::Constant(4, 0.7));
    CHECK((h2 - h).norm() <= 1e-10 * h.norm());

    const auto sds = test::softmax_data(600, 3, 3, 9);
    const SoftmaxModel sm(sds, Prior{});
    const MapResult smap = sm.find_map();
    RunConfig cfg = flymc::test::fixed_config();
    cfg.model = ModelKind::softmax;
    cfg.bound_slack = 0.0;
    const SoftmaxBound sb = SoftmaxBound::make(sm, cfg, smap);
    const Mat hs = bound_curvature(sb, sm.layout(), smap.theta);
    REQUIRE(hs.rows() == 9);
    CHECK((hs - hs.transpose()).norm() == 0.0);
    // Adding one vector to every class's coefficients changes nothing: a null direction.
    Vec u(9);
    for (int k = 0; k < 3; ++k) u.segment(3 * k, 3) << 0.3, -1.0, 2.0;
    CHECK((hs * u).norm() <= 1e-9 * hs.norm() * u.norm());
    const Eigen::SelfAdjointEigenSolver<Mat> eig(hs);
    CHECK(eig.eigenvalues().minCoeff() >= -1e-9 * hs.norm());
  }

  TEST_CASE("set-up: the FlyMC metric inverts prior + bound curvature, blended toward Laplace") {
    const auto ds = test::logistic_data(400, 4, 5);
    const double sd = 2.0;
    const LogisticModel model(ds, sd);
    const MapResult map = model.find_map();
    RunConfig cfg = flymc_config();
    cfg.prior_sd = sd;
    cfg.kernel = KernelKind::hmc;
    cfg.metric = Metric::fly;
    cfg.bound_slack = 0.0;
    const RunSetup<LogisticModel> s = prepare_run(model, cfg, map);
    REQUIRE(s.bound);
    const InverseMetric m = chain_metric(model, cfg, map, s);
    REQUIRE(m.form() == InverseMetric::Form::dense);
    const Mat want = (Mat::Identity(4, 4) / (sd * sd) + 2.0 * s.bound->A()).inverse();
    const std::vector<double> got = m.inverse_values();
    for (Eigen::Index i = 0; i < 4; ++i)
      for (Eigen::Index j = 0; j < 4; ++j)
        CHECK(got[static_cast<std::size_t>(i * 4 + j)] ==
              doctest::Approx(want(i, j)).epsilon(1e-9));
    // The bound is more curved than the likelihood: p(θ | z) with every datum dark is narrower
    // than the posterior, in every direction.
    const Eigen::SelfAdjointEigenSolver<Mat> gap(map.covariance - want);
    CHECK(gap.eigenvalues().minCoeff() > 0.0);
    // Blend 1: the posterior's Laplace covariance.
    cfg.fly_metric_blend = 1.0;
    const std::vector<double> lap = chain_metric(model, cfg, map, s).inverse_values();
    for (Eigen::Index i = 0; i < 4; ++i)
      for (Eigen::Index j = 0; j < 4; ++j)
        CHECK(lap[static_cast<std::size_t>(i * 4 + j)] ==
              doctest::Approx(map.covariance(i, j)).epsilon(1e-9));
    // Fixed for the run: warm-up draws estimate the posterior, not p(θ | z).
    const KernelTuning k(cfg, 4, m, 0.1);
    CHECK(!k.metric_adapt.active());
    cfg.metric = Metric::dense;
    CHECK(KernelTuning(cfg, 4, m, 0.1).metric_adapt.active());
  }

  TEST_CASE("set-up: --metric fly is refused for regular MCMC, and blends outside [0, 1]") {
    RunConfig cfg = flymc::test::fixed_config();
    cfg.metric = Metric::fly;
    CHECK_NOTHROW(cfg.validate());
    cfg.fly_metric_blend = 1.5;
    CHECK_THROWS_AS(cfg.validate(), ConfigError);
    cfg.fly_metric_blend = 0.5;
    cfg.algo = Algo::full;
    CHECK_THROWS_AS(cfg.validate(), ConfigError);
  }
}
