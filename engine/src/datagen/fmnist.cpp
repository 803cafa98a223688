// Fashion-MNIST reduced by PCA (build_fmnist): reading the selected images and fitting the PCA.
#include <Eigen/Dense>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "flymc/core/blas.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/datagen/datagen.hpp"
#include "fmnist_detail.hpp"
#include "idx.hpp"

namespace flymc {

namespace datagen_detail {

namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A data set holds fewer than 2^32 rows (Index).
constexpr std::uint64_t max_rows = std::numeric_limits<Index>::max();

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != 0) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

/// Checks what can be checked before reading a file; returns each class's label index (-1 for
/// classes not kept).
std::vector<int> check_options(const FmnistOptions& opt) {
  if (opt.classes.size() < 2)
    throw ConfigError("fmnist: need at least 2 classes, got " + std::to_string(opt.classes.size()) +
                      " (" + join(opt.classes) + ")");
  std::vector<int> class_index(10, -1);
  for (std::size_t i = 0; i < opt.classes.size(); ++i) {
    const int c = opt.classes[i];
    if (c < 0 || c > 9)
      throw ConfigError("fmnist: unknown class " + std::to_string(c) +
                        " (Fashion-MNIST classes are 0..9)");
    if (class_index[static_cast<std::size_t>(c)] >= 0)
      throw ConfigError("fmnist: class " + std::to_string(c) + " listed twice in " +
                        join(opt.classes));
    class_index[static_cast<std::size_t>(c)] = static_cast<int>(i);
  }
  if (opt.pca < 1 || opt.pca > static_cast<int>(image_pixels))
    throw ConfigError("fmnist: pca = " + std::to_string(opt.pca) + " outside 1..784");
  if (opt.split != "train" && opt.split != "test" && opt.split != "all")
    throw ConfigError("fmnist: split '" + opt.split + "' must be 'train', 'test' or 'all'");
  if (opt.augment < 0)
    throw ConfigError("fmnist: --augment " + std::to_string(opt.augment) +
                      ": the number of deformed copies per image must be >= 0");
  if (static_cast<std::uint64_t>(opt.augment) >= max_rows)
    throw ConfigError("fmnist: --augment " + std::to_string(opt.augment) +
                      ": a data set holds at most " + std::to_string(max_rows) + " rows");
  const ImageDeformer checked(opt.deform);  // ConfigError for bad deformation parameters
  (void)checked;
  return class_index;
}

/// The directory of the IDX files: FLYMC_FMNIST_DIR stands in for the default.
std::string fmnist_dir(const FmnistOptions& opt) {
  if (opt.dir == FmnistOptions{}.dir) {
    const char* env = std::getenv("FLYMC_FMNIST_DIR");
    if (env != nullptr && *env != '\0') return env;
  }
  return opt.dir;
}

/// Positions in `s` of the images of the kept classes, in file order.
std::vector<std::size_t> select(const IdxSet& s, const std::vector<int>& class_index) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < s.count; ++i)
    if (class_index[s.labels[i]] >= 0) idx.push_back(i);
  return idx;
}

/// The images at `idx` as rows of pixels / 255.
RowMatrix pixel_rows(const IdxSet& s, const std::vector<std::size_t>& idx) {
  RowMatrix x(static_cast<Eigen::Index>(idx.size()), static_cast<Eigen::Index>(image_pixels));
  for (std::size_t r = 0; r < idx.size(); ++r) {
    const unsigned char* px = s.pixels.data() + idx[r] * image_pixels;
    for (std::size_t j = 0; j < image_pixels; ++j)
      x(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) = px[j] / 255.0;
  }
  return x;
}

/// Appends the images at `idx` of `s` (file `file`: 0 train, 1 t10k) to the outputs of `src`:
/// labels, their origin keys and, for deformed copies, their pixels.
void append_images(FmnistSource& src, const IdxSet& s, const std::vector<std::size_t>& idx,
                   unsigned file, const std::vector<int>& class_index, bool binary,
                   bool keep_pixels) {
  for (const std::size_t i : idx) {
    const int which = class_index[s.labels[i]];
    src.labels.push_back(binary ? (which == 0 ? 1.0 : -1.0) : static_cast<double>(which));
    src.origin.push_back(2 * std::uint64_t{i} + file);
    if (keep_pixels)
      src.pixels.insert(src.pixels.end(), s.pixels.begin() + i * image_pixels,
                        s.pixels.begin() + (i + 1) * image_pixels);
  }
}

/// How many eigenvalues of the symmetric `cov` (upper triangle) exceed 1e-10 of the largest, `top`.
std::size_t numerical_rank(Eigen::MatrixXd cov, double top) {
  const auto p = static_cast<std::size_t>(cov.rows());
  Eigen::VectorXd all(cov.rows());
  if (!blas::top_eigenpairs(cov.data(), p, p, all.data(), nullptr))
    throw Error("fmnist: the eigen-decomposition of the covariance did not converge");
  return static_cast<std::size_t>((all.array() > 1e-10 * top).count());
}

/// The top `k` eigenvectors of the covariance of the centred rows `xc`, by decreasing eigenvalue,
/// each with its largest-magnitude entry made positive (a deterministic sign). OpenBLAS forms the
/// covariance (SYRK) and LAPACK finds only the k pairs asked for.
Eigen::MatrixXd pca_basis(const RowMatrix& xc, int k, const std::vector<int>& classes) {
  const auto ntr = static_cast<std::size_t>(xc.rows()), p = static_cast<std::size_t>(xc.cols());
  const auto kk = static_cast<std::size_t>(k);
  blas::use_single_thread();
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(xc.cols(), xc.cols());
  blas::syrk_accumulate(xc.data(), ntr, p, p, cov.data(), 1.0 / double(ntr - 1));  // upper
  Eigen::MatrixXd work = cov;  // DSYEVR overwrites its input
  Eigen::VectorXd values(k);   // ascending: the largest last
  Eigen::MatrixXd vectors(xc.cols(), k);
  if (!blas::top_eigenpairs(work.data(), p, kk, values.data(), vectors.data()))
    throw Error("fmnist: the eigen-decomposition of the covariance did not converge");
  const double top = values(k - 1);
  Eigen::MatrixXd basis(xc.cols(), k);
  for (int c = 0; c < k; ++c) {
    const int src = k - 1 - c;
    if (!(values(src) > 1e-10 * top)) {
      const std::size_t rank = numerical_rank(cov, top);
      throw ConfigError("fmnist: pca = " + std::to_string(k) + " exceeds the numerical rank " +
                        std::to_string(rank) + " of the training images of classes " +
                        join(classes) + " (component " + std::to_string(c + 1) +
                        " has zero variance); use pca <= " + std::to_string(rank));
    }
    Eigen::VectorXd v = vectors.col(src);
    Eigen::Index arg = 0;
    v.cwiseAbs().maxCoeff(&arg);
    if (v(arg) < 0) v = -v;
    basis.col(c) = v;
  }
  return basis;
}

}  // namespace

FmnistSource load_fmnist(const FmnistOptions& opt) {
  const std::vector<int> class_index = check_options(opt);
  const std::string dir = fmnist_dir(opt);
  const bool binary = opt.classes.size() == 2, keep_pixels = opt.augment > 0;
  const bool want_train = opt.split != "test", want_test = opt.split != "train";
  FmnistSource src;
  src.k = opt.pca;
  src.description = "fashion-mnist(" + dir + ", classes " + join(opt.classes) + ", pca " +
                    std::to_string(opt.pca) + ", " + opt.split +
                    (opt.augment > 0 ? ", augment " + std::to_string(opt.augment) + ", seed " +
                                           std::to_string(opt.seed)
                                     : std::string()) +
                    ")";

  // --- the images: training images of the classes (for the PCA), then the test images
  RowMatrix xtr, xte;
  {
    const IdxSet train = read_idx_pair(dir, "train");
    const std::vector<std::size_t> idx = select(train, class_index);
    if (idx.size() < 2)
      throw DataError(dir + ": only " + std::to_string(idx.size()) +
                      " training images of classes " + join(opt.classes));
    xtr = pixel_rows(train, idx);
    if (want_train) append_images(src, train, idx, 0, class_index, binary, keep_pixels);
  }
  if (want_test) {
    const IdxSet test = read_idx_pair(dir, "t10k");
    const std::vector<std::size_t> idx = select(test, class_index);
    if (idx.empty()) throw DataError(dir + ": no test images of classes " + join(opt.classes));
    xte = pixel_rows(test, idx);
    append_images(src, test, idx, 1, class_index, binary, keep_pixels);
  }
  const std::size_t n_all = src.labels.size();
  const std::size_t n = opt.max_images > 0 ? std::min(n_all, opt.max_images) : n_all;
  const auto copies = static_cast<std::uint64_t>(opt.augment) + 1;
  if (n > max_rows / copies)
    throw ConfigError("fmnist: --augment " + std::to_string(opt.augment) + " makes " +
                      std::to_string(n) + " x " + std::to_string(copies) +
                      " rows, more than a data set holds (" + std::to_string(max_rows) + ")");

  // --- PCA of the training images; scores centred, and their standard deviations (1/N)
  const Eigen::Index ntr = xtr.rows();
  src.mean = xtr.colwise().mean();
  xtr.rowwise() -= src.mean;
  const Eigen::MatrixXd basis = pca_basis(xtr, opt.pca, opt.classes);
  Eigen::MatrixXd ztr = xtr * basis;
  src.zmean = ztr.colwise().mean();
  ztr.rowwise() -= src.zmean;  // exact centring up to rounding
  src.scale = (ztr.colwise().squaredNorm() / static_cast<double>(ntr)).cwiseSqrt();
  src.basis_rows.resize(image_pixels * static_cast<std::size_t>(opt.pca));
  Eigen::Map<RowMatrix>(src.basis_rows.data(), basis.rows(), basis.cols()) = basis;

  // --- the output images' scores: the training scores as they are, test images projected
  xtr.resize(0, 0);
  Eigen::MatrixXd zte;
  if (want_test) {
    xte.rowwise() -= src.mean;
    zte = xte * basis;
    zte.rowwise() -= src.zmean;
  }
  src.scores.resize(static_cast<Eigen::Index>(n_all), opt.pca);
  if (want_train) src.scores.topRows(ntr) = ztr;
  if (want_test) src.scores.bottomRows(zte.rows()) = zte;

  src.labels.resize(n);
  src.origin.resize(n);
  if (keep_pixels) src.pixels.resize(n * image_pixels);
  src.scores.conservativeResize(static_cast<Eigen::Index>(n), Eigen::NoChange);
  return src;
}

}  // namespace datagen_detail

Dataset build_fmnist(const FmnistOptions& opt) {
  const datagen_detail::FmnistSource src = datagen_detail::load_fmnist(opt);
  const ImageDeformer deform(opt.deform);
  const std::size_t n = src.n(), copies = static_cast<std::size_t>(opt.augment) + 1;
  Dataset ds(n * copies, static_cast<std::size_t>(src.k) + 1, src.description);
  for (std::size_t c = 0; c < copies; ++c)
    datagen_detail::fmnist_rows(src, opt, deform, c, 0, n, ds.mutable_y().data() + c * n,
                                ds.mutable_row(c * n), ds.stride());
  return ds;
}

}  // namespace flymc
