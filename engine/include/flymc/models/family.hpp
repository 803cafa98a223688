#pragma once
/// @file family.hpp
/// A single-index model, given by one function: each datum's log-likelihood depends on θ only
/// through its linear predictor η_n = x_n·θ, ℓ_n(θ) = f(y_n, η_n) (docs/math.md §2.4). From f,
/// its η-derivatives and up to three constants of the family the engine derives what every exact
/// sampler needs:
///   - regular MCMC and the MAP search: f' and f'' (∇ℓ_n = f'·x_n, ∇²ℓ_n = f''·x_n x_nᵀ);
///   - FlyMC: a collapsible lower bound from κ ≥ −inf f'' (the tangent at η̂_n with curvature
///     −κ, docs/math.md §2.4), so a family without κ cannot run FlyMC;
///   - scalable MH: M3 ≥ sup |f'''| for its second-order expansion, M4 ≥ sup |f''''| for the
///     third-order one.
/// A sampler that needs a constant the family lacks refuses the model with an error naming it.
///
/// Write a family by deriving from SingleIndexFamily (docs/models.md has a complete one in a
/// short file) and pass it to flymc::run(cfg, data, family). Probit regression and Gaussian
/// linear regression with a known noise scale ship built on it (`--model probit`, `--model
/// gaussian`).
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "flymc/data/dataset.hpp"

namespace flymc {

struct RunConfig;
class Rng;

/// f(y, η) and what the samplers need of it. Implementations must be thread-safe (every member
/// is called concurrently from the engine's threads) and deterministic.
class SingleIndexFamily {
 public:
  /// The highest derivative any sampler asks for: f'''' (scalable MH of the third order).
  static constexpr int kMaxOrder = 4;

  virtual ~SingleIndexFamily() = default;

  /// A short name for messages and outputs ("probit").
  virtual std::string name() const = 0;
  /// What the loaders accept in the label column (binary: ±1, 0/1 mapped to −1/+1).
  virtual LabelDomain labels() const { return LabelDomain::any; }
  /// Empty if y is a response the family accepts; otherwise what is wrong with it ("must be
  /// finite"). Checked for every datum when a model is built (DataError naming the row).
  virtual std::string check_label(double y) const;

  /// f(y, η) and its first `order` η-derivatives (order ≤ kMaxOrder): out[0] = f, out[1] = f',
  /// …, out[order]. f may drop terms that do not depend on η. Finite for every finite η where
  /// the likelihood is positive.
  virtual void derivatives(double y, double eta, int order, double* out) const = 0;
  /// The same for k data at once: out[j·k + i] is the j-th derivative at (y[i], eta[i]). The
  /// engine calls this form, on blocks of a few hundred data; the default loops over
  /// derivatives(). Override it where a vectorized form pays.
  virtual void derivatives(const double* y, const double* eta, std::size_t k, int order,
                           double* out) const;

  /// κ ≥ −f''(y, η) for every y and η (f + κη²/2 is convex in η): FlyMC's bound. Empty if no
  /// finite κ exists (then FlyMC refuses the family).
  virtual std::optional<double> kappa() const { return std::nullopt; }
  /// M3 ≥ |f'''(y, η)| for every y and η: scalable MH of the second order.
  virtual std::optional<double> m3() const { return std::nullopt; }
  /// M4 ≥ |f''''(y, η)| for every y and η: scalable MH of the third order.
  virtual std::optional<double> m4() const { return std::nullopt; }

  /// A response drawn from the model at predictor η, from `rng`: simulation-based calibration
  /// (`flymc validate sbc`) makes its data sets with it. The default throws ConfigError: a
  /// family need not simulate to be sampled.
  virtual double simulate(double eta, Rng& rng) const;

  /// f(y, η) alone.
  double log_lik(double y, double eta) const {
    double f = 0.0;
    derivatives(y, eta, 0, &f);
    return f;
  }
};

/// Probit regression: labels t = ±1, f(t, η) = log Φ(t·η), Φ the standard normal CDF. κ = 1 (a
/// limit as t·η → −∞), M3 and M4 from docs/math.md §2.4, each enlarged in its last digits.
class ProbitFamily final : public SingleIndexFamily {
 public:
  /// sup |f'''| and sup |f''''|, attained near t·η = 1.002 and t·η = 2.071 (tests/test_family.cpp
  /// checks them on a fine grid), rounded up.
  static constexpr double kM3 = 0.2957189;
  static constexpr double kM4 = 0.1889569;

  std::string name() const override { return "probit"; }
  LabelDomain labels() const override { return LabelDomain::binary; }
  std::string check_label(double y) const override;
  void derivatives(double y, double eta, int order, double* out) const override;
  std::optional<double> kappa() const override { return 1.0; }
  std::optional<double> m3() const override { return kM3; }
  std::optional<double> m4() const override { return kM4; }
  double simulate(double eta, Rng& rng) const override;
};

/// Gaussian linear regression with a known noise scale s: f(y, η) = −(y − η)²/(2s²). Every
/// bound is exact (κ = 1/s², M3 = M4 = 0): FlyMC leaves every datum dark and scalable MH draws
/// no candidates.
class GaussianFamily final : public SingleIndexFamily {
 public:
  /// @throw ConfigError unless s is finite with 1/s² finite and positive.
  explicit GaussianFamily(double noise_scale);
  std::string name() const override { return "gaussian"; }
  void derivatives(double y, double eta, int order, double* out) const override;
  std::optional<double> kappa() const override { return precision_; }
  std::optional<double> m3() const override { return 0.0; }
  std::optional<double> m4() const override { return 0.0; }
  double simulate(double eta, Rng& rng) const override;
  double noise_scale() const noexcept { return scale_; }

 private:
  double scale_, precision_;
};

/// The family of a run: RunConfig::family for ModelKind::custom, the built-in one for probit
/// and gaussian (with cfg.noise_scale), null for the models with bounds of their own (logistic,
/// softmax, robust).
/// @throw ConfigError for ModelKind::custom without a family.
std::shared_ptr<const SingleIndexFamily> single_index_family(const RunConfig& cfg);

/// Throws ConfigError if the family lacks a constant `what` needs: "FlyMC" needs κ, "scalable
/// MH of order 2" M3, of order 3 M4. `need` is 'k', '3' or '4'.
void require_constant(const SingleIndexFamily& family, char need, const std::string& what);

}  // namespace flymc
