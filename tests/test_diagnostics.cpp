#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/diagnostics/diagnostics.hpp"

// Reference values below were produced by R 4.2.2 with r-cran-posterior 1.4.0 running the R
// script embedded in the `// R:` lines of this file:
//
//   sed -n 's|^// R: \?||p' tests/test_diagnostics.cpp | Rscript -
//
// The script's generators are mirrored bit for bit by the C++ ones below (integer LCG, left to
// right sums, and products kept out of fused multiply-adds through a volatile temporary).
//
// R: suppressMessages(library(posterior))
// R: lcg <- function(seed, n) {  # Park-Miller minimal standard LCG, exact in doubles
// R:   u <- numeric(n); s <- seed
// R:   for (i in seq_len(n)) { s <- (16807 * s) %% 2147483647; u[i] <- s / 2147483647 }
// R:   u
// R: }
// R: noise <- function(seed, n) {  # Irwin-Hall: sum of 12 uniforms - 6, summed left to right
// R:   u <- lcg(seed, 12 * n); e <- numeric(n)
// R:   for (i in seq_len(n)) {
// R:     a <- 0
// R:     for (k in 1:12) a <- a + u[12 * (i - 1) + k]
// R:     e[i] <- a - 6
// R:   }
// R:   e
// R: }
// R: ar1 <- function(seed, n, phi) {
// R:   e <- noise(seed, n); x <- numeric(n); x[1] <- e[1]
// R:   for (i in seq_len(n)[-1]) x[i] <- phi * x[i - 1] + e[i]
// R:   x
// R: }
// R: heavy <- function(seed, n) {  # Cauchy-like ratio (u1 - 0.5) / u2
// R:   u <- lcg(seed, 2 * n); (u[2 * seq_len(n) - 1] - 0.5) / u[2 * seq_len(n)]
// R: }
// R: gen <- function(kind, chains, n) {
// R:   m <- matrix(0, n, chains)
// R:   for (c in seq_len(chains)) {
// R:     seed <- 1000 * c + 7
// R:     m[, c] <- switch(kind,
// R:       ar1 = ar1(seed, n, 0.9),
// R:       heavy = heavy(seed, n),
// R:       ties = floor(ar1(seed, n, 0.5)),
// R:       shifted = ar1(seed, n, 0.5) + 0.5 * c,
// R:       anti = ar1(seed, n, -0.7),
// R:       alt = (-1)^(seq_len(n)) + 1e-3 * noise(seed, n))
// R:   }
// R:   m
// R: }
// R: f <- function(v) {  # C++ literals; NA becomes kNaN
// R:   ifelse(is.na(v), "kNaN", ifelse(is.infinite(v), ifelse(v > 0, "kInf", "-kInf"),
// R:                                   sprintf("%.15g", v)))
// R: }
// R: stats <- function(m) {
// R:   q <- quantile2(m, c(0.05, 0.5, 0.95), names = FALSE)
// R:   v <- c(rhat(m), ess_bulk(m), ess_tail(m), ess_mean(m), mcse_mean(m), mean(m), sd(m), q)
// R:   paste(f(v), collapse = ", ")
// R: }
// R: cases <- list(list("ar1", 4, 1000), list("ar1", 1, 1001), list("ar1", 1, 1000),
// R:               list("heavy", 4, 501), list("ties", 3, 200), list("shifted", 4, 500),
// R:               list("anti", 2, 1000), list("alt", 2, 999), list("ar1", 4, 100000))
// R: for (cs in cases) {
// R:   m <- gen(cs[[1]], cs[[2]], cs[[3]])
// R:   cat(sprintf("    {\"%s\", %d, %d, {%s}},\n", cs[[1]], cs[[2]], cs[[3]], stats(m)))
// R: }
// R: fixed <- list(
// R:   quirk3 = matrix(c(1, 2, 3, 4, 6, 5, 7, 9, 8, 3, 1, 2), ncol = 4),
// R:   quirk2 = matrix(c(1, 2, 4, 6, 7, 9, 3, 1), ncol = 4),
// R:   five = matrix(c(1, 2, 5, 3, 4), ncol = 1),
// R:   inf = matrix(c(1, 2, 5, 3, 4, Inf, 0), ncol = 1),
// R:   infs = matrix(c(-Inf, -Inf, -Inf, Inf, Inf, Inf), ncol = 1),
// R:   nan = matrix(c(1, 2, 5, 3, 4, NaN, 0, 1), ncol = 2),
// R:   constant = matrix(1, 4, 2),
// R:   twoconst = matrix(c(1, 1, 1, 1, 2, 2, 2, 2), ncol = 2),
// R:   oneconst = matrix(c(rep(2, 8), 0.5, 2, 1.5, 3, 0.2, 1.1, 2.5, 0.7), ncol = 2))
// R: for (nm in names(fixed)) {
// R:   m <- fixed[[nm]]
// R:   ch <- apply(m, 2, function(col) paste0("{", paste(f(col), collapse = ", "), "}"))
// R:   cat(sprintf("    {\"%s\", {%s}, {%s}},\n", nm, paste(ch, collapse = ", "), stats(m)))
// R: }
// R: p <- c(1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 0.001, 0.02425, 0.07, 0.075, 0.2, 0.3, 0.5,
// R:        0.6, 0.8, 0.925, 0.93, 0.99, 0.999999, 1 - 1e-12)
// R: cat(sprintf("    {%s, %s},\n", sprintf("%.17g", p), sprintf("%.17g", qnorm(p))), sep = "")

namespace {

using flymc::ChainDraws;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Park-Miller minimal standard LCG, s <- 16807 s mod (2^31 - 1), u = s / (2^31 - 1).
std::vector<double> lcg(std::uint64_t seed, std::size_t n) {
  std::vector<double> u(n);
  std::uint64_t s = seed;
  for (auto& value : u) {
    s = 16807 * s % 2147483647;
    value = static_cast<double>(s) / 2147483647.0;
  }
  return u;
}

// Irwin-Hall noise: sum of 12 uniforms minus 6, summed left to right as the R loop does.
std::vector<double> noise(std::uint64_t seed, std::size_t n) {
  const std::vector<double> u = lcg(seed, 12 * n);
  std::vector<double> e(n);
  for (std::size_t i = 0; i < n; ++i) {
    double a = 0;
    for (std::size_t k = 0; k < 12; ++k) a += u[12 * i + k];
    e[i] = a - 6;
  }
  return e;
}

// x_1 = e_1, x_t = phi x_{t-1} + e_t.
std::vector<double> ar1(std::uint64_t seed, std::size_t n, double phi) {
  const std::vector<double> e = noise(seed, n);
  std::vector<double> x(n);
  x[0] = e[0];
  for (std::size_t i = 1; i < n; ++i) {
    const volatile double product = phi * x[i - 1];  // R rounds the product before adding
    x[i] = product + e[i];
  }
  return x;
}

ChainDraws generate(const std::string& kind, int chains, int n) {
  const auto un = static_cast<std::size_t>(n);
  ChainDraws draws;
  for (int c = 1; c <= chains; ++c) {
    const auto seed = static_cast<std::uint64_t>(1000 * c + 7);
    std::vector<double> x(un);
    if (kind == "ar1") {
      x = ar1(seed, un, 0.9);
    } else if (kind == "heavy") {
      const std::vector<double> u = lcg(seed, 2 * un);
      for (std::size_t i = 0; i < un; ++i) x[i] = (u[2 * i] - 0.5) / u[2 * i + 1];
    } else if (kind == "ties") {
      x = ar1(seed, un, 0.5);
      for (auto& value : x) value = std::floor(value);
    } else if (kind == "shifted") {
      x = ar1(seed, un, 0.5);
      for (auto& value : x) value += 0.5 * c;
    } else if (kind == "anti") {
      x = ar1(seed, un, -0.7);
    } else if (kind == "alt") {
      const std::vector<double> e = noise(seed, un);
      for (std::size_t i = 0; i < un; ++i) {
        const volatile double small = 1e-3 * e[i];
        x[i] = (i % 2 == 0 ? -1.0 : 1.0) + small;
      }
    } else {
      FAIL("unknown kind " << kind);
    }
    draws.push_back(std::move(x));
  }
  return draws;
}

// Order of the reference values: rhat, ess_bulk, ess_tail, ess_mean, mcse_mean, mean, sd, q5,
// q50, q95.
constexpr int kNumStats = 10;
const char* const kStatNames[kNumStats] = {"rhat", "ess_bulk", "ess_tail", "ess_mean", "mcse_mean",
                                           "mean", "sd",       "q5",       "q50",      "q95"};

struct GeneratedCase {
  const char* kind;
  int chains;
  int n;
  double ref[kNumStats];
};

const GeneratedCase kGenerated[] = {
    {"ar1",
     4,
     1000,
     {1.01325281251711, 185.113000488756, 324.656500718237, 182.560965531264, 0.170206237760848,
      0.0524561137371237, 2.29974368069987, -3.72892970551332, -0.0066697745995177,
      3.91657432788874}},
    {"ar1",
     1,
     1001,
     {1.00321740362363, 43.5167325848128, 118.237492205649, 43.4135106922978, 0.345164810651167,
      -0.22269271590381, 2.27425399759117, -4.14149167521914, -0.196032319296614, 3.3623229989595}},
    {"ar1",
     1,
     1000,
     {1.00342580891555, 43.2372659732485, 116.058725497628, 43.1480352910173, 0.346334638495241,
      -0.224070411808697, 2.27497402365728, -4.14160398123547, -0.196310722907564,
      3.36283989560453}},
    {"heavy",
     4,
     501,
     {1.00053096912225, 1788.85139416778, 1932.23546036046, 1963.48177466138, 0.230085944192513,
      0.0903060080685967, 10.1953825487939, -2.38944661023033, 0.00222185539803337,
      2.55187970382158}},
    {"ties",
     3,
     200,
     {1.00590638079931, 241.198462038792, 347.024070610338, 240.686735458328, 0.0755927579605498,
      -0.416666666666667, 1.1727522338039, -2, 0, 1}},
    {"shifted",
     4,
     500,
     {1.13646149240643, 23.3328762132698, 322.595981713108, 23.2530343423047, 0.267943271134129,
      1.29318834116546, 1.29205996998709, -0.829118022327787, 1.28861341445346, 3.46343496164834}},
    {"anti",
     2,
     1000,
     {1.00242254294942, 6602.05999132796, 1272.38921734191, 6602.05999132796, 0.0171102069396456,
      0.0109418790411038, 1.39025669550288, -2.28797845020431, 0.0362392090234346,
      2.30678526336529}},
    {"alt",
     2,
     999,
     {0.999411599065824, 5562.53627747473, 2020.9639669218, 998, 0.0316608303178698,
      -0.000983707196126845, 1.00020165969874, -1.00121635169246, -0.997165286752007,
      1.0012753640507}},
    {"ar1",
     4,
     100000,
     {1.00016180532746, 21106.6293019726, 45683.1167705423, 21102.489731246, 0.0156742638914835,
      -0.00520516009172249, 2.27695266918502, -3.75082616209939, -0.00647275760994678,
      3.73263784571375}},
};

struct FixedCase {
  const char* name;
  ChainDraws draws;
  double ref[kNumStats];
};

const FixedCase kFixed[] = {
    {"quirk3",
     ChainDraws{{1, 2, 3}, {4, 6, 5}, {7, 9, 8}, {3, 1, 2}},
     {0.906664026544438, 4, kNaN, 4, 1.36723011297228, 4.25, 2.73446022594455, 1, 3.5, 8.45}},
    {"quirk2",
     ChainDraws{{1, 2}, {4, 6}, {7, 9}, {3, 1}},
     {0.994475690482815, 4, 4, 4, 1.47448538238164, 4.125, 2.94897076476329, 1, 3.5, 8.3}},
    {"five",
     ChainDraws{{1, 2, 5, 3, 4}},
     {1.93236168175088, kNaN, kNaN, kNaN, kNaN, 3, 1.58113883008419, 1.2, 3, 4.8}},
    {"inf",
     ChainDraws{{1, 2, 5, 3, 4, kInf, 0}},
     {0.964967354582823, 3, kNaN, kNaN, kNaN, kInf, kNaN, 0.3, 3, kInf}},
    {"infs",
     ChainDraws{{-kInf, -kInf, -kInf, kInf, kInf, kInf}},
     {kNaN, 3, kNaN, kNaN, kNaN, kNaN, kNaN, -kInf, kNaN, kInf}},
    {"nan",
     ChainDraws{{1, 2, 5, 3}, {4, kNaN, 0, 1}},
     {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"constant",
     ChainDraws{{1, 1, 1, 1}, {1, 1, 1, 1}},
     {kNaN, kNaN, kNaN, kNaN, kNaN, 1, 0, 1, 1, 1}},
    {"twoconst",
     ChainDraws{{1, 1, 1, 1}, {2, 2, 2, 2}},
     {kNaN, kNaN, kNaN, kNaN, kNaN, 1.5, 0.534522483824849, 1, 1.5, 2}},
    {"oneconst",
     ChainDraws{{2, 2, 2, 2, 2, 2, 2, 2}, {0.5, 2, 1.5, 3, 0.2, 1.1, 2.5, 0.7}},
     {1.70988016592881, 8, 8, 8, 0.261794687366519, 1.71875, 0.740467194861911, 0.425, 2, 2.625}},
};

// Agreement to 1e-10 relative; NaN (posterior's NA) must be NaN, infinities must match exactly.
void check_close(double actual, double expected, const char* what) {
  INFO(what << ": actual " << actual << ", posterior " << expected);
  if (std::isnan(expected)) {
    CHECK(std::isnan(actual));
  } else if (std::isinf(expected) || expected == 0) {
    CHECK(actual == expected);
  } else {
    CHECK(actual == doctest::Approx(expected).epsilon(1e-10).scale(0));
  }
}

void check_all(const ChainDraws& x, const double (&ref)[kNumStats]) {
  const double individual[kNumStats] = {flymc::rhat(x),
                                        flymc::ess_bulk(x),
                                        flymc::ess_tail(x),
                                        flymc::ess_mean(x),
                                        flymc::mcse_mean(x),
                                        kNaN,
                                        kNaN,
                                        flymc::quantile(x, 0.05),
                                        flymc::quantile(x, 0.5),
                                        flymc::quantile(x, 0.95)};
  for (int k = 0; k < kNumStats; ++k) {
    if (k == 5 || k == 6) continue;  // mean and sd exist only in the summary
    check_close(individual[k], ref[k], kStatNames[k]);
  }
  const flymc::ParamSummary s = flymc::summarize(x);
  const double summary[kNumStats] = {s.rhat, s.ess_bulk, s.ess_tail, kNaN,  s.mcse_mean,
                                     s.mean, s.sd,       s.q5,       s.q50, s.q95};
  for (int k = 0; k < kNumStats; ++k) {
    if (k == 3) continue;  // ess_mean is not part of the summary
    check_close(summary[k], ref[k], kStatNames[k]);
  }
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("diagnostics agree with posterior 1.4.0 on generated chains") {
    for (const auto& c : kGenerated) {
      INFO(c.kind << ", " << c.chains << " chains x " << c.n << " draws");
      check_all(generate(c.kind, c.chains, c.n), c.ref);
    }
  }

  TEST_CASE("diagnostics agree with posterior 1.4.0 on small and degenerate inputs") {
    for (const auto& c : kFixed) {
      INFO(c.name);
      check_all(c.draws, c.ref);
    }
  }

  TEST_CASE("normal_quantile matches R's qnorm (AS241) to 2 ulp") {
    struct Point {
      double p, z;
    };
    const Point points[] = {
        {1e-300, -37.047096299361201},
        {1e-100, -21.273453560965319},
        {9.9999999999999995e-21, -9.2623400897984052},
        {1e-10, -6.3613409024040557},
        {1.0000000000000001e-05, -4.2648907939228256},
        {0.001, -3.0902323061678132},
        {0.024250000000000001, -1.9729610513118845},
        {0.070000000000000007, -1.4757910281791702},
        {0.074999999999999997, -1.4395314709384557},
        {0.20000000000000001, -0.84162123357291418},
        {0.29999999999999999, -0.52440051270804067},
        {0.5, 0},
        {0.59999999999999998, 0.25334710313579978},
        {0.80000000000000004, 0.84162123357291441},
        {0.92500000000000004, 1.4395314709384559},
        {0.93000000000000005, 1.4757910281791708},
        {0.98999999999999999, 2.3263478740408408},
        {0.99999899999999997, 4.7534243088170891},
        {0.99999999999900002, 7.0344869100478356},
    };
    for (const auto& pt : points) {
      INFO("p = " << pt.p);
      const double z = flymc::detail::normal_quantile(pt.p);
      if (pt.z == 0) {
        CHECK(z == 0.0);
      } else {
        CHECK(z == doctest::Approx(pt.z).epsilon(4e-16).scale(0));
      }
    }
    CHECK(flymc::detail::normal_quantile(0.0) == -kInf);
    CHECK(flymc::detail::normal_quantile(1.0) == kInf);
    CHECK(std::isnan(flymc::detail::normal_quantile(-0.1)));
    CHECK(std::isnan(flymc::detail::normal_quantile(1.1)));
    CHECK(std::isnan(flymc::detail::normal_quantile(kNaN)));
    // Exact antisymmetry in all three branches (1 - p is exact for these dyadic p).
    for (double p : {0x1p-40, 0x1p-30, 0x1p-7, 0.25, 0.375}) {
      CHECK(flymc::detail::normal_quantile(p) == -flymc::detail::normal_quantile(1 - p));
    }
  }

  TEST_CASE("quantile follows R's type 7 definition") {
    const ChainDraws x = {{4, 1, 3}, {2, 5, 10}};  // sorted: 1 2 3 4 5 10
    CHECK(flymc::quantile(x, 0.0) == 1.0);
    CHECK(flymc::quantile(x, 1.0) == 10.0);
    CHECK(flymc::quantile(x, 0.5) == 3.5);
    CHECK(flymc::quantile(x, 0.9) == doctest::Approx(7.5).epsilon(1e-15).scale(0));
    CHECK(flymc::quantile(x, 1 + 1e-15) == 10.0);  // within R's 100 eps tolerance
    CHECK(std::isnan(flymc::quantile(x, kNaN)));
    CHECK_THROWS_AS((void)flymc::quantile(x, 1.01), flymc::Error);
    CHECK_THROWS_AS((void)flymc::quantile(x, -0.01), flymc::Error);
    CHECK(std::isnan(flymc::quantile(ChainDraws{}, 0.5)));
    CHECK(std::isnan(flymc::quantile(ChainDraws{{}, {}}, 0.5)));
  }

  TEST_CASE("diagnostics reject ragged chains and return NaN without draws") {
    const ChainDraws ragged = {{1, 2, 3, 4}, {1, 2, 3}};
    CHECK_THROWS_AS((void)flymc::rhat(ragged), flymc::Error);
    CHECK_THROWS_AS((void)flymc::ess_bulk(ragged), flymc::Error);
    CHECK_THROWS_AS((void)flymc::ess_tail(ragged), flymc::Error);
    CHECK_THROWS_AS((void)flymc::ess_mean(ragged), flymc::Error);
    CHECK_THROWS_AS((void)flymc::mcse_mean(ragged), flymc::Error);
    CHECK_THROWS_AS((void)flymc::quantile(ragged, 0.5), flymc::Error);
    CHECK_THROWS_AS((void)flymc::summarize(ragged), flymc::Error);

    for (const ChainDraws& empty : {ChainDraws{}, ChainDraws{{}, {}}}) {
      CHECK(std::isnan(flymc::rhat(empty)));
      CHECK(std::isnan(flymc::ess_bulk(empty)));
      CHECK(std::isnan(flymc::ess_tail(empty)));
      CHECK(std::isnan(flymc::ess_mean(empty)));
      CHECK(std::isnan(flymc::mcse_mean(empty)));
      const flymc::ParamSummary s = flymc::summarize(empty);
      CHECK(std::isnan(s.mean));
      CHECK(std::isnan(s.sd));
      CHECK(std::isnan(s.q50));
      CHECK(std::isnan(s.rhat));
      CHECK(std::isnan(s.ess_bulk));
    }
  }

  TEST_CASE("too few draws give NaN as posterior's NA") {
    // One draw: split_chains leaves it alone and every estimator is NA.
    const ChainDraws one = {{0.3}};
    CHECK(std::isnan(flymc::rhat(one)));
    CHECK(std::isnan(flymc::ess_bulk(one)));
    CHECK(std::isnan(flymc::ess_mean(one)));
    CHECK(flymc::quantile(one, 0.3) == 0.3);
    // Four draws in one chain split into two chains of two: ESS needs three per split chain,
    // R̂ does not.
    const ChainDraws four = {{0.3, 1.2, -0.4, 2.0}};
    CHECK(std::isnan(flymc::ess_bulk(four)));
    CHECK(std::isnan(flymc::ess_tail(four)));
    CHECK(std::isnan(flymc::ess_mean(four)));
    CHECK(std::isfinite(flymc::rhat(four)));
  }
}
