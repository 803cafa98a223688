// The runner instantiated for robust linear regression (Student-t likelihood, MATH.md 2.3).
#include "flymc/models/robust.hpp"
#include "sampler_impl.hpp"

namespace flymc {

RunResult run_robust_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                           const SinkFactory& sinks, Progress* progress,
                           const CheckpointOptions* checkpoint) {
  return detail::run_model<RobustModel>(cfg, std::move(data), sinks, progress, checkpoint);
}

}  // namespace flymc
