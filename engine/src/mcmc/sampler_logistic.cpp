// The runner instantiated for logistic regression.
#include "flymc/models/logistic.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_logistic_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                             const SinkFactory& sinks, Progress* progress,
                             const CheckpointOptions* checkpoint, const FaultInjection& faults,
                             const RunPart* part, const Precomputed& pre) {
  return detail::run_model<LogisticModel>(cfg, std::move(data), sinks, progress, checkpoint, faults,
                                          part, pre);
}

}  // namespace flymc
