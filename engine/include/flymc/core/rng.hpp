#pragma once
/// @file rng.hpp
/// Counter-free, splittable random streams: xoshiro256++ (Blackman & Vigna 2019, "Scrambled linear
/// pseudorandom number generators"), seeded through SplitMix64 from (seed, stream). Every chain
/// owns one stream made up front from (seed, chain_id), so draws never depend on scheduling.
///
/// Thread safety: an Rng object must not be shared between threads; distinct objects are
/// independent.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace flymc {

__extension__ typedef unsigned __int128 uint128_t;  // GCC/Clang builtin, for Lemire's method

/// Tables of the 256-layer ziggurat for N(0, 1) (Marsaglia & Tsang 2000, "The ziggurat method
/// for generating random variables", J. Stat. Softw. 5(8); their published r and V). Layer i is
/// [0, x[i]] × [f(x[i]), f(x[i+1])] with f(x) = e^{−x²/2}; x[0] = V/f(r) is the base strip's
/// width (base rectangle plus tail), x[1] = r, x[256] = 0.
struct ZigguratTables {
  static constexpr double kR = 3.6541528853610088;
  static constexpr double kV = 0.00492867323399;
  std::array<double, 257> x{};
  std::array<double, 257> f{};
  ZigguratTables() noexcept {
    x[0] = kV / std::exp(-0.5 * kR * kR);
    x[1] = kR;
    for (int i = 1; i < 255; ++i)
      x[i + 1] = std::sqrt(-2.0 * std::log(kV / x[i] + std::exp(-0.5 * x[i] * x[i])));
    x[256] = 0.0;
    for (int i = 0; i <= 256; ++i) f[i] = std::exp(-0.5 * x[i] * x[i]);
  }
  static const ZigguratTables& get() noexcept {
    static const ZigguratTables t;
    return t;
  }
};

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
  /// Standard normal by the ziggurat method (exact in distribution; ~99% of draws take one
  /// 64-bit word, a multiply and a compare). The layer index (low 8 bits) and the signed
  /// uniform (high 53 bits) come from disjoint bits of one word (Doornik 2005's fix of the
  /// original's correlation).
  double normal() noexcept {
    const ZigguratTables& t = ZigguratTables::get();
    while (true) {
      const std::uint64_t w = (*this)();
      const int i = static_cast<int>(w & 0xff);
      const double u = double(w >> 11) * 0x1.0p-52 - 1.0;  // [−1, 1)
      const double x = u * t.x[i];
      if (std::fabs(u) < t.x[i + 1] / t.x[i]) return x;  // inside the layer's inner rectangle
      if (i == 0) {
        // Base strip: the tail beyond r (Marsaglia 1964).
        double a, b;
        do {
          a = -std::log(uniform_pos()) / ZigguratTables::kR;
          b = -std::log(uniform_pos());
        } while (2.0 * b < a * a);
        return u < 0.0 ? -(ZigguratTables::kR + a) : ZigguratTables::kR + a;
      }
      // Wedge: accept under the density.
      if (t.f[i] + uniform() * (t.f[i + 1] - t.f[i]) < std::exp(-0.5 * x * x)) return x;
    }
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
  };
  State state() const noexcept { return {{s_[0], s_[1], s_[2], s_[3]}}; }
  void set_state(const State& st) noexcept {
    for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

/// A Gamma(shape, 1) draw (shape > 0): Marsaglia and Tsang, "A simple method for generating
/// gamma variables" (ACM TOMS 26, 2000), with shape < 1 boosted by U^(1/shape).
double gamma_draw(double shape, Rng& rng);

}  // namespace flymc
