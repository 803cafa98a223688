#pragma once
/// @file bright_set.hpp
/// The set of bright data (z_n = 1) of one chain (docs/math.md §1.3).
///
/// The paper's section 3.3 keeps a permutation of all N indices with the bright ones first and
/// each datum's position in it: O(1) per operation, but 8 bytes per datum, and on data far larger
/// than the caches a flip then costs dependent cache misses in two N-long arrays. Here the set
/// keeps only what is small: one bit per datum (membership: N/8 bytes, in L2 or L3 up to tens of
/// millions of rows), the bright indices in packed order, and an open-addressing table from a
/// bright index to its packed position (a few times the bright count), so brighten, darken,
/// membership, position and the i-th bright datum are O(1) and touch the data's own arrays only
/// through the bit. Beside the bright indices it keeps, in the same order, a packed copy of the
/// bright rows (the bright evaluation is one contiguous pass) and the cached log L̃_n at the
/// chain's current θ (the implicit z-update needs no query for bright points).
///
/// Memory: N/8 bytes plus about (stride + 3) doubles per bright datum; no copy of the data.
/// Thread safety: none; one BrightSet belongs to one chain.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "flymc/data/dataset.hpp"

namespace flymc {

/// Bright index → packed position: open addressing with linear probing over a power-of-two
/// table kept at most a quarter full (short probe runs), key and value side by side (one load per
/// probe), deletion by backward shift (no tombstones). Keys are data indices (< 2^32 − 1).
class PositionTable {
 public:
  /// Room for `count` keys at load ≤ 1/4.
  void reserve(std::size_t count) {
    std::size_t cap = 16;
    while (cap < 4 * count) cap *= 2;
    if (cap <= slots_.size()) return;
    std::vector<Slot> old(cap, Slot{kEmpty, 0});
    old.swap(slots_);
    shift_ = 64 - std::countr_zero(cap);
    for (const Slot& e : old)
      if (e.key != kEmpty) insert(e.key, e.val);
  }
  void clear() noexcept { std::fill(slots_.begin(), slots_.end(), Slot{kEmpty, 0}); }
  /// Adds key n (absent) with value v.
  void insert(Index n, Index v) noexcept {
    std::size_t i = home(n);
    while (slots_[i].key != kEmpty) i = next(i);
    slots_[i] = Slot{n, v};
  }
  /// The value of key n (present).
  Index find(Index n) const noexcept { return slots_[slot(n)].val; }
  /// Sets the value of key n (present).
  void assign(Index n, Index v) noexcept { slots_[slot(n)].val = v; }
  /// Removes key n (present), moving later keys of its probe run back into the gap; returns
  /// its value.
  Index erase(Index n) noexcept {
    std::size_t gap = slot(n);
    const Index value = slots_[gap].val;
    for (std::size_t i = next(gap);; i = next(i)) {
      if (slots_[i].key == kEmpty) break;
      // The key at i may move into the gap unless its home lies cyclically in (gap, i].
      const std::size_t h = home(slots_[i].key);
      const bool stays = gap <= i ? (gap < h && h <= i) : (gap < h || h <= i);
      if (stays) continue;
      slots_[gap] = slots_[i];
      gap = i;
    }
    slots_[gap].key = kEmpty;
    return value;
  }
  /// Whether key n is present (tests).
  bool contains(Index n) const noexcept {
    for (std::size_t i = home(n);; i = next(i)) {
      if (slots_[i].key == n) return true;
      if (slots_[i].key == kEmpty) return false;
    }
  }

 private:
  struct Slot {
    Index key, val;
  };
  static constexpr Index kEmpty = ~Index{0};
  std::size_t home(Index n) const noexcept {
    return static_cast<std::size_t>((std::uint64_t{n} * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  std::size_t next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }
  std::size_t slot(Index n) const noexcept {
    std::size_t i = home(n);
    while (slots_[i].key != n) i = next(i);
    return i;
  }
  std::vector<Slot> slots_;
  int shift_ = 64;
};

class BrightSet {
 public:
  BrightSet() = default;
  /// All N data dark. On a data set sharded over processes, N is the whole data set's and the
  /// set is every process's copy of the same bright set (docs/mpi.md): indices are the whole
  /// data set's, and a bright datum held elsewhere is brightened with its row passed in.
  explicit BrightSet(const Dataset& data)
      : data_(&data),
        stride_(data.stride()),
        n_(data.total_n()),
        first_(data.shard() != nullptr ? data.shard()->first_row : 0),
        bits_((n_ + 63) / 64, 0) {
    if (n_ >= std::size_t{~Index{0}}) throw std::invalid_argument("bright set: N >= 2^32 - 1");
    reserve(64);
  }
  /// Whether datum n's row is held by this process (always, unless the data are sharded).
  bool holds(Index n) const noexcept { return n >= first_ && n - first_ < data_->n(); }
  /// The index of datum n in this process's rows (held(n)).
  std::size_t local(Index n) const noexcept { return n - first_; }

  std::size_t size() const noexcept { return nb_; }     ///< bright count
  std::size_t num_data() const noexcept { return n_; }  ///< N
  std::size_t num_dark() const noexcept { return n_ - nb_; }
  bool is_bright(Index n) const noexcept { return (bits_[n >> 6] >> (n & 63)) & 1u; }
  Index bright(std::size_t i) const noexcept { return idx_[i]; }
  /// Bright indices, in packed order.
  const Index* bright_indices() const noexcept { return idx_.data(); }
  /// Starts loading datum n's membership bit, which is_bright, brighten and darken read: for
  /// batches of data scattered over a set far larger than the caches.
  [[gnu::always_inline]] void prefetch(Index n) const noexcept {
    __builtin_prefetch(bits_.data() + (n >> 6));
  }
  /// Packed bright rows: size() rows, stride() apart, in the order of bright_indices().
  const double* packed_rows() const noexcept { return rows_.get(); }
  std::size_t stride() const noexcept { return stride_; }
  /// Cached log L̃_n at the current θ, in packed order.
  double* log_ltilde() noexcept { return llt_.data(); }
  const double* log_ltilde() const noexcept { return llt_.data(); }

  /// Also caches, per bright datum, the K coefficients ∂ log L̃_n/∂ψ_n at the current θ (for
  /// the gradient kernels, which then update ∇ log p(θ | z) after a z-sweep from the flipped data
  /// alone). Call before any datum is brightened.
  void enable_coefs(std::size_t k) {
    k_ = k;
    coef_.assign(capacity_ * k_, 0.0);
  }
  std::size_t coef_width() const noexcept { return k_; }  ///< K, or 0 when not cached
  /// The cached coefficients, K per bright datum in packed order.
  const double* coefs() const noexcept { return coef_.data(); }
  /// Replaces the cached coefficients by swapping with `other` (≥ size()·K values, packed
  /// order), as swap_log_ltilde does.
  void swap_coefs(std::vector<double>& other) {
    if (other.size() < coef_.size()) other.resize(coef_.size());
    coef_.swap(other);
  }

  /// Sets z_n = 1 (n must be dark) with its log L̃_n at the current θ (and, when cached, its
  /// K coefficients): n takes the packed slot after the last bright datum.
  /// `row`: its row as doubles (stride() values), for a datum held by another process.
  void brighten(Index n, double log_lt, const double* coef = nullptr, const double* row = nullptr) {
    if (nb_ == capacity_) reserve(2 * capacity_);
    bits_[n >> 6] |= std::uint64_t{1} << (n & 63);
    idx_[nb_] = n;
    pos_.insert(n, static_cast<Index>(nb_));
    if (row != nullptr) {
      std::memcpy(rows_.get() + nb_ * stride_, row, stride_ * sizeof(double));
    } else {
      data_->copy_row(local(n), rows_.get() + nb_ * stride_);
    }
    llt_[nb_] = log_lt;
    if (k_ > 0) {
      for (std::size_t k = 0; k < k_; ++k) coef_[nb_ * k_ + k] = coef != nullptr ? coef[k] : 0.0;
    }
    ++nb_;
  }
  /// Position of bright datum n in packed order.
  std::size_t position(Index n) const noexcept { return pos_.find(n); }

  /// Sets z_n = 0 (n must be bright): the last bright datum takes n's packed slot.
  void darken(Index n) {
    const std::size_t pos = pos_.erase(n);
    --nb_;
    bits_[n >> 6] &= ~(std::uint64_t{1} << (n & 63));
    if (pos != nb_) {
      const Index last = idx_[nb_];
      idx_[pos] = last;
      pos_.assign(last, static_cast<Index>(pos));
      std::memcpy(rows_.get() + pos * stride_, rows_.get() + nb_ * stride_,
                  stride_ * sizeof(double));
      llt_[pos] = llt_[nb_];
      for (std::size_t k = 0; k < k_; ++k) coef_[pos * k_ + k] = coef_[nb_ * k_ + k];
    }
  }

  /// Replaces the cached log L̃ array (after an accepted θ move) by swapping with `other`,
  /// which must hold at least size() values in packed order.
  void swap_log_ltilde(std::vector<double>& other) {
    if (other.size() < llt_.size()) other.resize(llt_.size());
    llt_.swap(other);
  }
  std::size_t capacity() const noexcept { return capacity_; }

  /// Restores a state saved from bright_indices(), size(), log_ltilde() (and coefs()): `bright`
  /// the bright indices in packed order, `llt` their cached log L̃ (and `coefs` K per datum).
  /// That is the whole state: which data are dark, and in what order, is nothing the chain uses.
  /// `rows` (stride() doubles per datum, in the same order): the rows, for a copy on a shard.
  /// @throw std::invalid_argument if an index is out of range or repeated.
  void restore(const std::vector<Index>& bright, const double* llt, const double* coefs = nullptr,
               const double* rows = nullptr) {
    std::vector<Index> sorted(bright);
    std::sort(sorted.begin(), sorted.end());
    if (!sorted.empty() && sorted.back() >= n_)
      throw std::invalid_argument("bright set: index " + std::to_string(sorted.back()) +
                                  " out of range for N = " + std::to_string(n_));
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end())
      throw std::invalid_argument("bright set: index " + std::to_string(*dup) + " is listed twice");
    std::fill(bits_.begin(), bits_.end(), 0);
    pos_.clear();
    nb_ = 0;
    reserve(std::max<std::size_t>(64, bright.size()));
    for (std::size_t i = 0; i < bright.size(); ++i)
      brighten(bright[i], llt[i], k_ > 0 && coefs != nullptr ? coefs + i * k_ : nullptr,
               rows != nullptr ? rows + i * stride_ : nullptr);
  }

  /// Throws std::logic_error if the bits, the positions, the packed rows or the count are
  /// inconsistent.
  void check_invariants() const {
    std::size_t ones = 0;
    for (std::uint64_t w : bits_) ones += static_cast<std::size_t>(std::popcount(w));
    if (ones != nb_) throw std::logic_error("BrightSet: membership bits do not count size()");
    const AlignedBuffer row = aligned_zeros(stride_);
    for (std::size_t i = 0; i < nb_; ++i) {
      const Index n = idx_[i];
      if (n >= n_ || !is_bright(n)) throw std::logic_error("BrightSet: a listed datum is dark");
      if (!pos_.contains(n) || pos_.find(n) != i)
        throw std::logic_error("BrightSet: position of " + std::to_string(n) +
                               " != " + std::to_string(i));
      if (!holds(n)) continue;
      data_->copy_row(local(n), row.get());
      if (std::memcmp(rows_.get() + i * stride_, row.get(), stride_ * sizeof(double)) != 0)
        throw std::logic_error("BrightSet: packed row " + std::to_string(i) + " is stale");
    }
  }

 private:
  void reserve(std::size_t cap) {
    cap = std::max<std::size_t>(cap, 1);
    AlignedBuffer rows = aligned_zeros(cap * stride_);
    if (rows_) std::memcpy(rows.get(), rows_.get(), nb_ * stride_ * sizeof(double));
    rows_ = std::move(rows);
    idx_.resize(cap);
    llt_.resize(cap);
    if (k_ > 0) coef_.resize(cap * k_);
    pos_.reserve(cap);
    capacity_ = cap;
  }

  const Dataset* data_ = nullptr;
  std::size_t stride_ = 0, n_ = 0, first_ = 0, nb_ = 0, capacity_ = 0;
  std::vector<std::uint64_t> bits_;  // z_n, one bit per datum
  std::vector<Index> idx_;           // bright indices, packed order (capacity_ entries)
  PositionTable pos_;                // bright index → packed position
  AlignedBuffer rows_;
  std::vector<double> llt_;
  std::size_t k_ = 0;         // coefficients per bright datum (0: not cached)
  std::vector<double> coef_;  // capacity_ × k_
};

/// The data a z-update flipped, with their coefficients ∂ log L̃_n/∂ψ_n at θ (K each), when the
/// bright set caches coefficients (gradient kernels): enough to update ∇ log p(θ | z) without
/// touching the data that kept their state (FlyTarget::apply_flips).
/// With `keep_rows` (a bright set copied on every process of a sharded data set), also their rows
/// (stride doubles per entry, from the bright set), since the data set holds only a part of them.
struct FlipLog {
  std::vector<Index> on, off;             ///< brightened, darkened (in the order applied)
  std::vector<double> on_coef, off_coef;  ///< K per entry
  std::vector<double> on_rows, off_rows;  ///< stride per entry, with keep_rows
  bool keep_rows = false;
  void clear() noexcept {
    on.clear();
    off.clear();
    on_coef.clear();
    off_coef.clear();
    on_rows.clear();
    off_rows.clear();
  }
};

/// Records the darkening of bright datum n (with its cached coefficients), if coefficients are
/// cached, and darkens it.
inline void darken_logged(BrightSet& bright, Index n, FlipLog& log) {
  const std::size_t K = bright.coef_width();
  if (K > 0) {
    const std::size_t pos = bright.position(n);
    const double* co = bright.coefs() + pos * K;
    log.off.push_back(n);
    log.off_coef.insert(log.off_coef.end(), co, co + K);
    if (log.keep_rows) {
      const double* row = bright.packed_rows() + pos * bright.stride();
      log.off_rows.insert(log.off_rows.end(), row, row + bright.stride());
    }
  }
  bright.darken(n);
}
/// Brightens dark datum n with its log L̃ and (if cached) coefficients, recording it; `row` as
/// in BrightSet::brighten.
inline void brighten_logged(BrightSet& bright, Index n, double llt, const double* coef,
                            FlipLog& log, const double* row = nullptr) {
  const std::size_t K = bright.coef_width();
  bright.brighten(n, llt, coef, row);
  if (K > 0) {
    log.on.push_back(n);
    log.on_coef.insert(log.on_coef.end(), coef, coef + K);
    if (log.keep_rows) {
      const double* packed = bright.packed_rows() + bright.position(n) * bright.stride();
      log.on_rows.insert(log.on_rows.end(), packed, packed + bright.stride());
    }
  }
}

}  // namespace flymc
