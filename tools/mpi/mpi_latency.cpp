// flymc-mpi-latency: the latency of one MPI_Allreduce (sum) of a few doubles, the collective a
// data-sharded FlyMC would need once per θ-step (docs/mpi.md). Run it as
//   mpirun -np 2 flymc-mpi-latency [doubles ...]
// Batches of allreduces are timed after a warm-up; rank 0 prints the median and the fastest
// batch's mean time per allreduce, for each payload size.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kWarmup = 2000, kBatches = 25, kPerBatch = 2000;

/// Mean seconds per allreduce of each timed batch.
std::vector<double> time_batches(int doubles) {
  std::vector<double> in(static_cast<std::size_t>(doubles), 1.0), out(in.size());
  auto once = [&] {
    MPI_Allreduce(in.data(), out.data(), doubles, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  };
  for (int i = 0; i < kWarmup; ++i) once();
  std::vector<double> batches;
  for (int b = 0; b < kBatches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPerBatch; ++i) once();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    batches.push_back(dt.count() / kPerBatch);
  }
  return batches;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::max(1, std::atoi(argv[i])));
  if (sizes.empty()) sizes = {1, 4, 16};
  for (const int k : sizes) {
    std::vector<double> t = time_batches(k);
    std::sort(t.begin(), t.end());
    if (rank == 0)
      std::printf("allreduce of %2d doubles over %d ranks: median %.2f us, best batch %.2f us\n", k,
                  size, 1e6 * t[t.size() / 2], 1e6 * t.front());
  }
  MPI_Finalize();
  return 0;
}
