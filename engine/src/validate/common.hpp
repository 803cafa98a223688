#pragma once
// Private: what the SBC and Geweke implementations share: number formatting for the reports, the
// logistic simulators, lag-1 autocorrelation, one oneTBB task per replicate or chain, and the
// sampler's one-line description.
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "flymc/core/clock.hpp"
#include "flymc/core/config.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/kernels/kernels.hpp"

namespace flymc::validate_detail {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// σ(a) without overflow for either sign.
inline double sigmoid(double a) noexcept {
  if (a >= 0.0) return 1.0 / (1.0 + std::exp(-a));
  const double e = std::exp(a);
  return e / (1.0 + e);
}

/// Labels ±1 with P(+1) = σ(x_n·θ) for every row; `theta` is padded to the stride.
inline void simulate_labels(Dataset& ds, const double* theta, Rng& rng) {
  auto& y = ds.mutable_y();
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const double a = kernels::dot(ds.row(i), theta, ds.stride());
    y[i] = rng.uniform() < sigmoid(a) ? 1.0 : -1.0;
  }
}

/// Fills the features: d − 1 standard normals and a last bias column of ones.
inline void simulate_design(Dataset& ds, Rng& rng) {
  const std::size_t d = ds.d();
  for (std::size_t i = 0; i < ds.n(); ++i) {
    double* x = ds.mutable_row(i);
    for (std::size_t j = 0; j + 1 < d; ++j) x[j] = rng.normal();
    x[d - 1] = 1.0;
  }
}

inline int resolve_threads(int t) { return t > 0 ? t : tbb::info::default_concurrency(); }

/// Sample lag-1 autocorrelation; 1 for a constant sequence (it never moved).
inline double lag1_autocorrelation(const std::vector<double>& x) {
  const std::size_t n = x.size();
  if (n < 3) return std::numeric_limits<double>::quiet_NaN();
  double m = 0.0;
  for (double v : x) m += v;
  m /= static_cast<double>(n);
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    den += (x[i] - m) * (x[i] - m);
    if (i + 1 < n) num += (x[i] - m) * (x[i + 1] - m);
  }
  return den > 0.0 ? num / den : 1.0;
}

/// Runs body(i) for i in [0, count) on `threads` workers, one task per index; rethrows the first
/// exception (by index) after all tasks finished.
template <class Body>
void parallel_tasks(int count, int threads, Body&& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  tbb::task_arena arena(resolve_threads(threads));
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int>(0, count, 1),
        [&](const tbb::blocked_range<int>& r) {
          for (int i = r.begin(); i != r.end(); ++i) {
            try {
              body(i);
            } catch (...) {
              errors[static_cast<std::size_t>(i)] = std::current_exception();
            }
          }
        },
        tbb::simple_partitioner());
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

inline std::string sampler_description(Algo algo, BoundTuning bound, ZUpdate z, KernelKind k,
                                       double q, double f, double slack, int theta_steps) {
  std::string s = std::string(to_string(algo)) + ", kernel " + to_string(k);
  if (algo == Algo::flymc) {
    s += std::string(", bound ") + to_string(bound) + ", z " + to_string(z);
    s += z == ZUpdate::implicit ? (q > 0.0 ? fmt(" (q %g)", q) : std::string(" (q auto)"))
                                : fmt(" (fraction %g)", f);
    if (slack > 0.0) s += fmt(", bound slack %g", slack);
    if (theta_steps > 1) s += ", theta-steps " + std::to_string(theta_steps);
  }
  return s;
}

}  // namespace flymc::validate_detail
