// Reading the gzip-compressed IDX files of (Fashion-)MNIST.
#include "idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

#include "flymc/core/errors.hpp"

namespace flymc::datagen_detail {

namespace {

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

}  // namespace

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

}  // namespace flymc::datagen_detail
