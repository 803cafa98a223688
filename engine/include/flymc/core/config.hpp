#pragma once
/// @file config.hpp
/// Run configuration: one struct with validate(), instead of long argument lists.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "flymc/core/model_table.hpp"  // ModelKind
#include "flymc/core/storage.hpp"

namespace flymc {

class SingleIndexFamily;
class PositiveGlobalFamily;

/// FlyMC, regular full-data MCMC, one of the approximate subsampling samplers: minibatch
/// Metropolis–Hastings with the Barker test (Seita, Pan, Chen & Canny 2017) and stochastic
/// gradient Langevin dynamics (Welling & Teh 2011), docs/math.md §5 and §6; or one of the
/// piecewise-deterministic (continuous-time) samplers of docs/math.md §7: the bouncy particle
/// sampler with the full gradient (Bouchard-Côté, Vollmer & Doucet 2018) or with subsampled
/// gradients and a Lipschitz bound (lipSBPS), the stochastic BPS with its adaptive bound (SBPS)
/// and its preconditioned variant (pSBPS; Pakman, Gilboa, Carlson & Paninski 2017), Zig-Zag
/// with subsampling and Zig-Zag with control variates (Bierkens, Fearnhead & Roberts 2019); or
/// scalable Metropolis–Hastings (Cornish, Vanetti, Bouchard-Côté, Deligiannidis & Doucet 2019),
/// exact with a factorised acceptance on a few data per proposal (docs/math.md §8).
enum class Algo {
  flymc,
  full,
  minibatch_mh,
  sgld,
  bps,
  lipsbps,
  sbps,
  psbps,
  zigzag_ss,
  zigzag_cv,
  smh,
  /// `--algo auto`, the default: run() pilots the exact samplers that fit and runs the one
  /// predicted to end soonest (choose_algo.hpp, docs/math.md §3.3). Never a run's resolved value.
  automatic
};
enum class BoundTuning { map, untuned };     ///< docs/math.md §1.4
enum class ZUpdate { implicit, explicit_ };  ///< docs/math.md §1.2 / 1.1
/// θ-kernels (docs/math.md §3): random-walk MH, MALA, HMC (leapfrog), slice sampling (Neal 2003),
/// the No-U-Turn sampler (Hoffman & Gelman 2014, multinomial as Stan runs it), preconditioned
/// Crank–Nicolson around θ_MAP and its ρ = 0 case, the independence sampler (docs/math.md §8).
enum class KernelKind { rwmh, mala, hmc, slice, nuts, pcn, imh };
/// Whether the kernel steps along ∇ log π (MALA, HMC, NUTS): the chain then caches the gradient
/// at θ, and FlyMC's bright set the per-datum coefficients of its bright part.
inline bool uses_gradient(KernelKind k) noexcept {
  return k == KernelKind::mala || k == KernelKind::hmc || k == KernelKind::nuts;
}
enum class Init { map, prior };  ///< chain starting points
/// What a run does when a family's bound or envelope is found violated (log B_n > log L_n beyond
/// rounding, a scalable-MH remainder above its bound, an event rate above its bound): the
/// constant is wrong and the draws are not the posterior's. `stop` ends the run with a
/// BoundViolationError naming the family, the datum and its predictor; `finish` runs to the end
/// and marks the run not exact (RunResult::exact(), its warnings, summary.json).
enum class OnViolation { stop, finish };
/// The binomial model's link: logit (logistic regression per trial) or probit.
enum class Link { logit, probit };
/// The kernels' metric (the RW proposal covariance, MALA's preconditioner, HMC's inverse mass
/// matrix, the slice directions' scale): the identity (the paper's isotropic walk), or a
/// diagonal or dense covariance, which starts from the Laplace covariance at θ_MAP and, with
/// RunConfig::adapt_metric, is re-estimated from the warm-up draws in Stan's windows.
/// `automatic` is the measured default per kernel: identity for RW-MH (Table 1's comparison),
/// diag for MALA, HMC, NUTS and slice sampling; dense (the Laplace covariance) for pCN and the
/// independence sampler, whose Gaussian it is.
/// `fly` (FlyMC only) is a dense metric fitted to what FlyMC's θ-kernels actually target,
/// p(θ | z), rather than to the posterior: its precision is the prior's plus the curvature of the
/// collapsed bound, −∇² Σ_n log B_n, which the sufficient statistics hold (docs/math.md §3.2),
/// optionally blended with the posterior's Laplace precision (RunConfig::fly_metric_blend). It
/// is fixed for the run (warm-up draws estimate the posterior, not p(θ | z), so it is not
/// re-estimated); any fixed metric leaves the chain exact.
enum class Metric { automatic, identity, diag, dense, fly };
/// A coefficient's prior (flymc/core/prior_spec.hpp has how users write them): normal, Laplace,
/// Student-t, or flat (improper, uniform on the real line).
enum class PriorKind { gaussian, laplace, student_t, flat };
/// Softmax classification's quadratic bound on lse (docs/math.md §2.2): Böhning's fixed curvature
/// ½(I − 𝟙𝟙ᵀ/K) for every datum (Böhning 1992), or `tight`: per datum the tightest (by expected
/// gap under the Laplace approximation) of Böhning's and the Jebara–Choromanska bounds (Jebara &
/// Choromanska 2012) over class orders, much less curved for confidently classified data.
enum class SoftmaxBoundKind { bohning, tight };
/// Slice sampling: one univariate slice update per coordinate in turn, or one along a random
/// direction drawn from N(0, metric).
enum class SliceMode { coordinate, direction };
/// Scalable MH's proposal (docs/math.md §8), in the whitened coordinates u = Lᵀ(θ − θ̂), H = LLᵀ
/// the Laplace precision at θ̂: preconditioned Crank–Nicolson u' = ρu + √(1 − ρ²)ξ, which leaves
/// the Laplace Gaussian invariant (ρ = 0: the independence sampler), or a random walk u' = u + hξ.
enum class SmhProposal { pcn, rw };
/// The piecewise-deterministic samplers' coordinates (docs/math.md §7.6): `laplace` moves in
/// u = T⁻¹θ, T the Cholesky factor of the Laplace covariance at θ_MAP, so that the posterior is
/// near the standard normal in u; `laplace_diag` takes T = diag(Laplace sds), which rescales but
/// does not decorrelate; `none` moves in θ itself. A fixed T keeps the exact samplers exact.
enum class PdmpPrecondition { laplace, laplace_diag, none };

/// The automatic implicit z-update rate: q = min(cap, max(32, 4·B)/N), B the expected bright
/// count, cap from auto_q_cap. A dark datum with bright odds r_n turns bright at rate min(q, r_n)
/// per sweep (docs/math.md §1.2), so a q above the typical odds, about B/N, refreshes the bright
/// set about as fast as any larger q, while a sweep costs q·N bound evaluations: with q fixed at
/// 0.01 a sweep at N = 10⁶ would make 10⁴ of them (docs/benchmarks.md has the measurement). At
/// least 32 proposals per sweep (where few data are bright, more bought no mixing and cost
/// scattered row reads).
inline double auto_q_dark_to_bright(double expected_bright, std::size_t n,
                                    double cap = 0.01) noexcept {
  const double nn = static_cast<double>(n > 0 ? n : 1);
  const double four_b = 4.0 * expected_bright;
  const double want = (four_b > 32.0 ? four_b : 32.0) / nn;  // NaN: the floor
  return want < cap ? want : cap;
}

/// The largest automatic q for a θ-kernel. RW-MH, MALA and slice sampling read the bright data a
/// few times per θ-step: the paper's 0.01, as a larger q made their sweeps dearer and their
/// chains no faster. An HMC or NUTS trajectory reads them tens of times and moves far, so it
/// waits on z: up to 0.1, so that where many data are bright (B/N above 0.25%) the sweep still
/// proposes 4·B of them, at less than a trajectory's cost (docs/benchmarks.md, "The automatic
/// q for HMC and NUTS").
inline double auto_q_cap(KernelKind k) noexcept {
  return k == KernelKind::hmc || k == KernelKind::nuts ? 0.1 : 0.01;
}

/// SGLD's automatic step: h = min(0.05, 0.1·b/N). For a Gaussian posterior in the metric's units
/// the stationary variance is about (1 + h·N/(2b))/(1 − h/2) times the posterior's (the gradient
/// noise, then the Euler step; docs/math.md §6), so this keeps the sd within a few percent.
inline double auto_sgld_step(long batch, std::size_t n) noexcept {
  const double b = static_cast<double>(batch), nn = static_cast<double>(n > 0 ? n : 1);
  const double h = 0.1 * (b < nn ? b : nn) / nn;
  return h < 0.05 ? h : 0.05;
}

/// The ESS target of a run that gives neither --iters nor --ess (the command line, Python).
inline constexpr double kDefaultEss = 1000.0;
/// A run to an ESS target that gives no --iters stops at this many sampling iterations per chain
/// at the latest (its draws are held in memory).
inline constexpr long kEssIterCap = 10'000'000;

/// Everything a sampling run needs besides the data. Defaults are the measured choices
/// (docs/benchmarks.md); by default a run is `--algo auto --ess 1000`: the exact sampler
/// predicted to end soonest, until every parameter's bulk and tail ESS reach 1,000. A run of a
/// fixed length sets ess = 0 and iters.
struct RunConfig {
  ModelKind model = ModelKind::logistic;
  /// The coefficients' prior as written (flymc/core/prior_spec.hpp): `gaussian` or `laplace`
  /// (sd prior_sd), flat, normal(M, S), student_t(NU, M, S) or laplace(M, B).
  std::string prior = "gaussian";
  Algo algo = Algo::automatic;
  BoundTuning bound = BoundTuning::map;
  ZUpdate z = ZUpdate::implicit;
  KernelKind kernel = KernelKind::rwmh;
  Init init = Init::map;
  Metric metric = Metric::automatic;
  /// Re-estimate a diag/dense metric from warm-up draws (Stan's windowed adaptation: 15% fast,
  /// doubling slow windows, 10% fast; regularized toward 1e-3·I). Off: the Laplace covariance.
  bool adapt_metric = true;
  /// Metric::fly: the weight w ∈ [0, 1] of the posterior's Laplace precision in the metric's
  /// precision, (1 − w)·(prior + bound curvature) + w·Σ_MAP⁻¹.
  double fly_metric_blend = 0.0;
  SliceMode slice_mode = SliceMode::direction;
  int hmc_steps = 16;  ///< leapfrog steps per HMC trajectory (L)
  /// NUTS: the most doublings of a trajectory, at most 2^max_treedepth − 1 leapfrog steps (Stan's
  /// max_depth, default 10).
  int max_treedepth = 10;
  int chains = 4;
  long warmup = 1000;  ///< warm-up iterations (step-size adaptation), not kept
  /// Sampling iterations after warm-up: with `ess`, at most this many; without, exactly.
  long iters = kEssIterCap;
  /// Sample until every parameter's bulk and tail ESS reach this and R̂ ≤ 1.01 (0: off, run
  /// exactly `iters`). The run is checked at block boundaries that depend on the draws alone
  /// (docs/math.md §3.4), so a seed gives the same draws at any thread or process count.
  double ess = kDefaultEss;
  /// With `ess`: at most this many seconds of warm-up and sampling (0: no limit). The run ends
  /// at the last block's end before them (the first block always runs), predicted from the pace
  /// of the iterations so far, with RunResult::target_reached false.
  double max_seconds = 0.0;
  /// Code only (auto's pilots, flymc/mcmc/auto/choose_algo.hpp): with `ess`, the run also ends
  /// as if cut by `max_seconds` at a block's end where its sampling so far, extrapolated at its
  /// ESS rate so far, needs more than this many core-seconds of sampling in all to reach `ess`
  /// (0: never). Core-seconds are the cost model's price of the chains' counted work
  /// (flymc/mcmc/auto/cost_model.hpp), never a clock's: a pilot that can no longer win stops
  /// paying at the same iteration on any machine, at any load and thread count.
  double give_up_cost = 0.0;
  /// Code only (auto's pilots): with `ess`, the run also ends at the last block's end whose
  /// priced work, warm-up included, stays within this many core-seconds (0: no limit). The
  /// first block always runs.
  double max_cost = 0.0;
  /// With `ess`: the largest R̂ the target accepts (Vehtari et al. 2021's 1.01).
  double max_rhat = 1.01;
  long thin = 1;  ///< keep every thin-th sampling iteration
  std::uint64_t seed = 1;
  int threads = 0;  ///< 0: all cores
  /// How the data's features are held (the loaders read them so; run() checks the data agree).
  Storage storage = Storage::f64;
  /// The data file's columns (flymc/data/columns.hpp, DataColumns): the response, and the
  /// optional per-row weight, trials and offset, each a CSV header name or a 0-based column index;
  /// empty: the response is column 0, the others absent. The loaders read them (load_data); a
  /// run reads what the data set holds.
  std::string response_column, weights_column, trials_column, offset_column;
  double prior_sd = 1.0;  ///< the sd of `prior` gaussian or laplace
  /// Add a column of ones to the data as the first coefficient, named `intercept`.
  bool intercept = false;
  /// The intercept's prior as written (empty: `prior`'s).
  std::string prior_intercept;
  double student_nu = 4.0;  ///< robust regression: Student-t degrees of freedom ν (paper: 4)
  /// Robust regression: the Student-t scale s (unset: 1); Gaussian regression: the noise's sd s,
  /// known, or unset: inferred, a parameter `sigma` beside the coefficients (infers_sigma()).
  std::optional<double> noise_scale;
  /// Gaussian regression with σ inferred: σ's prior on σ > 0, as written (prior_spec.hpp,
  /// parse_scale_prior): flat (uniform on σ), 'normal(0, S)', 'student_t(NU, 0, S)',
  /// 'cauchy(0, S)' (each folded onto σ > 0) or 'exponential(RATE)'.
  std::string prior_sigma = "flat";
  /// --model binomial: the link of the success probability.
  Link link = Link::logit;
  /// --model negbin: the dispersion φ (variance μ + μ²/φ), known, or unset: inferred, a
  /// parameter `phi` beside the coefficients (infers_phi()).
  std::optional<double> dispersion;
  /// Negative binomial regression with φ inferred: φ's prior on φ > 0, as written (the syntax of
  /// prior_sigma). Flat is refused: as φ grows the likelihood tends to Poisson's, not to 0.
  std::string prior_phi = "exponential(0.01)";
  /// ModelKind::custom: the single-index family a library user gives (flymc::run(cfg, data,
  /// family) sets it); null for the other models.
  std::shared_ptr<const SingleIndexFamily> family;
  /// ModelKind::custom: or a family with a positive global parameter a library user gives
  /// (flymc::run(cfg, data, global_family) sets it; models/global_model.hpp); null otherwise.
  std::shared_ptr<const PositiveGlobalFamily> global_family;
  /// Implicit z-update proposal rate q (docs/math.md §1.2). Unset: automatic,
  /// auto_q_dark_to_bright() of the expected bright count (8 Laplace draws at set-up), capped by
  /// auto_q_cap(kernel); RunResult::q_dark_to_bright reports the value used. It is the cap up to
  /// N = 32/cap (3,200 for RW-MH, MALA and slice; 320 for HMC and NUTS).
  std::optional<double> q_dark_to_bright;
  /// Implicit z-update with per-datum rates q_n ∝ expected bright probability, at the same mean
  /// number of proposals as the uniform rate q (docs/math.md §1.5; per_datum_log_rates()).
  bool q_per_datum = false;
  double resample_fraction = 0.01;  ///< explicit z-update fraction f (docs/math.md §1.1)
  /// ξ of the untuned bound: logistic, the tangent point |a| (paper: 1.5); robust regression,
  /// the residual |r| where the Gaussian bound touches the Student-t; unused by softmax (its
  /// untuned bound is anchored at W = 0).
  double untuned_xi = 1.5;
  /// ε subtracted from every log B_n (docs/math.md §1.5). Unset: automatic, ε = ¼·(expected bright
  /// count)/N estimated from 8 Laplace draws at set-up (about a quarter more bright data, no
  /// −∞ barrier at any bright datum's tight point; RunResult::bound_slack reports it).
  std::optional<double> bound_slack;
  /// Logistic regression: a per-datum slack on top of ε, α·p̄_n with α = slack_scale and p̄_n the
  /// datum's expected bright probability (8 Laplace draws at set-up): every bright datum's factor
  /// then varies by about the same ratio, log(1 + 1/α), instead of dropping to expm1(ε) at its
  /// tight point, for about α times more bright data (docs/math.md §1.5). 0: off. Regular MCMC
  /// has no bound and ignores it, as it ignores bound_slack.
  double slack_scale = 0.0;
  /// Softmax only: which quadratic bound on lse (SoftmaxBound). Default tight: it leaves far
  /// fewer data bright than Böhning's fixed curvature (docs/benchmarks.md).
  SoftmaxBoundKind softmax_bound = SoftmaxBoundKind::tight;
  /// θ-steps per z-sweep (docs/math.md §1.5). An iteration is one θ-step, so z is resampled after
  /// every theta_steps-th iteration and queries/ESS per iteration stay per θ proposal.
  /// Unset picks the measured default: 10 for RW-MH (a RW θ-step is cheap beside a z-sweep, and
  /// sweeping less often cut the time per iteration at the same ESS per iteration), 1 for the
  /// kernels whose θ-step costs many evaluations (MALA's gradient, HMC's and NUTS's trajectories,
  /// slice sampling's interval), beside which a z-sweep is cheap.
  std::optional<int> theta_steps;
  /// Step-size adaptation target; unset picks the kernel's: 0.234 RW-MH (Roberts, Gelman & Gilks
  /// 1997), 0.574 MALA (Roberts & Rosenthal 1998), 0.8 HMC and NUTS (Stan), 0.5 slice sampling
  /// (the fraction of stepping-out moves among stepping-out and shrinkage moves, which tunes the
  /// initial interval width).
  std::optional<double> target_accept;
  /// Initial step size (slice: interval width); unset picks one from the Laplace fit.
  std::optional<double> step_size;
  double init_jitter = 0.1;  ///< --init map: jitter in Laplace standard deviations
  /// Approximate samplers: data per batch. minibatch-mh: the first batch of every acceptance test
  /// (doubled while the test's variance is too large); sgld: the batch of every gradient.
  long batch_size = 100;
  /// SGLD: the step h of θ ← θ + h·M·ĝ + √(2h)·M^{1/2}·ξ, M the metric (docs/math.md §6), so in
  /// units of the Laplace covariance with the default diag metric. Fixed for the whole run.
  /// Unset: auto_sgld_step().
  std::optional<double> sgld_step;
  /// minibatch-mh: K ≥ 1 of the tempered test on Δ/K (g(s) = K·σ(s) in the seed slides). K > 1
  /// samples p(θ | data)^{1/K}, a different distribution from the posterior (docs/math.md §5).
  double barker_temper = 1.0;
  /// smh: the proposal (pcn or rw).
  SmhProposal proposal = SmhProposal::pcn;
  /// smh with pcn, and the θ-kernel pcn: ρ ∈ [0, 1). Unset: tuned in warm-up (smh: the value of
  /// a small grid with the most squared jump distance per unit of cost; the θ-kernel:
  /// √(1 − ρ²) = min(1, the adapted step)).
  std::optional<double> pcn_rho;
  /// smh: the order of the control variates' Taylor expansion at θ̂ (docs/math.md §8): 2 (the
  /// gradient and Hessian at θ̂; O(D²) per proposal) or 3 (also the third derivatives, collapsed
  /// into a symmetric tensor: O(D³/6) per proposal, remainders of fourth order, so far fewer
  /// candidates on tall data; the models with a bound on the fourth derivative: logistic,
  /// probit and Gaussian regression, model_needs.hpp).
  int smh_order = 2;
  /// Piecewise-deterministic samplers: path time between successive discrete draws (an
  /// iteration is one such interval, so --warmup and --iters count them). Unset: the automatic
  /// time scale of docs/math.md §7.5, from the Laplace fit.
  std::optional<double> pdmp_spacing;
  /// BPS family: rate λ_ref of velocity refreshments per unit path time (0: none). Unset:
  /// 1 per automatic time scale (docs/math.md §7.5). Zig-Zag does not refresh.
  std::optional<double> refresh_rate;
  /// Piecewise-deterministic samplers: the coordinates the particle moves in (the draws are θ).
  PdmpPrecondition pdmp_precondition = PdmpPrecondition::laplace;
  /// Piecewise-deterministic samplers: also write the path's events (its start, every bounce,
  /// refreshment or flip, its end) to the draw sinks (DrawSink::path_event).
  bool save_events = false;
  /// A violated bound stops the run (the default) or lets it finish marked not exact.
  OnViolation on_bound_violation = OnViolation::stop;
  bool profile = false;  ///< time the phases of every iteration (profiling harness)

  /// @throw ConfigError naming the option when a value is out of range.
  void validate() const;
  /// The options of the approximate samplers (part of validate()).
  void validate_approximate() const;
  /// The options of the piecewise-deterministic samplers (part of validate_approximate()).
  void validate_pdmp() const;
  /// Each automatic option set against its range in the option table (core/options.hpp).
  void check_auto_ranges() const;

  /// The metric after resolving Metric::automatic for the kernel.
  Metric resolved_metric() const noexcept;
  /// θ-steps per z-sweep after resolving an unset value for the kernel.
  int resolved_theta_steps() const noexcept;
  /// The adaptation target after resolving an unset value for the kernel.
  double resolved_target_accept() const noexcept;

  /// Every field equal (doubles by value).
  friend bool operator==(const RunConfig&, const RunConfig&) = default;
};

/// Gaussian regression without a known noise scale: σ is a parameter (models/gaussian_sigma.hpp).
inline bool infers_sigma(const RunConfig& c) noexcept {
  return model_info(c.model).infers_scale && !c.noise_scale;
}
/// Negative binomial regression without a known dispersion: φ is a parameter
/// (models/negbin_phi.hpp).
inline bool infers_phi(const RunConfig& c) noexcept {
  return model_info(c.model).infers_dispersion && !c.dispersion;
}
/// A model given in code with a global parameter (RunConfig::global_family): its own model,
/// GlobalFamilyModel.
inline bool has_global_family(const RunConfig& c) noexcept {
  return c.model == ModelKind::custom && c.global_family != nullptr;
}
/// The parameter a run infers beside the coefficients, last in θ: "sigma", "phi", or nullptr.
inline const char* inferred_global(const RunConfig& c) noexcept {
  return infers_sigma(c) ? "sigma" : infers_phi(c) ? "phi" : nullptr;
}
/// That parameter's prior as written (prior_sigma or prior_phi); empty if there is none.
inline const std::string& inferred_global_prior(const RunConfig& c) noexcept {
  static const std::string none;
  return infers_sigma(c) ? c.prior_sigma : infers_phi(c) ? c.prior_phi : none;
}

/// The run's length from what the user gave (the command line, Python): `iters` alone asks for
/// exactly that many iterations (ess = 0); otherwise the run goes to an ESS target (the default
/// kDefaultEss), with `iters` as its upper limit (kEssIterCap when not given). A sampler that
/// cannot run to a target (minibatch MH, SGLD) given neither runs 1,000 iterations.
void size_run_length(RunConfig& cfg, bool iters_given, bool ess_given);

const char* to_string(Algo a) noexcept;
const char* to_string(BoundTuning b) noexcept;
const char* to_string(ZUpdate z) noexcept;
const char* to_string(KernelKind k) noexcept;
const char* to_string(Init i) noexcept;
const char* to_string(OnViolation v) noexcept;
const char* to_string(Link l) noexcept;
const char* to_string(Metric m) noexcept;
const char* to_string(ModelKind m) noexcept;
const char* to_string(PriorKind p) noexcept;
const char* to_string(SliceMode s) noexcept;
const char* to_string(SoftmaxBoundKind b) noexcept;
const char* to_string(PdmpPrecondition p) noexcept;
const char* to_string(SmhProposal p) noexcept;

}  // namespace flymc
