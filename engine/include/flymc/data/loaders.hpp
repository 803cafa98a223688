#pragma once
/// @file loaders.hpp
/// Reading and writing data sets as CSV or NPY files, and reading libsvm/svmlight text.
///
/// Layout of CSV and NPY: one row per datum, the label (response) first, then the D features.
///
/// CSV: comma-separated numbers. If no field of the first line is a number, that line is a header
/// and is skipped (save_csv writes `label,x1,...,xD`). CRLF line ends, spaces or tabs around a
/// field, a leading '+' and blank lines at the end of the file are accepted; a blank line between
/// data rows is not. Numbers are parsed with std::from_chars (exact round trip).
///
/// NPY: a 2-D array of dtype '<f8' or '<f4' in C order (fortran_order False), header format
/// version 1.0, 2.0 or 3.0; shape (N, D+1), column 0 is the label.
///
/// libsvm / svmlight (read only; extensions .svm, .libsvm, .svmlight): one datum per line,
/// `label index:value index:value ...` separated by spaces or tabs, indices 1-based and strictly
/// increasing within a line, absent features 0, everything from `#` to the line end a comment,
/// blank lines skipped. The rows are densified: D is the largest index in the file. Labels are
/// checked as in the other formats (binary: ±1, +1 or 0/1; categorical: class ids). `qid:`
/// tokens (ranking data) are refused.
///
/// Every problem with the input is reported as flymc::DataError. CSV messages have the form
/// `<path>:<line>: field <k> (<name>): <what>` (line 1-based counting the header, field 1-based,
/// name "label" for field 1 and "x<j>" for field j+1; libsvm: field k is the k-th token, named
/// "label" or "x<index>"); problems that concern a whole line omit the
/// field part. NPY messages name the byte offset for header and size problems, and
/// `row <i>` (0-based, as in numpy) plus the field for bad values.
///
/// Thread safety: the functions share no state; distinct calls may run concurrently.
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "flymc/data/dataset.hpp"

namespace flymc {

/// Loads a CSV file (see the file comment for the format). The Dataset's source() is `path`.
Dataset load_csv(const std::string& path, LabelDomain labels);
/// Loads an NPY file (see the file comment for the format). The Dataset's source() is `path`.
/// With float storage the values are rounded as each block is read (no double copy is held); a
/// finite value beyond float's range is a DataError naming its row and field.
Dataset load_npy(const std::string& path, LabelDomain labels, Storage storage = Storage::f64);
inline constexpr std::size_t none_row = static_cast<std::size_t>(-1);
/// Part `part` of `parts` of a data file's rows (shard_rows() deals them), read and checked as
/// the whole file's loader reads and checks them (messages name the file's row numbers), and
/// nothing else of the file: one process's part of a data set too large for one. Binary labels
/// are recoded within the part; since the coding must be the same in every part, the first label
/// 0 and the first label -1 are reported for the processes to compare.
struct FilePart {
  Dataset data;
  std::size_t first_row = 0;           ///< file row of data's row 0
  std::size_t file_rows = 0;           ///< rows in the whole file
  std::size_t first_zero = none_row;   ///< file row of the first label 0 (binary labels)
  std::size_t first_minus = none_row;  ///< file row of the first label -1 (binary labels)
};
/// A FilePart's labels checked as `labels` asks, binary ones recoded within the part after their
/// codings are noted (first_zero, first_minus).
/// @throw DataError naming the file's row of a label the domain does not take.
void check_part_labels(FilePart& part, LabelDomain labels);
/// The part of an NPY file: its rows only are read (one seek).
FilePart load_npy_part(const std::string& path, LabelDomain labels, int part, int parts,
                       Storage storage = Storage::f64);
/// Parses CSV text held in memory exactly as load_csv parses a file; `name` stands for the path
/// in messages and is the Dataset's source().
Dataset parse_csv(std::string_view text, const std::string& name, LabelDomain labels);
/// Parses the bytes of an NPY file held in memory exactly as load_npy parses a file.
Dataset parse_npy(std::string_view text, const std::string& name, LabelDomain labels);
/// Loads a libsvm / svmlight file (see the file comment). The Dataset's source() is `path`.
Dataset load_libsvm(const std::string& path, LabelDomain labels);
/// Parses libsvm text held in memory exactly as load_libsvm parses a file.
Dataset parse_libsvm(std::string_view text, const std::string& name, LabelDomain labels);
/// Dispatches on the extension: ".csv", ".npy", or ".svm", ".libsvm", ".svmlight"
/// (case-insensitive); anything else is a DataError. With float storage, formats other than NPY
/// are read as doubles and then rounded (Dataset::store_as_f32).
Dataset load_dataset(const std::string& path, LabelDomain labels, Storage storage = Storage::f64);

/// A data set from arrays in memory (the Python module's NumPy arrays): `x` holds N rows of `d`
/// features, row-major, `y` the N labels. Values are checked as the loaders check a file's (NaN
/// and infinities refused; labels in `labels`' domain, binary 0/1 recoded to -1/+1); a bad value
/// is a DataError naming `name`, `row <i>` (0-based) and the field (1: the label, j + 1: feature
/// x<j>) as the NPY loader does.
/// @throw DataError if x.size() is not y.size() × d.
Dataset dataset_from_arrays(std::span<const double> x, std::span<const double> y, std::size_t d,
                            LabelDomain labels, const std::string& name);

/// Writes `ds` as CSV with the header `label,x1,...,xD`; every value is written as the shortest
/// decimal string that reads back to the identical double. The file is written under a temporary
/// name and renamed into place. I/O failures throw flymc::Error (exit code 74, EX_IOERR).
void save_csv(const Dataset& ds, const std::string& path);
/// Writes `ds` as NPY version 1.0 (2.0 if the header needs it): '<f8', C order, shape (N, D+1),
/// label first. Same failure behaviour as save_csv.
void save_npy(const Dataset& ds, const std::string& path);

enum class DataFormat { csv, npy };
/// The format a path's extension names (".csv" or ".npy", case-insensitive), or nothing.
std::optional<DataFormat> data_format_of(std::string_view path);

/// A data file written block by block, for data sets too large to hold: N rows of D features,
/// announced up front (the NPY header holds the shape). The bytes are those save_csv / save_npy
/// write for the same rows, however the rows are split into appends. The file is written under a
/// temporary name beside `path` and renamed onto it by commit(): a writer destroyed before (an
/// exception, or a killed process) leaves `path` as it was.
///
/// Thread safety: one object must not be used by several threads at once.
class DataWriter {
 public:
  /// Creates the temporary and writes the header. @throw Error (73) if it cannot be created.
  DataWriter(const std::string& path, DataFormat format, std::size_t n, std::size_t d);
  DataWriter(const DataWriter&) = delete;
  DataWriter& operator=(const DataWriter&) = delete;
  /// Removes the temporary unless committed.
  ~DataWriter();
  /// Appends `count` rows: row r's label is y[r], its features x[r·stride .. r·stride + D).
  /// @throw Error (74) on a write error; std::logic_error beyond the N rows announced.
  void append(const double* y, const double* x, std::size_t stride, std::size_t count);
  /// Renames the finished file onto the path. @throw Error (74); std::logic_error if fewer than
  /// N rows were appended.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace detail {
/// The piece sizes the loaders stream and parse in. The result, or the DataError thrown, does
/// not depend on them; tests and the fuzz targets shrink them to a few bytes to exercise the
/// logic at piece boundaries on small inputs.
struct LoaderBlocks {
  std::size_t io_bytes = std::size_t{16} << 20;    ///< CSV: bytes read at a time
  std::size_t parse_bytes = std::size_t{1} << 20;  ///< CSV: bytes per parallel parse piece
  std::size_t npy_bytes = std::size_t{4} << 20;    ///< NPY: bytes per converted block of rows
};
/// parse_csv / parse_npy with the given piece sizes.
Dataset parse_csv_blocks(std::string_view text, const std::string& name, LabelDomain labels,
                         const LoaderBlocks& blocks);
Dataset parse_npy_blocks(std::string_view text, const std::string& name, LabelDomain labels,
                         const LoaderBlocks& blocks);
/// parse_libsvm refusing files whose dense matrix (rows × largest index) would exceed
/// `max_values` doubles (parse_libsvm allows 2^33; the fuzz target far fewer).
Dataset parse_libsvm_limited(std::string_view text, const std::string& name, LabelDomain labels,
                             std::size_t max_values);
}  // namespace detail

}  // namespace flymc
