// The runner instantiated for the single-index models (probit, Gaussian, a user's family).
#include "flymc/models/glm.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_glm_model(const RunRequest& r) { return detail::run_model<GlmModel>(r); }

}  // namespace flymc
