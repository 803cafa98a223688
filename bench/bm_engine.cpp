// Google Benchmark micro-benchmarks for the engine's FlyMC hot paths, on a realistic state:
// synthetic logistic data (D = 51, N = 12,000 as Fashion-MNIST 7-vs-9), MAP-tuned bounds, θ a
// Laplace draw around θ_MAP and z drawn from p(z | θ) by one Gibbs pass (about as many bright
// points as a FlyMC chain keeps). The z-updaters run at a fixed θ, so the bright count stays at its
// stationary level while they are timed.
//
//   flymc_bm --benchmark_filter='Engine' --benchmark_min_time=0.5
//
// Counters: rows/s (bright rows or queried data per second), t/row its inverse; for the full-data
// log-likelihood bytes/s of row data read.
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "bm_common.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/fly/theta_kernels.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"

namespace {

using namespace flymc;

constexpr std::size_t kD = 51;

/// Data, model, bound and θ_MAP shared by the benchmarks of one size, built on first use.
struct World {
  std::shared_ptr<const Dataset> data;
  std::unique_ptr<LogisticModel> model;
  std::unique_ptr<LogisticBound> bound;
  AlignedBuffer theta;  // θ_MAP, padded

  explicit World(std::size_t n) {
    data = std::make_shared<const Dataset>(synth_logistic(n, kD, 7));
    model = std::make_unique<LogisticModel>(data, 1.0);
    const MapResult map = model->find_map();
    bound = std::make_unique<LogisticBound>(LogisticBound::map_tuned(*model, map.theta));
    theta = bench::laplace_point(map, data->stride());
  }

  /// z ~ p(z | θ) by one Gibbs pass over all data.
  BrightSet initial_z(Rng& rng) const {
    BrightSet bright(*data);
    std::vector<Index> all(data->n());
    std::iota(all.begin(), all.end(), Index{0});
    Counters c;
    ZScratch s;
    gibbs_z(*bound, *data, bright, theta.get(), all.data(), all.size(), rng, c, s);
    return bright;
  }

  /// initial_z, then random dark data made bright up to `target` (synthetic data keeps only a
  /// handful bright; Fashion-MNIST 7-vs-9 about 150): for timing the θ-step at that size.
  BrightSet padded_z(Rng& rng, std::size_t target) const {
    BrightSet bright = initial_z(rng);
    while (bright.size() < target) {
      const Index n = bench::random_dark(bright, rng);
      const double dot = kernels::dot(data->row(n), theta.get(), data->stride());
      const double delta = bound->log_lik(n, dot) - bound->log_bound(n, dot);
      bright.brighten(n, std::log(std::expm1(std::max(delta, 1e-300))));
    }
    return bright;
  }
};

const World& fmnist_sized() {
  static const World w(12000);
  return w;
}

void set_rows(benchmark::State& state, double rows) {
  using C = benchmark::Counter;
  state.counters["rows/s"] = C(rows, C::kIsRate);
  state.counters["t/row"] = C(rows, C::kIsRate | C::kInvert);
}

/// FlyMC's log p(θ | z): prior + collapsed bound (O(D²)) + one pass over the packed bright rows
/// (dot, Δ_n = log L_n − log B_n, log expm1 Δ_n). The bright-set log-likelihood of a θ-step.
void BM_EngineFlyTargetEval(benchmark::State& state) {
  const World& w = fmnist_sized();
  Rng rng(1, 0);
  BrightSet bright = w.padded_z(rng, 150);
  FlyTarget target(*w.model, *w.bound, bright);
  AlignedBuffer prop = aligned_zeros(w.data->stride());
  for (std::size_t j = 0; j < kD; ++j) prop[j] = w.theta[j] + 1e-3 * rng.normal();
  Counters c;
  for (auto _ : state) benchmark::DoNotOptimize(target.eval(prop.get(), c));
  state.counters["bright"] = static_cast<double>(bright.size());
  set_rows(state, static_cast<double>(bright.size()) * static_cast<double>(state.iterations()));
}
BENCHMARK(BM_EngineFlyTargetEval);

/// The collapsed-bound quadratic form Σ_n log B_n(θ) = f0 + g0·δ − δᵀAδ alone.
void BM_EngineCollapsedBound(benchmark::State& state) {
  const World& w = fmnist_sized();
  AlignedBuffer scratch = aligned_zeros(2 * w.data->stride());
  AlignedBuffer th = aligned_zeros(w.data->stride());
  for (std::size_t j = 0; j < kD; ++j) th[j] = w.theta[j] + 1e-3;
  for (auto _ : state) {
    benchmark::DoNotOptimize(w.bound->log_bound_sum(th.get(), scratch.get()));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_EngineCollapsedBound);

/// FlyMC's log p(θ | z) with its gradient (MALA, HMC): the evaluation above plus ∂Δ/∂ψ, one
/// vectorized exp and the weighted sum of the packed bright rows.
void BM_EngineFlyTargetGrad(benchmark::State& state) {
  const World& w = fmnist_sized();
  Rng rng(1, 0);
  BrightSet bright = w.padded_z(rng, 150);
  FlyTarget target(*w.model, *w.bound, bright);
  std::vector<double> prop(kD), grad(kD);
  for (std::size_t j = 0; j < kD; ++j) prop[j] = w.theta[j] + 1e-3 * rng.normal();
  Counters c;
  for (auto _ : state) {
    benchmark::DoNotOptimize(target.eval_grad(prop.data(), grad.data(), c));
    benchmark::ClobberMemory();
  }
  state.counters["bright"] = static_cast<double>(bright.size());
  set_rows(state, static_cast<double>(bright.size()) * static_cast<double>(state.iterations()));
}
BENCHMARK(BM_EngineFlyTargetGrad);

/// Where the parallel bright evaluation pays at D = 51, K = 1: log p(θ | z) with its gradient over
/// `bright` rows, serial (par 0) or on oneTBB in a 2-thread arena (par 1), whatever the default
/// threshold (FlyTarget::kParallelMinWork) would choose.
void BM_EngineFlyTargetParallel(benchmark::State& state) {
  const World& w = fmnist_sized();
  Rng rng(1, 0);
  BrightSet bright = w.padded_z(rng, static_cast<std::size_t>(state.range(0)));
  FlyTarget target(*w.model, *w.bound, bright);
  target.set_parallel_min_work(state.range(1) != 0 ? 0 : std::numeric_limits<std::size_t>::max());
  std::vector<double> prop(kD), grad(kD);
  for (std::size_t j = 0; j < kD; ++j) prop[j] = w.theta[j] + 1e-3 * rng.normal();
  Counters c;
  tbb::task_arena arena(2);
  arena.execute([&] {
    for (auto _ : state) {
      benchmark::DoNotOptimize(target.eval_grad(prop.data(), grad.data(), c));
      benchmark::ClobberMemory();
    }
  });
  state.counters["bright"] = static_cast<double>(bright.size());
  state.counters["work"] = static_cast<double>(bright.size() * w.data->stride());
}
BENCHMARK(BM_EngineFlyTargetParallel)
    ->ArgsProduct({{1024, 2048, 4096, 8192, 12000}, {0, 1}})
    ->ArgNames({"bright", "par"})
    ->UseRealTime();

/// One θ-step of FlyMC with a θ-kernel at Table 1's adapted step size (identity metric): RW-MH
/// (proposal, log p(θ' | z), MH accept), MALA (one gradient evaluation) or HMC (arg: leapfrog
/// steps, one gradient evaluation each).
void theta_step(benchmark::State& state, KernelKind kind, double eps) {
  const World& w = fmnist_sized();
  Rng rng(2, 0);
  BrightSet bright = w.padded_z(rng, 150);
  FlyTarget target(*w.model, *w.bound, bright);
  ThetaState s;
  s.theta.assign(w.theta.get(), w.theta.get() + kD);
  s.grad.assign(kD, 0.0);
  target.set_current(s.theta.data());
  Counters c;
  s.logp = target.eval_grad(s.theta.data(), s.grad.data(), c);
  target.accept();
  RunConfig cfg;
  cfg.kernel = kind;
  cfg.hmc_steps = static_cast<int>(state.range(0));
  ThetaKernel kernel(cfg, kD, InverseMetric::identity(kD), eps);
  double acc = 0.0;
  for (auto _ : state) acc += kernel.step(rng, s, target, c).accept_stat;
  state.counters["bright"] = static_cast<double>(bright.size());
  state.counters["accept"] = acc / static_cast<double>(state.iterations());
}
void BM_EngineThetaStep(benchmark::State& state) { theta_step(state, KernelKind::rwmh, 0.008); }
BENCHMARK(BM_EngineThetaStep)->Arg(1)->ArgName("L");
void BM_EngineMalaStep(benchmark::State& state) { theta_step(state, KernelKind::mala, 0.01); }
BENCHMARK(BM_EngineMalaStep)->Arg(1)->ArgName("L");
void BM_EngineHmcStep(benchmark::State& state) { theta_step(state, KernelKind::hmc, 0.01); }
BENCHMARK(BM_EngineHmcStep)->Arg(16)->ArgName("L");

/// Explicit z-resampling of a batch of ⌈N·f⌉ data drawn with replacement (gathered dots, bound
/// deltas, vectorized exp and log expm1, BrightSet flips). Arg: f in percent.
void BM_EngineExplicitZ(benchmark::State& state) {
  const World& w = fmnist_sized();
  Rng rng(3, 0);
  BrightSet bright = w.initial_z(rng);
  const double f = static_cast<double>(state.range(0)) / 100.0;
  ExplicitZUpdater z(f);
  Counters c;
  for (auto _ : state) z.update(*w.bound, *w.data, bright, w.theta.get(), rng, c);
  state.counters["bright"] = static_cast<double>(bright.size());
  set_rows(state, static_cast<double>(c.queries));
}
BENCHMARK(BM_EngineExplicitZ)->Arg(1)->Arg(5)->ArgName("f%");

/// Implicit z sweep: every bright datum proposes dark (no query), Geometric(q) gaps pick the dark
/// proposals (one query each). Arg: q in units of 0.001.
void BM_EngineImplicitZ(benchmark::State& state) {
  const World& w = fmnist_sized();
  Rng rng(4, 0);
  BrightSet bright = w.initial_z(rng);
  ImplicitZUpdater z(static_cast<double>(state.range(0)) / 1000.0);
  Counters c;
  for (auto _ : state) z.update(*w.bound, *w.data, bright, w.theta.get(), rng, c);
  state.counters["bright"] = static_cast<double>(bright.size());
  state.counters["queries/sweep"] =
      static_cast<double>(c.queries) / static_cast<double>(state.iterations());
  set_rows(state, static_cast<double>(c.queries));
}
BENCHMARK(BM_EngineImplicitZ)->Arg(10)->Arg(50)->ArgName("q_milli");

/// BrightSet flips: brighten a random dark datum (row copied into the packed block) and darken a
/// random bright one (last packed row moved into its slot), at a bright count of about 150.
void BM_EngineBrightSetFlips(benchmark::State& state) {
  const World& w = fmnist_sized();
  BrightSet bright(*w.data);
  Rng rng(5, 0);
  while (bright.size() < 150) bright.brighten(bench::random_dark(bright, rng), -1.0);
  for (auto _ : state) {
    bright.brighten(bench::random_dark(bright, rng), -1.0);
    bright.darken(bright.bright(rng.below(bright.size())));
  }
  set_rows(state, 2.0 * static_cast<double>(state.iterations()));  // flips
}
BENCHMARK(BM_EngineBrightSetFlips);

/// Regular MCMC's cost: the full-data log-likelihood (all N rows; the model parallelizes the
/// reduction over cores above its grain, hence real time). Arg: N.
void BM_EngineFullLogLik(benchmark::State& state) {
  static std::unique_ptr<World> big;
  const auto n = static_cast<std::size_t>(state.range(0));
  if (!big || big->data->n() != n) big = std::make_unique<World>(n);
  for (auto _ : state) benchmark::DoNotOptimize(big->model->log_lik(big->theta.get()));
  const double rows = static_cast<double>(n) * static_cast<double>(state.iterations());
  set_rows(state, rows);
  using C = benchmark::Counter;
  state.counters["bytes/s"] =
      C(rows * static_cast<double>(big->data->stride() * sizeof(double) + sizeof(double)),
        C::kIsRate);
}
BENCHMARK(BM_EngineFullLogLik)->Arg(12000)->Arg(1000000)->ArgName("N")->UseRealTime();

/// Regular MALA/HMC's cost: the full-data log-likelihood and its gradient in one pass (dot
/// products, log-sigmoid, exp, weighted row sums per 256-row block). Arg: N.
void BM_EngineFullLogLikGrad(benchmark::State& state) {
  static std::unique_ptr<World> big;
  const auto n = static_cast<std::size_t>(state.range(0));
  if (!big || big->data->n() != n) big = std::make_unique<World>(n);
  AlignedBuffer grad = aligned_zeros(big->data->stride());
  for (auto _ : state) {
    benchmark::DoNotOptimize(big->model->log_lik_grad(big->theta.get(), grad.get()));
    benchmark::ClobberMemory();
  }
  const double rows = static_cast<double>(n) * static_cast<double>(state.iterations());
  set_rows(state, rows);
  using C = benchmark::Counter;
  state.counters["bytes/s"] =
      C(rows * static_cast<double>(big->data->stride() * sizeof(double) + sizeof(double)),
        C::kIsRate);
}
BENCHMARK(BM_EngineFullLogLikGrad)->Arg(12000)->Arg(1000000)->ArgName("N")->UseRealTime();

/// Scalable MH's cost per candidate datum: one chain of `--algo smh` (the independence proposal,
/// ρ = 0) on N synthetic rows, its sampling seconds over the candidates its factorised tests
/// evaluated (an alias draw, the datum's row and record at scattered places, two dot products).
/// The iteration time is the run's sampling time (manual time: the set-up is not timed). Arg: N.
void BM_EngineSmhCandidate(benchmark::State& state) {
  static std::shared_ptr<const Dataset> data;
  const auto n = static_cast<std::size_t>(state.range(0));
  if (!data || data->n() != n) data = std::make_shared<const Dataset>(synth_logistic(n, kD, 7));
  RunConfig c;
  c.algo = Algo::smh;
  c.ess = 0.0;
  c.chains = 1;
  c.threads = 1;
  c.warmup = 0;
  c.iters = 4000;
  c.pcn_rho = 0.0;
  double seconds = 0.0, candidates = 0.0;
  for (auto _ : state) {
    const RunResult r = run(c, data);
    state.SetIterationTime(r.sampling_seconds);
    seconds += r.sampling_seconds;
    candidates += 0.5 * r.queries_per_iter() * static_cast<double>(c.iters);  // 2 queries each
  }
  state.counters["candidates/iter"] =
      candidates / static_cast<double>(c.iters * state.iterations());
  state.counters["ns/candidate"] = 1e9 * seconds / std::max(candidates, 1.0);
}
BENCHMARK(BM_EngineSmhCandidate)
    ->Arg(100000)
    ->Arg(1000000)
    ->ArgName("N")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
