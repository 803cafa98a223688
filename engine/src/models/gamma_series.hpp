#pragma once
// Private: log Γ, ψ, ψ′ and ψ″ for x ≥ 64 from their asymptotic series (Abramowitz and Stegun
// 6.1.41, 6.3.18, 6.4.12, 6.4.13), whose first omitted terms are below 1e-16 relative there. The
// negative binomial's models need them only beyond their exact sums over j < 64.
#include <cmath>
#include <numbers>

namespace flymc::detail {

/// Where the exact sums Σ_{j<y} log(φ + j) end and the series take over.
inline constexpr int kGammaExact = 64;

inline double log_gamma_large(double x) noexcept {
  const double z = 1.0 / (x * x);
  return (x - 0.5) * std::log(x) - x + 0.5 * std::log(2.0 * std::numbers::pi) +
         (1.0 / 12.0 - z * (1.0 / 360.0 - z / 1260.0)) / x;
}
inline double digamma_large(double x) noexcept {
  const double z = 1.0 / (x * x);
  return std::log(x) - 0.5 / x -
         z * (1.0 / 12.0 - z * (1.0 / 120.0 - z * (1.0 / 252.0 - z / 240.0)));
}
inline double trigamma_large(double x) noexcept {
  const double z = 1.0 / (x * x);
  return 1.0 / x + 0.5 * z + (1.0 / 6.0 - z * (1.0 / 30.0 - z * (1.0 / 42.0 - z / 30.0))) * z / x;
}

/// ψ″(x) = −1/x² − 1/x³ − 1/(2x⁴) + 1/(6x⁶) − 1/(6x⁸) + 3/(10x¹⁰) − 5/(6x¹²) − …
inline double tetragamma_large(double x) noexcept {
  const double z = 1.0 / (x * x);
  return -z * (1.0 + 1.0 / x +
               z * (0.5 - z * (1.0 / 6.0 - z * (1.0 / 6.0 - z * (3.0 / 10.0 - z * 5.0 / 6.0)))));
}

}  // namespace flymc::detail
