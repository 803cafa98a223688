// Reading NPY data files (flymc/data/loaders.hpp), and the dispatch on the extension.
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "loader_detail.hpp"

namespace flymc {

using namespace loader_detail;

static_assert(std::endian::native == std::endian::little,
              "NPY I/O assumes a little-endian host ('<f8' / '<f4' data is copied as is)");

// ---------------------------------------------------------------------------------------------
// NPY

namespace {

/// Parser for the Python dict literal in an NPY header, e.g.
/// {'descr': '<f8', 'fortran_order': False, 'shape': (12000, 51), }
class NpyHeaderParser {
 public:
  NpyHeaderParser(const std::string& path, const char* b, const char* e, std::size_t offset)
      : path_(path), b_(b), p_(b), e_(e), offset_(offset) {}

  struct Value {
    enum Kind { string, boolean, tuple } kind = string;
    std::string str;
    bool flag = false;
    std::vector<std::uint64_t> ints;
  };

  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;

  void parse() {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') {
        ++p_;
        break;
      }
      const std::size_t key_at = pos();
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      const std::size_t value_at = pos();
      const Value v = parse_value();
      if (key == "descr") {
        if (have_descr) error_at(key_at, "duplicate key 'descr'");
        if (v.kind != Value::string)
          error_at(value_at, "unsupported dtype (only '<f8' and '<f4' arrays are supported)");
        descr = v.str;
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_fortran) error_at(key_at, "duplicate key 'fortran_order'");
        if (v.kind != Value::boolean) error_at(value_at, "'fortran_order' must be True or False");
        fortran_order = v.flag;
        have_fortran = true;
      } else if (key == "shape") {
        if (have_shape) error_at(key_at, "duplicate key 'shape'");
        if (v.kind != Value::tuple) error_at(value_at, "'shape' must be a tuple of integers");
        shape = v.ints;
        have_shape = true;
      } else {
        error_at(key_at, "unexpected key '" + key + "' in the header");
      }
      skip_ws();
      if (peek() == ',') {
        ++p_;
        continue;
      }
      skip_ws();
      expect('}');
      break;
    }
    skip_ws();
    if (p_ != e_) error_at(pos(), "unexpected text after the header dictionary");
    if (!have_descr) error_at(0, "header has no 'descr' key");
    if (!have_fortran) error_at(0, "header has no 'fortran_order' key");
    if (!have_shape) error_at(0, "header has no 'shape' key");
  }

 private:
  std::size_t pos() const { return static_cast<std::size_t>(p_ - b_); }
  char peek() const { return p_ < e_ ? *p_ : '\0'; }
  void skip_ws() {
    while (p_ < e_ && is_space(*p_)) ++p_;
  }
  [[noreturn]] void error_at(std::size_t at, const std::string& what) const {
    fail(path_ + ": byte offset " + std::to_string(offset_ + at) + ": NPY header: " + what);
  }
  void expect(char c) {
    if (p_ >= e_) error_at(pos(), std::string("expected '") + c + "', found the end of the header");
    if (*p_ != c) error_at(pos(), std::string("expected '") + c + "', found " + quote(p_, p_ + 1));
    ++p_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') {
      if (p_ >= e_) error_at(pos(), "expected a quoted string, found the end of the header");
      error_at(pos(), "expected a quoted string, found " + quote(p_, p_ + 1));
    }
    const std::size_t start = pos();
    ++p_;
    const char* s = p_;
    while (p_ < e_ && *p_ != q) {
      if (*p_ == '\\') error_at(pos(), "escape sequences are not supported in header strings");
      ++p_;
    }
    if (p_ >= e_) error_at(start, "unterminated string");
    std::string out(s, p_);
    ++p_;
    return out;
  }
  Value parse_value() {
    Value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = Value::string;
      v.str = parse_string();
    } else if (c == '(') {
      v.kind = Value::tuple;
      ++p_;
      for (;;) {
        skip_ws();
        if (peek() == ')') {
          ++p_;
          break;
        }
        v.ints.push_back(parse_uint());
        skip_ws();
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect(')');
        break;
      }
    } else if (match("True")) {
      v.kind = Value::boolean;
      v.flag = true;
    } else if (match("False")) {
      v.kind = Value::boolean;
      v.flag = false;
    } else if (p_ >= e_) {
      error_at(pos(), "expected a value, found the end of the header");
    } else {
      error_at(pos(), "unsupported value starting with " + quote(p_, p_ + 1));
    }
    return v;
  }
  bool match(std::string_view word) {
    if (static_cast<std::size_t>(e_ - p_) >= word.size() &&
        std::string_view(p_, word.size()) == word) {
      p_ += word.size();
      return true;
    }
    return false;
  }
  std::uint64_t parse_uint() {
    std::uint64_t v = 0;
    const auto r = std::from_chars(p_, e_, v);
    if (r.ec == std::errc::result_out_of_range) error_at(pos(), "shape entry too large");
    if (r.ec != std::errc() || r.ptr == p_) {
      if (p_ >= e_) error_at(pos(), "expected an integer, found the end of the header");
      error_at(pos(), "expected a non-negative integer in 'shape', found " + quote(p_, p_ + 1));
    }
    p_ = r.ptr;
    if (p_ < e_ && *p_ == 'L') ++p_;  // Python 2 long suffix
    return v;
  }

  const std::string& path_;
  const char* b_;
  const char* p_;
  const char* e_;
  std::size_t offset_;
};

std::uint64_t read_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

namespace {

/// Where an NPY file's array lies and how it is stored.
struct NpyLayout {
  std::size_t item = 0;      // bytes per value: 8 (<f8) or 4 (<f4)
  std::uint64_t n = 0;       // rows
  std::uint64_t ncols = 0;   // label + features
  std::size_t data_off = 0;  // byte offset of the first value
};

/// The preamble (magic, version, header length) and the header's text; `hstart` is its offset.
std::vector<char> read_npy_header_text(const InputFile& f, std::size_t& hstart) {
  const std::string& path = f.path();
  const std::size_t size = f.size();
  if (size == 0) fail(path + ": empty file (not an NPY file)");
  char pre[12] = {};
  f.read_at(pre, 0, std::min<std::size_t>(size, sizeof pre));
  if (size < 6 || std::memcmp(pre, "\x93NUMPY", 6) != 0)
    fail(path + ": byte offset 0: bad magic (expected \\x93NUMPY; not an NPY file)");
  if (size < 8)
    fail(path + ": byte offset 6: truncated NPY preamble (file has " + std::to_string(size) +
         " bytes)");
  const int major = static_cast<unsigned char>(pre[6]);
  const int minor = static_cast<unsigned char>(pre[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(path + ": byte offset 6: unsupported NPY format version " + std::to_string(major) + "." +
         std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  hstart = 8 + len_bytes;
  if (size < hstart)
    fail(path + ": byte offset 8: truncated NPY preamble (file has " + std::to_string(size) +
         " bytes)");
  const auto hlen = static_cast<std::size_t>(read_le(pre + 8, static_cast<int>(len_bytes)));
  if (hlen > size - hstart)
    fail(path + ": byte offset " + std::to_string(hstart) +
         ": truncated NPY header (header length " + std::to_string(hlen) + ", but only " +
         std::to_string(size - hstart) + " bytes follow)");
  std::vector<char> htext(hlen);
  f.read_at(htext.data(), hstart, hlen);

  return htext;
}

/// Reads and checks the preamble and header: dtype, order, shape, and a data size that matches
/// the file's.
NpyLayout read_npy_layout(const InputFile& f) {
  const std::string& path = f.path();
  const std::size_t size = f.size();
  std::size_t hstart = 0;
  std::vector<char> htext = read_npy_header_text(f, hstart);
  const std::size_t hlen = htext.size();
  NpyHeaderParser hp(path, htext.data(), htext.data() + hlen, hstart);
  hp.parse();
  const std::string at_header = path + ": byte offset " + std::to_string(hstart) + ": ";
  NpyLayout L;
  if (hp.descr == "<f8") {
    L.item = 8;
  } else if (hp.descr == "<f4") {
    L.item = 4;
  } else {
    fail(at_header + "unsupported dtype '" + hp.descr + "' (supported: '<f8', '<f4')");
  }
  if (hp.fortran_order)
    fail(at_header + "unsupported fortran_order True (only C-order arrays are supported)");
  std::string shape_text = "(";
  for (std::size_t i = 0; i < hp.shape.size(); ++i) {
    if (i != 0) shape_text += ", ";
    shape_text += std::to_string(hp.shape[i]);
  }
  shape_text += hp.shape.size() == 1 ? ",)" : ")";
  if (hp.shape.size() != 2)
    fail(at_header + "unsupported ndim " + std::to_string(hp.shape.size()) + " (shape " +
         shape_text + "); expected a 2-D array (N, D+1)");
  const std::uint64_t n = L.n = hp.shape[0], ncols = L.ncols = hp.shape[1];
  if (ncols < 2)
    fail(at_header + "shape " + shape_text +
         " has fewer than 2 columns (need the label and one feature)");
  if (n == 0) fail(at_header + "no data rows (shape " + shape_text + ")");
  if (n > std::numeric_limits<Index>::max())
    fail(at_header + "shape " + shape_text + ": at most " +
         std::to_string(std::numeric_limits<Index>::max()) + " rows are supported");
  std::uint64_t cells = 0, bytes = 0;
  if (__builtin_mul_overflow(n, ncols, &cells) || __builtin_mul_overflow(cells, L.item, &bytes))
    fail(at_header + "shape " + shape_text + " is too large");
  const std::size_t data_off = L.data_off = hstart + hlen;
  const std::size_t avail = size - data_off;
  if (avail < bytes)
    fail(path + ": truncated data: expected " + std::to_string(bytes) +
         " bytes of data at byte offset " + std::to_string(data_off) + " for shape " + shape_text +
         " " + hp.descr + ", found " + std::to_string(avail) + " (file size " +
         std::to_string(size) + ")");
  if (avail > bytes)
    fail(path + ": byte offset " + std::to_string(data_off + bytes) + ": " +
         std::to_string(avail - bytes) + " unexpected trailing bytes after the data of shape " +
         shape_text);

  return L;
}

/// The file's rows [first, first + ds.n()) into `ds`: blocks of rows read and converted in
/// parallel; the first non-finite value in file order is reported.
/// With `map`, column k goes where map->dest[k] says (columns chosen by name, columns.hpp);
/// without, column 0 is the response and the others the features in order.
void read_npy_rows(const InputFile& f, const NpyLayout& L, const detail::LoaderBlocks& blocks,
                   std::size_t first, Dataset& ds,
                   const loader_detail::NpyColumnMap* map = nullptr) {
  const std::string& path = f.path();
  const std::size_t item = L.item, data_off = L.data_off + first * L.ncols * L.item;
  const std::uint64_t n = ds.n(), ncols = L.ncols;
  // Each block records its first non-finite value (flat index and value).
  std::vector<double>& y = ds.mutable_y();
  const std::size_t row_bytes = ncols * item;
  const std::size_t block = std::max<std::size_t>(1, blocks.npy_bytes / row_bytes);
  const std::size_t nblocks = (n + block - 1) / block;
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::vector<std::pair<std::size_t, double>> bad(nblocks, {none, 0.0});
  tbb::enumerable_thread_specific<std::vector<char>> buffers;
  auto convert = [&](std::size_t blk) {
    const std::size_t r0 = blk * block, r1 = std::min<std::size_t>(n, r0 + block);
    std::vector<char>& buf = buffers.local();
    buf.resize((r1 - r0) * row_bytes);
    f.read_at(buf.data(), data_off + r0 * row_bytes, buf.size());
    const bool f32 = ds.storage() == Storage::f32;
    for (std::size_t r = r0; r < r1; ++r) {
      double* x = f32 ? nullptr : ds.mutable_row(r);
      float* xf = f32 ? ds.mutable_row_f32(r) : nullptr;
      const char* rowp = buf.data() + (r - r0) * row_bytes;
      for (std::size_t c = 0; c < ncols; ++c) {
        double v;
        if (item == 8) {
          std::memcpy(&v, rowp + c * 8, 8);
        } else {
          float fv;
          std::memcpy(&fv, rowp + c * 4, 4);
          v = fv;
        }
        if (!std::isfinite(v)) {
          bad[blk] = {r * ncols + c, v};
          return;
        }
        const int to = map != nullptr ? map->dest[c] : static_cast<int>(c) - 1;
        if (to < 0) {
          (map != nullptr ? *map->side[static_cast<std::size_t>(-to - 1)] : y)[r] = v;
        } else if (!f32) {
          x[to] = v;
        } else {
          xf[to] = static_cast<float>(v);
          if (std::isinf(xf[to])) {  // finite, but beyond float's range
            bad[blk] = {r * ncols + c, v};
            return;
          }
        }
      }
    }
  };
  if (nblocks == 1) {
    convert(0);
  } else {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, nblocks, 1),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t i = r.begin(); i != r.end(); ++i) convert(i);
                      });
  }
  for (const auto& [flat, v] : bad) {
    if (flat == none) continue;
    const std::string where = RowLocator{path, false, first}.prefix(flat / ncols, flat % ncols + 1);
    if (std::isfinite(v))
      fail(where + num_text(v) + " is beyond float32's range (3.4e38); use --storage f64");
    fail(where + (std::isnan(v) ? "NaN" : "Inf") + " is not allowed");
  }
}

Dataset npy_from(const InputFile& f, LabelDomain labels, const detail::LoaderBlocks& blocks,
                 Storage storage = Storage::f64) {
  const NpyLayout L = read_npy_layout(f);
  Dataset ds(L.n, L.ncols - 1, f.path(), storage);
  read_npy_rows(f, L, blocks, 0, ds);
  check_labels(ds.mutable_y(), labels, RowLocator{f.path(), false, 0});
  return ds;
}

}  // namespace

void check_part_labels(FilePart& part, LabelDomain labels) {
  const auto y = part.data.y();
  if (labels == LabelDomain::binary)
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (y[i] == 0.0 && part.first_zero == none_row) part.first_zero = part.first_row + i;
      if (y[i] == -1.0 && part.first_minus == none_row) part.first_minus = part.first_row + i;
    }
  check_labels(part.data.mutable_y(), labels,
               RowLocator{part.data.source(), false, part.first_row});
}

FilePart load_npy_part(const std::string& path, LabelDomain labels, int part, int parts,
                       Storage storage) {
  const InputFile f(path);
  const NpyLayout L = read_npy_layout(f);
  const auto [first, last] = shard_rows(L.n, part, parts);
  FilePart out{Dataset(last - first, L.ncols - 1, path, storage), first, L.n};
  read_npy_rows(f, L, detail::LoaderBlocks{}, first, out.data);
  check_part_labels(out, labels);
  return out;
}

std::size_t loader_detail::npy_column_count(const std::string& path) {
  return read_npy_layout(InputFile(path)).ncols;
}

Dataset loader_detail::load_npy_mapped(const std::string& path, std::size_t d,
                                       const NpyColumnMap& map) {
  const InputFile f(path);
  const NpyLayout L = read_npy_layout(f);
  Dataset ds(L.n, d, path, Storage::f64);
  for (std::vector<double>* v : map.side)
    if (v != nullptr) v->resize(L.n);
  read_npy_rows(f, L, detail::LoaderBlocks{}, 0, ds, &map);
  return ds;
}

Dataset load_npy(const std::string& path, LabelDomain labels, Storage storage) {
  return npy_from(InputFile(path), labels, {}, storage);
}
Dataset parse_npy(std::string_view text, const std::string& name, LabelDomain labels) {
  return npy_from(InputFile(text, name), labels, {});
}
Dataset detail::parse_npy_blocks(std::string_view text, const std::string& name, LabelDomain labels,
                                 const LoaderBlocks& blocks) {
  return npy_from(InputFile(text, name), labels, blocks);
}

Dataset load_dataset(const std::string& path, LabelDomain labels, Storage storage) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  std::string ext;
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    ext = path.substr(dot);
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (ext == ".npy") return load_npy(path, labels, storage);
  if (storage == Storage::f32) {
    Dataset ds = load_dataset(path, labels, Storage::f64);
    ds.store_as_f32();
    return ds;
  }
  if (ext == ".csv") return load_csv(path, labels);
  if (ext == ".svm" || ext == ".libsvm" || ext == ".svmlight") return load_libsvm(path, labels);
  fail(path + ": unknown data file type " + (ext.empty() ? "(no extension)" : "'" + ext + "'") +
       "; expected .csv, .npy or libsvm text (.svm, .libsvm, .svmlight)");
}

}  // namespace flymc
