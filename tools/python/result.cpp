// The result object of flymc.sample() and the sinks that collect its rows.
#include "result.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "flymc/io/output.hpp"
#include "flymc/io/run_record.hpp"

namespace flymc::python {
namespace {

/// Keeps a chain's rows in memory. Runs on the chain's task with the GIL released, so it touches
/// no Python object.
class MemorySink final : public DrawSink {
 public:
  explicit MemorySink(ChainTable& t) : t_(t) {}
  void begin(const std::vector<std::string>& columns) override { t_.columns = columns; }
  void adaptation(double step_size, const std::vector<double>& inv_metric, bool dense) override {
    t_.step_size = step_size;
    t_.inv_metric = inv_metric;
    t_.dense = dense;
  }
  void row(const std::vector<double>& values) override {
    t_.values.insert(t_.values.end(), values.begin(), values.end());
    ++t_.rows;
  }
  void end(double, double, const Counters&) override {}

 private:
  ChainTable& t_;
};

bool is_sampler_column(const std::string& name) {
  return name.size() > 2 && name.compare(name.size() - 2, 2, "__") == 0;
}

/// Columns [first, first + width) of every chain's rows as an ndarray (chains, rows, width), or
/// (chains, rows) when `squeeze` (width 1).
py::array_t<double> block(const std::vector<ChainTable>& tables, std::size_t first,
                          std::size_t width, bool squeeze) {
  const std::size_t chains = tables.size(), rows = chains > 0 ? tables[0].rows : 0;
  std::vector<py::ssize_t> shape = {py::ssize_t(chains), py::ssize_t(rows)};
  if (!squeeze) shape.push_back(py::ssize_t(width));
  py::array_t<double> a(shape);
  double* out = a.mutable_data();
  for (const ChainTable& t : tables) {
    const std::size_t cols = t.columns.size();
    for (std::size_t i = 0; i < rows; ++i, out += width)
      std::copy_n(t.values.data() + i * cols + first, width, out);
  }
  return a;
}

/// Every chain's step size and inverse metric after warm-up.
void adaptation_arrays(const std::vector<ChainTable>& tables, std::size_t p, Result& res) {
  const std::size_t chains = tables.size();
  const bool dense = chains > 0 && tables[0].dense;
  py::array_t<double> steps{py::ssize_t(chains)};
  std::vector<py::ssize_t> shape = {py::ssize_t(chains), py::ssize_t(p)};
  if (dense) shape.push_back(py::ssize_t(p));
  py::array_t<double> metric(shape);
  std::fill_n(metric.mutable_data(), metric.size(), std::numeric_limits<double>::quiet_NaN());
  const std::size_t per_chain = dense ? p * p : p;
  for (std::size_t c = 0; c < chains; ++c) {
    steps.mutable_data()[c] = tables[c].step_size;
    const auto& m = tables[c].inv_metric;
    std::copy_n(m.data(), std::min(m.size(), per_chain), metric.mutable_data() + c * per_chain);
  }
  res.step_size = steps;
  res.inv_metric = metric;
}

/// Per parameter: name and summary.json's statistics, each a column.
py::dict summary_dict(const std::vector<NamedSummary>& params) {
  const std::pair<const char*, double ParamSummary::*> stats[] = {
      {"mean", &ParamSummary::mean},
      {"sd", &ParamSummary::sd},
      {"mcse_mean", &ParamSummary::mcse_mean},
      {"q5", &ParamSummary::q5},
      {"q50", &ParamSummary::q50},
      {"q95", &ParamSummary::q95},
      {"ess_bulk", &ParamSummary::ess_bulk},
      {"ess_tail", &ParamSummary::ess_tail},
      {"rhat", &ParamSummary::rhat}};
  py::dict d;
  py::list names;
  for (const auto& p : params) names.append(p.name);
  d["name"] = names;
  for (const auto& [key, field] : stats) {
    py::array_t<double> a{py::ssize_t(params.size())};
    for (std::size_t j = 0; j < params.size(); ++j) a.mutable_data()[j] = params[j].s.*field;
    d[key] = a;
  }
  return d;
}

/// A run record's value in Python (run_record.hpp): lists of numbers as ndarrays.
py::object record_object(const RecordValue& v) {
  using K = RecordValue::Kind;
  switch (v.kind) {
    case K::boolean:
      return py::bool_(v.boolean);
    case K::integer:
      return py::int_(v.integer);
    case K::number:
      return py::float_(v.number);
    case K::text:
      return py::str(v.text);
    case K::numbers:
      return py::array_t<double>(py::ssize_t(v.numbers.size()), v.numbers.data());
    case K::texts:
      return py::cast(v.texts);
    case K::records: {
      py::list out;
      for (const Record& r : v.records) {
        py::dict d;
        for (const auto& [name, value] : r) d[py::str(name)] = record_object(value);
        out.append(d);
      }
      return out;
    }
    case K::null:
      break;
  }
  return py::none();
}

/// summary.json's "run" figures (docs/output.md): the same record the command line writes.
py::dict run_dict(const RunResult& r, const std::vector<NamedSummary>& params,
                  const std::optional<AlgoChoice>& choice) {
  py::dict d;
  for (const auto& [name, value] : run_record(r, params, choice ? &*choice : nullptr))
    d[py::str(name)] = record_object(value);
  return d;
}

/// ArviZ's sample_stats name of a sampler column: its from_cmdstan names for Stan's columns,
/// flymc's own without the trailing "__".
std::string arviz_stat_name(const std::string& column) {
  static const std::pair<const char*, const char*> stan[] = {{"lp__", "lp"},
                                                             {"accept_stat__", "acceptance_rate"},
                                                             {"stepsize__", "step_size"},
                                                             {"treedepth__", "tree_depth"},
                                                             {"n_leapfrog__", "n_steps"},
                                                             {"divergent__", "diverging"},
                                                             {"energy__", "energy"}};
  for (const auto& [from, to] : stan)
    if (column == from) return to;
  return column.substr(0, column.size() - 2);
}

}  // namespace

SinkFactory memory_sinks(std::vector<ChainTable>& tables) {
  return [&tables](int chain_id) -> std::unique_ptr<DrawSink> {
    return std::make_unique<MemorySink>(tables.at(static_cast<std::size_t>(chain_id - 1)));
  };
}

Result make_result(const RunResult& r, const std::vector<ChainTable>& tables,
                   const std::optional<AlgoChoice>& choice) {
  Result res;
  const std::vector<std::string>& columns = tables.at(0).columns;
  const auto first_param = static_cast<std::size_t>(
      std::find_if_not(columns.begin(), columns.end(), is_sampler_column) - columns.begin());
  py::dict sampler;
  for (std::size_t k = 0; k < first_param; ++k)
    sampler[py::str(columns[k])] = block(tables, k, 1, true);
  res.sampler = sampler;
  res.draws = block(tables, first_param, columns.size() - first_param, false);
  res.param_names =
      py::cast(std::vector<std::string>(columns.begin() + long(first_param), columns.end()));
  adaptation_arrays(tables, columns.size() - first_param, res);
  const std::vector<NamedSummary> params = summarize_params(r);
  res.summary = summary_dict(params);
  res.run = run_dict(r, params, choice);
  return res;
}

py::dict Result::to_arviz_dict() const {
  py::module_ np = py::module_::import("numpy");
  // One (chain, draw) array per parameter, under the draw files' names (theta.1, W.2.3, ...).
  py::dict posterior;
  py::list names = param_names;
  for (std::size_t j = 0; j < names.size(); ++j)
    posterior[names[j]] = np.attr("ascontiguousarray")(
        draws.attr("__getitem__")(py::make_tuple(py::ellipsis(), py::int_(j))));
  py::dict stats;
  for (const auto& [column, values] : py::dict(sampler)) {
    const std::string name = arviz_stat_name(py::cast<std::string>(column));
    // ArviZ's plots look for a boolean "diverging".
    stats[py::str(name)] = name == "diverging" ? values.attr("astype")(np.attr("bool_"))
                                               : py::reinterpret_borrow<py::object>(values);
  }
  // netCDF attributes hold numbers and strings only (no bool, no None).
  py::dict cfg = config, figures = run;
  py::dict attrs;
  attrs["inference_library"] = "flymc";
  attrs["inference_library_version"] = FLYMC_VERSION;
  for (const char* key : {"model", "algo", "kernel", "seed", "thin", "warmup"})
    attrs[key] = cfg[key];
  attrs["tuning_steps"] = cfg["warmup"];
  attrs["sampling_time"] = figures["sampling_seconds"];
  attrs["exact"] = py::int_(py::cast<bool>(figures["exact"]) ? 1 : 0);
  py::dict out;
  out["posterior"] = posterior;
  out["sample_stats"] = stats;
  out["attrs"] = attrs;
  return out;
}

void bind_result(py::module_& m) {
  py::class_<Result>(m, "Result",
                     "The output of flymc.sample(): every chain's kept draws and sampler columns "
                     "(the rows `flymc sample` writes to chain-<k>.csv), the run's figures and "
                     "its posterior summary.")
      .def_readonly("draws", &Result::draws, "ndarray (chains, draws, params), float64")
      .def_readonly("param_names", &Result::param_names, "list of str: theta.j or W.k.j")
      .def_readonly("sampler", &Result::sampler,
                    "dict: sampler column (lp__, accept_stat__, ...) -> ndarray (chains, draws)")
      .def_readonly("step_size", &Result::step_size, "ndarray (chains,): step size after warm-up")
      .def_readonly("inv_metric", &Result::inv_metric,
                    "ndarray (chains, params) or, dense, (chains, params, params)")
      .def_readonly("run", &Result::run, "dict: the run's figures (summary.json's run)")
      .def_readonly("summary", &Result::summary,
                    "dict of columns: name, mean, sd, mcse_mean, q5, q50, q95, ess_bulk, "
                    "ess_tail, rhat")
      .def_readonly("config", &Result::config, "dict: the options the run used")
      .def("to_arviz_dict", &Result::to_arviz_dict,
           "The keyword arguments of arviz.from_dict: az.from_dict(**r.to_arviz_dict())")
      .def("__repr__", [](const Result& r) {
        const py::tuple shape = r.draws.attr("shape");
        const py::dict cfg = r.config;
        return "<flymc.Result: " + std::string(py::str(shape[0])) + " chains x " +
               std::string(py::str(shape[1])) + " draws x " + std::string(py::str(shape[2])) +
               " params; " + std::string(py::str(cfg["model"])) + ", " +
               std::string(py::str(cfg["algo"])) + ", " + std::string(py::str(cfg["kernel"])) + ">";
      });
}

}  // namespace flymc::python
