/// @file diagnostics.cpp
/// Convergence diagnostics following the definitions of R's `posterior` package, version 1.4.0
/// (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021, "Rank-normalization, folding, and
/// localization: an improved R̂ for assessing convergence of MCMC", Bayesian Analysis 16(2)).
/// Each helper below names the posterior / R function whose documented behaviour it reproduces,
/// including the order of floating point operations where that affects the last bits and the
/// corner cases in which posterior returns NA (returned here as NaN).
#include "flymc/diagnostics/diagnostics.hpp"

#include <tbb/parallel_invoke.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unsupported/Eigen/FFT>
#include <utility>

#include "flymc/core/errors.hpp"

// R is built without fused multiply-add contraction; keeping a * b + c as two rounded operations
// makes normal_quantile() bit-identical to R's qnorm() and the rest follow R's rounding.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace flymc {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Iterations x chains matrix stored column-major, i.e. R's as.matrix() of a draws_array of one
/// variable: v[c * n_iter + i] is iteration i of chain c.
struct Draws {
  std::size_t n_iter = 0;
  std::size_t n_chain = 0;
  std::vector<double> v;

  const double* col(std::size_t c) const { return v.data() + c * n_iter; }
  double* col(std::size_t c) { return v.data() + c * n_iter; }
  std::size_t size() const { return v.size(); }
};

Draws to_draws(const ChainDraws& x) {
  Draws d;
  d.n_chain = x.size();
  d.n_iter = x.empty() ? 0 : x.front().size();
  for (std::size_t c = 0; c < x.size(); ++c) {
    if (x[c].size() != d.n_iter) {
      throw Error("diagnostics: chain " + std::to_string(c) + " has " +
                  std::to_string(x[c].size()) + " draws but chain 0 has " +
                  std::to_string(d.n_iter) + "; all chains must have the same length");
    }
  }
  d.v.reserve(d.n_chain * d.n_iter);
  for (const auto& chain : x) d.v.insert(d.v.end(), chain.begin(), chain.end());
  return d;
}

bool any_nan(const std::vector<double>& x) {
  return std::any_of(x.begin(), x.end(), [](double value) { return std::isnan(value); });
}

/// R's mean() of a double vector (summary.c): long double sum, then one correction pass.
double r_mean(const double* x, std::size_t n) {
  if (n == 0) return kNaN;
  long double s = 0.0L;
  for (std::size_t i = 0; i < n; ++i) s += x[i];
  s /= static_cast<long double>(n);
  if (std::isfinite(static_cast<double>(s))) {
    long double t = 0.0L;
    for (std::size_t i = 0; i < n; ++i) t += (x[i] - s);
    s += t / static_cast<long double>(n);
  }
  return static_cast<double>(s);
}

/// R's var() of a double vector (cov.c): mean as in r_mean, then the long double sum of squared
/// deviations divided by n - 1. NA (NaN here) for fewer than two values.
double r_var(const double* x, std::size_t n) {
  if (n < 2) return kNaN;
  const double m = r_mean(x, n);
  long double s = 0.0L;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = x[i] - m;
    s += d * d;
  }
  return static_cast<double>(s / static_cast<long double>(n - 1));
}

/// matrixStats::colMeans2 / base colMeans: long double sum divided by n, no correction pass.
double col_mean(const double* x, std::size_t n) {
  long double s = 0.0L;
  for (std::size_t i = 0; i < n; ++i) s += x[i];
  return static_cast<double>(s / static_cast<long double>(n));
}

/// matrixStats::colVars(x, center = m) (0.63.0): colMeans((x - m)^2) * (n / (n - 1)); NA for
/// n <= 1.
double col_var(const double* x, std::size_t n, double m) {
  if (n <= 1) return kNaN;
  long double s = 0.0L;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = x[i] - m;
    s += d * d;
  }
  const double mean_sq = static_cast<double>(s / static_cast<long double>(n));
  return mean_sq * (static_cast<double>(n) / static_cast<double>(n - 1));
}

/// posterior:::should_return_NA: any NA/NaN or infinite value, or max - min below double eps.
bool should_return_na(const Draws& x) {
  if (x.size() == 0) return true;
  double lo = x.v[0];
  double hi = x.v[0];
  for (double value : x.v) {
    if (!std::isfinite(value)) return true;
    lo = std::min(lo, value);
    hi = std::max(hi, value);
  }
  return std::fabs(hi - lo) < DBL_EPSILON;
}

/// R's max(a, b) / min(a, b): NA if either is NA.
double r_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
double r_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }

/// Positions of stats::quantile(type = 7): index = 1 + (n - 1) p, lo = floor, hi = ceiling
/// (1-based). p must be finite and is clamped to [0, 1] first, as R does.
struct Type7 {
  double index, lo, hi;
};
Type7 type7_positions(std::size_t n, double p) {
  p = std::max(0.0, std::min(1.0, p));
  const double index = 1.0 + static_cast<double>(n - 1) * p;
  return {index, std::floor(index), std::ceil(index)};
}

/// The type-7 interpolation between the order statistics x_lo and x_hi.
double type7_value(const Type7& pos, double x_lo, double x_hi) {
  double q = x_lo;
  if (pos.index > pos.lo && x_hi != q) {
    const double h = pos.index - pos.lo;
    q = (1 - h) * q + h * x_hi;
  }
  return q;
}

/// stats::quantile(type = 7) of an unsorted sample without NaN, by selection (R's partial sort).
/// Reorders `x`.
double quantile7_select(std::vector<double>& x, double p) {
  if (x.empty() || std::isnan(p)) return kNaN;
  const Type7 pos = type7_positions(x.size(), p);
  const auto lo = static_cast<std::size_t>(pos.lo) - 1;
  const auto hi = static_cast<std::size_t>(pos.hi) - 1;
  std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(lo), x.end());
  const double x_lo = x[lo];
  const double x_hi =
      hi == lo ? x_lo : *std::min_element(x.begin() + static_cast<std::ptrdiff_t>(hi), x.end());
  return type7_value(pos, x_lo, x_hi);
}

/// posterior:::.split_chains: each chain's first floor(n/2) and last floor(n/2) draws become two
/// chains (the middle draw of an odd-length chain is dropped); all first halves come first. A
/// single iteration is returned unchanged. With exactly one draw per half and several chains,
/// R's `x[1:1, ]` drops to a vector and cbind() yields a chains x 2 matrix whose columns are the
/// first and the last draws; posterior's results for such inputs reflect that, so it is kept.
/// split_shape() gives the dimensions of the result and for_each_split() calls f(from, to) for
/// every draw x.v[from] that lands at position `to` of the result.
struct Shape {
  std::size_t n_iter, n_chain;
};

Shape split_shape(const Draws& x) {
  const std::size_t half = x.n_iter / 2;
  if (x.n_iter == 1) return {x.n_iter, x.n_chain};
  if (half == 1 && x.n_chain > 1) return {x.n_chain, 2};
  return {half, 2 * x.n_chain};
}

template <class F>
void for_each_split(const Draws& x, F&& f) {
  const std::size_t n = x.n_iter;
  const std::size_t chains = x.n_chain;
  if (n == 1) {
    for (std::size_t i = 0; i < x.size(); ++i) f(i, i);
    return;
  }
  const std::size_t half = n / 2;
  const std::size_t second = n - half;
  if (half == 1 && chains > 1) {
    for (std::size_t c = 0; c < chains; ++c) {
      f(c * n, c);
      f(c * n + n - 1, chains + c);
    }
    return;
  }
  for (std::size_t c = 0; c < chains; ++c) {
    for (std::size_t i = 0; i < half; ++i) f(c * n + i, c * half + i);
    for (std::size_t i = 0; i < half; ++i) f(c * n + second + i, (chains + c) * half + i);
  }
}

/// split_chains() applied to value(from) for every draw.
template <class F>
Draws split_map(const Draws& x, F&& value) {
  const Shape shape = split_shape(x);
  Draws out;
  out.n_iter = shape.n_iter;
  out.n_chain = shape.n_chain;
  out.v.resize(shape.n_iter * shape.n_chain);
  for_each_split(x, [&](std::size_t from, std::size_t to) { out.v[to] = value(from); });
  return out;
}

Draws split_chains(const Draws& x) {
  return split_map(x, [&](std::size_t from) { return x.v[from]; });
}

/// A draw's value and its position after split_chains() (kDropped for the middle draw of an
/// odd-length chain).
using Ranked = std::vector<std::pair<double, std::size_t>>;
constexpr std::size_t kDropped = std::numeric_limits<std::size_t>::max();

/// All draws (no NaN) sorted by value, each with its position after split_chains().
Ranked sort_draws(const Draws& x) {
  Ranked ranked(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) ranked[i] = {x.v[i], kDropped};
  for_each_split(x, [&](std::size_t from, std::size_t to) { ranked[from].second = to; });
  std::sort(ranked.begin(), ranked.end());
  return ranked;
}

double sorted_value(const Ranked& s, std::size_t k) { return s[k].first; }

/// stats::quantile(type = 7) of a sorted sample without NaN.
double quantile7_sorted(const Ranked& s, double p) {
  if (s.empty() || std::isnan(p)) return kNaN;
  const Type7 pos = type7_positions(s.size(), p);
  return type7_value(pos, sorted_value(s, static_cast<std::size_t>(pos.lo) - 1),
                     sorted_value(s, static_cast<std::size_t>(pos.hi) - 1));
}

/// stats::median of a sorted sample without NaN: the middle value, or R's mean() of the two
/// middle values.
double median_sorted(const Ranked& s) {
  const std::size_t n = s.size();
  if (n % 2 == 1) return sorted_value(s, (n - 1) / 2);
  const double middle[2] = {sorted_value(s, n / 2 - 1), sorted_value(s, n / 2)};
  return r_mean(middle, 2);
}

/// posterior:::z_scale(posterior:::.split_chains(x)) from the draws of x sorted by value (with
/// their split positions, see sort_draws()). Average ranks (rank(ties.method = "average")) over
/// the draws that survive the split are back-transformed with (r - 3/8) / (S - 2 * 3/8 + 1)
/// (Blom 1958) and mapped through qnorm.
Draws z_scale_split(const Draws& x, const Ranked& sorted) {
  const Shape shape = split_shape(x);
  Draws z;
  z.n_iter = shape.n_iter;
  z.n_chain = shape.n_chain;
  const std::size_t total = shape.n_iter * shape.n_chain;
  z.v.resize(total);
  constexpr double c = 3.0 / 8.0;
  const double denom = static_cast<double>(total) - 2 * c + 1;
  std::size_t rank_pos = 0;  // 0-based position among the kept draws
  for (std::size_t k = 0; k < sorted.size();) {
    const double value = sorted[k].first;
    std::size_t end = k;
    std::size_t tied = 0;
    for (; end < sorted.size() && sorted[end].first == value; ++end) {
      if (sorted[end].second != kDropped) ++tied;
    }
    if (tied > 0) {
      // R's do_rank: sorted positions i..j (0-based) share the rank (i + j + 2) / 2.
      const double rank = static_cast<double>(2 * rank_pos + tied + 1) / 2.0;
      const double score = detail::normal_quantile((rank - c) / denom);
      for (std::size_t m = k; m < end; ++m) {
        if (sorted[m].second != kDropped) z.v[sorted[m].second] = score;
      }
      rank_pos += tied;
    }
    k = end;
  }
  return z;
}

/// posterior:::fold_draws, abs(x - median(x)), for x without NaN, as the kept draws sorted by
/// folded value with their split positions. The folded values of the draws below the median grow
/// as the draws decrease and those at or above it grow as the draws increase, so the order is a
/// merge of the two halves of the sorted draws (subtraction is monotone under rounding).
/// Returns false if a folded value is NaN (infinite median), where posterior's R̂ is NA.
bool fold_draws(const Ranked& sorted, Ranked& folded) {
  const double med = median_sorted(sorted);
  if (!std::isfinite(med)) {
    // abs(x - median) is NaN for the infinite draws equal to an infinite median, or everywhere
    // for a NaN median; posterior's tail R̂ is NA then.
    return false;
  }
  const std::size_t n = sorted.size();
  const auto first_up = static_cast<std::size_t>(
      std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(med, std::size_t{0})) -
      sorted.begin());
  folded.clear();
  folded.reserve(n);
  auto fold = [&](std::size_t k) { return std::fabs(sorted[k].first - med); };
  std::size_t down = first_up;  // next candidate below the median is sorted[down - 1]
  std::size_t up = first_up;
  while (down > 0 || up < n) {
    const bool take_down = up == n || (down > 0 && fold(down - 1) <= fold(up));
    const std::size_t k = take_down ? --down : up++;
    if (sorted[k].second != kDropped) folded.emplace_back(fold(k), sorted[k].second);
  }
  return true;
}

/// stats::nextn(n): smallest integer >= n whose only prime factors are 2, 3 and 5.
std::size_t nextn(std::size_t n) {
  auto ok = [](std::size_t m) {
    for (std::size_t f : {2, 3, 5}) {
      while (m % f == 0) m /= f;
    }
    return m == 1;
  };
  while (!ok(n)) ++n;
  return n;
}

/// posterior:::autocovariance via FFT (Wiener-Khinchin): centre the chain, zero-pad it to
/// 2 * nextn(N), take the inverse transform of the squared modulus of its transform and scale
/// the first N lags so that lag 0 equals var(x) * (N - 1) / N. A chain with var(x) == 0 has
/// autocovariance 0 at every lag.
class Autocovariance {
 public:
  Autocovariance() {
    fft_.SetFlag(Eigen::FFT<double>::HalfSpectrum);
    fft_.SetFlag(Eigen::FFT<double>::Unscaled);  // the scale cancels in ac / ac[0]
  }

  void operator()(const double* x, std::size_t n, double* out) {
    const double varx = r_var(x, n);
    if (varx == 0) {
      std::fill_n(out, n, 0.0);
      return;
    }
    const std::size_t padded = 2 * nextn(n);
    const double mean = r_mean(x, n);
    buf_.resize(padded);
    for (std::size_t i = 0; i < n; ++i) buf_[i] = x[i] - mean;
    std::fill(buf_.begin() + static_cast<std::ptrdiff_t>(n), buf_.end(), 0.0);
    spec_.resize(padded / 2 + 1);
    const auto nfft = static_cast<Eigen::Index>(padded);
    fft_.fwd(spec_.data(), buf_.data(), nfft);
    for (auto& value : spec_) value = std::norm(value);
    fft_.inv(buf_.data(), spec_.data(), nfft);
    const double ac0 = buf_[0];
    const auto nm1 = static_cast<double>(n - 1);
    const auto nd = static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = buf_[i] / ac0 * varx * nm1 / nd;
  }

 private:
  Eigen::FFT<double> fft_;
  std::vector<double> buf_;
  std::vector<std::complex<double>> spec_;
};

/// posterior:::.ess: multi-chain effective sample size with Geyer's (1992) initial positive
/// sequence truncation and initial monotone sequence, as in Vehtari et al. (2021), eqs. (10)-(11),
/// reproducing posterior's loop bounds, its 1:max_t indexing and its cap at 1 / log10(S).
/// Buffers and FFT plans are kept between calls.
class EssWorkspace {
 public:
  double ess(const Draws& x) {
    const auto n = static_cast<std::int64_t>(x.n_iter);
    const std::size_t chains = x.n_chain;
    if (n < 3 || should_return_na(x)) return kNaN;
    const auto un = static_cast<std::size_t>(n);

    acov_sum_.assign(un, 0.0L);
    acov_.resize(un);
    for (std::size_t c = 0; c < chains; ++c) {
      autocov_(x.col(c), un, acov_.data());
      for (std::size_t i = 0; i < un; ++i) acov_sum_[i] += acov_[i];
    }
    // matrixStats::rowMeans2; acov_ now holds the means over chains.
    for (std::size_t i = 0; i < un; ++i) {
      acov_[i] = static_cast<double>(acov_sum_[i] / static_cast<long double>(chains));
    }
    const std::vector<double>& acov_means = acov_;

    const auto nd = static_cast<double>(n);
    const double mean_var = acov_means[0] * nd / (nd - 1);
    double var_plus = mean_var * (nd - 1) / nd;
    if (chains > 1) {
      chain_means_.resize(chains);
      for (std::size_t c = 0; c < chains; ++c) chain_means_[c] = col_mean(x.col(c), un);
      var_plus += r_var(chain_means_.data(), chains);
    }

    std::vector<double>& rho = rho_;
    rho.assign(un, 0.0);
    std::int64_t t = 0;
    double rho_even = 1;
    rho[0] = rho_even;
    double rho_odd = 1 - (mean_var - acov_means[1]) / var_plus;
    rho[1] = rho_odd;
    while (t < n - 5 && !std::isnan(rho_even + rho_odd) && (rho_even + rho_odd > 0)) {
      t += 2;
      const auto ut = static_cast<std::size_t>(t);
      rho_even = 1 - (mean_var - acov_means[ut]) / var_plus;
      rho_odd = 1 - (mean_var - acov_means[ut + 1]) / var_plus;
      if ((rho_even + rho_odd) >= 0) {
        rho[ut] = rho_even;
        rho[ut + 1] = rho_odd;
      }
    }
    const std::int64_t max_t = t;
    const auto umax_t = static_cast<std::size_t>(max_t);
    if (rho_even > 0) rho[umax_t] = rho_even;
    // Initial monotone sequence: pair sums may not increase.
    t = 0;
    while (t <= max_t - 4) {
      t += 2;
      const auto ut = static_cast<std::size_t>(t);
      if (rho[ut] + rho[ut + 1] > rho[ut - 2] + rho[ut - 1]) {
        rho[ut] = (rho[ut - 2] + rho[ut - 1]) / 2;
        rho[ut + 1] = rho[ut];
      }
    }
    const double ess = static_cast<double>(chains) * nd;
    // R's sum(rho_hat_t[1:max_t]) (long double accumulation); when max_t == 0, 1:0 is c(1, 0)
    // and selects rho_hat_t[1] only.
    long double rho_sum = 0.0L;
    if (max_t == 0) {
      rho_sum = rho[0];
    } else {
      for (std::size_t i = 0; i < umax_t; ++i) rho_sum += rho[i];
    }
    double tau_hat = -1 + 2 * static_cast<double>(rho_sum) + rho[umax_t];
    const double tau_bound = 1 / std::log10(ess);
    if (tau_hat < tau_bound) tau_hat = tau_bound;  // posterior warns "The ESS has been capped"
    return ess / tau_hat;
  }

 private:
  Autocovariance autocov_;
  std::vector<long double> acov_sum_;
  std::vector<double> acov_;
  std::vector<double> chain_means_;
  std::vector<double> rho_;
};

/// posterior:::.rhat: sqrt((B / W + N - 1) / N) with B = N var(chain means) and W the mean of
/// the within-chain variances (Gelman et al. 2013, BDA3 eq. 11.4, as written in posterior).
double rhat_core(const Draws& x) {
  if (should_return_na(x)) return kNaN;
  const std::size_t n = x.n_iter;
  std::vector<double> chain_mean(x.n_chain);
  std::vector<double> chain_var(x.n_chain);
  for (std::size_t c = 0; c < x.n_chain; ++c) {
    chain_mean[c] = col_mean(x.col(c), n);
    chain_var[c] = col_var(x.col(c), n, chain_mean[c]);
  }
  const auto nd = static_cast<double>(n);
  const double var_between = nd * r_var(chain_mean.data(), x.n_chain);
  const double var_within = r_mean(chain_var.data(), x.n_chain);
  return std::sqrt((var_between / var_within + nd - 1) / nd);
}

/// Tail half of posterior::rhat: R̂ of z_scale(split_chains(fold_draws(x))), x without NaN.
double rhat_tail(const Draws& x, const Ranked& sorted) {
  Ranked folded;
  if (!fold_draws(sorted, folded)) return kNaN;
  return rhat_core(z_scale_split(x, folded));
}

/// posterior::ess_tail: min over prob = 0.05, 0.95 of posterior:::.ess_quantile, the ESS of the
/// split indicator I(x <= quantile(x, prob)). `quantiles` are the type-7 quantiles of all draws
/// at 0.05 and 0.95.
double ess_tail_core(const Draws& x, const double (&quantiles)[2], EssWorkspace& ws) {
  if (should_return_na(x)) return kNaN;
  double ess[2];
  for (int k = 0; k < 2; ++k) {
    const double q = quantiles[k];
    ess[k] = ws.ess(split_map(x, [&](std::size_t from) { return x.v[from] <= q ? 1.0 : 0.0; }));
  }
  return r_min(ess[0], ess[1]);
}

void check_probability(double p) {
  constexpr double eps = 100 * DBL_EPSILON;  // stats::quantile's tolerance
  if (p < -eps || p > 1 + eps) {
    throw Error("diagnostics: quantile probability " + std::to_string(p) + " outside [0, 1]");
  }
}

}  // namespace

namespace detail {

double normal_quantile(double p) {
  // Wichura, M. J. (1988). Algorithm AS 241: The percentage points of the normal distribution.
  // Applied Statistics 37(3), 477-484. PPND16, accurate to about 1 part in 10^16; the same
  // algorithm underlies R's qnorm().
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -std::numeric_limits<double>::infinity();
  if (p == 1) return std::numeric_limits<double>::infinity();
  const double q = p - 0.5;
  if (std::fabs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q *
           (((((((2.5090809287301226727e+3 * r + 3.3430575583588128105e+4) * r +
                 6.7265770927008700853e+4) *
                    r +
                4.5921953931549871457e+4) *
                   r +
               1.3731693765509461125e+4) *
                  r +
              1.9715909503065514427e+3) *
                 r +
             1.3314166789178437745e+2) *
                r +
            3.3871328727963666080e+0) /
           (((((((5.2264952788528545610e+3 * r + 2.8729085735721942674e+4) * r +
                 3.9307895800092710610e+4) *
                    r +
                2.1213794301586595867e+4) *
                   r +
               5.3941960214247511077e+3) *
                  r +
              6.8718700749205790830e+2) *
                 r +
             4.2313330701600911252e+1) *
                r +
            1.0);
  }
  double r = q < 0 ? p : 1.0 - p;
  r = std::sqrt(-std::log(r));
  double val;
  if (r <= 5.0) {
    r -= 1.6;
    val = (((((((7.74545014278341407640e-4 * r + 2.27238449892691845833e-2) * r +
                2.41780725177450611770e-1) *
                   r +
               1.27045825245236838258e+0) *
                  r +
              3.64784832476320460504e+0) *
                 r +
             5.76949722146069140550e+0) *
                r +
            4.63033784615654529590e+0) *
               r +
           1.42343711074968357734e+0) /
          (((((((1.05075007164441684324e-9 * r + 5.47593808499534494600e-4) * r +
                1.51986665636164571966e-2) *
                   r +
               1.48103976427480074590e-1) *
                  r +
              6.89767334985100004550e-1) *
                 r +
             1.67638483018380384940e+0) *
                r +
            2.05319162663775882187e+0) *
               r +
           1.0);
  } else {
    r -= 5.0;
    val = (((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r +
                1.24266094738807843860e-3) *
                   r +
               2.65321895265761230930e-2) *
                  r +
              2.96560571828504891230e-1) *
                 r +
             1.78482653991729133580e+0) *
                r +
            5.46378491116411436990e+0) *
               r +
           6.65790464350110377720e+0) /
          (((((((2.04426310338993978564e-15 * r + 1.42151175831644588870e-7) * r +
                1.84631831751005468180e-5) *
                   r +
               7.86869131145613259100e-4) *
                  r +
              1.48753612908506148525e-2) *
                 r +
             1.36929880922735805310e-1) *
                r +
            5.99832206555887937690e-1) *
               r +
           1.0);
  }
  return q < 0 ? -val : val;
}

}  // namespace detail

double rhat(const ChainDraws& x) {
  const Draws d = to_draws(x);
  if (d.size() == 0 || any_nan(d.v)) return kNaN;
  const Ranked sorted = sort_draws(d);
  return r_max(rhat_core(z_scale_split(d, sorted)), rhat_tail(d, sorted));
}

double ess_bulk(const ChainDraws& x) {
  const Draws d = to_draws(x);
  if (d.size() == 0 || any_nan(d.v)) return kNaN;
  EssWorkspace ws;
  return ws.ess(z_scale_split(d, sort_draws(d)));
}

double ess_tail(const ChainDraws& x) {
  const Draws d = to_draws(x);
  if (should_return_na(d)) return kNaN;
  std::vector<double> buf = d.v;
  const double quantiles[2] = {quantile7_select(buf, 0.05), quantile7_select(buf, 0.95)};
  EssWorkspace ws;
  return ess_tail_core(d, quantiles, ws);
}

double ess_mean(const ChainDraws& x) {
  const Draws d = to_draws(x);
  if (d.size() == 0) return kNaN;
  EssWorkspace ws;
  return ws.ess(split_chains(d));
}

double mcse_mean(const ChainDraws& x) {
  const Draws d = to_draws(x);
  if (d.size() == 0) return kNaN;
  EssWorkspace ws;
  return std::sqrt(r_var(d.v.data(), d.size())) / std::sqrt(ws.ess(split_chains(d)));
}

double quantile(const ChainDraws& x, double p) {
  check_probability(p);
  Draws d = to_draws(x);
  if (any_nan(d.v)) return kNaN;  // posterior::quantile2 gives NA when any draw is NA
  return quantile7_select(d.v, p);
}

ParamSummary summarize(const ChainDraws& x) {
  const Draws d = to_draws(x);
  ParamSummary s{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  if (d.size() == 0) return s;
  s.mean = r_mean(d.v.data(), d.size());
  s.sd = std::sqrt(r_var(d.v.data(), d.size()));
  if (any_nan(d.v)) {
    // Quantiles, R̂ and bulk / tail ESS are NA in posterior; ess_mean is NA too.
    EssWorkspace ws;
    s.mcse_mean = s.sd / std::sqrt(ws.ess(split_chains(d)));
    return s;
  }
  const Ranked sorted = sort_draws(d);
  s.q5 = quantile7_sorted(sorted, 0.05);
  s.q50 = quantile7_sorted(sorted, 0.5);
  s.q95 = quantile7_sorted(sorted, 0.95);
  // The four estimates are independent; each task writes only its own results, so the outcome
  // does not depend on scheduling.
  double rhat_bulk = kNaN;
  double rhat_folded = kNaN;
  tbb::parallel_invoke(
      [&] {
        EssWorkspace ws;
        s.mcse_mean = s.sd / std::sqrt(ws.ess(split_chains(d)));
      },
      [&] {
        EssWorkspace ws;
        const Draws z = z_scale_split(d, sorted);
        s.ess_bulk = ws.ess(z);
        rhat_bulk = rhat_core(z);
      },
      [&] { rhat_folded = rhat_tail(d, sorted); },
      [&] {
        EssWorkspace ws;
        s.ess_tail = ess_tail_core(d, {s.q5, s.q95}, ws);
      });
  s.rhat = r_max(rhat_bulk, rhat_folded);
  return s;
}

}  // namespace flymc
