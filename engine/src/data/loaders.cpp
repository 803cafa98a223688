#include "flymc/data/loaders.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
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

namespace flymc {

static_assert(std::endian::native == std::endian::little,
              "NPY I/O assumes a little-endian host ('<f8' / '<f4' data is copied as is)");

namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers

[[noreturn]] void fail(const std::string& msg) { throw DataError(msg); }

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::string field_name(std::size_t k) {
  if (k == 1) return "label";
  std::string s = "x";  // (not "x" + to_string: GCC 12 -O3 emits a false -Wrestrict for it)
  s += std::to_string(k - 1);
  return s;
}

std::string num_text(double v) {
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// Quotes a piece of input for a message: at most 40 characters, non-printables as \xNN.
std::string quote(const char* b, const char* e) {
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

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

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

/// Names rows in messages: CSV rows by file line, NPY rows by 0-based row index.
struct RowLocator {
  const std::string& path;
  bool csv;
  std::size_t first_line;  // CSV: line of row 0

  std::string short_loc(std::size_t i) const {
    return csv ? "line " + std::to_string(first_line + i) : "row " + std::to_string(i);
  }
  std::string prefix(std::size_t i, std::size_t k) const {
    std::string where = csv ? path + ":" + std::to_string(first_line + i) + ": "
                            : path + ": row " + std::to_string(i) + ": ";
    return where + "field " + std::to_string(k) + " (" + field_name(k) + "): ";
  }
};

void check_labels(std::vector<double>& y, LabelDomain domain, const RowLocator& loc) {
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

// ---------------------------------------------------------------------------------------------
// CSV

enum class FieldStatus { ok, empty, non_numeric, non_finite, overflow };

/// Full classification of one field [b, e) (no commas inside). Slow path, used for the header
/// line and for fields the fast path rejects.
FieldStatus parse_field(const char* b, const char* e, double& out) {
  while (b < e && is_space(*b)) ++b;
  while (e > b && is_space(e[-1])) --e;
  if (b == e) return FieldStatus::empty;
  const char* p = b;
  if (*p == '+' && p + 1 < e && p[1] != '-' && p[1] != '+') ++p;
  double v = 0.0;
  const auto r = std::from_chars(p, e, v);
  if (r.ptr != e || r.ec == std::errc::invalid_argument) return FieldStatus::non_numeric;
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars reports both overflow and underflow; strtod tells them apart (underflow gives
    // zero or a subnormal, which we accept).
    const std::string copy(p, e);
    errno = 0;
    v = std::strtod(copy.c_str(), nullptr);
    if (std::isinf(v)) return FieldStatus::overflow;
  }
  if (!std::isfinite(v)) return FieldStatus::non_finite;
  out = v;
  return FieldStatus::ok;
}

std::string field_problem(FieldStatus st, const char* b, const char* e) {
  switch (st) {
    case FieldStatus::empty:
      return "empty field";
    case FieldStatus::non_numeric:
      return "not a number: " + quote(b, e);
    case FieldStatus::non_finite:
      return "NaN or Inf is not allowed: " + quote(b, e);
    case FieldStatus::overflow:
      return "number out of the range of double: " + quote(b, e);
    case FieldStatus::ok:
      break;
  }
  return "ok";
}

std::size_t count_fields(const char* b, const char* e) {
  return static_cast<std::size_t>(std::count(b, e, ',')) + 1;
}

/// One piece of the data region, parsed independently; pieces start at a line start.
struct Chunk {
  const char* b = nullptr;
  const char* e = nullptr;
  std::size_t row0 = 0;
  std::size_t rows = 0;
  std::string error;  // first problem in this chunk (empty if none)
};

/// Parses the lines of `c` into rows row0.. of `ds`. Stops at the first problem and records it.
void parse_chunk(Chunk& c, std::size_t ncols, std::size_t first_data_line, const std::string& path,
                 Dataset& ds) {
  const char* p = c.b;
  std::vector<double>& y = ds.mutable_y();
  for (std::size_t r = c.row0; r < c.row0 + c.rows; ++r) {
    const std::size_t line = first_data_line + r;
    const char* lb = p;
    const char* nl =
        static_cast<const char*>(std::memchr(lb, '\n', static_cast<std::size_t>(c.e - lb)));
    const char* le = nl != nullptr ? nl : c.e;
    p = nl != nullptr ? nl + 1 : c.e;
    if (le > lb && le[-1] == '\r') --le;
    auto line_error = [&](const std::string& what) {
      c.error = path + ":" + std::to_string(line) + ": " + what;
    };
    if (std::all_of(lb, le, is_space)) {
      line_error("blank line between data rows");
      return;
    }
    double* x = ds.mutable_row(r);
    const char* q = lb;
    for (std::size_t k = 0; k < ncols; ++k) {
      const char* fs = q;
      while (q < le && is_blank(*q)) ++q;
      if (q < le && *q == '+' && q + 1 < le && q[1] != '-' && q[1] != '+') ++q;
      double v = 0.0;
      const auto res = std::from_chars(q, le, v);
      const char* t = res.ptr;
      bool ok = res.ec == std::errc() && t != q && std::isfinite(v);
      while (t < le && is_blank(*t)) ++t;
      if (ok && t < le && *t != ',') ok = false;
      if (!ok) {  // slow path: classify the whole field
        const char* comma =
            static_cast<const char*>(std::memchr(fs, ',', static_cast<std::size_t>(le - fs)));
        const char* fe = comma != nullptr ? comma : le;
        const FieldStatus st = parse_field(fs, fe, v);
        if (st != FieldStatus::ok) {
          line_error("field " + std::to_string(k + 1) + " (" + field_name(k + 1) +
                     "): " + field_problem(st, fs, fe));
          return;
        }
        t = fe;
      }
      if (k == 0) {
        y[r] = v;
      } else {
        x[k - 1] = v;
      }
      if (k + 1 < ncols) {
        if (t >= le) {
          line_error("expected " + std::to_string(ncols) + " fields, found " +
                     std::to_string(k + 1));
          return;
        }
        q = t + 1;  // past the comma
      } else if (t < le) {
        line_error("expected " + std::to_string(ncols) + " fields, found " +
                   std::to_string(count_fields(lb, le)));
        return;
      }
    }
  }
}

}  // namespace

namespace {

/// Parses the complete lines [b, e) (e is just after a '\n', or the end of the data) as rows
/// row0.. of `ds`, in parallel pieces. Throws the first problem in file order. Returns the number
/// of rows parsed.
std::size_t parse_region(const char* b, const char* e, std::size_t row0, std::size_t ncols,
                         std::size_t first_data_line, const std::string& path, Dataset& ds,
                         std::size_t chunk_bytes) {
  std::vector<Chunk> chunks;
  for (const char* s = b; s < e;) {
    const char* end = static_cast<std::size_t>(e - s) > chunk_bytes ? s + chunk_bytes : e;
    if (end < e) {
      const char* nl =
          static_cast<const char*>(std::memchr(end, '\n', static_cast<std::size_t>(e - end)));
      end = nl != nullptr ? nl + 1 : e;
    }
    Chunk c;
    c.b = s;
    c.e = end;
    chunks.push_back(c);
    s = end;
  }
  auto for_chunks = [&](auto&& fn) {
    if (chunks.size() == 1) {
      fn(chunks[0]);
    } else {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks.size(), 1),
                        [&](const tbb::blocked_range<std::size_t>& r) {
                          for (std::size_t i = r.begin(); i != r.end(); ++i) fn(chunks[i]);
                        });
    }
  };
  for_chunks([](Chunk& c) {
    c.rows = static_cast<std::size_t>(std::count(c.b, c.e, '\n')) + (c.e[-1] == '\n' ? 0 : 1);
  });
  std::size_t n = row0;
  for (Chunk& c : chunks) {
    c.row0 = n;
    n += c.rows;
  }
  if (n > ds.n()) fail(path + ": the file changed while being read (more rows than counted)");
  for_chunks([&](Chunk& c) { parse_chunk(c, ncols, first_data_line, path, ds); });
  for (const Chunk& c : chunks)
    if (!c.error.empty()) fail(c.error);
  return n - row0;
}

}  // namespace

namespace {

/// The first data row (0-based) that is blank, has a field count other than `ncols` or an empty
/// field, and the byte offset just past its line break (or `end`). Scans [begin, end) of `f`.
std::pair<std::size_t, std::size_t> first_malformed_row(const InputFile& f, std::size_t begin,
                                                        std::size_t end, std::size_t ncols,
                                                        std::size_t block, std::vector<char>& buf) {
  std::size_t row = 0, fields = 1;
  bool field_blank = true, line_ok = true;
  for (std::size_t off = begin; off < end;) {
    const std::size_t len = std::min(block, end - off);
    buf.resize(std::max(buf.size(), len));
    f.read_at(buf.data(), off, len);
    for (std::size_t i = 0; i < len; ++i) {
      const char c = buf[i];
      if (c == ',' || c == '\n') {
        line_ok = line_ok && !field_blank;
        field_blank = true;
        if (c == ',') {
          ++fields;
          continue;
        }
        if (!line_ok || fields != ncols) return {row, off + i + 1};
        ++row;
        fields = 1;
        line_ok = true;
      } else if (!is_space(c)) {
        field_blank = false;
      }
    }
    off += len;
  }
  return {row, end};  // the last line, or (if the caller's count was wrong) past it
}

Dataset csv_from(const InputFile& f, LabelDomain labels, const detail::LoaderBlocks& blocks) {
  const std::string& path = f.path();
  const std::size_t size = f.size();
  const std::size_t block = std::max<std::size_t>(1, blocks.io_bytes);
  const std::size_t chunk_bytes = std::max<std::size_t>(1, blocks.parse_bytes);
  std::vector<char> buf;

  // Pass 1: where the data ends (after the last non-blank byte; trailing blank lines are
  // allowed) and how many line breaks come before that.
  std::size_t end = 0, nl_total = 0, nl_before_end = 0;
  buf.resize(std::min(block, size));
  for (std::size_t off = 0; off < size;) {
    const std::size_t len = std::min(block, size - off);
    f.read_at(buf.data(), off, len);
    const char* bb = buf.data();
    const auto nl = static_cast<std::size_t>(std::count(bb, bb + len, '\n'));
    std::size_t i = len;
    while (i > 0 && is_space(bb[i - 1])) --i;
    if (i > 0) {
      end = off + i;
      nl_before_end = nl_total + nl - static_cast<std::size_t>(std::count(bb + i, bb + len, '\n'));
    }
    nl_total += nl;
    off += len;
  }
  std::size_t start = 0;
  if (end >= 3) {
    char bom[3];
    f.read_at(bom, 0, 3);
    if (std::memcmp(bom, "\xEF\xBB\xBF", 3) == 0) start = 3;  // UTF-8 byte order mark
  }
  if (end <= start) fail(path + ": empty file (no header, no data rows)");

  // First line: a header (no field is a number) or data.
  std::string first;
  bool first_has_newline = false;
  for (std::size_t pos = start; pos < end && !first_has_newline;) {
    const std::size_t len = std::min({std::size_t{1} << 16, block, end - pos});
    const std::size_t old = first.size();
    first.resize(old + len);
    f.read_at(first.data() + old, pos, len);
    const auto nl = first.find('\n', old);
    if (nl != std::string::npos) {
      first.resize(nl);
      first_has_newline = true;
    }
    pos += len;
  }
  const std::size_t first_len = first.size();  // bytes before the '\n'
  if (std::all_of(first.begin(), first.end(), is_space)) fail(path + ":1: blank first line");
  if (!first.empty() && first.back() == '\r') first.pop_back();
  bool any_numeric = false;
  for (const char *fb = first.data(), *l1e = first.data() + first.size();;) {
    const char* comma =
        static_cast<const char*>(std::memchr(fb, ',', static_cast<std::size_t>(l1e - fb)));
    const char* fe = comma != nullptr ? comma : l1e;
    double v;
    const FieldStatus st = parse_field(fb, fe, v);
    if (st == FieldStatus::ok || st == FieldStatus::non_finite || st == FieldStatus::overflow)
      any_numeric = true;
    if (comma == nullptr) break;
    fb = comma + 1;
  }
  const bool header = !any_numeric;
  const std::size_t ncols = count_fields(first.data(), first.data() + first.size());
  const std::size_t data_begin = header ? start + first_len + 1 : start;
  const std::size_t first_data_line = header ? 2 : 1;
  if (data_begin >= end) fail(path + ": no data rows (the file has only a header line)");
  if (ncols < 2) fail(path + ":1: found 1 field; need at least 2 (the label and one feature)");
  const std::size_t n = nl_before_end - (header ? 1 : 0) + 1;
  if (n > std::numeric_limits<Index>::max())
    fail(path + ": " + std::to_string(n) + " data rows; at most " +
         std::to_string(std::numeric_limits<Index>::max()) + " are supported");

  // A valid row has ncols non-empty fields and ncols - 1 commas, and rows are separated by line
  // breaks, so valid data has at least 2·ncols·n − 1 bytes. With fewer, the N × D matrix would
  // be allocated (and zeroed) for nothing: a small malformed file with a long first line and
  // many line breaks could ask for terabytes. Then only the rows up to the first malformed one
  // are parsed, which throws the same first problem in file order as the full parse.
  std::size_t rows = n, parse_end = end;
  std::size_t need = 0;
  if (__builtin_mul_overflow(n, 2 * ncols, &need) || need - 1 > end - data_begin) {
    const auto [bad_row, bad_end] = first_malformed_row(f, data_begin, end, ncols, block, buf);
    rows = bad_row + 1;
    parse_end = bad_end;
  }

  // Pass 2: parse block by block; a block is cut after its last line break and the rest is
  // carried over to the next one.
  Dataset ds(rows, ncols - 1, path);
  std::size_t row = 0, carry = 0;
  for (std::size_t pos = data_begin; pos < parse_end;) {
    const std::size_t len = std::min(block, parse_end - pos);
    if (carry + len > buf.size()) buf.resize(carry + len);
    f.read_at(buf.data() + carry, pos, len);
    pos += len;
    const std::size_t total = carry + len;
    std::size_t cut = total;
    if (pos < parse_end) {
      const void* nl = ::memrchr(buf.data(), '\n', total);
      if (nl == nullptr) {  // one line longer than a block: read more
        carry = total;
        continue;
      }
      cut = static_cast<std::size_t>(static_cast<const char*>(nl) - buf.data()) + 1;
    }
    row += parse_region(buf.data(), buf.data() + cut, row, ncols, first_data_line, path, ds,
                        chunk_bytes);
    std::memmove(buf.data(), buf.data() + cut, total - cut);
    carry = total - cut;
  }
  if (rows != n) fail(path + ": the file changed while being read (no malformed row found)");
  if (row != n) fail(path + ": the file changed while being read (fewer rows than counted)");

  check_labels(ds.mutable_y(), labels, RowLocator{path, true, first_data_line});
  return ds;
}

}  // namespace

Dataset load_csv(const std::string& path, LabelDomain labels) {
  return csv_from(InputFile(path), labels, {});
}
Dataset parse_csv(std::string_view text, const std::string& name, LabelDomain labels) {
  return csv_from(InputFile(text, name), labels, {});
}
Dataset detail::parse_csv_blocks(std::string_view text, const std::string& name, LabelDomain labels,
                                 const LoaderBlocks& blocks) {
  return csv_from(InputFile(text, name), labels, blocks);
}

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

Dataset npy_from(const InputFile& f, LabelDomain labels, const detail::LoaderBlocks& blocks) {
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
  const std::size_t hstart = 8 + len_bytes;
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

  NpyHeaderParser hp(path, htext.data(), htext.data() + hlen, hstart);
  hp.parse();
  const std::string at_header = path + ": byte offset " + std::to_string(hstart) + ": ";
  std::size_t item = 0;
  if (hp.descr == "<f8") {
    item = 8;
  } else if (hp.descr == "<f4") {
    item = 4;
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
  const std::uint64_t n = hp.shape[0], ncols = hp.shape[1];
  if (ncols < 2)
    fail(at_header + "shape " + shape_text +
         " has fewer than 2 columns (need the label and one feature)");
  if (n == 0) fail(at_header + "no data rows (shape " + shape_text + ")");
  if (n > std::numeric_limits<Index>::max())
    fail(at_header + "shape " + shape_text + ": at most " +
         std::to_string(std::numeric_limits<Index>::max()) + " rows are supported");
  std::uint64_t cells = 0, bytes = 0;
  if (__builtin_mul_overflow(n, ncols, &cells) || __builtin_mul_overflow(cells, item, &bytes))
    fail(at_header + "shape " + shape_text + " is too large");
  const std::size_t data_off = hstart + hlen;
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

  // Blocks of rows, read and converted in parallel; each block records its first non-finite
  // value (flat index and value).
  Dataset ds(n, ncols - 1, path);
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
    for (std::size_t r = r0; r < r1; ++r) {
      double* x = ds.mutable_row(r);
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
        if (c == 0) {
          y[r] = v;
        } else {
          x[c - 1] = v;
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
    fail(RowLocator{path, false, 0}.prefix(flat / ncols, flat % ncols + 1) +
         (std::isnan(v) ? "NaN" : "Inf") + " is not allowed");
  }

  check_labels(y, labels, RowLocator{path, false, 0});
  return ds;
}

}  // namespace

Dataset load_npy(const std::string& path, LabelDomain labels) {
  return npy_from(InputFile(path), labels, {});
}
Dataset parse_npy(std::string_view text, const std::string& name, LabelDomain labels) {
  return npy_from(InputFile(text, name), labels, {});
}
Dataset detail::parse_npy_blocks(std::string_view text, const std::string& name, LabelDomain labels,
                                 const LoaderBlocks& blocks) {
  return npy_from(InputFile(text, name), labels, blocks);
}

Dataset load_dataset(const std::string& path, LabelDomain labels) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  std::string ext;
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    ext = path.substr(dot);
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (ext == ".csv") return load_csv(path, labels);
  if (ext == ".npy") return load_npy(path, labels);
  fail(path + ": unknown data file type " + (ext.empty() ? "(no extension)" : "'" + ext + "'") +
       "; expected .csv or .npy");
}

// ---------------------------------------------------------------------------------------------
// Writing

namespace {

constexpr int ex_ioerr = 74;

/// Writes to `<path>.tmp`, renamed to `path` by commit(); removed if not committed.
class OutFile {
 public:
  explicit OutFile(const std::string& path) : path_(path), tmp_(path + ".tmp") {
    fp_ = std::fopen(tmp_.c_str(), "wb");
    if (fp_ == nullptr)
      throw Error(path_ + ": cannot create '" + tmp_ + "': " + errno_text(errno), ex_ioerr);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  ~OutFile() {
    if (fp_ != nullptr) {
      std::fclose(fp_);
      std::remove(tmp_.c_str());
    }
  }
  void write(const void* p, std::size_t bytes) {
    if (bytes != 0 && std::fwrite(p, 1, bytes, fp_) != bytes)
      throw Error(path_ + ": write error: " + errno_text(errno), ex_ioerr);
  }
  void commit() {
    const int rc = std::fclose(fp_);
    fp_ = nullptr;
    if (rc != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      throw Error(path_ + ": write error: " + errno_text(err), ex_ioerr);
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      throw Error(path_ + ": cannot rename '" + tmp_ + "' into place: " + errno_text(err),
                  ex_ioerr);
    }
  }

 private:
  std::string path_, tmp_;
  std::FILE* fp_ = nullptr;
};

}  // namespace

void save_csv(const Dataset& ds, const std::string& path) {
  OutFile out(path);
  const std::size_t d = ds.d();
  std::string head = "label";
  for (std::size_t j = 1; j <= d; ++j) head += ",x" + std::to_string(j);
  head += '\n';
  out.write(head.data(), head.size());

  // Rows are formatted in parallel pieces of `piece` rows, written in order.
  constexpr std::size_t piece = 2048, pieces_per_batch = 32;
  const std::size_t max_line = (d + 1) * 25 + 1;  // shortest double text is at most 24 chars
  const std::span<const double> y = ds.y();
  std::vector<std::string> bufs(pieces_per_batch);
  for (std::size_t start = 0; start < ds.n(); start += piece * pieces_per_batch) {
    const std::size_t npieces = std::min(pieces_per_batch, (ds.n() - start + piece - 1) / piece);
    auto format = [&](std::size_t pi) {
      const std::size_t r0 = start + pi * piece, r1 = std::min(ds.n(), r0 + piece);
      std::string& s = bufs[pi];
      s.resize((r1 - r0) * max_line);
      char* p = s.data();
      for (std::size_t r = r0; r < r1; ++r) {
        p = std::to_chars(p, p + 32, y[r]).ptr;
        const double* x = ds.row(r);
        for (std::size_t j = 0; j < d; ++j) {
          *p++ = ',';
          p = std::to_chars(p, p + 32, x[j]).ptr;
        }
        *p++ = '\n';
      }
      s.resize(static_cast<std::size_t>(p - s.data()));
    };
    if (npieces == 1) {
      format(0);
    } else {
      tbb::parallel_for(std::size_t{0}, npieces, format);
    }
    for (std::size_t pi = 0; pi < npieces; ++pi) out.write(bufs[pi].data(), bufs[pi].size());
  }
  out.commit();
}

void save_npy(const Dataset& ds, const std::string& path) {
  const std::size_t n = ds.n(), d = ds.d(), ncols = d + 1;
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(n) +
                     ", " + std::to_string(ncols) + "), }";
  // Preamble + header padded with spaces and ended by '\n' to a multiple of 64 bytes.
  auto padded_len = [&](std::size_t preamble) {
    const std::size_t total = preamble + dict.size() + 1;
    return (total + 63) / 64 * 64 - preamble;
  };
  int major = 1;
  std::size_t hlen = padded_len(10);
  if (hlen > 65535) {
    major = 2;
    hlen = padded_len(12);
  }
  std::string pre = "\x93NUMPY";
  pre += static_cast<char>(major);
  pre += '\0';
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) pre += static_cast<char>((hlen >> (8 * i)) & 0xff);
  dict.resize(hlen - 1, ' ');
  dict += '\n';

  OutFile out(path);
  out.write(pre.data(), pre.size());
  out.write(dict.data(), dict.size());
  constexpr std::size_t rows_per_write = 8192;
  std::vector<double> buf;
  buf.reserve(rows_per_write * ncols);
  const std::span<const double> y = ds.y();
  for (std::size_t r = 0; r < n; ++r) {
    buf.push_back(y[r]);
    buf.insert(buf.end(), ds.row(r), ds.row(r) + d);
    if (buf.size() >= rows_per_write * ncols || r + 1 == n) {
      out.write(buf.data(), buf.size() * sizeof(double));
      buf.clear();
    }
  }
  out.commit();
}

}  // namespace flymc
