#pragma once
// Private: data checks shared by the models' constructors.
#include <string>

#include "flymc/data/dataset.hpp"

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

}  // namespace flymc::detail
