#include "flymc/core/hash.hpp"

#include <cstring>

namespace flymc {
namespace {

constexpr std::uint64_t kK1 = 0x9e3779b97f4a7c15ULL, kK2 = 0xc2b2ae3d27d4eb4fULL,
                        kK3 = 0x165667b19e3779f9ULL;

inline std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
inline std::uint64_t lane_step(std::uint64_t h, std::uint64_t w) noexcept {
  return rotl(h ^ (w * kK1), 27) * kK2 + kK3;
}
/// A bijective 64-bit finalizer (the SplitMix64 output function).
inline std::uint64_t fmix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t load_word(const unsigned char* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

}  // namespace

std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h[4] = {seed ^ kK1, seed ^ kK2, seed ^ kK3, seed ^ (kK1 + kK2)};
  std::size_t i = 0;
  for (; i + 32 <= size; i += 32)
    for (int l = 0; l < 4; ++l) h[l] = lane_step(h[l], load_word(p + i + 8 * l));
  for (int l = 0; i + 8 <= size; i += 8, ++l) h[l] = lane_step(h[l], load_word(p + i));
  if (i < size) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + i, size - i);
    h[3] = lane_step(h[3], w);
  }
  std::uint64_t r = fmix(seed ^ (static_cast<std::uint64_t>(size) * kK2));
  for (std::uint64_t x : h) r = fmix(r ^ x) + kK3;
  return r;
}

std::uint64_t hash_combine(std::uint64_t acc, std::uint64_t part) noexcept {
  return fmix(acc * kK2 ^ part) + kK1;
}

std::uint64_t hash_pair(std::uint64_t a, std::uint64_t b) noexcept {
  return fmix(fmix(a * kK1) ^ b);
}

}  // namespace flymc
