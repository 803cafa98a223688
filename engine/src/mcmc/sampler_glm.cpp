// The runner instantiated for the single-index models (probit, Gaussian, a user's family).
#include "flymc/models/glm.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_glm_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                        const SinkFactory& sinks, Progress* progress,
                        const CheckpointOptions* checkpoint, const FaultInjection& faults,
                        const RunPart* part, const Precomputed& pre) {
  return detail::run_model<GlmModel>(cfg, std::move(data), sinks, progress, checkpoint, faults,
                                     part, pre);
}

}  // namespace flymc
