// Softmax classification and its bounds (docs/math.md §2.2: Böhning's, and the tight per-datum
// choice with Jebara & Choromanska's), beyond the model contract (test_model_contract.cpp): label
// validation, K = 2 against logistic regression, the lse bounds against lse and against a plain
// transcription of Jebara & Choromanska's algorithm, numerical robustness at extreme predictors,
// bit-identical results on 1 and 2 threads, and every sampler against an importance-sampling
// reference of the posterior.
#include <doctest/doctest.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/io/output.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/softmax.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

AlignedBuffer padded(const ParamLayout& lay, const double* dense) {
  AlignedBuffer p = aligned_zeros(lay.padded());
  lay.pad(dense, p.get());
  return p;
}

/// The DataError message SoftmaxModel gives for `ds`, or "" if it accepts it.
std::string model_error(std::shared_ptr<const Dataset> ds) {
  try {
    SoftmaxModel model(std::move(ds), Prior{});
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// 4 × 2 data with the given labels (the third label is the one under test).
std::shared_ptr<Dataset> small_data(double y3) {
  auto ds = std::make_shared<Dataset>(4, 2, "mem.csv");
  const double y[4] = {0.0, 1.0, y3, 2.0};
  for (std::size_t i = 0; i < 4; ++i) {
    ds->mutable_row(i)[0] = static_cast<double>(i);
    ds->mutable_row(i)[1] = 1.0;
    ds->mutable_y()[i] = y[i];
  }
  return ds;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("softmax labels: K = max label + 1; a label that is not a class index names its row") {
    {
      const SoftmaxModel model(small_data(1.0), Prior{});
      CHECK(model.classes() == 3);
      CHECK(model.dim() == 6);
      CHECK(model.layout().k == 3);
      const auto names = model.param_names();
      REQUIRE(names.size() == 6);
      CHECK(names[0] == "W.1.1");
      CHECK(names[1] == "W.1.2");
      CHECK(names[5] == "W.3.2");
    }
    for (double bad : {-1.0, 1.5, std::nan(""), 1024.0, 1e300}) {
      CAPTURE(bad);
      const std::string msg = model_error(small_data(bad));
      CHECK(contains(msg, "mem.csv: row 3: field 1 (label)"));
      CHECK(contains(msg, "class indices 0..K-1"));
    }
    CHECK(model_error(small_data(1023.0)).empty());  // the largest class index accepted
    {
      auto ds = small_data(0.0);
      for (double& v : ds->mutable_y()) v = 0.0;
      const std::string msg = model_error(ds);
      CHECK(contains(msg, "mem.csv"));
      CHECK(contains(msg, "field 1 (label)"));
      CHECK(contains(msg, "at least two classes"));
    }
    {  // features are checked as for logistic regression
      auto ds = small_data(1.0);
      ds->mutable_row(1)[0] = std::numeric_limits<double>::infinity();
      const std::string msg = model_error(ds);
      CHECK(contains(msg, "mem.csv: row 2: field 2 (x1)"));
    }
    {  // and through run(), before anything else
      RunConfig cfg = flymc::test::fixed_config();
      cfg.model = ModelKind::softmax;
      CHECK_THROWS_AS(run(cfg, small_data(-2.0)), DataError);
    }
  }

  TEST_CASE("K = 2 softmax is logistic regression in beta = w_2 - w_1 with prior sd * sqrt(2)") {
    // log σ((w2 − w1)·x) for y = 1: the likelihood depends on W through β = w2 − w1 only, and
    // under the N(0, s²) prior on both rows β has prior N(0, 2s²) and is independent of w1 + w2.
    const auto lds = test::logistic_data(600, 4, 21, 1.2);
    auto sds = std::make_shared<Dataset>(lds->n(), lds->d(), "k2");
    for (std::size_t i = 0; i < lds->n(); ++i) {
      std::copy(lds->row(i), lds->row(i) + lds->stride(), sds->mutable_row(i));
      sds->mutable_y()[i] = lds->y()[i] > 0.0 ? 1.0 : 0.0;
    }
    const double s = 0.8;
    const SoftmaxModel soft(sds, Prior{PriorKind::gaussian, s});
    const LogisticModel logi(lds, Prior{PriorKind::gaussian, s * std::sqrt(2.0)});
    REQUIRE(soft.classes() == 2);
    const ParamLayout lay = soft.layout();
    const std::size_t d = lds->d();
    Rng rng(4, 4);
    for (int rep = 0; rep < 5; ++rep) {
      std::vector<double> w(2 * d), beta(d);
      for (double& v : w) v = rng.normal();
      for (std::size_t j = 0; j < d; ++j) beta[j] = w[d + j] - w[j];
      const AlignedBuffer wp = padded(lay, w.data());
      const AlignedBuffer bp = padded(logi.layout(), beta.data());
      CHECK(soft.log_lik(wp.get()) == doctest::Approx(logi.log_lik(bp.get())).epsilon(1e-12));
    }
    const MapResult ms = soft.find_map(), ml = logi.find_map();
    const auto D = static_cast<Eigen::Index>(d);
    for (Eigen::Index j = 0; j < D; ++j) {
      CAPTURE(j);
      CHECK(ms.theta[D + j] - ms.theta[j] == doctest::Approx(ml.theta[j]).epsilon(1e-8));
      CHECK(std::fabs(ms.theta[D + j] + ms.theta[j]) < 1e-9);  // the prior centers the rows
      for (Eigen::Index i = 0; i < D; ++i) {
        const double cov_beta = ms.covariance(D + i, D + j) + ms.covariance(i, j) -
                                ms.covariance(D + i, j) - ms.covariance(i, D + j);
        CHECK(cov_beta == doctest::Approx(ml.covariance(i, j)).epsilon(1e-8).scale(1e-3));
      }
    }
    CHECK(ms.iterations < 30);
  }

  TEST_CASE("softmax at extreme predictors: finite, bound below likelihood, accurate log L") {
    const auto ds = test::softmax_data(50, 3, 4, 8);
    const SoftmaxModel model(ds, Prior{});
    const MapResult map = model.find_map();
    const auto y = *model.labels();
    const SoftmaxBound tuned = SoftmaxBound::map_tuned(model, map.theta);
    const SoftmaxBound flat = SoftmaxBound::untuned(model, map.theta);
    const SoftmaxBound tight = SoftmaxBound::tight(model, map, BoundTuning::map);
    const SoftmaxBound tight_flat = SoftmaxBound::tight(model, map, BoundTuning::untuned);
    Rng rng(9, 1);
    double psi[4], dpsi[4], delta;
    for (const SoftmaxBound* b : {&tuned, &flat, &tight, &tight_flat}) {
      for (int t = 0; t < 20000; ++t) {
        // Predictors of log-uniform magnitude up to 1e6, random signs; a tenth up to 1e150.
        const double top = t % 10 == 0 ? 150.0 : 6.0;
        for (double& v : psi)
          v = (rng.uniform() < 0.5 ? -1.0 : 1.0) *
              std::pow(10.0, -3.0 + (top + 3.0) * rng.uniform());
        const Index n = static_cast<Index>(rng.below(50));
        const double ll = b->log_lik(n, psi), lb = b->log_bound(n, psi);
        REQUIRE(std::isfinite(ll));
        REQUIRE(!std::isnan(lb));
        CHECK(ll <= 0.0);
        CHECK(lb <= ll + 1e-12 * (1.0 + std::fabs(ll)));
        const BoundCheck chk = b->delta_grads(&n, psi, 1, &delta, dpsi);
        CHECK(chk.violations == 0);
        REQUIRE(!std::isnan(delta));
        CHECK(delta >= 0.0);
        for (double g : dpsi) REQUIRE(!std::isnan(g));
      }
    }
    // A confidently classified datum: log L = −log1p(3e^{−60}) ≈ −2.6e-26, to full precision.
    const Index n0 = 0;
    for (std::size_t k = 0; k < 4; ++k) psi[k] = k == y[n0] ? 60.0 : 0.0;
    const double expect = -3.0 * std::exp(-60.0);
    CHECK(tuned.log_lik(n0, psi) == doctest::Approx(expect).epsilon(1e-14));
    for (std::size_t k = 0; k < 4; ++k) psi[k] = k == y[n0] ? -745.0 : 800.0;
    CHECK(tuned.log_lik(n0, psi) == doctest::Approx(-1545.0 - std::log(3.0)).epsilon(1e-15));
    // The full-data log-likelihood at a huge W stays finite.
    std::vector<double> w(model.dim());
    for (double& v : w) v = 1e150 * rng.normal();
    const AlignedBuffer wp = padded(model.layout(), w.data());
    AlignedBuffer gp = aligned_zeros(model.layout().padded());
    CHECK(std::isfinite(model.log_lik(wp.get())));
    CHECK(std::isfinite(model.log_lik_grad(wp.get(), gp.get())));
  }

  TEST_CASE("softmax MAP: gradient vanishes; Laplace prior MAP from the Gaussian one") {
    const auto ds = test::softmax_data(3000, 6, 4, 12, 1.0);
    for (PriorKind kind : {PriorKind::gaussian, PriorKind::laplace}) {
      CAPTURE(static_cast<int>(kind));
      const SoftmaxModel model(ds, Prior{kind, 1.5});
      const MapResult map = model.find_map();
      CHECK(map.iterations < 60);
      CHECK(std::isfinite(map.log_post));
      const ParamLayout lay = model.layout();
      const AlignedBuffer tp = padded(lay, map.theta.data());
      AlignedBuffer gp = aligned_zeros(lay.padded());
      model.log_lik_grad(tp.get(), gp.get());
      std::vector<double> g(model.dim());
      lay.unpad(gp.get(), g.data());
      model.prior().add_gradient(map.theta.data(), model.dim(), g.data());
      if (kind == PriorKind::gaussian) {
        for (double v : g) CHECK(std::fabs(v) < 1e-6);
      } else {
        // Subgradient optimality: small moves along every coordinate do not increase log p.
        const double f0 = model.log_lik(tp.get()) + model.log_prior(map.theta.data());
        for (std::size_t j = 0; j < model.dim(); ++j)
          for (double h : {-1e-6, 1e-6}) {
            Vec t = map.theta;
            t[static_cast<Eigen::Index>(j)] += h;
            const AlignedBuffer p = padded(lay, t.data());
            CHECK(model.log_lik(p.get()) + model.log_prior(t.data()) <= f0 + 1e-9);
          }
      }
      // The Laplace covariance is symmetric positive definite.
      CHECK((map.covariance - map.covariance.transpose()).cwiseAbs().maxCoeff() < 1e-12);
      CHECK(map.covariance.llt().info() == Eigen::Success);
    }
  }

  TEST_CASE("softmax: a bound raised above the likelihood is reported as violations") {
    const auto ds = test::softmax_data(200, 3, 3, 14);
    RunConfig cfg = flymc::test::fixed_config();
    cfg.model = ModelKind::softmax;
    cfg.chains = 1;
    cfg.warmup = 50;
    cfg.iters = 100;
    FaultInjection hooks;
    hooks.bound_excess = 0.5;
    cfg.on_bound_violation = OnViolation::finish;
    const RunResult r = run(cfg, ds, {}, nullptr, nullptr, hooks);
    CHECK(r.bound_violations() > 0);
  }

  TEST_CASE("softmax: bit-identical likelihood, MAP, bound and draws on 1 and 2 threads") {
    const auto ds = test::softmax_data(10000, 5, 3, 31);  // > two 4096-row chunks
    const SoftmaxModel model(ds, Prior{});
    const ParamLayout lay = model.layout();
    Rng rng(3, 3);
    std::vector<double> w(model.dim());
    for (double& v : w) v = rng.normal();
    const AlignedBuffer wp = padded(lay, w.data());
    struct Out {
      double ll = 0, llg = 0, lbs = 0, lbt = 0;
      std::vector<double> g, gb, gt;
      Vec map;
    };
    auto compute = [&](int threads) {
      Out o;
      tbb::task_arena arena(threads);
      arena.execute([&] {
        o.ll = model.log_lik(wp.get());
        AlignedBuffer gp = aligned_zeros(lay.padded());
        o.llg = model.log_lik_grad(wp.get(), gp.get());
        o.g.assign(gp.get(), gp.get() + lay.padded());
        const MapResult map = model.find_map();
        o.map = map.theta;
        const SoftmaxBound b = SoftmaxBound::untuned(model, map.theta);
        AlignedBuffer scratch = aligned_zeros(b.scratch_size());
        o.lbs = b.log_bound_sum(wp.get(), scratch.get(), gp.get());
        o.gb.assign(gp.get(), gp.get() + lay.padded());
        const SoftmaxBound t = SoftmaxBound::tight(model, map, BoundTuning::map);
        o.lbt = t.log_bound_sum(wp.get(), scratch.get(), gp.get());
        o.gt.assign(gp.get(), gp.get() + lay.padded());
      });
      return o;
    };
    const Out a = compute(1), b = compute(2);
    CHECK(a.ll == b.ll);
    CHECK(a.llg == b.llg);
    CHECK(a.ll == a.llg);
    CHECK(a.g == b.g);
    CHECK(a.map == b.map);
    CHECK(a.lbs == b.lbs);
    CHECK(a.gb == b.gb);
    CHECK(a.lbt == b.lbt);
    CHECK(a.gt == b.gt);
    for (int variant = 0; variant < 3; ++variant) {
      const Algo algo = variant == 0 ? Algo::full : Algo::flymc;
      RunConfig cfg = flymc::test::fixed_config();
      cfg.model = ModelKind::softmax;
      cfg.softmax_bound = variant == 2 ? SoftmaxBoundKind::tight : SoftmaxBoundKind::bohning;
      cfg.algo = algo;
      cfg.kernel = KernelKind::mala;
      cfg.chains = 2;
      cfg.warmup = 50;
      cfg.iters = algo == Algo::full ? 50 : 300;
      cfg.seed = 5;
      cfg.threads = 1;
      const RunResult r1 = run(cfg, ds);
      cfg.threads = 2;
      const RunResult r2 = run(cfg, ds);
      for (std::size_t c = 0; c < 2; ++c) {
        CHECK(r1.chains[c].draws == r2.chains[c].draws);
        CHECK(r1.chains[c].lp == r2.chains[c].lp);
      }
      CHECK(r1.bound_violations() == 0);
    }
  }
}

namespace {

/// lse in long double, for reference.
long double lse_ref(const double* psi, std::size_t K) {
  long double m = psi[0];
  for (std::size_t k = 1; k < K; ++k) m = std::max<long double>(m, psi[k]);
  long double s = 0.0L;
  for (std::size_t k = 0; k < K; ++k) s += std::exp(static_cast<long double>(psi[k]) - m);
  return m + std::log(s);
}

/// Jebara & Choromanska's bound-computing algorithm for lse (one-hot features), written out
/// plainly: z ← 0⁺, μ ← 0, Σ ← 0; per class y in order, α = e^{ψ0_y − max ψ0}, l = e_y − μ,
/// Σ += tanh(½ ln(α/z))/(2 ln(α/z))·llᵀ (nothing for the first class, z → 0⁺), μ += α/(z+α)·l,
/// z += α. For moderate ψ0 only (no care for overflow).
void jc_reference(const std::vector<double>& psi0, const std::vector<std::uint16_t>& order,
                  std::vector<double>& S, std::vector<double>& mu) {
  const std::size_t K = psi0.size();
  const double mx = *std::max_element(psi0.begin(), psi0.end());
  S.assign(K * K, 0.0);
  mu.assign(K, 0.0);
  double z = 0.0;
  for (std::size_t j = 0; j < K; ++j) {
    const std::size_t y = order[j];
    const double alpha = std::exp(psi0[y] - mx);
    std::vector<double> l(K);
    for (std::size_t k = 0; k < K; ++k) l[k] = (k == y ? 1.0 : 0.0) - mu[k];
    if (j > 0) {
      const double r = std::log(alpha / z);
      const double c = r == 0.0 ? 0.25 : std::tanh(0.5 * r) / (2.0 * r);
      for (std::size_t a = 0; a < K; ++a)
        for (std::size_t b = 0; b < K; ++b) S[a * K + b] += c * l[a] * l[b];
    }
    for (std::size_t k = 0; k < K; ++k) mu[k] += alpha / (z + alpha) * l[k];
    z += alpha;
  }
}

/// The class order of decreasing ψ0 (dominant class first).
std::vector<std::uint16_t> dominant_first(const std::vector<double>& psi0) {
  std::vector<std::uint16_t> o(psi0.size());
  for (std::size_t k = 0; k < o.size(); ++k) o[k] = static_cast<std::uint16_t>(k);
  std::stable_sort(o.begin(), o.end(),
                   [&](std::uint16_t a, std::uint16_t b) { return psi0[a] > psi0[b]; });
  return o;
}

/// Eigenvalues (ascending) of the curvature for `order` at ψ0.
Vec jc_eigenvalues(const std::vector<double>& psi0, const std::vector<std::uint16_t>& order) {
  const std::size_t K = psi0.size();
  std::vector<double> c(K), s(K), S(K * K);
  lse_bound::jebara_choromanska(psi0.data(), order.data(), K, c.data(), s.data());
  lse_bound::curvature(order.data(), c.data(), s.data(), K, S.data());
  const auto KK = static_cast<Eigen::Index>(K);
  const Mat m = Eigen::Map<const Mat>(S.data(), KK, KK);
  return Eigen::SelfAdjointEigenSolver<Mat>(m).eigenvalues();
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE(
      "lse bounds: the running-mean form is Jebara & Choromanska's algorithm and Bohning's H") {
    Rng rng(12, 5);
    for (std::size_t K = 2; K <= 6; ++K) {
      CAPTURE(K);
      std::vector<double> c(K), s(K), S(K * K), Sref, mu, v(K), sv(K);
      for (int rep = 0; rep < 200; ++rep) {
        std::vector<double> psi0(K);
        const double scale = std::pow(10.0, -2.0 + 3.3 * rng.uniform());  // up to ~20
        for (double& x : psi0) x = scale * rng.normal();
        std::vector<std::uint16_t> order(K);
        for (std::size_t k = 0; k < K; ++k) order[k] = static_cast<std::uint16_t>(k);
        for (std::size_t k = K - 1; k > 0; --k) std::swap(order[k], order[rng.below(k + 1)]);
        lse_bound::jebara_choromanska(psi0.data(), order.data(), K, c.data(), s.data());
        lse_bound::curvature(order.data(), c.data(), s.data(), K, S.data());
        jc_reference(psi0, order, Sref, mu);
        double p_sum = 0.0;
        for (double x : psi0) p_sum += std::exp(x - psi0[0]);
        for (std::size_t k = 0; k < K; ++k) {
          // μ ends at softmax(ψ0): the bound's gradient at the anchor is lse's.
          CHECK(mu[k] == doctest::Approx(std::exp(psi0[k] - psi0[0]) / p_sum).epsilon(1e-12));
          double row = 0.0;
          for (std::size_t l = 0; l < K; ++l) {
            CHECK(S[k * K + l] == doctest::Approx(Sref[k * K + l]).epsilon(1e-12).scale(1.0));
            row += S[k * K + l];
          }
          CHECK(std::fabs(row) < 1e-14);  // S𝟙 = 0
        }
        // quad() and its reverse pass agree with S.
        for (double& x : v) x = rng.normal();
        const double q = lse_bound::quad(v.data(), order.data(), c.data(), s.data(), K, sv.data());
        double qs = 0.0;
        for (std::size_t k = 0; k < K; ++k) {
          double sk = 0.0;
          for (std::size_t l = 0; l < K; ++l) sk += S[k * K + l] * v[l];
          qs += 0.5 * v[k] * sk;
          CHECK(sv[k] == doctest::Approx(sk).epsilon(1e-12).scale(1.0));
        }
        CHECK(q == doctest::Approx(qs).epsilon(1e-12).scale(1e-14));
        CHECK(lse_bound::quad(v.data(), order.data(), c.data(), s.data(), K) == q);
        // tr(S M) against the explicit product.
        std::vector<double> M(K * K);
        for (std::size_t a = 0; a < K; ++a)
          for (std::size_t b = 0; b <= a; ++b) M[a * K + b] = M[b * K + a] = v[a] * v[b];
        for (std::size_t a = 0; a < K; ++a) M[a * K + a] += 1.0;
        double tr = 0.0;
        for (std::size_t a = 0; a < K; ++a)
          for (std::size_t b = 0; b < K; ++b) tr += S[a * K + b] * M[b * K + a];
        CHECK(lse_bound::trace_product(order.data(), c.data(), s.data(), K, M.data()) ==
              doctest::Approx(tr).epsilon(1e-12).scale(1e-14));
      }
      // Böhning's coefficients give H = ½(I − 𝟙𝟙ᵀ/K) in any order.
      std::vector<std::uint16_t> order(K);
      for (std::size_t k = 0; k < K; ++k) order[k] = static_cast<std::uint16_t>(K - 1 - k);
      lse_bound::bohning(K, c.data(), s.data());
      lse_bound::curvature(order.data(), c.data(), s.data(), K, S.data());
      for (std::size_t k = 0; k < K; ++k)
        for (std::size_t l = 0; l < K; ++l)
          CHECK(S[k * K + l] ==
                doctest::Approx(0.5 * ((k == l ? 1.0 : 0.0) - 1.0 / static_cast<double>(K)))
                    .epsilon(1e-14));
    }
    // The numbers that motivate the per-datum choice: for a confident ψ0 = (5, 0, 0) the
    // dominant-first curvature's eigenvalues are ≈ 0.099 and 0.29 (Böhning's: 0.5, 0.5); for
    // ψ0 = (2, 1, 0) the largest is ≈ 0.5023, just above Böhning's.
    {
      const std::vector<double> p1 = {5.0, 0.0, 0.0}, p2 = {2.0, 1.0, 0.0};
      const Vec e1 = jc_eigenvalues(p1, dominant_first(p1)),
                e2 = jc_eigenvalues(p2, dominant_first(p2));
      CHECK(std::fabs(e1[0]) < 1e-14);
      CHECK(e1[1] == doctest::Approx(0.099).epsilon(0.01));
      CHECK(e1[2] == doctest::Approx(0.29).epsilon(0.01));
      CHECK(e2[2] == doctest::Approx(0.5023).epsilon(1e-3));
      CHECK(e2[2] > 0.5);
    }
  }

  TEST_CASE("lse bounds: above lse for random anchors and points, K = 2..6, extreme scales") {
    // B ≤ L for softmax is lse(ψ) ≤ lse(ψ0) + softmax(ψ0)ᵀv + ½vᵀSv; checked against a long
    // double lse for the Jebara–Choromanska curvature in a random order and dominant-first, and
    // for Böhning's, at anchors and displacements of log-uniform scale (1e-3 to 1e3, a tenth up
    // to 1e6), around the anchor (small v: the curvature itself is tested) and far from it.
    Rng rng(31, 2);
    long checks = 0;
    for (int t = 0; t < 60000; ++t) {
      const std::size_t K = 2 + rng.below(5);
      const double top = t % 10 == 0 ? 6.0 : 3.0;
      const double s0 = std::pow(10.0, -3.0 + (top + 3.0) * rng.uniform());
      const double sv_scale = std::pow(10.0, -3.0 + (top + 3.0) * rng.uniform());
      std::vector<double> psi0(K), psi(K), v(K), g0(K), c(K), s(K);
      for (double& x : psi0) x = s0 * rng.normal();
      // A confident anchor now and then: one class far above the rest.
      if (t % 4 == 1) psi0[rng.below(K)] += 5.0 * s0;
      for (std::size_t k = 0; k < K; ++k) psi[k] = psi0[k] + sv_scale * rng.normal();
      if (t % 7 == 3)  // along the null direction plus a little
        for (std::size_t k = 0; k < K; ++k)
          psi[k] = psi0[k] + sv_scale * (1.0 + 1e-3 * rng.normal());
      const long double l0 = lse_ref(psi0.data(), K), l1 = lse_ref(psi.data(), K);
      for (std::size_t k = 0; k < K; ++k) {
        v[k] = psi[k] - psi0[k];
        g0[k] = static_cast<double>(std::exp(static_cast<long double>(psi0[k]) - l0));
      }
      std::vector<std::uint16_t> random_order(K);
      for (std::size_t k = 0; k < K; ++k) random_order[k] = static_cast<std::uint16_t>(k);
      for (std::size_t k = K - 1; k > 0; --k)
        std::swap(random_order[k], random_order[rng.below(k + 1)]);
      const std::vector<std::uint16_t> dom = dominant_first(psi0);
      for (int which = 0; which < 3; ++which) {
        const std::vector<std::uint16_t>& order = which == 1 ? dom : random_order;
        if (which == 2)
          lse_bound::bohning(K, c.data(), s.data());
        else
          lse_bound::jebara_choromanska(psi0.data(), order.data(), K, c.data(), s.data());
        const double q = lse_bound::quad(v.data(), order.data(), c.data(), s.data(), K);
        REQUIRE(q >= 0.0);
        long double gv = 0.0L, mag = 0.0L;
        for (std::size_t k = 0; k < K; ++k) {
          gv += static_cast<long double>(g0[k]) * v[k];
          mag += std::fabs(g0[k] * v[k]) + std::fabs(psi[k]) + std::fabs(psi0[k]);
        }
        const long double upper = l0 + gv + q;
        const long double tol = 1e-13L * (1.0L + mag + q);
        CAPTURE(K);
        CAPTURE(which);
        CAPTURE(s0);
        CAPTURE(sv_scale);
        if (!(l1 <= upper + tol)) {
          FAIL_CHECK("lse above its upper bound by " << static_cast<double>(l1 - upper));
        }
        ++checks;
      }
    }
    CHECK(checks == 180000);
  }

  TEST_CASE("K = 2: the tight softmax bound is the Jaakkola-Jordan bound, tight at W_MAP") {
    const auto ds = test::softmax_data(400, 4, 2, 77, 1.5);
    const SoftmaxModel model(ds, Prior{PriorKind::gaussian, 1.0});
    const MapResult map = model.find_map();
    const SoftmaxBound b = SoftmaxBound::tight(model, map, BoundTuning::map);
    CHECK(b.kind() == SoftmaxBoundKind::tight);
    CHECK(b.jc_count() == model.num_data());  // JJ's curvature ≤ Böhning's ¼, below it if a0 ≠ 0
    CHECK(b.expected_quad() < b.expected_quad_bohning());
    const auto& y = *model.labels();
    const std::size_t d = ds->d();
    Rng rng(5, 5);
    for (std::size_t n = 0; n < model.num_data(); ++n) {
      double psi0[2] = {0.0, 0.0};
      for (std::size_t k = 0; k < 2; ++k)
        for (std::size_t j = 0; j < d; ++j)
          psi0[k] += map.theta[static_cast<Eigen::Index>(k * d + j)] * ds->row(n)[j];
      const std::size_t yc = y[n], other = 1 - yc;
      const double xi = std::fabs(psi0[yc] - psi0[other]);
      const double lambda = xi < 1e-8 ? 0.125 : std::tanh(0.5 * xi) / (4.0 * xi);
      const double log_sig_xi = -std::log1p(std::exp(-xi));
      const auto id = static_cast<Index>(n);
      CHECK(b.log_bound(id, psi0) == doctest::Approx(b.log_lik(id, psi0)).epsilon(1e-13));
      for (int rep = 0; rep < 5; ++rep) {
        const double psi[2] = {psi0[0] + 3.0 * rng.normal(), psi0[1] + 3.0 * rng.normal()};
        const double a = psi[yc] - psi[other];
        const double jj = log_sig_xi + 0.5 * (a - xi) - lambda * (a * a - xi * xi);
        CAPTURE(n);
        CHECK(b.log_bound(id, psi) == doctest::Approx(jj).epsilon(1e-11).scale(1.0));
      }
    }
  }

  TEST_CASE("tight softmax bound: tighter than Bohning, invariant along the null direction") {
    const auto ds = test::softmax_data(2000, 5, 4, 19, 2.0);
    const SoftmaxModel model(ds, Prior{PriorKind::gaussian, 1.0});
    const MapResult map = model.find_map();
    const ParamLayout lay = model.layout();
    const std::size_t K = lay.k, d = lay.d;
    for (BoundTuning tuning : {BoundTuning::map, BoundTuning::untuned}) {
      CAPTURE(static_cast<int>(tuning));
      const SoftmaxBound b = SoftmaxBound::tight(model, map, tuning);
      const SoftmaxBound bo = tuning == BoundTuning::map ? SoftmaxBound::map_tuned(model, map.theta)
                                                         : SoftmaxBound::untuned(model, map.theta);
      // Some data take a Jebara–Choromanska curvature, and the expected quadratic term drops.
      CHECK(b.jc_count() > model.num_data() / 4);
      CHECK(b.expected_quad() < 0.9 * b.expected_quad_bohning());
      AlignedBuffer scratch = aligned_zeros(b.scratch_size());
      // At the MAP both MAP-tuned sums are Σ log L_n (no slack).
      const AlignedBuffer mp = padded(lay, map.theta.data());
      if (tuning == BoundTuning::map)
        CHECK(b.log_bound_sum(mp.get(), scratch.get()) ==
              doctest::Approx(bo.log_bound_sum(mp.get(), scratch.get())).epsilon(1e-12));
      Rng rng(8, 1);
      std::vector<double> w(model.dim());
      for (std::size_t j = 0; j < w.size(); ++j)
        w[j] = map.theta[static_cast<Eigen::Index>(j)] +
               0.5 *
                   std::sqrt(
                       map.covariance(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j))) *
                   rng.normal();
      const AlignedBuffer wp = padded(lay, w.data());
      AlignedBuffer g1 = aligned_zeros(lay.padded()), g2 = aligned_zeros(lay.padded());
      const double f1 = b.log_bound_sum(wp.get(), scratch.get(), g1.get());
      // Adding one vector u to every row of W changes neither the sum nor its gradient.
      std::vector<double> wu = w;
      for (std::size_t j = 0; j < d; ++j) {
        const double u = 10.0 * rng.normal();
        for (std::size_t k = 0; k < K; ++k) wu[k * d + j] += u;
      }
      const AlignedBuffer wup = padded(lay, wu.data());
      const double f2 = b.log_bound_sum(wup.get(), scratch.get(), g2.get());
      CHECK(f2 == doctest::Approx(f1).epsilon(1e-12));
      double gmax = 0.0;
      for (std::size_t j = 0; j < lay.padded(); ++j) gmax = std::max(gmax, std::fabs(g1[j]));
      for (std::size_t j = 0; j < d; ++j) {
        double col = 0.0;
        for (std::size_t k = 0; k < K; ++k) {
          CHECK(g2[k * lay.stride + j] ==
                doctest::Approx(g1[k * lay.stride + j]).scale(gmax).epsilon(1e-10));
          col += g1[k * lay.stride + j];
        }
        CHECK(std::fabs(col) < 1e-10 * gmax);  // the gradient is orthogonal to the null direction
      }
    }
    // Untuned tight at ψ0 = 0: every datum's curvature is an order of the same equal-weight one,
    // dominated by Böhning's (eigenvalues ½ and below), so the choice never loses.
    std::vector<double> zero(K, 0.0);
    std::vector<std::uint16_t> ord(K);
    for (std::size_t k = 0; k < K; ++k) ord[k] = static_cast<std::uint16_t>(k);
    const Vec e = jc_eigenvalues(zero, ord);
    CHECK(e[static_cast<Eigen::Index>(K) - 1] <= 0.5 + 1e-15);
  }
}

TEST_SUITE("unit") {
  TEST_CASE("softmax: a stopped and resumed run equals an uninterrupted one") {
    // The checkpoint holds the K·D-dimensional MAP point and chain states (checkpoint.cpp).
    namespace fs = std::filesystem;
    const auto ds = test::softmax_data(2000, 3, 3, 17);
    const fs::path base =
        fs::temp_directory_path() / ("flymc-softmax-" + std::to_string(::getpid()));
    fs::remove_all(base);
    for (Algo algo : {Algo::flymc, Algo::full}) {
      CAPTURE(static_cast<int>(algo));
      RunConfig cfg = flymc::test::fixed_config();
      cfg.model = ModelKind::softmax;
      cfg.algo = algo;
      cfg.kernel = KernelKind::mala;
      cfg.chains = 2;
      cfg.warmup = 100;
      cfg.iters = 200;
      cfg.seed = 8;
      const fs::path ref_dir = base / "ref", dir = base / "resumed";
      fs::create_directories(ref_dir);
      fs::create_directories(dir);
      const RunResult ref = run(cfg, ds, stan_csv_sinks(ref_dir.string(), cfg, {}));
      CheckpointOptions ck;
      ck.store = checkpoint_directory((dir / "checkpoint").string());
      ck.every = 40;
      FaultInjection hooks;
      hooks.stop_at = 137;
      CHECK(run(cfg, ds, stan_csv_sinks(dir.string(), cfg, {}), nullptr, &ck, hooks).stopped);
      ck.resume = true;
      const RunResult r = run(cfg, ds, stan_csv_sinks(dir.string(), cfg, {}), nullptr, &ck);
      CHECK(!r.stopped);
      for (std::size_t c = 0; c < 2; ++c) {
        CHECK(r.chains[c].draws == ref.chains[c].draws);
        const std::string file = "chain-" + std::to_string(c + 1) + ".csv";
        CHECK(test::read_without_timing((dir / file).string()) ==
              test::read_without_timing((ref_dir / file).string()));
      }
      fs::remove_all(base);
    }
  }
}

namespace {

/// Posterior means and sds of the linear functionals F θ (rows of F) by self-normalized
/// importance sampling from a multivariate t (ν = 7) centred at W_MAP with 1.2² times the
/// Laplace covariance (heavier tails than the posterior), with delta-method standard errors.
struct Reference {
  std::vector<double> mean, sd, se_mean, se_sd;
  double ess = 0.0;
};

Reference importance_reference(const SoftmaxModel& model, const MapResult& map, const Mat& F,
                               int draws) {
  const std::size_t p = model.dim();
  const auto P = static_cast<Eigen::Index>(p);
  const Mat L = (1.44 * map.covariance).llt().matrixL();
  const ParamLayout lay = model.layout();
  AlignedBuffer tp = aligned_zeros(lay.padded());
  const double nu = 7.0;
  Rng rng(99, 7);
  const auto nf = static_cast<std::size_t>(F.rows());
  std::vector<double> logw(static_cast<std::size_t>(draws)),
      th(static_cast<std::size_t>(draws) * nf);
  double mx = -INFINITY;
  Vec z(P);
  for (int i = 0; i < draws; ++i) {
    for (Eigen::Index j = 0; j < P; ++j) z[j] = rng.normal();
    double chi2 = 0.0;
    for (int j = 0; j < 7; ++j) {
      const double e = rng.normal();
      chi2 += e * e;
    }
    const double scale = std::sqrt(nu / chi2);
    const Vec t = map.theta + scale * (L * z);
    // log q up to a constant: −(ν + p)/2 · log(1 + δᵀΣ⁻¹δ/ν), δᵀΣ⁻¹δ = scale²·|z|².
    const double logq =
        -0.5 * (nu + static_cast<double>(p)) * std::log1p(scale * scale * z.squaredNorm() / nu);
    lay.pad(t.data(), tp.get());
    const double lw = model.log_lik(tp.get()) + model.log_prior(t.data()) - logq;
    logw[static_cast<std::size_t>(i)] = lw;
    mx = std::max(mx, lw);
    const Vec ft = F * t;
    std::copy(ft.data(), ft.data() + nf, th.begin() + static_cast<std::ptrdiff_t>(i * nf));
  }
  double sw = 0.0, sw2 = 0.0;
  std::vector<double> w(logw.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = std::exp(logw[i] - mx);
    sw += w[i];
    sw2 += w[i] * w[i];
  }
  Reference ref;
  ref.ess = sw * sw / sw2;
  for (std::size_t j = 0; j < nf; ++j) {
    double m = 0.0;
    for (std::size_t i = 0; i < w.size(); ++i) m += w[i] * th[i * nf + j];
    m /= sw;
    double v = 0.0;
    for (std::size_t i = 0; i < w.size(); ++i)
      v += w[i] * (th[i * nf + j] - m) * (th[i * nf + j] - m);
    v /= sw;
    double em = 0.0, ev = 0.0;  // Σ w²(f − E f)² / (Σ w)²
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double dv = th[i * nf + j] - m;
      em += w[i] * w[i] * dv * dv;
      ev += w[i] * w[i] * (dv * dv - v) * (dv * dv - v);
    }
    ref.mean.push_back(m);
    ref.sd.push_back(std::sqrt(v));
    ref.se_mean.push_back(std::sqrt(em) / sw);
    ref.se_sd.push_back(std::sqrt(ev) / sw / (2.0 * std::sqrt(v)));
  }
  return ref;
}

}  // namespace

TEST_SUITE("statistical") {
  TEST_CASE(
      "softmax: FlyMC (MAP-tuned, untuned) and regular MCMC (RW-MH, MALA) match the posterior") {
    // K = 3 classes, one feature and a bias: 6 parameters, 2 directions of which (the sum of the
    // rows of W) only the prior constrains.
    const auto ds = test::softmax_data(300, 2, 3, 41, 1.5);
    const SoftmaxModel model(ds, Prior{PriorKind::gaussian, 1.0});
    const MapResult map = model.find_map();
    // The functionals compared: every coordinate W_kj, and the class contrasts W_kj − W_1j that
    // the data determine. (Each coordinate's spread is mostly the sum of the rows, which the
    // prior alone sets: a wrong likelihood or bound shows far more clearly in the contrasts.)
    const std::size_t p = model.dim(), d = 2, K = 3;
    Mat F = Mat::Zero(static_cast<Eigen::Index>(p + (K - 1) * d), static_cast<Eigen::Index>(p));
    for (std::size_t j = 0; j < p; ++j)
      F(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j)) = 1.0;
    for (std::size_t k = 1; k < K; ++k)
      for (std::size_t j = 0; j < d; ++j) {
        const auto row = static_cast<Eigen::Index>(p + (k - 1) * d + j);
        F(row, static_cast<Eigen::Index>(k * d + j)) = 1.0;
        F(row, static_cast<Eigen::Index>(j)) = -1.0;
      }
    const Reference ref = importance_reference(model, map, F, 100000);
    REQUIRE(ref.ess > 20000.0);  // the t proposal covers the posterior well

    struct Case {
      const char* name;
      Algo algo;
      BoundTuning bound;
      KernelKind kernel;
      bool q_per_datum = false;
      SoftmaxBoundKind kind = SoftmaxBoundKind::bohning;
    };
    const Case cases[] = {
        {"regular rwmh", Algo::full, BoundTuning::map, KernelKind::rwmh},
        {"regular mala", Algo::full, BoundTuning::map, KernelKind::mala},
        {"flymc map rwmh", Algo::flymc, BoundTuning::map, KernelKind::rwmh},
        {"flymc map mala", Algo::flymc, BoundTuning::map, KernelKind::mala},
        {"flymc untuned rwmh", Algo::flymc, BoundTuning::untuned, KernelKind::rwmh},
        {"flymc untuned mala", Algo::flymc, BoundTuning::untuned, KernelKind::mala},
        {"flymc map mala per-datum q", Algo::flymc, BoundTuning::map, KernelKind::mala, true},
        {"flymc tight map mala", Algo::flymc, BoundTuning::map, KernelKind::mala, false,
         SoftmaxBoundKind::tight},
        {"flymc tight map rwmh", Algo::flymc, BoundTuning::map, KernelKind::rwmh, false,
         SoftmaxBoundKind::tight},
        {"flymc tight untuned mala", Algo::flymc, BoundTuning::untuned, KernelKind::mala, false,
         SoftmaxBoundKind::tight},
    };
    for (const Case& k : cases) {
      CAPTURE(k.name);
      RunConfig cfg = flymc::test::fixed_config();
      cfg.model = ModelKind::softmax;
      cfg.algo = k.algo;
      cfg.bound = k.bound;
      cfg.kernel = k.kernel;
      cfg.z = ZUpdate::implicit;
      cfg.q_dark_to_bright = 0.05;
      cfg.q_per_datum = k.q_per_datum;
      cfg.softmax_bound = k.kind;
      // The dense Laplace covariance as the metric: the posterior is strongly correlated along
      // the null direction of the likelihood.
      cfg.metric = Metric::dense;
      cfg.adapt_metric = false;
      cfg.chains = 2;
      cfg.warmup = 1000;
      cfg.iters = 20000;
      cfg.seed = 2025;
      cfg.init = Init::prior;
      const RunResult r = run(cfg, ds);
      CHECK(r.bound_violations() == 0);
      CHECK(r.nonfinite() == 0);
      std::vector<std::vector<std::vector<double>>> coords;
      for (std::size_t j = 0; j < p; ++j) coords.push_back(r.coordinate(j));
      for (Eigen::Index f = 0; f < F.rows(); ++f) {
        CAPTURE(f);
        const auto j = static_cast<std::size_t>(f);
        std::vector<std::vector<double>> draws(coords[0].size());
        for (std::size_t c = 0; c < draws.size(); ++c)
          for (std::size_t i = 0; i < coords[0][c].size(); ++i) {
            double v = 0.0;
            for (Eigen::Index q = 0; q < F.cols(); ++q)
              if (F(f, q) != 0.0) v += F(f, q) * coords[static_cast<std::size_t>(q)][c][i];
            draws[c].push_back(v);
          }
        const auto [m, se] = test::mean_and_mcse(draws, [](double x) { return x; });
        CHECK(std::fabs(m - ref.mean[j]) < 4.5 * std::hypot(se, ref.se_mean[j]));
        // sd through the second central moment about the reference mean (delta method).
        const double mu = ref.mean[j];
        const auto [v, se_v] =
            test::mean_and_mcse(draws, [mu](double x) { return (x - mu) * (x - mu); });
        const double sd = std::sqrt(v), se_sd = se_v / (2.0 * sd);
        CHECK(std::fabs(sd - ref.sd[j]) < 4.5 * std::hypot(se_sd, ref.se_sd[j]));
        // the standard errors are small enough for the comparison to mean something
        CHECK(se < 0.05 * ref.sd[j]);
      }
    }
  }
}
