// Choosing a data file's response, weight, trials and offset columns (flymc/data/columns.hpp).
#include "flymc/data/columns.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "loader_detail.hpp"

namespace flymc {
namespace {

struct Chosen {
  const char* role;  // "response", "weights", ...
  const std::string* spec;
  std::size_t column = 0;
};

/// The 0-based column `spec` names among `cols` columns: a header name, or an index.
std::size_t resolve(const std::string& source, const Chosen& c,
                    const std::vector<std::string>& header, std::size_t cols) {
  const std::string& s = *c.spec;
  const auto named = std::find(header.begin(), header.end(), s);
  if (named != header.end()) return static_cast<std::size_t>(named - header.begin());
  std::size_t k = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), k);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size()) {
    if (k < cols) return k;
    throw DataError(source + ": --" + c.role + " " + s + ": the file has columns 0.." +
                    std::to_string(cols - 1));
  }
  std::string names;
  for (const std::string& h : header) names += (names.empty() ? "" : ", ") + h;
  throw DataError(source + ": --" + c.role + " " + s + ": no such column" +
                  (header.empty() ? std::string(" (the file has no header: name columns by their "
                                                "0-based index)")
                                  : " (the header names " + names + ")"));
}

}  // namespace

namespace {

/// Which file column each role takes (resolved and checked), and the feature columns left.
struct ColumnPlan {
  std::array<Chosen, 4> roles;  // response, weights, trials, offset
  std::vector<bool> taken;
  std::vector<std::size_t> keep;  // the features' file columns, in file order
};

ColumnPlan plan_columns(const std::string& src, const std::vector<std::string>& header,
                        const DataColumns& cols, std::size_t ncols) {
  static const std::string zero = "0";
  ColumnPlan p{{Chosen{"response", cols.response.empty() ? &zero : &cols.response},
                Chosen{"weights", &cols.weights}, Chosen{"trials", &cols.trials},
                Chosen{"offset", &cols.offset}},
               std::vector<bool>(ncols, false),
               {}};
  for (Chosen& c : p.roles) {
    if (c.spec->empty()) continue;
    c.column = resolve(src, c, header, ncols);
    if (p.taken[c.column])
      throw DataError(src + ": column " + *c.spec +
                      " is named twice (--response, --weights, "
                      "--trials and --offset each take a column of their own)");
    p.taken[c.column] = true;
  }
  for (std::size_t k = 0; k < ncols; ++k)
    if (!p.taken[k]) p.keep.push_back(k);
  if (p.keep.empty()) throw DataError(src + ": no feature column is left");
  return p;
}

/// Where rows and fields are named in messages.
struct Place {
  const std::vector<std::string>& header;
  bool csv;
  std::size_t first_row, header_lines;
};

/// `out` (its features in place) with the roles' columns `side` checked and attached.
Dataset attach_columns(Dataset out, std::array<std::vector<double>, 4> side, const ColumnPlan& p,
                       LabelDomain labels, const Place& at) {
  const std::string& src = out.source();
  const auto name_of = [&](const Chosen& c) {
    return c.column < at.header.size() ? at.header[c.column] : "column " + std::to_string(c.column);
  };
  const auto check = [&](std::size_t role, auto&& problem_of) {
    const Chosen& c = p.roles[role];
    const std::vector<double>& v = side[role];
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string problem = problem_of(v[i], i);
      if (problem.empty()) continue;
      throw DataError(src +
                      (at.csv ? ":" + std::to_string(at.first_row + i + at.header_lines + 1)
                              : ": row " + std::to_string(at.first_row + i)) +
                      ": field " + std::to_string(c.column + 1) + " (" + name_of(c) + ", " +
                      c.role + "): " + loader_detail::num_text(v[i]) + " " + problem);
    }
  };
  const std::vector<double>& y = side[0];
  check(1, [](double x, std::size_t) {
    return x >= 0.0 ? std::string() : std::string("must be >= 0 (a weight)");
  });
  check(2, [&](double x, std::size_t i) {
    if (!(x >= 0.0) || x != std::floor(x)) return std::string("must be an integer >= 0 (trials)");
    if (!(y[i] <= x))
      return "is below the response " + loader_detail::num_text(y[i]) +
             " (successes cannot exceed trials)";
    return std::string();
  });
  // Offsets are finite: the loaders refuse the rest.
  loader_detail::RowLocator loc{src, at.csv,
                                at.csv ? at.first_row + at.header_lines + 1 : at.first_row};
  loc.label_field = p.roles[0].column + 1;
  loc.label_name = name_of(p.roles[0]) + ", response";
  loader_detail::check_labels(side[0], labels, loc);
  out.mutable_y() = std::move(side[0]);
  out.set_weights(std::move(side[1]));
  out.set_trials(std::move(side[2]));
  out.set_offsets(std::move(side[3]));
  return out;
}

/// An NPY file read once into the plan's layout: no copy of the whole matrix.
Dataset load_npy_columns(const std::string& path, const DataColumns& cols, LabelDomain labels) {
  const ColumnPlan p = plan_columns(path, {}, cols, loader_detail::npy_column_count(path));
  std::array<std::vector<double>, 4> side;
  loader_detail::NpyColumnMap map;
  map.dest.assign(p.taken.size(), 0);
  for (std::size_t j = 0; j < p.keep.size(); ++j) map.dest[p.keep[j]] = static_cast<int>(j);
  for (std::size_t r = 0; r < 4; ++r) {
    if (p.roles[r].spec->empty()) continue;
    map.dest[p.roles[r].column] = -static_cast<int>(r) - 1;
    map.side[r] = &side[r];
  }
  Dataset out = loader_detail::load_npy_mapped(path, p.keep.size(), map);
  return attach_columns(std::move(out), std::move(side), p, labels, Place{{}, false, 0, 0});
}

}  // namespace

Dataset select_columns(Dataset ds, const std::vector<std::string>& header, const DataColumns& cols,
                       LabelDomain labels, bool csv, std::size_t first_row,
                       std::size_t header_lines) {
  const std::size_t n = ds.n();
  const ColumnPlan p = plan_columns(ds.source(), header, cols, ds.d() + 1);
  // The file's column k of row i (column 0 is ds's response).
  const auto value = [&](std::size_t i, std::size_t k) {
    return k == 0 ? ds.y()[i] : ds.value(i, k - 1);
  };
  std::array<std::vector<double>, 4> side;
  for (std::size_t r = 0; r < 4; ++r) {
    if (p.roles[r].spec->empty()) continue;
    side[r].resize(n);
    for (std::size_t i = 0; i < n; ++i) side[r][i] = value(i, p.roles[r].column);
  }
  // The features, rows in parallel.
  const std::size_t d = p.keep.size();
  Dataset out(n, d, ds.source(), Storage::f64);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 4096),
                    [&](const tbb::blocked_range<std::size_t>& r) {
                      for (std::size_t i = r.begin(); i != r.end(); ++i) {
                        double* row = out.mutable_row(i);
                        for (std::size_t j = 0; j < d; ++j) row[j] = value(i, p.keep[j]);
                      }
                    });
  const bool f32 = ds.storage() == Storage::f32;
  out = attach_columns(std::move(out), std::move(side), p, labels,
                       Place{header, csv, first_row, header_lines});
  if (f32) out.store_as_f32();
  return out;
}

Dataset load_dataset(const std::string& path, LabelDomain labels, Storage storage,
                     const DataColumns& cols) {
  if (!cols.any()) return load_dataset(path, labels, storage);
  const std::optional<DataFormat> format = data_format_of(path);
  if (!format)
    throw DataError(path +
                    ": --response, --weights, --trials and --offset name columns of CSV, .npy and "
                    "HDF5 files; a libsvm file has a label and features only");
  const bool csv = format == DataFormat::csv;
  Dataset ds = [&] {
    if (!csv) return load_npy_columns(path, cols, labels);
    const std::vector<std::string> header = csv_header(path);
    return select_columns(load_dataset(path, LabelDomain::any), header, cols, labels, csv, 0,
                          header.empty() ? 0 : 1);
  }();
  if (storage == Storage::f32) ds.store_as_f32();
  return ds;
}

}  // namespace flymc
