// Synthetic logistic-regression and robust-regression data.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/datagen/datagen.hpp"

namespace flymc {

std::vector<double> synth_logistic_theta(std::size_t d, std::uint64_t seed) {
  Rng rng(seed, ~std::uint64_t{0});
  std::vector<double> theta(d);
  const double s = 1.0 / std::sqrt(static_cast<double>(d));
  for (double& t : theta) t = rng.normal() * s;
  return theta;
}

Dataset synth_logistic(std::size_t n, std::size_t d, std::uint64_t seed) {
  if (n == 0 || d == 0)
    throw ConfigError("synth-logistic: n and d must be positive (n = " + std::to_string(n) +
                      ", d = " + std::to_string(d) + ")");
  if (n > std::numeric_limits<Index>::max())
    throw ConfigError("synth-logistic: n = " + std::to_string(n) + " exceeds the maximum " +
                      std::to_string(std::numeric_limits<Index>::max()));
  const std::vector<double> theta = synth_logistic_theta(d, seed);
  Dataset ds(n, d,
             "synth-logistic(n=" + std::to_string(n) + ", d=" + std::to_string(d) +
                 ", seed=" + std::to_string(seed) + ")");
  std::vector<double>& y = ds.mutable_y();
  constexpr std::size_t block = 65536;
  const std::size_t nblocks = (n + block - 1) / block;
  auto make_block = [&](std::size_t b) {
    Rng rng(seed, b);
    const std::size_t r1 = std::min(n, (b + 1) * block);
    for (std::size_t r = b * block; r < r1; ++r) {
      double* x = ds.mutable_row(r);
      double a = 0.0;
      for (std::size_t j = 0; j + 1 < d; ++j) {
        x[j] = rng.normal();
        a += x[j] * theta[j];
      }
      x[d - 1] = 1.0;
      a += theta[d - 1];
      const double prob = 1.0 / (1.0 + std::exp(-a));
      y[r] = rng.uniform() < prob ? 1.0 : -1.0;
    }
  };
  if (nblocks == 1) {
    make_block(0);
  } else {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, nblocks, 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t b = r.begin(); b != r.end(); ++b) make_block(b);
                      });
  }
  return ds;
}

namespace {

/// Fills blocks of 65,536 rows, block b from Rng(seed, b), in parallel.
template <class Fn>
void for_each_block(std::size_t n, Fn&& make_block) {
  constexpr std::size_t block = 65536;
  const std::size_t nblocks = (n + block - 1) / block;
  auto one = [&](std::size_t b) { make_block(b * block, std::min(n, (b + 1) * block), b); };
  if (nblocks == 1) {
    one(0);
  } else {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, nblocks, 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t b = r.begin(); b != r.end(); ++b) one(b);
                      });
  }
}

}  // namespace

SynthRobustParams synth_robust_params(std::size_t d, std::uint64_t seed) {
  if (d == 0) throw ConfigError("synth-robust: d must be positive");
  Rng rng(seed, ~std::uint64_t{0});
  SynthRobustParams p;
  p.theta.resize(d);
  for (double& t : p.theta) {
    const double u = rng.uniform(), v = rng.normal();
    t = u < 0.2 ? v : 0.0;
  }
  p.factors = (d - 1 + 7) / 8;
  p.loadings.resize((d - 1) * p.factors);
  for (double& b : p.loadings) b = rng.normal();
  return p;
}

Dataset synth_robust(std::size_t n, std::size_t d, std::uint64_t seed, double nu,
                     double noise_scale) {
  if (n == 0 || d == 0)
    throw ConfigError("synth-robust: n and d must be positive (n = " + std::to_string(n) +
                      ", d = " + std::to_string(d) + ")");
  if (n > std::numeric_limits<Index>::max())
    throw ConfigError("synth-robust: n = " + std::to_string(n) + " exceeds the maximum " +
                      std::to_string(std::numeric_limits<Index>::max()));
  if (!(nu > 0.0) || !std::isfinite(nu))
    throw ConfigError("synth-robust: --nu must be finite and > 0, got " + std::to_string(nu));
  if (!(noise_scale > 0.0) || !std::isfinite(noise_scale))
    throw ConfigError("synth-robust: --noise-scale must be finite and > 0, got " +
                      std::to_string(noise_scale));
  const SynthRobustParams p = synth_robust_params(d, seed);
  const std::size_t q = p.factors, nf = d - 1;
  std::vector<double> norm(nf);  // 1/√(1 + |B_j|²): unit feature variances
  for (std::size_t j = 0; j < nf; ++j) {
    double s2 = 1.0;
    for (std::size_t k = 0; k < q; ++k) s2 += p.loadings[j * q + k] * p.loadings[j * q + k];
    norm[j] = 1.0 / std::sqrt(s2);
  }
  char nu_text[32], s_text[32];
  std::snprintf(nu_text, sizeof nu_text, "%g", nu);
  std::snprintf(s_text, sizeof s_text, "%g", noise_scale);
  Dataset ds(n, d,
             "synth-robust(n=" + std::to_string(n) + ", d=" + std::to_string(d) + ", seed=" +
                 std::to_string(seed) + ", nu=" + nu_text + ", noise-scale=" + s_text + ")");
  std::vector<double>& y = ds.mutable_y();
  for_each_block(n, [&](std::size_t r0, std::size_t r1, std::size_t b) {
    Rng rng(seed, b);
    std::vector<double> g(q);
    for (std::size_t r = r0; r < r1; ++r) {
      double* x = ds.mutable_row(r);
      for (double& gk : g) gk = rng.normal();
      double mean = 0.0;
      for (std::size_t j = 0; j < nf; ++j) {
        double v = rng.normal();
        for (std::size_t k = 0; k < q; ++k) v += p.loadings[j * q + k] * g[k];
        x[j] = v * norm[j];
        mean += x[j] * p.theta[j];
      }
      x[d - 1] = 1.0;
      mean += p.theta[d - 1];
      const double z = rng.normal();
      double v;
      do {
        v = 2.0 * gamma_draw(0.5 * nu, rng);
      } while (!(v > 0.0));
      y[r] = mean + noise_scale * z / std::sqrt(v / nu);
    }
  });
  return ds;
}

}  // namespace flymc
