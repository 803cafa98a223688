#pragma once
/// @file model_kinds.hpp
/// The model class behind each single-index --model, for the samplers that read a model's
/// likelihood only through its family (scalable MH, the piecewise-deterministic samplers): they
/// run the class's MAP search and take its family_ptr(), and name no model themselves.
#include <string>
#include <utility>

#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/model_table.hpp"
#include "flymc/models/glm.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/robust.hpp"

namespace flymc {

/// f.template operator()<M>(args...) with M the class of `kind`'s model: LogisticModel,
/// RobustModel, or GlmModel for every model built on a family (probit, gaussian, custom).
/// @throw ConfigError for a model without one (softmax: a predictor per class).
template <class F, class... A>
decltype(auto) with_single_index_model(ModelKind kind, F&& f, A&&... args) {
  if ((model_info(kind).offers & kOfferSingleIndex) == 0)
    throw ConfigError(std::string("--model ") + model_info(kind).name +
                      " has no single-index family");
  switch (kind) {
    case ModelKind::logistic:
      return f.template operator()<LogisticModel>(std::forward<A>(args)...);
    case ModelKind::robust:
      return f.template operator()<RobustModel>(std::forward<A>(args)...);
    default:
      return f.template operator()<GlmModel>(std::forward<A>(args)...);
  }
}

}  // namespace flymc
