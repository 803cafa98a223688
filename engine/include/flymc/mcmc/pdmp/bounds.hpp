#pragma once
/// @file bounds.hpp
/// The event-rate bounds of the exact piecewise-deterministic samplers on logistic regression
/// with a N(0, Q⁻¹) prior, Q = diag(λ_j) (docs/math.md §7.1–7.2, §7.6). Potential
/// U = U_0 + Σ_i U_i with U_0(θ) = θᵀQθ/2 and U_i(θ) = −log σ(t_i x_i·θ), so ∇U_i = c_i x_i with
/// c_i = −t_i σ(−t_i x_i·θ), |c_i| < 1, and c_i has slope at most 1/4 in x_i·θ. λ_j = 1/σ² for
/// the sampler in θ; in the preconditioned coordinates u = S⁻¹θ the features are S x and
/// λ_j = s_j²/σ².
///
/// Every bound is [a + b·s]_+ along the segment θ + w·s, s ≥ 0, from the segment's start: the
/// prior's part of the rate is affine in s (its gradient Qθ grows along the ray), the
/// likelihood's part is bounded by a constant (BPS, lipSBPS, Zig-Zag with subsampling) or grows
/// at most linearly with the distance from θ_MAP (Zig-Zag with control variates).
///
/// Thread safety: immutable after make(); shared read-only by all chains.
#include <cstddef>
#include <vector>

#include "flymc/models/logistic.hpp"

namespace flymc::pdmp {

/// The event rate bound [a + b·s]_+ of one segment, s the time since its start.
struct AffineBound {
  double a = 0.0, b = 0.0;
  double at(double s) const noexcept { return a + b * s > 0.0 ? a + b * s : 0.0; }
};

/// What the bounds need of the data and of θ_MAP, computed once per run.
struct LogisticPdmpConstants {
  std::size_t n = 0, p = 0;
  /// The prior's precision λ_j = precision·weight[j]: 1/σ² times a per-coordinate weight (all
  /// ones in θ). Kept factored so that unit weights do the scalar prior's arithmetic exactly.
  double precision = 1.0;
  std::vector<double> weight;
  double sum_norm = 0.0;             ///< Σ_i ‖x_i‖
  double max_norm = 0.0;             ///< max_i ‖x_i‖
  std::vector<double> max_abs;       ///< per coordinate j: max_i |x_ij|
  std::vector<double> cv;            ///< per coordinate j: C_j = (N/4)·max_i |x_ij|·‖x_i‖
  std::vector<double> theta_map;     ///< θ* of the control variates
  std::vector<double> grad_lik_map;  ///< ∇ Σ_i U_i(θ*)
  std::vector<double> coef_map;      ///< c_i(θ*) per datum

  /// λ_j of the prior.
  double prec(std::size_t j) const noexcept { return precision * weight[j]; }

  /// Computes the constants (one pass over the data, N gradient evaluations at θ*). The prior's
  /// precision is the model's times `weight` (empty: all ones).
  static LogisticPdmpConstants make(const LogisticModel& model, const Vec& theta_map,
                                    const std::vector<double>& weight = {});
};

/// BPS and lipSBPS: [w·∇Û(θ + w·s)]_+ ≤ [|w|·lik + wᵀQθ + wᵀQw·s]_+ for any estimate Û
/// whose likelihood part satisfies |w·∇Û_lik| ≤ |w|·lik: lik = Σ_i ‖x_i‖ for the full gradient,
/// N·max_i ‖x_i‖ for a batch mean scaled by N.
AffineBound bps_bound(const LogisticPdmpConstants& c, double lik, const double* theta,
                      const double* w) noexcept;

/// Zig-Zag with subsampling, coordinate j, velocity v_j = ±1: the estimate
/// E_j = λ_j θ_j + N·c_J x_Jj satisfies [v_j E_j]_+ ≤ [N·max_i |x_ij| + λ_j (v_j θ_j + s)]_+.
AffineBound zigzag_ss_bound(const LogisticPdmpConstants& c, std::size_t j, const double* theta,
                            const double* v) noexcept;

/// Zig-Zag with control variates, coordinate j: E_j = λ_j θ_j + ∂_j U_lik(θ*) +
/// N·(c_J(θ) − c_J(θ*))·x_Jj, with |N·(c_J(θ) − c_J(θ*))·x_Jj| ≤ C_j·‖θ − θ*‖ and
/// ‖θ + v·s − θ*‖ ≤ ‖θ − θ*‖ + √p·s: a = λ_j v_j θ_j + v_j ∂_j U_lik(θ*) + C_j·dist,
/// b = λ_j + C_j·√p, where dist = ‖θ − θ*‖.
AffineBound zigzag_cv_bound(const LogisticPdmpConstants& c, std::size_t j, const double* theta,
                            const double* v, double dist) noexcept;

/// c_i(θ) = −t_i σ(−t_i a) for the dot product a = x_i·θ, from the stable log-sigmoid.
double logistic_coef(double label, double dot) noexcept;

}  // namespace flymc::pdmp
