#include "flymc/core/rng.hpp"

#include <cmath>

namespace flymc {

double gamma_draw(double shape, Rng& rng) {
  if (shape < 1.0) return gamma_draw(shape + 1.0, rng) * std::pow(rng.uniform_pos(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    const double x = rng.normal(), t = 1.0 + c * x;
    if (t <= 0.0) continue;
    const double v = t * t * t, u = rng.uniform_pos(), x2 = x * x;
    // The squeeze lies inside the acceptance region: it saves the logarithms, not a draw.
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
    if (std::log(u) < 0.5 * x2 + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace flymc
