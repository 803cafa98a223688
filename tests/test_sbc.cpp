// Exactness by simulation-based calibration (SBC) and Geweke's joint-distribution test
// (engine/validate.hpp, docs/validation.md), and unit tests of their distribution functions,
// determinism, reports and command line.
//
// Why the "statistical" suite has enough power. Each SBC case runs R = 1000 replicates of
// L = 99 kept draws (thinned by 200; the ESS of the kept draws is checked to be ≈ L, so the ranks
// of an exact sampler are uniform) and tests d + 1 = 4 rank histograms of B = 20 bins with a
// chi-square at family-wise level 0.001 (a quantity fails at p < 2.5e-4: statistic > 48.1 on 19
// dof). For bin probabilities p_b of a miscalibrated sampler the statistic is non-central with
// λ = R·B·Σ_b (p_b − 1/B)², and λ ≥ 50 gives power ≥ 0.92. For posterior draws too narrow or too
// wide by a factor r, or shifted by δ posterior standard deviations, in any one coordinate or in
// the log-likelihood, that is r ≤ 0.85, r ≥ 1.21 or |δ| ≥ 0.22. The Geweke cases compare
// 4 × 100,000 successive-conditional transitions with 200,000 marginal-conditional draws; a
// function fails at |z| > 3.84 (p < 0.001/8), and the batch-means standard errors (≈ 0.008 for
// E θ_j² = 1, ≈ 0.6% of the bright fraction) put a 4.5% error in a stationary variance or a 3%
// error in the bright fraction beyond that with power ≈ 0.95.
// Shown once on a private copy of the tree (docs/validation.md): reversing the implicit update's
// inequality (docs/math.md §1.2) fails all 4 implicit SBC cases (p from 2e-6 down to 1e-190) and
// both implicit Geweke cases (bright fraction |z| ≈ 390-460); dropping the bright pseudo-likelihood
// from FlyTarget::eval fails all 6 FlyMC SBC cases (every quantity, p ≤ 1e-13) and all 3 Geweke
// cases (θ_j² |z| up to 38). The seeds are fixed, so the suite is deterministic; a correct sampler
// passes at these seeds, and at fresh seeds raises a false alarm with probability ≤ 0.001 per
// case.
// The θ-kernel cases, each shown to fail on a private copy of the tree together with the kernel
// tests (test_theta_kernels.cpp) and the exactness test: dropping MALA's reverse-proposal term
// fails SBC regular MALA and both Geweke kernel cases; dropping both proposal terms also SBC
// FlyMC MALA; a full instead of a half momentum step at the end of HMC's trajectory fails SBC
// regular HMC (its kept draws turn autocorrelated) and both Geweke cases; a slice update that
// forgets target.accept() fails SBC FlyMC slice and the FlyMC Geweke case. NUTS
// (tools/mutants/nuts-*.patch): drawing the trajectory's last point fails both NUTS SBC cases
// and the NUTS Geweke case; always taking the new subtree's draw fails SBC regular NUTS and
// Geweke; adopting the last leapfrog step's cache for the draw fails SBC FlyMC NUTS and Geweke.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/validate/validate.hpp"

using namespace flymc;
namespace fs = std::filesystem;

namespace {

/// The SBC configuration of the CI suite (see the header comment).
SbcOptions ci_sbc(Algo algo, BoundTuning bound, ZUpdate z, std::uint64_t seed) {
  SbcOptions o;
  o.run.algo = algo;
  o.run.bound = bound;
  o.run.z = z;
  o.run.theta_steps = 1;
  // The explicit update touches ⌈N·f⌉ data per iteration; f = 0.05 (5 of 100) lets thin 200
  // give kept draws with ESS ≈ L (at f = 0.01 thin 500 would be needed; exactness holds for any f).
  o.run.resample_fraction = 0.05;
  o.n = 100;
  o.d = 3;
  o.reps = 1000;
  o.draws = 99;
  o.thin = 200;
  o.bins = 20;
  o.alpha = 0.001;
  o.seed = seed;
  return o;
}

/// The θ-kernel SBC cases: the kernel at its defaults except 8 leapfrog steps for HMC, so warm-up
/// adapts the step size and a diagonal metric from the Laplace covariance, over 300 iterations
/// (Stan's windows [75, 100), [100, 150), [150, 250); the chains start at θ_MAP). Their kept draws
/// decorrelate in fewer iterations than RW-MH's, so `thin` is set per case for ESS ≈ L (checked
/// by check_sbc). FlyMC uses q = 0.1, with which z mixes in ≈ 10 sweeps instead of ≈ 100, the
/// limit of a gradient kernel's FlyMC chain (exactness does not depend on q).
SbcOptions kernel_sbc(KernelKind kind, SliceMode mode, Algo algo, long thin, std::uint64_t seed) {
  SbcOptions o = ci_sbc(algo, BoundTuning::map, ZUpdate::implicit, seed);
  o.run.kernel = kind;
  o.run.slice_mode = mode;
  o.run.hmc_steps = 8;
  o.run.warmup = 300;
  o.run.q_dark_to_bright = 0.1;
  o.thin = thin;
  return o;
}

/// The other models' cases: softmax (3 classes, d = 2: six coefficients) and robust regression
/// (d = 3, ν = 4), n = 60 rows, 1000 replicates of 39 kept draws in 8 bins (expected count 125 per
/// bin), `thin` set per case for ESS ≈ L.
SbcOptions model_sbc(ModelKind model, Algo algo, BoundTuning bound, ZUpdate z, KernelKind kernel,
                     long thin, std::uint64_t seed) {
  SbcOptions o = ci_sbc(algo, bound, z, seed);
  o.run.model = model;
  o.run.kernel = kernel;
  o.run.warmup = 500;
  o.n = 60;
  o.d = model == ModelKind::softmax ? 2 : 3;
  o.classes = 3;
  o.draws = 39;
  o.bins = 8;
  o.thin = thin;
  return o;
}

void check_sbc(const SbcOptions& o) {
  const SbcResult r = run_sbc(o);
  CHECK_MESSAGE(r.passed(), format_report(r));
  CHECK(r.bound_violations == 0);
  CHECK(r.nonfinite == 0);
  for (const RankTest& t : r.quantities) {
    CAPTURE(t.name);
    CAPTURE(t.ess_ratio);
    CAPTURE(t.lag1);
    // The kept draws are nearly independent, the premise of uniform ranks.
    CHECK(t.ess_ratio > 0.85);
    CHECK(std::fabs(t.lag1) < 0.06);
  }
}

GewekeOptions ci_geweke(BoundTuning bound, ZUpdate z, std::uint64_t seed) {
  GewekeOptions o;
  o.bound = bound;
  o.z = z;
  o.n = 20;
  o.d = 2;
  o.iters = 100000;
  o.chains = 4;
  o.mc_draws = 200000;
  o.alpha = 0.001;
  o.seed = seed;
  return o;
}

void check_geweke(const GewekeOptions& o) {
  const GewekeResult r = run_geweke(o);
  CHECK_MESSAGE(r.passed(), format_report(r));
  CHECK(r.bound_violations == 0);
  CHECK(r.nonfinite == 0);
}

struct CliResult {
  int code;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

CliResult run_cli(const std::string& args, const fs::path& dir) {
  // In `dir`: see test_cli.cpp's run_cli (the default ./flymc-out must not be shared).
  const std::string cmd = "cd '" + dir.string() + "' && " + std::string(FLYMC_CLI_PATH) + " " +
                          args + " >" + (dir / "out.txt").string() + " 2>" +
                          (dir / "err.txt").string();
  const int st = std::system(cmd.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(dir / "out.txt"), slurp(dir / "err.txt")};
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("log_gamma and the regularized incomplete gamma match known values") {
    for (double a : {0.1, 0.5, 1.0, 1.5, 2.5, 7.0, 9.5, 30.0, 171.3, 1e4})
      CHECK(log_gamma(a) == doctest::Approx(std::lgamma(a)).epsilon(1e-13).scale(1.0));
    for (double a : {0.5, 1.0, 3.0, 9.5, 50.0})
      for (double x : {0.01, 0.7, 3.0, 9.0, 10.5, 60.0, 200.0})
        CHECK(regularized_gamma_p(a, x) + regularized_gamma_q(a, x) ==
              doctest::Approx(1.0).epsilon(1e-13));
    // dof 2: Q(1, x/2) = e^{-x/2}, also far in the tail (relative accuracy).
    for (double x : {0.1, 1.0, 5.0, 40.0, 200.0, 1000.0})
      CHECK(chi_square_sf(x, 2) == doctest::Approx(std::exp(-0.5 * x)).epsilon(1e-12));
    // dof 1: erfc(sqrt(x/2)).
    for (double x : {0.01, 0.5, 2.0, 9.0, 50.0})
      CHECK(chi_square_sf(x, 1) == doctest::Approx(std::erfc(std::sqrt(0.5 * x))).epsilon(1e-12));
    // Tabulated quantiles of chi-square (upper 5% and 1% points).
    CHECK(chi_square_sf(30.1435, 19) == doctest::Approx(0.05).epsilon(1e-4));
    CHECK(chi_square_sf(36.1909, 19) == doctest::Approx(0.01).epsilon(1e-4));
    CHECK(chi_square_sf(124.342, 100) == doctest::Approx(0.05).epsilon(1e-4));
    CHECK(chi_square_sf(18.307, 10) == doctest::Approx(0.05).epsilon(1e-4));
    CHECK(chi_square_sf(0.0, 5) == 1.0);
    CHECK(std::isnan(chi_square_sf(1.0, 0)));
    CHECK(normal_two_sided_p(1.959963984540054) == doctest::Approx(0.05).epsilon(1e-12));
  }

  TEST_CASE("the exact expected bright fraction under the untuned bound matches Monte Carlo") {
    // Direct simulation of E[(1/n) Σ_n (1 − B_n/L_n)] over θ ~ N(0, σ²I), y ~ p(y | θ), from the
    // bound's definition (docs/math.md §2.1), against the closed form.
    const std::size_t n = 5, d = 3, stride = padded_stride(d);
    const double sd = 1.3, xi = 1.5, slack = 0.02;
    Rng rng(5, 6);
    std::vector<double> rows(n * stride, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j + 1 < d; ++j) rows[i * stride + j] = rng.normal();
      rows[i * stride + d - 1] = 1.0;
    }
    const double lam = jj_lambda(xi);
    const long draws = 400000;
    double s = 0.0, s2 = 0.0;
    for (long t = 0; t < draws; ++t) {
      double th[3];
      for (double& v : th) v = sd * rng.normal();
      double frac = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        double dot = 0.0;
        for (std::size_t j = 0; j < d; ++j) dot += rows[i * stride + j] * th[j];
        const double p_pos = 1.0 / (1.0 + std::exp(-dot));
        const double a = rng.uniform() < p_pos ? dot : -dot;
        const double log_l = -std::log1p(std::exp(-a));
        const double log_b =
            -std::log1p(std::exp(-xi)) + 0.5 * (a - xi) - lam * (a * a - xi * xi) - slack;
        frac += -std::expm1(log_b - log_l);
      }
      frac /= static_cast<double>(n);
      s += frac;
      s2 += frac * frac;
    }
    const double mean = s / draws, se = std::sqrt((s2 / draws - mean * mean) / draws);
    const double exact = expected_bright_fraction_untuned(rows.data(), n, d, stride, sd, xi, slack);
    CAPTURE(mean);
    CAPTURE(exact);
    CHECK(std::fabs(mean - exact) < 4.0 * se);
    CHECK(se < 0.01 * exact);
  }

  TEST_CASE("SBC and Geweke results do not depend on the thread count" *
            doctest::test_suite("threaded")) {
    SbcOptions o;
    o.reps = 6;
    o.draws = 19;
    o.thin = 3;
    o.bins = 4;
    o.run.warmup = 100;
    o.threads = 1;
    const SbcResult a = run_sbc(o);
    o.threads = 2;
    const SbcResult b = run_sbc(o);
    REQUIRE(a.quantities.size() == 4);
    for (std::size_t k = 0; k < a.quantities.size(); ++k)
      CHECK(a.quantities[k].ranks == b.quantities[k].ranks);

    GewekeOptions g;
    g.iters = 500;
    g.burn = 10;
    g.batches = 10;
    g.chains = 3;
    g.mc_draws = 600;
    g.threads = 1;
    const GewekeResult ga = run_geweke(g);
    g.threads = 2;
    const GewekeResult gb = run_geweke(g);
    REQUIRE(ga.stats.size() == 8);
    for (std::size_t k = 0; k < ga.stats.size(); ++k) {
      CHECK(ga.stats[k].sc_mean == gb.stats[k].sc_mean);
      CHECK(ga.stats[k].mc_mean == gb.stats[k].mc_mean);
    }
  }

  TEST_CASE("SBC flags autocorrelated draws") {
    // Unthinned RW-MH draws are strongly autocorrelated: the ranks pile up at 0 and L.
    SbcOptions o;
    o.run.algo = Algo::full;
    o.reps = 1000;
    o.draws = 99;
    o.thin = 1;
    o.run.warmup = 300;
    o.seed = 3;
    const SbcResult bad = run_sbc(o);
    CHECK_FALSE(bad.passed());
    const std::string rep = format_report(bad);
    CHECK(rep.find("FAIL") != std::string::npos);
    CHECK(rep.find("autocorrelated") != std::string::npos);
    CHECK(bad.quantities[0].ess_ratio < 0.5);
  }

  TEST_CASE("flymc validate: exit codes 0 / 1 / 64 / 78, JSON output, every model") {
    const fs::path dir =
        fs::temp_directory_path() / ("flymc-validate-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string small = "--reps 40 --draws 19 --thin 50 --bins 4 --warmup 200 --seed 2 ";
    CliResult r =
        run_cli("validate sbc --algo full " + small + "--json " + (dir / "sbc.json").string(), dir);
    CHECK_MESSAGE(r.code == 0, (r.out + r.err));
    CHECK(r.out.find("result: PASS") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(dir / "sbc.json"));
    CHECK(j.at("test") == "sbc");
    CHECK(j.at("quantities").size() == 4);
    CHECK(j.at("quantities").at(3).at("name") == "loglik");
    CHECK(j.at("quantities").at(0).at("ranks").size() == 40);
    CHECK(j.at("passed") == true);

    r = run_cli("validate sbc --algo full --reps 1000 --thin 1 --warmup 300 --seed 3", dir);
    CHECK(r.code == 1);
    CHECK(r.err.find("ranks not uniform") != std::string::npos);
    r = run_cli("validate sbc --algo full --reps 1000 --thin 1 --warmup 300 --seed 3 --approximate",
                dir);
    CHECK(r.code == 64);  // the flag is gone: approximate samplers are judged by their bias
    for (const char* model : {"softmax", "robust"}) {
      CAPTURE(model);
      r = run_cli("validate sbc --model " + std::string(model) + " " + small + "--json " +
                      (dir / "m.json").string(),
                  dir);
      CHECK_MESSAGE(r.code == 0, (r.out + r.err));
      const auto jm = nlohmann::json::parse(slurp(dir / "m.json"));
      CHECK(jm.at("options").at("model") == model);
      CHECK(jm.at("quantities").size() == (std::string(model) == "softmax" ? 10U : 4U));
    }
    r = run_cli("validate sbc --model softmax --classes 1", dir);
    CHECK(r.code == 78);
    // The samplers beside FlyMC, with their own options; geweke keeps to FlyMC and regular MCMC.
    r = run_cli("validate sbc --algo zigzag-cv --pdmp-precondition none --pdmp-spacing 0.5 " +
                    small + "--json " + (dir / "zz.json").string(),
                dir);
    CHECK_MESSAGE(r.code == 0, (r.out + r.err));
    CHECK(nlohmann::json::parse(slurp(dir / "zz.json")).at("options").at("algo") == "zigzag-cv");
    r = run_cli("validate sbc --algo sgld --batch-size 0", dir);
    CHECK(r.code == 78);
    r = run_cli("validate geweke --algo bps", dir);
    CHECK(r.code == 64);

    r = run_cli("validate sbc --draws 9 --bins 20", dir);
    CHECK(r.code == 78);
    r = run_cli("validate sbc --z sideways", dir);
    CHECK(r.code == 64);

    r = run_cli(
        "validate geweke --iters 2000 --burn 10 --batches 20 --chains 2 --mc-draws 4000 "
        "--json " +
            (dir / "g.json").string(),
        dir);
    CHECK_MESSAGE(r.code == 0, (r.out + r.err));
    const auto g = nlohmann::json::parse(slurp(dir / "g.json"));
    CHECK(g.at("test") == "geweke");
    CHECK(g.at("functions").size() == 8);
    fs::remove_all(dir);
  }
}

TEST_SUITE("statistical") {
  // SBC, regular MCMC and FlyMC × {untuned, MAP-tuned} × {explicit, implicit}, RW-MH.
  TEST_CASE("SBC: regular MCMC (RW-MH) is calibrated") {
    check_sbc(ci_sbc(Algo::full, BoundTuning::map, ZUpdate::implicit, 101));
  }
  TEST_CASE("SBC: FlyMC untuned bound, implicit z-updates, is calibrated") {
    check_sbc(ci_sbc(Algo::flymc, BoundTuning::untuned, ZUpdate::implicit, 102));
  }
  TEST_CASE("SBC: FlyMC untuned bound, explicit z-updates, is calibrated") {
    check_sbc(ci_sbc(Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_, 103));
  }
  TEST_CASE("SBC: FlyMC MAP-tuned bound, implicit z-updates, is calibrated") {
    check_sbc(ci_sbc(Algo::flymc, BoundTuning::map, ZUpdate::implicit, 104));
  }
  TEST_CASE("SBC: FlyMC MAP-tuned bound, explicit z-updates, is calibrated") {
    check_sbc(ci_sbc(Algo::flymc, BoundTuning::map, ZUpdate::explicit_, 105));
  }
  TEST_CASE("SBC: FlyMC MAP-tuned, bound slack 0.01, 5 theta-steps per z-sweep, is calibrated") {
    SbcOptions o = ci_sbc(Algo::flymc, BoundTuning::map, ZUpdate::implicit, 106);
    o.run.bound_slack = 0.01;
    o.run.theta_steps = 5;
    check_sbc(o);
  }

  TEST_CASE("SBC: FlyMC MAP-tuned, implicit, RW proposals with the dense Laplace metric") {
    SbcOptions o = ci_sbc(Algo::flymc, BoundTuning::map, ZUpdate::implicit, 107);
    o.run.metric = Metric::dense;
    check_sbc(o);
  }

  TEST_CASE("SBC: FlyMC with HMC and the FlyMC metric (prior + bound curvature, blended)") {
    SbcOptions o = kernel_sbc(KernelKind::hmc, SliceMode::direction, Algo::flymc, 20, 108);
    o.run.metric = Metric::fly;
    o.run.fly_metric_blend = 0.5;
    check_sbc(o);
  }

  // The θ-kernels (see kernel_sbc), regular MCMC and FlyMC (MAP-tuned bound, implicit z-updates).
  TEST_CASE("SBC: regular MCMC with MALA is calibrated") {
    check_sbc(kernel_sbc(KernelKind::mala, SliceMode::direction, Algo::full, 10, 111));
  }
  TEST_CASE("SBC: FlyMC with MALA is calibrated") {
    check_sbc(kernel_sbc(KernelKind::mala, SliceMode::direction, Algo::flymc, 20, 112));
  }
  TEST_CASE("SBC: regular MCMC with HMC is calibrated") {
    check_sbc(kernel_sbc(KernelKind::hmc, SliceMode::direction, Algo::full, 5, 113));
  }
  TEST_CASE("SBC: FlyMC with HMC is calibrated") {
    check_sbc(kernel_sbc(KernelKind::hmc, SliceMode::direction, Algo::flymc, 20, 114));
  }
  // NUTS adapts its step size to a 0.6 target here, not its default 0.8: the sampler is exact
  // at any step size, and the larger energy errors make a wrong choice of the draw along the
  // trajectory visible in the ranks (at 0.8 the acceptance settles near 0.92, and drawing the
  // trajectory's last point instead of the multinomial draw still passed SBC at R = 1000).
  TEST_CASE("SBC: regular MCMC with NUTS is calibrated") {
    SbcOptions o = kernel_sbc(KernelKind::nuts, SliceMode::direction, Algo::full, 5, 117);
    o.run.target_accept = 0.6;
    check_sbc(o);
  }
  TEST_CASE("SBC: FlyMC with NUTS is calibrated") {
    SbcOptions o = kernel_sbc(KernelKind::nuts, SliceMode::direction, Algo::flymc, 20, 118);
    o.run.target_accept = 0.6;
    check_sbc(o);
  }
  TEST_CASE("SBC: FlyMC with NUTS and the per-datum slack (--slack-scale 1) is calibrated") {
    SbcOptions o = kernel_sbc(KernelKind::nuts, SliceMode::direction, Algo::flymc, 20, 119);
    o.run.target_accept = 0.6;
    o.run.slack_scale = 1.0;
    check_sbc(o);
  }
  TEST_CASE("SBC: regular MCMC with slice sampling along the coordinates is calibrated") {
    check_sbc(kernel_sbc(KernelKind::slice, SliceMode::coordinate, Algo::full, 5, 115));
  }
  TEST_CASE("SBC: FlyMC with slice sampling along random directions is calibrated") {
    check_sbc(kernel_sbc(KernelKind::slice, SliceMode::direction, Algo::flymc, 20, 116));
  }

  // The softmax and robust-regression models, FlyMC (MAP-tuned and untuned) and regular MCMC.
  TEST_CASE("SBC: softmax, FlyMC MAP-tuned with MALA, is calibrated") {
    check_sbc(model_sbc(ModelKind::softmax, Algo::flymc, BoundTuning::map, ZUpdate::implicit,
                        KernelKind::mala, 200, 121));
  }
  TEST_CASE("SBC: softmax, FlyMC untuned, explicit z-updates, is calibrated") {
    check_sbc(model_sbc(ModelKind::softmax, Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_,
                        KernelKind::rwmh, 300, 122));
  }
  TEST_CASE("SBC: softmax, regular MCMC with MALA, is calibrated") {
    check_sbc(model_sbc(ModelKind::softmax, Algo::full, BoundTuning::map, ZUpdate::implicit,
                        KernelKind::mala, 100, 123));
  }
  TEST_CASE("SBC: robust regression, FlyMC MAP-tuned, Laplace prior, slice sampling") {
    SbcOptions o = model_sbc(ModelKind::robust, Algo::flymc, BoundTuning::map, ZUpdate::implicit,
                             KernelKind::slice, 200, 124);
    o.run.prior = "laplace";
    check_sbc(o);
  }
  TEST_CASE("SBC: robust regression, FlyMC untuned, explicit z-updates, is calibrated") {
    check_sbc(model_sbc(ModelKind::robust, Algo::flymc, BoundTuning::untuned, ZUpdate::explicit_,
                        KernelKind::rwmh, 200, 125));
  }
  TEST_CASE("SBC: robust regression, regular MCMC, is calibrated") {
    check_sbc(model_sbc(ModelKind::robust, Algo::full, BoundTuning::map, ZUpdate::implicit,
                        KernelKind::rwmh, 200, 126));
  }

  // Geweke: the FlyMC transition, z-updates included, against the joint distribution.
  TEST_CASE("Geweke: FlyMC untuned bound, implicit z-updates") {
    check_geweke(ci_geweke(BoundTuning::untuned, ZUpdate::implicit, 201));
  }
  TEST_CASE("Geweke: FlyMC untuned bound, explicit z-updates") {
    check_geweke(ci_geweke(BoundTuning::untuned, ZUpdate::explicit_, 202));
  }
  TEST_CASE("Geweke: FlyMC MAP-tuned bound (rebuilt for every y), implicit, slack, theta-steps") {
    GewekeOptions o = ci_geweke(BoundTuning::map, ZUpdate::implicit, 203);
    o.iters = 50000;
    o.mc_draws = 100000;
    o.bound_slack = 0.01;
    o.theta_steps = 2;
    check_geweke(o);
  }

  // Geweke with the θ-kernels at a fixed step size and the identity metric, FlyMC (untuned bound,
  // implicit z-updates) and regular MCMC; 4 × 50,000 transitions against 100,000
  // marginal-conditional draws (the standard errors are √2 of the ones above).
  TEST_CASE("Geweke: FlyMC with MALA, HMC and slice sampling along random directions") {
    for (KernelKind kind : {KernelKind::mala, KernelKind::hmc, KernelKind::slice}) {
      CAPTURE(std::string(to_string(kind)));
      GewekeOptions o = ci_geweke(BoundTuning::untuned, ZUpdate::implicit,
                                  210 + static_cast<std::uint64_t>(kind));
      o.iters = 50000;
      o.mc_draws = 100000;
      o.kernel = kind;
      o.step_size = kind == KernelKind::mala ? 0.6 : kind == KernelKind::hmc ? 0.25 : 1.0;
      o.slice_mode = SliceMode::direction;
      check_geweke(o);
    }
  }
  TEST_CASE("Geweke: FlyMC and regular MCMC with NUTS") {
    for (Algo algo : {Algo::flymc, Algo::full}) {
      CAPTURE(std::string(to_string(algo)));
      GewekeOptions o =
          ci_geweke(BoundTuning::untuned, ZUpdate::implicit, algo == Algo::flymc ? 214 : 224);
      o.algo = algo;
      o.iters = 50000;
      o.mc_draws = 100000;
      o.kernel = KernelKind::nuts;
      o.step_size = 0.5;
      check_geweke(o);
    }
  }
  TEST_CASE("Geweke: regular MCMC with MALA, HMC and slice sampling along the coordinates") {
    for (KernelKind kind : {KernelKind::mala, KernelKind::hmc, KernelKind::slice}) {
      CAPTURE(std::string(to_string(kind)));
      GewekeOptions o = ci_geweke(BoundTuning::untuned, ZUpdate::implicit,
                                  220 + static_cast<std::uint64_t>(kind));
      o.algo = Algo::full;
      o.iters = 50000;
      o.mc_draws = 100000;
      o.kernel = kind;
      o.step_size = kind == KernelKind::mala ? 0.6 : kind == KernelKind::hmc ? 0.25 : 1.0;
      o.slice_mode = SliceMode::coordinate;
      check_geweke(o);
    }
  }
}
