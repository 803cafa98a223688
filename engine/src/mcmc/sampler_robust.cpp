// The runner instantiated for robust linear regression (Student-t likelihood, docs/math.md §2.3).
#include "flymc/models/robust.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_robust_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                           const SinkFactory& sinks, Progress* progress,
                           const CheckpointOptions* checkpoint, const FaultInjection& faults,
                           const RunPart* part, const Precomputed& pre) {
  return detail::run_model<RobustModel>(cfg, std::move(data), sinks, progress, checkpoint, faults,
                                        part, pre);
}

}  // namespace flymc
