#pragma once
// Private: the full-data log-likelihood and its gradient as one deterministic reduction over
// chunks of rows (core/parallel.hpp): every model's log_lik_grad() supplies only the per-chunk
// pass, so the sums come out in chunk order, bit-identical at any thread count.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"

namespace flymc::detail {

/// A chunk's log-likelihood and gradient (in the model's padded layout).
struct LikGrad {
  double f = 0.0;
  std::vector<double> g;

  // As doubles for the processes of a sharded data set (row_fold.hpp).
  static constexpr const char* kWhat = "the log-likelihood's gradient";
  void pack(PackedSums& p) const { p.scalar(f).array(g); }
  static LikGrad unpack(SumsReader& r) {
    LikGrad l;
    l.f = r.scalar();
    l.g = r.array();
    return l;
  }
};

/// Σ over the rows of `ds` (of the whole data set if it is a shard: collective then) of the
/// log-likelihood, returned, and of its gradient, written to grad. `chunk(lo, hi)` returns rows
/// [lo, hi)'s LikGrad, g sized as the gradient.
template <class Chunk>
double reduce_lik_grad(const Dataset& ds, Chunk&& chunk, double* grad) {
  LikGrad total = fold_sums(ds, LikGrad{}, chunk, [](LikGrad acc, LikGrad p) {
    if (acc.g.empty()) return p;
    acc.f += p.f;
    for (std::size_t j = 0; j < acc.g.size(); ++j) acc.g[j] += p.g[j];
    return acc;
  });
  std::copy(total.g.begin(), total.g.end(), grad);
  return total.f;
}

}  // namespace flymc::detail
