#pragma once
/// @file prior_spec.hpp
/// Priors as users write them (`--prior`, `--prior-intercept`; docs/usage.md "Priors"):
///
///     flat                    improper, uniform on the real line
///     normal(M, S)            N(M, S²)
///     student_t(NU, M, S)     location M, scale S, NU degrees of freedom
///     laplace(M, B)           density exp(−|θ − M|/B)/(2B)
///     gaussian | laplace      today's keywords: N(0, sd²) or Laplace with standard deviation sd,
///                             sd from --prior-sd
///
/// M and S (or B) may each be one number or a bracketed list with one value per coefficient,
/// `normal([0, 1.5, 0], 10)`, so that every coefficient can have its own mean and scale. Lists
/// count the data's features; with --intercept the intercept's prior is --prior-intercept (else
/// --prior's, when that has no lists).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "flymc/core/config.hpp"

namespace flymc {

/// One distribution as written: its kind and arguments (lists of one value, or one per
/// coefficient). The keywords gaussian and laplace leave `scale` empty: RunConfig::prior_sd
/// gives their standard deviation.
struct PriorSpec {
  PriorKind kind = PriorKind::gaussian;
  std::vector<double> loc;    ///< M (empty: 0)
  std::vector<double> scale;  ///< S of normal and student_t, B of laplace (empty: the keyword's)
  double nu = 0.0;            ///< student_t's degrees of freedom
  bool keyword = false;       ///< written as `gaussian` or `laplace` (scale from --prior-sd)

  /// The number of coefficients its lists name (1 when every argument is a single number).
  std::size_t length() const noexcept;
  friend bool operator==(const PriorSpec&, const PriorSpec&) = default;
};

/// The written form `text`, read. `option` names the option in errors ("--prior").
/// @throw ConfigError naming the option, the text and what is wrong with it.
PriorSpec parse_prior_spec(std::string_view text, std::string_view option = "--prior");

/// The priors a run configures: --prior for every coefficient, and with --intercept the
/// intercept's (--prior-intercept, else --prior's).
struct RunPriors {
  PriorSpec coefficients;
  PriorSpec intercept;
  /// Any coefficient's prior is flat (the posterior may be improper: the models check).
  bool any_flat() const noexcept;
  /// Every coefficient's prior is one N(0, S²) (what the piecewise-deterministic samplers take).
  bool centred_gaussian() const noexcept;
};
/// @throw ConfigError as parse_prior_spec.
RunPriors run_priors(const RunConfig& cfg);

/// −(ν + 1)/2 · log(1 + r²/ν), the Student-t's log density in its standardized variable r
/// without its constant; far out, where r² would overflow, 2·log|r| − log ν stands for the log,
/// equal to double precision. The coefficients' and σ's Student-t priors share it.
double student_t_log_kernel(double r, double nu) noexcept;

/// A scale's prior on σ > 0 (--prior-sigma), as Stan's `real<lower=0>` reads a distribution:
/// flat (uniform on σ), or normal(0, S), student_t(NU, 0, S) or cauchy(0, S) folded onto σ > 0
/// (half-normal, half-t, half-Cauchy), or exponential(RATE). Densities without their constants.
struct ScalePrior {
  enum class Kind { flat, half_normal, half_t, exponential };
  Kind kind = Kind::flat;
  double scale = 1.0, nu = 0.0, rate = 0.0;

  double log_density(double sigma) const noexcept;
  double gradient(double sigma) const noexcept;  ///< d log p / dσ
  /// The curvature of a quadratic minorizer of log p touching it at σ (as
  /// PriorTerm::map_curvature): 1/S²; (ν + 1)/(ν·S² + σ²); 0 for flat and exponential.
  double map_curvature(double sigma) const noexcept;
  friend bool operator==(const ScalePrior&, const ScalePrior&) = default;
};
/// @throw ConfigError naming `option`, the text and what is wrong (a location other than 0, a
/// list, an unknown distribution).
ScalePrior parse_scale_prior(std::string_view text, const char* option = "--prior-sigma");

}  // namespace flymc
