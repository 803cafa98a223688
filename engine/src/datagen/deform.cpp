// Random deformations of 28 x 28 images (ImageDeformer): an affine move and an elastic distortion.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/datagen/datagen.hpp"
#include "idx.hpp"

namespace flymc {

namespace {

using datagen_detail::image_side;
constexpr int side = static_cast<int>(image_side);
using Grid = Eigen::Matrix<double, side, side, Eigen::RowMajor>;

void check_range(const char* name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi))  // also false for NaN
    throw ConfigError(std::string("fmnist: deformation parameter ") + name + " = " +
                      number_text(v) + " outside " + number_text(lo) + ".." + number_text(hi));
}

/// Uniform on [-1, 1).
double symmetric(Rng& rng) { return 2.0 * rng.uniform() - 1.0; }

/// The bilinear interpolation of `img` at (x, y) = (column, row), 0 outside the image.
double bilinear(const double* img, double x, double y) {
  const double fx = std::floor(x), fy = std::floor(y);
  if (!(fx >= -1.0 && fx < side && fy >= -1.0 && fy < side)) return 0.0;
  const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
  const double ax = x - fx, ay = y - fy;
  auto at = [&](int r, int c) {
    return r < 0 || r >= side || c < 0 || c >= side ? 0.0 : img[r * side + c];
  };
  return (1.0 - ay) * ((1.0 - ax) * at(y0, x0) + ax * at(y0, x0 + 1)) +
         ay * ((1.0 - ax) * at(y0 + 1, x0) + ax * at(y0 + 1, x0 + 1));
}

}  // namespace

ImageDeformer::ImageDeformer(const Deformation& d) : d_(d) {
  check_range("max_rotation", d.max_rotation, 0.0, 45.0);
  check_range("max_scale", d.max_scale, 0.0, 0.5);
  check_range("max_shear", d.max_shear, 0.0, 1.0);
  check_range("max_shift", d.max_shift, 0.0, 14.0);
  check_range("elastic_sigma", d.elastic_sigma, 0.5, 28.0);
  check_range("elastic_alpha", d.elastic_alpha, 0.0, 100.0);
  // Gaussian weights truncated at ⌈4σ⌉ and normalised; offsets beyond the image never meet.
  const int radius = static_cast<int>(std::ceil(4.0 * d.elastic_sigma));
  std::vector<double> w(static_cast<std::size_t>(radius) + 1);
  double total = 0.0;
  for (int k = 0; k <= radius; ++k) {
    w[static_cast<std::size_t>(k)] = std::exp(-0.5 * k * k / (d.elastic_sigma * d.elastic_sigma));
    total += k == 0 ? w[0] : 2.0 * w[static_cast<std::size_t>(k)];
  }
  for (int o = 0; o < side; ++o)
    for (int s = 0; s < side; ++s) {
      const int k = std::abs(o - s);
      smooth_[static_cast<std::size_t>(o * side + s)] =
          k <= radius ? w[static_cast<std::size_t>(k)] / total : 0.0;
    }
}

void ImageDeformer::operator()(const double* in, double* out, Rng& rng) const {
  constexpr double pi = std::numbers::pi;
  const double theta = symmetric(rng) * d_.max_rotation * pi / 180.0;
  const double s = 1.0 + symmetric(rng) * d_.max_scale;
  const double h = symmetric(rng) * d_.max_shear;
  const double tx = symmetric(rng) * d_.max_shift, ty = symmetric(rng) * d_.max_shift;
  Grid gx, gy;
  for (Eigen::Index j = 0; j < gx.size(); ++j) gx.data()[j] = symmetric(rng);  // row by row
  for (Eigen::Index j = 0; j < gy.size(); ++j) gy.data()[j] = symmetric(rng);
  // Smoothing along columns then rows is the separable 2-D Gaussian, zero outside the image.
  const Eigen::Map<const Grid> g(smooth_.data());
  const Grid fx = d_.elastic_alpha * (g * gx * g), fy = d_.elastic_alpha * (g * gy * g);

  // A⁻¹ = [[1, -h], [0, 1]]·R(-θ)/s.
  const double cs = std::cos(theta), sn = std::sin(theta);
  const double m00 = (cs + h * sn) / s, m01 = (sn - h * cs) / s, m10 = -sn / s, m11 = cs / s;
  constexpr double centre = 0.5 * (side - 1);
  for (int r = 0; r < side; ++r)
    for (int c = 0; c < side; ++c) {
      const double qx = c - centre - tx, qy = r - centre - ty;
      const double px = m00 * qx + m01 * qy + centre + fx(r, c);
      const double py = m10 * qx + m11 * qy + centre + fy(r, c);
      out[r * side + c] = std::clamp(bilinear(in, px, py), 0.0, 1.0);
    }
}

}  // namespace flymc
