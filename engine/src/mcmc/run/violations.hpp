#pragma once
// Private: what a run does when a chain finds its model's bound violated
// (RunConfig::on_bound_violation). With `stop` the chain throws BoundViolationError at the top of
// its next iteration, naming the family, the datum and its predictor; the run's other chains then
// stop at theirs (for_each_chain's abort flag) and the error reaches the caller. With `finish`
// the run goes on and is marked not exact afterwards (mark_violations).
#include <string>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc::detail {

/// What a violation found by the chains of `cfg`'s run means: the family, the bound its sampler
/// checks (FlyMC's lower bound, scalable MH's remainder bound, an event-rate bound) and, where
/// the sampler located it (`site`), the datum and its predictor.
std::string violation_message(const RunConfig& cfg, const ViolationSite& site);

/// Throws BoundViolationError if the chain has counted a violation and the run is to stop there.
inline void stop_on_violation(const RunConfig& cfg, const Counters& c) {
  if (c.bound_violations > 0 && cfg.on_bound_violation == OnViolation::stop)
    throw BoundViolationError(violation_message(cfg, c.first_violation));
}

/// After a run of an exact sampler that finished with violations (OnViolation::finish): a
/// warning in r.warnings saying so (RunResult::exact() is then false).
void mark_violations(RunResult& r);

}  // namespace flymc::detail
