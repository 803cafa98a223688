// Fashion-MNIST grown by deformed copies of its images: the rows of build_fmnist and
// write_fmnist, streamed to a file for data sets too large to hold.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "fmnist_detail.hpp"
#include "idx.hpp"

namespace flymc {

namespace datagen_detail {

namespace {

/// Row of one deformed copy: the projection of `pixels` as the training images were projected
/// ((x - mean)·basis - zmean, over scale), then the bias. The sum runs over pixels in one order
/// for every component, so it does not depend on how the rows are grouped.
void project(const FmnistSource& src, const double* pixels, double* acc, double* row) {
  const auto k = static_cast<std::size_t>(src.k);
  std::fill(acc, acc + k, 0.0);
  for (std::size_t j = 0; j < image_pixels; ++j) {
    const double xj = pixels[j] - src.mean(static_cast<Eigen::Index>(j));
    const double* b = src.basis_rows.data() + j * k;
    for (std::size_t c = 0; c < k; ++c) acc[c] += xj * b[c];
  }
  for (std::size_t c = 0; c < k; ++c) {
    const auto e = static_cast<Eigen::Index>(c);
    row[c] = (acc[c] - src.zmean(e)) / src.scale(e);
  }
  row[k] = 1.0;
}

}  // namespace

void fmnist_rows(const FmnistSource& src, const FmnistOptions& opt, const ImageDeformer& deform,
                 std::size_t copy, std::size_t i0, std::size_t i1, double* y, double* x,
                 std::size_t stride) {
  const auto k = static_cast<Eigen::Index>(src.k);
  for (std::size_t i = i0; i < i1; ++i) y[i - i0] = src.labels[i];
  if (copy == 0) {
    for (std::size_t i = i0; i < i1; ++i) {
      double* row = x + (i - i0) * stride;
      for (Eigen::Index c = 0; c < k; ++c)
        row[c] = src.scores(static_cast<Eigen::Index>(i), c) / src.scale(c);
      row[k] = 1.0;
    }
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::size_t>(i0, i1, 16),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      std::array<double, image_pixels> image, deformed;
                      std::vector<double> acc(static_cast<std::size_t>(k));
                      for (std::size_t i = range.begin(); i != range.end(); ++i) {
                        const unsigned char* px = src.pixels.data() + i * image_pixels;
                        for (std::size_t j = 0; j < image_pixels; ++j) image[j] = px[j] / 255.0;
                        Rng rng(opt.seed, (src.origin[i] << 32) | copy);
                        deform(image.data(), deformed.data(), rng);
                        project(src, deformed.data(), acc.data(), x + (i - i0) * stride);
                      }
                    });
}

}  // namespace datagen_detail

std::size_t write_fmnist(const FmnistOptions& opt, const std::string& path) {
  const std::optional<DataFormat> format = data_format_of(path);
  if (!format) throw ConfigError("fmnist: output file '" + path + "' must end in .csv or .npy");
  const datagen_detail::FmnistSource src = datagen_detail::load_fmnist(opt);
  const ImageDeformer deform(opt.deform);
  const std::size_t n = src.n(), copies = static_cast<std::size_t>(opt.augment) + 1;
  const std::size_t d = static_cast<std::size_t>(src.k) + 1;
  DataWriter out(path, *format, n * copies, d);
  // Blocks large enough to keep both cores busy between writes, small against the source images.
  constexpr std::size_t block = 4096;
  std::vector<double> y(block), x(block * d);
  for (std::size_t c = 0; c < copies; ++c)
    for (std::size_t i0 = 0; i0 < n; i0 += block) {
      const std::size_t i1 = std::min(n, i0 + block);
      datagen_detail::fmnist_rows(src, opt, deform, c, i0, i1, y.data(), x.data(), d);
      out.append(y.data(), x.data(), d, i1 - i0);
    }
  out.commit();
  return n * copies;
}

}  // namespace flymc
