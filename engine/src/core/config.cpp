#include "flymc/core/config.hpp"

#include <cmath>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/options.hpp"
#include "flymc/core/prior_spec.hpp"
#include "flymc/core/samplers.hpp"

namespace flymc {
namespace {
// Upper limits that keep the iteration arithmetic (warmup + iters, chains × iterations,
// iters + thin − 1) far from overflowing a 64-bit long.
constexpr long kMaxIterations = 1'000'000'000'000;  // 1e12
constexpr int kMaxChains = 1'000'000;
constexpr int kMaxThreads = 65'536;
// 1/σ² must be a finite, non-zero double (LogisticModel checks the same range).
constexpr double kMinPriorSd = 1e-150, kMaxPriorSd = 1e150;
}  // namespace

void RunConfig::validate() const {
  if (chains < 1 || chains > kMaxChains)
    throw ConfigError("--chains must be in [1, " + std::to_string(kMaxChains) + "], got " +
                      std::to_string(chains));
  if (warmup < 0 || warmup > kMaxIterations)
    throw ConfigError("--warmup must be in [0, 1e12], got " + std::to_string(warmup));
  if (iters < 1 || iters > kMaxIterations)
    throw ConfigError("--iters must be in [1, 1e12], got " + std::to_string(iters));
  if (!(ess >= 0.0 && ess <= 1e9))
    throw ConfigError("--ess must be in [0, 1e9] (0: run exactly --iters), got " +
                      number_text(ess));
  if (!(max_rhat >= 1.0 && std::isfinite(max_rhat)))
    throw ConfigError("--max-rhat must be finite and >= 1, got " + number_text(max_rhat));
  if (!(max_seconds >= 0.0 && std::isfinite(max_seconds)))
    throw ConfigError("--max-seconds must be finite and >= 0 (0: no limit), got " +
                      number_text(max_seconds));
  if (ess > 0.0 && !can_target_ess(algo))
    throw ConfigError(std::string("--algo ") + to_string(algo) +
                      " runs a fixed number of iterations (--iters), not to an ESS target "
                      "(--ess): its chains cannot continue in blocks yet");
  if (thin < 1 || thin > kMaxIterations)
    throw ConfigError("--thin must be in [1, 1e12], got " + std::to_string(thin));
  if (threads < 0 || threads > kMaxThreads)
    throw ConfigError("--threads must be in [0, " + std::to_string(kMaxThreads) +
                      "] (0: all cores), got " + std::to_string(threads));
  // The prior precision 1/σ² must be a finite, non-zero double (σ = 1e-300 made it infinite and
  // the MAP search NaN).
  if (!(prior_sd >= kMinPriorSd && prior_sd <= kMaxPriorSd))
    throw ConfigError("--prior-sd must be in [1e-150, 1e150], got " + number_text(prior_sd));
  const RunPriors priors = run_priors(*this);
  if (init == Init::prior && inferred_global(*this) != nullptr)
    throw ConfigError(std::string("--init prior: ") + inferred_global(*this) +
                      "'s prior need not have draws; start from the MAP (--init map)");
  if (init == Init::prior && priors.any_flat())
    throw ConfigError("--init prior: a flat prior has no draws; start from the MAP (--init map)");
  if (!(resample_fraction > 0.0 && resample_fraction <= 1.0))
    throw ConfigError("--resample-fraction must be in (0, 1], got " +
                      number_text(resample_fraction));
  if (!(untuned_xi >= 0.0) || !std::isfinite(untuned_xi))
    throw ConfigError("--untuned-xi must be finite and >= 0, got " + number_text(untuned_xi));
  if (!(slack_scale >= 0.0 && slack_scale <= 1e6))
    throw ConfigError("--slack-scale must be in [0, 1e6], got " + number_text(slack_scale));
  if (slack_scale > 0.0 && model != ModelKind::logistic)
    throw ConfigError(
        "--slack-scale is a FlyMC option of logistic regression, whose bound keeps a constant per "
        "datum (softmax and robust regression take --bound-slack)");
  check_auto_ranges();
  if (!(fly_metric_blend >= 0.0 && fly_metric_blend <= 1.0))
    throw ConfigError("--fly-metric-blend must be in [0, 1], got " + number_text(fly_metric_blend));
  if (metric == Metric::fly && algo != Algo::flymc)
    throw ConfigError(
        "--metric fly is fitted to FlyMC's target p(theta | z); the other algorithms take "
        "identity, diag or dense");
  validate_approximate();
  if (hmc_steps < 1 || hmc_steps > 100000)
    throw ConfigError("--hmc-steps must be in [1, 100000], got " + std::to_string(hmc_steps));
  // 2^max_treedepth − 1 leapfrog steps must stay far inside an int's range.
  if (max_treedepth < 1 || max_treedepth > 30)
    throw ConfigError("--max-treedepth must be in [1, 30], got " + std::to_string(max_treedepth));
  if (!(student_nu > 0.0) || !std::isfinite(student_nu))
    throw ConfigError("--nu must be finite and > 0, got " + number_text(student_nu));
  if (noise_scale && (!(*noise_scale > 0.0) || !std::isfinite(*noise_scale)))
    throw ConfigError("--noise-scale must be finite and > 0, got " + number_text(*noise_scale));
  if (family && global_family)
    throw ConfigError(
        "RunConfig: a family given in code is a SingleIndexFamily (family) or a family with a "
        "global parameter (global_family), not both");
  if (global_family && !has_global_family(*this))
    throw ConfigError(std::string("RunConfig::global_family is a model given in code: --model ") +
                      to_string(model) + " does not take it (flymc::run(cfg, data, family))");
  if (model == ModelKind::student_t && noise_scale)
    throw ConfigError(
        "--noise-scale: --model student_t infers its scale sigma; for a known Student-t scale "
        "use --model robust --noise-scale S");
  if (parse_scale_prior(prior_sigma) != ScalePrior{} && !infers_sigma(*this))
    throw ConfigError("--prior-sigma '" + prior_sigma +
                      "': only --model student_t and --model gaussian without --noise-scale have "
                      "sigma as a parameter");
  if (prior_phi != RunConfig{}.prior_phi && !infers_phi(*this))
    throw ConfigError("--prior-phi '" + prior_phi +
                      "': only --model negbin without --dispersion has phi as a parameter");
  if (infers_phi(*this) &&
      parse_scale_prior(prior_phi, "--prior-phi").kind == ScalePrior::Kind::flat)
    throw ConfigError(
        "--prior-phi flat: the posterior would be improper (as phi grows the negative binomial "
        "likelihood tends to Poisson's, not to 0); give phi a proper prior");
  if (!(init_jitter >= 0.0) || !std::isfinite(init_jitter))
    throw ConfigError("--init-jitter must be finite and >= 0, got " + number_text(init_jitter));
}

void RunConfig::check_auto_ranges() const {
  // The option table holds each automatic option's range, which the command line also checks as
  // it reads the option: one list for both.
  for (const OptionInfo& o : run_options()) {
    if (o.kind() != OptionKind::auto_integer && o.kind() != OptionKind::auto_real) continue;
    const OptionValue v = get_value(*this, o);
    double x = 0.0;
    if (const double* d = std::get_if<double>(&v)) {
      x = *d;
    } else if (const long long* i = std::get_if<long long>(&v)) {
      x = static_cast<double>(*i);
    } else {
      continue;  // auto (unset)
    }
    if (!o.range.contains(x))
      throw ConfigError(std::string("--") + o.name + " must be " +
                        (std::isfinite(x) ? "" : "finite and ") + o.range.text() +
                        " (or auto), got " + number_text(x));
  }
}

// Every enum's names live in one table (options.hpp), which parsing reads too.
const char* to_string(Algo a) noexcept { return enum_name(a); }
const char* to_string(BoundTuning b) noexcept { return enum_name(b); }
const char* to_string(ZUpdate z) noexcept { return enum_name(z); }
const char* to_string(KernelKind k) noexcept { return enum_name(k); }
const char* to_string(Init i) noexcept { return enum_name(i); }
const char* to_string(OnViolation v) noexcept { return enum_name(v); }
const char* to_string(Link l) noexcept { return enum_name(l); }
const char* to_string(Metric m) noexcept { return enum_name(m); }
const char* to_string(ModelKind m) noexcept { return enum_name(m); }
const char* to_string(PriorKind p) noexcept { return enum_name(p); }
const char* to_string(SliceMode s) noexcept { return enum_name(s); }
const char* to_string(SoftmaxBoundKind b) noexcept { return enum_name(b); }
const char* to_string(PdmpPrecondition p) noexcept { return enum_name(p); }
const char* to_string(SmhProposal p) noexcept { return enum_name(p); }

void RunConfig::validate_approximate() const {
  if (batch_size < 2 || batch_size > kMaxIterations)
    throw ConfigError("--batch-size must be in [2, 1e12] (a batch variance needs two data), got " +
                      std::to_string(batch_size));
  if (!(barker_temper >= 1.0 && barker_temper <= 1e12))
    throw ConfigError("--barker-temper must be in [1, 1e12], got " + number_text(barker_temper));
  // Barker's acceptance σ(Δ) tends to ½ as the step shrinks and is below it otherwise, so a
  // higher target would drive the step size to 0.
  if (algo == Algo::minibatch_mh && target_accept && *target_accept >= 0.5)
    throw ConfigError(
        "--target-accept must be below 0.5 with --algo minibatch-mh (Barker's acceptance "
        "approaches 1/2 only as the step vanishes), got " +
        number_text(*target_accept));
  if (smh_order != 2 && smh_order != 3)
    throw ConfigError("--smh-order must be 2 or 3, got " + std::to_string(smh_order));
  if (algo == Algo::automatic) return validate_pdmp();  // the candidates are checked as they run
  if (!uses_theta_kernel(algo) && kernel != KernelKind::rwmh)
    throw ConfigError(std::string("--algo ") + to_string(algo) +
                      " makes its own moves (a random walk, a Langevin step, a "
                      "piecewise-linear path or an SMH proposal): leave --kernel at rwmh, not " +
                      to_string(kernel));
  validate_pdmp();
}

void RunConfig::validate_pdmp() const {
  if (save_events && !is_pdmp(algo))
    throw ConfigError("--save-events: only the piecewise-deterministic samplers (--algo " +
                      algo_names(kPdmpAlgos) + ") have path events");
  // The bounds of docs/math.md §7 use the Gaussian prior's gradient θ/σ²; the Laplace prior's
  // is discontinuous at 0 and would need a bound of its own.
  if (is_pdmp(algo) && !run_priors(*this).centred_gaussian())
    throw ConfigError(std::string("--algo ") + to_string(algo) +
                      " takes one centred Gaussian prior on every coefficient (--prior gaussian "
                      "or 'normal(0, S)'), not --prior '" +
                      prior + "'" + (prior_intercept.empty() ? "" : " with --prior-intercept"));
}

void size_run_length(RunConfig& cfg, bool iters_given, bool ess_given) {
  if (iters_given && !ess_given) {
    cfg.ess = 0.0;
  } else if (!ess_given && !iters_given && !can_target_ess(cfg.algo)) {
    cfg.ess = 0.0;
    cfg.iters = 1000;
  } else if (!ess_given && cfg.ess <= 0.0) {
    cfg.ess = kDefaultEss;
  }
  if (cfg.ess > 0.0 && !iters_given) cfg.iters = kEssIterCap;
}

Metric RunConfig::resolved_metric() const noexcept {
  if (metric != Metric::automatic) return metric;
  // The approximate samplers' random walks and Langevin steps are scaled by the Laplace fit:
  // an isotropic step would be as small as the posterior's narrowest direction.
  if (!uses_theta_kernel(algo)) return Metric::diag;
  // pCN and IMH move on the Laplace Gaussian itself. The gradient kernels start from the dense
  // Laplace covariance: where the posterior is correlated a diagonal metric leaves the trajectory
  // at the narrowest direction's step, and the MAP fit has already paid for the D × D matrix; its
  // product costs D² per gradient, beside the gradient's B·D or N·D (docs/math.md §3.2).
  if (kernel == KernelKind::pcn || kernel == KernelKind::imh || uses_gradient(kernel))
    return Metric::dense;
  return kernel == KernelKind::rwmh ? Metric::identity : Metric::diag;
}
int RunConfig::resolved_theta_steps() const noexcept {
  if (theta_steps) return *theta_steps;
  const bool one_eval =
      kernel == KernelKind::rwmh || kernel == KernelKind::pcn || kernel == KernelKind::imh;
  return one_eval ? 10 : 1;
}
double RunConfig::resolved_target_accept() const noexcept {
  if (target_accept) return *target_accept;
  switch (kernel) {
    case KernelKind::rwmh:
    case KernelKind::pcn:
    case KernelKind::imh:
      return 0.234;
    case KernelKind::mala:
      return 0.574;
    case KernelKind::hmc:
    case KernelKind::nuts:
      return 0.8;
    case KernelKind::slice:
      return 0.5;
  }
  return 0.234;
}
}  // namespace flymc
