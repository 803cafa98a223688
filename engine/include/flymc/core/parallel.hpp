#pragma once
/// @file parallel.hpp
/// Deterministic reductions over data rows. Chunk boundaries depend only on (n, grain), and partial
/// results are combined in chunk order, so the result is bit-identical whatever the thread count
/// (the idea of Stan's reduce_sum_static). One parallel_for costs a few microseconds, so callers
/// pick a grain that keeps chunks at >= ~4096 rows.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace flymc {

/// Rows per chunk in data-wide reductions.
inline constexpr std::size_t kReduceGrain = 4096;

/// Returns combine(...combine(combine(init, f(c0)), f(c1))..., f(c_last)) where c_k is the k-th
/// chunk [k*grain, min(n, (k+1)*grain)); chunks run in parallel when there are several.
template <class T, class ChunkFn, class Combine>
T deterministic_reduce(std::size_t n, std::size_t grain, T init, ChunkFn&& chunk_fn,
                       Combine&& combine) {
  const std::size_t nchunks = (n + grain - 1) / grain;
  if (nchunks <= 1) return n == 0 ? init : combine(std::move(init), chunk_fn(std::size_t{0}, n));
  std::vector<T> parts(nchunks);
  tbb::parallel_for(std::size_t{0}, nchunks, [&](std::size_t c) {
    parts[c] = chunk_fn(c * grain, std::min(n, (c + 1) * grain));
  });
  T acc = std::move(init);
  for (auto& p : parts) acc = combine(std::move(acc), std::move(p));
  return acc;
}

}  // namespace flymc
