// The per-chain statistics the plots show: rank histograms, autocorrelations, reduced traces.
#include <algorithm>
#include <cmath>
#include <limits>

#include "flymc/report/report.hpp"
#include "report_detail.hpp"

namespace flymc::report {

std::vector<std::vector<std::size_t>> rank_histogram(const ChainDraws& x, std::size_t bins) {
  bins = std::max<std::size_t>(bins, 1);
  std::vector<std::vector<std::size_t>> counts(x.size(), std::vector<std::size_t>(bins, 0));
  std::vector<std::pair<double, std::size_t>> pooled;  // (draw, chain)
  for (std::size_t c = 0; c < x.size(); ++c)
    for (double v : x[c])
      if (!std::isnan(v)) pooled.emplace_back(v, c);
  const std::size_t s = pooled.size();
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < s;) {
    std::size_t j = i;
    while (j + 1 < s && pooled[j + 1].first == pooled[i].first) ++j;
    // Tied draws i..j (0-based) share the average rank (i + j + 2) / 2, as R's rank() does.
    const double rank = double(i + j + 2) / 2.0;
    const auto bin =
        std::min(bins - 1, static_cast<std::size_t>((rank - 1.0) * double(bins) / double(s)));
    for (std::size_t k = i; k <= j; ++k) ++counts[pooled[k].second][bin];
    i = j + 1;
  }
  return counts;
}

std::vector<double> autocorrelation(std::span<const double> x, std::size_t max_lag) {
  const std::size_t n = x.size();
  std::vector<double> rho(n == 0 ? 0 : std::min(max_lag, n - 1) + 1,
                          std::numeric_limits<double>::quiet_NaN());
  if (n < 2) return rho;
  double mean = 0.0;
  for (double v : x) mean += v;
  mean /= double(n);
  double var = 0.0;
  for (double v : x) var += (v - mean) * (v - mean);
  if (!(var > 0.0) || !std::isfinite(var)) return rho;
  for (std::size_t k = 0; k < rho.size(); ++k) {
    double acov = 0.0;
    for (std::size_t i = 0; i + k < n; ++i) acov += (x[i] - mean) * (x[i + k] - mean);
    // The same divisor n at every lag (not n − k): the estimate stays a positive-definite
    // sequence and does not blow up at long lags.
    rho[k] = acov / var;
  }
  return rho;
}

namespace detail {

Series reduce_trace(std::span<const double> y, double x0, double dx, std::size_t max_points) {
  Series s;
  const std::size_t n = y.size();
  if (n <= max_points || max_points < 2) {
    s.x.reserve(n);
    for (std::size_t i = 0; i < n; ++i) s.x.push_back(x0 + dx * double(i));
    s.y.assign(y.begin(), y.end());
    return s;
  }
  // Two points (minimum and maximum, in the order they occur) per bucket of draws.
  const std::size_t buckets = max_points / 2;
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t from = b * n / buckets, to = (b + 1) * n / buckets;
    std::size_t lo = from, hi = from;
    for (std::size_t i = from; i < to; ++i) {
      if (std::isnan(y[i])) continue;
      if (std::isnan(y[lo]) || y[i] < y[lo]) lo = i;
      if (std::isnan(y[hi]) || y[i] > y[hi]) hi = i;
    }
    for (std::size_t i : {std::min(lo, hi), std::max(lo, hi)}) {
      s.x.push_back(x0 + dx * double(i));
      s.y.push_back(y[i]);
    }
  }
  return s;
}

Series window_means(std::span<const double> y, double x0, double dx, std::size_t window) {
  Series s;
  window = std::max<std::size_t>(window, 1);
  for (std::size_t from = 0; from < y.size(); from += window) {
    const std::size_t to = std::min(y.size(), from + window);
    double sum = 0.0;
    for (std::size_t i = from; i < to; ++i) sum += y[i];
    s.x.push_back(x0 + dx * (double(from + to - 1) / 2.0));
    s.y.push_back(sum / double(to - from));
  }
  return s;
}

}  // namespace detail
}  // namespace flymc::report
