#include "job_group.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "commands.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/hdf5/hdf5.hpp"
#ifdef FLYMC_WITH_MPI
#include "flymc/mpi/mpi.hpp"
#endif

namespace flymc::cli {

#ifdef FLYMC_WITH_MPI
namespace {

/// Whether an MPI launcher started this process: Open MPI's mpirun, or a PMI/PMIx launcher
/// (MPICH's hydra, Slurm's srun). Without one, flymc does not initialise MPI at all, so a plain
/// `flymc sample` of an MPI build behaves as the default build's.
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

}  // namespace

JobGroup::JobGroup() {
  if (!launched_by_mpi()) return;
  int provided = 0;
  // Only the main thread calls MPI; oneTBB's workers never do.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (provided < MPI_THREAD_FUNNELED) {
    std::fprintf(stderr, "flymc: error: the MPI library does not support MPI_THREAD_FUNNELED\n");
    MPI_Abort(MPI_COMM_WORLD, 70);
  }
}

JobGroup::~JobGroup() {
  if (mpi_) MPI_Finalize();
}

void JobGroup::together(const std::function<void()>& f) const {
  if (mpi_) return mpi::agree(MPI_COMM_WORLD, f);
  f();
}

void JobGroup::leader_first(const std::function<void()>& f) const {
  if (!mpi_) return f();
  mpi::agree(MPI_COMM_WORLD, [&] {
    if (leader()) f();
  });
  mpi::agree(MPI_COMM_WORLD, [&] {
    if (!leader()) f();
  });
}

int JobGroup::from_leader(int v) const { return mpi_ ? mpi::broadcast(MPI_COMM_WORLD, v) : v; }

std::string JobGroup::from_leader(const std::string& s) const {
  if (!mpi_) return s;
  std::string out = s;
  out.resize(static_cast<std::size_t>(from_leader(static_cast<int>(s.size()))));
  MPI_Bcast(out.data(), static_cast<int>(out.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  return out;
}

std::shared_ptr<const Dataset> JobGroup::load(const std::string& path, LabelDomain labels,
                                              bool shard, Storage storage,
                                              const DataColumns& columns) const {
  if (mpi_ && shard && size_ > 1)
    return mpi::load_shard(
        MPI_COMM_WORLD, path, labels, storage,
        [&columns](const std::string& p, LabelDomain l, int part, int parts, Storage s) {
          return load_data_part(p, l, part, parts, s, columns);
        });
  std::shared_ptr<const Dataset> data;
  together(
      [&] { data = std::make_shared<const Dataset>(load_data(path, labels, storage, columns)); });
  return data;
}

RunResult JobGroup::run(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                        const SinkFactory& sinks, Progress* progress, const CheckpointOptions* ck,
                        const FaultInjection& faults, const Precomputed& pre) const {
  if (!mpi_) return flymc::run(cfg, std::move(data), sinks, progress, ck, faults, pre);
  if (data->shard() != nullptr) {
    RunResult r;
    together([&] {
      r = flymc::run(cfg, std::move(data), leader() ? sinks : SinkFactory{}, progress, ck, faults,
                     pre);
    });
    return r;
  }
  return mpi::run(MPI_COMM_WORLD, cfg, std::move(data), sinks, progress, ck, faults, pre);
}

void JobGroup::fail(std::exception_ptr e) const {
  if (!mpi_) std::rethrow_exception(e);
  try {
    std::rethrow_exception(e);
  } catch (const mpi::RankError& x) {
    if (leader()) std::fprintf(stderr, "flymc: error: %s\n", x.what());
    // A process that ends with a non-zero code makes mpirun end the others: not before the
    // leader has reported.
    MPI_Barrier(MPI_COMM_WORLD);
    throw ExitStatus{x.exit_code()};
  } catch (const ExitStatus&) {   // every process ends with it (a stopped run)
    MPI_Barrier(MPI_COMM_WORLD);  // after the leader has said why
    throw;
  } catch (const Error& x) {
    std::fprintf(stderr, "flymc: error: rank %d: %s\n", rank_, x.what());
    MPI_Abort(MPI_COMM_WORLD, x.exit_code());
  } catch (const std::exception& x) {
    std::fprintf(stderr, "flymc: internal error: rank %d: %s\n", rank_, x.what());
  } catch (...) {
    std::fprintf(stderr, "flymc: internal error: rank %d\n", rank_);
  }
  MPI_Abort(MPI_COMM_WORLD, 70);
  std::abort();  // MPI_Abort does not return
}

#else  // one process: every operation is a plain call

JobGroup::JobGroup() = default;
JobGroup::~JobGroup() = default;
void JobGroup::together(const std::function<void()>& f) const { f(); }
void JobGroup::leader_first(const std::function<void()>& f) const { f(); }
int JobGroup::from_leader(int v) const { return v; }
std::string JobGroup::from_leader(const std::string& s) const { return s; }
std::shared_ptr<const Dataset> JobGroup::load(const std::string& path, LabelDomain labels, bool,
                                              Storage storage, const DataColumns& columns) const {
  return std::make_shared<const Dataset>(load_data(path, labels, storage, columns));
}
RunResult JobGroup::run(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                        const SinkFactory& sinks, Progress* progress, const CheckpointOptions* ck,
                        const FaultInjection& faults, const Precomputed& pre) const {
  return flymc::run(cfg, std::move(data), sinks, progress, ck, faults, pre);
}
void JobGroup::fail(std::exception_ptr e) const { std::rethrow_exception(e); }

#endif

}  // namespace flymc::cli
