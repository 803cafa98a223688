#pragma once
/// @file row_fold.hpp
/// Data-wide sums over a data set that may be one part of a larger one (RowShard): each process
/// folds its own chunks and hands the accumulator on in row order, so every process gets the sum
/// one process holding every row would get, bit for bit, whatever the number of parts.
#include <utility>
#include <vector>

#include "flymc/core/parallel.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

/// deterministic_reduce over the rows of `ds` in chunks of kReduceGrain rows (their indices local
/// to `ds`). On a shard the fold starts from the previous part's accumulator and goes on to the
/// next part; every part returns the last part's result. `pack` turns a T into doubles and
/// `unpack` turns them back, exactly. A shard's process must call this collectively with the
/// other parts' processes.
template <class T, class ChunkFn, class Combine, class Pack, class Unpack>
T fold_rows(const Dataset& ds, T init, ChunkFn&& chunk_fn, Combine&& combine, Pack&& pack,
            Unpack&& unpack) {
  auto parts = chunk_partials(ds.n(), kReduceGrain, chunk_fn);  // before waiting for the others
  const RowShard* s = ds.shard();
  const bool linked = s != nullptr && s->link->parts() > 1;
  T acc =
      linked && s->link->part() > 0 ? unpack(s->link->receive_from_previous()) : std::move(init);
  for (auto& p : parts) acc = combine(std::move(acc), std::move(p));
  if (!linked) return acc;
  const std::vector<double> mine = pack(acc);
  if (s->link->part() + 1 < s->link->parts()) s->link->send_to_next(mine);
  return unpack(s->link->broadcast_from_last(mine));
}

/// fold_rows of a sum of doubles.
template <class ChunkFn>
double sum_rows(const Dataset& ds, ChunkFn&& chunk_fn) {
  return fold_rows(
      ds, 0.0, chunk_fn, [](double a, double b) { return a + b; },
      [](double v) { return std::vector<double>{v}; },
      [](const std::vector<double>& v) { return v.at(0); });
}

}  // namespace flymc
