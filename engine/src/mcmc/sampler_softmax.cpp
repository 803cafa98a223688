// The runner instantiated for softmax classification.
#include "flymc/models/softmax.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_softmax_model(const RunRequest& r) {
  return detail::run_model<SoftmaxModel>(r.cfg, r.data, r.sinks, r.progress, r.checkpoint, r.faults,
                                         r.part, r.pre);
}

}  // namespace flymc
