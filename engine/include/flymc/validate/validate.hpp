#pragma once
/// @file validate.hpp
/// Statistical validation of the samplers: simulation-based calibration (SBC) and Geweke's
/// joint-distribution test, plus the distribution functions their p-values need.
///
/// - SBC (Talts, Betancourt, Simpson, Vehtari & Gelman 2018, "Validating Bayesian inference
///   algorithms with simulation-based calibration", arXiv:1804.06788): draw θ* from the prior,
///   simulate y from the model, sample p(θ | y), and rank θ* among the posterior draws. For an
///   exact sampler whose kept draws are independent the rank is uniform on {0, ..., L}.
/// - Geweke (2004, "Getting it right: joint distribution tests of posterior simulators", JASA
///   99:799-804): the marginal-conditional simulator (θ ~ p(θ), y ~ p(y | θ), z ~ p(z | θ, y))
///   and the successive-conditional simulator (alternate the sampler's transition on (θ, z) given
///   y with y ~ p(y | θ), z ~ p(z | θ, y)) have the same stationary joint distribution when the
///   transition is correct; test functions g(θ, y, z) are compared by z-scores whose standard
///   errors come from batch means.
///
/// Both run many independent pieces (SBC replicates, Geweke chains) in parallel with oneTBB; each
/// piece owns the random stream Rng(seed, piece), so results do not depend on the thread count.
///
/// Both test exact samplers: a failure is a bug. Samplers that are approximate by design are
/// judged by their measured bias against a reference posterior instead, not by these tests.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"

namespace flymc {

// ---------------------------------------------------------------------------------------------
// Distribution functions.

/// Regularized lower incomplete gamma P(a, x) = γ(a, x)/Γ(a), a > 0, x ≥ 0: the power series
/// (Abramowitz & Stegun 6.5.29) for x < a + 1 and Legendre's continued fraction for Q (A&S 6.5.31)
/// evaluated by the modified Lentz method otherwise, as in Press, Teukolsky, Vetterling &
/// Flannery, "Numerical Recipes" (3rd ed., 2007), section 6.2. Relative accuracy ~1e-14.
/// Returns NaN for invalid arguments. Thread-safe (no lgamma/signgam global).
double regularized_gamma_p(double a, double x);
/// Q(a, x) = 1 − P(a, x), computed directly (no cancellation in the upper tail).
double regularized_gamma_q(double a, double x);
/// Upper-tail probability of the chi-square distribution with `dof` ≥ 1 degrees of freedom:
/// Q(dof/2, x/2).
double chi_square_sf(double x, int dof);
/// Two-sided normal p-value of a z-score: P(|Z| ≥ |z|) = erfc(|z|/√2).
double normal_two_sided_p(double z);
/// log Γ(a) for a > 0 (Lanczos approximation, g = 7, 9 terms; relative error < 1e-14).
double log_gamma(double a);

// ---------------------------------------------------------------------------------------------
// Simulation-based calibration.

/// The sampler defaults of SBC: RunConfig's, except 1 θ-step per z-sweep and an explicit
/// resample fraction of 0.05, so that the default thinning (200 iterations) makes the kept draws
/// nearly independent at n = 100 (ESS ≈ L; measured in docs/validation.md). Exactness does not
/// depend on either lever; with other levers raise `thin` until the report's ESS/L is ≈ 1.
inline RunConfig sbc_run_defaults() {
  RunConfig c;
  c.algo = Algo::flymc;  // SBC checks one named sampler, each replicate a fixed length
  c.ess = 0.0;
  c.theta_steps = 1;
  c.resample_fraction = 0.05;
  return c;
}

/// Options of run_sbc(). The model is run.model with run.prior (Gaussian or Laplace, sd
/// run.prior_sd) on every coefficient; each replicate draws θ* from the prior and simulates n rows:
/// d − 1 features x ~ N(0, 1) and a last bias column of ones, then labels ±1 with P(+1) =
/// σ(x·θ*) (logistic), class labels from softmax(W* x) over `classes` classes (softmax), or
/// responses x·θ* + s·t_ν (robust regression, ν = run.student_nu, s = run.noise_scale).
struct SbcOptions {
  /// The sampler. chains is forced to 1; iters = draws·thin, thin = thin; seed is replaced by a
  /// per-replicate seed; threads by 1 (parallelism is over replicates); prior_sd is the prior's.
  RunConfig run = sbc_run_defaults();
  std::size_t n = 100;      ///< rows per simulated data set
  std::size_t d = 3;        ///< coefficients per class, the bias included
  std::size_t classes = 3;  ///< softmax: classes K (θ has K·d coefficients)
  int reps = 1000;          ///< replicates R
  long draws = 99;          ///< kept draws L per replicate (ranks take L + 1 values)
  long thin = 200;          ///< sampling iterations per kept draw K (ESS of the kept draws ≈ L)
  int bins = 20;            ///< histogram bins B (≤ L + 1)
  std::uint64_t seed = 1;
  int threads = 0;      ///< worker threads over replicates (0: all cores)
  double alpha = 0.01;  ///< family-wise level; each quantity is tested at alpha / (P + 1)
  /// Single-index models: each datum also gets 1 to 5 trials, uniformly (a family that reads
  /// trials: its response sums that many of its draws), and an offset o_n ~ N(0, 0.5²) added to
  /// its predictor; the run reads both from the data set (Dataset::trials(), offsets()).
  bool trials = false;
  bool offsets = false;

  /// @throw ConfigError naming the option when a value is out of range.
  void validate() const;
};

/// The rank statistics of one quantity (a coordinate θ_j or the log-likelihood).
struct RankTest {
  std::string name;
  std::vector<long> ranks;       ///< per replicate, in 0..L
  std::vector<long> counts;      ///< histogram over the B bins
  std::vector<double> expected;  ///< expected count per bin under uniform ranks
  double chi2 = 0.0;             ///< Pearson statistic Σ (count − expected)² / expected
  int dof = 0;                   ///< B − 1
  double p_value = 1.0;
  double max_deviation = 0.0;  ///< max over bins of |count − expected| / expected
  double ess_ratio = 0.0;      ///< mean over replicates of ess_bulk(kept draws) / L
  double lag1 = 0.0;           ///< mean over replicates of the lag-1 autocorrelation
  bool pass = true;
};

struct SbcResult {
  SbcOptions options;
  std::vector<RankTest> quantities;  ///< the parameters (θ.j or W.k.j), then loglik
  double threshold = 0.0;            ///< per-quantity p-value cut: alpha / quantities
  double seconds = 0.0;              ///< wall time
  double accept_rate = 0.0;          ///< mean over replicates
  double bright_mean = 0.0;          ///< mean bright count over replicates (n for regular MCMC)
  std::uint64_t bound_violations = 0, nonfinite = 0;
  /// True when every quantity passes.
  bool passed() const;
};

/// Runs SBC. `progress`, if given, counts finished replicates (may be polled from another thread).
/// @throw ConfigError for invalid options.
SbcResult run_sbc(const SbcOptions& opt, std::atomic<int>* progress = nullptr);

/// The text report: options, per-quantity chi-square, p-value and verdict (or deviation), ESS of
/// the kept draws, and a text histogram of the ranks per quantity.
std::string format_report(const SbcResult& r);

// ---------------------------------------------------------------------------------------------
// Geweke's joint-distribution test.

struct GewekeOptions {
  Algo algo = Algo::flymc;
  BoundTuning bound = BoundTuning::untuned;
  ZUpdate z = ZUpdate::implicit;
  KernelKind kernel = KernelKind::rwmh;
  std::size_t n = 20;  ///< rows of the (fixed) design; features x ~ N(0,1) plus a bias column
  std::size_t d = 2;   ///< coefficients, the bias included
  double prior_sd = 1.0;
  double q_dark_to_bright = 0.1;
  double resample_fraction = 0.1;
  double untuned_xi = 1.5;
  double bound_slack = 0.0;
  /// Fixed step size of the θ-kernel (slice: interval width), identity metric: no adaptation,
  /// which would break the invariance being tested.
  double step_size = 0.5;
  int hmc_steps = 5;                            ///< leapfrog steps per HMC trajectory
  SliceMode slice_mode = SliceMode::direction;  ///< slice sampling mode
  int theta_steps = 1;                          ///< θ-steps per z-sweep
  int sweeps = 3;          ///< (θ-steps, z-sweep) rounds per successive-conditional transition
  long iters = 100000;     ///< successive-conditional transitions per chain, after burn-in
  long burn = 1000;        ///< discarded transitions per chain
  int chains = 4;          ///< independent successive-conditional chains
  long mc_draws = 200000;  ///< marginal-conditional draws in total
  int batches = 50;        ///< batch means per chain (and per marginal-conditional block)
  std::uint64_t seed = 1;
  int threads = 0;
  double alpha = 0.01;  ///< family-wise level, Bonferroni over the test functions

  void validate() const;
};

/// One test function g: means and batch-means standard errors under both simulators, and the
/// exact expectation when it is known (NaN otherwise).
struct GewekeStat {
  std::string name;
  double mc_mean = 0.0, mc_se = 0.0;  ///< marginal-conditional simulator
  double sc_mean = 0.0, sc_se = 0.0;  ///< successive-conditional simulator
  double exact = 0.0;                 ///< E g under the joint, or NaN
  double z = 0.0;        ///< (sc − mc)/√(se_sc² + se_mc²), or (sc − exact)/se_sc
  double p_value = 1.0;  ///< two-sided, from z
  bool pass = true;
};

struct GewekeResult {
  GewekeOptions options;
  std::vector<GewekeStat> stats;
  double threshold = 0.0;  ///< per-function p-value cut: alpha / stats
  double seconds = 0.0;
  double accept_rate = 0.0;  ///< θ-step acceptance in the successive-conditional chains
  std::uint64_t bound_violations = 0, nonfinite = 0;
  bool passed() const;
};

/// Exact E[z̄] = E[(1/n) Σ_n z_n] under θ ~ N(0, prior_sd² I), y ~ p(y | θ), z ~ p(z | θ, y) with
/// the untuned Jaakkola–Jordan bound ξ_n = xi and slack ε: with s_n² = prior_sd²·|x_n|²,
///   E z_n = 1 − e^{−ε} e^{λξ²}/cosh(ξ/2) · (1 + 2λs_n²)^{−1/2} · exp(s_n²/(8(1 + 2λs_n²))).
/// `rows` is n × stride, the first d entries of each row used.
double expected_bright_fraction_untuned(const double* rows, std::size_t n, std::size_t d,
                                        std::size_t stride, double prior_sd, double xi,
                                        double slack);

/// Runs the test. `progress`, if given, counts finished transitions over all chains.
GewekeResult run_geweke(const GewekeOptions& opt, std::atomic<long>* progress = nullptr);

std::string format_report(const GewekeResult& r);

}  // namespace flymc
