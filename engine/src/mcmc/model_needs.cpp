#include "flymc/mcmc/model_needs.hpp"

#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/models/family.hpp"

namespace flymc {

unsigned model_offers(const RunConfig& cfg) {
  switch (cfg.model) {
    case ModelKind::logistic:
      return kOfferLikelihood | kOfferFlyBound | kOfferThirdBound | kOfferFourthBound |
             kOfferLogisticDatum | kOfferShards;
    case ModelKind::robust:
      return kOfferLikelihood | kOfferFlyBound | kOfferThirdBound | kOfferShards;
    case ModelKind::softmax:
      return kOfferLikelihood | kOfferFlyBound;
    case ModelKind::probit:
    case ModelKind::gaussian:
    case ModelKind::custom:
      break;
  }
  const auto family = single_index_family(cfg);
  unsigned offers = kOfferLikelihood | kOfferShards;
  if (family->kappa()) offers |= kOfferFlyBound;
  if (family->m3()) offers |= kOfferThirdBound;
  if (family->m4()) offers |= kOfferFourthBound;
  return offers;
}

unsigned sampler_needs(const RunConfig& cfg) {
  switch (cfg.algo) {
    case Algo::full:
    case Algo::automatic:
      return kOfferLikelihood;
    case Algo::flymc:
      return kOfferLikelihood | kOfferFlyBound;
    case Algo::smh:
      return kOfferLikelihood | (cfg.smh_order == 3 ? kOfferFourthBound : kOfferThirdBound);
    case Algo::minibatch_mh:
    case Algo::sgld:
    case Algo::bps:
    case Algo::lipsbps:
    case Algo::sbps:
    case Algo::psbps:
    case Algo::zigzag_ss:
    case Algo::zigzag_cv:
      return kOfferLikelihood | kOfferLogisticDatum;
  }
  return kOfferLikelihood;
}

namespace {

/// What a missing offer means, for the message.
const char* offer_text(unsigned bit) {
  switch (bit) {
    case kOfferFlyBound:
      return "a collapsible lower bound on each datum's likelihood (a single-index family gives "
             "one through kappa, a bound on -f'')";
    case kOfferThirdBound:
      return "a bound on each datum's third derivative (a single-index family's M3)";
    case kOfferFourthBound:
      return "a bound on each datum's fourth derivative (a single-index family's M4)";
    case kOfferLogisticDatum:
      return "logistic regression's per-datum constants (it runs logistic regression only so "
             "far)";
    case kOfferShards:
      return "data-wide sums across the processes of a sharded data set";
    default:
      return "its log-likelihood";
  }
}

std::string model_name(const RunConfig& cfg) {
  if (cfg.model == ModelKind::custom && cfg.family) return "the " + cfg.family->name() + " model";
  return std::string("--model ") + to_string(cfg.model);
}

}  // namespace

void check_model_fits(const RunConfig& cfg, bool sharded) {
  const unsigned need = sampler_needs(cfg) | (sharded ? kOfferShards : 0u);
  const unsigned missing = need & ~model_offers(cfg);
  if (missing == 0) return;
  const unsigned first = missing & (~missing + 1u);  // the lowest missing bit
  std::string sampler = std::string("--algo ") + to_string(cfg.algo);
  if (cfg.algo == Algo::smh) sampler += " --smh-order " + std::to_string(cfg.smh_order);
  if (sharded && first == kOfferShards) sampler += " on --shard-data";
  throw ConfigError(sampler + " needs " + offer_text(first) + ", which " + model_name(cfg) +
                    " does not offer");
}

}  // namespace flymc
