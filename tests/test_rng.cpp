// Random streams: determinism, independence of streams, and the distributions the samplers use.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "flymc/core/alias_table.hpp"
#include "flymc/core/rng.hpp"

using flymc::AliasTable;
using flymc::BlockAliasTable;
using flymc::Rng;

TEST_SUITE("unit") {
  TEST_CASE("Rng streams are deterministic per (seed, stream) and differ across streams") {
    Rng a(42, 1), b(42, 1), c(42, 2), d(43, 1);
    for (int i = 0; i < 100; ++i) {
      const auto va = a();
      CHECK(va == b());
      CHECK(va != c());
      CHECK(va != d());
    }
    Rng e(7, 3);
    const auto st = e.state();
    const double n1 = e.normal();
    e.set_state(st);
    CHECK(e.normal() == n1);
  }

  // Ziggurat normals against exact N(0,1) tail probabilities: for each threshold t, the count of
  // |x| > t among n = 4e6 draws is Binomial(n, 2Φ(−t)); require |count − mean| < 5 sd. The
  // thresholds straddle the ziggurat's base strip (r = 3.654) so the tail and wedges are covered.
  TEST_CASE("Rng::normal matches N(0,1) moments and tail probabilities") {
    Rng rng(2024, 0);
    const int n = 4000000;
    const double ts[] = {0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 3.6541528853610088, 3.9, 4.5};
    std::vector<double> cnt(std::size(ts), 0.0);
    double m1 = 0, m2 = 0, m4 = 0, pos = 0;
    for (int i = 0; i < n; ++i) {
      const double x = rng.normal();
      m1 += x, m2 += x * x, m4 += x * x * x * x;
      pos += x > 0;
      for (std::size_t k = 0; k < std::size(ts); ++k) cnt[k] += std::fabs(x) > ts[k];
    }
    m1 /= n, m2 /= n, m4 /= n;
    CHECK(std::fabs(m1) < 5.0 / std::sqrt(double(n)));
    CHECK(std::fabs(m2 - 1.0) < 5.0 * std::sqrt(2.0 / n));
    CHECK(std::fabs(m4 - 3.0) < 5.0 * std::sqrt(96.0 / n));
    CHECK(std::fabs(pos - n / 2.0) < 5.0 * std::sqrt(n / 4.0));
    for (std::size_t k = 0; k < std::size(ts); ++k) {
      CAPTURE(ts[k]);
      const double p = std::erfc(ts[k] / std::sqrt(2.0));
      const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
      CHECK(std::fabs(cnt[k] - mean) < 5.0 * sd);
    }
  }

  TEST_CASE("Rng::geometric has the Geometric(q) law P(G >= k) = (1-q)^k") {
    Rng rng(9, 9);
    const double q = 0.03;
    const double inv = 1.0 / std::log1p(-q);
    const int n = 1000000;
    std::vector<double> ge(6, 0.0);
    const int ks[] = {0, 1, 10, 30, 100, 200};
    for (int i = 0; i < n; ++i) {
      const auto g = rng.geometric(inv);
      for (int k = 0; k < 6; ++k) ge[k] += g >= static_cast<std::uint64_t>(ks[k]);
    }
    for (int k = 0; k < 6; ++k) {
      const double p = std::pow(1 - q, ks[k]);
      CHECK(std::fabs(ge[k] - n * p) <= 5.0 * std::sqrt(n * p * (1 - p)) + 1e-9);
    }
  }

  TEST_CASE("AliasTable draws index i with probability w_i / sum w") {
    // Weights over four orders of magnitude, zeros among them: every count within 5 binomial
    // sds of its expectation, and a zero weight never drawn.
    const std::vector<double> w{0.0, 1e-3, 2.0, 0.5, 0.0, 7.5, 1.0, 0.25, 3.0};
    const AliasTable t(w);
    CHECK(t.total() == doctest::Approx(14.251));
    Rng rng(7, 3);
    const int draws = 2000000;
    std::vector<long> count(w.size(), 0);
    for (int k = 0; k < draws; ++k) ++count[t.draw(rng)];
    for (std::size_t i = 0; i < w.size(); ++i) {
      CAPTURE(i);
      const double p = w[i] / t.total(), e = p * draws;
      if (w[i] == 0.0) CHECK(count[i] == 0);
      CHECK(std::fabs(static_cast<double>(count[i]) - e) <= 5.0 * std::sqrt(e * (1.0 - p)) + 1.0);
    }
    CHECK_THROWS_AS(AliasTable(std::vector<double>{}), std::invalid_argument);
    CHECK_THROWS_AS(AliasTable(std::vector<double>{0.0, 0.0}), std::invalid_argument);
    CHECK_THROWS_AS(AliasTable(std::vector<double>{1.0, -1.0}), std::invalid_argument);
    CHECK_THROWS_AS(AliasTable(std::vector<double>{1.0, std::nan("")}), std::invalid_argument);
  }

  TEST_CASE("BlockAliasTable draws within a block with probability w_i / block sum") {
    // Blocks of 4: {0, 1e-3, 2, 0.5}, {0, 7.5, 1, 0.25}, {0, 0, 0, 0} (never asked), {3, 1}.
    const std::vector<double> w{0.0,  1e-3, 2.0, 0.5, 0.0, 7.5, 1.0,
                                0.25, 0.0,  0.0, 0.0, 0.0, 3.0, 1.0};
    const BlockAliasTable t(w, 4);
    REQUIRE(t.blocks() == 4);
    CHECK(t.rows(3) == 2);
    Rng rng(7, 4);
    const int draws = 1000000;
    for (const std::size_t b : {0, 1, 3}) {
      CAPTURE(b);
      double total = 0.0;
      for (std::size_t i = 0; i < t.rows(b); ++i) total += w[4 * b + i];
      std::vector<long> count(t.rows(b), 0);
      for (int k = 0; k < draws; ++k) {
        const std::uint32_t i = t.index(b, rng());
        REQUIRE(i < t.rows(b));
        ++count[i];
      }
      for (std::size_t i = 0; i < t.rows(b); ++i) {
        CAPTURE(i);
        const double p = w[4 * b + i] / total, e = p * draws;
        if (p == 0.0) CHECK(count[i] == 0);
        CHECK(std::fabs(static_cast<double>(count[i]) - e) <= 5.0 * std::sqrt(e * (1.0 - p)) + 1.0);
      }
    }
    CHECK_THROWS_AS(BlockAliasTable(w, 0), std::invalid_argument);
    CHECK_THROWS_AS(BlockAliasTable(std::vector<double>{1.0, -1.0}, 2), std::invalid_argument);
  }
}
