#pragma once
/// @file dataset.hpp
/// The read-only data matrix shared by every chain.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/memory.hpp"  // huge_page_alloc
#include "flymc/core/row_link.hpp"

namespace flymc {

/// Index type for data rows (N < 2^32).
using Index = std::uint32_t;

/// Row stride in doubles: D rounded up to a multiple of 8, so that every row starts on a
/// 64-byte boundary and SIMD kernels run over whole registers. Padding entries are zero.
constexpr std::size_t padded_stride(std::size_t d) { return (d + 7) / 8 * 8; }

/// Deleter for 64-byte aligned arrays.
struct AlignedFree {
  void operator()(double* p) const noexcept;
};
using AlignedBuffer = std::unique_ptr<double[], AlignedFree>;
/// Allocates `count` doubles, 64-byte aligned, zero-filled. Throws std::bad_alloc.
AlignedBuffer aligned_zeros(std::size_t count);

/// Where a data set's rows lie in a larger one that several processes share, each holding a run
/// of whole reduction chunks (docs/mpi.md, "Sharded runs"): data-wide sums over this part go on
/// through `link` so that every process gets the whole data set's sum, bit for bit as one process
/// holding every row computes it.
struct RowShard {
  std::size_t first_row = 0;   ///< the whole data set's index of this part's row 0
  std::size_t total_rows = 0;  ///< rows of the whole data set
  std::shared_ptr<RowLink> link;
};

/// The rows [first, last) that part `part` of `parts` holds of a data set of `total_rows`: whole
/// reduction chunks (kReduceGrain rows) dealt in contiguous runs in part order, the first
/// `chunks mod parts` parts taking one more. A part may be empty when there are fewer chunks.
std::pair<std::size_t, std::size_t> shard_rows(std::size_t total_rows, int part, int parts);

/// N rows of D features (row-major, 64-byte aligned rows with zero padding up to `stride()`),
/// and one response per row (the label y_n). Built once by a loader or generator, then used
/// read-only through `std::shared_ptr<const Dataset>`.
///
/// Thread safety: const member functions may be called concurrently from any number of threads.
class Dataset {
 public:
  Dataset() = default;
  /// Zero-filled N x D data set; `source` names the file it came from (for messages).
  Dataset(std::size_t n, std::size_t d, std::string source = {});

  /// Rows held here (of a shard: its own rows only).
  std::size_t n() const noexcept { return n_; }
  /// Rows of the whole data set: n(), or a shard's total.
  std::size_t total_n() const noexcept { return shard_ ? shard_->total_rows : n_; }
  /// The part of a larger data set these rows are, or null for a whole data set.
  const RowShard* shard() const noexcept { return shard_.get(); }
  /// Makes these rows part of a larger data set. @throw ConfigError if the part does not start on
  /// a reduction chunk, or does not fit in `s.total_rows`.
  void set_shard(RowShard s);
  std::size_t d() const noexcept { return d_; }
  std::size_t stride() const noexcept { return stride_; }
  const std::string& source() const noexcept { return source_; }

  /// Pointer to row i (stride() doubles, entries >= d() are zero).
  const double* row(std::size_t i) const noexcept { return x_.get() + i * stride_; }
  double* mutable_row(std::size_t i) noexcept { return x_.get() + i * stride_; }
  /// Start of the whole matrix (N * stride() doubles).
  const double* data() const noexcept { return x_.get(); }

  std::span<const double> y() const noexcept { return y_; }
  std::vector<double>& mutable_y() noexcept { return y_; }

  /// Starts loading every 64-byte line of row i for a read a little later: a sampler that knows
  /// its next scattered datum ahead of time hides the memory latency this way. kLocality is
  /// __builtin_prefetch's: 3 into L1, 2 into L2 only (for a row needed only after other work).
  /// The prefetch helpers are forced inline: GCC deletes a call to an outlined function that only
  /// prefetches, as free of side effects (tests/codegen_prefetch.py checks the binary).
  template <int kLocality = 3>
  [[gnu::always_inline]] void prefetch_row(std::size_t i) const noexcept {
    const double* r = row(i);
    for (std::size_t j = 0; j < stride_; j += 8) __builtin_prefetch(r + j, 0, kLocality);
  }
  /// Row i and its label.
  [[gnu::always_inline]] void prefetch(std::size_t i) const noexcept {
    prefetch_row(i);
    __builtin_prefetch(y_.data() + i);
  }

 private:
  std::size_t n_ = 0, d_ = 0, stride_ = 0;
  std::string source_;
  AlignedBuffer x_;
  std::vector<double> y_;
  std::shared_ptr<const RowShard> shard_;
};

/// Identity of a data set's values: N, D, every feature (with its zero padding) and every label,
/// bitwise and in order. Computed in fixed chunks combined in order: the same on any number of
/// threads. A checkpoint records it, and the processes of an MPI run compare theirs.
std::uint64_t data_fingerprint(const Dataset& data);

/// The rows `rows` of `data`, in that order (a copy, labels and padding included).
std::shared_ptr<const Dataset> subset_rows(const Dataset& data, const std::vector<Index>& rows);

/// subset_rows by the whole data set's row indices (ascending): of a shard, every process gets
/// the same rows, gathered from the parts that hold them (collective over the parts).
std::shared_ptr<const Dataset> gather_rows(const Dataset& data, const std::vector<Index>& rows);

/// What values the label column may hold.
enum class LabelDomain {
  /// Any finite value (regression).
  any,
  /// Two classes: all labels in {-1, +1} (kept), or all in {0, 1} (0 is mapped to -1, 1 to +1).
  /// Any other value, or a mix of the codings such as {-1, 0, 1}, is a DataError.
  binary,
  /// Class indices 0..K-1 (softmax): non-negative integers.
  categorical,
};

}  // namespace flymc
