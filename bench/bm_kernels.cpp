// Google Benchmark micro-benchmarks for the flymc::kernels hot loops. Rows are d = 51 features
// padded to stride 56 (448 bytes, 7 cache lines), as in the FlyMC logistic-regression runs.
//
//   flymc_bm --benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_report_aggregates_only
//
// The first benchmark touching the N = 10^6 matrix (448 MB) builds it, which takes a second or
// two. Timings are CPU time; on a loaded machine compare the CPU column.
//
// Counters: rows/s or items/s (rate), t/row or t/item (its inverse), bytes/s of row data read
// (rows plus labels; "34.6G/s" = 34.6 GB/s).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <vector>

#include "flymc/kernels/kernels.hpp"

namespace {

namespace fk = flymc::kernels;

constexpr std::size_t kD = 51;
constexpr std::size_t kStride = 56;
constexpr std::size_t kRowBytes = kStride * sizeof(double);
constexpr std::size_t kBigN = 1'000'000;  // 448 MB: far beyond any cache

struct FreeDeleter {
  void operator()(double* p) const noexcept { std::free(p); }
};
using AlignedDoubles = std::unique_ptr<double[], FreeDeleter>;

/// splitmix64: a cheap, fixed-seed generator for benchmark data.
struct SplitMix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53;
  }
};

/// n rows of kD features in [−1, 1], zero padded to kStride, 64-byte aligned.
AlignedDoubles make_rows(std::size_t n, std::uint64_t seed) {
  auto* p = static_cast<double*>(std::aligned_alloc(64, n * kRowBytes));
  if (!p) std::abort();
  SplitMix rng{seed};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < kStride; ++j)
      p[i * kStride + j] = j < kD ? rng.uniform(-1, 1) : 0.0;
  }
  return AlignedDoubles(p);
}

/// The shared N = 10^6 matrix, built on first use (about a second).
const double* big_matrix() {
  static const AlignedDoubles m = make_rows(kBigN, 1);
  return m.get();
}

const double* theta() {
  static const AlignedDoubles t = [] {
    auto p = make_rows(1, 2);
    for (std::size_t j = 0; j < kD; ++j) p[j] *= 0.3;  // margins of order 1
    return p;
  }();
  return t.get();
}

const std::vector<double>& labels() {
  static const std::vector<double> y = [] {
    std::vector<double> v(kBigN);
    SplitMix rng{3};
    for (auto& x : v) x = (rng.next() & 1) ? 1.0 : -1.0;
    return v;
  }();
  return y;
}

/// rows/s and bytes/s as rates (printed with SI prefixes: "295M/s", "34.6G/s"), and the time per
/// row as the inverted rate ("3.38ns").
void set_row_counters(benchmark::State& state, double rows_per_iter, double bytes_per_iter) {
  const auto iters = static_cast<double>(state.iterations());
  using C = benchmark::Counter;
  state.counters["rows/s"] = C(rows_per_iter * iters, C::kIsRate);
  state.counters["t/row"] = C(rows_per_iter * iters, C::kIsRate | C::kInvert);
  state.counters["bytes/s"] = C(bytes_per_iter * iters, C::kIsRate);
}

void set_item_counters(benchmark::State& state, double items_per_iter) {
  const auto iters = static_cast<double>(state.iterations());
  using C = benchmark::Counter;
  state.counters["items/s"] = C(items_per_iter * iters, C::kIsRate);
  state.counters["t/item"] = C(items_per_iter * iters, C::kIsRate | C::kInvert);
}

// ---- Row dot products ------------------------------------------------------------------------

/// dots_packed over range(0) contiguous rows: 150 = the bright set of a typical FlyMC step (L2
/// resident), 10^6 = a streaming pass over DRAM.
void BM_DotsPacked(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const double* rows = big_matrix();
  std::vector<double> out(n);
  for (auto _ : state) {
    fk::dots_packed(rows, n, kStride, theta(), out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_row_counters(state, static_cast<double>(n), static_cast<double>(n * kRowBytes));
}
BENCHMARK(BM_DotsPacked)->Arg(150)->Arg(kBigN)->ArgName("rows");

/// One dot() call per row over 150 cached rows (the single-row entry point).
void BM_DotSingle(benchmark::State& state) {
  const std::size_t n = 150;
  const double* rows = big_matrix();
  std::vector<double> out(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) out[i] = fk::dot(rows + i * kStride, theta(), kStride);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_row_counters(state, static_cast<double>(n), static_cast<double>(n * kRowBytes));
}
BENCHMARK(BM_DotSingle);

/// Random row indices: `pool` draws from [0, span).
std::vector<fk::Index> random_indices(std::size_t pool, std::size_t span, std::uint64_t seed) {
  std::vector<fk::Index> idx(pool);
  SplitMix rng{seed};
  for (auto& i : idx) i = static_cast<fk::Index>(rng.next() % span);
  return idx;
}

enum class Gather { kKernel, kNoPrefetch, kScalar };

/// Gathered rows, k = 1024 per call. range(0) = span of the random indices: 1024 rows (458 KB, L2
/// resident after the first pass: "cached") or all 10^6 rows (448 MB: each row comes from DRAM
/// with ~93% probability: "uncached"). Successive calls use fresh indices from a 4M pool.
template <Gather kind>
void BM_DotsGather(benchmark::State& state) {
  const auto span = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t k = 1024, pool = std::size_t{1} << 22;
  const auto idx = random_indices(pool, span, 4);
  const double* base = big_matrix();
  std::vector<double> out(k);
  std::size_t at = 0;
  for (auto _ : state) {
    const fk::Index* ix = idx.data() + at;
    if constexpr (kind == Gather::kKernel) {
      fk::dots_gather(base, kStride, ix, k, theta(), out.data());
    } else if constexpr (kind == Gather::kNoPrefetch) {  // one dot() per row: no prefetching
      for (std::size_t i = 0; i < k; ++i) {
        out[i] = fk::dot(base + std::size_t(ix[i]) * kStride, theta(), kStride);
      }
    } else {
      fk::scalar::dots_gather(base, kStride, ix, k, theta(), out.data());
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    at = (at + k) % pool;
  }
  set_row_counters(state, static_cast<double>(k), static_cast<double>(k * kRowBytes));
}
BENCHMARK(BM_DotsGather<Gather::kKernel>)->Arg(1024)->Arg(kBigN)->ArgName("span");
BENCHMARK(BM_DotsGather<Gather::kNoPrefetch>)->Arg(1024)->Arg(kBigN)->ArgName("span");
BENCHMARK(BM_DotsGather<Gather::kScalar>)->Arg(1024)->Arg(kBigN)->ArgName("span");

// ---- Element functions -----------------------------------------------------------------------

std::vector<double> uniform_values(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::vector<double> v(n);
  SplitMix rng{seed};
  for (auto& x : v) x = rng.uniform(lo, hi);
  return v;
}

constexpr std::size_t kElems = 4096;

/// log σ on 4096 margins uniform in [−20, 20]: the SIMD array form vs scalar libm.
void BM_LogSigmoid(benchmark::State& state) {
  const auto a = uniform_values(kElems, -20, 20, 5);
  std::vector<double> out(kElems);
  for (auto _ : state) {
    fk::log_sigmoid(a.data(), out.data(), kElems);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_item_counters(state, kElems);
}
BENCHMARK(BM_LogSigmoid);

void BM_LogSigmoidScalarLibm(benchmark::State& state) {
  const auto a = uniform_values(kElems, -20, 20, 5);
  std::vector<double> out(kElems);
  for (auto _ : state) {
    fk::scalar::log_sigmoid(a.data(), out.data(), kElems);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_item_counters(state, kElems);
}
BENCHMARK(BM_LogSigmoidScalarLibm);

/// The one-value entry point in a loop of independent calls (as the engine uses it per data
/// point): the SIMD build evaluates the vector code on a broadcast value, so that it agrees bit
/// for bit with the array form.
void BM_LogSigmoidOneValue(benchmark::State& state) {
  const auto a = uniform_values(kElems, -20, 20, 5);
  std::vector<double> out(kElems);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kElems; ++i) out[i] = fk::log_sigmoid(a[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_item_counters(state, kElems);
}
BENCHMARK(BM_LogSigmoidOneValue);

/// log expm1 on 4096 values uniform in (0, 10] (all three formula ranges).
void BM_LogExpm1(benchmark::State& state) {
  const auto x = uniform_values(kElems, 1e-6, 10, 6);
  std::vector<double> out(kElems);
  for (auto _ : state) {
    fk::log_expm1(x.data(), out.data(), kElems);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_item_counters(state, kElems);
}
BENCHMARK(BM_LogExpm1);

void BM_LogExpm1OneValue(benchmark::State& state) {
  const auto x = uniform_values(kElems, 1e-6, 10, 6);
  std::vector<double> out(kElems);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kElems; ++i) out[i] = fk::log_expm1(x[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_item_counters(state, kElems);
}
BENCHMARK(BM_LogExpm1OneValue);

void BM_LogExpm1ScalarLibm(benchmark::State& state) {
  const auto x = uniform_values(kElems, 1e-6, 10, 6);
  std::vector<double> out(kElems);
  for (auto _ : state) {
    fk::scalar::log_expm1(x.data(), out.data(), kElems);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_item_counters(state, kElems);
}
BENCHMARK(BM_LogExpm1ScalarLibm);

// ---- Full-data log-likelihood ----------------------------------------------------------------

/// Σ log σ(y·x·θ) over range(0) rows: 10^4 (4.5 MB, cache resident after the first pass) and
/// 10^6 (448 MB, streamed from DRAM: GB/s is the figure of merit).
template <bool kScalar>
void BM_SumLogSigmoidSigned(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const double* rows = big_matrix();
  const double* y = labels().data();
  for (auto _ : state) {
    double s;
    if constexpr (kScalar) {
      s = fk::scalar::sum_log_sigmoid_signed(rows, n, kStride, y, theta());
    } else {
      s = fk::sum_log_sigmoid_signed(rows, n, kStride, y, theta());
    }
    benchmark::DoNotOptimize(s);
  }
  set_row_counters(state, static_cast<double>(n),
                   static_cast<double>(n * (kRowBytes + sizeof(double))));
}
BENCHMARK(BM_SumLogSigmoidSigned<false>)->Arg(10'000)->Arg(kBigN)->ArgName("rows");
BENCHMARK(BM_SumLogSigmoidSigned<true>)->Arg(10'000)->Arg(kBigN)->ArgName("rows");

// ---- Third-order SMH's cubic form --------------------------------------------------------------

/// T(u, u, u) over the padded tensor of kD coefficients: what an order-3 SMH proposal evaluates
/// once (d³/6 multiply-adds). <true>: the scalar reference.
template <bool kScalar>
void BM_CubicForm(benchmark::State& state) {
  const std::size_t size = fk::cubic_padded_size(kD);
  const AlignedDoubles t = make_rows((size + kStride - 1) / kStride, 4);  // any values will do
  AlignedDoubles u = make_rows(2, 5);
  std::fill(u.get() + kD, u.get() + 2 * kStride, 0.0);
  for (auto _ : state) {
    u[0] += 1e-9;  // a new point each call
    const double v = kScalar ? fk::scalar::cubic_form(t.get(), u.get(), kD)
                             : fk::cubic_form(t.get(), u.get(), kD);
    benchmark::DoNotOptimize(v);
  }
  set_item_counters(state, static_cast<double>(kD * (kD + 1) * (kD + 2) / 6));
}
BENCHMARK(BM_CubicForm<false>);
BENCHMARK(BM_CubicForm<true>);

}  // namespace
