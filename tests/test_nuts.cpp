// The No-U-Turn sampler (mcmc/theta/nuts.hpp): its mechanics on small targets whose moments are
// known, and the engine running it end to end.
//
// - Moments: on a correlated 2-D Gaussian (identity metric) and a 10-D Gaussian (diagonal
//   metric) NUTS with a fixed step size reproduces the means and variances. Tolerance: 4.5
//   batch-means MCSE (test::mean_and_mcse, 40 batches per chain, 4 chains: Student's t with 159
//   degrees of freedom, P(|t| > 4.5) ≈ 1.3e-5 per comparison), with the MCSE required below 5%
//   of the sd so that a bias of 0.25 sd is caught with power ≈ 1. Fixed seeds: deterministic.
// - The tree: its depth exceeds 1 on these targets and never the cap; a tiny step size builds
//   every tree to max_treedepth (2^D − 1 leapfrog steps); a quartic cliff makes divergences,
//   counted once per transition, with the state intact.
// - The target contract: after every transition the target's adopted point is the chain's θ,
//   accept() was called once per move and never for a transition that stays; a target with a
//   stateless accept() (FullTarget) is not re-evaluated and yields the same chain bit for bit.
// - The engine: logistic regression with `--kernel nuts`, regular and FlyMC, writes Stan's NUTS
//   columns in Stan's order with consistent values, and summaries leave them out.
// The invariance, detailed-balance, non-finite and save()/load() cases of test_theta_kernels.cpp
// run NUTS too; checkpoint/resume: test_checkpoint.cpp; calibration: test_sbc.cpp.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "flymc/io/output.hpp"
#include "flymc/io/stan_csv.hpp"
#include "flymc/mcmc/columns.hpp"
#include "flymc/mcmc/fly/theta_kernels.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "test_util.hpp"
#include "theta_test_util.hpp"

using namespace flymc;
using namespace flymc::test;
namespace fs = std::filesystem;

namespace {

/// TestTarget with a stateless accept(), as FullTarget declares it: NUTS then adopts the draw's
/// stored log density and gradient without evaluating it again.
class StatelessTarget : public TestTarget {
 public:
  using TestTarget::TestTarget;
  static constexpr bool kStatelessAccept = true;
};

/// N(0, I) in 2-D with a cliff: beyond θ_0 = 1.5 the log density falls with slope 10⁴, so a
/// leapfrog step that overshoots the edge by more than 0.1 raises H by more than 1000. No value is
/// ever non-finite.
class CliffTarget : public TestTarget {
 public:
  CliffTarget() : TestTarget(Vec::Zero(2), Mat::Identity(2, 2)) {}
  double log_density(const double* th) const { return TestTarget::log_density(th) - cliff(th[0]); }
  void gradient(const double* th, double* g) const {
    TestTarget::gradient(th, g);
    if (th[0] > kEdge) g[0] -= kSlope;
  }
  double eval(const double* th, Counters& c) { return TestTarget::eval(th, c) - cliff(th[0]); }
  double eval_grad(const double* th, double* g, Counters& c) {
    const double lp = TestTarget::eval_grad(th, g, c);
    if (th[0] > kEdge) g[0] -= kSlope;
    return lp - cliff(th[0]);
  }

 private:
  static constexpr double kEdge = 1.5, kSlope = 1e4;
  static double cliff(double x) { return x > kEdge ? kSlope * (x - kEdge) : 0.0; }
};

RunConfig nuts_config(int max_depth = 10) {
  RunConfig cfg = kernel_config(KernelKind::nuts, SliceMode::direction);
  cfg.max_treedepth = max_depth;
  return cfg;
}

/// What NUTS chains produced: per chain the draws (n × p), and over all transitions the
/// per-transition reports and the contract checks.
struct NutsRun {
  std::vector<std::vector<double>> draws;
  Counters cnt;
  int min_depth = 1 << 30, max_depth = 0;
  double mean_depth = 0.0, accept = 0.0;
  long leapfrog = 0, divergent = 0, moves = 0, accepts = 0;
  long divergent_moves = 0;  ///< divergent transitions that moved (to a point built before)
  long bad_leapfrog = 0;     ///< n_leapfrog outside [2^d − 1, 2^(d+1) − 1] for depth d
  long bad_adopt = 0;        ///< the target's adopted point is not θ
  long bad_cache = 0;        ///< the cached log density or gradient is not θ's
  long nonfinite_state = 0;
};

/// `chains` chains of n transitions, each started from an exact draw.
template <class Target>
NutsRun run_nuts(Target& t, const RunConfig& cfg, const InverseMetric& metric, double eps,
                 int chains, long n, std::uint64_t seed) {
  NutsRun out;
  const std::size_t p = t.dim();
  std::vector<double> g(p);
  long steps = 0;
  for (int ch = 0; ch < chains; ++ch) {
    ThetaKernel k(cfg, p, metric, eps);
    Rng rng(seed, static_cast<std::uint64_t>(ch));
    // The start as state_at() makes it, from Target's own functions.
    ThetaState s;
    s.theta = exact_draw(t, rng);
    s.grad.assign(p, 0.0);
    t.gradient(s.theta.data(), s.grad.data());
    s.logp = t.log_density(s.theta.data());
    t.start(s.theta);
    const long accepts0 = t.accepts;
    std::vector<double>& d = out.draws.emplace_back();
    for (long it = 0; it < n; ++it, ++steps) {
      const std::vector<double> before = s.theta;
      const StepInfo info = k.step(rng, s, t, out.cnt);
      out.min_depth = std::min(out.min_depth, info.treedepth);
      out.max_depth = std::max(out.max_depth, info.treedepth);
      out.mean_depth += info.treedepth;
      out.accept += info.accept_stat;
      out.leapfrog += info.n_leapfrog;
      out.divergent += info.divergent ? 1 : 0;
      const bool moved = s.theta != before;
      out.moves += moved ? 1 : 0;
      out.divergent_moves += moved && info.divergent ? 1 : 0;
      const long lo = (1L << info.treedepth) - 1, hi = (2L << info.treedepth) - 1;
      if (info.n_leapfrog < std::max(lo, 1L) || info.n_leapfrog > hi) ++out.bad_leapfrog;
      if (t.adopted() != s.theta) ++out.bad_adopt;
      t.gradient(s.theta.data(), g.data());
      if (s.logp != t.log_density(s.theta.data()) || g != s.grad) ++out.bad_cache;
      bool finite = std::isfinite(s.logp) && std::isfinite(info.energy);
      for (double v : s.theta) finite = finite && std::isfinite(v);
      if (!finite) ++out.nonfinite_state;
      d.insert(d.end(), s.theta.begin(), s.theta.end());
    }
    out.accepts += t.accepts - accepts0;
  }
  out.mean_depth /= static_cast<double>(steps);
  out.accept /= static_cast<double>(steps);
  return out;
}

/// Coordinate j of every chain's draws.
std::vector<std::vector<double>> coordinate(const NutsRun& r, std::size_t p, std::size_t j) {
  std::vector<std::vector<double>> out;
  for (const auto& d : r.draws) {
    std::vector<double>& c = out.emplace_back();
    for (std::size_t i = j; i < d.size(); i += p) c.push_back(d[i]);
  }
  return out;
}

/// Means and variances of every coordinate within 4.5 batch-means MCSE (see the file comment).
void check_mean_and_variance(const NutsRun& r, const Vec& mu, const Mat& cov) {
  const auto p = static_cast<std::size_t>(mu.size());
  for (std::size_t j = 0; j < p; ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    const double m = mu[jj], var = cov(jj, jj), sd = std::sqrt(var);
    const auto x = coordinate(r, p, j);
    double mean = 0.0, se = 0.0, v = 0.0, se_v = 0.0;
    std::tie(mean, se) = mean_and_mcse(x, [](double y) { return y; });
    std::tie(v, se_v) = mean_and_mcse(x, [m](double y) { return (y - m) * (y - m); });
    CAPTURE(j);
    CAPTURE(mean);
    CAPTURE(se);
    CAPTURE(v);
    CAPTURE(se_v);
    CHECK(std::fabs(mean - m) < 4.5 * se);
    CHECK(std::fabs(v - var) < 4.5 * se_v);
    CHECK(se < 0.05 * sd);
    CHECK(se_v < 0.05 * var);
  }
}

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("flymc-nuts-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("NUTS: a correlated 2-D Gaussian's means and variances, identity metric") {
    Vec mu(2);
    mu << 0.5, -1.0;
    Mat cov(2, 2);
    cov << 1.0, 1.6, 1.6, 4.0;  // correlation 0.8, sds 1 and 2
    TestTarget t(mu, cov);
    const InverseMetric metric = InverseMetric::identity(2);
    const NutsRun r =
        run_nuts(t, nuts_config(), metric, 1.1 * whitened_scale(cov, metric), 4, 5000, 31);
    CAPTURE(r.mean_depth);
    CAPTURE(r.accept);
    check_mean_and_variance(r, mu, cov);
    CHECK(r.min_depth >= 1);
    CHECK(r.max_depth <= 10);
    CHECK(r.mean_depth > 1.5);  // trajectories longer than two steps: the criterion at work
    CHECK(r.bad_leapfrog == 0);
    CHECK(r.bad_adopt == 0);
    CHECK(r.bad_cache == 0);
    CHECK(r.nonfinite_state == 0);
    CHECK(r.divergent == 0);
    CHECK(r.cnt.divergences == 0);
    CHECK(r.accept > 0.7);
  }

  TEST_CASE("NUTS: a 10-D Gaussian's means and variances, diagonal metric") {
    Vec mu(10);
    for (Eigen::Index j = 0; j < 10; ++j) mu[j] = 0.3 * static_cast<double>(j) - 1.0;
    const Mat cov = rotated_cov({0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0}, 41);
    TestTarget t(mu, cov);
    const InverseMetric metric = metric_for(MetricForm::diag, cov);
    const NutsRun r =
        run_nuts(t, nuts_config(), metric, 1.1 * whitened_scale(cov, metric), 4, 4000, 32);
    CAPTURE(r.mean_depth);
    CAPTURE(r.accept);
    check_mean_and_variance(r, mu, cov);
    CHECK(r.min_depth >= 1);
    CHECK(r.max_depth > 2);
    CHECK(r.max_depth <= 10);
    CHECK(r.bad_leapfrog == 0);
    CHECK(r.bad_adopt == 0);
    CHECK(r.bad_cache == 0);
    CHECK(r.divergent == 0);
  }

  TEST_CASE("NUTS: accept() once per move, never when the draw is the start point") {
    // With a large step size many trajectories keep their start point: then the target must not
    // adopt anything (its last evaluation is a trajectory point, not θ).
    Vec mu(3);
    mu << 1.0, 0.0, -1.0;
    const Mat cov = rotated_cov({0.5, 1.0, 2.0}, 5);
    TestTarget t(mu, cov, 0.02);  // a quartic term: the flow is not linear
    const InverseMetric metric = InverseMetric::identity(3);
    const NutsRun r =
        run_nuts(t, nuts_config(), metric, 2.0 * whitened_scale(cov, metric), 2, 3000, 33);
    CAPTURE(r.moves);
    CHECK(r.moves > 300);
    CHECK(r.moves < 5700);  // both kinds of transition occur
    CHECK(r.accepts == r.moves);
    CHECK(r.bad_adopt == 0);
    CHECK(r.bad_cache == 0);
    // One gradient per leapfrog step, and one more per move to refresh the target's cache.
    CHECK(r.cnt.grad_evals == static_cast<std::uint64_t>(r.leapfrog + r.moves));

    // A stateless accept(): the draw's stored values, no extra evaluation, the same chain.
    StatelessTarget u(mu, cov, 0.02);
    const NutsRun q =
        run_nuts(u, nuts_config(), metric, 2.0 * whitened_scale(cov, metric), 2, 3000, 33);
    CHECK(q.cnt.grad_evals == static_cast<std::uint64_t>(q.leapfrog));
    CHECK(q.bad_cache == 0);
    CHECK(q.draws == r.draws);
    CHECK(q.leapfrog == r.leapfrog);
  }

  TEST_CASE("NUTS: a tiny step size builds every tree to max_treedepth") {
    TestTarget t(Vec::Zero(2), Mat::Identity(2, 2));
    for (int depth : {1, 4, 6, 10}) {
      CAPTURE(depth);
      const NutsRun r = run_nuts(t, nuts_config(depth), InverseMetric::identity(2), 1e-4, 1,
                                 depth == 10 ? 5 : 50, 34);
      CHECK(r.min_depth == depth);
      CHECK(r.max_depth == depth);
      // 1 + 2 + … + 2^(D−1) steps per transition.
      CHECK(r.leapfrog == static_cast<long>(r.draws[0].size() / 2) * ((1L << depth) - 1));
      CHECK(r.accept > 0.999);  // a tiny energy error everywhere
      CHECK(r.bad_adopt == 0);
    }
  }

  TEST_CASE("NUTS: a cliff makes divergences, counted once per transition, the state intact") {
    // A leapfrog step over the cliff's edge raises H by far more than 1000: the tree stops there,
    // and the draw comes from the part built before.
    CliffTarget t;
    const NutsRun r = run_nuts(t, nuts_config(), InverseMetric::identity(2), 0.5, 1, 2000, 35);
    CAPTURE(r.divergent);
    CHECK(r.divergent > 100);
    CHECK(r.cnt.divergences == static_cast<std::uint64_t>(r.divergent));
    CHECK(r.cnt.nonfinite == 0);
    CHECK(r.nonfinite_state == 0);
    CHECK(r.bad_adopt == 0);
    CHECK(r.bad_cache == 0);
    CHECK(r.moves > 1000);
    CHECK(r.divergent_moves > 50);  // the draws made before a divergence stand
  }

  TEST_CASE("NUTS end to end: logistic regression, regular and FlyMC, Stan's columns" *
            doctest::test_suite("threaded")) {
    auto ds = logistic_data(400, 3, 21);
    for (Algo algo : {Algo::full, Algo::flymc}) {
      CAPTURE(std::string(to_string(algo)));
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = algo;
      cfg.kernel = KernelKind::nuts;
      cfg.chains = 2;
      cfg.threads = 2;
      cfg.warmup = 300;
      cfg.iters = 300;
      cfg.thin = 2;
      cfg.seed = 9;
      const fs::path dir = temp_dir(to_string(algo));
      const RunResult r = run(cfg, ds, stan_csv_sinks(dir.string(), cfg));
      CAPTURE(r.accept_rate());
      CHECK(r.accept_rate() > 0.6);  // dual averaging towards 0.8
      CHECK(r.accept_rate() < 0.97);
      std::vector<std::string> want = {"lp__",        "accept_stat__", "stepsize__",
                                       "treedepth__", "n_leapfrog__",  "divergent__",
                                       "energy__",    "n_bright__",    "n_queries__"};
      want.insert(want.end(), r.names.begin(), r.names.end());
      for (int c = 1; c <= cfg.chains; ++c) {
        CAPTURE(c);
        const StanCsv csv = read_stan_csv((dir / ("chain-" + std::to_string(c) + ".csv")).string());
        CHECK(csv.columns == want);
        CHECK(csv.config_value("kernel") == "nuts");
        CHECK(csv.config_value("max_treedepth") == "10");
        const ChainResult& res = r.chains[static_cast<std::size_t>(c - 1)];
        REQUIRE(csv.draws.size() == res.kept);
        double depth_sum = 0.0;
        for (std::size_t i = 0; i < csv.draws.size(); ++i) {
          const std::vector<double>& row = csv.draws[i];
          const double depth = row[3], leapfrog = row[4], divergent = row[5], energy = row[6];
          depth_sum += depth;
          CHECK(row[0] == res.lp[i]);
          CHECK(depth >= 0.0);
          CHECK(depth <= 10.0);
          CHECK(leapfrog >= std::max(1.0, std::exp2(depth) - 1.0));
          CHECK(leapfrog <= std::exp2(depth + 1.0) - 1.0);
          CHECK((divergent == 0.0 || divergent == 1.0));
          CHECK(std::isfinite(energy));
          // H = −log π + kinetic ≥ −lp__ at the same θ (FlyMC's lp__ is after the z-sweep).
          if (algo == Algo::full) CHECK(energy >= -row[0]);
          for (std::size_t j = 0; j < r.dim; ++j)
            CHECK(draw_params(KernelKind::nuts, row)[j] == res.draws[i * r.dim + j]);
        }
        CHECK(depth_sum / static_cast<double>(csv.draws.size()) > 1.0);
        // The summary's quantities are the parameters alone.
        std::vector<ChainDraws> per_col(csv.columns.size(), ChainDraws(1));
        for (std::size_t k = 0; k < csv.columns.size(); ++k)
          for (const auto& row : csv.draws) per_col[k][0].push_back(row[k]);
        std::vector<std::string> names;
        for (const NamedSummary& s : summarize_columns(csv.columns, per_col))
          names.push_back(s.name);
        CHECK(names == r.names);
      }
      fs::remove_all(dir);
    }
  }
}
