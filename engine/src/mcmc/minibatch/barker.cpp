#include "flymc/mcmc/minibatch/barker.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"

namespace flymc {
namespace {

constexpr double kYHalfWidth = 20.0;  // C_σ's support, [−20, 20]
constexpr double kXHalfWidth = 40.0;  // where the fit is made, [−40, 40]

double normal_cdf(double t) noexcept { return 0.5 * std::erfc(-t / std::numbers::sqrt2); }

/// G(t) = t·Φ(t) + φ(t), an antiderivative of Φ: ∫_a^b Φ = G(b) − G(a).
double normal_cdf_integral(double t) noexcept {
  return t * normal_cdf(t) + std::exp(-0.5 * t * t) / std::sqrt(2.0 * std::numbers::pi);
}

/// P(N(0, σ²) + U ≤ x) for U uniform on the cell [y − h/2, y + h/2]:
/// (1/h)∫ Φ((x − u)/σ) du = (σ/h)[G((x − y + h/2)/σ) − G((x − y − h/2)/σ)].
double cell_cdf(double x, double y, double h, double sigma) noexcept {
  return sigma / h *
         (normal_cdf_integral((x - y + 0.5 * h) / sigma) -
          normal_cdf_integral((x - y - 0.5 * h) / sigma));
}

double logistic_cdf(double x) noexcept { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

BarkerCorrection::BarkerCorrection(double sigma, int half_cells, double ridge)
    : sigma_(sigma), h_(half_cells > 0 ? kYHalfWidth / half_cells : 0.0) {
  // Var(C_σ) = π²/3 − σ² must be positive for the deconvolution to exist.
  if (!(sigma > 0.0 && sigma < std::numbers::pi / std::sqrt(3.0)))
    throw ConfigError("the Barker test's sigma must be in (0, pi/sqrt(3)), got " +
                      number_text(sigma));
  if (half_cells < 1 || !(ridge >= 0.0))
    throw ConfigError("the Barker correction needs at least one cell and a ridge weight >= 0");
  const int ny = 2 * half_cells + 1, nx = 4 * half_cells + 1;
  const double dx = 2.0 * kXHalfWidth / (nx - 1);
  Eigen::MatrixXd m(nx, ny);
  Eigen::VectorXd v(nx);
  for (int i = 0; i < nx; ++i) {
    const double x = -kXHalfWidth + i * dx;
    v(i) = logistic_cdf(x);
    for (int j = 0; j < ny; ++j) m(i, j) = cell_cdf(x, -kYHalfWidth + j * h_, h_, sigma);
  }
  // Σ_i over the x grid approximates (1/dx)∫dx, so the ridge weight per unit length is scaled
  // by 1/dx.
  Eigen::MatrixXd a = m.transpose() * m;
  a.diagonal().array() += ridge / dx;
  const Eigen::VectorXd u = a.ldlt().solve(m.transpose() * v);
  w_.resize(static_cast<std::size_t>(ny));
  double total = 0.0;
  for (int j = 0; j < ny; ++j) total += w_[static_cast<std::size_t>(j)] = std::max(0.0, u(j));
  if (!(total > 0.0)) throw ConfigError("the Barker correction's fit has no positive weight");
  cum_.resize(w_.size());
  double c = 0.0;
  for (std::size_t j = 0; j < w_.size(); ++j) {
    w_[j] /= total;
    c += w_[j];
    cum_[j] = c;
  }
  cum_.back() = 1.0;
}

const BarkerCorrection& BarkerCorrection::standard() {
  static const BarkerCorrection c(1.0);
  return c;
}

double BarkerCorrection::sample(Rng& rng) const noexcept {
  const double u = rng.uniform();
  const auto it = std::upper_bound(cum_.begin(), cum_.end(), u);
  const std::size_t j =
      std::min<std::size_t>(static_cast<std::size_t>(it - cum_.begin()), cum_.size() - 1);
  const double below = j == 0 ? 0.0 : cum_[j - 1];
  const double frac = w_[j] > 0.0 ? std::clamp((u - below) / w_[j], 0.0, 1.0) : 0.5;
  return -kYHalfWidth + (static_cast<double>(j) - 0.5 + frac) * h_;
}

double BarkerCorrection::convolved_cdf(double x) const noexcept {
  double s = 0.0;
  for (std::size_t j = 0; j < w_.size(); ++j)
    if (w_[j] > 0.0)
      s += w_[j] * cell_cdf(x, -kYHalfWidth + static_cast<double>(j) * h_, h_, sigma_);
  return s;
}

double BarkerCorrection::max_cdf_error() const {
  double worst = 0.0;
  for (int i = -4000; i <= 4000; ++i) {
    const double x = 0.01 * i;
    worst = std::max(worst, std::fabs(convolved_cdf(x) - logistic_cdf(x)));
  }
  return worst;
}

BatchDrawer::BatchDrawer(std::size_t n) : perm_(n) {
  for (std::size_t i = 0; i < n; ++i) perm_[i] = static_cast<Index>(i);
}

const Index* BatchDrawer::extend(Rng& rng, std::size_t b) noexcept {
  const std::size_t n = perm_.size();
  for (; drawn_ < b && drawn_ < n; ++drawn_) {
    const std::size_t k = drawn_ + static_cast<std::size_t>(rng.below(n - drawn_));
    std::swap(perm_[drawn_], perm_[k]);
  }
  return perm_.data();
}

}  // namespace flymc
