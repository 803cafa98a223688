#pragma once
/// @file model_needs.hpp
/// Which sampler can run which model, decided positively: each model states what it offers
/// (a collapsible bound, bounded higher derivatives, …) and each sampler what it needs; a sampler
/// refuses a model that lacks something it needs, naming it. A new model that offers nothing
/// beyond its likelihood therefore runs regular MCMC only, never another model's sampler by
/// default.
#include <string>

#include "flymc/core/config.hpp"

namespace flymc {

/// What a model offers the samplers, one bit each.
enum ModelOffer : unsigned {
  /// Log-likelihood, gradient and MAP fit: every model (regular MCMC).
  kOfferLikelihood = 1u << 0,
  /// A lower bound per datum whose product collapses into sufficient statistics (FlyMC).
  kOfferFlyBound = 1u << 1,
  /// A bound on each datum's third derivative in its predictor (scalable MH, second order).
  kOfferThirdBound = 1u << 2,
  /// A bound on the fourth derivative (scalable MH, third order).
  kOfferFourthBound = 1u << 3,
  /// Logistic regression's per-datum constants that the piecewise-deterministic samplers'
  /// event bounds and the approximate samplers' tests are written for.
  kOfferLogisticDatum = 1u << 4,
  /// Data-wide sums that go across the processes of a sharded data set (docs/mpi.md).
  kOfferShards = 1u << 5,
};

/// What cfg.model offers (a single-index family by its constants, models/family.hpp).
/// @throw ConfigError for ModelKind::custom without a family.
unsigned model_offers(const RunConfig& cfg);

/// What cfg.algo needs of a model (with cfg.smh_order; Algo::automatic needs only what its
/// every candidate needs, the likelihood).
unsigned sampler_needs(const RunConfig& cfg);

/// Throws ConfigError naming the sampler, the model and what it lacks if cfg.model does not
/// offer what cfg.algo needs (and, with `sharded`, data-wide sums across processes).
void check_model_fits(const RunConfig& cfg, bool sharded = false);

}  // namespace flymc
