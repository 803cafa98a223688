// Reading CSV data files (flymc/data/loaders.hpp).
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/columns.hpp"
#include "flymc/data/loaders.hpp"
#include "loader_detail.hpp"

namespace flymc {

using namespace loader_detail;

namespace {

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

}  // namespace flymc

namespace flymc {

std::vector<std::string> csv_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open: " + loader_detail::errno_text(errno));
  std::string first;
  std::getline(in, first);
  if (first.rfind("\xEF\xBB\xBF", 0) == 0) first.erase(0, 3);
  std::vector<std::string> names;
  for (std::size_t b = 0;;) {
    const std::size_t comma = first.find(',', b);
    const std::size_t e = comma == std::string::npos ? first.size() : comma;
    double v;
    const FieldStatus st = parse_field(first.data() + b, first.data() + e, v);
    if (st == FieldStatus::ok || st == FieldStatus::non_finite || st == FieldStatus::overflow)
      return {};  // data: the file has no header
    std::size_t lo = b, hi = e;
    while (lo < hi && loader_detail::is_space(first[lo])) ++lo;
    while (hi > lo && loader_detail::is_space(first[hi - 1])) --hi;
    names.push_back(first.substr(lo, hi - lo));
    if (comma == std::string::npos) break;
    b = comma + 1;
  }
  return names;
}

}  // namespace flymc
