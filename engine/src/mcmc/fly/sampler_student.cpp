// The runner of Student-t regression with its scale σ inferred (models/student_sigma.hpp); with σ
// known it is --model robust (sampler_robust.cpp).
#include "flymc/models/student_sigma.hpp"
#include "run_model.hpp"

namespace flymc {

RunResult run_student_model(const RunRequest& r) {
  return detail::run_model<StudentTSigmaModel>(r);
}

}  // namespace flymc
