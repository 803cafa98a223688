// The runner of a model given in code: a single-index family's (the generic path, run_glm_model),
// or a family with a global parameter's, its own model (models/global_model.hpp).
#include "flymc/models/global_model.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_custom_model(const RunRequest& r) {
  if (!has_global_family(r.cfg)) return run_glm_model(r);
  return detail::run_model<GlobalFamilyModel>(r);
}

}  // namespace flymc
