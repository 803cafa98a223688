#pragma once
/// @file hash.hpp
/// A fast 64-bit hash of byte strings (not cryptographic): checkpoint checksums and the data
/// fingerprint that ties a checkpoint or an MPI rank to the data it was made from.
#include <cstddef>
#include <cstdint>

namespace flymc {

/// 64-bit hash of a byte string: four independent lanes of 8-byte words, each step
/// w ↦ rotl(h ^ w·K1, 27)·K2 + K3 a bijection of h and of w, so a change confined to one word
/// always changes the result; other corruptions collide with probability ~2^-64.
std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed = 0) noexcept;

/// Combines an accumulated hash with the hash of the next part (order matters).
std::uint64_t hash_combine(std::uint64_t acc, std::uint64_t part) noexcept;

/// A hash of two integers, e.g. a table's dimensions, to start a combined hash from.
std::uint64_t hash_pair(std::uint64_t a, std::uint64_t b) noexcept;

}  // namespace flymc
