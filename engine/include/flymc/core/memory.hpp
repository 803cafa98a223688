#pragma once
/// @file memory.hpp
/// Allocation of the large arrays that samplers read at scattered places (the data matrix, the
/// alias tables of the piecewise-deterministic samplers).
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

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

/// HugePageAllocator whose resize() default-initializes new elements (for a trivially
/// default-constructible T: leaves them unwritten) instead of zeroing them, so that a large
/// array is first touched by the parallel pass that fills every element, not by one thread
/// zeroing it beforehand.
template <class T>
struct HugePageUninitAllocator : HugePageAllocator<T> {
  template <class U>
  struct rebind {
    using other = HugePageUninitAllocator<U>;
  };
  HugePageUninitAllocator() = default;
  template <class U>
  HugePageUninitAllocator(const HugePageUninitAllocator<U>&) noexcept {}  // NOLINT: rebinding
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

}  // namespace flymc
