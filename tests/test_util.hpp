#pragma once
// Helpers shared by the tests: small in-memory data sets.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/model.hpp"

namespace flymc::test {

/// Bitwise equality of two data sets (labels, features and zero padding).
inline bool identical(const Dataset& a, const Dataset& b) {
  if (a.n() != b.n() || a.d() != b.d() || a.stride() != b.stride()) return false;
  for (std::size_t i = 0; i < a.n(); ++i) {
    if (std::bit_cast<std::uint64_t>(a.y()[i]) != std::bit_cast<std::uint64_t>(b.y()[i]))
      return false;
    for (std::size_t j = 0; j < a.stride(); ++j)
      if (std::bit_cast<std::uint64_t>(a.row(i)[j]) != std::bit_cast<std::uint64_t>(b.row(i)[j]))
        return false;
  }
  return true;
}

/// A fresh directory under the system's temporary directory, removed with its contents when the
/// object goes: flymc-<name>-<pid>, so parallel test processes do not meet.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("flymc-" + name + "-" + std::to_string(::getpid())))
                  .string()) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// RunConfig as the tests written before `--algo auto --ess 1000` became the default meant it:
/// FlyMC for exactly 1,000 sampling iterations.
inline RunConfig fixed_config() {
  RunConfig c;
  c.algo = Algo::flymc;
  c.ess = 0.0;
  c.iters = 1000;
  return c;
}

/// n rows of d − 1 normal features and a last column of ones, y = x·β + sigma·ε with
/// β_j = 0.5 − 0.4·j (linear regression).
inline std::shared_ptr<Dataset> linear_data(std::size_t n, std::size_t d, double sigma,
                                            std::uint64_t seed) {
  auto ds = std::make_shared<Dataset>(n, d, "linear data");
  Rng rng(seed, 0);
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    double eta = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = j + 1 == d ? 1.0 : rng.normal();
      eta += (0.5 - 0.4 * static_cast<double>(j)) * x[j];
    }
    ds->mutable_y()[i] = eta + sigma * rng.normal();
  }
  return ds;
}

/// n × d logistic data: x ~ N(0, scale²) with a bias column of ones last, labels from θ_true.
inline std::shared_ptr<const Dataset> logistic_data(std::size_t n, std::size_t d,
                                                    std::uint64_t seed, double scale = 1.0) {
  auto ds = std::make_shared<Dataset>(n, d, "synthetic");
  Rng rng(seed, 12345);
  std::vector<double> th(d);
  for (auto& t : th) t = rng.normal();
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    double a = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = j + 1 == d ? 1.0 : scale * rng.normal();
      a += x[j] * th[j];
    }
    ds->mutable_y()[i] = rng.uniform() < 1.0 / (1.0 + std::exp(-a)) ? 1.0 : -1.0;
  }
  return ds;
}

/// n × d softmax data with `classes` classes: x ~ N(0, scale²) with a bias column of ones last,
/// W_true ~ N(0, I), labels y ~ softmax(W_true x) in 0..classes−1.
inline std::shared_ptr<const Dataset> softmax_data(std::size_t n, std::size_t d,
                                                   std::size_t classes, std::uint64_t seed,
                                                   double scale = 1.0) {
  auto ds = std::make_shared<Dataset>(n, d, "synthetic-softmax");
  Rng rng(seed, 54321);
  std::vector<double> w(classes * d), psi(classes);
  for (auto& t : w) t = rng.normal();
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    for (std::size_t j = 0; j < d; ++j) x[j] = j + 1 == d ? 1.0 : scale * rng.normal();
    double mx = -INFINITY;
    for (std::size_t k = 0; k < classes; ++k) {
      psi[k] = 0.0;
      for (std::size_t j = 0; j < d; ++j) psi[k] += w[k * d + j] * x[j];
      mx = std::max(mx, psi[k]);
    }
    double s = 0.0;
    for (auto& v : psi) s += (v = std::exp(v - mx));
    double u = rng.uniform() * s;
    std::size_t c = 0;
    while (c + 1 < classes && u >= psi[c]) u -= psi[c++];
    ds->mutable_y()[i] = static_cast<double>(c);
  }
  return ds;
}

/// n × d robust-regression data: x ~ N(0, scale²) with a bias column of ones last, θ_true ~
/// N(0, 1) (dense), y = x·θ_true + ε with ε ~ Student-t₄ (z/√(χ²₄/4)); every `outlier_every`-th
/// row (0: none) has `outlier` added to its response.
inline std::shared_ptr<const Dataset> robust_data(std::size_t n, std::size_t d, std::uint64_t seed,
                                                  double scale = 1.0, std::size_t outlier_every = 0,
                                                  double outlier = 50.0) {
  auto ds = std::make_shared<Dataset>(n, d, "synthetic-robust");
  Rng rng(seed, 54321);
  std::vector<double> th(d);
  for (auto& t : th) t = rng.normal();
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    double m = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = j + 1 == d ? 1.0 : scale * rng.normal();
      m += x[j] * th[j];
    }
    double chi2 = 0.0;
    for (int k = 0; k < 4; ++k) {
      const double g = rng.normal();
      chi2 += g * g;
    }
    m += rng.normal() / std::sqrt(chi2 / 4.0);
    if (outlier_every != 0 && i % outlier_every == 0) m += outlier;
    ds->mutable_y()[i] = m;
  }
  return ds;
}

/// Posterior means and standard deviations of a two-parameter model.
struct Moments {
  double mean[2], sd[2];
};

/// Moments of exp(log_post(θ)) by quadrature on a g × g grid spanning ±8 Laplace sd around
/// `center` (cov: the Laplace covariance), for exactness tests with D = 2.
template <class LogPost>
Moments quadrature(LogPost&& log_post, const Vec& center, const Mat& cov, int g = 401) {
  const double s0 = std::sqrt(cov(0, 0)), s1 = std::sqrt(cov(1, 1));
  auto at = [&](int i, double c, double s) { return c + s * (-8.0 + 16.0 * i / (g - 1)); };
  std::vector<double> lp(static_cast<std::size_t>(g * g));
  double mx = -INFINITY;
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j) {
      const double v = log_post(at(i, center[0], s0), at(j, center[1], s1));
      lp[static_cast<std::size_t>(i * g + j)] = v;
      mx = std::max(mx, v);
    }
  double z = 0, m0 = 0, m1 = 0, q0 = 0, q1 = 0;
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j) {
      const double w = std::exp(lp[static_cast<std::size_t>(i * g + j)] - mx);
      const double a = at(i, center[0], s0), b = at(j, center[1], s1);
      z += w, m0 += w * a, m1 += w * b, q0 += w * a * a, q1 += w * b * b;
    }
  Moments m;
  m.mean[0] = m0 / z, m.mean[1] = m1 / z;
  m.sd[0] = std::sqrt(q0 / z - m.mean[0] * m.mean[0]);
  m.sd[1] = std::sqrt(q1 / z - m.mean[1] * m.mean[1]);
  return m;
}

/// The posterior moments of a two-parameter model (log_lik + log_prior at padded θ) by
/// quadrature around its MAP fit.
template <class Model>
Moments posterior_quadrature(const Model& model, const MapResult& map) {
  AlignedBuffer tp = aligned_zeros(model.stride());
  return quadrature(
      [&](double a, double b) {
        tp[0] = a;
        tp[1] = b;
        return model.log_lik(tp.get()) + model.log_prior(tp.get());
      },
      map.theta, map.covariance);
}

/// Batch-means MCSE of the mean of f(x) over all chains (40 batches per chain): {mean, MCSE}.
template <class F>
std::pair<double, double> mean_and_mcse(const std::vector<std::vector<double>>& chains, F f) {
  const int nb = 40;
  std::vector<double> bm;
  double tot = 0.0;
  std::size_t cnt = 0;
  for (const auto& c : chains) {
    const std::size_t len = c.size() / nb;
    for (int b = 0; b < nb; ++b) {
      double s = 0.0;
      for (std::size_t i = 0; i < len; ++i) s += f(c[b * len + i]);
      bm.push_back(s / static_cast<double>(len));
      tot += s;
      cnt += len;
    }
  }
  const double mean = tot / static_cast<double>(cnt);
  double v = 0.0;
  for (double x : bm) v += (x - mean) * (x - mean);
  v /= static_cast<double>(bm.size() - 1);
  return {mean, std::sqrt(v / static_cast<double>(bm.size()))};
}

/// How far a model's gradient at padded θ is from central differences of its log_lik (steps
/// 1e-6·max(1, |θ_j|)) over the first p coordinates: the largest |g_j − difference_j| /
/// (1 + |difference_j|). θ is restored.
template <class M>
double gradient_error(const M& model, double* theta, std::size_t p) {
  AlignedBuffer grad = aligned_zeros(model.layout().padded());
  model.log_lik_grad(theta, grad.get());
  double worst = 0.0;
  for (std::size_t j = 0; j < p; ++j) {
    const double keep = theta[j], h = 1e-6 * std::max(1.0, std::fabs(keep));
    theta[j] = keep + h;
    const double up = model.log_lik(theta);
    theta[j] = keep - h;
    const double down = model.log_lik(theta);
    theta[j] = keep;
    const double fd = (up - down) / (2.0 * h);
    worst = std::max(worst, std::fabs(grad[j] - fd) / (1.0 + std::fabs(fd)));
  }
  return worst;
}

/// One coordinate's draws against exact posterior moments: how many batch-means MCSEs their mean
/// is from `mean`, and their sd (through the second central moment about `mean`, by the delta
/// method) from `sd`; and the mean's MCSE in units of `sd`, which must be small for the
/// comparison to mean something.
struct ExactCheck {
  double mean_z, sd_z, mcse_in_sd;
};
inline ExactCheck against_exact(const std::vector<std::vector<double>>& draws, double mean,
                                double sd) {
  const auto [m, se] = mean_and_mcse(draws, [](double x) { return x; });
  const auto [v, se_v] = mean_and_mcse(draws, [mean](double x) { return (x - mean) * (x - mean); });
  const double s = std::sqrt(v), se_s = se_v / (2.0 * s);
  return {std::fabs(m - mean) / se, std::fabs(s - sd) / se_s, se / sd};
}

/// One coordinate's draws by two runs compared: how many combined batch-means MCSEs apart their
/// means are, and their second moments about the second run's mean.
struct RunsCheck {
  double mean_z, var_z;
};
inline RunsCheck compare_draws(const std::vector<std::vector<double>>& a,
                               const std::vector<std::vector<double>>& b) {
  const auto id = [](double x) { return x; };
  const auto [ma, sea] = mean_and_mcse(a, id);
  const auto [mb, seb] = mean_and_mcse(b, id);
  const double centre = mb;  // (clang refuses to capture a structured binding)
  const auto sq = [centre](double x) { return (x - centre) * (x - centre); };
  const auto [va, seva] = mean_and_mcse(a, sq);
  const auto [vb, sevb] = mean_and_mcse(b, sq);
  return {std::fabs(ma - mb) / std::hypot(sea, seb), std::fabs(va - vb) / std::hypot(seva, sevb)};
}

/// The mean of every chain's draws of one coordinate with its batch-means MCSE, and their sd.
struct DrawMoments {
  double mean, mcse, sd;
};
inline DrawMoments draw_moments(const std::vector<std::vector<double>>& chains) {
  const auto [m, se] = mean_and_mcse(chains, [](double x) { return x; });
  const double mu = m;
  const auto [v, se_v] = mean_and_mcse(chains, [mu](double x) { return (x - mu) * (x - mu); });
  (void)se_v;
  return {m, se, std::sqrt(v)};
}

/// A draw file's text without its Elapsed Time lines (`# ... seconds (Warm-up|Sampling|Total)`),
/// the only lines in which a resumed run's file may differ from an uninterrupted run's.
inline std::string read_without_timing(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string out, line;
  while (std::getline(f, line)) {
    const bool timing = !line.empty() && line[0] == '#' &&
                        (line.find(" seconds (Warm-up)") != std::string::npos ||
                         line.find(" seconds (Sampling)") != std::string::npos ||
                         line.find(" seconds (Total)") != std::string::npos);
    if (!timing) out += line + "\n";
  }
  return out;
}

}  // namespace flymc::test
