#pragma once
/// @file pdmp.hpp
/// The piecewise-deterministic (continuous-time) samplers on a single-index model, read through
/// its family (docs/math.md §7; the bounds need its M1 or M2, pdmp/bounds.hpp): the bouncy particle
/// sampler with the full gradient (`bps`) and with batch gradients under a Lipschitz bound
/// (`lipsbps`), the stochastic BPS with its adaptive band
/// (`sbps`) and its diagonally preconditioned variant (`psbps`), Zig-Zag with subsampling
/// (`zigzag-ss`) and with control variates at θ_MAP (`zigzag-cv`). bps, lipsbps and both
/// Zig-Zags are exact; sbps and psbps are approximate and count their bound violations.
///
/// The path is read off at equal time spacing: one draw per iteration, --warmup iterations of
/// path time discarded, then --iters kept (every --thin-th written), so the draw files and
/// diagnostics are those of the other samplers. Several chains run at once as run() runs them,
/// one random stream per (seed, chain id) and no reduction across threads, so the draws do not
/// depend on the thread count.
#include <memory>
#include <vector>

#include "flymc/mcmc/sampler.hpp"

namespace flymc {

/// The automatic time scale of a run (docs/math.md §7.5): the mean Laplace standard deviation
/// in the chains' coordinates u = T⁻¹θ (`transform` is T, lower triangular, empty for T = I;
/// with T a factor of the Laplace covariance it is 1), times √D for the BPS family, whose unit
/// speed is shared by D coordinates (a Zig-Zag coordinate moves at speed 1). The automatic
/// --pdmp-spacing is this, and the automatic --refresh-rate its inverse.
double pdmp_time_scale(Algo algo, const MapResult& map, const Mat& transform = {});

}  // namespace flymc
