// The runner of negative binomial regression: with a known dispersion a single-index model (the
// generic path, run_glm_model); with φ inferred, its own model (models/negbin_phi.hpp).
#include "flymc/models/negbin_phi.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_negbin_model(const RunRequest& r) {
  if (!infers_phi(r.cfg)) return run_glm_model(r);
  return detail::run_model<NegBinomialPhiModel>(r);
}

}  // namespace flymc
