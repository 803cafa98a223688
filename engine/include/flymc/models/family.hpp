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
///     third-order one (and, where a family overrides them, its own closed-form expansion);
///   - the piecewise-deterministic samplers: M1 ≥ sup |f'| (bounded gradients: BPS, lipSBPS,
///     Zig-Zag with subsampling) and M2 ≥ sup |f''| (Zig-Zag with control variates, BPS's
///     curvature bound).
/// A sampler that needs a constant the family lacks refuses the model with an error naming it.
///
/// Write a family by deriving from SingleIndexFamily (docs/models.md has a complete one in a
/// short file) and pass it to flymc::run(cfg, data, family). Probit regression and Gaussian
/// linear regression with a known noise scale ship built on it (`--model probit`, `--model
/// gaussian`).
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "flymc/data/dataset.hpp"

namespace flymc {

struct RunConfig;
class Rng;

/// Scalable MH's expansion of one datum's log-likelihood at its predictor η̂ (docs/math.md §8),
/// in the family's expansion variable u = σ·η + c (SingleIndexFamily::expand): the point û and
/// f's first u-derivatives there. f(û) is not kept: it cancels from every difference of
/// remainders, which is all the acceptance test uses.
struct Expansion {
  double u_hat, f1, f2;
  double f3 = 0.0;  // order 3 only
};

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
  /// A local envelope, for scalable MH where no global M3 or M4 exists (Poisson regression,
  /// docs/math.md §2.4): for k = 3 (the second-order expansion) or 4 (the third) and every y, η̂
  /// and t,  |f⁽ᵏ⁾(y, η̂ + t)| ≤ envelope_scale(y, η̂, k) · envelope_growth(k, |t|),  the growth
  /// non-decreasing in |t|. Scalable MH takes each datum's scale at its expansion point once and
  /// multiplies every proposal's bound by the growth at the farthest any predictor can have moved.
  /// A family whose global M3 (M4) is given never uses its envelope; one that gives neither cannot
  /// run scalable MH of that order. The default says there is none. A family with an envelope
  /// must expand in u = η (expansion_sign 1, as by default).
  virtual bool has_envelope() const { return false; }
  virtual double envelope_scale(double /*y*/, double /*eta_hat*/, int /*k*/) const { return 0.0; }
  virtual double envelope_growth(int /*k*/, double /*t*/) const { return 1.0; }

  /// M1 ≥ |f'(y, η)| and M2 ≥ |f''(y, η)| for every y and η: the piecewise-deterministic
  /// samplers' event-rate bounds (M1: bounded gradients; M2: control variates).
  virtual std::optional<double> m1() const { return std::nullopt; }
  virtual std::optional<double> m2() const { return std::nullopt; }

  /// Scalable MH expands each datum in a variable u = σ(y)·η + c(y), σ = ±1, of the family's
  /// choosing, through the three members below. By default u = η (σ = 1) and they are computed
  /// from derivatives(). A family whose f depends on (y, η) only through such a u (logistic:
  /// u = y·η; Student-t: u = y − η) may override them with closed forms in u, and say so by
  /// remainder_reads_response() = false: then a candidate's test does not read its response.
  virtual double expansion_sign(double /*y*/) const { return 1.0; }
  /// The expansion at predictor η̂ to `order` 2 or 3 (f3 = 0 for order 2).
  virtual Expansion expand(double y, double eta_hat, int order) const;
  /// gap(h) − gap(h2) for the datum expanded at û, h and h2 being steps in u (σ·x·(θ − θ̂)):
  /// gap(h) = f(û + h) − f1·h − ½f2·h² (order 3: also − ⅙f3·h³), the coefficients recomputed
  /// from û exactly as expand() computes them. It is the change of the datum's Taylor remainder
  /// between the two points, which the acceptance test compares with its bound.
  virtual double remainder_change(double y, double u_hat, double h, double h2, int order) const;
  virtual bool remainder_reads_response() const { return true; }

  /// Whether `other` is the same likelihood (auto's pilot hands its set-up to the chosen run only
  /// then). By default only the same object is; a built-in family with parameters compares them.
  virtual bool same_as(const SingleIndexFamily& other) const { return this == &other; }

  /// A response drawn from the model at predictor η, from `rng`: simulation-based calibration
  /// (`flymc validate sbc`) makes its data sets with it. The default throws ConfigError: a
  /// family need not simulate to be sampled.
  virtual double simulate(double eta, Rng& rng) const;

  /// A family whose likelihood reads each datum's count of trials m (Dataset::trials(); the
  /// binomial): then the engine calls derivatives_trials() where the data have trials, and each
  /// datum's constants are datum_scale(y, m) times the family's. A datum's weight w_n scales its
  /// f and its constants (w_n·f), and an offset o_n shifts its predictor (f(y, x·θ + o_n)): the
  /// engine applies both, for every family.
  virtual bool reads_trials() const { return false; }
  /// f(y, η; m) and its derivatives as derivatives() gives them (that is, for m = 1).
  virtual void derivatives_trials(double y, double /*trials*/, double eta, int order,
                                  double* out) const {
    derivatives(y, eta, order, out);
  }
  /// The factor by which datum (y, m)'s constants exceed the family's (κ_n = scale·κ, and so
  /// for M1 … M4): 1 by default; the binomial's is m.
  virtual double datum_scale(double /*y*/, double /*trials*/) const { return 1.0; }
  /// A κ that grows with the response: datum y's is kappa()·kappa_scale(y) (times the factor
  /// above), where kappa_reads_response(). FlyMC alone reads it (scalable MH takes such a bound
  /// as a local envelope); the negative binomial's is y + r over logistic regression's 1/4.
  virtual bool kappa_reads_response() const { return false; }
  virtual double kappa_scale(double /*y*/) const { return 1.0; }

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
  std::optional<double> m2() const override { return 1.0; }
  bool same_as(const SingleIndexFamily& other) const override;
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
  std::optional<double> m2() const override { return precision_; }
  bool same_as(const SingleIndexFamily& other) const override;
  double simulate(double eta, Rng& rng) const override;
  double noise_scale() const noexcept { return scale_; }

 private:
  double scale_, precision_;
};

/// Binomial regression: y successes of m trials (m from the data's trials column, else 1), with
/// the logit link, f = y·η − m·log(1 + e^η), or the probit link, f = y·log Φ(η) + (m − y)·log Φ(−η)
/// (the constant log C(m, y) dropped). Per trial the constants are logistic or probit regression's;
/// a datum's are m times them (datum_scale). Without a trials column the responses are 0 or 1.
class BinomialFamily final : public SingleIndexFamily {
 public:
  enum class Link { logit, probit };
  explicit BinomialFamily(Link link) : link_(link) {}
  std::string name() const override {
    return link_ == Link::logit ? "binomial" : "binomial-probit";
  }
  std::string check_label(double y) const override;
  void derivatives(double y, double eta, int order, double* out) const override {
    derivatives_trials(y, 1.0, eta, order, out);
  }
  bool reads_trials() const override { return true; }
  void derivatives_trials(double y, double trials, double eta, int order,
                          double* out) const override;
  double datum_scale(double /*y*/, double trials) const override { return trials; }
  std::optional<double> kappa() const override;
  std::optional<double> m1() const override;
  std::optional<double> m2() const override;
  std::optional<double> m3() const override;
  std::optional<double> m4() const override;
  bool same_as(const SingleIndexFamily& other) const override;
  /// One trial: 1 with probability the link's inverse at η, else 0.
  double simulate(double eta, Rng& rng) const override;
  Link link() const noexcept { return link_; }

 private:
  /// One trial's family: logistic or probit regression.
  const SingleIndexFamily& trial() const;
  Link link_;
};

/// Poisson regression with the log link: counts y, f(y, η) = yη − e^η (log y! dropped). Every
/// derivative from the second on is −e^η, unbounded: no global constant exists, so FlyMC (no κ)
/// refuses it, and scalable MH runs on its local envelope |f⁽ᵏ⁾(y, η̂ + t)| = e^η̂·e^t ≤
/// e^η̂·e^|t|. An offset (the log of an exposure) comes from the data (Dataset::offsets()).
class PoissonFamily final : public SingleIndexFamily {
 public:
  std::string name() const override { return "poisson"; }
  std::string check_label(double y) const override;
  void derivatives(double y, double eta, int order, double* out) const override;
  bool has_envelope() const override { return true; }
  double envelope_scale(double, double eta_hat, int) const override { return std::exp(eta_hat); }
  double envelope_growth(int, double t) const override { return std::exp(t); }
  /// In closed form, −e^û·(E(h) − E(h2)) with E(h) = e^h − (1 + h + h²/2 [+ h³/6]): the terms in y
  /// cancel exactly, and E keeps its relative precision at small steps (a series there).
  double remainder_change(double y, double u_hat, double h, double h2, int order) const override;
  bool remainder_reads_response() const override { return false; }
  bool same_as(const SingleIndexFamily& other) const override;
  /// A Poisson(e^η) count: inversion below a mean of 10, Hörmann's transformed rejection (PTRS,
  /// 1993) above, both exact.
  double simulate(double eta, Rng& rng) const override;
};

/// Negative binomial regression with the log link and a known dispersion r > 0: counts y with
/// mean μ = e^η and variance μ + μ²/r, f(y, η) = yη − (y + r)·log(r + e^η) (terms free of η
/// dropped). Since log(r + e^η) = log r + softplus(η − log r), each η-derivative from the second
/// on is (y + r) times softplus's, so a datum's constants are (y + r) times logistic
/// regression's: κ_n = (y + r)/4, M3_n = (y + r)/(6√3), M4_n = (y + r)/8. No constant holds for
/// every y, so scalable MH takes the datum's through an envelope with no growth, and FlyMC its
/// κ_n as kappa() = 1/4 times kappa_scale(y) = y + r.
class NegBinomialFamily final : public SingleIndexFamily {
 public:
  /// @throw ConfigError unless r is finite and > 0.
  explicit NegBinomialFamily(double dispersion);
  std::string name() const override { return "negbin"; }
  std::string check_label(double y) const override;
  void derivatives(double y, double eta, int order, double* out) const override;
  bool has_envelope() const override { return true; }
  double envelope_scale(double y, double eta_hat, int k) const override;
  double envelope_growth(int, double) const override { return 1.0; }
  std::optional<double> kappa() const override { return 0.25; }
  bool kappa_reads_response() const override { return true; }
  double kappa_scale(double y) const override { return y + r_; }
  /// In u = η, from logistic regression's closed forms at ŵ = log r − û: the datum's y·η is
  /// linear and leaves no remainder, so the remainder is (y + r) times log σ's at ŵ, and a large
  /// count does not cost the digits that y·η would.
  Expansion expand(double y, double eta_hat, int order) const override;
  double remainder_change(double y, double u_hat, double h, double h2, int order) const override;
  bool same_as(const SingleIndexFamily& other) const override;
  /// A Poisson count whose rate is a Gamma(r, μ/r) draw (Marsaglia and Tsang's method).
  double simulate(double eta, Rng& rng) const override;
  double dispersion() const noexcept { return r_; }

 private:
  double r_, log_r_;
};

/// The family of a run: RunConfig::family for ModelKind::custom, the built-in one for
/// logistic, probit, gaussian (with cfg.noise_scale) and robust (Student-t, with
/// cfg.student_nu and cfg.noise_scale); null for softmax, which has several predictors a datum.
/// @throw ConfigError for ModelKind::custom without a family.
std::shared_ptr<const SingleIndexFamily> single_index_family(const RunConfig& cfg);

/// Datum n (a row of `data`) under `family`: w_n·f(y_n, u; m_n) and its first `order`
/// u-derivatives into out[0..order], with the data's weight and trials where they have them (u
/// already holds the datum's offset).
void datum_derivatives(const SingleIndexFamily& family, const Dataset& data, std::size_t n,
                       double u, int order, double* out);
/// Datum n's constants as multiples of the family's: w_n·datum_scale(y_n, m_n) (1 without
/// weights and trials).
double datum_constant_factor(const SingleIndexFamily& family, const Dataset& data, std::size_t n);

/// Throws ConfigError if the family lacks a constant `what` needs: "FlyMC" needs κ, "scalable
/// MH of order 2" M3, of order 3 M4, the piecewise-deterministic samplers M1 or M2. `need` is
/// 'k', '1', '2', '3' or '4'.
void require_constant(const SingleIndexFamily& family, char need, const std::string& what);

}  // namespace flymc
