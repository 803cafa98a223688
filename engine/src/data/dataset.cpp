#include "flymc/data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/hash.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"

namespace flymc {

void AlignedFree::operator()(double* p) const noexcept { std::free(p); }

namespace {
std::size_t aligned_bytes(std::size_t count) {
  return std::max<std::size_t>(64, ((count * sizeof(double) + 63) / 64) * 64);
}
}  // namespace

AlignedBuffer aligned_uninit(std::size_t count) {
  return AlignedBuffer(static_cast<double*>(huge_page_alloc(aligned_bytes(count))));
}

AlignedBuffer aligned_zeros(std::size_t count) {
  const std::size_t bytes = aligned_bytes(count);
  void* p = huge_page_alloc(bytes);
  // Zeroed in pieces on every core: the first touch of a data matrix of gigabytes (its page
  // faults and the zeroing) is then shared out instead of being one thread's.
  constexpr std::size_t kPiece = std::size_t{16} << 20;
  auto* bytes_p = static_cast<unsigned char*>(p);
  chunked_for(bytes, kPiece,
              [&](std::size_t lo, std::size_t hi) { std::memset(bytes_p + lo, 0, hi - lo); });
  return AlignedBuffer(static_cast<double*>(p));
}

namespace {
/// Doubles of a block that holds `values` features of `storage`.
std::size_t block_doubles(std::size_t values, Storage storage) {
  return storage == Storage::f32 ? (values + 1) / 2 : values;
}

/// Per-thread pool of scratch blocks (few: a thread holds a lease or two at a time).
struct ScratchPool {
  static constexpr std::size_t kKeep = 4;
  std::vector<std::pair<std::size_t, AlignedBuffer>> free;
};
ScratchPool& scratch_pool() {
  thread_local ScratchPool pool;
  return pool;
}
}  // namespace

detail::ScratchLease::ScratchLease(std::size_t count) {
  auto& free = scratch_pool().free;
  for (auto it = free.begin(); it != free.end(); ++it)
    if (it->first >= count) {
      capacity_ = it->first;
      buf_ = std::move(it->second);
      free.erase(it);
      return;
    }
  capacity_ = count;
  buf_ = aligned_zeros(count);
}

detail::ScratchLease::~ScratchLease() {
  if (!buf_) return;
  auto& free = scratch_pool().free;
  if (free.size() < ScratchPool::kKeep) free.emplace_back(capacity_, std::move(buf_));
}

Dataset::Dataset(std::size_t n, std::size_t d, std::string source, Storage storage)
    : n_(n),
      d_(d),
      stride_(padded_stride(d)),
      storage_(storage),
      source_(std::move(source)),
      x_(aligned_zeros(block_doubles(n * padded_stride(d), storage))),
      y_(n, 0.0) {}

RowsF64 Dataset::rows(std::size_t lo, std::size_t hi) const {
  if (storage_ == Storage::f64) return RowsF64(row(lo), stride_);
  detail::ScratchLease lease((hi - lo) * stride_);
  const float* src = row_f32(lo);
  double* dst = lease.get();
  for (std::size_t k = 0; k < (hi - lo) * stride_; ++k) dst[k] = src[k];
  return RowsF64(std::move(lease), stride_);
}

const double* Dataset::row_f64(std::size_t i, double* buf) const noexcept {
  if (storage_ == Storage::f64) return row(i);
  copy_row(i, buf);
  return buf;
}

void Dataset::copy_row(std::size_t i, double* dst) const noexcept {
  if (storage_ == Storage::f64) {
    std::memcpy(dst, row(i), stride_ * sizeof(double));
  } else {
    const float* src = row_f32(i);
    for (std::size_t j = 0; j < stride_; ++j) dst[j] = src[j];
  }
}

double Dataset::dot(std::size_t i, const double* theta) const noexcept {
  return storage_ == Storage::f32 ? kernels::dot(row_f32(i), theta, stride_)
                                  : kernels::dot(row(i), theta, stride_);
}

void Dataset::dots(std::size_t lo, std::size_t hi, const double* theta,
                   double* out) const noexcept {
  if (storage_ == Storage::f32)
    kernels::dots_packed(row_f32(lo), hi - lo, stride_, theta, out);
  else
    kernels::dots_packed(row(lo), hi - lo, stride_, theta, out);
}

void Dataset::dots_multi(std::size_t lo, std::size_t hi, const double* thetas, std::size_t m,
                         std::size_t tstride, double* out) const noexcept {
  if (storage_ == Storage::f32)
    kernels::dots_packed_multi(row_f32(lo), hi - lo, stride_, thetas, m, tstride, out);
  else
    kernels::dots_packed_multi(row(lo), hi - lo, stride_, thetas, m, tstride, out);
}

void Dataset::dots_gather(const Index* idx, std::size_t k, const double* theta,
                          double* out) const noexcept {
  if (storage_ == Storage::f32)
    kernels::dots_gather(xf(), stride_, idx, k, theta, out);
  else
    kernels::dots_gather(x_.get(), stride_, idx, k, theta, out);
}

void Dataset::dots_gather_multi(const Index* idx, std::size_t k, const double* thetas,
                                std::size_t m, std::size_t tstride, double* out) const noexcept {
  if (storage_ == Storage::f32)
    kernels::dots_gather_multi(xf(), stride_, idx, k, thetas, m, tstride, out);
  else
    kernels::dots_gather_multi(x_.get(), stride_, idx, k, thetas, m, tstride, out);
}

void Dataset::weighted_row_sum(std::size_t lo, std::size_t hi, const double* c, std::size_t cstride,
                               double* out) const noexcept {
  if (storage_ == Storage::f32)
    kernels::weighted_row_sum(row_f32(lo), hi - lo, stride_, c, cstride, out);
  else
    kernels::weighted_row_sum(row(lo), hi - lo, stride_, c, cstride, out);
}

double Dataset::sum_log_sigmoid_signed(std::size_t lo, std::size_t hi,
                                       const double* theta) const noexcept {
  return storage_ == Storage::f32
             ? kernels::sum_log_sigmoid_signed(row_f32(lo), hi - lo, stride_, y_.data() + lo, theta)
             : kernels::sum_log_sigmoid_signed(row(lo), hi - lo, stride_, y_.data() + lo, theta);
}

void Dataset::store_as_f32() {
  if (storage_ == Storage::f32) return;
  AlignedBuffer f = aligned_zeros(block_doubles(n_ * stride_, Storage::f32));
  auto* dst = reinterpret_cast<float*>(f.get());
  const double* src = x_.get();
  const std::size_t chunks = (n_ + kReduceGrain - 1) / kReduceGrain;
  std::vector<std::size_t> overflow(chunks, SIZE_MAX);  // per chunk: first value too large
  chunked_for(n_, kReduceGrain, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t k = lo * stride_; k < hi * stride_; ++k) {
      dst[k] = static_cast<float>(src[k]);
      if (std::isinf(dst[k]) && overflow[lo / kReduceGrain] == SIZE_MAX)
        overflow[lo / kReduceGrain] = k;
    }
  });
  for (const std::size_t k : overflow)
    if (k != SIZE_MAX)
      throw DataError(source_ + ": data row " + std::to_string(k / stride_) + " (0-based): field " +
                      std::to_string(k % stride_ + 2) + " (x" + std::to_string(k % stride_ + 1) +
                      "): " + number_text(src[k]) +
                      " is beyond float32's range (3.4e38); use --storage f64");
  x_ = std::move(f);
  storage_ = Storage::f32;
}

std::pair<std::size_t, std::size_t> shard_rows(std::size_t total_rows, int part, int parts) {
  const std::size_t chunks = (total_rows + kReduceGrain - 1) / kReduceGrain;
  const auto p = static_cast<std::size_t>(part), r = static_cast<std::size_t>(parts);
  const std::size_t base = chunks / r, extra = chunks % r;
  const std::size_t c0 = p * base + std::min(p, extra), c1 = c0 + base + (p < extra ? 1 : 0);
  return {std::min(total_rows, c0 * kReduceGrain), std::min(total_rows, c1 * kReduceGrain)};
}

void Dataset::set_shard(RowShard s) {
  const bool last = s.first_row + n_ == s.total_rows;
  // An empty part (more parts than chunks) starts at the end; a part alone holds every row.
  const bool aligned = s.first_row % kReduceGrain == 0 || (n_ == 0 && last);
  if (!aligned || (!last && n_ % kReduceGrain != 0) || s.first_row + n_ > s.total_rows || !s.link ||
      (s.link->parts() == 1 && n_ != s.total_rows))
    throw ConfigError(source_ + ": a shard must start on a multiple of " +
                      std::to_string(kReduceGrain) + " rows, hold whole chunks of that many " +
                      "(the last excepted), fit in the whole data set, have a link, and be the "
                      "whole data set if it is the only part (rows " +
                      std::to_string(s.first_row) + " + " + std::to_string(n_) + " of " +
                      std::to_string(s.total_rows) + ")");
  shard_ = std::make_shared<const RowShard>(std::move(s));
}

void Dataset::set_column(std::vector<double>& to, std::vector<double> v) {
  if (!v.empty() && v.size() != n_)
    throw std::invalid_argument(source_ + ": a per-row column of " + std::to_string(v.size()) +
                                " values for " + std::to_string(n_) + " rows");
  to = std::move(v);
}

std::uint64_t data_fingerprint(const Dataset& data) {
  const std::size_t stride = data.stride();
  const std::size_t first = data.shard() != nullptr ? data.shard()->first_row : 0;
  const auto y = data.y();
  // The whole data set's, on any part of a shard: each chunk is hashed with its row index in the
  // whole set and the fold continues across the parts (row_fold.hpp), so a run sharded over any
  // number of processes has one process's fingerprint.
  const auto pack = [](std::uint64_t h) {
    return std::vector<double>{double(h >> 32), double(h & 0xffffffffULL)};
  };
  const auto unpack = [](const std::vector<double>& v) {
    return (static_cast<std::uint64_t>(v.at(0)) << 32) | static_cast<std::uint64_t>(v.at(1));
  };
  return fold_rows(
      data, hash_pair(data.total_n(), data.d()),
      [&](std::size_t lo, std::size_t hi) {
        // The values as doubles: a float data set has the fingerprint of its values widened.
        const RowsF64 rows = data.rows(lo, hi);
        std::uint64_t h = hash_bytes(rows.data(), (hi - lo) * stride * sizeof(double), first + lo);
        h = hash_bytes(y.data() + lo, (hi - lo) * sizeof(double), h);
        // Weights, trials and offsets where present (a data set without them keeps its value).
        for (const auto col : {data.weights(), data.trials(), data.offsets()})
          if (!col.empty()) h = hash_bytes(col.data() + lo, (hi - lo) * sizeof(double), h);
        return h;
      },
      hash_combine, pack, unpack);
}

std::shared_ptr<const Dataset> with_intercept(const Dataset& data) {
  const std::size_t n = data.n(), d = data.d();
  auto out = std::make_shared<Dataset>(n, d + 1, data.source());
  std::vector<double> row(data.stride());
  for (std::size_t i = 0; i < n; ++i) {
    data.copy_row(i, row.data());
    double* x = out->mutable_row(i);
    x[0] = 1.0;
    std::copy_n(row.data(), d, x + 1);
  }
  out->mutable_y().assign(data.y().begin(), data.y().end());
  out->set_weights({data.weights().begin(), data.weights().end()});
  out->set_trials({data.trials().begin(), data.trials().end()});
  out->set_offsets({data.offsets().begin(), data.offsets().end()});
  if (data.shard() != nullptr) out->set_shard(*data.shard());
  if (data.storage() == Storage::f32) out->store_as_f32();  // exact: the values were floats
  out->mark_intercept(true);
  return out;
}

std::shared_ptr<const Dataset> subset_rows(const Dataset& data, const std::vector<Index>& rows) {
  auto out = std::make_shared<Dataset>(rows.size(), data.d(), data.source(), data.storage());
  std::vector<double>& y = out->mutable_y();
  y.resize(rows.size());
  const std::size_t bytes = data.row_bytes();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (data.storage() == Storage::f32)
      std::memcpy(out->mutable_row_f32(i), data.row_f32(rows[i]), bytes);
    else
      std::memcpy(out->mutable_row(i), data.row(rows[i]), bytes);
    y[i] = data.y()[rows[i]];
  }
  const auto pick = [&](std::span<const double> col) {
    std::vector<double> v;
    if (!col.empty())
      for (const Index r : rows) v.push_back(col[r]);
    return v;
  };
  out->set_weights(pick(data.weights()));
  out->set_trials(pick(data.trials()));
  out->set_offsets(pick(data.offsets()));
  out->mark_intercept(data.has_intercept());
  return out;
}

std::shared_ptr<const Dataset> gather_rows(const Dataset& data, const std::vector<Index>& rows) {
  const RowShard* s = data.shard();
  if (s == nullptr) return subset_rows(data, rows);
  if (!std::is_sorted(rows.begin(), rows.end()))
    throw Error(data.source() + ": gather_rows needs ascending row indices");
  const std::size_t d = data.d(), lo = s->first_row, hi = lo + data.n();
  // The rows held here: label, weight, trials, offset (those present), then the features.
  const std::span<const double> extras[] = {data.weights(), data.trials(), data.offsets()};
  std::size_t width = 1 + d;
  for (const auto col : extras) width += col.empty() ? 0 : 1;
  std::vector<double> mine;
  for (const Index r : rows)
    if (r >= lo && r < hi) {
      mine.push_back(data.y()[r - lo]);
      for (const auto col : extras)
        if (!col.empty()) mine.push_back(col[r - lo]);
      for (std::size_t j = 0; j < d; ++j) mine.push_back(data.value(r - lo, j));
    }
  const std::vector<double> all = s->link->gather_in_order(mine);
  if (all.size() != rows.size() * width)
    throw Error(data.source() + ": the shards hold " + std::to_string(all.size() / width) +
                " of the " + std::to_string(rows.size()) + " rows asked for");
  auto out = std::make_shared<Dataset>(rows.size(), d, data.source());
  std::vector<double>& y = out->mutable_y();
  std::vector<double> got[3];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double* a = all.data() + i * width;
    y[i] = *a++;
    for (std::size_t c = 0; c < 3; ++c)
      if (!extras[c].empty()) got[c].push_back(*a++);
    std::memcpy(out->mutable_row(i), a, d * sizeof(double));
  }
  out->set_weights(std::move(got[0]));
  out->set_trials(std::move(got[1]));
  out->set_offsets(std::move(got[2]));
  out->mark_intercept(data.has_intercept());
  if (data.storage() == Storage::f32) out->store_as_f32();  // exact: the values were floats
  return out;
}

}  // namespace flymc
