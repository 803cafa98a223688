#include "flymc/core/memory.hpp"

#include <sys/mman.h>

#include <new>

namespace flymc {

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

}  // namespace flymc
