// Data sharded over the processes of a communicator (flymc/mpi/mpi.hpp, docs/mpi.md "Sharded
// runs"): each process reads its run of whole reduction chunks, and the fold of every data-wide
// sum passes from rank to rank in row order, so the sums are one process's bit for bit.
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/mpi/mpi.hpp"
#include "mpi_detail.hpp"

namespace flymc::mpi {
namespace {

/// The links over a duplicate of the caller's communicator, so that no other message on it can
/// be taken for a fold's (or the other way round).
class CommLink final : public RowLink {
 public:
  explicit CommLink(MPI_Comm comm) {
    MPI_Comm_dup(comm, &comm_);
    rank_ = rank_of(comm_);
    size_ = size_of(comm_);
  }
  ~CommLink() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  CommLink(const CommLink&) = delete;
  CommLink& operator=(const CommLink&) = delete;
  int part() const noexcept override { return rank_; }
  int parts() const noexcept override { return size_; }
  std::vector<double> receive_from_previous() override {
    return recv_vector<double>(comm_, rank_ - 1);
  }
  void send_to_next(const std::vector<double>& values) override {
    send_vector(comm_, rank_ + 1, values);
  }
  std::vector<double> broadcast_from_last(const std::vector<double>& values) override {
    std::vector<double> v = values;
    std::uint64_t n = v.size();
    MPI_Bcast(&n, 1, MPI_UINT64_T, size_ - 1, comm_);
    v.resize(n);
    bcast_bytes(comm_, size_ - 1, v.data(), n * sizeof(double));
    return v;
  }
  std::vector<double> gather_in_order(const std::vector<double>& values) override {
    std::vector<double> all;
    for (int from = 0; from < size_; ++from) {
      std::vector<double> v = from == rank_ ? values : std::vector<double>();
      std::uint64_t n = v.size();
      MPI_Bcast(&n, 1, MPI_UINT64_T, from, comm_);
      v.resize(n);
      bcast_bytes(comm_, from, v.data(), n * sizeof(double));
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  std::vector<double> all_gather(const std::vector<double>& values) override {
    std::vector<double> all(values.size() * static_cast<std::size_t>(size_));
    const int count = static_cast<int>(values.size());
    MPI_Allgather(values.data(), count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, comm_);
    return all;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

/// Row indices as doubles (exact below 2^53); none_row travels as -1.
double row_value(std::size_t r) { return r == none_row ? -1.0 : static_cast<double>(r); }

/// The lowest row any process reported at `offset` in their pairs, or none_row.
std::size_t lowest(const std::vector<double>& pairs, std::size_t offset) {
  std::size_t best = none_row;
  for (std::size_t i = offset; i < pairs.size(); i += 2)
    if (pairs[i] >= 0.0) best = std::min(best, static_cast<std::size_t>(pairs[i]));
  return best;
}

/// Fails as the one-process loader does when the parts' binary labels use both codings.
void check_one_coding(const std::string& path, RowLink& link, const FilePart& part) {
  const std::vector<double> pairs =
      link.gather_in_order({row_value(part.first_zero), row_value(part.first_minus)});
  const std::size_t zero = lowest(pairs, 0), minus = lowest(pairs, 1);
  if (zero == none_row || minus == none_row) return;
  const std::string at =
      path + ": row " + std::to_string(std::max(zero, minus)) + ": field 1 (label): ";
  throw DataError(zero > minus ? at +
                                     "label 0 mixes the {0,1} coding with the {-1,+1} coding "
                                     "(label -1 on row " +
                                     std::to_string(minus) + ")"
                               : at +
                                     "label -1 mixes the {-1,+1} coding with the {0,1} coding "
                                     "(label 0 on row " +
                                     std::to_string(zero) + ")");
}

}  // namespace

std::shared_ptr<RowLink> row_link(MPI_Comm comm) { return std::make_shared<CommLink>(comm); }

std::shared_ptr<const Dataset> load_shard(MPI_Comm comm, const std::string& path,
                                          LabelDomain labels, Storage storage,
                                          const PartLoader& load_part) {
  auto link = row_link(comm);
  std::shared_ptr<Dataset> data;
  FilePart part;
  agree(comm, [&] { part = load_part(path, labels, link->part(), link->parts(), storage); });
  agree(comm, [&] {
    check_one_coding(path, *link, part);
    data = std::make_shared<Dataset>(std::move(part.data));
    data->set_shard(RowShard{part.first_row, part.file_rows, link});
  });
  return data;
}

}  // namespace flymc::mpi
