#include "flymc/data/dataset.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "flymc/core/hash.hpp"
#include "flymc/core/parallel.hpp"

namespace flymc {

void AlignedFree::operator()(double* p) const noexcept { std::free(p); }

AlignedBuffer aligned_zeros(std::size_t count) {
  const std::size_t bytes = std::max<std::size_t>(64, ((count * sizeof(double) + 63) / 64) * 64);
  void* p = huge_page_alloc(bytes);
  std::memset(p, 0, bytes);
  return AlignedBuffer(static_cast<double*>(p));
}

Dataset::Dataset(std::size_t n, std::size_t d, std::string source)
    : n_(n),
      d_(d),
      stride_(padded_stride(d)),
      source_(std::move(source)),
      x_(aligned_zeros(n * padded_stride(d))),
      y_(n, 0.0) {}

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

}  // namespace flymc
