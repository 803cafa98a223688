#pragma once
// IDX files (gzip-compressed), the layout of http://yann.lecun.com/exdb/mnist/: big-endian 32-bit
// magic (0x00000803 images, 0x00000801 labels), counts, then unsigned bytes.
#include <cstddef>
#include <string>
#include <vector>

namespace flymc::datagen_detail {

constexpr std::size_t image_side = 28;
constexpr std::size_t image_pixels = image_side * image_side;

struct IdxSet {
  std::vector<unsigned char> pixels;  // count x 784
  std::vector<unsigned char> labels;  // count
  std::size_t count = 0;
};

/// `dir/prefix-images-idx3-ubyte.gz` and `dir/prefix-labels-idx1-ubyte.gz`, checked: magic
/// numbers, 28 x 28 images, equal counts, labels 0..9, nothing after the data. DataErrors name the
/// file and the byte offset in the decompressed stream.
IdxSet read_idx_pair(const std::string& dir, const std::string& prefix);

}  // namespace flymc::datagen_detail
