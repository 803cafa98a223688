// Google Benchmark cases for the z-sweep on tall data, where the dark data it proposes are
// scattered over a data set far larger than the caches (docs/math.md §1.2). Synthetic logistic
// data (D = 51), MAP-tuned bound, θ a Laplace draw, z from one Gibbs pass; sizes N = 10^4 (the
// rows fit in the last-level cache) to 4·10^6 (1.8 GB of rows).
//
//   flymc_bm --benchmark_filter='ZSweep' --benchmark_repetitions=5
//            --benchmark_enable_random_interleaving=true
//
// BM_ZSweepDarkBatch compares, on the same batches of dark data and the same data layout, the
// dark → bright evaluation without prefetching (all rows gathered, then the bound's Δ_n: mode 0)
// with the block-prefetched one the updaters use (gathered_deltas: mode 1).
// BM_ZSweepImplicit times whole implicit sweeps at q = 128/N back to back: with no θ-steps between
// them, the next sweep's rows prefetched at the end of a sweep have no time to arrive, so this
// shows the sweep's cost without that overlap.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

#include "bm_common.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/models/logistic.hpp"

namespace {

using namespace flymc;

constexpr std::size_t kD = 51;
constexpr std::size_t kBatch = 128;  // dark proposals per sweep at the automatic q

/// Data, bound, θ and a bright set drawn from p(z | θ), for one N, built on first use (one size
/// held at a time: the largest is 1.8 GB).
struct TallWorld {
  std::shared_ptr<const Dataset> data;
  std::unique_ptr<LogisticBound> bound;
  AlignedBuffer theta;
  BrightSet bright;

  explicit TallWorld(std::size_t n) {
    data = std::make_shared<const Dataset>(synth_logistic(n, kD, 7));
    const LogisticModel model(data, 1.0);
    const MapResult map = model.find_map();
    bound = std::make_unique<LogisticBound>(LogisticBound::map_tuned(model, map.theta));
    theta = bench::laplace_point(map, data->stride());
    bright = BrightSet(*data);
    std::vector<Index> block;
    Counters c;
    ZScratch s;
    Rng rng(12, 0);  // the initial z ~ p(z | θ)
    for (std::size_t lo = 0; lo < n; lo += 4096) {
      block.resize(std::min(n, lo + 4096) - lo);
      std::iota(block.begin(), block.end(), static_cast<Index>(lo));
      gibbs_z(*bound, *data, bright, theta.get(), block.data(), block.size(), rng, c, s);
    }
  }
};

const TallWorld& world(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<TallWorld>> worlds;
  auto it = worlds.find(n);
  if (it == worlds.end()) {
    worlds.clear();  // one data set in memory at a time
    it = worlds.emplace(n, std::make_unique<TallWorld>(n)).first;
  }
  return *it->second;
}

/// Ascending random dark indices, as a sweep's candidates come.
void draw_darks(Rng& rng, const BrightSet& bright, std::vector<Index>& idx) {
  for (Index& n : idx) n = bench::random_dark(bright, rng);
  std::sort(idx.begin(), idx.end());
}

/// Args: N, mode (0: unprefetched, as before; 1: prefetched).
void BM_ZSweepDarkBatch(benchmark::State& state) {
  const TallWorld& w = world(static_cast<std::size_t>(state.range(0)));
  const bool prefetched = state.range(1) == 1;
  Rng rng(5, 0);
  std::vector<Index> idx(kBatch);
  ZScratch s;
  s.reserve(kBatch);
  Counters c;
  double sink = 0.0;
  for (auto _ : state) {
    draw_darks(rng, w.bright, idx);
    if (prefetched) {
      gathered_deltas(*w.bound, *w.data, w.theta.get(), idx.data(), kBatch, c, s, s.a.data());
    } else {
      gather_predictors(1, *w.data, idx.data(), kBatch, w.theta.get(), s.pred.data());
      c.add(w.bound->deltas(idx.data(), s.pred.data(), kBatch, s.a.data()));
    }
    sink += s.a[kBatch - 1];
  }
  benchmark::DoNotOptimize(sink);
  state.counters["t/datum"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ZSweepDarkBatch)
    ->ArgsProduct({{10000, 1000000, 4000000}, {0, 1}})
    ->ArgNames({"N", "prefetch"});

/// A whole implicit sweep at q = 128/N on a copy of the stationary bright set. Arg: N.
void BM_ZSweepImplicit(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  const TallWorld& w = world(n);
  BrightSet bright(*w.data);
  const std::vector<Index> lit(w.bright.bright_indices(),
                               w.bright.bright_indices() + w.bright.size());
  bright.restore(lit, w.bright.log_ltilde());
  ImplicitZUpdater z(double(kBatch) / double(n));
  Rng rng(6, 0);
  Counters c;
  for (auto _ : state) z.update(*w.bound, *w.data, bright, w.theta.get(), rng, c);
  state.counters["bright"] = static_cast<double>(bright.size());
  state.counters["queries/sweep"] =
      static_cast<double>(c.queries) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ZSweepImplicit)->Arg(10000)->Arg(1000000)->Arg(4000000)->ArgName("N");

}  // namespace
