#include "flymc/mcmc/pdmp/event_time.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace flymc::pdmp {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

double positive_linear_integral(double y0, double y1, double h) noexcept {
  if (!(h > 0.0)) return 0.0;
  if (y0 >= 0.0 && y1 >= 0.0) return 0.5 * (y0 + y1) * h;
  if (y0 <= 0.0 && y1 <= 0.0) return 0.0;
  // One sign change: the positive part is a triangle with its apex at the positive end, over
  // the fraction y+/(|y0| + |y1|) of the piece.
  const double pos = std::max(y0, y1), span = std::fabs(y0) + std::fabs(y1);
  return 0.5 * pos * (h * pos / span);
}

double affine_rate_time(double a, double b, double e) noexcept {
  if (a >= 0.0) {
    const double disc = a * a + 2.0 * b * e;
    if (disc < 0.0) return kInf;  // b < 0: the rate dies out before the integral reaches e
    const double den = a + std::sqrt(disc);
    return den > 0.0 ? 2.0 * e / den : kInf;
  }
  if (!(b > 0.0)) return kInf;  // negative and not rising: never positive
  return -a / b + std::sqrt(2.0 * e / b);
}

double PiecewiseLinearRate::at(double t) const noexcept {
  if (t_.empty()) return 0.0;
  const auto it = std::upper_bound(t_.begin(), t_.end(), t);
  if (it == t_.begin()) return std::max(0.0, y_.front());
  if (it == t_.end()) return std::max(0.0, y_.back());
  const std::size_t k = static_cast<std::size_t>(it - t_.begin());
  const double f = (t - t_[k - 1]) / (t_[k] - t_[k - 1]);
  return std::max(0.0, y_[k - 1] + f * (y_[k] - y_[k - 1]));
}

double PiecewiseLinearRate::integral(double t) const noexcept {
  double acc = 0.0;
  for (std::size_t k = 1; k < t_.size() && t > t_[k - 1]; ++k) {
    const double h = t_[k] - t_[k - 1];
    if (t >= t_[k]) {
      acc += positive_linear_integral(y_[k - 1], y_[k], h);
    } else {
      const double s = t - t_[k - 1];
      acc += positive_linear_integral(y_[k - 1], y_[k - 1] + (y_[k] - y_[k - 1]) * s / h, s);
    }
  }
  return acc;
}

double PiecewiseLinearRate::first_time(double e) const noexcept {
  double acc = 0.0;
  for (std::size_t k = 1; k < t_.size(); ++k) {
    const double h = t_[k] - t_[k - 1];
    const double piece = positive_linear_integral(y_[k - 1], y_[k], h);
    if (acc + piece >= e) {
      // Inside this piece the rate is the affine y0 + slope·s: invert it there (rounding may
      // put the root a hair past the piece's end).
      const double s = affine_rate_time(y_[k - 1], (y_[k] - y_[k - 1]) / h, e - acc);
      return t_[k - 1] + std::min(s, h);
    }
    acc += piece;
  }
  return kInf;
}

void reflect(double* v, const double* g, std::size_t p) noexcept {
  double vg = 0.0, gg = 0.0;
  for (std::size_t j = 0; j < p; ++j) {
    vg += v[j] * g[j];
    gg += g[j] * g[j];
  }
  if (!(gg > 0.0)) return;
  const double c = 2.0 * vg / gg;
  for (std::size_t j = 0; j < p; ++j) v[j] -= c * g[j];
}

void sphere_velocity(Rng& rng, double* v, std::size_t p) noexcept {
  double ss = 0.0;
  do {  // an all-zero normal vector has probability 0 but would divide by 0
    ss = 0.0;
    for (std::size_t j = 0; j < p; ++j) {
      v[j] = rng.normal();
      ss += v[j] * v[j];
    }
  } while (!(ss > 0.0));
  const double inv = 1.0 / std::sqrt(ss);
  for (std::size_t j = 0; j < p; ++j) v[j] *= inv;
}

}  // namespace flymc::pdmp
