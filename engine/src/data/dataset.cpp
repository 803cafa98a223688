#include "flymc/data/dataset.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

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

}  // namespace flymc
