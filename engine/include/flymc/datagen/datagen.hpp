#pragma once
/// @file datagen.hpp
/// Building the data sets used by the experiments: Fashion-MNIST reduced by PCA (optionally grown
/// by deformed copies of its images), and synthetic logistic-regression and robust-regression
/// data.
///
/// Thread safety: the functions share no state; distinct calls may run concurrently.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

/// Parameters of the random deformation of a 28 x 28 image (ImageDeformer): a small random affine
/// move composed with an elastic distortion, as the deformed copies that grew MNIST into MNIST-8M
/// (Loosli, Canu & Bottou 2007, "Training invariant support vector machines using selective
/// sampling", in Large-Scale Kernel Machines, MIT Press). Every parameter is the half-width of a
/// uniform draw, or the elastic field's smoothing and strength. The defaults keep copies
/// recognisable: the elastic pair is Simard, Steinkraus & Platt's for MNIST (2003, "Best practices
/// for convolutional neural networks applied to visual document analysis", ICDAR: σ = 4,
/// α = 34) with σ raised to 5 so that a garment's outline bends rather than frays. The affine
/// moves are smaller than those used on digits because Fashion-MNIST's images are trimmed to the
/// garment and scaled to fill the frame (Xiao, Rasul & Vollgraf 2017, arXiv:1708.07747): a
/// larger shift or enlargement crops the garment at the border, which no original image shows.
struct Deformation {
  /// Rotation angle uniform in ±max_rotation degrees, 0..45.
  double max_rotation = 5.0;
  /// Scale factor uniform in [1 - max_scale, 1 + max_scale], the same on both axes; 0..0.5.
  double max_scale = 0.05;
  /// Horizontal shear factor (x' = x + h·y) uniform in ±max_shear, 0..1.
  double max_shear = 0.1;
  /// Translation uniform in ±max_shift pixels on each axis, 0..14.
  double max_shift = 1.0;
  /// Standard deviation, in pixels, of the Gaussian smoothing the elastic displacement field;
  /// 0.5..28.
  double elastic_sigma = 5.0;
  /// Scale of the smoothed field, in pixels per unit of the uniform(-1, 1) draws; 0..100.
  double elastic_alpha = 34.0;
};

/// Random deformations of 28 x 28 images (row-major, values in [0, 1], 0 the background). A copy
/// shows at output pixel q = (column, row) the input at
///   p = A⁻¹(q - c - t) + c + α·(g_x(q), g_y(q)),   A = s·R(θ)·[[1, h], [0, 1]],
/// with c = (13.5, 13.5) the image centre: the garment is sheared by h, scaled by s, rotated by θ
/// about the centre and moved by t, then displaced by the elastic field g (Simard et al. 2003):
/// independent uniform(-1, 1) draws per pixel and axis, smoothed by a Gaussian of sd σ truncated
/// at ⌈4σ⌉ pixels and normalised (scipy.ndimage.gaussian_filter's default), the field taken as 0
/// outside the image. The input is resampled bilinearly at p (0 outside the image) and clipped
/// to [0, 1]. Draws per copy, in this order, each from rng.uniform(): θ, s, h, t_x, t_y, then the
/// 784 x-components of the field row by row, then the 784 y-components.
///
/// Thread safety: const; one object may be used by many threads, each with its own Rng.
class ImageDeformer {
 public:
  /// @throw ConfigError naming the parameter if one is not finite or outside its range.
  explicit ImageDeformer(const Deformation& d = {});
  /// Writes a random deformation of `in` (784 values) into `out` (784 values, not `in`).
  void operator()(const double* in, double* out, Rng& rng) const;

 private:
  Deformation d_;
  std::array<double, 28 * 28> smooth_{};  // G: the field is smoothed as G·F·G (G symmetric)
};

/// Options of build_fmnist() and write_fmnist().
struct FmnistOptions {
  /// Fashion-MNIST classes (0..9) to keep, distinct, at least 2. With 2 classes the first gets
  /// label +1 and the second -1; with K > 2 the i-th listed class gets label i (0-based).
  std::vector<int> classes{7, 9};
  /// Number of principal components, 1..784.
  int pca = 50;
  /// "train" (60,000-image file), "test" (t10k file) or "all" (the training images, then the
  /// test images).
  std::string split = "train";
  /// Directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz. When it is left at this
  /// default and the environment variable FLYMC_FMNIST_DIR is set (non-empty), that is used
  /// instead.
  std::string dir = "/usr/share/datasets/fashion-mnist";
  /// Deformed copies per image, K >= 0: the data set holds every image and K random deformations
  /// of it, n·(K + 1) rows, which must be below 2^32.
  std::int64_t augment = 0;
  /// Seed of the deformations (unused when augment is 0).
  std::uint64_t seed = 0;
  /// The deformations' parameters.
  Deformation deform{};
  /// Use only the first max_images images of the split (0: all), with their copies; the PCA is
  /// still fitted to every training image of the classes. For small tests.
  std::size_t max_images = 0;
};

/// Fashion-MNIST rows of the selected classes, pixels scaled to [0, 1], projected on the top `pca`
/// principal components of the TRAINING images of those classes (centred by the training mean;
/// each eigenvector's largest-magnitude entry made positive), each component divided by its
/// training standard deviation (population form, 1/N: training components have mean 0 and
/// variance 1), and a constant 1 bias column appended last: D = pca + 1. Splits "test" and "all"
/// apply the training mean, basis and scales to the t10k images. The n images keep the file
/// order (training images first for "all").
///
/// With augment = K > 0 the rows are the n images, then the first deformed copy of every image
/// (in the same order), then the second, ... : row c·n + i is copy c of image i (copy 0 the image
/// itself), labelled as image i and projected on the same basis and scales. Copy c of the image at
/// 0-based position p of the training (f = 0) or t10k (f = 1) file is deformed by ImageDeformer
/// with the stream Rng(seed, (2p + f)·2^32 + c), so the copies do not depend on the thread
/// count, on the split, the classes or K: the first n·(k + 1) rows for K are the data set for
/// k < K with the same seed. The first n rows do not depend on K or seed.
///
/// Throws ConfigError for invalid options (pca outside 1..784 or beyond the rank of the training
/// data, a class outside 0..9, duplicate classes, fewer than 2 classes, split not
/// train/test/all, augment negative or making 2^32 rows or more, a deformation parameter out of
/// range), and DataError for missing or corrupt files (naming the file and the byte offset in the
/// decompressed stream).
Dataset build_fmnist(const FmnistOptions& opt);

/// Writes the rows build_fmnist(opt) returns to `path` (.npy or .csv, case-insensitive; the bytes
/// save_npy / save_csv would write) without holding them: in blocks of a few thousand images,
/// each projected as it is made, so memory stays that of the n source images and their PCA
/// whatever K (a 1,000,000-row file takes as much as a 12,000-row one). The file is written under
/// a temporary name beside `path` and renamed onto it at the end; a failed or killed run leaves
/// `path` as it was. Returns the number of rows, n·(augment + 1).
///
/// Throws as build_fmnist, ConfigError if `path` does not end in .csv or .npy, and Error (73 if
/// the file cannot be created, 74 on a write error).
std::size_t write_fmnist(const FmnistOptions& opt, const std::string& path);

/// n rows of synthetic logistic-regression data with d features: x_j ~ N(0,1) for j < d-1, the
/// last feature is 1 (bias); label +1 with probability sigmoid(x . theta) else -1, where theta is
/// synth_logistic_theta(d, seed). Deterministic given (n, d, seed), independent of the number of
/// threads: rows are made in blocks of 65,536, block b from the stream Rng(seed, b).
/// Throws ConfigError if n or d is 0 or n >= 2^32.
Dataset synth_logistic(std::size_t n, std::size_t d, std::uint64_t seed);

/// The true coefficients used by synth_logistic(n, d, seed): theta_j ~ N(0,1)/sqrt(d), drawn from
/// Rng(seed, ~0).
std::vector<double> synth_logistic_theta(std::size_t d, std::uint64_t seed);

/// The fixed parts of synth_robust(n, d, seed, ...): the true coefficients θ (d entries, the
/// bias last) and the factor loadings B ((d − 1) × q, row-major, q = ⌈(d − 1)/8⌉ factors).
struct SynthRobustParams {
  std::vector<double> theta;
  std::size_t factors = 0;
  std::vector<double> loadings;
};

/// The parameters synth_robust(n, d, seed, ...) uses, drawn from Rng(seed, ~0) in this order:
/// for j = 0..d−1 a uniform u_j and a normal v_j, θ_j = v_j if u_j < 0.2 else 0 (sparse weights,
/// 20% non-zero, N(0, 1)); then B_jk ~ N(0, 1) row by row.
/// @throw ConfigError if d is 0.
SynthRobustParams synth_robust_params(std::size_t d, std::uint64_t seed);

/// n rows of synthetic robust-regression data with d columns: d − 1 correlated features and a
/// bias column of ones (last), heavy-tailed responses. The analogue of the FlyMC paper's organic
/// photovoltaics set (1.8 M molecules, 57 features): `flymc data synth-robust --n 1800000 --d 57
/// --seed 1`. The recipe, with θ and B from synth_robust_params(d, seed):
///   - per row, latent factors g ~ N(0, I_q) and noise e ~ N(0, I_{d−1}), then
///     x_j = (B_j·g + e_j)/√(1 + |B_j|²) for j < d − 1 (every feature has mean 0 and variance 1,
///     corr(x_j, x_l) = B_j·B_l/√((1 + |B_j|²)(1 + |B_l|²)): ~0.3 typical, up to ~0.8), and
///     x_{d−1} = 1;
///   - y = x·θ + s·ε, ε ~ Student-t with ν degrees of freedom, drawn as z/√(V/ν), z ~ N(0, 1),
///     V = 2·Gamma(ν/2) (χ²_ν; Marsaglia & Tsang 2000), redrawn in the rare event V = 0.
/// Draws per row in this order: g, e, z, V. Deterministic given (n, d, seed, ν, s), independent of
/// the number of threads: rows are made in blocks of 65,536, block b from the stream Rng(seed, b).
/// @throw ConfigError if n or d is 0, n ≥ 2^32, or ν or s is not finite and > 0.
Dataset synth_robust(std::size_t n, std::size_t d, std::uint64_t seed, double nu = 4.0,
                     double noise_scale = 1.0);

}  // namespace flymc
