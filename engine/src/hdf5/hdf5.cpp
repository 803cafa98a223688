// HDF5 data sets (hdf5.hpp) through libhdf5's C API: the dataset is read in blocks of rows by
// hyperslab selection, converted to double by the library, checked for finite values, and
// scattered into the padded rows. libhdf5's own error printing is switched off: its failures
// become DataErrors that name the file and dataset.
#include "flymc/hdf5/hdf5.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "../data/loader_detail.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"

namespace flymc {
namespace {

using loader_detail::fail;

/// The serial libhdf5 keeps global state: one call at a time.
std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

/// Owns an HDF5 identifier and closes it with the matching function.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle& operator=(Handle&&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const noexcept { return id_; }
  bool ok() const noexcept { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (std::size_t i = 0; i < suffix.size(); ++i) {
    const char c = s[s.size() - suffix.size() + i];
    if (std::tolower(static_cast<unsigned char>(c)) != suffix[i]) return false;
  }
  return true;
}

/// Opens `loc`'s dataset; on failure a DataError saying which part is missing.
Handle open_dataset(const Hdf5Location& loc, const Handle& file, const std::string& spec) {
  Handle ds(H5Dopen2(file.get(), loc.dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) fail(spec + ": no dataset '" + loc.dataset + "' in the file");
  return ds;
}

/// The (N, D+1) shape of a 2-D numeric dataset.
std::pair<std::size_t, std::size_t> shape_of(const Handle& ds, const std::string& spec) {
  const Handle type(H5Dget_type(ds.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT)
    fail(spec + ": unsupported element type (expected integer or floating point)");
  const Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int ndims = H5Sget_simple_extent_ndims(space.get());
  if (ndims != 2)
    fail(spec + ": expected a 2-D dataset (rows x (label + features)), got " +
         std::to_string(ndims) + "-D");
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  if (dims[0] == 0) fail(spec + ": no rows");
  if (dims[1] < 2)
    fail(spec + ": fewer than 2 columns (a label and at least one feature are needed)");
  if (dims[1] - 1 > (std::size_t{1} << 34) / dims[0])
    fail(spec + ": " + std::to_string(dims[0]) + " x " + std::to_string(dims[1]) +
         " values exceed the largest data set supported");
  return {static_cast<std::size_t>(dims[0]), static_cast<std::size_t>(dims[1])};
}

/// Reads rows [r0, r0 + count) as doubles into `buf` (count × cols).
void read_rows(const Handle& ds, std::size_t r0, std::size_t count, std::size_t cols,
               std::vector<double>& buf, const std::string& spec) {
  const Handle fspace(H5Dget_space(ds.get()), H5Sclose);
  const hsize_t start[2] = {r0, 0}, extent[2] = {count, cols};
  const Handle mspace(H5Screate_simple(2, extent, nullptr), H5Sclose);
  buf.resize(count * cols);
  if (H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr) < 0 ||
      H5Dread(ds.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()) < 0)
    fail(spec + ": read failed at rows " + std::to_string(r0) + ".." +
         std::to_string(r0 + count - 1));
}

/// Rows [first, last) of a dataset of `cols` columns, every value checked finite (messages name
/// the file's rows); labels as stored.
Dataset read_range(const Handle& ds, const std::string& spec, std::size_t first, std::size_t last,
                   std::size_t cols) {
  Dataset out(last - first, cols - 1, spec);
  const loader_detail::RowLocator loc{spec, false, 0};
  const std::size_t block = std::max<std::size_t>(1, (std::size_t{4} << 20) / cols);
  std::vector<double> buf;
  for (std::size_t r0 = first; r0 < last; r0 += block) {
    const std::size_t count = std::min(block, last - r0);
    read_rows(ds, r0, count, cols, buf, spec);
    for (std::size_t i = 0; i < count; ++i) {
      const double* v = buf.data() + i * cols;
      for (std::size_t k = 0; k < cols; ++k)
        if (!std::isfinite(v[k]))
          fail(loc.prefix(r0 + i, k + 1) + "not finite (" + loader_detail::num_text(v[k]) + ")");
      out.mutable_y()[r0 - first + i] = v[0];
      std::copy(v + 1, v + cols, out.mutable_row(r0 - first + i));
    }
  }
  return out;
}

/// Opens `spec`'s file and dataset (libhdf5 locked meanwhile) and returns fn(dataset).
template <class Fn>
auto with_dataset(const std::string& spec, Fn&& fn) {
  const std::optional<Hdf5Location> loc = hdf5_location(spec);
  if (!loc) fail(spec + ": not an HDF5 data set (expected file.h5:/path/to/dataset)");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(loc->file, ec))
    fail(loc->file + ": cannot open: " + (ec ? ec.message() : "no such file"));
  const std::lock_guard<std::mutex> lock(hdf5_mutex());
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(loc->file.c_str()) <= 0) fail(loc->file + ": not an HDF5 file");
  const Handle file(H5Fopen(loc->file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) fail(loc->file + ": cannot open as HDF5");
  const Handle ds = open_dataset(*loc, file, spec);
  return fn(ds);
}

}  // namespace

std::optional<Hdf5Location> hdf5_location(std::string_view spec) {
  for (std::size_t colon = spec.find(":/"); colon != std::string_view::npos;
       colon = spec.find(":/", colon + 1)) {
    const std::string_view file = spec.substr(0, colon);
    if (ends_with_ci(file, ".h5") || ends_with_ci(file, ".hdf5"))
      return Hdf5Location{std::string(file), std::string(spec.substr(colon + 1))};
  }
  return std::nullopt;
}

Dataset load_hdf5(const std::string& spec, LabelDomain labels) {
  Dataset out = with_dataset(spec, [&](const Handle& ds) {
    const auto [n, cols] = shape_of(ds, spec);
    return read_range(ds, spec, 0, n, cols);
  });
  loader_detail::check_labels(out.mutable_y(), labels, loader_detail::RowLocator{spec, false, 0});
  return out;
}

FilePart load_hdf5_part(const std::string& spec, LabelDomain labels, int part, int parts,
                        Storage storage) {
  FilePart out = with_dataset(spec, [&](const Handle& ds) {
    const auto [n, cols] = shape_of(ds, spec);
    const auto [first, last] = shard_rows(n, part, parts);
    return FilePart{read_range(ds, spec, first, last, cols), first, n};
  });
  check_part_labels(out, labels);
  if (storage == Storage::f32) out.data.store_as_f32();
  return out;
}

namespace {

/// Loads every column as it stands (column 0 as the response, unchecked), in doubles.
FilePart load_part_as_is(const std::string& spec, int part, int parts) {
  if (hdf5_location(spec)) return load_hdf5_part(spec, LabelDomain::any, part, parts);
  if (data_format_of(spec) == DataFormat::npy)
    return load_npy_part(spec, LabelDomain::any, part, parts);
  fail(spec +
       ": a process reads its own rows from .npy files and HDF5 data sets only (the rows "
       "of CSV and libsvm files cannot be found without reading all that comes before)");
}

}  // namespace

FilePart load_data_part(const std::string& spec, LabelDomain labels, int part, int parts,
                        Storage storage, const DataColumns& columns) {
  if (!columns.any()) {
    if (hdf5_location(spec)) return load_hdf5_part(spec, labels, part, parts, storage);
    if (data_format_of(spec) == DataFormat::npy)
      return load_npy_part(spec, labels, part, parts, storage);
  }
  FilePart p = load_part_as_is(spec, part, parts);
  p.data = select_columns(std::move(p.data), {}, columns, LabelDomain::any, false, p.first_row);
  check_part_labels(p, labels);
  if (storage == Storage::f32) p.data.store_as_f32();
  return p;
}

Dataset load_data(const std::string& spec, LabelDomain labels, Storage storage,
                  const DataColumns& columns) {
  if (!hdf5_location(spec)) return load_dataset(spec, labels, storage, columns);
  Dataset ds = columns.any()
                   ? select_columns(load_hdf5(spec, LabelDomain::any), {}, columns, labels)
                   : load_hdf5(spec, labels);
  if (storage == Storage::f32) ds.store_as_f32();
  return ds;
}

void save_hdf5(const Dataset& ds, const Hdf5Location& loc) {
  const std::lock_guard<std::mutex> lock(hdf5_mutex());
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const Handle file(H5Fcreate(loc.file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw Error(loc.file + ": cannot create", 73);
  const Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  const hsize_t dims[2] = {ds.n(), ds.d() + 1};
  const Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
  const Handle set(H5Dcreate2(file.get(), loc.dataset.c_str(), H5T_IEEE_F64LE, space.get(),
                              lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Dclose);
  if (!set.ok()) throw Error(loc.file + ":" + loc.dataset + ": cannot create the dataset", 73);
  std::vector<double> rows(ds.n() * (ds.d() + 1));
  for (std::size_t i = 0; i < ds.n(); ++i) {
    rows[i * (ds.d() + 1)] = ds.y()[i];
    for (std::size_t j = 0; j < ds.d(); ++j) rows[i * (ds.d() + 1) + 1 + j] = ds.value(i, j);
  }
  if (H5Dwrite(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) < 0)
    throw Error(loc.file + ": write failed", 74);
}

}  // namespace flymc
