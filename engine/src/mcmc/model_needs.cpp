#include "flymc/mcmc/model_needs.hpp"

#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/global_family.hpp"

namespace flymc {

unsigned model_offers(const RunConfig& cfg) {
  // σ or φ inferred: a model of its own, with a likelihood, its gradient and a MAP fit, and
  // scalable MH of the second order (the third where the family has a fourth-derivative
  // envelope), on shards too, where it gives a global family (models/global_family.hpp).
  const ModelInfo& m = model_info(cfg.model);
  if (has_global_family(cfg))
    return kOfferLikelihood | kOfferRowExtras | kOfferThirdBound | kOfferShards |
           (cfg.global_family->has_fourth_envelope() ? kOfferFourthBound : 0u);
  if (inferred_global(cfg) != nullptr)
    return kOfferLikelihood | kOfferRowExtras |
           (m.global_smh ? kOfferThirdBound | kOfferShards : 0u) |
           (m.global_smh3 ? kOfferFourthBound : 0u) |
           (m.collapses_scale ? kOfferCollapsed | kOfferShards : 0u);
  if (m.family == nullptr) return m.offers;
  const auto family = m.family(cfg);
  unsigned offers = m.offers;
  if (family->kappa()) offers |= kOfferFlyBound;
  if (family->m3() || family->has_envelope()) offers |= kOfferThirdBound;
  if (family->m4() || family->has_envelope()) offers |= kOfferFourthBound;
  if (family->m1()) offers |= kOfferGradientBound;
  if (family->m2()) offers |= kOfferCurvatureBound;
  return offers;
}

unsigned sampler_needs(const RunConfig& cfg) {
  const SamplerInfo& s = sampler_info(cfg.algo);
  return cfg.smh_order == 3 && s.needs_order3 != 0 ? s.needs_order3 : s.needs;
}

namespace {

/// What a missing offer means, for the message.
const char* offer_text(unsigned bit) {
  switch (bit) {
    case kOfferFlyBound:
      return "a collapsible lower bound on each datum's likelihood (a single-index family gives "
             "one through kappa, a bound on -f'')";
    case kOfferThirdBound:
      return "a bound on each datum's third derivative (a single-index family's M3, or a local "
             "envelope)";
    case kOfferFourthBound:
      return "a bound on each datum's fourth derivative (a single-index family's M4, or a local "
             "envelope)";
    case kOfferSingleIndex:
      return "a single-index family (each datum's likelihood through one linear predictor)";
    case kOfferGradientBound:
      return "a bound on each datum's first derivative (a single-index family's M1)";
    case kOfferCurvatureBound:
      return "a bound on each datum's second derivative (a single-index family's M2)";
    case kOfferRowExtras:
      return "per-row weights, trials and offsets (the single-index models of the generic path)";
    case kOfferShards:
      return "data-wide sums across the processes of a sharded data set";
    default:
      return "its log-likelihood";
  }
}

std::string model_name(const RunConfig& cfg) {
  if (has_global_family(cfg))
    return "the " + cfg.global_family->name() + " model (" + cfg.global_family->param_name() +
           " inferred)";
  if (cfg.model == ModelKind::custom && cfg.family) return "the " + cfg.family->name() + " model";
  if (cfg.model == ModelKind::student_t) return "--model student_t (sigma inferred)";
  if (infers_sigma(cfg)) return "--model gaussian with sigma inferred (no --noise-scale)";
  if (infers_phi(cfg)) return "--model negbin with phi inferred (no --dispersion)";
  return std::string("--model ") + to_string(cfg.model);
}

}  // namespace

void check_model_fits(const RunConfig& cfg, bool sharded, bool row_extras) {
  if (row_extras && !sampler_info(cfg.algo).row_extras)
    throw ConfigError(std::string("--algo ") + to_string(cfg.algo) +
                      " does not read per-row weights, trials or offsets yet (--weights, "
                      "--trials, --offset): --algo " +
                      algo_names(algos_where([](const SamplerInfo& i) {
                        return i.row_extras && i.kind != SamplerKind::automatic;
                      })) +
                      " do");
  const unsigned need =
      sampler_needs(cfg) | (sharded ? kOfferShards : 0u) | (row_extras ? kOfferRowExtras : 0u);
  const unsigned missing = need & ~model_offers(cfg);
  if (missing == 0) return;
  const unsigned first = missing & (~missing + 1u);  // the lowest missing bit
  std::string sampler = std::string("--algo ") + to_string(cfg.algo);
  if (sampler_info(cfg.algo).needs_order3 != 0)
    sampler += " --smh-order " + std::to_string(cfg.smh_order);
  if (sharded && first == kOfferShards) sampler += " on --shard-data";
  throw ConfigError(sampler + " needs " + offer_text(first) + ", which " + model_name(cfg) +
                    " does not offer");
}

bool runs_on_shards(const RunConfig& cfg) {
  const SamplerInfo& s = sampler_info(cfg.algo);
  return s.shardable || (s.shards_collapsed && (model_offers(cfg) & kOfferCollapsed) != 0);
}

std::string shard_samplers_text() {
  return "--algo " + algo_names(algos_where([](const SamplerInfo& i) { return i.shardable; })) +
         " (and --algo " +
         algo_names(algos_where([](const SamplerInfo& i) { return i.shards_collapsed; })) +
         " for --model gaussian with sigma inferred, whose likelihood reads only sums collapsed "
         "in its set-up)";
}

void check_trials(const RunConfig& cfg, const Dataset& data) {
  if (data.trials().empty()) return;
  const auto family = inferred_global(cfg) != nullptr || has_global_family(cfg)
                          ? nullptr
                          : single_index_family(cfg);
  if (!family || !family->reads_trials())
    throw ConfigError(data.source() + ": the data have trials (--trials), which " +
                      model_name(cfg) + " does not read (--model binomial does)");
}

namespace {

/// The built-in models (not a family given in code) that `cfg.algo` runs (Gaussian regression
/// with its noise scale known and negative binomial with its dispersion known: with σ or φ
/// inferred regular MCMC alone runs them so far).
std::string models_run(RunConfig cfg) {
  std::string out;
  cfg.noise_scale = 1.0;
  cfg.dispersion = 1.0;
  for (const EnumName<ModelKind>& m : kModelNames) {
    if (m.value == ModelKind::custom) continue;
    cfg.model = m.value;
    try {
      check_model_fits(cfg);
      out += (out.empty() ? "" : ", ") + std::string(m.name);
    } catch (const ConfigError&) {
    }
  }
  return out;
}

}  // namespace

std::string models_run_text(Algo algo, int smh_order, bool sharded) {
  RunConfig cfg;
  cfg.algo = algo;
  cfg.smh_order = smh_order;
  std::string out;
  for (const EnumName<ModelKind>& m : kModelNames) {
    if (m.value == ModelKind::custom) continue;
    cfg.model = m.value;
    try {
      check_model_fits(cfg, sharded);
      out += (out.empty() ? "" : ", ") + std::string(m.name);
    } catch (const ConfigError&) {
    }
  }
  return out;
}

std::string samplers_help() {
  std::string out;
  for (const SamplerInfo& s : kSamplers) {
    if (s.kind == SamplerKind::automatic) continue;
    out += (out.empty() ? "" : "; ") + std::string(s.name) + ": " + models_run_text(s.algo);
    if (s.needs_order3 != 0) out += " (order 3: " + models_run_text(s.algo, 3) + ")";
  }
  return "Models each sampler runs: " + out;
}

std::string samplers_markdown() {
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::string out =
      "| `--algo` | exact | models | sharded data | checkpoints | runs to `--ess` | batches | "
      "auto pilots |\n|---|---|---|---|---|---|---|---|\n";
  for (const SamplerInfo& s : kSamplers) {
    if (s.kind == SamplerKind::automatic) continue;
    RunConfig cfg;
    cfg.algo = s.algo;
    std::string models = models_run(cfg);
    if (s.needs_order3 != 0) {
      cfg.smh_order = 3;
      models += " (`--smh-order 3`: " + models_run(cfg) + ")";
    }
    std::string pilots;
    for (const AutoSetup& a : s.auto_setups)
      pilots += (pilots.empty() ? "" : ", ") + std::string(a.name);
    out += std::string("| `") + s.name + "` | " + yes(s.exact) + " | " + models + " | " +
           yes(s.shardable) + " | " + yes(s.checkpointable) + " | " + yes(s.targets_ess) + " | " +
           yes(s.batches) + " | " + (pilots.empty() ? "-" : pilots) + " |\n";
  }
  return out;
}

}  // namespace flymc
