// The runner instantiated for logistic regression.
#include "flymc/models/logistic.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_logistic_model(const RunRequest& r) { return detail::run_model<LogisticModel>(r); }

}  // namespace flymc
