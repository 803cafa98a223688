// The θ-kernels (theta_kernels.hpp), their metric and its warm-up adaptation (metric.hpp), on
// small targets whose moments are known exactly.
//
// - Invariance: for every kernel (RW-MH, MALA, HMC, NUTS, slice along random directions and along
//   the coordinates) with a fixed step size and every metric form (identity, diagonal, dense = the
//   target covariance), a long seeded chain started from an exact draw reproduces the target's
//   means and covariances.
// - Mechanics, checked against independent computations: MALA's and HMC's MH log-ratios (the
//   proposal replayed from a copy of the random stream), leapfrog reversibility, volume
//   preservation and its O(ε²) energy error, detailed balance on a 3 × 3 grid of cells.
// - MetricAdaptation: Stan's window boundaries, the regularized window estimate; ThetaKernel's
//   save()/load(); non-finite densities. NUTS's own mechanics: test_nuts.cpp. The helpers (the
//   test target, metrics, the chain runner): theta_test_util.hpp.
//
// Tolerances. A chain of n draws is cut into B = 100 batches; the batch-means standard error
// se = sd(batch means)/√B of E f estimates the Monte Carlo standard error while the batches are
// long against the autocorrelation time (n/B ≥ 20 τ here, by the iteration budgets below). The
// standardized error (estimate − exact)/se then follows Student's t with B − 1 = 99 degrees of
// freedom, and |t| > 4.5 has probability 1.9e-5: over the ≈ 300 moment comparisons of this file a
// correct kernel raises a false alarm with probability < 0.6%, and the seeds are fixed, so the
// suite is deterministic. Each comparison also requires se below a few percent of the quantity's
// scale (se < 0.04 sd for a mean, < 0.08 σ_iσ_j for a covariance), so that a bias of
// 0.2 sd in a mean or 0.35 σ_iσ_j in a covariance is caught with power ≈ 1.
//
// Shown to fail (a private copy of the tree, one mutation at a time): MALA without its
// reverse-proposal term, or without both proposal terms (the replayed MH ratios, the moments,
// detailed balance); HMC with a full momentum step at the end of its trajectory (the replayed
// ratios, reversibility, the energy error's order, the moments); slice sampling that forgets
// target.accept() (the target's adopted point differs from the chain's state).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/mcmc/fly/theta_kernels.hpp"
#include "flymc/mcmc/metric.hpp"
#include "flymc/validate/validate.hpp"
#include "theta_test_util.hpp"

using namespace flymc;
using namespace flymc::test;

namespace {

struct KernelCase {
  const char* name;
  KernelKind kind;
  SliceMode mode;
  double eps;  ///< in units of the target's smallest sd in the metric's units
  long iters;  ///< with the dense metric; ×4 with identity / diag (see run_case)
};
// Step sizes near the optimal scalings in dimension 4 (RW 2.38/√P, MALA ≈ P^(-1/6), HMC with
// L = 8 a trajectory of ≈ 2.4 sd, NUTS about what dual averaging to 0.8 picks, slice width 2 sd).
const KernelCase kKernels[] = {
    {"rwmh", KernelKind::rwmh, SliceMode::direction, 1.2, 300000},
    {"mala", KernelKind::mala, SliceMode::direction, 1.0, 150000},
    {"hmc", KernelKind::hmc, SliceMode::direction, 0.3, 30000},
    {"nuts", KernelKind::nuts, SliceMode::direction, 0.5, 20000},
    {"slice direction", KernelKind::slice, SliceMode::direction, 2.0, 100000},
    {"slice coordinate", KernelKind::slice, SliceMode::coordinate, 2.0, 60000},
};

/// HMC and NUTS: leapfrog trajectories, which stop (divergent) at a non-finite density.
bool trajectory(KernelKind k) { return k == KernelKind::hmc || k == KernelKind::nuts; }

/// Stan's windowed_adaptation (stan/mcmc/windowed_adaptation.hpp), transcribed counter for
/// counter: the slow windows [start, end) of a warm-up of `w` iterations.
std::vector<std::pair<long, long>> stan_windows(long w) {
  long init = 75, term = 50, base = 25;
  std::vector<std::pair<long, long>> out;
  if (w < 20) return out;
  if (init + base + term > w) {
    init = static_cast<long>(0.15 * static_cast<double>(w));
    term = static_cast<long>(0.1 * static_cast<double>(w));
    base = w - (init + term);
  }
  // restart()
  long counter = 0, size = base, next = init + size - 1;
  long start = init;
  for (; counter < w; ++counter) {
    const bool end_window = counter == next && counter != w;
    if (end_window) {
      out.emplace_back(start, counter + 1);
      start = counter + 1;
      // compute_next_window()
      if (next == w - term - 1) continue;
      size *= 2;
      next = counter + size;
      if (next != w - term - 1) {
        const long boundary = next + 2 * size;
        if (boundary >= w - term) next = w - term - 1;
      }
    }
  }
  return out;
}

/// Stan's regularized estimate of a window's draws: (n/(n+5))·S + 1e-3·(5/(n+5))·I, S the sample
/// (co)variance, by the two-pass formula.
Mat regularized_cov(const std::vector<std::vector<double>>& x) {
  const auto p = static_cast<Eigen::Index>(x[0].size());
  const double n = static_cast<double>(x.size());
  Vec m = Vec::Zero(p);
  for (const auto& v : x)
    for (Eigen::Index j = 0; j < p; ++j) m[j] += v[static_cast<std::size_t>(j)] / n;
  Mat s = Mat::Zero(p, p);
  for (const auto& v : x)
    for (Eigen::Index i = 0; i < p; ++i)
      for (Eigen::Index j = 0; j < p; ++j)
        s(i, j) +=
            (v[static_cast<std::size_t>(i)] - m[i]) * (v[static_cast<std::size_t>(j)] - m[j]);
  s /= n - 1.0;
  return (n / (n + 5.0)) * s + 1e-3 * (5.0 / (n + 5.0)) * Mat::Identity(p, p);
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("MetricAdaptation: Stan's slow windows for warmup 1000 and for short warm-ups") {
    CHECK(stan_windows(1000) == std::vector<std::pair<long, long>>{
                                    {75, 100}, {100, 150}, {150, 250}, {250, 450}, {450, 950}});
    // Short warm-ups: 15% fast, one slow window of 75%, 10% fast.
    CHECK(stan_windows(100) == std::vector<std::pair<long, long>>{{15, 90}});
    CHECK(stan_windows(20) == std::vector<std::pair<long, long>>{{3, 18}});
    CHECK(stan_windows(19).empty());
    // Windows as MetricAdaptation reports them (add() returns true at each window's end), for
    // every warm-up length up to 1500 and a few long ones.
    std::vector<long> lengths;
    for (long w = 0; w <= 1500; ++w) lengths.push_back(w);
    for (long w : {2000L, 4321L, 10000L}) lengths.push_back(w);
    long mismatches = 0;
    for (long w : lengths) {
      const auto expect = stan_windows(w);
      for (auto form : {InverseMetric::Form::diag, InverseMetric::Form::dense}) {
        MetricAdaptation ma(form, 1, w);
        InverseMetric m = form == InverseMetric::Form::diag ? InverseMetric::diagonal({1.0})
                                                            : InverseMetric::dense(Mat::Ones(1, 1));
        std::vector<long> ends;
        for (long it = 0; it < w; ++it) {
          const double x = static_cast<double>(it % 7);
          if (ma.add(it, &x, m)) ends.push_back(it + 1);
        }
        std::vector<long> want;
        for (const auto& e : expect) want.push_back(e.second);
        if (ends != want) {
          ++mismatches;
          if (mismatches < 5) {
            CAPTURE(w);
            CHECK(ends == want);
          }
        }
      }
    }
    CHECK(mismatches == 0);
  }

  TEST_CASE("MetricAdaptation: each window's estimate is Stan's regularized (co)variance") {
    const std::size_t p = 3;
    for (long warmup : {1000L, 120L, 40L}) {
      for (auto form : {InverseMetric::Form::diag, InverseMetric::Form::dense}) {
        CAPTURE(warmup);
        CAPTURE(static_cast<int>(form));
        MetricAdaptation ma(form, p, warmup);
        CHECK(ma.active());
        InverseMetric m = form == InverseMetric::Form::diag
                              ? InverseMetric::diagonal({1.0, 1.0, 1.0})
                              : InverseMetric::dense(Mat::Identity(3, 3));
        Rng rng(3, static_cast<std::uint64_t>(warmup));
        const auto windows = stan_windows(warmup);
        REQUIRE(!windows.empty());
        std::vector<std::vector<double>> all;
        std::size_t w = 0;
        for (long it = 0; it < warmup; ++it) {
          // Correlated draws with a drifting mean and scale, as warm-up draws are.
          const double a = rng.normal(), b = rng.normal(), c = rng.normal();
          const double s = 1.0 + 0.002 * static_cast<double>(it);
          std::vector<double> x = {5.0 + s * a, -1.0 + s * (0.8 * a + 0.6 * b),
                                   1e-3 * c + 0.1 * static_cast<double>(it)};
          all.push_back(x);
          const bool ended = ma.add(it, x.data(), m);
          CHECK(ended == (w < windows.size() && it + 1 == windows[w].second));
          if (!ended) continue;
          const auto [lo, hi] = windows[w++];
          const Mat want =
              regularized_cov(std::vector<std::vector<double>>(all.begin() + lo, all.begin() + hi));
          const Mat got = inverse_matrix(m);
          REQUIRE(m.form() == form);
          for (Eigen::Index i = 0; i < 3; ++i)
            for (Eigen::Index j = 0; j < 3; ++j) {
              CAPTURE(i);
              CAPTURE(j);
              const double expect = form == InverseMetric::Form::dense || i == j ? want(i, j) : 0.0;
              CHECK(got(i, j) == doctest::Approx(expect).epsilon(1e-10).scale(1e-300));
            }
        }
        CHECK(w == windows.size());
      }
    }
  }

  TEST_CASE("MetricAdaptation: the identity never adapts, nor a kernel with adapt_metric off") {
    MetricAdaptation ma(InverseMetric::Form::identity, 2, 1000);
    CHECK(!ma.active());
    InverseMetric m = InverseMetric::identity(2);
    for (long it = 0; it < 1000; ++it) {
      const double x[2] = {static_cast<double>(it), -3.0 * static_cast<double>(it % 5)};
      CHECK(!ma.add(it, x, m));
    }
    CHECK(m.form() == InverseMetric::Form::identity);
    // Warm-ups below 20 iterations: no windows (Stan: "No estimation is performed").
    CHECK(!MetricAdaptation(InverseMetric::Form::dense, 2, 19).active());

    // Whole kernels through a warm-up: identity with adaptation on, diag and dense with it off.
    TestTarget t = corr4();
    for (MetricForm f : {MetricForm::identity, MetricForm::diag, MetricForm::dense}) {
      CAPTURE(std::string(name_of(f)));
      RunConfig cfg = kernel_config(KernelKind::rwmh, SliceMode::direction);
      cfg.warmup = 400;
      cfg.adapt_metric = f == MetricForm::identity;
      const InverseMetric m0 = metric_for(f, 2.0 * t.cov());
      ThetaKernel k(cfg, 4, m0, 0.5);
      Rng rng(9, 1);
      ThetaState s = state_at(exact_draw(t, rng), t);
      run_chain(k, t, rng, s, 10, true, 400);
      CHECK(k.metric().form() == m0.form());
      CHECK(k.metric().inverse_values() == m0.inverse_values());
    }
  }

  TEST_CASE("HMC leapfrog: reversible, volume-preserving, energy error O(eps^2)") {
    // A non-Gaussian target (a quartic term) so that the flow is not linear.
    Vec mu(3);
    mu << 0.5, -1.0, 2.0;
    TestTarget t(mu, rotated_cov({0.3, 1.0, 3.0}, 5), 0.05);
    const std::size_t p = 3;
    for (MetricForm f : {MetricForm::identity, MetricForm::diag, MetricForm::dense}) {
      CAPTURE(std::string(name_of(f)));
      ThetaKernel k(kernel_config(KernelKind::hmc, SliceMode::direction), p, metric_for(f, t.cov()),
                    0.1);
      const Mat minv = inverse_matrix(k.metric());
      const Mat mass_chol = Eigen::LLT<Mat>(minv.inverse()).matrixL();  // p ~ N(0, M)
      Rng rng(21, 2);
      Counters cnt;
      // H = −log π(q) + ½pᵀM⁻¹p.
      auto energy = [&](const std::vector<double>& q, const std::vector<double>& mom) {
        Eigen::Map<const Vec> pv(mom.data(), static_cast<Eigen::Index>(p));
        return -t.log_density(q.data()) + 0.5 * pv.dot(minv * pv);
      };
      auto flow = [&](std::vector<double>& q, std::vector<double>& mom, double eps, int steps) {
        std::vector<double> g(p);
        t.gradient(q.data(), g.data());
        double lp = t.log_density(q.data());
        const bool ok =
            k.leapfrog(t, q.data(), mom.data(), g.data(), lp, eps, steps, energy(q, mom), cnt);
        REQUIRE(ok);
        CHECK(lp == t.log_density(q.data()));
      };
      auto random_start = [&](std::vector<double>& q, std::vector<double>& mom) {
        q = exact_draw(t, rng);
        Vec z(static_cast<Eigen::Index>(p));
        for (Eigen::Index j = 0; j < z.size(); ++j) z[j] = rng.normal();
        const Vec pm = mass_chol * z;
        mom.assign(pm.data(), pm.data() + pm.size());
      };

      // Reversibility: L steps, negate the momentum, L steps back.
      for (int rep = 0; rep < 20; ++rep) {
        std::vector<double> q, mom;
        random_start(q, mom);
        const std::vector<double> q0 = q, p0 = mom;
        flow(q, mom, 0.1, 25);
        double moved = 0.0;
        for (std::size_t j = 0; j < p; ++j) moved = std::max(moved, std::fabs(q[j] - q0[j]));
        CHECK(moved > 0.1);  // the trajectory went somewhere
        for (double& v : mom) v = -v;
        flow(q, mom, 0.1, 25);
        for (std::size_t j = 0; j < p; ++j) {
          CHECK(q[j] == doctest::Approx(q0[j]).epsilon(1e-12).scale(1.0));
          CHECK(-mom[j] == doctest::Approx(p0[j]).epsilon(1e-12).scale(1.0));
        }
      }

      // Volume preservation: det of the Jacobian of (q, p) -> Φ(q, p), by central differences.
      for (int rep = 0; rep < 3; ++rep) {
        std::vector<double> q, mom;
        random_start(q, mom);
        const auto n2 = static_cast<Eigen::Index>(2 * p);
        Mat jac(n2, n2);
        const double h = 1e-5;
        for (Eigen::Index c = 0; c < n2; ++c) {
          std::vector<double> out[2];
          for (int sgn = 0; sgn < 2; ++sgn) {
            std::vector<double> qq = q, pp = mom;
            const double d = sgn == 0 ? h : -h;
            if (c < static_cast<Eigen::Index>(p)) {
              qq[static_cast<std::size_t>(c)] += d;
            } else {
              pp[static_cast<std::size_t>(c) - p] += d;
            }
            flow(qq, pp, 0.1, 10);
            out[sgn] = qq;
            out[sgn].insert(out[sgn].end(), pp.begin(), pp.end());
          }
          for (Eigen::Index r = 0; r < n2; ++r)
            jac(r, c) =
                (out[0][static_cast<std::size_t>(r)] - out[1][static_cast<std::size_t>(r)]) /
                (2.0 * h);
        }
        CHECK(jac.determinant() == doctest::Approx(1.0).epsilon(1e-6));
      }

      // Energy error at a fixed trajectory length T = 0.6: halving ε quarters it.
      double err[3] = {0.0, 0.0, 0.0};
      for (int rep = 0; rep < 30; ++rep) {
        std::vector<double> q, mom;
        random_start(q, mom);
        const double h0 = energy(q, mom);
        for (int e = 0; e < 3; ++e) {
          const double eps = 0.05 / static_cast<double>(1 << e);
          std::vector<double> qq = q, pp = mom;
          flow(qq, pp, eps, 12 << e);
          err[e] += std::fabs(energy(qq, pp) - h0);
        }
      }
      CAPTURE(err[0]);
      CAPTURE(err[1]);
      CAPTURE(err[2]);
      CHECK(err[0] > 1e-5);  // visible at ε = 0.05
      CHECK(err[0] / err[1] == doctest::Approx(4.0).epsilon(0.15));
      CHECK(err[1] / err[2] == doctest::Approx(4.0).epsilon(0.1));
    }
  }

  TEST_CASE("MALA and HMC: the kernels' MH ratios equal an independent computation") {
    // The proposal is replayed from a copy of the kernel's random stream and the MH log-ratio
    // log π(θ')q(θ|θ') − log π(θ)q(θ'|θ) (MALA; HMC: H(θ, p) − H(θ', p')) recomputed with Eigen;
    // the kernel's acceptance statistic min(1, e^ratio), its decision and its new state must agree.
    TestTarget t = corr4();
    const std::size_t p = 4;
    for (KernelKind kind : {KernelKind::mala, KernelKind::hmc}) {
      for (MetricForm f : {MetricForm::identity, MetricForm::diag, MetricForm::dense}) {
        CAPTURE(std::string(to_string(kind)));
        CAPTURE(std::string(name_of(f)));
        const InverseMetric metric = metric_for(f, 1.3 * t.cov());
        const double eps = (kind == KernelKind::mala ? 1.4 : 1.2) * whitened_scale(t.cov(), metric);
        ThetaKernel k(kernel_config(kind, SliceMode::direction, 6), p, metric, eps);
        const Mat a = inverse_matrix(metric);  // M⁻¹
        const Mat l = Eigen::LLT<Mat>(a).matrixL();
        const Mat a_inv = a.inverse();
        auto grad = [&](const Vec& x) {
          Vec g(static_cast<Eigen::Index>(p));
          t.gradient(x.data(), g.data());
          return g;
        };
        auto logpi = [&](const Vec& x) { return t.log_density(x.data()); };
        Rng rng(41, static_cast<std::uint64_t>(kind) * 3 + static_cast<std::uint64_t>(f));
        long below_one = 0, accepted = 0;
        for (int rep = 0; rep < 300; ++rep) {
          // Start from an overdispersed draw, so that ratios vary widely.
          std::vector<double> th = exact_draw(t, rng);
          for (std::size_t j = 0; j < p; ++j)
            th[j] = t.mean()[static_cast<Eigen::Index>(j)] +
                    1.5 * (th[j] - t.mean()[static_cast<Eigen::Index>(j)]);
          ThetaState s = state_at(th, t);
          const Vec x = Eigen::Map<const Vec>(th.data(), static_cast<Eigen::Index>(p));
          Rng replay = rng;
          Counters cnt;
          const StepInfo info = k.step(rng, s, t, cnt);
          Vec y;
          double log_ratio;
          if (kind == KernelKind::mala) {
            Vec eta(static_cast<Eigen::Index>(p));
            for (Eigen::Index j = 0; j < eta.size(); ++j) eta[j] = replay.normal();
            const double h = 0.5 * eps * eps;
            y = x + h * a * grad(x) + eps * l * eta;
            // log N(to; from + (ε²/2)M⁻¹∇log π(from), ε²M⁻¹) up to its constant.
            auto log_q = [&](const Vec& to, const Vec& from) {
              const Vec r = to - from - h * a * grad(from);
              return -0.5 * r.dot(a_inv * r) / (eps * eps);
            };
            log_ratio = logpi(y) + log_q(x, y) - logpi(x) - log_q(y, x);
          } else {
            const double e = eps * (0.8 + 0.4 * replay.uniform());
            Vec eta(static_cast<Eigen::Index>(p));
            for (Eigen::Index j = 0; j < eta.size(); ++j) eta[j] = replay.normal();
            // p ~ N(0, M): p = L⁻ᵀη, M⁻¹ = LLᵀ.
            Vec mom = l.transpose().triangularView<Eigen::Upper>().solve(eta);
            const double h0 = -logpi(x) + 0.5 * mom.dot(a * mom);
            y = x;
            for (int st = 0; st < 6; ++st) {
              mom += 0.5 * e * grad(y);
              y += e * a * mom;
              mom += 0.5 * e * grad(y);
            }
            log_ratio = h0 - (-logpi(y) + 0.5 * mom.dot(a * mom));
          }
          CAPTURE(rep);
          CAPTURE(log_ratio);
          CHECK(info.accept_stat == info.adapt_stat);
          if (log_ratio >= 1e-9) {
            CHECK(info.accept_stat == 1.0);
          } else if (log_ratio < -1e-9) {
            ++below_one;
            CHECK(std::log(info.accept_stat) ==
                  doctest::Approx(log_ratio).epsilon(1e-8).scale(1.0));
          }
          // The decision: accepted iff log u < log_ratio, u the stream's next uniform.
          const bool accept = log_ratio >= 0.0 || std::log(replay.uniform_pos()) < log_ratio;
          bool moved = false;
          for (std::size_t j = 0; j < p; ++j) moved = moved || s.theta[j] != th[j];
          if (std::fabs(log_ratio) > 1e-9) CHECK(moved == accept);
          if (moved) {
            ++accepted;
            for (std::size_t j = 0; j < p; ++j)
              CHECK(s.theta[j] ==
                    doctest::Approx(y[static_cast<Eigen::Index>(j)]).epsilon(1e-11).scale(1.0));
          }
        }
        // Both branches were exercised.
        CHECK(below_one > 50);
        CHECK(accepted > 50);
        CHECK(accepted < 290);
      }
    }
  }

  TEST_CASE("ThetaKernel save()/load(): continuing after load gives bit-identical steps") {
    TestTarget t = corr4();
    const std::size_t p = 4;
    for (const KernelCase& kc : kKernels) {
      for (MetricForm f : {MetricForm::identity, MetricForm::diag, MetricForm::dense}) {
        CAPTURE(std::string(kc.name));
        CAPTURE(std::string(name_of(f)));
        RunConfig cfg = kernel_config(kc.kind, kc.mode, 5);
        cfg.adapt_metric = true;
        cfg.warmup = 300;  // windows [75, 100), [100, 150), [150, 250)
        Rng rng(17, 3);
        ThetaState s = state_at(exact_draw(t, rng), t);
        Counters cnt;
        // Stop mid-window (iteration 120 of [100, 150)), at a window's end (150), in the
        // terminal buffer (270), and in sampling (330); compare 60 further steps each time.
        for (long stop : {120L, 150L, 270L, 330L}) {
          CAPTURE(stop);
          ThetaKernel run(cfg, p, metric_for(f, Mat::Identity(4, 4)), 0.7);
          Rng r1 = rng;
          ThetaState s1 = s;
          for (long it = 0; it < stop; ++it) {
            if (it == cfg.warmup) run.end_warmup();
            const StepInfo info = run.step(r1, s1, t, cnt);
            if (it < cfg.warmup) run.adapt(it, info, s1.theta.data());
          }
          std::vector<double> saved;
          run.save(saved);
          ThetaKernel resumed(cfg, p, metric_for(f, Mat::Identity(4, 4)), 0.7);
          resumed.load(saved);
          std::vector<double> again;
          resumed.save(again);
          CHECK(std::memcmp(again.data(), saved.data(), saved.size() * sizeof(double)) == 0);
          CHECK(again.size() == saved.size());
          Rng r2 = r1;
          ThetaState s2 = s1;
          long diffs = 0;
          for (long it = stop; it < stop + 60; ++it) {
            if (it == cfg.warmup) {
              run.end_warmup();
              resumed.end_warmup();
            }
            const StepInfo i1 = run.step(r1, s1, t, cnt);
            const StepInfo i2 = resumed.step(r2, s2, t, cnt);
            if (it < cfg.warmup) {
              run.adapt(it, i1, s1.theta.data());
              resumed.adapt(it, i2, s2.theta.data());
            }
            const bool same = s1.theta == s2.theta && s1.logp == s2.logp &&
                              i1.accept_stat == i2.accept_stat &&
                              run.step_size() == resumed.step_size() &&
                              run.metric().inverse_values() == resumed.metric().inverse_values();
            diffs += same ? 0 : 1;
          }
          CHECK(diffs == 0);
          if (f != MetricForm::identity && stop > 150) {
            // the metric was adapted by then
            CHECK(run.metric().inverse_values() !=
                  metric_for(f, Mat::Identity(4, 4)).inverse_values());
          }
        }
      }
    }
  }

  TEST_CASE("ThetaKernel load() refuses a state of another form, dimension or length") {
    RunConfig cfg = kernel_config(KernelKind::hmc, SliceMode::direction);
    cfg.adapt_metric = true;
    cfg.warmup = 500;
    ThetaKernel dense(cfg, 3, InverseMetric::dense(Mat::Identity(3, 3)), 0.5);
    std::vector<double> st;
    dense.save(st);
    ThetaKernel ok(cfg, 3, InverseMetric::dense(Mat::Identity(3, 3)), 0.5);
    CHECK_NOTHROW(ok.load(st));
    ThetaKernel diag(cfg, 3, InverseMetric::diagonal({1.0, 1.0, 1.0}), 0.5);
    CHECK_THROWS_AS(diag.load(st), ConfigError);
    ThetaKernel other(cfg, 2, InverseMetric::dense(Mat::Identity(2, 2)), 0.5);
    CHECK_THROWS_AS(other.load(st), ConfigError);
    for (std::size_t len = 0; len < st.size(); ++len) {
      CAPTURE(len);
      ThetaKernel k(cfg, 3, InverseMetric::dense(Mat::Identity(3, 3)), 0.5);
      CHECK_THROWS_AS(k.load(std::span<const double>(st.data(), len)), ConfigError);
    }
    std::vector<double> longer = st;
    longer.push_back(0.0);
    CHECK_THROWS_AS(ok.load(longer), ConfigError);
  }

  TEST_CASE("non-finite densities: NaN and +inf proposals rejected and counted, -inf rejected") {
    // A standard normal in 2-D whose density is NaN for θ_0 > 1 and −inf for θ_0 < −1 (then +inf
    // for θ_0 > 1 instead of NaN): every kernel must stay inside, finite, and count the NaN / +inf
    // proposals; −inf is an ordinary zero density (FlyMC meets it at a bright datum's tangent
    // point), rejected but not counted.
    for (bool pinf : {false, true}) {
      for (const KernelCase& kc : kKernels) {
        CAPTURE(pinf);
        CAPTURE(std::string(kc.name));
        TestTarget t(Vec::Zero(2), Mat::Identity(2, 2));
        if (pinf) {
          t.pinf_above = 1.0;
        } else {
          t.nan_above = 1.0;
        }
        t.ninf_below = -1.0;
        ThetaKernel k(kernel_config(kc.kind, kc.mode, 10), 2, InverseMetric::identity(2),
                      trajectory(kc.kind) ? 0.3 : 1.5);
        Rng rng(5, 5);
        ThetaState s = state_at({0.0, 0.0}, t);
        ChainOut out = run_chain(k, t, rng, s, 20000);
        CHECK(out.nonfinite_state == 0);
        CHECK(out.bad_adopt == 0);
        CHECK(out.bad_cache == 0);
        double lo = 0.0, hi = 0.0;
        for (std::size_t i = 0; i < out.draws.size(); i += 2) {
          lo = std::min(lo, out.draws[i]);
          hi = std::max(hi, out.draws[i]);
        }
        CHECK(lo >= -1.0);
        CHECK(hi <= 1.0);
        CHECK(lo < -0.9);  // the chain did move up to the edges
        CHECK(hi > 0.9);
        CHECK(out.cnt.nonfinite > 100);
        if (trajectory(kc.kind)) CHECK(out.cnt.divergences > 100);
        CHECK(std::isfinite(out.accept));
      }
    }
  }

  TEST_CASE("slice sampling stays put, quickly, when the cached density is not the point's") {
    // A cached log density above the true one puts θ outside its own slice: no point of the line
    // is in the slice, and the interval shrinks onto θ. The update must then stop (about 60
    // shrinks, once the points tried are θ itself), not run to the 1e5-shrink guard.
    for (SliceMode mode : {SliceMode::direction, SliceMode::coordinate}) {
      CAPTURE(std::string(to_string(mode)));
      TestTarget t(Vec::Zero(2), Mat::Identity(2, 2));
      ThetaKernel k(kernel_config(KernelKind::slice, mode), 2, InverseMetric::identity(2), 2.0);
      Rng rng(4, 4);
      ThetaState s = state_at({0.3, -0.7}, t);
      s.logp += 50.0;
      Counters cnt;
      const StepInfo info = k.step(rng, s, t, cnt);
      CHECK(s.theta == std::vector<double>{0.3, -0.7});
      CHECK(cnt.queries < 200 * 2);
      CHECK(info.adapt_stat < 0.1);  // shrinks only
      // Every univariate update gave up, and each give-up is counted, not silent.
      CHECK(cnt.slice_failures == (mode == SliceMode::direction ? 1U : 2U));
    }
    // A consistent target never gives up.
    TestTarget t(Vec::Zero(2), Mat::Identity(2, 2));
    ThetaKernel k(kernel_config(KernelKind::slice, SliceMode::coordinate), 2,
                  InverseMetric::identity(2), 2.0);
    Rng rng(5, 5);
    ThetaState s = state_at({0.3, -0.7}, t);
    Counters cnt;
    for (int i = 0; i < 2000; ++i) k.step(rng, s, t, cnt);
    CHECK(cnt.slice_failures == 0);
  }

  TEST_CASE("HMC: an unstable step size gives counted divergences, never a non-finite state") {
    TestTarget t(Vec::Zero(3), rotated_cov({0.01, 1.0, 4.0}, 3));
    for (MetricForm f : {MetricForm::identity, MetricForm::dense}) {
      CAPTURE(std::string(name_of(f)));
      // ε far beyond the leapfrog's stability limit 2·(smallest sd in the metric's units).
      const InverseMetric m = metric_for(f, t.cov());
      ThetaKernel k(kernel_config(KernelKind::hmc, SliceMode::direction, 30), 3, m,
                    5.0 * whitened_scale(t.cov(), m));
      Rng rng(6, 6);
      ThetaState s = state_at({0.0, 0.0, 0.0}, t);
      ChainOut out = run_chain(k, t, rng, s, 500);
      CHECK(out.cnt.divergences > 400);
      CHECK(out.cnt.nonfinite == 0);
      CHECK(out.nonfinite_state == 0);
      CHECK(out.bad_adopt == 0);
      CHECK(out.accept < 0.2);
    }
  }
}

TEST_SUITE("statistical") {
  TEST_CASE("every kernel with every metric form leaves a correlated Gaussian invariant") {
    TestTarget t = corr4();
    const std::size_t p = 4;
    for (const KernelCase& kc : kKernels) {
      for (MetricForm f : {MetricForm::identity, MetricForm::diag, MetricForm::dense}) {
        CAPTURE(std::string(kc.name));
        CAPTURE(std::string(name_of(f)));
        const InverseMetric metric = metric_for(f, t.cov());
        const double eps = kc.eps * whitened_scale(t.cov(), metric);
        ThetaKernel k(kernel_config(kc.kind, kc.mode), p, metric, eps);
        Rng rng(1000 + static_cast<std::uint64_t>(kc.kind) * 10 + static_cast<std::uint64_t>(f),
                static_cast<std::uint64_t>(kc.mode));
        ThetaState s = state_at(exact_draw(t, rng), t);
        const long n = f == MetricForm::dense ? kc.iters : 4 * kc.iters;
        const ChainOut out = run_chain(k, t, rng, s, n);
        CHECK(out.bad_adopt == 0);
        CHECK(out.bad_cache == 0);
        CHECK(out.cnt.nonfinite == 0);
        CHECK(out.cnt.divergences == 0);
        CAPTURE(out.accept);
        check_moments(out.draws, t.mean(), t.cov());
      }
    }
  }

  TEST_CASE("an anisotropic target needs the dense metric; warm-up adaptation learns it") {
    // Eigenvalues 1e-4 .. 1e2 along rotated axes (condition number 1e6, correlations ≈ 0.99):
    // neither the identity nor a diagonal metric can take steps that fit both ends.
    Vec mu(3);
    mu << 10.0, -5.0, 0.0;
    TestTarget t(mu, rotated_cov({1e-4, 1.0, 100.0}, 23));
    const std::size_t p = 3;
    for (const KernelCase& kc : kKernels) {
      // Slice sampling along the coordinates scales each axis by √(M⁻¹)_jj but does not rotate:
      // no metric makes it fit correlations of 0.99.
      if (kc.kind == KernelKind::slice && kc.mode == SliceMode::coordinate) continue;
      CAPTURE(std::string(kc.name));
      const long n = kc.iters / 2;
      double ess_dense = 0.0, ess_diag = 0.0;
      for (MetricForm f : {MetricForm::dense, MetricForm::diag}) {
        CAPTURE(std::string(name_of(f)));
        const InverseMetric metric = metric_for(f, t.cov());
        ThetaKernel k(kernel_config(kc.kind, kc.mode), p, metric,
                      kc.eps * whitened_scale(t.cov(), metric));
        Rng rng(77, static_cast<std::uint64_t>(kc.kind) * 2 + static_cast<std::uint64_t>(f));
        ThetaState s = state_at(exact_draw(t, rng), t);
        const ChainOut out = run_chain(k, t, rng, s, n);
        double ess = kInf;  // the smallest over the coordinates
        for (std::size_t j = 0; j < p; ++j) {
          std::vector<double> x(static_cast<std::size_t>(n));
          for (std::size_t i = 0; i < x.size(); ++i) x[i] = out.draws[i * p + j];
          ess = std::min(ess, ess_mean({x}));
        }
        if (f == MetricForm::dense) {
          CHECK(out.bad_adopt == 0);
          check_moments(out.draws, t.mean(), t.cov());
          ess_dense = ess;
        } else {
          ess_diag = ess;
        }
      }
      // At the same budget the diagonal metric's effective sample size is many times smaller.
      CAPTURE(ess_dense);
      CAPTURE(ess_diag);
      CHECK(ess_dense > 20.0 * ess_diag);

      // Warm-up from a dense unit metric (badly scaled by up to 100×): dual averaging and Stan's
      // windows find the covariance; the sampling phase then matches the target.
      RunConfig cfg = kernel_config(kc.kind, kc.mode);
      cfg.adapt_metric = true;
      cfg.warmup = 3000;
      ThetaKernel k(cfg, p, InverseMetric::dense(Mat::Identity(3, 3)), 0.1);
      Rng rng(78, static_cast<std::uint64_t>(kc.kind) * 2 + static_cast<std::uint64_t>(kc.mode));
      ThetaState s = state_at(exact_draw(t, rng), t);
      const ChainOut out = run_chain(k, t, rng, s, n, true, cfg.warmup);
      const Mat learned = inverse_matrix(k.metric());
      // The learned M⁻¹ whitens the target: L⁻¹ΣL⁻ᵀ has eigenvalues near 1 (within 2×, against
      // 1e-4 .. 1e2 before).
      const Mat l = Eigen::LLT<Mat>(learned).matrixL();
      const Mat li = l.inverse();
      const Vec ev =
          Eigen::SelfAdjointEigenSolver<Mat>(li * t.cov() * li.transpose()).eigenvalues();
      CAPTURE(ev.transpose());
      CAPTURE(k.step_size());
      CHECK(ev.minCoeff() > 0.5);
      CHECK(ev.maxCoeff() < 2.0);
      CHECK(out.bad_adopt == 0);
      check_moments(out.draws, t.mean(), t.cov());
    }
  }

  TEST_CASE("detailed balance: (θ, θ') after one step from an exact draw is exchangeable") {
    // θ ~ π exactly, θ' one kernel step from θ. A reversible kernel makes (θ, θ') exchangeable,
    // so with the plane cut into 9 cells (terciles of the whitened coordinates) the transition
    // counts C_ab and C_ba are Binomial(C_ab + C_ba, 1/2) given their sum: Σ_{a<b} (C_ab −
    // C_ba)²/(C_ab + C_ba) is chi-square with 36 dof. Stationarity: θ' falls in each cell with
    // probability 1/9 (chi-square, 8 dof). Both at p > 1e-4. Slice sampling along the coordinates
    // in turn is invariant but not reversible (a fixed sweep order): stationarity only.
    Vec mu(2);
    mu << 0.5, -1.0;
    Mat cov(2, 2);
    cov << 1.0, 1.6, 1.6, 4.0;  // correlation 0.8
    TestTarget t(mu, cov);
    const Mat lc = Eigen::LLT<Mat>(cov).matrixL();
    const double cut = 0.4307272992954576;  // Φ⁻¹(2/3)
    auto cell = [&](const std::vector<double>& x) {
      const Vec z =
          lc.triangularView<Eigen::Lower>().solve(Eigen::Map<const Vec>(x.data(), 2) - mu);
      auto bin = [cut](double v) { return v < -cut ? 0 : v < cut ? 1 : 2; };
      return 3 * bin(z[0]) + bin(z[1]);
    };
    for (const KernelCase& kc : kKernels) {
      for (MetricForm f : {MetricForm::identity, MetricForm::dense}) {
        CAPTURE(std::string(kc.name));
        CAPTURE(std::string(name_of(f)));
        const InverseMetric metric = metric_for(f, cov);
        ThetaKernel k(kernel_config(kc.kind, kc.mode, 4), 2, metric,
                      kc.eps * whitened_scale(cov, metric));
        Rng rng(500 + static_cast<std::uint64_t>(kc.kind),
                static_cast<std::uint64_t>(f) + 10 * static_cast<std::uint64_t>(kc.mode));
        const long n = 200000;
        long counts[9][9] = {};
        long moves = 0;
        Counters cnt;
        for (long r = 0; r < n; ++r) {
          const std::vector<double> x = exact_draw(t, rng);
          ThetaState s = state_at(x, t);
          k.step(rng, s, t, cnt);
          moves += s.theta != x ? 1 : 0;
          ++counts[cell(x)][cell(s.theta)];
        }
        double sym = 0.0;
        int dof = 0;
        long off = 0;
        for (int a = 0; a < 9; ++a)
          for (int b = a + 1; b < 9; ++b) {
            const long m = counts[a][b] + counts[b][a];
            off += m;
            if (m == 0) continue;
            const double dd = static_cast<double>(counts[a][b] - counts[b][a]);
            sym += dd * dd / static_cast<double>(m);
            ++dof;
          }
        double stat = 0.0;
        for (int b = 0; b < 9; ++b) {
          long col = 0;
          for (int a = 0; a < 9; ++a) col += counts[a][b];
          const double e = static_cast<double>(n) / 9.0;
          stat += (static_cast<double>(col) - e) * (static_cast<double>(col) - e) / e;
        }
        CAPTURE(sym);
        CAPTURE(dof);
        CAPTURE(stat);
        CHECK(moves > n / 5);
        CHECK(off > n / 5);  // many transitions between cells: the test has power
        CHECK(chi_square_sf(stat, 8) > 1e-4);
        if (!(kc.kind == KernelKind::slice && kc.mode == SliceMode::coordinate))
          CHECK(chi_square_sf(sym, dof) > 1e-4);
      }
    }
  }

  TEST_CASE("non-finite densities: a truncated normal's variance from every kernel") {
    // NaN beyond θ_0 > 1 and −inf below −1 leave N(0, 1) truncated to [−1, 1] in θ_0 (a
    // rejection is a zero density), whose variance is 1 − 2φ(1)/(2Φ(1) − 1).
    const double phi1 = std::exp(-0.5) / std::sqrt(2.0 * M_PI);
    const double var = 1.0 - 2.0 * phi1 / std::erf(1.0 / std::sqrt(2.0));
    for (const KernelCase& kc : kKernels) {
      CAPTURE(std::string(kc.name));
      TestTarget t(Vec::Zero(2), Mat::Identity(2, 2));
      t.nan_above = 1.0;
      t.ninf_below = -1.0;
      ThetaKernel k(kernel_config(kc.kind, kc.mode, 4), 2, InverseMetric::identity(2),
                    trajectory(kc.kind) ? 0.3 : kc.eps * 0.6);
      Rng rng(8, static_cast<std::uint64_t>(kc.kind) * 2 + static_cast<std::uint64_t>(kc.mode));
      ThetaState s = state_at({0.0, 0.0}, t);
      const ChainOut out = run_chain(k, t, rng, s, kc.iters);
      double m = 0.0, se = 0.0, v = 0.0, se_v = 0.0;
      std::tie(m, se) = batch_mean(out.draws, 2, [](const double* x) { return x[0]; });
      std::tie(v, se_v) = batch_mean(out.draws, 2, [](const double* x) { return x[0] * x[0]; });
      CAPTURE(m);
      CAPTURE(v);
      CHECK(std::fabs(m) < 4.5 * se);
      CHECK(std::fabs(v - var) < 4.5 * se_v);
      CHECK(se_v < 0.03 * var);
    }
  }
}
