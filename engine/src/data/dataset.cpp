#include "flymc/data/dataset.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace flymc {

void AlignedFree::operator()(double* p) const noexcept { std::free(p); }

void* huge_page_alloc(std::size_t bytes) {
  // Large buffers are 2 MiB aligned and advised as huge pages: zero-filling hundreds of MB then
  // takes a fraction of the time the 4 KiB page faults would, and scattered reads into them
  // rarely miss the TLB.
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  bytes = ((bytes + 63) / 64) * 64;
  if (bytes == 0) bytes = 64;
  const bool huge = bytes >= 4 * kHuge;
  if (huge) bytes = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(huge ? kHuge : 64, bytes);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) ::madvise(p, bytes, MADV_HUGEPAGE);  // advisory; failure is harmless
#endif
  return p;
}

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
