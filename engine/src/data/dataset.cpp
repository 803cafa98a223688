#include "flymc/data/dataset.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "flymc/core/errors.hpp"
#include "flymc/core/hash.hpp"
#include "flymc/core/parallel.hpp"

namespace flymc {

void AlignedFree::operator()(double* p) const noexcept { std::free(p); }

AlignedBuffer aligned_zeros(std::size_t count) {
  const std::size_t bytes = std::max<std::size_t>(64, ((count * sizeof(double) + 63) / 64) * 64);
  void* p = huge_page_alloc(bytes);
  // Zeroed in pieces on every core: the first touch of a data matrix of gigabytes (its page
  // faults and the zeroing) is then shared out instead of being one thread's.
  constexpr std::size_t kPiece = std::size_t{16} << 20;
  auto* bytes_p = static_cast<unsigned char*>(p);
  chunked_for(bytes, kPiece,
              [&](std::size_t lo, std::size_t hi) { std::memset(bytes_p + lo, 0, hi - lo); });
  return AlignedBuffer(static_cast<double*>(p));
}

Dataset::Dataset(std::size_t n, std::size_t d, std::string source)
    : n_(n),
      d_(d),
      stride_(padded_stride(d)),
      source_(std::move(source)),
      x_(aligned_zeros(n * padded_stride(d))),
      y_(n, 0.0) {}

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

std::uint64_t data_fingerprint(const Dataset& data) {
  const std::size_t n = data.n(), stride = data.stride();
  const auto y = data.y();
  return deterministic_reduce(
      n, kReduceGrain, hash_pair(n, data.d()),
      [&](std::size_t lo, std::size_t hi) {
        const std::uint64_t hx = hash_bytes(data.row(lo), (hi - lo) * stride * sizeof(double), lo);
        return hash_bytes(y.data() + lo, (hi - lo) * sizeof(double), hx);
      },
      hash_combine);
}

std::shared_ptr<const Dataset> subset_rows(const Dataset& data, const std::vector<Index>& rows) {
  auto out = std::make_shared<Dataset>(rows.size(), data.d(), data.source());
  std::vector<double>& y = out->mutable_y();
  y.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(out->mutable_row(i), data.row(rows[i]), data.stride() * sizeof(double));
    y[i] = data.y()[rows[i]];
  }
  return out;
}

std::shared_ptr<const Dataset> gather_rows(const Dataset& data, const std::vector<Index>& rows) {
  const RowShard* s = data.shard();
  if (s == nullptr) return subset_rows(data, rows);
  if (!std::is_sorted(rows.begin(), rows.end()))
    throw Error(data.source() + ": gather_rows needs ascending row indices");
  const std::size_t d = data.d(), lo = s->first_row, hi = lo + data.n();
  std::vector<double> mine;  // the rows held here: label, then the features
  for (const Index r : rows)
    if (r >= lo && r < hi) {
      mine.push_back(data.y()[r - lo]);
      mine.insert(mine.end(), data.row(r - lo), data.row(r - lo) + d);
    }
  const std::vector<double> all = s->link->gather_in_order(mine);
  if (all.size() != rows.size() * (d + 1))
    throw Error(data.source() + ": the shards hold " + std::to_string(all.size() / (d + 1)) +
                " of the " + std::to_string(rows.size()) + " rows asked for");
  auto out = std::make_shared<Dataset>(rows.size(), d, data.source());
  std::vector<double>& y = out->mutable_y();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    y[i] = all[i * (d + 1)];
    std::memcpy(out->mutable_row(i), all.data() + i * (d + 1) + 1, d * sizeof(double));
  }
  return out;
}

}  // namespace flymc
