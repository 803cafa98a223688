#pragma once
/// @file bounds.hpp
/// The event-rate bounds of the exact piecewise-deterministic samplers on a single-index model
/// with a N(0, Q⁻¹) prior (docs/math.md §7.1–7.2, §7.6), read through its family
/// (models/family.hpp). Potential U = U_0 + Σ_i U_i with U_0(θ) = θᵀQθ/2 and
/// U_i(θ) = −f(y_i, x_i·θ), so ∇U_i = c_i x_i with c_i = −f'(y_i, x_i·θ), |c_i| ≤ M1, and c_i
/// has slope at most M2 in x_i·θ (logistic regression: M1 = 1, M2 = 1/4). Q = I/σ² for the
/// sampler in θ; in the preconditioned coordinates u = T⁻¹θ the features are Tᵀx and
/// Q = TᵀT/σ², dense unless T is diagonal.
///
/// Every bound is [a + b·s]_+ along the segment θ + w·s, s ≥ 0, from the segment's start: the
/// prior's part of the rate is affine in s (its gradient Qθ grows along the ray), the
/// likelihood's part is bounded by a constant (BPS, lipSBPS, Zig-Zag with subsampling) or grows
/// at most linearly with the distance from θ_MAP (Zig-Zag with control variates).
///
/// Thread safety: immutable after make(); shared read-only by all chains.
#include <cstddef>
#include <vector>

#include "flymc/core/alias_table.hpp"
#include "flymc/core/memory.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/model.hpp"

namespace flymc::pdmp {

/// Per-datum constants, read at scattered data by the proposals (hence huge pages when large).
using PerDatum = std::vector<double, HugePageAllocator<double>>;

/// The event rate bound [a + b·s]_+ of one segment, s the time since its start.
struct AffineBound {
  double a = 0.0, b = 0.0;
  double at(double s) const noexcept { return a + b * s > 0.0 ? a + b * s : 0.0; }
};

/// What the bounds need of the data, the family and θ_MAP, computed once per run.
struct PdmpConstants {
  std::size_t n = 0, p = 0;
  /// The family's M1 ≥ |f'| and M2 ≥ |f''| (0 where it gives none: the samplers that need one
  /// are refused before a run starts, check_model_fits).
  double m1 = 0.0, m2 = 0.0;
  /// The prior's precision: precision·I when q is empty (the sampler in θ), else the matrix q
  /// (the preconditioned coordinates). The scalar case keeps its own arithmetic, so that the
  /// unpreconditioned samplers' draws do not change with the matrix code.
  double precision = 1.0;
  Mat q;
  std::vector<double> slope;         ///< per coordinate j: Σ_k |Q_jk|, the prior rate's growth
  double sum_norm = 0.0;             ///< Σ_i ‖x_i‖
  double max_norm = 0.0;             ///< max_i ‖x_i‖
  PerDatum norm;                     ///< per datum: ‖x_i‖
  std::vector<double> theta_map;     ///< θ* of the control variates
  std::vector<double> grad_lik_map;  ///< ∇ Σ_i U_i(θ*)
  PerDatum coef_map;                 ///< c_i(θ*) per datum
  /// M = Q + M2·Σ_i x_i x_iᵀ ≥ ∇²U everywhere (BPS with the full gradient; empty unless
  /// fill_curvature() ran).
  Mat curvature;
  /// Zig-Zag: per coordinate j, the datum of a proposal is drawn with probability w_ij / W_j,
  /// w_ij = |x_ij| (subsampling) or |x_ij|·‖x_i‖ (control variates); W_j = pick[j].total(). A
  /// coordinate whose weights are all 0 has an empty table: its data never move its rate.
  /// Empty unless fill_zigzag() ran.
  std::vector<AliasTable> pick;
  /// lipSBPS: a batch's data are drawn with probability ‖x_i‖ / Σ_k ‖x_k‖ (empty when every
  /// ‖x_i‖ is 0; then the likelihood is flat). Empty unless fill_lipsbps() ran.
  AliasTable by_norm;

  /// (Qθ)_j, the prior's part of ∂_j U.
  double prior_grad(std::size_t j, const double* theta) const noexcept;
  /// g[0..p) += Qθ.
  void add_prior_grad(const double* theta, double* g) const noexcept;

  /// Computes the constants (one pass over the data, N gradient evaluations at θ*). The prior's
  /// precision is `q` (empty: `precision` times I).
  static PdmpConstants make(const Dataset& data, const SingleIndexFamily& family, double precision,
                            const Vec& theta_map, const Mat& q = {});
  /// Computes `curvature` from the data (one GEMM, O(N·p²)).
  void fill_curvature(const Dataset& data);
  /// Builds `pick` for Zig-Zag with (control_variates) or without control variates (O(N·p)
  /// time, 16·N·p bytes).
  void fill_zigzag(const Dataset& data, bool control_variates);
  /// Builds `by_norm` for lipSBPS (O(N) time, 16·N bytes).
  void fill_lipsbps();
  /// W_j of pick[j], 0 for an empty table.
  double pick_total(std::size_t j) const noexcept {
    return pick[j].size() == 0 ? 0.0 : pick[j].total();
  }
};

/// BPS and lipSBPS: [w·∇Û(θ + w·s)]_+ ≤ [|w|·lik + wᵀQθ + wᵀQw·s]_+ for any estimate Û
/// whose likelihood part satisfies |w·∇Û_lik| ≤ |w|·lik: lik = M1·Σ_i ‖x_i‖ for the full
/// gradient and for lipSBPS's batch mean of ∇U_i·Σ_k‖x_k‖/‖x_i‖ over data drawn by ‖x_i‖ (each
/// term's size is at most M1·Σ_k ‖x_k‖, since |c_i| ≤ M1).
AffineBound bps_bound(const PdmpConstants& c, double lik, const double* theta,
                      const double* w) noexcept;

/// BPS with the full gradient, from a point where ∇U = g is known: along θ + w·s the rate's
/// derivative is wᵀ∇²U w ≤ wᵀMw (c.curvature), so [w·∇U(θ + w·s)]_+ ≤ [w·g + wᵀMw·s]_+. Tight
/// at s = 0, unlike bps_bound's, and a rejected proposal restarts it from the proposal's g.
AffineBound bps_curvature_bound(const PdmpConstants& c, const double* g, const double* w) noexcept;

/// Zig-Zag with subsampling, coordinate j, velocity v_j = ±1: with J drawn with probability
/// |x_Jj|/W_j, the estimate E_j = (Qθ)_j + c_J x_Jj·W_j/|x_Jj| satisfies
/// [v_j E_j]_+ ≤ [M1·W_j + v_j (Qθ)_j + slope_j·s]_+ whatever the other coordinates' velocities
/// do along the way (|v_k| = 1).
AffineBound zigzag_ss_bound(const PdmpConstants& c, std::size_t j, const double* theta,
                            const double* v) noexcept;

/// Zig-Zag with control variates, coordinate j, J drawn with probability |x_Jj|‖x_J‖/W_j:
/// E_j = (Qθ)_j + ∂_j U_lik(θ*) + (c_J(θ) − c_J(θ*))·x_Jj·W_j/(|x_Jj|‖x_J‖), whose last term is
/// at most C_j·‖θ − θ*‖ with C_j = M2·W_j (c_J is M2-Lipschitz in x_J·θ), and
/// ‖θ + v·s − θ*‖ ≤ ‖θ − θ*‖ + √p·s: a = v_j (Qθ)_j + v_j ∂_j U_lik(θ*) + C_j·dist,
/// b = slope_j + C_j·√p, where dist = ‖θ − θ*‖.
AffineBound zigzag_cv_bound(const PdmpConstants& c, std::size_t j, const double* theta,
                            const double* v, double dist) noexcept;

/// c_i(θ) = −f'(y_i, a) for the dot product a = x_i·θ.
double datum_coef(const SingleIndexFamily& family, double y, double dot) noexcept;

}  // namespace flymc::pdmp
