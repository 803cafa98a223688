#pragma once
// What the micro-benchmark fixtures share (flymc_bm).
#include <Eigen/Cholesky>
#include <cstddef>

#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/models/model.hpp"

namespace flymc::bench {

/// A draw of the Laplace approximation N(θ_MAP, Σ), padded to `stride`: a typical posterior point
/// (at θ_MAP itself every MAP-tuned bound is tight and no datum is bright). Fixed stream, so every
/// benchmark times the same point.
inline AlignedBuffer laplace_point(const MapResult& map, std::size_t stride) {
  const Eigen::LLT<Mat> llt(map.covariance);
  Rng rng(11, 0);
  Vec eta(map.theta.size());
  for (auto& e : eta) e = rng.normal();
  const Vec t = map.theta + llt.matrixL() * eta;
  AlignedBuffer theta = aligned_zeros(stride);
  for (Eigen::Index j = 0; j < t.size(); ++j) theta[static_cast<std::size_t>(j)] = t[j];
  return theta;
}

/// A dark datum drawn uniformly (by rejection: the fixtures keep few data bright).
inline Index random_dark(const BrightSet& bright, Rng& rng) {
  while (true) {
    const auto n = static_cast<Index>(rng.below(bright.num_data()));
    if (!bright.is_bright(n)) return n;
  }
}

}  // namespace flymc::bench
