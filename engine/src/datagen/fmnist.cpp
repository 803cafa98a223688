// Fashion-MNIST reduced by PCA (build_fmnist).
#include <Eigen/Dense>
#include <cstdlib>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/datagen/datagen.hpp"
#include "idx.hpp"

namespace flymc {

namespace {

using datagen_detail::IdxSet;
using datagen_detail::image_pixels;
using datagen_detail::read_idx_pair;

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != 0) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The selected rows of `s` as pixels / 255, and their labels.
void select_rows(const IdxSet& s, const std::vector<int>& class_to_label_index, RowMatrix& x,
                 std::vector<int>& which) {
  which.clear();
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < s.count; ++i)
    if (class_to_label_index[s.labels[i]] >= 0) idx.push_back(i);
  x.resize(static_cast<Eigen::Index>(idx.size()), static_cast<Eigen::Index>(image_pixels));
  which.resize(idx.size());
  for (std::size_t r = 0; r < idx.size(); ++r) {
    const unsigned char* px = s.pixels.data() + idx[r] * image_pixels;
    for (std::size_t j = 0; j < image_pixels; ++j)
      x(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) = px[j] / 255.0;
    which[r] = class_to_label_index[s.labels[idx[r]]];
  }
}

}  // namespace

Dataset build_fmnist(const FmnistOptions& opt) {
  // --- options
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
  if (opt.split != "train" && opt.split != "test")
    throw ConfigError("fmnist: split '" + opt.split + "' must be 'train' or 'test'");
  std::string dir = opt.dir;
  if (dir == FmnistOptions{}.dir) {
    const char* env = std::getenv("FLYMC_FMNIST_DIR");
    if (env != nullptr && *env != '\0') dir = env;
  }

  // --- training rows of the selected classes
  RowMatrix xtr;
  std::vector<int> ktr;
  {
    const IdxSet train = read_idx_pair(dir, "train");
    select_rows(train, class_index, xtr, ktr);
  }
  const Eigen::Index ntr = xtr.rows();
  if (ntr < 2)
    throw DataError(dir + ": only " + std::to_string(ntr) + " training images of classes " +
                    join(opt.classes));

  // --- PCA: covariance of the centred training rows, eigenvectors by decreasing eigenvalue
  const Eigen::RowVectorXd mean = xtr.colwise().mean();
  xtr.rowwise() -= mean;
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(xtr.cols(), xtr.cols());
  cov.selfadjointView<Eigen::Lower>().rankUpdate(xtr.transpose(), 1.0 / double(ntr - 1));
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(cov);  // reads the lower triangle
  if (es.info() != Eigen::Success)
    throw Error("fmnist: the eigen-decomposition of the covariance did not converge");
  const int k = opt.pca;
  const Eigen::Index p = cov.rows();
  const double top = es.eigenvalues()(p - 1);
  Eigen::MatrixXd basis(p, k);
  for (int c = 0; c < k; ++c) {
    const Eigen::Index src = p - 1 - c;
    const double lambda = es.eigenvalues()(src);
    if (!(lambda > 1e-10 * top)) {
      int rank = 0;
      while (rank < p && es.eigenvalues()(p - 1 - rank) > 1e-10 * top) ++rank;
      throw ConfigError("fmnist: pca = " + std::to_string(k) + " exceeds the numerical rank " +
                        std::to_string(rank) + " of the training images of classes " +
                        join(opt.classes) + " (component " + std::to_string(c + 1) +
                        " has zero variance); use pca <= " + std::to_string(rank));
    }
    Eigen::VectorXd v = es.eigenvectors().col(src);
    Eigen::Index arg = 0;
    v.cwiseAbs().maxCoeff(&arg);
    if (v(arg) < 0) v = -v;
    basis.col(c) = v;
  }
  // Training scores and their standard deviations (1/N).
  Eigen::MatrixXd ztr = xtr * basis;
  Eigen::RowVectorXd zmean = ztr.colwise().mean();
  ztr.rowwise() -= zmean;  // exact centring up to rounding
  const Eigen::RowVectorXd scale =
      (ztr.colwise().squaredNorm() / static_cast<double>(ntr)).cwiseSqrt();

  // --- output rows
  Eigen::MatrixXd z;
  std::vector<int> kout;
  if (opt.split == "train") {
    z = std::move(ztr);
    kout = std::move(ktr);
  } else {
    xtr.resize(0, 0);
    RowMatrix xte;
    {
      const IdxSet test = read_idx_pair(dir, "t10k");
      select_rows(test, class_index, xte, kout);
    }
    if (xte.rows() == 0) throw DataError(dir + ": no test images of classes " + join(opt.classes));
    xte.rowwise() -= mean;
    z = xte * basis;
    z.rowwise() -= zmean;
  }

  const std::size_t n = static_cast<std::size_t>(z.rows());
  const std::size_t d = static_cast<std::size_t>(k) + 1;
  Dataset ds(n, d,
             "fashion-mnist(" + dir + ", classes " + join(opt.classes) + ", pca " +
                 std::to_string(k) + ", " + opt.split + ")");
  std::vector<double>& y = ds.mutable_y();
  const bool binary = opt.classes.size() == 2;
  for (std::size_t i = 0; i < n; ++i) {
    double* row = ds.mutable_row(i);
    for (int c = 0; c < k; ++c) row[c] = z(static_cast<Eigen::Index>(i), c) / scale(c);
    row[k] = 1.0;
    y[i] = binary ? (kout[i] == 0 ? 1.0 : -1.0) : static_cast<double>(kout[i]);
  }
  return ds;
}

}  // namespace flymc
