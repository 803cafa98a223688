// The libsvm / svmlight text format (loaders.hpp): `label index:value index:value ...` per line,
// 1-based strictly increasing indices, absent features zero, `#` starting a comment. The rows are
// densified: D is the largest index in the file. Parsed in one pass into a sparse triplet list,
// then scattered into the padded dense rows.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "flymc/data/loaders.hpp"
#include "loader_detail.hpp"

namespace flymc {
namespace {

using loader_detail::fail;
using loader_detail::quote;

/// The nonzero entries of every row, in file order.
struct SparseRows {
  std::vector<double> y;
  std::vector<std::size_t> start{0};  // row i's entries are [start[i], start[i+1])
  std::vector<std::uint32_t> index;   // 0-based column
  std::vector<double> value;
  std::vector<std::size_t> line;  // file line of each row, for messages
  std::size_t d = 0;
};

/// Names a token in messages as the CSV loader names fields: `field k (label|x<j>)`.
std::string where(const std::string& name, std::size_t line, std::size_t field,
                  const std::string& what) {
  return name + ":" + std::to_string(line) + ": field " + std::to_string(field) + " (" + what +
         "): ";
}

double parse_number(const char* b, const char* e, const std::string& prefix) {
  const char* p = (b != e && *b == '+' && e - b > 1 && e[-1] != '+') ? b + 1 : b;
  double v = 0.0;
  const auto r = std::from_chars(p, e, v);
  if (r.ec == std::errc::result_out_of_range) fail(prefix + "out of range: " + quote(b, e));
  if (r.ec != std::errc() || r.ptr != e) fail(prefix + "not a number: " + quote(b, e));
  if (!std::isfinite(v)) fail(prefix + "not finite: " + quote(b, e));
  return v;
}

/// One `index:value` token of row `row` (field k on `line`).
void parse_entry(const char* b, const char* e, const std::string& name, std::size_t line,
                 std::size_t field, std::size_t max_index, SparseRows& s) {
  const char* colon = b;
  while (colon != e && *colon != ':') ++colon;
  if (colon == e)
    fail(where(name, line, field, "feature") + "expected index:value, got " + quote(b, e));
  std::uint64_t idx = 0;
  const auto r = std::from_chars(b, colon, idx);
  if (r.ec != std::errc() || r.ptr != colon || idx == 0)
    fail(where(name, line, field, "feature") + "index is not a positive integer: " +
         quote(b, colon) + (std::string_view(b, colon) == "qid" ? " (qid is not supported)" : ""));
  std::string feature = "x";  // (not "x" + to_string: GCC 12 -O3 emits a false -Wrestrict)
  feature += std::to_string(idx);
  const std::string prefix = where(name, line, field, feature);
  if (idx > max_index)
    fail(prefix + "index exceeds the largest supported, " + std::to_string(max_index));
  const std::size_t first = s.start.back();
  if (s.index.size() > first && idx - 1 <= s.index.back())
    fail(prefix + "index " + std::to_string(idx) + " does not increase (after " +
         std::to_string(s.index.back() + 1) + ")");
  const double v = parse_number(colon + 1, e, prefix);
  s.index.push_back(static_cast<std::uint32_t>(idx - 1));
  s.value.push_back(v);
  if (idx > s.d) s.d = idx;
}

/// Parses one line's tokens (comment and line end already cut off); a blank line is no row.
void parse_line(const char* b, const char* e, const std::string& name, std::size_t line,
                std::size_t max_index, SparseRows& s) {
  std::size_t field = 0;
  while (true) {
    while (b != e && loader_detail::is_blank(*b)) ++b;
    if (b == e) break;
    const char* t = b;
    while (t != e && !loader_detail::is_blank(*t)) ++t;
    ++field;
    if (field == 1)
      s.y.push_back(parse_number(b, t, where(name, line, 1, "label")));
    else
      parse_entry(b, t, name, line, field, max_index, s);
    b = t;
  }
  if (field == 0) return;
  s.start.push_back(s.index.size());
  s.line.push_back(line);
}

Dataset densify(const SparseRows& s, const std::string& name, LabelDomain labels) {
  if (s.y.empty()) fail(name + ": no data rows");
  if (s.d == 0) fail(name + ": no feature appears in any row (every row has only a label)");
  Dataset ds(s.y.size(), s.d, name);
  for (std::size_t i = 0; i < s.y.size(); ++i) {
    double* row = ds.mutable_row(i);
    for (std::size_t k = s.start[i]; k < s.start[i + 1]; ++k) row[s.index[k]] = s.value[k];
  }
  ds.mutable_y() = s.y;
  // Rows are named by their file lines, which blank and comment lines make irregular: the
  // label check reports a row by its index, then this names the line.
  try {
    loader_detail::check_labels(ds.mutable_y(), labels, {name, false, 0});
  } catch (const DataError& e) {
    std::string msg = e.what();
    const std::string row_prefix = name + ": row ";
    if (msg.rfind(row_prefix, 0) == 0) {
      const std::size_t i = std::stoul(msg.substr(row_prefix.size()));
      const std::size_t colon = msg.find(':', row_prefix.size());
      msg = name + ":" + std::to_string(s.line[i]) + msg.substr(colon);
    }
    fail(msg);
  }
  return ds;
}

}  // namespace

namespace detail {
Dataset parse_libsvm_limited(std::string_view text, const std::string& name, LabelDomain labels,
                             std::size_t max_values) {
  SparseRows s;
  const char* p = text.data();
  const char* const end = p + text.size();
  std::size_t line = 0;
  const std::size_t max_index = std::min<std::size_t>(max_values, 1u << 30);
  while (p != end) {
    ++line;
    const char* eol = p;
    while (eol != end && *eol != '\n') ++eol;
    const char* stop = p;
    while (stop != eol && *stop != '#') ++stop;
    const char* last = stop;
    if (stop == eol && last != p && last[-1] == '\r') --last;
    parse_line(p, last, name, line, max_index, s);
    if (s.y.size() > 0 && s.d > 0 && s.y.size() > max_values / s.d)
      fail(name + ":" + std::to_string(line) + ": the dense matrix would exceed " +
           std::to_string(max_values) + " values");
    p = eol == end ? end : eol + 1;
  }
  return densify(s, name, labels);
}
}  // namespace detail

Dataset parse_libsvm(std::string_view text, const std::string& name, LabelDomain labels) {
  return detail::parse_libsvm_limited(text, name, labels, std::size_t{1} << 33);
}

Dataset load_libsvm(const std::string& path, LabelDomain labels) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path + ": cannot open: " + loader_detail::errno_text(errno));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail(path + ": read error");
  return parse_libsvm(text, path, labels);
}

}  // namespace flymc
