#pragma once
/// @file run_part.hpp
/// One process's part of a run shared by several processes: a contiguous block of the run's
/// chains, and two collective operations through which the processes agree on errors and share
/// the set-up. flymc::mpi::run (flymc/mpi/mpi.hpp) builds a RunPart over an MPI communicator;
/// the core library itself needs no MPI.
///
/// A chain's draws depend only on (seed, chain id) and the set-up, so a chain run in a part is
/// bit-identical to the same chain of a one-process run when the set-up is: the leader finds the
/// MAP fit (or loads the checkpointed one) and shares it, and every process builds the bounds
/// from it, which is deterministic.
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "flymc/mcmc/sampler.hpp"

namespace flymc {

/// Chains `first` .. `first + count - 1` (1-based ids) of a run.
struct ChainBlock {
  int first = 1;
  int count = 0;
  friend bool operator==(const ChainBlock&, const ChainBlock&) = default;
};

/// The block of process `rank` (0-based) of `ranks` when `chains` chains are dealt in contiguous
/// blocks in rank order, the first `chains % ranks` processes taking one chain more.
/// @throw ConfigError unless 1 <= ranks <= chains and 0 <= rank < ranks.
ChainBlock deal_chains(int chains, int ranks, int rank);

/// What run_part() needs from the group of processes it runs in.
///
/// Thread safety: the functions are called only from the thread that called run_part().
struct RunPart {
  ChainBlock block;     ///< the chains this process runs
  bool leader = false;  ///< finds the MAP fit (or loads the checkpoint's) and writes the manifest
  /// Collective: every process calls it at the same points, in the same order, with its own
  /// error (null if none). It must throw on every process if any process passed an error, and
  /// return on every process otherwise.
  std::function<void(std::exception_ptr)> agree;
  /// Collective: replaces every process's manifest with the leader's, bit for bit (the MAP fit
  /// that every process builds its bounds from). flymc::mpi sends it in the checkpoint encoding
  /// (io/checkpoint.hpp), which carries a checksum.
  std::function<void(RunManifest&)> share;
  /// Collective, at each block's end of a run to an ESS target (RunConfig::ess): every process
  /// passes its chains' kept draws (a vector a chain, in chain order) and a flag; every process
  /// gets every chain's draws in chain order, and `flag` raised if any process raised it. May be
  /// empty for runs of a fixed length.
  std::function<std::vector<std::vector<double>>(const std::vector<std::vector<double>>&,
                                                 bool& flag)>
      gather;
};

/// run() for the chains of `part` only: RunResult::chains holds them in id order. Every process
/// of the group calls it with the same configuration and data (checked: ConfigError or
/// DataError on every process otherwise) and its own sinks (a sink for each of its chains) and
/// checkpoint options (the same directory: each chain reads and writes its own files there,
/// the leader the manifest). Before the chains start, any process's error is thrown on every
/// process; the chains' own errors are thrown on their process only, after its chains ended.
/// @throw ConfigError for approximate algorithms (they run in one process), and as run().
RunResult run_part(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                   const SinkFactory& sinks, Progress* progress,
                   const CheckpointOptions* checkpoint, const RunPart& part,
                   const FaultInjection& faults = {}, const Precomputed& pre = {});

}  // namespace flymc
