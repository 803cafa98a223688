// Google Benchmark micro-benchmarks for softmax classification (docs/math.md §2.2) at the size of
// Fashion-MNIST classes 0, 1, 2 with 256 principal components (N = 18,000, D = 257, K = 3):
// the full-data log-likelihood and its gradient (regular MCMC's cost per evaluation), the
// collapsed bounds (Böhning's, and the tight per-datum choice with Jebara & Choromanska's; arg
// "tight"), FlyMC's log p(θ | z) at a typical posterior point, the MAP fit and the bounds'
// set-up.
//
//   flymc_bm --benchmark_filter='Softmax' --benchmark_min_time=0.2
//
// With FLYMC_SOFTMAX_DATA set to a data file (flymc data fmnist --classes 0,1,2 --pca 256
// --split train --out data/fmnist-3class.csv) the benchmarks run on it; otherwise on synthetic
// data of the same shape (whose bright counts are not representative). Arg "threads": the size
// of the task arena the data-parallel reductions run in.
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "flymc/data/loaders.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/models/softmax.hpp"

namespace {

using namespace flymc;

/// N × D softmax data, x ~ N(0, 1) with a bias column, labels from a random W (3 classes).
std::shared_ptr<const Dataset> synthetic(std::size_t n, std::size_t d, std::size_t K) {
  auto ds = std::make_shared<Dataset>(n, d, "synthetic");
  Rng rng(5, 0);
  std::vector<double> w(K * d), psi(K);
  for (double& v : w) v = rng.normal() / std::sqrt(static_cast<double>(d));
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    for (std::size_t j = 0; j < d; ++j) x[j] = j + 1 == d ? 1.0 : rng.normal();
    double s = 0.0;
    for (std::size_t k = 0; k < K; ++k) {
      double a = 0.0;
      for (std::size_t j = 0; j < d; ++j) a += w[k * d + j] * x[j];
      s += psi[k] = std::exp(a);
    }
    double u = rng.uniform() * s;
    std::size_t c = 0;
    while (c + 1 < K && u >= psi[c]) u -= psi[c++];
    ds->mutable_y()[i] = static_cast<double>(c);
  }
  return ds;
}

/// Data, model, W_MAP, the MAP-tuned bounds (Böhning's and the tight one) and a posterior draw W
/// (padded), built on first use.
struct World {
  std::shared_ptr<const Dataset> data;
  std::unique_ptr<SoftmaxModel> model;
  MapResult map;
  std::unique_ptr<SoftmaxBound> bound, tight;
  std::vector<double> theta;  // dense, a draw from N(W_MAP, Laplace covariance)
  AlignedBuffer theta_pad;

  World() {
    const char* path = std::getenv("FLYMC_SOFTMAX_DATA");
    data = path != nullptr
               ? std::make_shared<const Dataset>(load_dataset(path, LabelDomain::categorical))
               : synthetic(18000, 257, 3);
    model = std::make_unique<SoftmaxModel>(data, Prior{});
    map = model->find_map();
    bound = std::make_unique<SoftmaxBound>(SoftmaxBound::map_tuned(*model, map.theta));
    tight = std::make_unique<SoftmaxBound>(SoftmaxBound::tight(*model, map, BoundTuning::map));
    const Eigen::LLT<Mat> llt(map.covariance);
    Rng rng(11, 0);
    Vec eta(static_cast<Eigen::Index>(model->dim()));
    for (auto& e : eta) e = rng.normal();
    const Vec t = map.theta + llt.matrixL() * eta;
    theta.assign(t.data(), t.data() + t.size());
    theta_pad = aligned_zeros(model->layout().padded());
    model->layout().pad(theta.data(), theta_pad.get());
  }
  const SoftmaxBound& pick(bool use_tight) const { return use_tight ? *tight : *bound; }
  /// z ~ p(z | θ) under bound `b` by one Gibbs pass over all data.
  BrightSet initial_z(const SoftmaxBound& b) const {
    BrightSet bright(*data);
    std::vector<Index> all(data->n());
    std::iota(all.begin(), all.end(), Index{0});
    Counters c;
    ZScratch s;
    Rng rng(3, 0);
    gibbs_z(b, *data, bright, theta_pad.get(), all.data(), all.size(), rng, c, s);
    return bright;
  }
};

const World& world() {
  static const World w;
  return w;
}

void BM_SoftmaxLogLik(benchmark::State& state) {
  const World& w = world();
  tbb::task_arena arena(static_cast<int>(state.range(0)));
  for (auto _ : state)
    arena.execute([&] { benchmark::DoNotOptimize(w.model->log_lik(w.theta_pad.get())); });
}
BENCHMARK(BM_SoftmaxLogLik)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

void BM_SoftmaxLogLikGrad(benchmark::State& state) {
  const World& w = world();
  tbb::task_arena arena(static_cast<int>(state.range(0)));
  AlignedBuffer g = aligned_zeros(w.model->layout().padded());
  for (auto _ : state)
    arena.execute([&] {
      benchmark::DoNotOptimize(w.model->log_lik_grad(w.theta_pad.get(), g.get()));
      benchmark::ClobberMemory();
    });
}
BENCHMARK(BM_SoftmaxLogLikGrad)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

/// Σ_n log B_n(W) and its gradient from the collapsed statistics: K matrix-vector products of
/// D² (Böhning), K(K−1)/2 (tight).
void BM_SoftmaxCollapsedBound(benchmark::State& state) {
  const World& w = world();
  const SoftmaxBound& b = w.pick(state.range(0) != 0);
  AlignedBuffer scratch = aligned_zeros(b.scratch_size());
  AlignedBuffer g = aligned_zeros(w.model->layout().padded());
  for (auto _ : state) {
    benchmark::DoNotOptimize(b.log_bound_sum(w.theta_pad.get(), scratch.get(), g.get()));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_SoftmaxCollapsedBound)->Arg(0)->Arg(1)->ArgName("tight");

/// FlyMC's log p(θ | z) (grad 0) and with its gradient (grad 1), at a Laplace draw with
/// z ~ p(z | θ): prior, collapsed bound, and the packed bright rows; Böhning's bound (tight 0)
/// or the tight one (tight 1).
void BM_SoftmaxFlyTarget(benchmark::State& state) {
  const World& w = world();
  const SoftmaxBound& b = w.pick(state.range(1) != 0);
  BrightSet bright = w.initial_z(b);
  FlyTarget<SoftmaxModel> target(*w.model, b, bright);
  std::vector<double> grad(w.theta.size());
  Counters c;
  for (auto _ : state) {
    if (state.range(0) == 0) {
      benchmark::DoNotOptimize(target.eval(w.theta.data(), c));
    } else {
      benchmark::DoNotOptimize(target.eval_grad(w.theta.data(), grad.data(), c));
    }
    benchmark::ClobberMemory();
  }
  state.counters["bright"] = static_cast<double>(bright.size());
}
BENCHMARK(BM_SoftmaxFlyTarget)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"grad", "tight"});

/// Where the parallel bright evaluation pays at D = 257, K = 3: log p(θ | z) with its gradient
/// (tight bound) over the first `bright` data, serial (par 0) or on oneTBB in a 2-thread arena
/// (par 1), whatever the default threshold (FlyTarget::kParallelMinWork) would choose.
void BM_SoftmaxFlyTargetParallel(benchmark::State& state) {
  const World& w = world();
  BrightSet bright(*w.data);
  for (Index n = 0; n < static_cast<Index>(state.range(0)); ++n) bright.brighten(n, 0.0);
  FlyTarget<SoftmaxModel> target(*w.model, *w.tight, bright);
  target.set_parallel_min_work(state.range(1) != 0 ? 0 : std::numeric_limits<std::size_t>::max());
  std::vector<double> grad(w.theta.size());
  Counters c;
  tbb::task_arena arena(2);
  arena.execute([&] {
    for (auto _ : state) {
      benchmark::DoNotOptimize(target.eval_grad(w.theta.data(), grad.data(), c));
      benchmark::ClobberMemory();
    }
  });
  state.counters["work"] =
      static_cast<double>(bright.size() * w.model->layout().k * w.model->layout().stride);
}
BENCHMARK(BM_SoftmaxFlyTargetParallel)
    ->ArgsProduct({{64, 128, 256, 512, 1024, 2600, 8192}, {0, 1}})
    ->ArgNames({"bright", "par"})
    ->UseRealTime();

/// The MAP fit (Newton with the exact Hessian, Laplace covariance) and the MAP-tuned bound.
void BM_SoftmaxMapAndBound(benchmark::State& state) {
  const World& w = world();
  tbb::task_arena arena(static_cast<int>(state.range(0)));
  int iters = 0;
  for (auto _ : state)
    arena.execute([&] {
      const MapResult m = w.model->find_map();
      iters = m.iterations;
      benchmark::DoNotOptimize(SoftmaxBound::map_tuned(*w.model, m.theta).S().data());
    });
  state.counters["newton_iters"] = iters;
}
BENCHMARK(BM_SoftmaxMapAndBound)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

/// The bounds' set-up alone at W_MAP: Böhning's (tight 0: tangent records and one SYRK), the
/// tight one (tight 1: the Laplace second moments of every ψ_n, the per-datum choice among
/// Böhning's and the K! Jebara–Choromanska orders, and K(K−1)/2 weighted SYRKs).
void BM_SoftmaxBoundSetup(benchmark::State& state) {
  const World& w = world();
  tbb::task_arena arena(static_cast<int>(state.range(1)));
  std::size_t jc = 0;
  for (auto _ : state)
    arena.execute([&] {
      const SoftmaxBound b = state.range(0) != 0
                                 ? SoftmaxBound::tight(*w.model, w.map, BoundTuning::map)
                                 : SoftmaxBound::map_tuned(*w.model, w.map.theta);
      jc = b.jc_count();
      benchmark::DoNotOptimize(&b);
    });
  state.counters["jc_data"] = static_cast<double>(jc);
}
BENCHMARK(BM_SoftmaxBoundSetup)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->ArgNames({"tight", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
