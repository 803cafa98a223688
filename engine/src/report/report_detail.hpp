#pragma once
// What the files of the report room share: reduced traces and the page's sections.
#include <span>
#include <string>
#include <vector>

#include "flymc/report/report.hpp"

namespace flymc::report::detail {

/// Points of one polyline.
struct Series {
  std::vector<double> x, y;
};

/// The trace y[i] at x = x0 + dx·i, reduced to at most `max_points` points (the minimum and
/// maximum of equal buckets, in draw order) when longer.
Series reduce_trace(std::span<const double> y, double x0, double dx, std::size_t max_points);

/// Means of consecutive windows of `window` values of y (a last, shorter window included), at
/// the x of each window's middle: noisy per-draw figures (acceptance, queries) read as a level.
Series window_means(std::span<const double> y, double x0, double dx, std::size_t window);

/// The page's section of one run, and the number of <svg> elements it holds.
std::string run_section(const RunData& run, const ReportOptions& options, std::size_t& svgs);
/// The page's section of one bench file, and the number of <svg> elements it holds.
std::string bench_section(const BenchData& bench, std::size_t& svgs);

}  // namespace flymc::report::detail
