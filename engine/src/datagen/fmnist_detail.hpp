#pragma once
// Private: what build_fmnist and write_fmnist share: the selected images of a split and the PCA
// fitted to the training images of the selected classes, and the rows made from them.
#include <Eigen/Dense>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flymc/datagen/datagen.hpp"

namespace flymc::datagen_detail {

/// The output images of one FmnistOptions (the split's images of the selected classes in file
/// order, train before test for "all", at most max_images of them) and their projection.
struct FmnistSource {
  // The PCA of the training images of the selected classes.
  int k = 0;                       ///< components
  Eigen::RowVectorXd mean;         ///< 784 pixel means
  std::vector<double> basis_rows;  ///< 784 x k row-major: pixel j's loading on component c
  Eigen::RowVectorXd zmean;        ///< mean training score per component
  Eigen::RowVectorXd scale;        ///< training score sd per component (1/N)
  // The output images, in output order.
  Eigen::MatrixXd scores;             ///< n x k: (x - mean) . basis - zmean
  std::vector<double> labels;         ///< n
  std::vector<unsigned char> pixels;  ///< n x 784 bytes, kept only to make deformed copies
  std::vector<std::uint64_t> origin;  ///< n: 2 x (position in its IDX file) + (0 train, 1 t10k)
  std::string description;            ///< the Dataset source() text

  std::size_t n() const { return labels.size(); }
};

/// Reads the IDX files and fits the PCA. Checks the options (ConfigError), including that
/// n·(augment + 1) rows fit in a Dataset, before the PCA.
FmnistSource load_fmnist(const FmnistOptions& opt);

/// Rows of copy `copy` (0 = the images themselves) of images [i0, i1): labels to y[0..i1-i0),
/// features (k components, then the bias 1) to x + r·stride. Copies 1..K are made in parallel;
/// the values do not depend on the thread count or on how the images are split into calls.
void fmnist_rows(const FmnistSource& src, const FmnistOptions& opt, const ImageDeformer& deform,
                 std::size_t copy, std::size_t i0, std::size_t i1, double* y, double* x,
                 std::size_t stride);

}  // namespace flymc::datagen_detail
