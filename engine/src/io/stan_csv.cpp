#include "flymc/io/stan_csv.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <system_error>

#include "flymc/core/errors.hpp"

namespace flymc {

namespace {

constexpr std::size_t kStdioBufferSize = std::size_t{1} << 20;
// Longest shortest-round-trip double ("-2.2250738585072014e-308") is 24 characters.
constexpr std::size_t kMaxNumberChars = 32;
// Fixed notation of any double: up to 309 integer digits or 1074 fraction digits.
constexpr std::size_t kMaxFixedChars = 1100;

constexpr int kExCantCreate = 73;
constexpr int kExIoErr = 74;
constexpr int kExSoftware = 70;

/// Writes the shortest text that reads back to exactly `v` into [out, end) and returns its end;
/// non-finite values as inf, -inf, nan. `end - out` must be >= kMaxNumberChars (general format)
/// or >= kMaxFixedChars (fixed format).
char* format_number(char* out, char* end, double v,
                    std::chars_format fmt = std::chars_format::general) {
  if (std::isnan(v)) {
    std::memcpy(out, "nan", 3);
    return out + 3;
  }
  if (std::isinf(v)) {
    if (v < 0) *out++ = '-';
    std::memcpy(out, "inf", 3);
    return out + 3;
  }
  return std::to_chars(out, end, v, fmt).ptr;
}

std::string errno_text(int err) { return std::strerror(err); }

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (is_blank(s.front()) || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (is_blank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// Parses a whole (already trimmed) field as a double. False if any character is left over.
bool parse_number(std::string_view text, double& out) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') {
    ++first;  // from_chars rejects a leading '+'
  }
  if (first == last) return false;
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (ec == std::errc::result_out_of_range) {
    // Syntactically a number, but beyond double's range: overflow reads as +-inf and underflow
    // as +-0, as strtod does. Try long double first to get denormal results right.
    long double wide = 0;
    auto wide_result = std::from_chars(first, last, wide);
    if (wide_result.ec == std::errc{} && wide_result.ptr == last) {
      out = static_cast<double>(wide);
      return true;
    }
    if (ptr != last) return false;
    const bool negative = *first == '-';
    const std::string_view digits(first, static_cast<std::size_t>(last - first));
    const bool underflow =
        digits.find("e-") != std::string_view::npos || digits.find("E-") != std::string_view::npos;
    out = underflow ? (negative ? -0.0 : 0.0)
                    : (negative ? -std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::infinity());
    return true;
  }
  return ec == std::errc{} && ptr == last;
}

/// Calls `f(field)` for every comma-separated field of `line` (untrimmed). Returns the count.
template <class F>
std::size_t for_each_field(std::string_view line, F&& f) {
  std::size_t count = 0;
  while (true) {
    const std::size_t comma = line.find(',');
    f(count, line.substr(0, comma));
    ++count;
    if (comma == std::string_view::npos) return count;
    line.remove_prefix(comma + 1);
  }
}

std::size_t count_fields(std::string_view line) {
  return static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string q = "\"";
  q.append(text.substr(0, kMax));
  if (text.size() > kMax) q.append("...");
  q.push_back('"');
  return q;
}

/// Parses "a, b, c" (a comment's text) as numbers. False if any element is not a number.
bool parse_number_list(std::string_view text, std::vector<double>& out) {
  out.clear();
  text = trim(text);
  if (text.empty()) return true;
  bool ok = true;
  for_each_field(text, [&](std::size_t, std::string_view field) {
    double v = 0;
    if (!ok || !parse_number(trim(field), v)) {
      ok = false;
      return;
    }
    out.push_back(v);
  });
  return ok;
}

/// Reads the whole file; throws DataError if it cannot.
std::string slurp(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw DataError(path + ": cannot open: " + errno_text(errno));
  std::string content;
  std::size_t expected = 0;
  struct stat st {};
  if (::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    expected = static_cast<std::size_t>(st.st_size);
  }
  // Read straight into the string, growing it if the file is longer than fstat said (or is
  // not a regular file).
  std::size_t size = 0;
  std::size_t capacity = std::max<std::size_t>(expected + 1, 1 << 16);
  while (true) {
    content.resize(capacity);
    const std::size_t want = capacity - size;
    const std::size_t n = std::fread(content.data() + size, 1, want, f);
    size += n;
    if (n < want) break;
    capacity *= 2;
  }
  content.resize(size);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) throw DataError(path + ": cannot read: " + errno_text(err));
  return content;
}

class Reader {
 public:
  Reader(const std::string& path, StanCsv& out) : path_(path), out_(out) {}

  void run(std::string_view content) {
    if (content.empty()) throw DataError(path_ + ": empty file");
    std::size_t line_no = 0;
    bool any_nonblank = false;
    while (!content.empty()) {
      ++line_no;
      const std::size_t nl = content.find('\n');
      const bool terminated = nl != std::string_view::npos;
      std::string_view line = content.substr(0, nl);
      content.remove_prefix(terminated ? nl + 1 : content.size());
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const std::string_view trimmed = trim(line);
      if (trimmed.empty()) continue;
      any_nonblank = true;
      line_ = line_no;
      if (trimmed.front() == '#') {
        comment(trimmed.substr(1), terminated);
      } else if (!have_header_) {
        header(line);
      } else {
        row(line, terminated);
      }
    }
    if (!any_nonblank) throw DataError(path_ + ": empty file");
    if (!have_header_) {
      throw DataError(path_ + ":" + std::to_string(line_no) +
                      ": no header row (only comment lines)");
    }
    if (!adaptation_seen_) {
      // No adaptation block: every row is a draw.
      out_.draws = std::move(before_adaptation_);
    } else {
      out_.draws = std::move(after_adaptation_);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(path_ + ":" + std::to_string(line_) + ": " + what);
  }
  [[noreturn]] void fail_field(std::size_t k, const std::string& what) const {
    std::string where = "field " + std::to_string(k + 1);
    if (k < out_.columns.size()) where += " (" + out_.columns[k] + ")";
    fail(where + ": " + what);
  }

  void header(std::string_view line) {
    for_each_field(line, [&](std::size_t k, std::string_view field) {
      const std::string_view name = trim(field);
      if (name.empty()) fail("field " + std::to_string(k + 1) + ": empty column name in header");
      out_.columns.emplace_back(name);
    });
    have_header_ = true;
    const std::string sw = out_.config_value("save_warmup");
    save_warmup_ = sw == "1" || sw == "true";
  }

  void row(std::string_view line, bool terminated) {
    expect_metric_ = more_metric_rows_ = false;
    const std::size_t ncols = out_.columns.size();
    const std::size_t nfields = count_fields(line);
    std::vector<double> values(ncols);
    bool bad_value = false;
    std::size_t bad_k = 0;
    std::string_view bad_text;
    if (nfields == ncols) {
      for_each_field(line, [&](std::size_t k, std::string_view field) {
        if (bad_value) return;
        const std::string_view text = trim(field);
        if (!parse_number(text, values[k])) {
          bad_value = true;
          bad_k = k;
          bad_text = text;
        }
      });
    }
    if (!terminated && (nfields < ncols || bad_value)) {
      // The last line, cut mid-row by a kill: not an error.
      ++out_.truncated_lines;
      return;
    }
    if (nfields < ncols) {
      fail_field(nfields, "missing (row has " + std::to_string(nfields) + " fields, header has " +
                              std::to_string(ncols) + ")");
    }
    if (nfields > ncols) {
      fail_field(ncols, "unexpected (row has " + std::to_string(nfields) + " fields, header has " +
                            std::to_string(ncols) + ")");
    }
    if (bad_value) {
      fail_field(bad_k, bad_text.empty() ? std::string("empty value")
                                         : "not a number: " + quoted(bad_text));
    }
    (adaptation_seen_ ? after_adaptation_ : before_adaptation_).push_back(std::move(values));
  }

  void comment(std::string_view text, bool terminated) {
    if (!have_header_) {
      config(text);
      return;
    }
    if (!terminated) {
      // A comment cut by a kill: its numbers cannot be trusted.
      ++out_.truncated_lines;
      return;
    }
    const std::string_view t = trim(text);
    if (expect_metric_) {
      expect_metric_ = false;
      if (!parse_number_list(t, out_.inv_metric)) {
        fail("inverse metric: not a list of numbers: " + quoted(t));
      }
      more_metric_rows_ = dense_metric_;
      return;
    }
    if (more_metric_rows_) {
      std::vector<double> values;
      if (parse_number_list(t, values) && !values.empty()) {  // next row of a dense metric
        out_.inv_metric.insert(out_.inv_metric.end(), values.begin(), values.end());
        return;
      }
      more_metric_rows_ = false;
    }
    if (t == "Adaptation terminated") {
      end_of_adaptation();
      return;
    }
    if (starts_with(t, "Step size =")) {
      const std::string_view v = trim(t.substr(std::strlen("Step size =")));
      if (!parse_number(v, out_.step_size)) fail("step size: not a number: " + quoted(v));
      return;
    }
    if (t == "Diagonal elements of inverse mass matrix:" ||
        t == "Elements of inverse mass matrix:") {
      expect_metric_ = true;
      dense_metric_ = t.front() == 'E';
      return;
    }
    if (const std::size_t eq = t.find('='); eq != std::string_view::npos && eq > 0) {
      const std::string_view key = t.substr(0, eq);
      const bool key_ok = std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
      });
      if (key_ok) {
        out_.diagnostics.emplace_back(std::string(key), std::string(trim(t.substr(eq + 1))));
        return;
      }
    }
    std::string_view rest = t;
    if (starts_with(rest, "Elapsed Time:")) rest = trim(rest.substr(std::strlen("Elapsed Time:")));
    double* target = nullptr;
    std::string_view number;
    if (ends_with(rest, "seconds (Warm-up)")) {
      target = &out_.warmup_seconds;
      number = rest.substr(0, rest.size() - std::strlen("seconds (Warm-up)"));
    } else if (ends_with(rest, "seconds (Sampling)")) {
      target = &out_.sampling_seconds;
      number = rest.substr(0, rest.size() - std::strlen("seconds (Sampling)"));
    }
    if (target != nullptr) {
      number = trim(number);
      if (!parse_number(number, *target)) fail("elapsed time: not a number: " + quoted(number));
    }
  }

  void end_of_adaptation() {
    if (adaptation_seen_) return;
    adaptation_seen_ = true;
    if (save_warmup_) {
      out_.warmup = std::move(before_adaptation_);
    } else {
      // Rows before the block without save_warmup: not warm-up by the file's own account.
      after_adaptation_ = std::move(before_adaptation_);
    }
    before_adaptation_.clear();
  }

  void config(std::string_view text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) return;
    const std::string_view key = trim(text.substr(0, eq));
    std::string_view value = trim(text.substr(eq + 1));
    if (key.empty()) return;
    if (ends_with(value, "(Default)")) value = trim(value.substr(0, value.size() - 9));
    out_.config.emplace_back(std::string(key), std::string(value));
  }

  const std::string& path_;
  StanCsv& out_;
  std::size_t line_ = 0;
  bool have_header_ = false;
  bool save_warmup_ = false;
  bool adaptation_seen_ = false;
  bool expect_metric_ = false;
  bool dense_metric_ = false;
  bool more_metric_rows_ = false;
  std::vector<std::vector<double>> before_adaptation_;
  std::vector<std::vector<double>> after_adaptation_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// StanCsvWriter

StanCsvWriter::StanCsvWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    throw Error(path + ": cannot create: " + errno_text(errno), kExCantCreate);
  }
  stdio_buffer_ = std::make_unique<char[]>(kStdioBufferSize);
  std::setvbuf(file_, stdio_buffer_.get(), _IOFBF, kStdioBufferSize);
}

StanCsvWriter StanCsvWriter::reopen(const std::string& path, std::uint64_t length,
                                    std::size_t columns) {
  if (columns == 0) throw Error(path + ": reopen: no columns", kExSoftware);
  if (::truncate(path.c_str(), static_cast<off_t>(length)) != 0)
    throw Error(
        path + ": cannot cut back to " + std::to_string(length) + " bytes: " + errno_text(errno),
        kExIoErr);
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (f == nullptr) throw Error(path + ": cannot open: " + errno_text(errno), kExCantCreate);
  StanCsvWriter w;
  w.path_ = path;
  w.file_ = f;
  w.stdio_buffer_ = std::make_unique<char[]>(kStdioBufferSize);
  std::setvbuf(w.file_, w.stdio_buffer_.get(), _IOFBF, kStdioBufferSize);
  w.size_ = length;
  w.columns_ = columns;
  w.header_written_ = true;
  w.line_.assign(columns * (kMaxNumberChars + 1) + 1, '\0');
  return w;
}

StanCsvWriter::~StanCsvWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

StanCsvWriter::StanCsvWriter(StanCsvWriter&& other) noexcept
    : path_(std::move(other.path_)),
      file_(std::exchange(other.file_, nullptr)),
      stdio_buffer_(std::move(other.stdio_buffer_)),
      pending_(other.pending_),
      size_(other.size_),
      columns_(other.columns_),
      header_written_(other.header_written_),
      line_(std::move(other.line_)) {}

StanCsvWriter& StanCsvWriter::operator=(StanCsvWriter&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, nullptr);
    stdio_buffer_ = std::move(other.stdio_buffer_);
    pending_ = other.pending_;
    size_ = other.size_;
    columns_ = other.columns_;
    header_written_ = other.header_written_;
    line_ = std::move(other.line_);
  }
  return *this;
}

void StanCsvWriter::require_open() const {
  if (file_ == nullptr) throw Error(path_ + ": StanCsvWriter used after close()", kExSoftware);
}

void StanCsvWriter::require_header(const char* what) const {
  require_open();
  if (!header_written_) {
    throw Error(path_ + ": " + what + " before write_header", kExSoftware);
  }
}

void StanCsvWriter::io_error(const char* what) const {
  throw Error(path_ + ": " + what + ": " + errno_text(errno), kExIoErr);
}

void StanCsvWriter::put(const char* data, std::size_t size) {
  // Hand the stdio buffer to the OS before it would fill mid-line, so that the file on disk
  // always ends at a line boundary.
  if (pending_ + size > kStdioBufferSize && pending_ > 0) {
    if (std::fflush(file_) != 0) io_error("write failed");
    pending_ = 0;
  }
  if (std::fwrite(data, 1, size, file_) != size) io_error("write failed");
  pending_ += size;
  size_ += size;
  if (pending_ >= kStdioBufferSize) {  // a line longer than the whole buffer
    if (std::fflush(file_) != 0) io_error("write failed");
    pending_ = 0;
  }
}

void StanCsvWriter::write_header(const std::vector<std::pair<std::string, std::string>>& config,
                                 const std::vector<std::string>& columns) {
  require_open();
  if (header_written_) throw Error(path_ + ": write_header called twice", kExSoftware);
  if (columns.empty()) throw Error(path_ + ": write_header: no columns", kExSoftware);
  std::string text;
  for (const auto& [key, value] : config) {
    if (key.empty() || key.find_first_of("=\r\n") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      throw Error(path_ + ": write_header: invalid config entry " + quoted(key), kExSoftware);
    }
    text += "# ";
    text += key;
    text += '=';
    text += value;
    text += '\n';
  }
  text += "#\n";
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const std::string& name = columns[k];
    if (name.empty() || name.find_first_of(",#\"' \t\r\n") != std::string::npos) {
      throw Error(path_ + ": write_header: invalid column name " + quoted(name), kExSoftware);
    }
    if (k > 0) text += ',';
    text += name;
  }
  text += '\n';
  put(text.data(), text.size());
  columns_ = columns.size();
  header_written_ = true;
  line_.assign(columns_ * (kMaxNumberChars + 1) + 1, '\0');
}

void StanCsvWriter::write_row(std::span<const double> values) {
  require_header("write_row");
  if (values.size() != columns_) {
    throw Error(path_ + ": write_row: " + std::to_string(values.size()) + " values for " +
                    std::to_string(columns_) + " columns",
                kExSoftware);
  }
  char* p = line_.data();
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (k > 0) *p++ = ',';
    p = format_number(p, p + kMaxNumberChars, values[k]);
  }
  *p++ = '\n';
  put(line_.data(), static_cast<std::size_t>(p - line_.data()));
}

void StanCsvWriter::write_adaptation(double step_size, std::span<const double> inv_metric,
                                     bool dense) {
  require_header("write_adaptation");
  std::string text = "# Adaptation terminated\n# Step size = ";
  char number[kMaxNumberChars];
  text.append(number, format_number(number, number + sizeof number, step_size));
  // Stan's two layouts: the diagonal on one line, or a dense matrix one row per line.
  std::size_t per_line = inv_metric.size();
  if (dense) {
    while (per_line * per_line > inv_metric.size()) --per_line;
    text += "\n# Elements of inverse mass matrix:";
  } else {
    text += "\n# Diagonal elements of inverse mass matrix:";
  }
  for (std::size_t k = 0; k < inv_metric.size(); ++k) {
    if (per_line == 0 || k % per_line == 0) text += "\n#";
    text += k % std::max<std::size_t>(per_line, 1) == 0 ? " " : ", ";
    text.append(number, format_number(number, number + sizeof number, inv_metric[k]));
  }
  if (inv_metric.empty()) text += "\n#";
  text += '\n';
  put(text.data(), text.size());
}

void StanCsvWriter::write_comments(
    const std::vector<std::pair<std::string, std::string>>& entries) {
  require_header("write_comments");
  std::string text;
  for (const auto& [key, value] : entries) {
    const bool key_ok = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!key_ok || value.find_first_of("\r\n") != std::string::npos)
      throw Error(path_ + ": write_comments: invalid entry " + quoted(key), kExSoftware);
    text += "# ";
    text += key;
    text += '=';
    text += value;
    text += '\n';
  }
  put(text.data(), text.size());
}

void StanCsvWriter::write_elapsed(double warmup_seconds, double sampling_seconds) {
  require_header("write_elapsed");
  // Plain decimal (no exponent): rstan keeps only digits and '.' of these lines.
  char number[kMaxFixedChars];
  auto seconds = [&](double s) {
    return std::string(number,
                       format_number(number, number + sizeof number, s, std::chars_format::fixed));
  };
  std::string text = "# \n#  Elapsed Time: ";
  text += seconds(warmup_seconds);
  text += " seconds (Warm-up)\n#                ";
  text += seconds(sampling_seconds);
  text += " seconds (Sampling)\n#                ";
  text += seconds(warmup_seconds + sampling_seconds);
  text += " seconds (Total)\n# \n";
  put(text.data(), text.size());
}

void StanCsvWriter::flush() {
  require_open();
  if (std::fflush(file_) != 0) io_error("write failed");
  pending_ = 0;
  if (::fsync(::fileno(file_)) != 0 && errno != EINVAL && errno != EROFS) io_error("fsync failed");
}

void StanCsvWriter::close() {
  if (file_ == nullptr) return;
  std::FILE* f = std::exchange(file_, nullptr);
  int err = 0;
  if (std::fflush(f) != 0) err = errno;
  if (err == 0 && ::fsync(::fileno(f)) != 0 && errno != EINVAL && errno != EROFS) err = errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (err != 0) throw Error(path_ + ": write failed: " + errno_text(err), kExIoErr);
}

// ---------------------------------------------------------------------------------------------
// Reader

std::string StanCsv::config_value(const std::string& key) const {
  for (const auto& [k, v] : config) {
    if (k == key) return v;
  }
  return {};
}

StanCsv read_stan_csv(const std::string& path) {
  StanCsv out;
  out.path = path;
  const std::string content = slurp(path);
  Reader(path, out).run(content);
  return out;
}

}  // namespace flymc
