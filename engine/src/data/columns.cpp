// Choosing a data file's response, weight, trials and offset columns (flymc/data/columns.hpp).
#include "flymc/data/columns.hpp"

#include <algorithm>
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

Dataset select_columns(Dataset ds, const std::vector<std::string>& header, const DataColumns& cols,
                       LabelDomain labels, bool csv, std::size_t first_row,
                       std::size_t header_lines) {
  const std::string& src = ds.source();
  const std::size_t ncols = ds.d() + 1, n = ds.n();
  const std::string zero = "0";
  Chosen roles[] = {{"response", cols.response.empty() ? &zero : &cols.response},
                    {"weights", &cols.weights},
                    {"trials", &cols.trials},
                    {"offset", &cols.offset}};
  std::vector<bool> taken(ncols, false);
  for (Chosen& c : roles) {
    if (c.spec->empty()) continue;
    c.column = resolve(src, c, header, ncols);
    if (taken[c.column])
      throw DataError(src + ": column " + *c.spec +
                      " is named twice (--response, --weights, "
                      "--trials and --offset each take a column of their own)");
    taken[c.column] = true;
  }
  const std::size_t d =
      ncols - static_cast<std::size_t>(std::count(taken.begin(), taken.end(), true));
  if (d == 0) throw DataError(src + ": no feature column is left");
  // The file's column k of row i (column 0 is ds's response).
  const auto value = [&](std::size_t i, std::size_t k) {
    return k == 0 ? ds.y()[i] : ds.value(i, k - 1);
  };
  const auto name_of = [&](const Chosen& c) {
    return c.column < header.size() ? header[c.column] : "column " + std::to_string(c.column);
  };
  const auto where = [&](std::size_t i, const Chosen& c) {
    return src +
           (csv ? ":" + std::to_string(first_row + i + header_lines + 1)
                : ": row " + std::to_string(first_row + i)) +
           ": field " + std::to_string(c.column + 1) + " (" + name_of(c) + ", " + c.role + "): ";
  };
  const auto take = [&](const Chosen& c, auto&& check) {
    std::vector<double> v;
    if (c.spec->empty()) return v;
    v.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = value(i, c.column);
      const std::string problem = check(v[i], i);
      if (!problem.empty())
        throw DataError(where(i, c) + loader_detail::num_text(v[i]) + " " + problem);
    }
    return v;
  };
  const auto none = [](double, std::size_t) { return std::string(); };
  std::vector<double> y = take(roles[0], none);
  std::vector<double> w = take(roles[1], [](double x, std::size_t) {
    return x >= 0.0 ? std::string() : std::string("must be >= 0 (a weight)");
  });
  std::vector<double> m = take(roles[2], [&](double x, std::size_t i) {
    if (!(x >= 0.0) || x != std::floor(x)) return std::string("must be an integer >= 0 (trials)");
    if (!(y[i] <= x))
      return "is below the response " + loader_detail::num_text(y[i]) +
             " (successes cannot exceed trials)";
    return std::string();
  });
  std::vector<double> o = take(roles[3], none);  // finite: the loader refuses the rest

  Dataset out(n, d, src, Storage::f64);
  for (std::size_t i = 0; i < n; ++i) {
    double* row = out.mutable_row(i);
    std::size_t j = 0;
    for (std::size_t k = 0; k < ncols; ++k)
      if (!taken[k]) row[j++] = value(i, k);
  }
  loader_detail::RowLocator loc{src, csv, csv ? first_row + header_lines + 1 : first_row};
  loc.label_field = roles[0].column + 1;
  loc.label_name = name_of(roles[0]) + ", response";
  loader_detail::check_labels(y, labels, loc);
  out.mutable_y() = std::move(y);
  out.set_weights(std::move(w));
  out.set_trials(std::move(m));
  out.set_offsets(std::move(o));
  if (ds.storage() == Storage::f32) out.store_as_f32();
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
  const std::vector<std::string> header = csv ? csv_header(path) : std::vector<std::string>{};
  Dataset ds = select_columns(load_dataset(path, LabelDomain::any), header, cols, labels, csv, 0,
                              header.empty() ? 0 : 1);
  if (storage == Storage::f32) ds.store_as_f32();
  return ds;
}

}  // namespace flymc
