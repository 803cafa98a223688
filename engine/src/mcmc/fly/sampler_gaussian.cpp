// The runner of Gaussian regression: with a known noise scale a single-index model (the generic
// path, run_glm_model); with σ inferred, its own model (docs/math.md §2.6).
#include "flymc/models/gaussian_sigma.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_gaussian_model(const RunRequest& r) {
  if (!infers_sigma(r.cfg)) return run_glm_model(r);
  return detail::run_model<GaussianSigmaModel>(r);
}

}  // namespace flymc
