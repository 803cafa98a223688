#pragma once
/// @file model_table.hpp
/// The model table: one row per built-in model with everything the engine asks of it by its
/// kind (its name, the labels it reads, what it offers the samplers, the single-index family it
/// is made of, and the runner of its FlyMC and regular MCMC chains). The option parser, the
/// loaders, the sampler checks (mcmc/model_needs.hpp), SBC and run() read it, so a new built-in
/// single-index model is its family's file (engine/src/models/) plus its ModelKind value, its
/// maker's declaration and one row here; a model with a bound of its own adds its runner.
#include <cstddef>
#include <memory>

namespace flymc {

/// Models (docs/math.md §2): logistic regression (labels ±1), softmax classification (labels
/// 0..K−1), robust linear regression with a Student-t likelihood (real responses), and the
/// single-index models built on SingleIndexFamily (models/family.hpp): probit regression (labels
/// ±1), Gaussian linear regression (real responses), binomial, Poisson and negative binomial
/// regression (counts), Student-t regression with its scale inferred (real responses), and
/// `custom`, a family given in code (RunConfig::family, or RunConfig::global_family for one with a
/// global parameter).
enum class ModelKind {
  logistic,
  softmax,
  robust,
  probit,
  gaussian,
  binomial,
  poisson,
  negbin,
  student_t,
  custom
};

/// What values the label column may hold.
enum class LabelDomain {
  /// Any finite value (regression).
  any,
  /// Two classes: all labels in {-1, +1} (kept), or all in {0, 1} (0 is mapped to -1, 1 to +1).
  /// Any other value, or a mix of the codings such as {-1, 0, 1}, is a DataError.
  binary,
  /// Class indices 0..K-1 (softmax): non-negative integers.
  categorical,
};

/// What a model offers the samplers, one bit each (core/samplers.hpp says what each sampler
/// needs; a sampler refuses a model that lacks a bit it needs, naming it).
enum ModelOffer : unsigned {
  /// Log-likelihood, gradient and MAP fit: every model (regular MCMC).
  kOfferLikelihood = 1u << 0,
  /// A lower bound per datum whose product collapses into sufficient statistics (FlyMC).
  kOfferFlyBound = 1u << 1,
  /// A bound on each datum's third derivative in its predictor (scalable MH, second order).
  kOfferThirdBound = 1u << 2,
  /// A bound on the fourth derivative (scalable MH, third order).
  kOfferFourthBound = 1u << 3,
  /// Data-wide sums that go across the processes of a sharded data set (docs/mpi.md).
  kOfferShards = 1u << 4,
  /// A single-index family (models/family.hpp): each datum's gradient through its predictor.
  kOfferSingleIndex = 1u << 5,
  /// A bound M1 on |f'|: bounded gradients (lipSBPS, Zig-Zag with subsampling).
  kOfferGradientBound = 1u << 6,
  /// A bound M2 on |f''|: Lipschitz gradients (BPS, Zig-Zag with control variates).
  kOfferCurvatureBound = 1u << 7,
  /// Per-row weights, trials and offsets (Dataset::weights(), trials(), offsets()): the
  /// single-index models the generic path runs. A sampler reads them where its table row says.
  kOfferRowExtras = 1u << 8,
  /// A likelihood that reads only sums collapsed in the model's set-up (Gaussian regression with
  /// σ inferred): regular MCMC then needs no data pass per iteration and runs on a shard.
  kOfferCollapsed = 1u << 9,
};

struct RunConfig;
struct RunRequest;  // mcmc/sampler.hpp
struct RunResult;
class SingleIndexFamily;
/// A single-index model's family for the run's options (models/family.hpp).
using FamilyMaker = std::shared_ptr<const SingleIndexFamily> (*)(const RunConfig&);
/// Runs FlyMC or regular MCMC on the model (detail::run_model instantiated for its type).
using ModelRunner = RunResult (*)(const RunRequest&);

// The built-in families (engine/src/models/family.cpp); `custom` is RunConfig::family.
std::shared_ptr<const SingleIndexFamily> probit_family(const RunConfig&);
std::shared_ptr<const SingleIndexFamily> gaussian_family(const RunConfig&);
std::shared_ptr<const SingleIndexFamily> binomial_family(const RunConfig&);
std::shared_ptr<const SingleIndexFamily> poisson_family(const RunConfig&);
std::shared_ptr<const SingleIndexFamily> negbin_family(const RunConfig&);
std::shared_ptr<const SingleIndexFamily> custom_family(const RunConfig&);
// The θ-kernel runners (engine/src/mcmc/sampler_<model>.cpp).
RunResult run_logistic_model(const RunRequest&);
RunResult run_softmax_model(const RunRequest&);
RunResult run_robust_model(const RunRequest&);
RunResult run_glm_model(const RunRequest&);       // every single-index model
RunResult run_gaussian_model(const RunRequest&);  // run_glm_model, or σ inferred (infers_sigma)
RunResult run_negbin_model(const RunRequest&);    // run_glm_model, or φ inferred (infers_phi)
RunResult run_student_model(const RunRequest&);   // Student-t regression with σ inferred
RunResult run_custom_model(const RunRequest&);    // run_glm_model, or a global family's model

/// One row of the table.
struct ModelInfo {
  ModelKind kind;
  const char* name;  ///< its --model spelling
  LabelDomain labels;
  /// ModelOffer bits; a single-index model adds those its family's constants give.
  unsigned offers = kOfferLikelihood;
  FamilyMaker family = nullptr;  ///< single-index models: their family
  ModelRunner runner = &run_glm_model;
  /// Without --noise-scale its noise scale σ is a parameter (Gaussian regression; infers_sigma).
  bool infers_scale = false;
  /// Without --dispersion its dispersion φ is a parameter (negative binomial; infers_phi).
  bool infers_dispersion = false;
  /// With its scale or dispersion inferred, scalable MH of the second order runs it through the
  /// model's global family (models/global_family.hpp).
  bool global_smh = false;
  /// And of the third order too (its global family has a fourth-derivative envelope).
  bool global_smh3 = false;
  /// With its scale inferred its likelihood reads only sums collapsed in the set-up
  /// (kOfferCollapsed), which go across a shard's processes (kOfferShards).
  bool collapses_scale = false;
};

namespace detail {
inline constexpr unsigned kSingleIndexOffers =
    kOfferLikelihood | kOfferShards | kOfferSingleIndex | kOfferRowExtras;
}

/// Every ModelKind value in its order (a static_assert in samplers.cpp checks it).
inline constexpr ModelInfo kModels[] = {
    {.kind = ModelKind::logistic,
     .name = "logistic",
     .labels = LabelDomain::binary,
     .offers = kOfferLikelihood | kOfferFlyBound | kOfferThirdBound | kOfferFourthBound |
               kOfferShards | kOfferSingleIndex | kOfferGradientBound | kOfferCurvatureBound,
     .runner = &run_logistic_model},
    {.kind = ModelKind::softmax,
     .name = "softmax",
     .labels = LabelDomain::categorical,
     .offers = kOfferLikelihood | kOfferFlyBound,
     .runner = &run_softmax_model},
    {.kind = ModelKind::robust,
     .name = "robust",
     .labels = LabelDomain::any,
     .offers = kOfferLikelihood | kOfferFlyBound | kOfferThirdBound | kOfferFourthBound |
               kOfferShards | kOfferSingleIndex | kOfferGradientBound | kOfferCurvatureBound,
     .runner = &run_robust_model},
    {.kind = ModelKind::probit,
     .name = "probit",
     .labels = LabelDomain::binary,
     .offers = detail::kSingleIndexOffers,
     .family = &probit_family},
    {.kind = ModelKind::gaussian,
     .name = "gaussian",
     .labels = LabelDomain::any,
     .offers = detail::kSingleIndexOffers,
     .family = &gaussian_family,
     .runner = &run_gaussian_model,
     .infers_scale = true,
     .collapses_scale = true},
    // Successes of the data's trials (1 without a trials column), logit or probit (--link).
    {.kind = ModelKind::binomial,
     .name = "binomial",
     .labels = LabelDomain::any,
     .offers = detail::kSingleIndexOffers,
     .family = &binomial_family},
    // Counts with the log link (an offset from the data): no global constant, so no FlyMC; scalable
    // MH runs on the family's local envelope.
    {.kind = ModelKind::poisson,
     .name = "poisson",
     .labels = LabelDomain::any,
     .offers = detail::kSingleIndexOffers,
     .family = &poisson_family},
    // Counts with the log link and a known dispersion (--dispersion): each datum's constants are
    // (y + r) times logistic's, FlyMC's κ_n among them; scalable MH takes them as an envelope.
    // Without --dispersion, φ is a parameter (its own model).
    {.kind = ModelKind::negbin,
     .name = "negbin",
     .labels = LabelDomain::any,
     .offers = detail::kSingleIndexOffers,
     .family = &negbin_family,
     .runner = &run_negbin_model,
     .infers_dispersion = true,
     .global_smh = true,
     .global_smh3 = true},
    // Robust regression's Student-t likelihood with its scale σ a parameter: regular MCMC, and
    // scalable MH of the second and third orders through its global family; a known scale is
    // --model robust
    // --noise-scale.
    {.kind = ModelKind::student_t,
     .name = "student_t",
     .labels = LabelDomain::any,
     .offers =
         kOfferLikelihood | kOfferRowExtras | kOfferThirdBound | kOfferFourthBound | kOfferShards,
     .runner = &run_student_model,
     .infers_scale = true,
     .global_smh = true,
     .global_smh3 = true},
    // A family given in code reads its data in code too: any label reaches its check_label().
    // With a global parameter (RunConfig::global_family) it is a model of its own.
    {.kind = ModelKind::custom,
     .name = "custom",
     .labels = LabelDomain::any,
     .offers = detail::kSingleIndexOffers,
     .family = &custom_family,
     .runner = &run_custom_model},
};

/// The row of `m`.
constexpr const ModelInfo& model_info(ModelKind m) noexcept {
  return kModels[static_cast<std::size_t>(m)];
}
/// What the model's label column may hold (the loaders' check).
constexpr LabelDomain label_domain(ModelKind m) noexcept { return model_info(m).labels; }

}  // namespace flymc
