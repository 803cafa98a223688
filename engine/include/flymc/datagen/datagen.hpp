#pragma once
/// @file datagen.hpp
/// Building the data sets used by the experiments: Fashion-MNIST reduced by PCA, and synthetic
/// logistic-regression and robust-regression data.
///
/// Thread safety: the functions share no state; distinct calls may run concurrently.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flymc/data/dataset.hpp"

namespace flymc {

/// Options of build_fmnist().
struct FmnistOptions {
  /// Fashion-MNIST classes (0..9) to keep, distinct, at least 2. With 2 classes the first gets
  /// label +1 and the second -1; with K > 2 the i-th listed class gets label i (0-based).
  std::vector<int> classes{7, 9};
  /// Number of principal components, 1..784.
  int pca = 50;
  /// "train" (60,000-image file) or "test" (t10k file).
  std::string split = "train";
  /// Directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz. When it is left at this
  /// default and the environment variable FLYMC_FMNIST_DIR is set (non-empty), that is used
  /// instead.
  std::string dir = "/usr/share/datasets/fashion-mnist";
};

/// Fashion-MNIST rows of the selected classes, pixels scaled to [0, 1], projected on the top `pca`
/// principal components of the TRAINING rows of those classes (centred by the training mean; each
/// eigenvector's largest-magnitude entry made positive), each component divided by its training
/// standard deviation (population form, 1/N: training components have mean 0 and variance 1), and
/// a constant 1 bias column appended last: D = pca + 1. split "test" applies the training mean,
/// basis and scales to the t10k rows. Rows keep the file order.
///
/// Throws ConfigError for invalid options (pca outside 1..784 or beyond the rank of the training
/// data, a class outside 0..9, duplicate classes, fewer than 2 classes, split not train/test), and
/// DataError for missing or corrupt files (naming the file and the byte offset in the
/// decompressed stream).
Dataset build_fmnist(const FmnistOptions& opt);

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
