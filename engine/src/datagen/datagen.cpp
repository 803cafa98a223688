#include "flymc/datagen/datagen.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <zlib.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"

namespace flymc {

namespace {

// ---------------------------------------------------------------------------------------------
// IDX files (gzip-compressed), http://yann.lecun.com/exdb/mnist/ layout: big-endian 32-bit magic
// (0x00000803 images, 0x00000801 labels), counts, then unsigned bytes.

constexpr std::size_t image_pixels = 28 * 28;

class GzReader {
 public:
  explicit GzReader(std::string path) : path_(std::move(path)) {
    errno = 0;
    f_ = gzopen(path_.c_str(), "rb");
    if (f_ == nullptr) {
      const int err = errno;
      throw DataError(path_ + ": cannot open: " +
                      (err != 0 ? std::error_code(err, std::generic_category()).message()
                                : std::string("out of memory")) +
                      " (Fashion-MNIST is expected from the Debian package dataset-fashion-mnist, "
                      "or set FLYMC_FMNIST_DIR / --dir)");
    }
    gzbuffer(f_, 1 << 17);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;
  ~GzReader() { gzclose(f_); }

  const std::string& path() const { return path_; }
  std::size_t offset() const { return offset_; }

  /// Reads up to `bytes` bytes; returns how many were read (fewer only at the end of the stream).
  std::size_t read(unsigned char* dst, std::size_t bytes) {
    std::size_t done = 0;
    while (done < bytes) {
      const auto want = static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1u << 30));
      const int got = gzread(f_, dst + done, want);
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(f_, &errnum);
        throw DataError(path_ + ": byte offset " + std::to_string(offset_ + done) +
                        " (decompressed): corrupt or unreadable gzip data: " +
                        (msg != nullptr ? msg : "unknown error"));
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    offset_ += done;
    return done;
  }
  /// Reads exactly `bytes` bytes or throws naming the offset and expected size.
  void read_exact(unsigned char* dst, std::size_t bytes, const char* what) {
    const std::size_t at = offset_;
    const std::size_t got = read(dst, bytes);
    if (got != bytes)
      throw DataError(path_ + ": byte offset " + std::to_string(at + got) +
                      " (decompressed): truncated " + what + ": expected " + std::to_string(bytes) +
                      " bytes from offset " + std::to_string(at) + ", found " +
                      std::to_string(got));
  }
  /// Reads `bytes` bytes into a vector grown as data arrives (a corrupt count cannot make us
  /// allocate more than the stream holds).
  std::vector<unsigned char> read_vector(std::size_t bytes, const char* what) {
    std::vector<unsigned char> v;
    const std::size_t at = offset_;
    constexpr std::size_t step = std::size_t{1} << 22;
    while (v.size() < bytes) {
      const std::size_t want = std::min(step, bytes - v.size());
      const std::size_t old = v.size();
      v.resize(old + want);
      const std::size_t got = read(v.data() + old, want);
      if (got != want)
        throw DataError(path_ + ": byte offset " + std::to_string(offset_) +
                        " (decompressed): truncated " + what + ": expected " +
                        std::to_string(bytes) + " bytes from offset " + std::to_string(at) +
                        ", found " + std::to_string(old + got));
    }
    return v;
  }
  void expect_end() {
    unsigned char extra;
    if (read(&extra, 1) != 0)
      throw DataError(path_ + ": byte offset " + std::to_string(offset_ - 1) +
                      " (decompressed): unexpected data after the end of the IDX content");
  }
  std::uint32_t read_be32(const char* what) {
    unsigned char b[4];
    read_exact(b, 4, what);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           std::uint32_t{b[3]};
  }

 private:
  std::string path_;
  gzFile f_ = nullptr;
  std::size_t offset_ = 0;
};

struct IdxSet {
  std::vector<unsigned char> pixels;  // count x 784
  std::vector<unsigned char> labels;  // count
  std::size_t count = 0;
};

IdxSet read_idx_pair(const std::string& dir, const std::string& prefix) {
  const std::string img_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string lab_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  IdxSet s;

  GzReader lab(lab_path);
  const std::uint32_t lmagic = lab.read_be32("IDX header");
  if (lmagic != 0x801)
    throw DataError(lab_path + ": byte offset 0 (decompressed): bad IDX magic 0x" + [&] {
      char h[16];
      std::snprintf(h, sizeof h, "%08x", lmagic);
      return std::string(h);
    }() + " (expected 0x00000801, unsigned-byte 1-D labels)");
  const std::uint32_t lcount = lab.read_be32("IDX header");
  if (lcount == 0) throw DataError(lab_path + ": byte offset 4 (decompressed): label count is 0");
  s.labels = lab.read_vector(lcount, "label data");
  lab.expect_end();
  for (std::size_t i = 0; i < s.labels.size(); ++i)
    if (s.labels[i] > 9)
      throw DataError(lab_path + ": byte offset " + std::to_string(8 + i) +
                      " (decompressed): label " + std::to_string(s.labels[i]) + " outside 0..9");

  GzReader img(img_path);
  const std::uint32_t imagic = img.read_be32("IDX header");
  if (imagic != 0x803)
    throw DataError(img_path + ": byte offset 0 (decompressed): bad IDX magic 0x" + [&] {
      char h[16];
      std::snprintf(h, sizeof h, "%08x", imagic);
      return std::string(h);
    }() + " (expected 0x00000803, unsigned-byte 3-D images)");
  const std::uint32_t icount = img.read_be32("IDX header");
  const std::uint32_t rows = img.read_be32("IDX header");
  const std::uint32_t cols = img.read_be32("IDX header");
  if (rows != 28 || cols != 28)
    throw DataError(img_path + ": byte offset 8 (decompressed): image size " +
                    std::to_string(rows) + "x" + std::to_string(cols) + ", expected 28x28");
  if (icount != lcount)
    throw DataError(img_path + ": byte offset 4 (decompressed): " + std::to_string(icount) +
                    " images, but " + lab_path + " has " + std::to_string(lcount) + " labels");
  s.pixels = img.read_vector(std::size_t{icount} * image_pixels, "image data");
  img.expect_end();
  s.count = icount;
  return s;
}

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

std::vector<double> synth_logistic_theta(std::size_t d, std::uint64_t seed) {
  Rng rng(seed, ~std::uint64_t{0});
  std::vector<double> theta(d);
  const double s = 1.0 / std::sqrt(static_cast<double>(d));
  for (double& t : theta) t = rng.normal() * s;
  return theta;
}

Dataset synth_logistic(std::size_t n, std::size_t d, std::uint64_t seed) {
  if (n == 0 || d == 0)
    throw ConfigError("synth-logistic: n and d must be positive (n = " + std::to_string(n) +
                      ", d = " + std::to_string(d) + ")");
  if (n > std::numeric_limits<Index>::max())
    throw ConfigError("synth-logistic: n = " + std::to_string(n) + " exceeds the maximum " +
                      std::to_string(std::numeric_limits<Index>::max()));
  const std::vector<double> theta = synth_logistic_theta(d, seed);
  Dataset ds(n, d,
             "synth-logistic(n=" + std::to_string(n) + ", d=" + std::to_string(d) +
                 ", seed=" + std::to_string(seed) + ")");
  std::vector<double>& y = ds.mutable_y();
  constexpr std::size_t block = 65536;
  const std::size_t nblocks = (n + block - 1) / block;
  auto make_block = [&](std::size_t b) {
    Rng rng(seed, b);
    const std::size_t r1 = std::min(n, (b + 1) * block);
    for (std::size_t r = b * block; r < r1; ++r) {
      double* x = ds.mutable_row(r);
      double a = 0.0;
      for (std::size_t j = 0; j + 1 < d; ++j) {
        x[j] = rng.normal();
        a += x[j] * theta[j];
      }
      x[d - 1] = 1.0;
      a += theta[d - 1];
      const double prob = 1.0 / (1.0 + std::exp(-a));
      y[r] = rng.uniform() < prob ? 1.0 : -1.0;
    }
  };
  if (nblocks == 1) {
    make_block(0);
  } else {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, nblocks, 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t b = r.begin(); b != r.end(); ++b) make_block(b);
                      });
  }
  return ds;
}

namespace {

/// Gamma(α, 1) by Marsaglia & Tsang (2000), "A simple method for generating gamma variables":
/// for α ≥ 1 a squeezed rejection from (1 + z/√(9α − 3))³; for α < 1, Gamma(α + 1)·U^(1/α).
double gamma_draw(Rng& rng, double alpha) {
  if (alpha < 1.0) return gamma_draw(rng, alpha + 1.0) * std::pow(rng.uniform_pos(), 1.0 / alpha);
  const double dd = alpha - 1.0 / 3.0, cc = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    double z, v;
    do {
      z = rng.normal();
      v = 1.0 + cc * z;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.uniform_pos();
    const double z2 = z * z;
    if (u < 1.0 - 0.0331 * z2 * z2) return dd * v;
    if (std::log(u) < 0.5 * z2 + dd * (1.0 - v + std::log(v))) return dd * v;
  }
}

/// Fills blocks of 65,536 rows, block b from Rng(seed, b), in parallel.
template <class Fn>
void for_each_block(std::size_t n, Fn&& make_block) {
  constexpr std::size_t block = 65536;
  const std::size_t nblocks = (n + block - 1) / block;
  auto one = [&](std::size_t b) { make_block(b * block, std::min(n, (b + 1) * block), b); };
  if (nblocks == 1) {
    one(0);
  } else {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, nblocks, 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t b = r.begin(); b != r.end(); ++b) one(b);
                      });
  }
}

}  // namespace

SynthRobustParams synth_robust_params(std::size_t d, std::uint64_t seed) {
  if (d == 0) throw ConfigError("synth-robust: d must be positive");
  Rng rng(seed, ~std::uint64_t{0});
  SynthRobustParams p;
  p.theta.resize(d);
  for (double& t : p.theta) {
    const double u = rng.uniform(), v = rng.normal();
    t = u < 0.2 ? v : 0.0;
  }
  p.factors = (d - 1 + 7) / 8;
  p.loadings.resize((d - 1) * p.factors);
  for (double& b : p.loadings) b = rng.normal();
  return p;
}

Dataset synth_robust(std::size_t n, std::size_t d, std::uint64_t seed, double nu,
                     double noise_scale) {
  if (n == 0 || d == 0)
    throw ConfigError("synth-robust: n and d must be positive (n = " + std::to_string(n) +
                      ", d = " + std::to_string(d) + ")");
  if (n > std::numeric_limits<Index>::max())
    throw ConfigError("synth-robust: n = " + std::to_string(n) + " exceeds the maximum " +
                      std::to_string(std::numeric_limits<Index>::max()));
  if (!(nu > 0.0) || !std::isfinite(nu))
    throw ConfigError("synth-robust: --nu must be finite and > 0, got " + std::to_string(nu));
  if (!(noise_scale > 0.0) || !std::isfinite(noise_scale))
    throw ConfigError("synth-robust: --noise-scale must be finite and > 0, got " +
                      std::to_string(noise_scale));
  const SynthRobustParams p = synth_robust_params(d, seed);
  const std::size_t q = p.factors, nf = d - 1;
  std::vector<double> norm(nf);  // 1/√(1 + |B_j|²): unit feature variances
  for (std::size_t j = 0; j < nf; ++j) {
    double s2 = 1.0;
    for (std::size_t k = 0; k < q; ++k) s2 += p.loadings[j * q + k] * p.loadings[j * q + k];
    norm[j] = 1.0 / std::sqrt(s2);
  }
  char nu_text[32], s_text[32];
  std::snprintf(nu_text, sizeof nu_text, "%g", nu);
  std::snprintf(s_text, sizeof s_text, "%g", noise_scale);
  Dataset ds(n, d,
             "synth-robust(n=" + std::to_string(n) + ", d=" + std::to_string(d) + ", seed=" +
                 std::to_string(seed) + ", nu=" + nu_text + ", noise-scale=" + s_text + ")");
  std::vector<double>& y = ds.mutable_y();
  for_each_block(n, [&](std::size_t r0, std::size_t r1, std::size_t b) {
    Rng rng(seed, b);
    std::vector<double> g(q);
    for (std::size_t r = r0; r < r1; ++r) {
      double* x = ds.mutable_row(r);
      for (double& gk : g) gk = rng.normal();
      double mean = 0.0;
      for (std::size_t j = 0; j < nf; ++j) {
        double v = rng.normal();
        for (std::size_t k = 0; k < q; ++k) v += p.loadings[j * q + k] * g[k];
        x[j] = v * norm[j];
        mean += x[j] * p.theta[j];
      }
      x[d - 1] = 1.0;
      mean += p.theta[d - 1];
      const double z = rng.normal();
      double v;
      do {
        v = 2.0 * gamma_draw(rng, 0.5 * nu);
      } while (!(v > 0.0));
      y[r] = mean + noise_scale * z / std::sqrt(v / nu);
    }
  });
  return ds;
}

}  // namespace flymc
