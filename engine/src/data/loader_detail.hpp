#pragma once
// Private: what the CSV and NPY readers and writers share: messages (field names, quoted input),
// the input file (mapped or read in pieces), label checks and the atomic output file.
#include <fcntl.h>
#include <sys/stat.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"

namespace flymc::loader_detail {

// ---------------------------------------------------------------------------------------------
// Small helpers

[[noreturn]] inline void fail(const std::string& msg) { throw DataError(msg); }

inline std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

inline std::string field_name(std::size_t k) {
  if (k == 1) return "label";
  std::string s = "x";  // (not "x" + to_string: GCC 12 -O3 emits a false -Wrestrict for it)
  s += std::to_string(k - 1);
  return s;
}

inline std::string num_text(double v) {
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// Quotes a piece of input for a message: at most 40 characters, non-printables as \xNN.
inline std::string quote(const char* b, const char* e) {
  std::string out = "'";
  const std::size_t len = static_cast<std::size_t>(e - b);
  const std::size_t shown = std::min<std::size_t>(len, 40);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  out += len > shown ? "'..." : "'";
  return out;
}

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/// Read access to an input by byte offset, without holding a file in memory: regular files are
/// read with pread() (the loaders stream through them in blocks, twice for CSV); anything else
/// (a pipe, a character device) is read into memory once; text already in memory is used as is.
class InputFile {
 public:
  /// A view of `text` (not copied; it must outlive this object), named `name` in messages.
  InputFile(std::string_view text, const std::string& name)
      : path_(name), size_(text.size()), in_memory_(true), mem_(text.data()) {}
  explicit InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(path + ": cannot open: " + errno_text(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      fail(path + ": cannot stat: " + errno_text(err));
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd_);
      fail(path + ": cannot read: " + errno_text(EISDIR));
    }
    if (S_ISREG(st.st_mode)) {
      size_ = static_cast<std::size_t>(st.st_size);
    } else {
      try {
        slurp();
      } catch (...) {
        ::close(fd_);
        throw;
      }
    }
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  const std::string& path() const { return path_; }
  std::size_t size() const { return size_; }

  /// Reads exactly `len` bytes at `off` (off + len <= size()). Safe to call from several threads.
  void read_at(char* dst, std::size_t off, std::size_t len) const {
    if (in_memory_) {
      if (len != 0) std::memcpy(dst, mem_ + off, len);
      return;
    }
    std::size_t done = 0;
    while (done < len) {
      const ssize_t got = ::pread(fd_, dst + done, len - done, static_cast<off_t>(off + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        fail(path_ + ": read error at byte offset " + std::to_string(off + done) + ": " +
             errno_text(errno));
      }
      if (got == 0)
        fail(path_ + ": byte offset " + std::to_string(off + done) +
             ": file ended early (was it truncated while being read?)");
      done += static_cast<std::size_t>(got);
    }
  }

 private:
  void slurp() {
    std::vector<char> buf(1 << 16);
    for (;;) {
      if (size_ == buf.size()) buf.resize(buf.size() * 2);
      const ssize_t got = ::read(fd_, buf.data() + size_, buf.size() - size_);
      if (got < 0) {
        if (errno == EINTR) continue;
        fail(path_ + ": read error at byte offset " + std::to_string(size_) + ": " +
             errno_text(errno));
      }
      if (got == 0) break;
      size_ += static_cast<std::size_t>(got);
    }
    buf.resize(size_);
    memory_ = std::move(buf);
    mem_ = memory_.data();
    in_memory_ = true;
  }

  std::string path_;
  int fd_ = -1;
  std::size_t size_ = 0;
  bool in_memory_ = false;
  const char* mem_ = nullptr;  // in memory: the content (memory_ or the caller's text)
  std::vector<char> memory_;   // content of a non-regular file
};

// ---------------------------------------------------------------------------------------------
// Labels

/// Where an NPY file's columns go when some are chosen by index (flymc/data/columns.hpp): column
/// k to feature dest[k] if it is >= 0, else into *side[−dest[k] − 1] (the response, weights,
/// trials and offset, in that order; null where a role has no column).
struct NpyColumnMap {
  std::vector<int> dest;
  std::array<std::vector<double>*, 4> side{};
};
/// The columns of an NPY file (its header's second dimension).
std::size_t npy_column_count(const std::string& path);
/// The NPY file read once as `map` says, into `d` features and the side columns (sized to the
/// rows here); non-finite values are refused as load_npy refuses them.
Dataset load_npy_mapped(const std::string& path, std::size_t d, const NpyColumnMap& map);

/// Names rows in messages: CSV rows by file line, NPY rows by 0-based row index.
struct RowLocator {
  const std::string& path;
  bool csv;
  std::size_t first_line;  // CSV: line of row 0; NPY: the file's row index of row 0
  /// The label's own field and name where it is not field 1 (a response column chosen by name).
  std::size_t label_field = 1;
  std::string label_name = "label";

  std::string short_loc(std::size_t i) const {
    return (csv ? "line " : "row ") + std::to_string(first_line + i);
  }
  std::string prefix(std::size_t i, std::size_t k) const {
    std::string where = csv ? path + ":" + std::to_string(first_line + i) + ": "
                            : path + ": row " + std::to_string(first_line + i) + ": ";
    if (k == 1) return where + "field " + std::to_string(label_field) + " (" + label_name + "): ";
    return where + "field " + std::to_string(k) + " (" + field_name(k) + "): ";
  }
};

inline void check_labels(std::vector<double>& y, LabelDomain domain, const RowLocator& loc) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  switch (domain) {
    case LabelDomain::any:
      return;
    case LabelDomain::binary: {
      std::size_t first_minus = none, first_zero = none;
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double v = y[i];
        if (v == 1.0) continue;
        if (v == -1.0) {
          if (first_zero != none)
            fail(loc.prefix(i, 1) +
                 "label -1 mixes the {-1,+1} coding with the {0,1} coding (label 0 on " +
                 loc.short_loc(first_zero) + ")");
          if (first_minus == none) first_minus = i;
        } else if (v == 0.0) {
          if (first_minus != none)
            fail(loc.prefix(i, 1) +
                 "label 0 mixes the {0,1} coding with the {-1,+1} coding (label -1 on " +
                 loc.short_loc(first_minus) + ")");
          if (first_zero == none) first_zero = i;
        } else {
          fail(loc.prefix(i, 1) + "label " + num_text(v) +
               " is not a binary label (expected all labels in {-1,+1} or all in {0,1})");
        }
      }
      if (first_zero != none)
        for (double& v : y) v = v == 0.0 ? -1.0 : 1.0;
      return;
    }
    case LabelDomain::categorical: {
      constexpr double max_class = 2147483647.0;
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double v = y[i];
        if (!(v >= 0.0) || v != std::floor(v) || v > max_class)
          fail(loc.prefix(i, 1) + "label " + num_text(v) +
               " is not a class index (expected an integer 0..K-1)");
        y[i] = v + 0.0;  // -0 -> +0
      }
      return;
    }
  }
}

}  // namespace flymc::loader_detail
