#pragma once
/// @file model_needs.hpp
/// Which sampler can run which model, decided positively: each model states what it offers
/// (a collapsible bound, bounded higher derivatives, …) and each sampler what it needs; a sampler
/// refuses a model that lacks something it needs, naming it. A new model that offers nothing
/// beyond its likelihood therefore runs regular MCMC only, never another model's sampler by
/// default.
#include <string>

#include "flymc/core/config.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

/// What cfg.model offers (a single-index family by its constants, models/family.hpp).
/// @throw ConfigError for ModelKind::custom without a family.
unsigned model_offers(const RunConfig& cfg);

/// What cfg.algo needs of a model: its row of the sampler table (with cfg.smh_order; auto needs
/// only what its every candidate needs, the likelihood).
unsigned sampler_needs(const RunConfig& cfg);

/// Throws ConfigError naming the sampler, the model and what it lacks if cfg.model does not
/// offer what cfg.algo needs (and, with `sharded`, data-wide sums across processes).
/// `row_extras`: the data have per-row weights, trials or offsets, which the sampler must read
/// (SamplerInfo::row_extras) and the model offer (kOfferRowExtras).
void check_model_fits(const RunConfig& cfg, bool sharded = false, bool row_extras = false);

/// Whether cfg.algo's iterations can go across the processes of a sharded data set: a shardable
/// sampler's (SamplerInfo::shardable), or regular MCMC on a model whose likelihood reads only
/// sums collapsed in its set-up (kOfferCollapsed: every process runs the same chains).
bool runs_on_shards(const RunConfig& cfg);
/// "--algo flymc, smh (and --algo full for ...)" for the errors that refuse a sharded run.
std::string shard_samplers_text();

/// Throws ConfigError if `data` have trials (Dataset::trials()) that cfg.model does not read
/// (SingleIndexFamily::reads_trials: the binomial).
void check_trials(const RunConfig& cfg, const Dataset& data);

/// The built-in models `algo` runs (with --smh-order `smh_order`; on --shard-data with
/// `sharded`), comma-separated, from the model and sampler tables.
std::string models_run_text(Algo algo, int smh_order = 2, bool sharded = false);

/// "Models each sampler runs: flymc: logistic, ...; ...", for --algo's help.
std::string samplers_help();

/// The sampler table (core/samplers.hpp) as the Markdown table docs/usage.md shows, with the
/// built-in models each sampler runs (a unit test keeps the page equal to it).
std::string samplers_markdown();

}  // namespace flymc
