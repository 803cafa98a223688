#pragma once
/// @file bright_set.hpp
/// The set of bright data (z_n = 1) of one chain, after the paper's section 3.3 (docs/math.md
/// §1.3).
///
/// `arr` holds every index once with the bright ones first, `tab[n]` is n's position in `arr`, and
/// `size()` counts the bright ones, so brighten, darken, membership, the i-th bright and the i-th
/// dark datum are all O(1). Beside `arr[0, size())` the set keeps, in the same order, a packed copy
/// of the bright rows (so the bright evaluation is one contiguous pass) and a cached log L̃_n at the
/// chain's current θ (so the implicit z-update needs no query for bright points).
///
/// Memory: 8 bytes per datum plus (stride + 1) doubles per bright datum; no copy of the data.
/// Thread safety: none; one BrightSet belongs to one chain.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "flymc/data/dataset.hpp"

namespace flymc {

class BrightSet {
 public:
  BrightSet() = default;
  /// All N data dark.
  explicit BrightSet(const Dataset& data) : data_(&data), stride_(data.stride()) {
    const std::size_t n = data.n();
    arr_.resize(n);
    tab_.resize(n);
    for (std::size_t i = 0; i < n; ++i) arr_[i] = tab_[i] = static_cast<Index>(i);
    reserve(64);
  }

  std::size_t size() const noexcept { return nb_; }              ///< bright count
  std::size_t num_data() const noexcept { return arr_.size(); }  ///< N
  std::size_t num_dark() const noexcept { return arr_.size() - nb_; }
  bool is_bright(Index n) const noexcept { return tab_[n] < nb_; }
  Index bright(std::size_t i) const noexcept { return arr_[i]; }
  Index dark(std::size_t i) const noexcept { return arr_[nb_ + i]; }
  /// Bright indices, in packed order.
  const Index* bright_indices() const noexcept { return arr_.data(); }
  /// Dark indices: dark(i) == dark_indices()[i].
  const Index* dark_indices() const noexcept { return arr_.data() + nb_; }
  /// Starts loading datum n's slot (is_bright, position), which brighten and darken also read:
  /// for batches of data scattered over a set far larger than the caches.
  void prefetch(Index n) const noexcept { __builtin_prefetch(tab_.data() + n); }
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
  /// K coefficients).
  void brighten(Index n, double log_lt, const double* coef = nullptr) {
    const Index pos = tab_[n];
    if (nb_ == capacity_) reserve(2 * capacity_);
    swap_positions(pos, static_cast<Index>(nb_));
    std::memcpy(rows_.get() + nb_ * stride_, data_->row(n), stride_ * sizeof(double));
    llt_[nb_] = log_lt;
    if (k_ > 0) {
      for (std::size_t k = 0; k < k_; ++k) coef_[nb_ * k_ + k] = coef != nullptr ? coef[k] : 0.0;
    }
    ++nb_;
  }
  /// Position of bright datum n in packed order.
  std::size_t position(Index n) const noexcept { return tab_[n]; }

  /// Sets z_n = 0 (n must be bright): the last bright datum takes n's packed slot.
  void darken(Index n) {
    const Index pos = tab_[n];
    --nb_;
    swap_positions(pos, static_cast<Index>(nb_));
    if (pos != nb_) {
      std::memcpy(rows_.get() + std::size_t(pos) * stride_, rows_.get() + nb_ * stride_,
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

  /// The whole order `arr` (num_data() entries, the size() bright indices first): with
  /// log_ltilde() it is the complete state, for checkpoints. The dark order matters too (the
  /// implicit z-update with q = 1 picks darks by position, and the order decides where flips
  /// land in the packed rows).
  const Index* order() const noexcept { return arr_.data(); }
  /// Restores a state saved from order(), size() and log_ltilde(): `order` must be a permutation
  /// of [0, num_data()) with the `nb` bright indices first, `llt` their cached log L̃ (nb values).
  /// @throw std::invalid_argument if `order` is not such a permutation.
  void restore(const std::vector<Index>& order, std::size_t nb, const double* llt,
               const double* coefs = nullptr) {
    const std::size_t n = arr_.size();
    if (order.size() != n || nb > n)
      throw std::invalid_argument("bright set: order has " + std::to_string(order.size()) +
                                  " entries and " + std::to_string(nb) +
                                  " bright, for N = " + std::to_string(n));
    IndexArray tab(n, static_cast<Index>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const Index v = order[i];
      if (v >= n || tab[v] != n)
        throw std::invalid_argument("bright set: order is not a permutation of 0..N-1");
      tab[v] = static_cast<Index>(i);
    }
    arr_.assign(order.begin(), order.end());
    tab_ = std::move(tab);
    nb_ = 0;
    reserve(std::max<std::size_t>(64, nb));
    for (std::size_t i = 0; i < nb; ++i)
      std::memcpy(rows_.get() + i * stride_, data_->row(arr_[i]), stride_ * sizeof(double));
    std::copy(llt, llt + nb, llt_.begin());
    if (k_ > 0 && coefs != nullptr) std::copy(coefs, coefs + nb * k_, coef_.begin());
    nb_ = nb;
  }

  /// Throws std::logic_error if the permutation, the packed rows or the count are inconsistent.
  void check_invariants() const {
    const std::size_t n = arr_.size();
    if (nb_ > n) throw std::logic_error("BrightSet: count exceeds N");
    std::vector<char> seen(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Index v = arr_[i];
      if (v >= n || seen[v]) throw std::logic_error("BrightSet: arr is not a permutation");
      seen[v] = 1;
      if (tab_[v] != i)
        throw std::logic_error("BrightSet: tab[arr[i]] != i at " + std::to_string(i));
    }
    for (std::size_t i = 0; i < nb_; ++i)
      if (std::memcmp(rows_.get() + i * stride_, data_->row(arr_[i]), stride_ * sizeof(double)) !=
          0)
        throw std::logic_error("BrightSet: packed row " + std::to_string(i) + " is stale");
  }

 private:
  void swap_positions(Index p, Index q) noexcept {
    const Index a = arr_[p], b = arr_[q];
    arr_[p] = b;
    arr_[q] = a;
    tab_[b] = p;
    tab_[a] = q;
  }
  void reserve(std::size_t cap) {
    cap = std::max<std::size_t>(cap, 1);
    AlignedBuffer rows = aligned_zeros(cap * stride_);
    if (rows_) std::memcpy(rows.get(), rows_.get(), nb_ * stride_ * sizeof(double));
    rows_ = std::move(rows);
    llt_.resize(cap);
    if (k_ > 0) coef_.resize(cap * k_);
    capacity_ = cap;
  }

  const Dataset* data_ = nullptr;
  std::size_t stride_ = 0, nb_ = 0, capacity_ = 0;
  using IndexArray = std::vector<Index, HugePageAllocator<Index>>;
  IndexArray arr_, tab_;  // read at scattered positions by the z-updates
  AlignedBuffer rows_;
  std::vector<double> llt_;
  std::size_t k_ = 0;         // coefficients per bright datum (0: not cached)
  std::vector<double> coef_;  // capacity_ × k_
};

}  // namespace flymc
