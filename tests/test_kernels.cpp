// Accuracy and consistency tests for flymc::kernels: the compiled SIMD path and the scalar
// reference (flymc::kernels::scalar) are both checked against long double references.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/kernels/kernels.hpp"

namespace {

namespace fk = flymc::kernels;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDenormMin = std::numeric_limits<double>::denorm_min();
constexpr double kEps = std::numeric_limits<double>::epsilon();

// ---- Helpers ------------------------------------------------------------------------------------

struct FreeDeleter {
  void operator()(double* p) const noexcept { std::free(p); }
};
using AlignedDoubles = std::unique_ptr<double[], FreeDeleter>;

/// n doubles, 64-byte aligned, zero-filled.
AlignedDoubles aligned_zeros(std::size_t n) {
  const std::size_t bytes = std::max<std::size_t>(64, (n * sizeof(double) + 63) / 64 * 64);
  auto* p = static_cast<double*>(std::aligned_alloc(64, bytes));
  REQUIRE(p != nullptr);
  std::fill(p, p + bytes / sizeof(double), 0.0);
  return AlignedDoubles(p);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// |got − ref| in units in the last place of the exact value ref (binary64 ulp: 2^(e−52), and
/// 2^−1074 in the subnormal range).
double ulp_error(long double got, long double ref) {
  if (got == ref) return 0.0;
  const int e = std::max(std::ilogb(static_cast<double>(ref)), -1022);
  const long double ulp = std::ldexp(1.0L, e - 52);
  return static_cast<double>(std::fabs(got - ref) / ulp);
}

/// Accuracy bookkeeping for one function over a sweep: ≤ max_ulp where the exact result is not
/// tiny, absolute error ≤ 1e-300 where it is; special values (NaN, ±inf) must match exactly.
struct Accuracy {
  double max_ulp_allowed = 4.0;
  double max_ulp = 0.0;
  double worst_x = 0.0;
  std::size_t points = 0, failures = 0;
  std::string first_failure;

  void add(double x, double got, long double ref) {
    ++points;
    bool ok;
    if (std::isnan(ref)) {
      ok = std::isnan(got);
    } else if (std::isinf(ref)) {
      ok = static_cast<long double>(got) == ref;
    } else if (std::fabs(ref) < 1e-300L) {
      ok = std::fabs(static_cast<long double>(got) - ref) <= 1e-300L;
    } else {
      const double u = ulp_error(got, ref);
      if (u > max_ulp) max_ulp = u, worst_x = x;
      ok = u <= max_ulp_allowed;
    }
    if (!ok && failures++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "x=%.17g got=%.17g ref=%.20Lg", x, got, ref);
      first_failure = buf;
    }
  }
};

// ---- Long double references -------------------------------------------------------------------

long double ref_log_sigmoid(double a) {
  const long double x = a;
  return std::fmin(x, 0.0L) - std::log1p(std::exp(-std::fabs(x)));
}

/// log(expm1(x)) in long double. Near x = ln 2 the result crosses zero, and log(expm1(x)) has no
/// relative accuracy even in long double, so there it uses e^x − 1 = 1 + 2·expm1(x − ln 2) with ln
/// 2 in two long double parts (ln 2 = kHi + kLo to ~2^−128; x − kHi is exact).
long double ref_log_expm1(double xd) {
  const long double x = xd;
  if (std::isnan(x) || x < 0) return std::numeric_limits<long double>::quiet_NaN();
  if (x <= 0.25L) return std::log(std::expm1(x));
  if (x <= 3.0L) {
    constexpr long double kHi = 0xb17217f7d1cf79acp-64L;
    constexpr long double kLo = -0xd871319ff0342543p-130L;
    return std::log1p(2.0L * std::expm1((x - kHi) - kLo));
  }
  return x + std::log1p(-std::exp(-x));
}

long double ref_dot(const double* a, const double* b, std::size_t n, long double* abs_sum) {
  long double s = 0, as = 0;
  for (std::size_t j = 0; j < n; ++j) {
    s += static_cast<long double>(a[j]) * b[j];
    as += std::fabs(static_cast<long double>(a[j]) * b[j]);
  }
  if (abs_sum) *abs_sum = as;
  return s;
}

// ---- Sweeps -------------------------------------------------------------------------------------

/// Dense sweep of [−1e4, 1e4] for log σ: a uniform grid, a geometric grid of ±|a| from 1e-320 to
/// 1e4 (every scale), neighbourhoods of 0, ±1 and the exp under/overflow points, random doubles,
/// and the special values.
std::vector<double> log_sigmoid_points() {
  std::vector<double> v;
  const int n_uniform = 1 << 20;
  for (int i = 0; i <= n_uniform; ++i) v.push_back(-1e4 + 2e4 * i / n_uniform);
  for (int i = 0; i <= 200000; ++i) {
    const double m = std::pow(10.0, -320.0 + 324.0 * i / 200000);
    v.push_back(m);
    v.push_back(-m);
  }
  for (double c : {0.0, 1.0, -1.0, 36.0, -36.0, 708.0, -708.0, 745.0, -745.0, 709.78, -709.78}) {
    double lo = c, hi = c;
    for (int i = 0; i < 2000; ++i) {
      lo = std::nextafter(lo, -kInf), hi = std::nextafter(hi, kInf);
      v.push_back(lo), v.push_back(hi);
    }
  }
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-1e4, 1e4), small(-40.0, 40.0);
  for (int i = 0; i < 200000; ++i) v.push_back(u(rng)), v.push_back(small(rng));
  for (double s : {0.0, -0.0, 1e-300, -1e-300, kDenormMin, -kDenormMin, 745.0, -745.0, 746.0,
                   -746.0, 1e4, -1e4, 1e300, -1e300, std::numeric_limits<double>::max(),
                   -std::numeric_limits<double>::max(), kInf, -kInf, kNaN}) {
    v.push_back(s);
  }
  return v;
}

/// log expm1 on [0, 1e4]: uniform and geometric grids, thousands of ulps either side of ln 2
/// (where the result crosses zero) and of the formula switch points, random values, specials.
std::vector<double> log_expm1_points() {
  std::vector<double> v;
  const int n_uniform = 1 << 19;
  for (int i = 0; i <= n_uniform; ++i) v.push_back(1e4 * i / n_uniform);
  for (int i = 0; i <= 200000; ++i) v.push_back(std::pow(10.0, -320.0 + 324.0 * i / 200000));
  for (int i = 0; i <= 100000; ++i) v.push_back(4.0 * i / 100000);
  const double ln2 = 0x1.62e42fefa39efp-1;
  for (double c : {ln2, 0.25, 0.375, 1.0, 2.0, 3.0, 36.0, 709.0}) {
    double lo = c, hi = c;
    for (int i = 0; i < 5000; ++i) {
      lo = std::nextafter(lo, -kInf), hi = std::nextafter(hi, kInf);
      v.push_back(lo), v.push_back(hi);
    }
  }
  for (int i = -10000; i <= 10000; ++i) v.push_back(ln2 + i * 1e-10);
  std::mt19937_64 rng(6789);
  std::uniform_real_distribution<double> u(0.0, 1e4), small(0.0, 4.0);
  for (int i = 0; i < 200000; ++i) v.push_back(u(rng)), v.push_back(small(rng));
  for (double s :
       {0.0, -0.0, 1e-300, kDenormMin, 1e-10, 0.5, 1.0, 1.0 + kEps, 30.0, 700.0, 1e4, 1e300,
        std::numeric_limits<double>::max(), kInf, kNaN, -1.0, -kDenormMin, -kInf}) {
    v.push_back(s);
  }
  return v;
}

/// log1p on [−1, max]: uniform grids on (−1, 4] and [0, 1e4], a geometric grid of ±|x| from
/// 1e-320 (every scale, both signs up to 1), x = −1 + 2^−k (1 + x tiny, exact), thousands of ulps
/// either side of −1/2 and 1 (where the rounding correction switches on and its form changes) and
/// of √2/2 − 1, √2 − 1 (where the reduction leaves k = 0), random values, and specials.
std::vector<double> log1p_points() {
  std::vector<double> v;
  const int n_uniform = 1 << 19;
  for (int i = 1; i <= n_uniform; ++i) v.push_back(-1.0 + 5.0 * i / n_uniform);
  for (int i = 0; i <= 100000; ++i) v.push_back(1e4 * i / 100000);
  for (int i = 0; i <= 200000; ++i) {
    const double m = std::pow(10.0, -320.0 + 628.0 * i / 200000);
    v.push_back(m);
    if (m < 1.0) v.push_back(-m);
  }
  for (int k = 1; k <= 1074; ++k) v.push_back(-1.0 + std::ldexp(1.0, -k));
  const double s2 = 0x1.6a09e667f3bcdp+0;
  for (double c : {-0.5, 1.0, s2 / 2.0 - 1.0, s2 - 1.0, 0.0, -1.0}) {
    double lo = c, hi = c;
    for (int i = 0; i < 5000; ++i) {
      lo = std::nextafter(lo, -kInf), hi = std::nextafter(hi, kInf);
      if (lo >= -1.0) v.push_back(lo);
      v.push_back(hi);
    }
  }
  std::mt19937_64 rng(2468);
  std::uniform_real_distribution<double> u(-1.0, 3.0), wide(0.0, 1e6);
  for (int i = 0; i < 200000; ++i) v.push_back(u(rng)), v.push_back(wide(rng));
  for (double s :
       {0.0, -0.0, 1e-300, -1e-300, kDenormMin, -kDenormMin, kEps, -kEps / 2, 1e300,
        std::numeric_limits<double>::max(), -1.0, -1.0 - kEps, -2.0, kInf, -kInf, kNaN}) {
    v.push_back(s);
  }
  return v;
}

template <class Array, class One, class Ref>
void check_element_function(const char* name, const std::vector<double>& x, Array array_fn,
                            One one_fn, One scalar_fn, Ref ref) {
  std::vector<double> out(x.size());
  array_fn(x.data(), out.data(), x.size());
  Accuracy simd, scal;
  std::size_t array_vs_one = 0, not_deterministic = 0;
  std::vector<double> again(x.size());
  array_fn(x.data(), again.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double r = ref(x[i]);
    simd.add(x[i], out[i], r);
    scal.add(x[i], scalar_fn(x[i]), r);
    if (!same_bits(one_fn(x[i]), out[i])) ++array_vs_one;
    if (!same_bits(again[i], out[i])) ++not_deterministic;
  }
  MESSAGE(std::string(name) << " [" << std::string(fk::simd_name()) << "] " << simd.points
                            << " points: max " << simd.max_ulp << " ulp (at x=" << simd.worst_x
                            << "); scalar reference max " << scal.max_ulp << " ulp");
  INFO(name << ": " << simd.first_failure);
  CHECK(simd.failures == 0);
  INFO(name << " scalar: " << scal.first_failure);
  CHECK(scal.failures == 0);
  CHECK(array_vs_one == 0);
  CHECK(not_deterministic == 0);
}

/// A random matrix with `nrows` rows of d = stride − pad features (zero padded).
AlignedDoubles random_rows(std::size_t nrows, std::size_t stride, std::size_t pad,
                           std::mt19937_64& rng, double scale = 1.0) {
  auto m = aligned_zeros(nrows * stride);
  std::normal_distribution<double> g(0.0, scale);
  for (std::size_t i = 0; i < nrows; ++i) {
    for (std::size_t j = 0; j + pad < stride; ++j) m[i * stride + j] = g(rng);
  }
  return m;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("kernels: simd_name matches the compile flags") {
    const std::string name = fk::simd_name();
#if defined(__AVX512F__) && defined(__AVX512VL__)
    CHECK(name == "avx512");
    CHECK(fk::simd_lanes() == 8);
#elif defined(__AVX2__) && defined(__FMA__)
    CHECK(name == "avx2");
    CHECK(fk::simd_lanes() == 4);
#else
    CHECK(name == "scalar");
    CHECK(fk::simd_lanes() == 1);
#endif
  }

  TEST_CASE("kernels: log_sigmoid within 4 ulp over [-1e4, 1e4]") {
    check_element_function(
        "log_sigmoid", log_sigmoid_points(),
        [](const double* a, double* o, std::size_t n) { fk::log_sigmoid(a, o, n); },
        static_cast<double (*)(double)>(fk::log_sigmoid),
        static_cast<double (*)(double)>(fk::scalar::log_sigmoid), ref_log_sigmoid);
  }

  TEST_CASE("kernels: log_expm1 within 4 ulp over [0, 1e4], ln 2 included") {
    check_element_function(
        "log_expm1", log_expm1_points(),
        [](const double* x, double* o, std::size_t n) { fk::log_expm1(x, o, n); },
        static_cast<double (*)(double)>(fk::log_expm1),
        static_cast<double (*)(double)>(fk::scalar::log_expm1), ref_log_expm1);
  }

  TEST_CASE("kernels: log1p within 4 ulp over [-1, max], near -1 included") {
    check_element_function(
        "log1p", log1p_points(),
        [](const double* x, double* o, std::size_t n) { fk::log1p(x, o, n); },
        static_cast<double (*)(double)>(fk::log1p),
        static_cast<double (*)(double)>(fk::scalar::log1p),
        [](double x) { return std::log1p(static_cast<long double>(x)); });
    for (auto f : {static_cast<double (*)(double)>(fk::log1p),
                   static_cast<double (*)(double)>(fk::scalar::log1p)}) {
      CHECK(f(-1.0) == -kInf);
      CHECK(f(kInf) == kInf);
      CHECK(std::isnan(f(-1.0 - kEps)));
      CHECK(std::isnan(f(-kInf)));
      CHECK(std::isnan(f(kNaN)));
      CHECK(f(0.0) == 0.0);
      CHECK(f(1e-300) == 1e-300);
    }
    // NaN lanes do not leak into their neighbours.
    const double in[5] = {1.0, kNaN, -2.0, -1.0, 3.0};
    double out[5];
    fk::log1p(in, out, 5);
    CHECK(out[0] == fk::log1p(1.0));
    CHECK(std::isnan(out[1]));
    CHECK(std::isnan(out[2]));
    CHECK(out[3] == -kInf);
    CHECK(out[4] == fk::log1p(3.0));
  }

  TEST_CASE("kernels: element functions at known values (mpmath, 400 bits)") {
    struct Known {
      double x;
      double exact;
    };
    const double ln2 = 0x1.62e42fefa39efp-1;
    const Known ls[] = {{0.0, -0.69314718055994530942},
                        {1.0, -0.31326168751822283405},
                        {-1.0, -1.313261687518222834},
                        {40.0, -4.2483542552915889863e-18},
                        {-40.0, -40.0},
                        {1e-300, -0.69314718055994530942},
                        {-1e-300, -0.69314718055994530942},
                        {-745.0, -745.0},
                        {700.0, -9.8596765437597708567e-305},
                        {30.0, -9.3576229688397367794e-14},
                        {-30.0, -30.000000000000093576},
                        {0.1, -0.64439666007357089219}};
    const Known le[] = {{1e-300, -690.77552789821370518},
                        {1e-10, -23.025850929890456804},
                        {0.5, -0.43275212956718857189},
                        {1.0, 0.54132485461291810898},
                        {1.0 + kEps, 0.54132485461291846025},
                        {30.0, 29.999999999999906424},
                        {700.0, 700.0},
                        {1e4, 1e4},
                        {ln2, -4.6380936276925992848e-17},
                        {std::nextafter(ln2, 1.0), 1.7566366864810530806e-16},
                        {std::nextafter(ln2, 0.0), -2.6842554120195731841e-16},
                        {0.375, -0.78747672918019398333},
                        {2.0, 1.854586542131140943},
                        {kDenormMin, -744.44007192138126231}};
    for (const auto& k : ls) {
      CAPTURE(k.x);
      CHECK(ulp_error(fk::log_sigmoid(k.x), k.exact) <= 1.0);
      CHECK(ulp_error(fk::scalar::log_sigmoid(k.x), k.exact) <= 1.0);
      CHECK(ulp_error(ref_log_sigmoid(k.x), k.exact) <= 0.51);  // the reference itself
    }
    CHECK(std::fabs(fk::log_sigmoid(745.0) + 2.8223507304719370764e-324) <= 1e-300);
    for (const auto& k : le) {
      CAPTURE(k.x);
      CHECK(ulp_error(fk::log_expm1(k.x), k.exact) <= 1.0);
      CHECK(ulp_error(fk::scalar::log_expm1(k.x), k.exact) <= 1.0);
      CHECK(ulp_error(ref_log_expm1(k.x), k.exact) <= 0.51);
    }
  }

  TEST_CASE("kernels: special values") {
    for (auto f : {static_cast<double (*)(double)>(fk::log_sigmoid),
                   static_cast<double (*)(double)>(fk::scalar::log_sigmoid)}) {
      CHECK(f(-kInf) == -kInf);
      CHECK(f(kInf) == 0.0);
      CHECK(std::isnan(f(kNaN)));
      CHECK(f(-1e300) == -1e300);
      CHECK(f(0.0) == doctest::Approx(-std::log(2.0)).epsilon(1e-16));
    }
    for (auto f : {static_cast<double (*)(double)>(fk::log_expm1),
                   static_cast<double (*)(double)>(fk::scalar::log_expm1)}) {
      CHECK(f(0.0) == -kInf);
      CHECK(f(-0.0) == -kInf);
      CHECK(f(kInf) == kInf);
      CHECK(std::isnan(f(kNaN)));
      CHECK(std::isnan(f(-1.0)));
      CHECK(std::isnan(f(-kInf)));
      CHECK(f(1e300) == 1e300);
    }
    // NaN lanes do not leak into their neighbours in the array forms.
    const double in[5] = {1.0, kNaN, -2.0, kNaN, 3.0};
    double out[5];
    fk::log_sigmoid(in, out, 5);
    CHECK(std::isnan(out[1]));
    CHECK(std::isnan(out[3]));
    CHECK(out[0] == fk::log_sigmoid(1.0));
    CHECK(out[4] == fk::log_sigmoid(3.0));
    fk::log_expm1(in, out, 5);
    CHECK(std::isnan(out[1]));
    CHECK(std::isnan(out[2]));
    CHECK(out[4] == fk::log_expm1(3.0));
  }

  TEST_CASE("kernels: dot products vs long double; dot, packed and gather agree bit for bit") {
    std::mt19937_64 rng(42);
    for (std::size_t stride : {8u, 16u, 24u, 56u, 64u, 200u}) {
      const std::size_t nrows = 157;  // several full SIMD groups and a partial one
      const auto rows = random_rows(nrows, stride, stride > 8 ? 5 : 3, rng);
      const auto theta = random_rows(1, stride, 0, rng);
      std::vector<double> packed(nrows), again(nrows), sc(nrows);
      fk::dots_packed(rows.get(), nrows, stride, theta.get(), packed.data());
      fk::dots_packed(rows.get(), nrows, stride, theta.get(), again.data());
      fk::scalar::dots_packed(rows.get(), nrows, stride, theta.get(), sc.data());
      std::size_t bad = 0, mismatched = 0;
      for (std::size_t i = 0; i < nrows; ++i) {
        long double abs_sum;
        const long double r = ref_dot(rows.get() + i * stride, theta.get(), stride, &abs_sum);
        const long double tol = 1e-13L * abs_sum + 1e-300L;
        if (std::fabs(packed[i] - r) > tol || std::fabs(sc[i] - r) > tol) ++bad;
        if (!same_bits(packed[i], again[i])) ++mismatched;
        if (!same_bits(packed[i], fk::dot(rows.get() + i * stride, theta.get(), stride))) {
          ++mismatched;
        }
      }
      CAPTURE(stride);
      CHECK(bad == 0);
      CHECK(mismatched == 0);

      // Partial blocks: every nrows from 0 to 2·lanes + 1 gives the same per-row results.
      for (std::size_t n = 0; n <= 17; ++n) {
        std::vector<double> part(n + 1, -7.0);
        fk::dots_packed(rows.get() + 3 * stride, n, stride, theta.get(), part.data());
        for (std::size_t i = 0; i < n; ++i) CHECK(same_bits(part[i], packed[3 + i]));
        CHECK(part[n] == -7.0);  // nothing written past the end
      }

      // Gather: random indices with repeats, every k up to 40 and a long one.
      std::uniform_int_distribution<fk::Index> pick(0, nrows - 1);
      for (std::size_t k : {0u, 1u, 3u, 7u, 8u, 9u, 15u, 16u, 31u, 33u, 40u, 1000u}) {
        std::vector<fk::Index> idx(k);
        for (auto& v : idx) v = pick(rng);
        std::vector<double> g(k + 1, -7.0), gs(k);
        fk::dots_gather(rows.get(), stride, idx.data(), k, theta.get(), g.data());
        fk::scalar::dots_gather(rows.get(), stride, idx.data(), k, theta.get(), gs.data());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < k; ++i) {
          differ += !same_bits(g[i], packed[idx[i]]);
          differ += !same_bits(gs[i], sc[idx[i]]);
        }
        CAPTURE(k);
        CHECK(differ == 0);
        CHECK(g[k] == -7.0);
      }
    }
  }

  TEST_CASE("kernels: sum_log_sigmoid_signed vs the scalar sum") {
    std::mt19937_64 rng(7);
    const std::size_t stride = 56;
    for (std::size_t n : {0u, 1u, 5u, 8u, 13u, 64u, 1000u, 4099u}) {
      // Features of scale 3 give margins from ~0 to ~±100: both tails of log σ are exercised.
      const auto rows = random_rows(n, stride, 5, rng, 3.0);
      const auto theta = random_rows(1, stride, 5, rng, 1.0);
      std::vector<double> y(n);
      std::uniform_int_distribution<int> coin(0, 3);
      for (auto& v : y) v = coin(rng) == 0 ? 0.5 : (coin(rng) & 1 ? 1.0 : -1.0);
      long double ref = 0, abs_sum = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const long double z = y[i] * ref_dot(rows.get() + i * stride, theta.get(), stride, nullptr);
        const long double l = std::fmin(z, 0.0L) - std::log1p(std::exp(-std::fabs(z)));
        ref += l, abs_sum += std::fabs(l);
      }
      const double s = fk::sum_log_sigmoid_signed(rows.get(), n, stride, y.data(), theta.get());
      const double ss =
          fk::scalar::sum_log_sigmoid_signed(rows.get(), n, stride, y.data(), theta.get());
      CAPTURE(n);
      CHECK(std::fabs(s - ref) <= 1e-13L * abs_sum);
      CHECK(std::fabs(ss - ref) <= 1e-13L * abs_sum);
      CHECK(same_bits(s, fk::sum_log_sigmoid_signed(rows.get(), n, stride, y.data(), theta.get())));
      if (n == 0) CHECK(s == 0.0);
    }
  }
}

TEST_SUITE("unit") {
  TEST_CASE("kernels: array exp and log agree with libm within 2 ulp, special values kept") {
    std::vector<double> x, out, ref;
    flymc::Rng rng(5, 5);
    for (int i = 0; i < 200000; ++i) x.push_back(-740.0 + 1449.0 * rng.uniform());
    for (double v : {0.0, -0.0, 1e-300, -1e-300, 709.7, -745.0, 1.0, -1.0}) x.push_back(v);
    out.resize(x.size());
    flymc::kernels::exp(x.data(), out.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = std::exp(x[i]);
      if (r > 1e-300) {
        CHECK(std::fabs(out[i] - r) <= 2.0 * std::fabs(std::nextafter(r, INFINITY) - r));
      } else {
        CHECK(std::fabs(out[i] - r) <= 1e-300);
      }
    }
    std::vector<double> y;
    for (int i = 0; i < 200000; ++i) y.push_back(std::exp(-700.0 + 1400.0 * rng.uniform()));
    for (double v : {1.0, 2.0, 0.5, 1e-310, 1.0 + 1e-15, 1.0 - 1e-16}) y.push_back(v);
    out.resize(y.size());
    flymc::kernels::log(y.data(), out.data(), y.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double r = std::log(y[i]);
      CHECK(std::fabs(out[i] - r) <= 2.0 * std::fabs(std::nextafter(r, INFINITY) - r) + 1e-300);
    }
    const double sp[] = {0.0, -1.0, INFINITY, NAN, -INFINITY};
    double o[5];
    flymc::kernels::log(sp, o, 5);
    CHECK(o[0] == -INFINITY);
    CHECK(std::isnan(o[1]));
    CHECK(o[2] == INFINITY);
    CHECK(std::isnan(o[3]));
    CHECK(std::isnan(o[4]));
    flymc::kernels::exp(sp, o, 5);
    CHECK(o[0] == 1.0);
    CHECK(o[2] == INFINITY);
    CHECK(std::isnan(o[3]));
    CHECK(o[4] == 0.0);
  }

  TEST_CASE("kernels: weighted_row_sum_cols over column slices equals weighted_row_sum") {
    // The parallel FlyMC gradient sums slices of columns on different threads; every slicing
    // must give the unsliced bits (and the scalar path's, to rounding).
    const std::size_t nrows = 37, stride = 72, cstride = 3;
    AlignedDoubles rows = aligned_zeros(nrows * stride);
    std::vector<double> c(nrows * cstride);
    flymc::Rng rng(8, 1);
    for (std::size_t i = 0; i < nrows * stride; ++i) rows[i] = rng.normal();
    for (double& v : c) v = rng.normal();
    AlignedDoubles whole = aligned_zeros(stride), ref = aligned_zeros(stride);
    for (std::size_t j = 0; j < stride; ++j) whole[j] = ref[j] = 0.25 * static_cast<double>(j);
    fk::weighted_row_sum(rows.get(), nrows, stride, c.data() + 1, cstride, whole.get());
    fk::scalar::weighted_row_sum(rows.get(), nrows, stride, c.data() + 1, cstride, ref.get());
    for (std::size_t slice : {8u, 16u, 24u, 32u, 64u}) {
      CAPTURE(slice);
      AlignedDoubles part = aligned_zeros(stride);
      for (std::size_t j = 0; j < stride; ++j) part[j] = 0.25 * static_cast<double>(j);
      for (std::size_t j0 = 0; j0 < stride; j0 += slice)
        fk::weighted_row_sum_cols(rows.get() + j0, nrows, stride, std::min(slice, stride - j0),
                                  c.data() + 1, cstride, part.get() + j0);
      for (std::size_t j = 0; j < stride; ++j) CHECK(same_bits(part[j], whole[j]));
    }
    for (std::size_t j = 0; j < stride; ++j)
      CHECK(std::fabs(whole[j] - ref[j]) <= 1e-12 * (1.0 + std::fabs(ref[j])));
  }

  TEST_CASE("kernels: cubic_form over the padded layout vs a long double triple sum") {
    // Dimensions around the vector widths and SMH's d = 51; the padding is filled with zeros
    // as the layout requires, and a nonzero value just past u's zeros must not be read.
    for (std::size_t d : {1u, 2u, 7u, 8u, 9u, 15u, 16u, 17u, 24u, 51u}) {
      CAPTURE(d);
      flymc::Rng rng(9, d);
      REQUIRE(fk::cubic_padded_size(d) % 8 == 0);
      AlignedDoubles t = aligned_zeros(fk::cubic_padded_size(d));
      AlignedDoubles u = aligned_zeros(d + 9);
      for (std::size_t j = 0; j < d; ++j) u[j] = rng.normal();
      u[d + 8] = kNaN;  // beyond the 8 zeros the layout asks for
      long double ref = 0.0L, magnitude = 0.0L;
      std::size_t at = 0;
      for (std::size_t a = 0; a < d; ++a)
        for (std::size_t b = a; b < d; ++b) {
          for (std::size_t k = b; k < d; ++k) {
            t[at + k - b] = rng.normal();
            const long double term = static_cast<long double>(t[at + k - b]) * u[a] * u[b] * u[k];
            ref += term;
            magnitude += std::fabs(term);
          }
          at += (d - b + 7) / 8 * 8;
        }
      REQUIRE(at == fk::cubic_padded_size(d));
      const double tol = static_cast<double>(magnitude) * 64 * kEps;
      CHECK(std::fabs(fk::cubic_form(t.get(), u.get(), d) - static_cast<double>(ref)) <= tol);
      CHECK(std::fabs(fk::scalar::cubic_form(t.get(), u.get(), d) - static_cast<double>(ref)) <=
            tol);
    }
  }
}
