#pragma once
/// @file parallel.hpp
/// Deterministic reductions over data rows. Chunk boundaries depend only on (n, grain), and partial
/// results are combined in chunk order, so the result is bit-identical whatever the thread count
/// (the idea of Stan's reduce_sum_static). One parallel_for costs a few microseconds, so callers
/// pick a grain that keeps chunks at >= ~4096 rows.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace flymc {

/// Rows per chunk in data-wide reductions.
inline constexpr std::size_t kReduceGrain = 4096;

/// f(c_k) for every chunk c_k = [k*grain, min(n, (k+1)*grain)) of [0, n), in chunk order; the
/// chunks run in parallel when there are several.
template <class ChunkFn>
auto chunk_partials(std::size_t n, std::size_t grain, ChunkFn&& chunk_fn) {
  using T = decltype(chunk_fn(std::size_t{0}, std::size_t{0}));
  const std::size_t nchunks = (n + grain - 1) / grain;
  std::vector<T> parts(nchunks);
  if (nchunks == 1) {
    parts[0] = chunk_fn(std::size_t{0}, n);
    return parts;
  }
  // Isolated: a thread waiting for the chunks takes only chunks, never another chain's task
  // (which would hold this chain until that one ended).
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(std::size_t{0}, nchunks, [&](std::size_t c) {
      parts[c] = chunk_fn(c * grain, std::min(n, (c + 1) * grain));
    });
  });
  return parts;
}

/// Returns combine(...combine(combine(init, f(c0)), f(c1))..., f(c_last)) where c_k is the k-th
/// chunk [k*grain, min(n, (k+1)*grain)); chunks run in parallel when there are several.
template <class T, class ChunkFn, class Combine>
T deterministic_reduce(std::size_t n, std::size_t grain, T init, ChunkFn&& chunk_fn,
                       Combine&& combine) {
  T acc = std::move(init);
  for (auto& p : chunk_partials(n, grain, chunk_fn)) acc = combine(std::move(acc), std::move(p));
  return acc;
}

/// Calls f(begin, end) on the chunks [k*grain, min(n, (k+1)*grain)) of [0, n), in parallel in the
/// current arena when there are several; with one chunk, f(0, n) on the calling thread and no task
/// is spawned. For work whose results do not depend on how [0, n) is cut (elementwise work, or
/// sums that each lane of a chunk forms in a fixed order).
template <class F>
void chunked_for(std::size_t n, std::size_t grain, F&& f) {
  if (n <= grain) {
    if (n > 0) f(std::size_t{0}, n);
    return;
  }
  const std::size_t nchunks = (n + grain - 1) / grain;
  tbb::this_task_arena::isolate([&] {  // as in deterministic_reduce
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, nchunks, 1),
        [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t c = r.begin(); c != r.end(); ++c)
            f(c * grain, std::min(n, (c + 1) * grain));
        },
        tbb::simple_partitioner());
  });
}

}  // namespace flymc
