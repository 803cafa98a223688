// flymc::mpi::run on sub-communicators: the processes of MPI_COMM_WORLD split into two groups
// (ranks 0-1 and the rest), each running its own run of 3 chains on in-memory data. On each
// group's rank 0 the pooled chains must equal flymc::run()'s in one process, bit for bit.
// Run with `mpirun -np 3 mpi_consumer` (any number of processes >= 2 works).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <flymc/flymc.hpp>
#include <flymc/mpi/mpi.hpp>
#include <memory>

namespace {

std::shared_ptr<const flymc::Dataset> make_data() {
  auto ds = std::make_shared<flymc::Dataset>(2000, 3, "mpi-consumer");
  flymc::Rng rng(1, 0);
  for (std::size_t i = 0; i < ds->n(); ++i) {
    ds->mutable_row(i)[0] = rng.normal();
    ds->mutable_row(i)[1] = rng.normal();
    ds->mutable_row(i)[2] = 1.0;
    const double a = 1.5 * ds->row(i)[0] - ds->row(i)[1];
    ds->mutable_y()[i] = rng.uniform() < 1.0 / (1.0 + std::exp(-a)) ? 1.0 : -1.0;
  }
  return ds;
}

int check(MPI_Comm group, int world_rank) {
  const auto data = make_data();
  flymc::RunConfig cfg;
  cfg.algo = flymc::Algo::flymc;  // FlyMC for exactly 1,000 iterations (the default is auto to
  cfg.ess = 0.0;                  // an ESS target)
  cfg.chains = 3;
  cfg.warmup = 300;
  cfg.iters = 1000;
  cfg.threads = 1;
  cfg.seed = 11;
  const flymc::RunResult r = flymc::mpi::run(group, cfg, data);
  int rank = 0, size = 0;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &size);
  if (rank != 0) return 0;
  const flymc::RunResult one = flymc::run(cfg, data);
  bool same = r.chains.size() == one.chains.size();
  for (std::size_t c = 0; same && c < one.chains.size(); ++c)
    same = r.chains[c].chain_id == one.chains[c].chain_id &&
           r.chains[c].draws == one.chains[c].draws && r.chains[c].lp == one.chains[c].lp;
  std::printf("mpi_consumer: world rank %d leads a group of %d: %zu chains, %s\n", world_rank, size,
              r.chains.size(), same ? "bit-identical to one process" : "DIFFERENT");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : 1, rank, &group);
  int bad = 0;
  try {
    bad = check(group, rank);
  } catch (const flymc::Error& e) {  // thrown on every process of the group (RankError)
    std::fprintf(stderr, "mpi_consumer: rank %d: %s\n", rank, e.what());
    bad = 1;
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Comm_free(&group);
  MPI_Finalize();
  return any;
}
