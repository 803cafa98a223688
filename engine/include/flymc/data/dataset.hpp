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

#include "flymc/core/memory.hpp"       // huge_page_alloc
#include "flymc/core/model_table.hpp"  // LabelDomain
#include "flymc/core/row_link.hpp"
#include "flymc/core/storage.hpp"

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
/// The same, unwritten: for an array that a parallel pass fills completely, whose pages that
/// pass then first touches on every core.
AlignedBuffer aligned_uninit(std::size_t count);

namespace detail {
/// A block of doubles lent from a per-thread pool and given back when destroyed: the scratch a
/// float data set's rows are widened into (a pass over chunks of rows allocates nothing after
/// its first chunks).
class ScratchLease {
 public:
  ScratchLease() = default;
  explicit ScratchLease(std::size_t count);
  ScratchLease(ScratchLease&&) noexcept = default;
  ScratchLease& operator=(ScratchLease&&) noexcept = default;
  ~ScratchLease();
  double* get() const noexcept { return buf_.get(); }

 private:
  AlignedBuffer buf_;
  std::size_t capacity_ = 0;
};
}  // namespace detail

/// Rows [lo, hi) of a data set as doubles (stride() apart, zero padding included): the data set's
/// own rows when it stores doubles, else a widened copy in per-thread scratch. Valid while the
/// data set lives; meant for one pass over a chunk of rows, not to be kept.
class RowsF64 {
 public:
  const double* data() const noexcept { return p_; }
  /// Row lo + i.
  const double* row(std::size_t i) const noexcept { return p_ + i * stride_; }

 private:
  friend class Dataset;
  RowsF64(const double* p, std::size_t stride) noexcept : p_(p), stride_(stride) {}
  RowsF64(detail::ScratchLease lease, std::size_t stride) noexcept
      : p_(lease.get()), stride_(stride), lease_(std::move(lease)) {}
  const double* p_ = nullptr;
  std::size_t stride_ = 0;
  detail::ScratchLease lease_;
};

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

/// N rows of D features (row-major, with zero padding up to `stride()`; rows of doubles start on
/// 64-byte boundaries, rows of floats on 32-byte ones), and one response per row (the label y_n).
/// Built once by a loader or generator, then used read-only through
/// `std::shared_ptr<const Dataset>`.
///
/// Features are read through the storage-blind members (value, rows, dot, dots, dots_gather, the
/// prefetches); row() and data() are the double storage itself, row_f32() the float one.
///
/// Thread safety: const member functions may be called concurrently from any number of threads.
class Dataset {
 public:
  Dataset() = default;
  /// Zero-filled N x D data set; `source` names the file it came from (for messages).
  Dataset(std::size_t n, std::size_t d, std::string source = {}, Storage storage = Storage::f64);

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

  Storage storage() const noexcept { return storage_; }
  /// Bytes of one stored row (stride() values).
  std::size_t row_bytes() const noexcept {
    return stride_ * (storage_ == Storage::f32 ? sizeof(float) : sizeof(double));
  }

  /// Pointer to row i (stride() doubles, entries >= d() are zero). Double storage only.
  const double* row(std::size_t i) const noexcept { return x_.get() + i * stride_; }
  double* mutable_row(std::size_t i) noexcept { return x_.get() + i * stride_; }
  /// Start of the whole matrix (N * stride() doubles). Double storage only.
  const double* data() const noexcept { return x_.get(); }
  /// Row i of float storage (stride() floats). Float storage only.
  const float* row_f32(std::size_t i) const noexcept { return xf() + i * stride_; }
  float* mutable_row_f32(std::size_t i) noexcept { return xf() + i * stride_; }

  /// Feature j of row i, as a double.
  double value(std::size_t i, std::size_t j) const noexcept {
    return storage_ == Storage::f32 ? double(row_f32(i)[j]) : row(i)[j];
  }
  /// Rows [lo, hi) as doubles (see RowsF64).
  RowsF64 rows(std::size_t lo, std::size_t hi) const;
  /// Row i as doubles into `buf` (stride() doubles); returns the row itself for double storage.
  const double* row_f64(std::size_t i, double* buf) const noexcept;
  /// Row i as doubles into `dst` (stride() doubles), whatever the storage.
  void copy_row(std::size_t i, double* dst) const noexcept;
  /// x_i·θ for a padded θ (stride() doubles): bit-identical for either storage of the same values.
  double dot(std::size_t i, const double* theta) const noexcept;
  /// out[r] = x_{lo+r}·θ, r < hi − lo (kernels::dots_packed).
  void dots(std::size_t lo, std::size_t hi, const double* theta, double* out) const noexcept;
  /// out[r·m + k] = x_{lo+r}·θ_k (kernels::dots_packed_multi).
  void dots_multi(std::size_t lo, std::size_t hi, const double* thetas, std::size_t m,
                  std::size_t tstride, double* out) const noexcept;
  /// out[i] = x_{idx[i]}·θ, i < k (kernels::dots_gather).
  void dots_gather(const Index* idx, std::size_t k, const double* theta,
                   double* out) const noexcept;
  /// out[i·m + c] = x_{idx[i]}·θ_c (kernels::dots_gather_multi).
  void dots_gather_multi(const Index* idx, std::size_t k, const double* thetas, std::size_t m,
                         std::size_t tstride, double* out) const noexcept;
  /// out[j] += c·x_ij for j < d(): one row's term of a gradient, whatever the storage.
  void add_row(std::size_t i, double c, double* out) const noexcept {
    if (storage_ == Storage::f32)
      add_scaled(row_f32(i), c, out);
    else
      add_scaled(row(i), c, out);
  }
  /// out[j] += Σ_r c[r·cstride]·x_{lo+r}[j], j < stride() (kernels::weighted_row_sum).
  void weighted_row_sum(std::size_t lo, std::size_t hi, const double* c, std::size_t cstride,
                        double* out) const noexcept;
  /// Σ log σ(y_n x_n·θ) over rows [lo, hi) (kernels::sum_log_sigmoid_signed).
  double sum_log_sigmoid_signed(std::size_t lo, std::size_t hi, const double* theta) const noexcept;

  /// Stores the features as floats, each rounded to nearest; the doubles are released.
  void store_as_f32();

  std::span<const double> y() const noexcept { return y_; }
  std::vector<double>& mutable_y() noexcept { return y_; }

  /// Per-row values beside the response that some models read (docs/models.md, "Data as it
  /// comes"): a weight w_n ≥ 0 (datum n's log-likelihood counts w_n times), a count of trials
  /// m_n (binomial: y_n successes of m_n), an offset o_n added to the linear predictor
  /// (η_n = x_n·θ + o_n: an exposure's log in Poisson regression). Empty where the data have
  /// none; otherwise n() values. A model that cannot use one refuses data that have it.
  std::span<const double> weights() const noexcept { return weights_; }
  std::span<const double> trials() const noexcept { return trials_; }
  std::span<const double> offsets() const noexcept { return offsets_; }
  /// @throw std::invalid_argument unless v is empty or holds n() values.
  void set_weights(std::vector<double> v) { set_column(weights_, std::move(v)); }
  void set_trials(std::vector<double> v) { set_column(trials_, std::move(v)); }
  void set_offsets(std::vector<double> v) { set_column(offsets_, std::move(v)); }
  /// Feature 0 is the column of ones with_intercept() added (its coefficient is named
  /// `intercept`).
  bool has_intercept() const noexcept { return intercept_; }
  void mark_intercept(bool on) noexcept { intercept_ = on; }
  /// Whether any of the three is present.
  bool has_row_extras() const noexcept {
    return !weights_.empty() || !trials_.empty() || !offsets_.empty();
  }

  /// Starts loading every 64-byte line of row i for a read a little later: a sampler that knows
  /// its next scattered datum ahead of time hides the memory latency this way. kLocality is
  /// __builtin_prefetch's: 3 into L1, 2 into L2 only (for a row needed only after other work).
  /// The prefetch helpers are forced inline: GCC deletes a call to an outlined function that only
  /// prefetches, as free of side effects (tests/codegen_prefetch.py checks the binary).
  template <int kLocality = 3>
  [[gnu::always_inline]] void prefetch_row(std::size_t i) const noexcept {
    const char* r = reinterpret_cast<const char*>(x_.get()) + i * row_bytes();
    const std::size_t bytes = row_bytes();
    __builtin_prefetch(r, 0, kLocality);
    // A float row may start mid-line: its last byte's line is then one more.
    for (std::size_t b = 64 - (reinterpret_cast<std::uintptr_t>(r) & 63); b < bytes; b += 64)
      __builtin_prefetch(r + b, 0, kLocality);
  }
  /// Row i and its label.
  [[gnu::always_inline]] void prefetch(std::size_t i) const noexcept {
    prefetch_row(i);
    __builtin_prefetch(y_.data() + i);
  }

 private:
  float* xf() const noexcept { return reinterpret_cast<float*>(x_.get()); }
  void set_column(std::vector<double>& to, std::vector<double> v);
  template <class T>
  void add_scaled(const T* x, double c, double* out) const noexcept {
    for (std::size_t j = 0; j < d_; ++j) out[j] += c * static_cast<double>(x[j]);
  }

  std::size_t n_ = 0, d_ = 0, stride_ = 0;
  Storage storage_ = Storage::f64;
  std::string source_;
  AlignedBuffer x_;  // N·stride doubles, or N·stride floats in the same kind of block
  std::vector<double> y_;
  std::vector<double> weights_, trials_, offsets_;  // empty: none (set_weights, ...)
  bool intercept_ = false;
  std::shared_ptr<const RowShard> shard_;
};

/// `data` with a column of ones before its features (RunConfig::intercept): a copy, its rows,
/// labels, per-row columns, storage and shard kept, marked has_intercept().
std::shared_ptr<const Dataset> with_intercept(const Dataset& data);

/// Identity of a data set's values: N, D, every feature (with its zero padding) and every label,
/// bitwise and in order. Computed in fixed chunks combined in order: the same on any number of
/// threads. A checkpoint records it, and the processes of an MPI run compare theirs.
std::uint64_t data_fingerprint(const Dataset& data);

/// The rows `rows` of `data`, in that order (a copy, labels, weights, trials, offsets and padding
/// included).
std::shared_ptr<const Dataset> subset_rows(const Dataset& data, const std::vector<Index>& rows);

/// subset_rows by the whole data set's row indices (ascending): of a shard, every process gets
/// the same rows, gathered from the parts that hold them (collective over the parts).
std::shared_ptr<const Dataset> gather_rows(const Dataset& data, const std::vector<Index>& rows);

}  // namespace flymc
