#pragma once
/// @file samplers.hpp
/// The sampler table: one row per algorithm with everything the rest of the engine asks of it
/// (its name, whether its draws are exact, what it needs of a model, whether it runs on sharded
/// data, checkpoints, runs to an ESS target, reads batches, which set-ups auto pilots, and its
/// runner). The command line, auto, the option table's readers, RunConfig::validate(), the
/// outputs and docs/architecture.md's table all read it, so a new sampler is its room (a
/// folder under engine/src/mcmc/ with its runner) plus one row here and its Algo value.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "flymc/core/config.hpp"

namespace flymc {

/// How a sampler moves, which decides the output columns and summary lines it shares with its
/// kind: a θ-kernel with a bright set (FlyMC, regular MCMC), scalable MH's factorised test, a
/// piecewise-deterministic path, or an approximate subsampling step.
enum class SamplerKind { theta_kernel, smh, pdmp, approximate, automatic };

/// Which prices of auto's cost model (mcmc/auto/cost_model.hpp) a sampler's counted work takes:
/// regular MCMC's full passes, FlyMC's packed bright rows, scalable MH's gathered rows, or a
/// piecewise-deterministic path's events.
enum class CostFamily { full_data, flymc, smh, pdmp };

/// One set-up of a sampler that `--algo auto` pilots (choose_algo.hpp): its candidate name and
/// the choices it makes for the user.
struct AutoSetup {
  const char* name;
  KernelKind kernel = KernelKind::rwmh;
  Metric metric = Metric::automatic;
  bool adapt_metric = true;
  int smh_order = 2;
  /// Logistic regression: FlyMC's per-datum slack (RunConfig::slack_scale = 1) unless one is
  /// given: about as many more bright data for a chain that mixes better (docs/math.md §1.5).
  bool logistic_slack = false;
  /// Skipped above this many coefficients (0: any). Zig-Zag moves one coordinate's velocity per
  /// event, so its events per effective draw grow with the dimension; past a few dozen its pilot
  /// is not worth running (docs/math.md §3.3).
  std::size_t max_dim = 0;
};

struct RunRequest;  // mcmc/sampler.hpp: everything one run is given
struct RunResult;
/// Runs one resolved configuration (the sampler's room defines it).
using SamplerRunner = RunResult (*)(const RunRequest&);
RunResult run_theta_kernel_request(const RunRequest&);  // FlyMC and regular MCMC, per model
RunResult run_smh_request(const RunRequest&);           // mcmc/smh/
RunResult run_pdmp_request(const RunRequest&);          // mcmc/pdmp/
RunResult run_approximate_request(const RunRequest&);   // mcmc/minibatch/

/// One row of the table.
struct SamplerInfo {
  Algo algo;
  const char* name;  ///< its --algo spelling (and in every output)
  /// The draw files' sampler_t, followed by the θ-kernel (θ-kernel samplers) or the proposal
  /// (scalable MH) in parentheses.
  const char* title;
  SamplerKind kind;
  /// The draws target the posterior exactly, rather than an approximation of it; reported as
  /// `exact` in every output.
  bool exact = false;
  unsigned needs = kOfferLikelihood;  ///< ModelOffer bits it needs of a model
  unsigned needs_order3 = 0;          ///< with --smh-order 3, these instead (0: as `needs`)
  bool shardable = false;             ///< runs on data sharded over processes (docs/mpi.md)
  /// Runs on sharded data a model whose likelihood reads only sums collapsed in its set-up
  /// (kOfferCollapsed): every process then runs the same chains on the same sums.
  bool shards_collapsed = false;
  bool shares_chains = false;   ///< its chains may be split between processes (RunPart)
  bool checkpointable = false;  ///< saves its chains' state and resumes (--checkpoint-every)
  bool targets_ess = false;     ///< runs to an ESS target (--ess), its chains continuing in blocks
  bool batches = false;         ///< estimates gradients or tests from batches of --batch-size data
  bool refreshes = false;       ///< refreshes its velocity at random times (the BPS family)
  /// Reads the data's per-row weights, trials and offsets (a model's kOfferRowExtras); the
  /// others refuse data that have them.
  bool row_extras = false;
  std::span<const AutoSetup> auto_setups = {};  ///< what auto pilots of it (empty: no candidate)
  CostFamily cost = CostFamily::pdmp;           ///< the cost model's prices for its work
  SamplerRunner runner = nullptr;               ///< null for auto, which resolves to another row
};

namespace detail {
inline constexpr AutoSetup kFullSetups[] = {
    {.name = "regular-nuts-laplace",
     .kernel = KernelKind::nuts,
     .metric = Metric::dense,
     .adapt_metric = false},
    {.name = "regular-nuts", .kernel = KernelKind::nuts, .metric = Metric::dense},
    {.name = "regular-pcn", .kernel = KernelKind::pcn, .metric = Metric::dense}};
inline constexpr AutoSetup kFlymcSetups[] = {{.name = "flymc-nuts-fly",
                                              .kernel = KernelKind::nuts,
                                              .metric = Metric::fly,
                                              .logistic_slack = true}};
inline constexpr AutoSetup kSmhSetups[] = {{.name = "smh-pcn"},
                                           {.name = "smh-pcn3", .smh_order = 3}};
inline constexpr AutoSetup kZigZagCvSetups[] = {{.name = "zigzag-cv", .max_dim = 16}};

/// The piecewise-deterministic samplers' common row: a single-index family with the bound its
/// event rates need (`bound`: M1 or M2, 0 for the adaptive band's none), runs to an ESS target in
/// blocks, one process.
constexpr SamplerInfo pdmp_row(Algo a, const char* name, const char* title, bool exact,
                               bool batches, unsigned bound, bool refreshes,
                               std::span<const AutoSetup> setups = {}) {
  return {.algo = a,
          .name = name,
          .title = title,
          .kind = SamplerKind::pdmp,
          .exact = exact,
          .needs = kOfferLikelihood | kOfferSingleIndex | bound,
          .targets_ess = true,
          .batches = batches,
          .refreshes = refreshes,
          .auto_setups = setups,
          .runner = &run_pdmp_request};
}
/// The approximate subsampling samplers' row: a single-index family, a fixed length, batches.
constexpr SamplerInfo approximate_row(Algo a, const char* name, const char* title) {
  return {.algo = a,
          .name = name,
          .title = title,
          .kind = SamplerKind::approximate,
          .needs = kOfferLikelihood | kOfferSingleIndex,
          .batches = true,
          .runner = &run_approximate_request};
}
}  // namespace detail

/// Every Algo value in its order (`auto` last: not a sampler, but named and checked as one; its
/// properties are those its candidates share).
inline constexpr SamplerInfo kSamplers[] = {
    {.algo = Algo::flymc,
     .name = "flymc",
     .title = "FlyMC",
     .kind = SamplerKind::theta_kernel,
     .exact = true,
     .needs = kOfferLikelihood | kOfferFlyBound,
     .shardable = true,
     .shares_chains = true,
     .checkpointable = true,
     .targets_ess = true,
     .row_extras = true,
     .auto_setups = detail::kFlymcSetups,
     .cost = CostFamily::flymc,
     .runner = &run_theta_kernel_request},
    {.algo = Algo::full,
     .name = "full",
     .title = "Full",
     .kind = SamplerKind::theta_kernel,
     .exact = true,
     .shards_collapsed = true,
     .shares_chains = true,
     .checkpointable = true,
     .targets_ess = true,
     .row_extras = true,
     .auto_setups = detail::kFullSetups,
     .cost = CostFamily::full_data,
     .runner = &run_theta_kernel_request},
    detail::approximate_row(Algo::minibatch_mh, "minibatch-mh", "MinibatchMH(barker)"),
    detail::approximate_row(Algo::sgld, "sgld", "SGLD"),
    detail::pdmp_row(Algo::bps, "bps", "BPS(full gradient)", true, false, kOfferCurvatureBound,
                     true),
    detail::pdmp_row(Algo::lipsbps, "lipsbps", "BPS(subsampled, Lipschitz bound)", true, true,
                     kOfferGradientBound, true),
    detail::pdmp_row(Algo::sbps, "sbps", "SBPS(adaptive band)", false, true, 0, true),
    detail::pdmp_row(Algo::psbps, "psbps", "pSBPS(adaptive band, diagonal preconditioner)", false,
                     true, 0, true),
    detail::pdmp_row(Algo::zigzag_ss, "zigzag-ss", "ZigZag(subsampling)", true, false,
                     kOfferGradientBound, false),
    detail::pdmp_row(Algo::zigzag_cv, "zigzag-cv", "ZigZag(control variates)", true, false,
                     kOfferCurvatureBound, false, detail::kZigZagCvSetups),
    {.algo = Algo::smh,
     .name = "smh",
     .title = "SMH",
     .kind = SamplerKind::smh,
     .exact = true,
     .needs = kOfferLikelihood | kOfferThirdBound,
     .needs_order3 = kOfferLikelihood | kOfferFourthBound,
     .shardable = true,
     .checkpointable = true,
     .targets_ess = true,
     .row_extras = true,
     .auto_setups = detail::kSmhSetups,
     .cost = CostFamily::smh,
     .runner = &run_smh_request},
    {.algo = Algo::automatic,
     .name = "auto",
     .title = "auto",
     .kind = SamplerKind::automatic,
     .exact = true,
     .checkpointable = true,
     .targets_ess = true,
     .row_extras = true},
};

/// The row of `a` (kSamplers is in Algo's order, which a static_assert in samplers.cpp checks).
constexpr const SamplerInfo& sampler_info(Algo a) noexcept {
  return kSamplers[static_cast<std::size_t>(a)];
}

/// The samplers that read an option, or that share a property: a bit per Algo value.
using AlgoMask = std::uint32_t;
constexpr AlgoMask algo_bit(Algo a) noexcept { return AlgoMask{1} << static_cast<unsigned>(a); }
/// Every sampler (not auto) whose row satisfies `pred`.
template <class Pred>
constexpr AlgoMask algos_where(Pred pred) noexcept {
  AlgoMask m = 0;
  for (const SamplerInfo& s : kSamplers)
    if (s.kind != SamplerKind::automatic && pred(s)) m |= algo_bit(s.algo);
  return m;
}
inline constexpr AlgoMask kAllAlgos = algos_where([](const SamplerInfo&) { return true; });
inline constexpr AlgoMask kThetaKernelAlgos =
    algos_where([](const SamplerInfo& s) { return s.kind == SamplerKind::theta_kernel; });
inline constexpr AlgoMask kPdmpAlgos =
    algos_where([](const SamplerInfo& s) { return s.kind == SamplerKind::pdmp; });
inline constexpr AlgoMask kBatchAlgos = algos_where([](const SamplerInfo& s) { return s.batches; });
inline constexpr AlgoMask kRefreshAlgos =
    algos_where([](const SamplerInfo& s) { return s.refreshes; });
inline constexpr AlgoMask kEssAlgos =
    algos_where([](const SamplerInfo& s) { return s.targets_ess; });

/// The --algo names of the samplers in `m`, in the table's order ("flymc, smh").
std::string algo_names(AlgoMask m);

/// Whether the algorithm's draws target the posterior exactly (its row's `exact`).
constexpr bool is_exact(Algo a) noexcept { return sampler_info(a).exact; }
/// Whether the algorithm is a piecewise-deterministic (continuous-time) sampler (docs/math.md §7).
constexpr bool is_pdmp(Algo a) noexcept { return sampler_info(a).kind == SamplerKind::pdmp; }
/// Whether the algorithm moves θ with a θ-kernel (FlyMC and regular MCMC) and keeps a bright set.
constexpr bool uses_theta_kernel(Algo a) noexcept {
  return sampler_info(a).kind == SamplerKind::theta_kernel;
}
/// Whether the sampler's chains save their state and resume (auto: its candidates are then only
/// those that can).
constexpr bool can_checkpoint(Algo a) noexcept { return sampler_info(a).checkpointable; }
/// Whether the sampler runs to an ESS target (RunConfig::ess).
constexpr bool can_target_ess(Algo a) noexcept { return sampler_info(a).targets_ess; }
/// Whether the sampler estimates gradients or acceptance tests from batches of --batch-size data.
constexpr bool uses_batches(Algo a) noexcept { return sampler_info(a).batches; }

}  // namespace flymc
