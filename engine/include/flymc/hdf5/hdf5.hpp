#pragma once
/// @file hdf5.hpp
/// Data sets stored in HDF5 files (library `flymc::hdf5`, over Debian's libhdf5), named on the
/// command line as `file.h5:/group/dataset` (also `.hdf5`). The dataset is a 2-D array of any
/// integer or floating-point type, shape (N, D+1), the label in column 0: the NPY layout
/// (loaders.hpp). Values are converted to double by HDF5 and must be finite; labels are checked
/// as the other loaders check them. Every problem is a flymc::DataError naming the file, the
/// dataset and, for a bad value, `row <i>` (0-based) and the field as the NPY loader does.
///
/// Thread safety: the serial libhdf5 is not thread-safe; calls are serialized internally.
#include <optional>
#include <string>
#include <string_view>

#include "flymc/data/columns.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/data/loaders.hpp"

namespace flymc {

/// Where an HDF5 data set lives.
struct Hdf5Location {
  std::string file;     ///< path of the HDF5 file
  std::string dataset;  ///< absolute path of the dataset inside it, e.g. "/train/data"
};

/// Splits `spec` as `<file ending .h5 or .hdf5>:<dataset path starting with '/'>`; nothing for
/// any other string (a plain file name, a CSV path containing ':').
std::optional<Hdf5Location> hdf5_location(std::string_view spec);

/// Loads the HDF5 dataset `spec` names (see hdf5_location). The Dataset's source() is `spec`.
/// @throw DataError as described in the file comment.
Dataset load_hdf5(const std::string& spec, LabelDomain labels);

/// Part `part` of `parts` of the HDF5 dataset's rows, as load_npy_part reads an NPY file's
/// (flymc/data/loaders.hpp): only those rows are read (hyperslabs), checked as load_hdf5 checks
/// them, messages naming the file's rows.
FilePart load_hdf5_part(const std::string& spec, LabelDomain labels, int part, int parts,
                        Storage storage = Storage::f64);

/// What `mpirun ... flymc sample --shard-data` reads a process's part with: load_hdf5_part for an
/// HDF5 spec, load_npy_part for an .npy file; `columns` as load_data takes them.
/// @throw DataError for the other formats (CSV and libsvm rows cannot be found without reading
///   what comes before them).
FilePart load_data_part(const std::string& spec, LabelDomain labels, int part, int parts,
                        Storage storage = Storage::f64, const DataColumns& columns = {});

/// What the command line loads a `--data` argument with: load_hdf5 for an HDF5 spec, else
/// load_dataset (CSV, NPY, libsvm by extension). With `columns` (columns.hpp) the file is read
/// whole and its response, weight, trials and offset columns chosen by select_columns (CSV by
/// header name or index; NPY and HDF5 by index; libsvm has no columns and is refused).
Dataset load_data(const std::string& spec, LabelDomain labels, Storage storage = Storage::f64,
                  const DataColumns& columns = {});

/// Writes `ds` as a float64 (N, D+1) dataset `loc.dataset` (its groups created) in a new file
/// `loc.file` (an existing file is replaced). For tests and conversions.
/// @throw Error (73) if the file cannot be written.
void save_hdf5(const Dataset& ds, const Hdf5Location& loc);

}  // namespace flymc
