#include "violations.hpp"

#include "flymc/core/format.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/global_family.hpp"

namespace flymc::detail {
namespace {

std::string family_name(const RunConfig& cfg) {
  if (cfg.family) return "the " + cfg.family->name() + " family";  // a family given in code
  if (cfg.global_family) return "the " + cfg.global_family->name() + " family";
  return std::string("the ") + to_string(cfg.model) + " model";
}

/// The bound the run's sampler checks, the constants it is built from, and what exceeded it.
std::string bound_text(Algo a) {
  if (sampler_info(a).kind == SamplerKind::smh)
    return "scalable MH's remainder bound (from M3 or M4, or a local envelope): a datum's "
           "remainder change exceeded "
           "its bound";
  if (is_pdmp(a)) return "the event-rate bound (from M1 or M2): an event's rate exceeded its bound";
  return "FlyMC's lower bound (from kappa): log B_n exceeded log L_n";
}

}  // namespace

std::string violation_message(const RunConfig& cfg, const ViolationSite& site) {
  std::string where;
  if (site.found())
    where = " at datum " + std::to_string(site.datum) +
            " (0-based row), eta = " + number_text(site.eta) + ", by " + number_text(site.excess);
  else if (!is_pdmp(cfg.algo))
    where = " (at a datum another process holds)";
  return "--algo " + std::string(to_string(cfg.algo)) + ": " + family_name(cfg) + " violates " +
         bound_text(cfg.algo) + where +
         ". Its constant is wrong, so the draws would not follow the posterior: fix the "
         "constant, or let the run finish marked not exact (--on-bound-violation finish; "
         "RunConfig::on_bound_violation = OnViolation::finish)";
}

void mark_violations(RunResult& r) {
  const std::uint64_t n = r.bound_violations();
  if (n == 0 || !is_exact(r.config.algo)) return;
  ViolationSite first;
  for (const ChainResult& c : r.chains) first.merge(c.counters.first_violation);
  r.warnings.push_back(std::to_string(n) +
                       " bound violations, so the run is not exact. The first: " +
                       violation_message(r.config, first));
}

}  // namespace flymc::detail
