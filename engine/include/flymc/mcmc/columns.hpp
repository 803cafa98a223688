#pragma once
/// @file columns.hpp
/// The columns of a draw row, declared once: Stan's sampler columns, flymc's two, then the
/// parameters (docs/output.md). Sampler columns end in "__", which is how readers (flymc summary,
/// rstan, posterior, ArviZ) tell them from parameters.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace flymc {

/// What the sampler reports with every kept draw.
struct SamplerRow {
  double lp = 0.0;           ///< log density targeted: log p(θ, z) for FlyMC
  double accept_stat = 0.0;  ///< mean acceptance probability since the last kept draw
  double stepsize = 0.0;     ///< the kernel's step size (slice: interval width)
  double n_bright = 0.0;     ///< bright data (N for regular MCMC)
  double n_queries = 0.0;    ///< likelihood queries since the last kept draw
};

/// The sampler columns' names, in SamplerRow's order.
inline constexpr std::array<std::string_view, 5> kSamplerColumns = {
    "lp__", "accept_stat__", "stepsize__", "n_bright__", "n_queries__"};

/// All column names of a draw row: the sampler columns, then the parameters.
inline std::vector<std::string> draw_columns(const std::vector<std::string>& params) {
  std::vector<std::string> cols(kSamplerColumns.begin(), kSamplerColumns.end());
  cols.insert(cols.end(), params.begin(), params.end());
  return cols;
}

/// Fills `row` (draw_columns' size) with the sampler values and θ (p values).
inline void fill_draw_row(const SamplerRow& s, const double* theta, std::size_t p,
                          std::vector<double>& row) {
  row[0] = s.lp;
  row[1] = s.accept_stat;
  row[2] = s.stepsize;
  row[3] = s.n_bright;
  row[4] = s.n_queries;
  for (std::size_t j = 0; j < p; ++j) row[kSamplerColumns.size() + j] = theta[j];
}

/// The parameter values of a row written by fill_draw_row.
inline const double* draw_params(const std::vector<double>& row) {
  return row.data() + kSamplerColumns.size();
}

}  // namespace flymc
