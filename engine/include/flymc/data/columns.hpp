#pragma once
/// @file columns.hpp
/// Which of a data file's columns are what: the response, and the optional per-row weight, trials
/// and offset (Dataset::weights(), trials(), offsets()). The command line's --response, --weights,
/// --trials and --offset, RunConfig's response_column ... offset_column.
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/model_table.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

/// Each names a column by its CSV header name or by its 0-based index in the file; empty: the
/// response is column 0 and the others are absent. Every column not named is a feature, in the
/// file's order.
struct DataColumns {
  std::string response, weights, trials, offset;
  bool any() const noexcept {
    return !response.empty() || !weights.empty() || !trials.empty() || !offset.empty();
  }
};

/// The columns a run's options name (RunConfig::response_column ... offset_column).
inline DataColumns data_columns(const RunConfig& c) {
  return {c.response_column, c.weights_column, c.trials_column, c.offset_column};
}

/// `ds` as a loader read it with LabelDomain::any (column 0 as the response, the others as
/// features), rearranged as `cols` says: the response taken from its column, the weight, trials
/// and offset columns moved out of the features. `header` holds the file's column names
/// (csv_header) to resolve names by; where it is empty only indices are taken. `first_row` is
/// the file's row of ds's row 0 (a process's part), `csv` whether rows are named by CSV line
/// (`header_lines` lines before the first row) or by 0-based row index.
/// Checks, each a DataError naming the file, the column and the row: every named column exists
/// and is named once, and at least one feature is left; weights are finite and >= 0; trials are
/// integers >= 0 and at least the response (a count of successes); offsets are finite; the
/// response is in `labels`' domain (binary labels recoded to -1/+1).
Dataset select_columns(Dataset ds, const std::vector<std::string>& header, const DataColumns& cols,
                       LabelDomain labels, bool csv = false, std::size_t first_row = 0,
                       std::size_t header_lines = 0);

/// load_dataset (loaders.hpp) with `cols` chosen by select_columns: a CSV file's columns by header
/// name or index, an NPY file's by index; the file is read whole in doubles, then its features
/// rounded if `storage` is f32. Without columns, load_dataset itself.
/// @throw DataError as select_columns does, and for a libsvm file (no columns to name).
Dataset load_dataset(const std::string& path, LabelDomain labels, Storage storage,
                     const DataColumns& cols);

/// The names in a CSV file's first line if it is a header (no field is a number, the loader's
/// rule), each trimmed of spaces; empty if the first line is data.
/// @throw DataError if the file cannot be read.
std::vector<std::string> csv_header(const std::string& path);

}  // namespace flymc
