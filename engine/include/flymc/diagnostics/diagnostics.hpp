#pragma once
/// @file diagnostics.hpp
/// MCMC convergence diagnostics computed exactly as R's `posterior` package (version 1.4.0) does:
/// rank-normalized split-R̂, bulk and tail effective sample sizes, Monte Carlo standard error of
/// the mean and type-7 quantiles (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021,
/// "Rank-normalization, folding, and localization: an improved R̂ for assessing convergence of
/// MCMC", Bayesian Analysis 16(2):667-718).
///
/// Wherever posterior returns NA (too few draws, constant draws, NaN or infinite draws where
/// posterior refuses them) these functions return a quiet NaN. Chains of unequal length throw
/// flymc::Error; a probability outside [0, 1] passed to quantile() throws flymc::Error.
#include <vector>

namespace flymc {

/// draws[c][i]: chain c, iteration i, one scalar quantity. All chains the same length.
using ChainDraws = std::vector<std::vector<double>>;

/// max of rank-normalized split-R̂ and folded split-R̂ (posterior::rhat).
double rhat(const ChainDraws& x);
/// Bulk effective sample size: ESS of the rank-normalized split chains (posterior::ess_bulk).
double ess_bulk(const ChainDraws& x);
/// Tail effective sample size: min of the ESS of the 5% and 95% quantile indicators
/// (posterior::ess_tail).
double ess_tail(const ChainDraws& x);
/// ESS of the split chains without rank normalization (posterior::ess_mean).
double ess_mean(const ChainDraws& x);
/// sd(all draws) / sqrt(ess_mean) (posterior::mcse_mean).
double mcse_mean(const ChainDraws& x);
/// Quantile of all pooled draws, R's type 7 (posterior::quantile2 default). NaN if any draw is NaN
/// or there are no draws.
double quantile(const ChainDraws& x, double p);

/// posterior::summarise_draws-style summary of one quantity. sd is R's sd over all pooled draws;
/// q5, q50, q95 are quantile(x, 0.05 / 0.5 / 0.95).
struct ParamSummary {
  double mean, sd, mcse_mean, q5, q50, q95, ess_bulk, ess_tail, rhat;
};
ParamSummary summarize(const ChainDraws& x);

namespace detail {
/// Inverse of the standard normal CDF (R's qnorm(p)), Wichura's algorithm AS241 (PPND16).
/// Returns -inf at 0, +inf at 1 and NaN outside [0, 1].
double normal_quantile(double p);
}  // namespace detail

}  // namespace flymc
