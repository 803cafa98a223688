#pragma once
/// @file mpi.hpp
/// The chains of one run shared between the processes of an MPI communicator (library
/// `flymc::mpi`, built with -DFLYMC_MPI=ON; docs/mpi.md). The chains are dealt to the processes
/// in contiguous blocks (deal_chains(), run_part.hpp), and each process runs its block on its
/// own oneTBB arena. A chain's random stream is keyed by (seed, chain id), and every process
/// builds its bounds from rank 0's MAP fit, so the draws are bit-identical to a one-process run
/// with the same seed and chain count, whatever the number of processes.
///
/// Works on any communicator, e.g. one of MPI_Comm_split's: only its processes take part. MPI
/// must be initialised; calls are made only from the calling thread, so MPI_THREAD_FUNNELED is
/// enough.
#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/row_link.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc::mpi {

/// An error that every process of a communicator throws together (agree()): raised on the
/// process `rank`, with that process's message and exit code. Since every process throws it,
/// none is left waiting in a collective call, and a program may end normally.
class RankError : public Error {
 public:
  RankError(const std::string& what, int code, int rank) : Error(what, code), rank_(rank) {}
  /// The lowest rank on which the error was raised.
  int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// Collective over `comm`: runs `f` on every process, then throws RankError on every process if
/// `f` threw on any (the error of the lowest such rank, a flymc::Error's code or 70), and
/// returns on every process otherwise.
void agree(MPI_Comm comm, const std::function<void()>& f);

/// Collective over `comm`: rank 0's `value` on every process.
int broadcast(MPI_Comm comm, int value);

/// A RowLink over a duplicate of `comm` (collective: MPI_Comm_dup): part r is rank r
/// (data/row_fold.hpp). Free it before MPI_Finalize, or it is left to the finalization.
std::shared_ptr<RowLink> row_link(MPI_Comm comm);

/// This process's part of a data file's rows (an NPY file's, or an HDF5 data set's through
/// load_data_part; shard_rows(): runs of whole reduction chunks dealt in rank order), as a shard of
/// the whole data set linked over `comm`. Only those rows are read. The data-wide sums of the
/// set-up over it (LogisticModel::find_map, its bound statistics) are then collective over `comm`
/// and give every process one process's result bit for bit. Collective. @throw RankError on every
/// process if any part of the file is bad, or if the
///   parts' binary labels use both codings (as load_npy would say; when one part mixes them
///   after another part's other coding, the row named may differ from load_npy's).
/// Everything that sums over the shard (find_map, the bounds) is collective; an error inside a
/// fold on one rank is thrown on every rank (data/row_fold.hpp). Building a model on a shard
/// checks its own rows only, so build it inside agree(), or one rank's error leaves the others
/// waiting in the next fold.
/// Scalable MH samples a shard: every process calls flymc::run() with the same configuration
/// (all chains, which run in turn, each proposal's test collective) and gets the one-process
/// draws; the other samplers refuse a shard (ConfigError).
/// `load_part` reads one process's part (load_npy_part; the command line passes
/// load_data_part, flymc/hdf5/hdf5.hpp, which also reads HDF5 data sets).
using PartLoader = std::function<FilePart(const std::string& path, LabelDomain labels, int part,
                                          int parts, Storage storage)>;
std::shared_ptr<const Dataset> load_shard(MPI_Comm comm, const std::string& path,
                                          LabelDomain labels, Storage storage = Storage::f64,
                                          const PartLoader& load_part = load_npy_part);

/// Runs the `cfg.chains` chains of one run on the processes of `comm` (collective). Every
/// process passes the same configuration and the same data (checked), its own sinks (each makes
/// the sinks of its chains, e.g. stan_csv_sinks() into one shared directory) and, to checkpoint,
/// options naming one directory that every process can read and write: each chain keeps its own
/// state there, rank 0 the run's manifest. A resumed run may use another number of processes.
/// `progress`, if given, is sized cfg.chains; a process advances the entries of its chains.
/// @return on rank 0: the whole run, every chain in id order, with the longest wall times of
///   any process and `stopped` if any chain stopped; elsewhere: the process's own chains.
/// @throw RankError on every process if any process failed (configuration, data, checkpoint,
///   or a chain's error after the process's chains ended); ConfigError as RankError if
///   `cfg.chains` is smaller than the number of processes or the algorithm is approximate.
/// `faults`: as flymc::run()'s, on every process.
RunResult run(MPI_Comm comm, const RunConfig& cfg, std::shared_ptr<const Dataset> data,
              const SinkFactory& sinks = {}, Progress* progress = nullptr,
              const CheckpointOptions* checkpoint = nullptr, const FaultInjection& faults = {},
              const Precomputed& pre = {});

}  // namespace flymc::mpi
