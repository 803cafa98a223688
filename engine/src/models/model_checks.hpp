#pragma once
// Private: data checks shared by the models' constructors.
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/model.hpp"

namespace flymc::detail {

/// Largest feature magnitude accepted: Hessians and the bounds' collapsed statistics sum w·x²
/// over up to 2^32 rows, which must stay finite (features of 1e160 made them infinite and every
/// FlyMC lp NaN).
inline constexpr double kMaxFeature = 1e100;

/// Throws DataError naming the first (row, field) whose feature is not finite or exceeds
/// kMaxFeature in magnitude; `model` names the model in the message ("logistic regression").
/// Loaded files never have non-finite values, but data sets built in memory may.
void check_features(const Dataset& ds, const std::string& model);

/// Throws ConfigError if `ds` is part of a data set sharded over processes (Dataset::shard()):
/// for the models whose data-wide sums do not yet go across the parts (docs/mpi.md).
void refuse_shard(const Dataset& ds, const std::string& model);

/// With a flat prior on some coefficients the posterior is proper only where the likelihood
/// falls off in every direction of theirs. A MAP search on separable data (logistic regression
/// whose classes a hyperplane splits) ends where the likelihood has nearly reached its
/// supremum, approached only at infinity: far out along the MAP's flat coordinates the
/// likelihood is then still as high, where a proper posterior's concave log-likelihood has long
/// fallen. Throws ConfigError naming `model` if log_lik(far) ≥ log_lik(θ_MAP), far the MAP with
/// its flat coordinates times 2^20 (the other coordinates and so the prior kept).
template <class LogLik>
void check_proper(const Prior& prior, const Vec& theta_map, const std::string& model,
                  LogLik&& log_lik) {
  if (!prior.any_flat()) return;
  Vec far = theta_map;
  bool moved = false;
  for (Eigen::Index j = 0; j < far.size(); ++j)
    if (prior.term(static_cast<std::size_t>(j)).kind == PriorKind::flat && far[j] != 0.0) {
      far[j] *= 1048576.0;
      moved = true;
    }
  if (!moved || !(log_lik(far) >= log_lik(theta_map))) return;
  throw ConfigError(model +
                    ": the posterior is improper: with a flat prior, the likelihood "
                    "keeps rising along the MAP's direction to infinity (separable data: "
                    "every datum fit ever better as the coefficients grow); give the "
                    "coefficients a proper prior, e.g. --prior 'normal(0, 10)'");
}

/// The message for a Laplace precision at the MAP that is not positive definite: with a flat
/// prior, the data do not determine every coefficient.
std::string improper_or_singular(const Prior& prior, const std::string& what);

/// Throws ConfigError (improper_or_singular) unless `llt`, the Cholesky factor of the Laplace
/// precision at the MAP, exists and, where a coefficient's prior is flat, is well conditioned:
/// a precision singular but for rounding (a feature repeated) factors with tiny pivots, and its
/// covariance would be rounding error.
void check_laplace_precision(const Prior& prior, const Eigen::LLT<Mat>& llt,
                             const std::string& model);

}  // namespace flymc::detail
