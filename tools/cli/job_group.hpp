#pragma once
// The processes that run one `flymc sample` job: this process alone, or, in a build with
// -DFLYMC_MPI=ON started by an MPI launcher (mpirun, srun), every process of MPI_COMM_WORLD, the
// run's chains dealt between them (flymc/mpi/mpi.hpp, docs/mpi.md). The leader (rank 0) owns
// the output directory (its lock, clearing an earlier run, summary.json); every process writes
// its own chains' files. Alone, every operation is a plain call, so the job runs as without MPI.
#include <functional>
#include <memory>
#include <string>

#include "flymc/data/columns.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc::cli {

class JobGroup {
 public:
  /// Initialises MPI when an MPI launcher started this process (in an MPI build).
  JobGroup();
  /// Finalises MPI if it was initialised.
  ~JobGroup();
  JobGroup(const JobGroup&) = delete;
  JobGroup& operator=(const JobGroup&) = delete;

  bool leader() const noexcept { return rank_ == 0; }
  int size() const noexcept { return mpi_ ? size_ : 1; }

  /// Runs f on every process, and throws on every process if it threw on any.
  void together(const std::function<void()>& f) const;
  /// Runs f on the leader, then (if it succeeded) on the others.
  void leader_first(const std::function<void()>& f) const;
  /// The leader's value, on every process.
  int from_leader(int v) const;
  std::string from_leader(const std::string& s) const;

  /// The data file, read by every process. With `shard` in a group, each process reads only its
  /// part of an .npy file's or HDF5 data set's rows (flymc::mpi::load_shard); alone, `shard`
  /// changes nothing. `columns`: the response, weight, trials and offset columns (load_data).
  std::shared_ptr<const Dataset> load(const std::string& path, LabelDomain labels, bool shard,
                                      Storage storage, const DataColumns& columns = {}) const;

  /// Runs the job's chains: all of them alone, this process's block in a group; on the leader,
  /// the whole run (flymc::mpi::run). On a shard of the data every process runs every chain
  /// (their iterations are collective) and only the leader writes the draw files.
  RunResult run(const RunConfig& cfg, std::shared_ptr<const Dataset> data, const SinkFactory& sinks,
                Progress* progress, const CheckpointOptions* ck, const FaultInjection& faults,
                const Precomputed& pre = {}) const;

  /// Ends the job after `e`. Alone, rethrows it. In a group, an error every process has (agreed)
  /// is reported by the leader, and every process ends with its exit code; any other error is
  /// reported with the process's rank and aborts every process (MPI_Abort), since the others may be
  /// waiting for this one.
  [[noreturn]] void fail(std::exception_ptr e) const;

 private:
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;  // MPI initialised by this object
};

}  // namespace flymc::cli
