#pragma once
// Point-to-point and broadcast helpers shared by the files of flymc::mpi (private).
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace flymc::mpi {

inline int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
inline int size_of(MPI_Comm comm) {
  int s = 0;
  MPI_Comm_size(comm, &s);
  return s;
}

/// MPI counts are ints: large buffers travel in pieces of at most this many bytes.
constexpr std::size_t kPiece = std::size_t{1} << 30;

inline void bcast_bytes(MPI_Comm comm, int root, void* data, std::size_t bytes) {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t at = 0; at < bytes; at += kPiece)
    MPI_Bcast(p + at, static_cast<int>(std::min(kPiece, bytes - at)), MPI_BYTE, root, comm);
}

template <class T>
void send_vector(MPI_Comm comm, int to, const std::vector<T>& v) {
  std::uint64_t n = v.size();
  MPI_Send(&n, 1, MPI_UINT64_T, to, 0, comm);
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  const std::size_t bytes = v.size() * sizeof(T);
  for (std::size_t at = 0; at < bytes; at += kPiece)
    MPI_Send(p + at, static_cast<int>(std::min(kPiece, bytes - at)), MPI_BYTE, to, 0, comm);
}

template <class T>
std::vector<T> recv_vector(MPI_Comm comm, int from) {
  std::uint64_t n = 0;
  MPI_Recv(&n, 1, MPI_UINT64_T, from, 0, comm, MPI_STATUS_IGNORE);
  std::vector<T> v(n);
  auto* p = reinterpret_cast<unsigned char*>(v.data());
  const std::size_t bytes = v.size() * sizeof(T);
  for (std::size_t at = 0; at < bytes; at += kPiece)
    MPI_Recv(p + at, static_cast<int>(std::min(kPiece, bytes - at)), MPI_BYTE, from, 0, comm,
             MPI_STATUS_IGNORE);
  return v;
}

}  // namespace flymc::mpi
