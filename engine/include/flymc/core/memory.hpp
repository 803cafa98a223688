#pragma once
/// @file memory.hpp
/// Allocation of the large arrays that samplers read at scattered places (the data matrix, the
/// alias tables of the piecewise-deterministic samplers).
#include <cstddef>
#include <cstdlib>

namespace flymc {

/// `bytes` uninitialized, 64-byte aligned; blocks of 8 MiB or more are 2 MiB aligned and advised
/// as huge pages. Free with std::free. Throws std::bad_alloc.
void* huge_page_alloc(std::size_t bytes);

/// An allocator (for std::vector) of arrays read at random: through huge_page_alloc, so that
/// large ones sit on 2 MiB pages and a scattered read costs a cache miss but rarely a TLB miss.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding converts
  T* allocate(std::size_t n) { return static_cast<T*>(huge_page_alloc(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace flymc
