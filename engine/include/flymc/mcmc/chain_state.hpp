#pragma once
/// @file chain_state.hpp
/// One chain's complete state at an iteration boundary, as plain values: θ and what the kernels
/// cache about it, the bright set with its cached log L̃ (FlyMC), the θ-kernel's adaptation state,
/// the random stream, the counters, the loop's running sums and the timers. The chain loop
/// (engine/src/mcmc/fly/chain.hpp) saves its live objects into one and restores them from one; a
/// checkpoint file is one encoded (io/checkpoint.hpp). Restoring a state and running on gives
/// bit-identical draws to never having stopped.
#include <cstdint>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/mcmc/counters.hpp"

namespace flymc {

/// Where the chain loop is, and the sums it keeps between kept draws.
struct ChainTally {
  long iteration = 0;          ///< iterations completed, warm-up included
  long since_z = 0;            ///< θ-steps since the last z-sweep
  long window_steps = 0;       ///< θ-steps since the last kept row (its accept_stat__ window)
  double window_accept = 0.0;  ///< acceptance probabilities summed over that window
  double accept_sum = 0.0;     ///< ... over the sampling iterations
  double bright_sum = 0.0;     ///< bright counts summed over the sampling iterations
  std::uint64_t queries_at_sampling = 0;      ///< Counters::queries when sampling began
  std::uint64_t queries_at_row = 0;           ///< ... at the last kept row
  std::uint64_t divergences_at_sampling = 0;  ///< Counters::divergences when sampling began
};

/// The chain's own timers, summed over the sessions of a resumed run, and their wall-clock share:
/// each session's timer time divided by that session's concurrency min(chains, threads).
struct ChainTimers {
  double z_init = 0.0, warmup = 0.0, sampling = 0.0;
  double wall_z_init = 0.0, wall_warmup = 0.0, wall_sampling = 0.0;
};

/// A chain's state (see the file comment). For regular MCMC the bright-set fields are empty.
struct ChainState {
  int chain_id = 0;                 ///< 1-based
  bool finished = false;            ///< the chain completed; its draw file is complete
  std::uint64_t sink_position = 0;  ///< byte length of the chain's draw file at this state
  std::uint64_t kept = 0;           ///< kept draws written up to sink_position
  Rng::State rng{};
  std::vector<double> theta;  ///< dense θ
  double step_size = 0.0;
  /// ThetaKernel::save(): step size, dual averaging, metric and metric-adaptation sums.
  std::vector<double> kernel_state;
  ChainTally tally;
  Counters counters;  ///< the profile pointer is not part of the state
  ChainTimers timers;
  /// FlyMC: the bright indices in packed order (BrightSet::bright_indices()) and their cached
  /// log L̃ (as many, in the same order).
  std::vector<Index> bright;
  std::vector<double> log_ltilde;
  /// FlyMC with a gradient kernel (MALA, HMC, NUTS): the gradient at θ as the chain holds it (P
  /// entries; a z-sweep updates it incrementally) and the bright data's cached ∂ log L̃_n/∂ψ_n
  /// (bright.size() × K); empty otherwise.
  std::vector<double> grad, coefs;
};

}  // namespace flymc
