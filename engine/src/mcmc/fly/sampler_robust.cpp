// The runner instantiated for robust linear regression (Student-t likelihood, docs/math.md §2.3).
#include "flymc/models/robust.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_robust_model(const RunRequest& r) { return detail::run_model<RobustModel>(r); }

}  // namespace flymc
