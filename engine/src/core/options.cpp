#include "flymc/core/options.hpp"

#include <charconv>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"

namespace flymc {
namespace {

using C = RunConfig;

template <auto Member>
ChoiceField choice() {
  using E = std::remove_cvref_t<decltype(std::declval<RunConfig&>().*Member)>;
  return {[](const RunConfig& c) { return enum_name(c.*Member); },
          [](RunConfig& c, std::string_view s) {
            const std::optional<E> e = parse_enum<E>(s);
            if (e) c.*Member = *e;
            return e.has_value();
          },
          &enum_name_list<E>};
}

/// A row whose option --algo auto sets or tunes for each candidate (its θ-kernel, metric and
/// their tuning, SMH's proposal and order): given with auto, it could not apply.
OptionInfo auto_chosen(OptionInfo o) {
  o.chosen_by_auto = true;
  return o;
}

constexpr AutoRange open_closed(double lo, double hi) { return {lo, hi, true, false}; }
constexpr AutoRange at_least(double lo) {
  return {lo, std::numeric_limits<double>::infinity(), false, true};
}
constexpr AutoRange above(double lo) {
  return {lo, std::numeric_limits<double>::infinity(), true, true};
}

std::string resolved_metric(const RunConfig& c) { return enum_name(c.resolved_metric()); }
std::string resolved_theta_steps(const RunConfig& c) {
  return std::to_string(c.resolved_theta_steps());
}
std::string resolved_target_accept(const RunConfig& c) {
  return number_text(c.resolved_target_accept());
}

constexpr AlgoMask kFlymc = algo_bit(Algo::flymc);
// The kernels' metric and adaptation target are read by every sampler that adapts a step or
// scales its moves by the metric.
constexpr AlgoMask kStepAlgos =
    kThetaKernelAlgos | algo_bit(Algo::minibatch_mh) | algo_bit(Algo::sgld);

/// `o`, read by the models in `m` only.
OptionInfo for_models(OptionInfo o, ModelMask m) {
  o.models = m;
  return o;
}
constexpr ModelMask kRobust = model_bit(ModelKind::robust);
constexpr ModelMask kStudentT = model_bit(ModelKind::student_t);
constexpr ModelMask kLogistic = model_bit(ModelKind::logistic);

// The help texts are `flymc sample --help`'s (ASCII).
// Five parts, in RunConfig's field order: the model, sampler and θ-kernel choices; the run's
// size and data; the models' constants; FlyMC's z-updates and the kernels' tuning; the other
// samplers' options.
std::vector<OptionInfo> model_and_kernel_options() {
  return {
      {"model", "model", choice<&C::model>(),
       "logistic (labels +-1 or 0/1), softmax (labels 0..K-1), robust (Student-t linear "
       "regression, real responses), probit (labels as logistic) or gaussian (linear "
       "regression with noise sd --noise-scale, real responses), binomial (successes of "
       "--trials, else 0/1 labels; --link logit or probit), poisson (counts, log link, "
       "--offset for a log exposure; scalable MH or regular MCMC), negbin (counts, log link, "
       "--dispersion PHI, else phi inferred) or student_t (robust's Student-t regression with "
       "its scale sigma inferred; regular MCMC)"},
      {"prior", "prior", &C::prior,
       "Prior on every coefficient: flat, 'normal(M, S)', 'student_t(NU, M, S)', "
       "'laplace(M, B)' (M, S, B a number or a [list] with a value per feature), or gaussian "
       "or laplace with sd --prior-sd"},
      {"algo",
       "algo",
       choice<&C::algo>(),
       "auto (the default): short pilots of the exact samplers that fit predict which ends the "
       "run soonest (to --ess effective draws, or the most ESS per core-second for a fixed "
       "--iters), by counted work, so the same seed draws the same at any load, and it runs; "
       "flymc, full (regular MCMC); the approximate subsampling samplers "
       "minibatch-mh (minibatch Metropolis-Hastings with the Barker test) or sgld (stochastic "
       "gradient Langevin dynamics); or the piecewise-deterministic samplers (Gaussian prior): "
       "bps (bouncy particle sampler, full gradient), "
       "lipsbps (BPS on batch gradients, Lipschitz bound), zigzag-ss (Zig-Zag with subsampling), "
       "zigzag-cv (Zig-Zag with control variates at the MAP), all exact, and the APPROXIMATE sbps "
       "(stochastic BPS, adaptive bound) and psbps (SBPS with a diagonal preconditioner frozen "
       "after warm-up); or smh (scalable Metropolis-Hastings, exact: second-order control "
       "variates at the MAP, a few data per proposal by Poisson thinning)",
       kAllAlgos,
       true,
       true,
       {},
       "algorithm"},
      {"bound", "bound", choice<&C::bound>(), "map (MAP-tuned) or untuned", kFlymc},
      {"z",
       "z",
       choice<&C::z>(),
       "z-update: implicit or explicit",
       kFlymc,
       true,
       true,
       {},
       "z_update"},
      auto_chosen(
          {"kernel", "kernel", choice<&C::kernel>(),
           "theta-kernel: random-walk MH, MALA, HMC (leapfrog), NUTS (No-U-Turn, multinomial as in "
           "Stan), slice sampling, pcn (preconditioned Crank-Nicolson around the MAP in the "
           "metric, "
           "rho from --pcn-rho or the adapted step) or imh (independence sampler: pcn with rho 0)",
           kThetaKernelAlgos}),
      {"init", "init", choice<&C::init>(), "map (MAP + jitter) or prior draw"},
      auto_chosen(
          {"metric",
           "metric",
           choice<&C::metric>(),
           "Kernel metric (RW proposal covariance, MALA preconditioner, HMC and NUTS inverse mass "
           "matrix, slice scale): identity, or diag/dense starting from the Laplace covariance; "
           "fly "
           "(FlyMC): dense, fitted to p(theta | z) from the prior and the collapsed bound's "
           "curvature; auto: identity for rwmh, diag for slice, dense otherwise (from the Laplace "
           "covariance)",
           kStepAlgos,
           true,
           true,
           {},
           nullptr,
           &resolved_metric}),
      auto_chosen(
          {"adapt-metric", "adapt_metric", &C::adapt_metric,
           "Re-estimate a diag/dense metric from warm-up draws in Stan's windows (default on)",
           kThetaKernelAlgos}),
      {"fly-metric-blend", "fly_metric_blend", &C::fly_metric_blend,
       "--metric fly: weight in [0, 1] of the posterior's Laplace precision blended into the "
       "metric's precision",
       kFlymc},
      {"slice-mode", "slice_mode", choice<&C::slice_mode>(),
       "Slice sampling along a random direction or every coordinate in turn", kThetaKernelAlgos},
      {"hmc-steps", "hmc_steps", &C::hmc_steps, "Leapfrog steps per HMC trajectory",
       kThetaKernelAlgos},
      {"max-treedepth", "max_treedepth", &C::max_treedepth,
       "NUTS: most doublings of a trajectory (at most 2^D - 1 leapfrog steps)", kThetaKernelAlgos},
  };
}

/// The run's length, seed, threads, storage, data columns and the coefficients' prior.
std::vector<OptionInfo> run_and_data_options() {
  return {
      {"chains", "chains", &C::chains, "Number of chains"},
      {"warmup", "warmup", &C::warmup, "Warm-up iterations"},
      {"iters", "iters", &C::iters,
       "Sampling iterations (with --ess: at most this many; without it, exactly this many)"},
      {"ess", "ess", &C::ess,
       "Sample until every parameter's bulk and tail ESS reach N and R-hat <= 1.01, checked "
       "at block boundaries that depend on the draws alone (0: exactly --iters)",
       kEssAlgos},
      {"max-seconds", "max_seconds", &C::max_seconds,
       "With --ess: at most S seconds of warm-up and sampling: the run ends at the last block end "
       "that fits (the first block always runs), target not reached (exit 0; summary.json "
       "run.target_reached false). 0: no limit",
       kEssAlgos, false},
      {"max-rhat", "max_rhat", &C::max_rhat,
       "With --ess: the largest R-hat (rank-normalized split R-hat over parameters) the target "
       "accepts",
       kEssAlgos},
      {"thin", "thin", &C::thin, "Keep every K-th draw"},
      {"seed", "seed", &C::seed, "Random seed (an integer >= 0)"},
      {"threads", "threads", &C::threads, "Worker threads (0: all cores)", kAllAlgos, false},
      {"storage", "storage", choice<&C::storage>(),
       "How the data's features are held: f64, or f32 (half the memory and bandwidth; the "
       "values are rounded to float as they are read, and the run is exact for the rounded "
       "data)"},
      {"response", "response_column", &C::response_column,
       "The data file's response column: a CSV header name or a 0-based index [0]", kAllAlgos, true,
       false},
      {"weights", "weights_column", &C::weights_column,
       "A column of per-row weights >= 0 (datum n's log-likelihood counts w_n times), by header "
       "name or 0-based index; not a feature",
       kAllAlgos, true, false},
      {"trials", "trials_column", &C::trials_column,
       "Binomial regression: the column of trials m_n (the response counts successes of m_n), "
       "by header name or 0-based index; not a feature",
       kAllAlgos, true, false},
      {"offset", "offset_column", &C::offset_column,
       "A column of offsets o_n added to each linear predictor (eta_n = x_n.theta + o_n: the log "
       "exposure of a Poisson regression), by header name or 0-based index; not a feature",
       kAllAlgos, true, false},
      {"prior-sd", "prior_sd", &C::prior_sd,
       "The sd of --prior gaussian or laplace (every coefficient's)"},
      {"intercept", "intercept", &C::intercept,
       "Add a column of ones to the data as the first coefficient, named intercept"},
      {"prior-intercept", "prior_intercept", &C::prior_intercept,
       "With --intercept: the intercept's prior, written as --prior's (default: --prior's)"},
  };
}

/// The options of one model or a few: their constants, links, dispersions and global priors.
std::vector<OptionInfo> model_constant_options() {
  return {
      for_models({"nu", "student_nu", &C::student_nu,
                  "Robust and Student-t regression: the Student-t degrees of freedom",
                  kThetaKernelAlgos | algo_bit(Algo::smh)},
                 kRobust | kStudentT),
      for_models({"noise-scale", "noise_scale", &C::noise_scale,
                  "Robust regression: Student-t scale (auto: 1); gaussian: the noise's sd, known "
                  "(auto: inferred, a parameter sigma)",
                  kThetaKernelAlgos | algo_bit(Algo::smh), true, true, above(0.0)},
                 kRobust | model_bit(ModelKind::gaussian)),
      for_models({"prior-sigma", "prior_sigma", &C::prior_sigma,
                  "Gaussian (without --noise-scale) and Student-t regression: sigma's prior on "
                  "sigma > 0, flat (uniform), 'normal(0, S)', 'student_t(NU, 0, S)', "
                  "'cauchy(0, S)' or 'exponential(RATE)'",
                  kThetaKernelAlgos | algo_bit(Algo::smh)},
                 model_bit(ModelKind::gaussian) | kStudentT),
      for_models({"link", "link", choice<&C::link>(),
                  "Binomial regression: logit (logistic regression per trial) or probit"},
                 model_bit(ModelKind::binomial)),
      for_models({"dispersion", "dispersion", &C::dispersion,
                  "Negative binomial regression: the dispersion phi, known (variance mu + "
                  "mu^2/phi); auto: inferred, a parameter phi",
                  kAllAlgos, true, true, above(0.0)},
                 model_bit(ModelKind::negbin)),
      for_models({"prior-phi", "prior_phi", &C::prior_phi,
                  "Negative binomial regression with phi inferred: phi's prior on phi > 0, "
                  "'normal(0, S)', 'student_t(NU, 0, S)', 'cauchy(0, S)' or 'exponential(RATE)' "
                  "(flat would leave the posterior improper)",
                  kThetaKernelAlgos | algo_bit(Algo::smh)},
                 model_bit(ModelKind::negbin)),
  };
}

/// FlyMC's z-updates and bounds, then the θ-kernels' tuning and the chains' starting points.
std::vector<OptionInfo> flymc_and_tuning_options() {
  return {
      {"q-dark-to-bright", "q_dark_to_bright", &C::q_dark_to_bright,
       "Implicit z-update proposal rate q (with --q-per-datum: the mean rate); auto: min(cap, "
       "max(32, 4 x expected bright count)/N), cap 0.1 for hmc and nuts, 0.01 otherwise",
       kFlymc, true, true, open_closed(0.0, 1.0)},
      {"q-per-datum", "q_per_datum", &C::q_per_datum,
       "Implicit z-update: per-datum rates q_n proportional to the expected bright probability "
       "(Laplace draws at set-up), at the uniform rate's mean cost",
       kFlymc},
      {"resample-fraction", "resample_fraction", &C::resample_fraction,
       "Explicit z-update fraction", kFlymc},
      for_models({"untuned-xi", "untuned_xi", &C::untuned_xi,
                  "Logistic and robust regression: xi of the untuned bound", kFlymc},
                 kLogistic | kRobust),
      {"bound-slack", "bound_slack", &C::bound_slack,
       "Slack subtracted from every log B_n; auto: a quarter of the expected bright fraction "
       "(Laplace draws at set-up)",
       kFlymc, true, true, at_least(0.0)},
      for_models({"slack-scale", "slack_scale", &C::slack_scale,
                  "Logistic FlyMC: also subtract alpha x the datum's expected bright probability "
                  "(Laplace draws) from each log B_n; helps HMC and NUTS on tall data",
                  kFlymc},
                 kLogistic),
      for_models({"softmax-bound", "softmax_bound", choice<&C::softmax_bound>(),
                  "softmax: bohning (fixed curvature) or tight (per datum the tighter of "
                  "Bohning's and the Jebara-Choromanska bounds)",
                  kFlymc},
                 model_bit(ModelKind::softmax)),
      auto_chosen({"theta-steps", "theta_steps", &C::theta_steps,
                   "theta-steps per z-sweep; auto: 10 for rwmh, 1 for the other kernels", kFlymc,
                   true, true, at_least(1.0), nullptr, &resolved_theta_steps}),
      auto_chosen(
          {"target-accept",
           "target_accept",
           &C::target_accept,
           "Step-size adaptation target; auto: 0.234 rwmh (and smh --proposal rw), 0.574 mala, 0.8 "
           "hmc and nuts, 0.5 slice",
           kThetaKernelAlgos | algo_bit(Algo::minibatch_mh) | algo_bit(Algo::smh),
           true,
           true,
           {0.0, 1.0, true, true},
           "adapt_delta",
           &resolved_target_accept}),
      auto_chosen({"step-size", "step_size", &C::step_size,
                   "Initial step size (slice: interval width); auto: from the Laplace fit",
                   kThetaKernelAlgos | algo_bit(Algo::minibatch_mh), true, true, above(0.0)}),
      {"init-jitter", "init_jitter", &C::init_jitter,
       "--init map: jitter of the starting points in Laplace standard deviations"},
  };
}

std::vector<OptionInfo> other_sampler_options() {
  return {
      {"batch-size", "batch_size", &C::batch_size,
       "Approximate samplers: data per batch (minibatch-mh: the first batch of every acceptance "
       "test, doubled while its variance is too large; sgld: every gradient's batch, scaled by "
       "N/batch-size)",
       kBatchAlgos},
      {"sgld-step", "sgld_step", &C::sgld_step,
       "sgld: fixed step h in units of the metric (the Laplace covariance with the default diag "
       "metric); auto: min(0.05, 0.1 x batch-size / N)",
       algo_bit(Algo::sgld), true, true, open_closed(0.0, 1.0)},
      {"barker-temper", "barker_temper", &C::barker_temper,
       "minibatch-mh: K >= 1; K > 1 tests Delta/K, which samples the TEMPERED posterior "
       "p(theta | data)^(1/K) with smaller batches (the seed slides' g(s) = K sigma(s))",
       algo_bit(Algo::minibatch_mh)},
      auto_chosen(
          {"proposal", "proposal", choice<&C::proposal>(),
           "smh: pcn (preconditioned Crank-Nicolson around the MAP, invariant for the Laplace "
           "Gaussian) or rw (random walk in the Laplace-whitened coordinates)",
           algo_bit(Algo::smh)}),
      auto_chosen(
          {"pcn-rho",
           "pcn_rho",
           &C::pcn_rho,
           "smh --proposal pcn and --kernel pcn: rho in [0, 1) (0: independent proposals from the "
           "Laplace Gaussian); auto: tuned in warm-up (smh: the grid value with the most squared "
           "jump per multiply-add; --kernel pcn: sqrt(1 - rho^2) = min(1, adapted step))",
           algo_bit(Algo::smh) | kThetaKernelAlgos,
           true,
           true,
           {0.0, 1.0, false, true}}),
      auto_chosen(
          {"smh-order", "smh_order", &C::smh_order,
           "smh: order of the control variates' Taylor expansion at the MAP: 2 (gradient and "
           "Hessian; D^2 multiply-adds per proposal) or 3 (also the third derivatives: D^3/6 more "
           "per "
           "proposal, fourth-order remainders, so far fewer candidate data on tall data; for the "
           "models whose fourth derivative is bounded)",
           algo_bit(Algo::smh)}),
      {"pdmp-spacing", "pdmp_spacing", &C::pdmp_spacing,
       "Piecewise-deterministic samplers: path time between draws (one draw per iteration; "
       "--warmup iterations of path time are discarded); auto: the mean Laplace sd in the "
       "particle's coordinates (1 with --pdmp-precondition laplace), times sqrt(D) for the BPS "
       "family",
       kPdmpAlgos, true, true, open_closed(0.0, 1e100)},
      {"refresh-rate",
       "refresh_rate",
       &C::refresh_rate,
       "BPS family: velocity refreshments per unit path time (0: none); auto: one per automatic "
       "--pdmp-spacing",
       kRefreshAlgos,
       true,
       true,
       {0.0, 1e100}},
      {"pdmp-precondition", "pdmp_precondition", choice<&C::pdmp_precondition>(),
       "Piecewise-deterministic samplers: laplace moves the particle in u with theta = L u, L "
       "the Cholesky factor of the Laplace covariance at the MAP; laplace-diag scales theta by "
       "the Laplace sds only; none moves in theta itself (all exact; the draws are theta)",
       kPdmpAlgos},
      {"save-events", "save_events", &C::save_events,
       "Piecewise-deterministic samplers: also write events-<k>.csv beside chain-<k>.csv, the "
       "path's start, every bounce, refreshment or flip, and its end (path time, kind, "
       "position); the path is linear between them",
       kPdmpAlgos, true, false},
      {"on-bound-violation", "on_bound_violation", choice<&C::on_bound_violation>(),
       "When a model's bound is found violated (a wrong constant: the draws are not the "
       "posterior's): stop, with an error naming the family, the datum and its predictor, or "
       "finish, marking the run not exact",
       kAllAlgos, false},
      {"profile",
       "profile",
       &C::profile,
       "Time the phases of every iteration (flymc-profile's timers)",
       kThetaKernelAlgos,
       false,
       false,
       {},
       nullptr,
       nullptr,
       false},
  };
}

const std::vector<OptionInfo>& table() {
  static const std::vector<OptionInfo> t = [] {
    std::vector<OptionInfo> all = model_and_kernel_options();
    for (auto* part : {&run_and_data_options, &model_constant_options, &flymc_and_tuning_options})
      for (OptionInfo& o : part()) all.push_back(o);
    for (OptionInfo& o : other_sampler_options()) all.push_back(o);
    return all;
  }();
  return t;
}

[[noreturn]] void wrong_type(const OptionInfo& o, const char* want) {
  throw ConfigError(std::string(o.key) + " must be " + want);
}

/// An integer value for a field of type T, checked against T's range.
template <class T>
T fit(const OptionInfo& o, long long x) {
  if (x < static_cast<long long>(std::numeric_limits<T>::min()) ||
      x > static_cast<long long>(std::numeric_limits<T>::max()))
    throw ConfigError(
        std::string(o.key) + " must be in [" + std::to_string(std::numeric_limits<T>::min()) +
        ", " + std::to_string(std::numeric_limits<T>::max()) + "], got " + std::to_string(x));
  return static_cast<T>(x);
}

template <class T>
T integer_of(const OptionInfo& o, const OptionValue& v) {
  if (const auto* x = std::get_if<long long>(&v)) return fit<T>(o, *x);
  if (const auto* u = std::get_if<std::uint64_t>(&v);
      u != nullptr && *u <= static_cast<std::uint64_t>(std::numeric_limits<long long>::max()))
    return fit<T>(o, static_cast<long long>(*u));
  wrong_type(o, "an integer");
}

double real_of(const OptionInfo& o, const OptionValue& v) {
  if (const auto* x = std::get_if<double>(&v)) return *x;
  if (const auto* i = std::get_if<long long>(&v)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return static_cast<double>(*u);
  wrong_type(o, "a number");
}

}  // namespace

std::string AutoRange::text() const {
  if (hi == std::numeric_limits<double>::infinity())  // (open: the value is finite)
    return (lo_open ? "> " : ">= ") + number_text(lo);
  return std::string("in ") + (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) +
         (hi_open ? ")" : "]");
}

std::span<const OptionInfo> run_options() noexcept { return table(); }

const OptionInfo* find_option(std::string_view name_or_key) noexcept {
  for (const OptionInfo& o : table())
    if (name_or_key == o.name || name_or_key == o.key) return &o;
  return nullptr;
}

const OptionInfo& option(std::string_view name_or_key) {
  const OptionInfo* o = find_option(name_or_key);
  if (o == nullptr) throw std::logic_error("no run option named " + std::string(name_or_key));
  return *o;
}

OptionValue get_value(const RunConfig& cfg, const OptionInfo& o) {
  return std::visit(
      [&cfg](const auto& f) -> OptionValue {
        using F = std::remove_cvref_t<decltype(f)>;
        if constexpr (std::is_same_v<F, ChoiceField>) {
          return std::string(f.get(cfg));
        } else {
          const auto& v = cfg.*f;
          using T = std::remove_cvref_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                        std::is_same_v<T, std::uint64_t> || std::is_same_v<T, std::string>)
            return v;
          else if constexpr (std::is_same_v<T, std::optional<double>>)
            return v ? OptionValue(*v) : OptionValue();
          else if constexpr (std::is_same_v<T, std::optional<int>>)
            return v ? OptionValue(static_cast<long long>(*v)) : OptionValue();
          else
            return static_cast<long long>(v);
        }
      },
      o.field);
}

void set_value(RunConfig& cfg, const OptionInfo& o, const OptionValue& v) {
  std::visit(
      [&](const auto& f) {
        using F = std::remove_cvref_t<decltype(f)>;
        if constexpr (std::is_same_v<F, ChoiceField>) {
          const auto* s = std::get_if<std::string>(&v);
          if (s == nullptr) wrong_type(o, "a str");
          if (f.set(cfg, *s)) return;
          std::string names;
          for (const std::string& n : f.names()) names += (names.empty() ? "" : ", ") + n;
          throw ConfigError(std::string(o.key) + "='" + *s + "' is not one of: " + names);
        } else {
          auto& x = cfg.*f;
          using T = std::remove_cvref_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) {
            const auto* b = std::get_if<bool>(&v);
            if (b == nullptr) wrong_type(o, "True or False");
            x = *b;
          } else if constexpr (std::is_same_v<T, std::string>) {
            const auto* s = std::get_if<std::string>(&v);
            if (s == nullptr) wrong_type(o, "a str");
            x = *s;
          } else if constexpr (std::is_same_v<T, std::optional<double>>) {
            x = std::holds_alternative<std::monostate>(v) ? std::nullopt
                                                          : std::optional<double>(real_of(o, v));
          } else if constexpr (std::is_same_v<T, std::optional<int>>) {
            x = std::holds_alternative<std::monostate>(v)
                    ? std::nullopt
                    : std::optional<int>(integer_of<int>(o, v));
          } else if constexpr (std::is_same_v<T, double>) {
            x = real_of(o, v);
          } else if constexpr (std::is_same_v<T, std::uint64_t>) {
            if (const auto* u = std::get_if<std::uint64_t>(&v)) {
              x = *u;
            } else {
              const auto* i = std::get_if<long long>(&v);
              if (i == nullptr || *i < 0) wrong_type(o, "an integer in [0, 2**64 - 1]");
              x = static_cast<std::uint64_t>(*i);
            }
          } else {
            x = integer_of<T>(o, v);
          }
        }
      },
      o.field);
}

std::string format_value(const RunConfig& cfg, const OptionInfo& o) {
  const OptionValue v = get_value(cfg, o);
  if (std::holds_alternative<std::monostate>(v)) return "auto";
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "1" : "0";
  if (const auto* i = std::get_if<long long>(&v)) return std::to_string(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return std::to_string(*u);
  if (const auto* d = std::get_if<double>(&v)) return number_text(*d);
  return std::get<std::string>(v);
}

namespace {
/// The whole of `text` as a number of type T, or nullopt.
template <class T>
std::optional<T> number_from(std::string_view text) {
  T x{};
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, x);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return x;
}

[[noreturn]] void bad_text(const OptionInfo& o, std::string_view text, const char* want) {
  throw ConfigError(std::string(o.key) + " must be " + want + ", got '" + std::string(text) + "'");
}
}  // namespace

void parse_value(RunConfig& cfg, const OptionInfo& o, std::string_view text) {
  const OptionKind k = o.kind();
  if (k == OptionKind::choice || k == OptionKind::text) return set_value(cfg, o, std::string(text));
  if ((k == OptionKind::auto_integer || k == OptionKind::auto_real) && text == "auto")
    return set_value(cfg, o, std::monostate{});
  if (k == OptionKind::flag) {
    if (text == "1" || text == "true") return set_value(cfg, o, true);
    if (text == "0" || text == "false") return set_value(cfg, o, false);
    bad_text(o, text, "1, 0, true or false");
  }
  if (k == OptionKind::unsigned_integer) {
    if (const auto u = number_from<std::uint64_t>(text)) return set_value(cfg, o, *u);
    bad_text(o, text, "an integer >= 0");
  }
  if (k == OptionKind::real || k == OptionKind::auto_real) {
    if (const auto d = number_from<double>(text)) return set_value(cfg, o, *d);
    bad_text(o, text, "a number");
  }
  if (const auto i = number_from<long long>(text)) return set_value(cfg, o, *i);
  bad_text(o, text, "an integer");
}

std::vector<std::pair<std::string, std::string>> header_config(const RunConfig& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  for_each_option([&](const OptionInfo& o) {
    if (!o.affects_draws) return;
    out.emplace_back(o.header_name(),
                     o.resolved != nullptr ? o.resolved(cfg) : format_value(cfg, o));
  });
  return out;
}

std::string reader_names(const OptionInfo& o) { return algo_names(o.read_by); }

void check_read_by(Algo algo, std::span<const OptionInfo* const> given) {
  for (const OptionInfo* o : given)
    if (!o->reads(algo))
      throw UsageError(std::string("--") + o->name + " is not read by --algo " + enum_name(algo) +
                       ", so it would be ignored: it applies to --algo " + reader_names(*o) +
                       " (give one of them, or leave the option out)");
}

void check_model_reads(ModelKind model, std::span<const OptionInfo* const> given) {
  for (const OptionInfo* o : given) {
    if (o->reads(model)) continue;
    std::string readers;
    for (const EnumName<ModelKind>& m : kModelNames)
      if (o->reads(m.value)) readers += (readers.empty() ? "" : ", ") + std::string(m.name);
    throw UsageError(std::string("--") + o->name + " is not read by --model " + enum_name(model) +
                     ", so it would be ignored: it applies to --model " + readers +
                     " (leave the option out)");
  }
}

AlgoMask auto_readers(std::span<const OptionInfo* const> given, std::string& why) {
  AlgoMask mask = kAllAlgos;
  why.clear();
  for (const OptionInfo* o : given) {
    if (o->chosen_by_auto)
      throw UsageError(std::string("--") + o->name +
                       " is chosen by --algo auto for each of its candidates, so yours would be "
                       "ignored: name the sampler with --algo (it applies to --algo " +
                       reader_names(*o) + ")");
    if (o->read_by == kAllAlgos) continue;
    mask &= o->read_by;
    why += (why.empty() ? "--" : ", --") + std::string(o->name);
  }
  return mask;
}

}  // namespace flymc
