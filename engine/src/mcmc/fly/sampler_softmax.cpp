// The runner instantiated for softmax classification.
#include "flymc/models/softmax.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_softmax_model(const RunRequest& r) { return detail::run_model<SoftmaxModel>(r); }

}  // namespace flymc
