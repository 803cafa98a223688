#pragma once
/// @file columns.hpp
/// The columns of a draw row, declared once: Stan's sampler columns (with NUTS, Stan's NUTS
/// columns), flymc's two, then the parameters (docs/output.md). Sampler columns end in "__",
/// which is how readers (flymc summary, rstan, posterior, ArviZ) tell them from parameters.
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flymc/core/config.hpp"

namespace flymc {

/// What the sampler reports with every kept draw.
struct SamplerRow {
  double lp = 0.0;           ///< log density targeted: log p(θ, z) for FlyMC
  double accept_stat = 0.0;  ///< mean acceptance probability since the last kept draw
  double stepsize = 0.0;     ///< the kernel's step size (slice: interval width)
  // NUTS only, of the kept draw's own transition (as Stan writes them, thinned or not).
  double treedepth = 0.0;   ///< doublings of the trajectory
  double n_leapfrog = 0.0;  ///< leapfrog steps of the trajectory
  double divergent = 0.0;   ///< 1 if the trajectory diverged, else 0
  double energy = 0.0;      ///< the Hamiltonian at the draw
  double n_bright = 0.0;    ///< bright data (N for regular MCMC)
  double n_queries = 0.0;   ///< likelihood queries since the last kept draw
  /// Approximate samplers only: mean data per batch since the last kept draw.
  double batch = 0.0;
  // Piecewise-deterministic samplers only, since the last kept draw:
  double n_events = 0.0;    ///< accepted events (bounces, flips)
  double violations = 0.0;  ///< proposals whose rate exceeded the bound (SBPS's bias diagnostic)
};

/// The sampler columns' names, in SamplerRow's order: every kernel but NUTS ...
inline constexpr std::array<std::string_view, 5> kSamplerColumns = {
    "lp__", "accept_stat__", "stepsize__", "n_bright__", "n_queries__"};
/// ... and NUTS, with Stan's NUTS columns after stepsize__ in Stan's order.
inline constexpr std::array<std::string_view, 9> kNutsSamplerColumns = {
    "lp__",        "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__",
    "divergent__", "energy__",      "n_bright__", "n_queries__"};

/// ... and the approximate subsampling samplers (minibatch MH, SGLD): no bright set, and the
/// mean batch size in its place.
inline constexpr std::array<std::string_view, 5> kApproxSamplerColumns = {
    "lp__", "accept_stat__", "stepsize__", "batch__", "n_queries__"};

/// ... and the piecewise-deterministic samplers (docs/math.md §7): stepsize__ is the path time
/// between draws, accept_stat__ the fraction of accepted event proposals.
inline constexpr std::array<std::string_view, 6> kPdmpSamplerColumns = {
    "lp__", "accept_stat__", "stepsize__", "n_events__", "n_queries__", "bound_violations__"};

/// ... and scalable MH (docs/math.md §8): stepsize__ is ρ (pcn) or the step in the whitened
/// coordinates (rw); since the last kept draw, n_candidates__ counts the data whose remainder
/// factor was evaluated, rejects_quadratic__ and rejects_data__ the proposals each kind of factor
/// rejected, bound_violations__ the remainders found above their bound (never expected).
inline constexpr std::array<std::string_view, 8> kSmhSamplerColumns = {
    "lp__",        "accept_stat__",       "stepsize__",     "n_candidates__",
    "n_queries__", "rejects_quadratic__", "rejects_data__", "bound_violations__"};

/// The sampler columns of a run with θ-kernel `kernel`.
inline std::span<const std::string_view> sampler_columns(KernelKind kernel) noexcept {
  if (kernel == KernelKind::nuts) return kNutsSamplerColumns;
  return kSamplerColumns;
}

/// The sampler columns `sampler`, then the parameters.
inline std::vector<std::string> join_columns(std::span<const std::string_view> sampler,
                                             const std::vector<std::string>& params) {
  std::vector<std::string> cols(sampler.begin(), sampler.end());
  cols.insert(cols.end(), params.begin(), params.end());
  return cols;
}

/// All column names of a draw row: the sampler columns, then the parameters.
inline std::vector<std::string> draw_columns(KernelKind kernel,
                                             const std::vector<std::string>& params) {
  return join_columns(sampler_columns(kernel), params);
}

/// All column names of an approximate sampler's draw row.
inline std::vector<std::string> approx_draw_columns(const std::vector<std::string>& params) {
  return join_columns(kApproxSamplerColumns, params);
}

/// All column names of a scalable MH draw row.
inline std::vector<std::string> smh_draw_columns(const std::vector<std::string>& params) {
  return join_columns(kSmhSamplerColumns, params);
}

/// All column names of a piecewise-deterministic sampler's draw row.
inline std::vector<std::string> pdmp_draw_columns(const std::vector<std::string>& params) {
  return join_columns(kPdmpSamplerColumns, params);
}

/// Fills `row` (pdmp_draw_columns' size) with a piecewise-deterministic sampler's values and θ.
inline void fill_pdmp_draw_row(const SamplerRow& s, const double* theta, std::size_t p,
                               std::vector<double>& row) {
  row[0] = s.lp;
  row[1] = s.accept_stat;
  row[2] = s.stepsize;
  row[3] = s.n_events;
  row[4] = s.n_queries;
  row[5] = s.violations;
  for (std::size_t j = 0; j < p; ++j) row[kPdmpSamplerColumns.size() + j] = theta[j];
}

/// Fills `row` (approx_draw_columns' size) with an approximate sampler's values and θ.
inline void fill_approx_draw_row(const SamplerRow& s, const double* theta, std::size_t p,
                                 std::vector<double>& row) {
  row[0] = s.lp;
  row[1] = s.accept_stat;
  row[2] = s.stepsize;
  row[3] = s.batch;
  row[4] = s.n_queries;
  for (std::size_t j = 0; j < p; ++j) row[kApproxSamplerColumns.size() + j] = theta[j];
}

/// Fills `row` (draw_columns' size) with the sampler values and θ (p values).
inline void fill_draw_row(KernelKind kernel, const SamplerRow& s, const double* theta,
                          std::size_t p, std::vector<double>& row) {
  std::size_t i = 0;
  row[i++] = s.lp;
  row[i++] = s.accept_stat;
  row[i++] = s.stepsize;
  if (kernel == KernelKind::nuts) {
    row[i++] = s.treedepth;
    row[i++] = s.n_leapfrog;
    row[i++] = s.divergent;
    row[i++] = s.energy;
  }
  row[i++] = s.n_bright;
  row[i++] = s.n_queries;
  for (std::size_t j = 0; j < p; ++j) row[i + j] = theta[j];
}

/// The parameter values of a row written by fill_draw_row.
inline const double* draw_params(KernelKind kernel, const std::vector<double>& row) {
  return row.data() + sampler_columns(kernel).size();
}

}  // namespace flymc
