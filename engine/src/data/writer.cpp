// Writing CSV and NPY data files (flymc/data/loaders.hpp): DataWriter streams rows of a known
// shape; save_csv and save_npy are DataWriter over a whole Dataset, so both write the same bytes.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "flymc/core/atomic_file.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/loaders.hpp"

namespace flymc {

static_assert(std::endian::native == std::endian::little,
              "NPY output assumes a little-endian host ('<f8' data is copied as is)");

namespace {

/// The NPY preamble and header of a C-order '<f8' array of shape (n, ncols): version 1.0, or 2.0
/// when the header needs more than 65,535 bytes; padded with spaces and ended by '\n' to a multiple
/// of 64 bytes (the NPY format specification, numpy.lib.format).
std::string npy_header(std::size_t n, std::size_t ncols) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(n) +
                     ", " + std::to_string(ncols) + "), }";
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
  return pre + dict;
}

}  // namespace

struct DataWriter::Impl {
  Impl(const std::string& path, DataFormat f, std::size_t n_rows, std::size_t d_cols)
      : out(path), format(f), n(n_rows), d(d_cols) {}

  void append_npy(const double* y, const double* x, std::size_t stride, std::size_t count);
  void append_csv(const double* y, const double* x, std::size_t stride, std::size_t count);

  AtomicFile out;
  DataFormat format;
  std::size_t n, d, written = 0;
  std::vector<double> values;     // NPY: rows gathered label first
  std::vector<std::string> text;  // CSV: one string per parallel piece
};

void DataWriter::Impl::append_npy(const double* y, const double* x, std::size_t stride,
                                  std::size_t count) {
  // Gathered into a buffer of whole rows so that each write is large.
  constexpr std::size_t rows_per_write = 8192;
  const std::size_t ncols = d + 1;
  values.reserve(rows_per_write * ncols);
  for (std::size_t r = 0; r < count; ++r) {
    values.push_back(y[r]);
    values.insert(values.end(), x + r * stride, x + r * stride + d);
    if (values.size() >= rows_per_write * ncols || r + 1 == count) {
      out.write(values.data(), values.size() * sizeof(double));
      values.clear();
    }
  }
}

void DataWriter::Impl::append_csv(const double* y, const double* x, std::size_t stride,
                                  std::size_t count) {
  // Rows are formatted in parallel pieces of `piece` rows, written in order; each value is the
  // shortest text that reads back to the same double (std::to_chars).
  constexpr std::size_t piece = 2048, pieces_per_batch = 32;
  const std::size_t max_line = (d + 1) * 25 + 1;  // shortest double text is at most 24 chars
  text.resize(pieces_per_batch);
  for (std::size_t start = 0; start < count; start += piece * pieces_per_batch) {
    const std::size_t npieces = std::min(pieces_per_batch, (count - start + piece - 1) / piece);
    auto format_piece = [&](std::size_t pi) {
      const std::size_t r0 = start + pi * piece, r1 = std::min(count, r0 + piece);
      std::string& s = text[pi];
      s.resize((r1 - r0) * max_line);
      char* p = s.data();
      for (std::size_t r = r0; r < r1; ++r) {
        p = std::to_chars(p, p + 32, y[r]).ptr;
        const double* row = x + r * stride;
        for (std::size_t j = 0; j < d; ++j) {
          *p++ = ',';
          p = std::to_chars(p, p + 32, row[j]).ptr;
        }
        *p++ = '\n';
      }
      s.resize(static_cast<std::size_t>(p - s.data()));
    };
    if (npieces == 1) {
      format_piece(0);
    } else {
      tbb::parallel_for(std::size_t{0}, npieces, format_piece);
    }
    for (std::size_t pi = 0; pi < npieces; ++pi) out.write(text[pi].data(), text[pi].size());
  }
}

DataWriter::DataWriter(const std::string& path, DataFormat format, std::size_t n, std::size_t d)
    : impl_(std::make_unique<Impl>(path, format, n, d)) {
  if (format == DataFormat::npy) {
    impl_->out.write(npy_header(n, d + 1));
  } else {
    std::string head = "label";
    for (std::size_t j = 1; j <= d; ++j) head += ",x" + std::to_string(j);
    head += '\n';
    impl_->out.write(head);
  }
}

DataWriter::~DataWriter() = default;

void DataWriter::append(const double* y, const double* x, std::size_t stride, std::size_t count) {
  if (count > impl_->n - impl_->written)
    throw std::logic_error("DataWriter::append: more rows than the " + std::to_string(impl_->n) +
                           " announced");
  if (impl_->format == DataFormat::npy) {
    impl_->append_npy(y, x, stride, count);
  } else {
    impl_->append_csv(y, x, stride, count);
  }
  impl_->written += count;
}

void DataWriter::commit() {
  if (impl_->written != impl_->n)
    throw std::logic_error("DataWriter::commit: " + std::to_string(impl_->written) +
                           " rows written, " + std::to_string(impl_->n) + " announced");
  impl_->out.commit();
}

std::optional<DataFormat> data_format_of(std::string_view path) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash))
    return std::nullopt;
  std::string ext(path.substr(dot));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".csv") return DataFormat::csv;
  if (ext == ".npy") return DataFormat::npy;
  return std::nullopt;
}

namespace {
void save_as(const Dataset& ds, const std::string& path, DataFormat format) {
  DataWriter w(path, format, ds.n(), ds.d());
  for (std::size_t lo = 0; lo < ds.n(); lo += kReduceGrain) {  // float rows widened per chunk
    const std::size_t hi = std::min(ds.n(), lo + kReduceGrain);
    w.append(ds.y().data() + lo, ds.rows(lo, hi).data(), ds.stride(), hi - lo);
  }
  w.commit();
}
}  // namespace

void save_csv(const Dataset& ds, const std::string& path) { save_as(ds, path, DataFormat::csv); }

void save_npy(const Dataset& ds, const std::string& path) { save_as(ds, path, DataFormat::npy); }

}  // namespace flymc
