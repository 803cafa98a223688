#pragma once
/// @file rng.hpp
/// Counter-free, splittable random streams: xoshiro256++ (Blackman & Vigna 2019, "Scrambled linear
/// pseudorandom number generators"), seeded through SplitMix64 from (seed, stream). Every chain
/// owns one stream made up front from (seed, chain_id), so draws never depend on scheduling.
///
/// Thread safety: an Rng object must not be shared between threads; distinct objects are
/// independent.
#include <cmath>
#include <cstdint>
#include <limits>

namespace flymc {

__extension__ typedef unsigned __int128 uint128_t;  // GCC/Clang builtin, for Lemire's method

/// SplitMix64 step (Steele, Lea & Flood 2014); used only to expand seeds.
inline std::uint64_t splitmix64(std::uint64_t& s) noexcept {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  using result_type = std::uint64_t;
  /// Stream `stream` of master seed `seed`; distinct (seed, stream) pairs give unrelated streams.
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0) noexcept {
    std::uint64_t sm = seed ^ (0x632be59bd9b4e019ULL * (stream + 1));
    for (auto& w : s_) w = splitmix64(sm);
    for (int i = 0; i < 8; ++i) (*this)();  // decorrelate nearby seeds
  }
  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  result_type operator()() noexcept {
    const std::uint64_t result = rotl(s_[0] + s_[3], 23) + s_[0];
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform on [0, 1) with 53 random bits.
  double uniform() noexcept { return double((*this)() >> 11) * 0x1.0p-53; }
  /// Uniform on (0, 1): never 0, safe to take the log of.
  double uniform_pos() noexcept { return (double((*this)() >> 11) + 0.5) * 0x1.0p-53; }
  /// Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^64, negligible).
  std::uint64_t below(std::uint64_t n) noexcept {
    return static_cast<std::uint64_t>((static_cast<uint128_t>((*this)()) * n) >> 64);
  }
  /// Standard normal (Marsaglia polar method; exact in distribution, second value cached).
  double normal() noexcept {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }
  /// Number of failures before the first success of Bernoulli(p) trials, given 1/log1p(−p).
  /// `inv_log1mp` must be 1/log(1−p) (negative). Returns a huge value when p is tiny.
  std::uint64_t geometric(double inv_log1mp) noexcept {
    const double g = std::floor(std::log(uniform_pos()) * inv_log1mp);
    return g >= 1.8e19 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(g);
  }

  /// Full state, for checkpoints.
  struct State {
    std::uint64_t s[4];
    double spare;
    bool has_spare;
  };
  State state() const noexcept { return {{s_[0], s_[1], s_[2], s_[3]}, spare_, has_spare_}; }
  void set_state(const State& st) noexcept {
    for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
    spare_ = st.spare;
    has_spare_ = st.has_spare;
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace flymc
