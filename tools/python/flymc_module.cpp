// The `flymc` Python module (docs/python.md): flymc.sample() over NumPy arrays, flymc.load(),
// flymc.defaults(), and flymc's exceptions as ValueError subclasses.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/columns.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/front_door.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "options.hpp"
#include "result.hpp"

namespace flymc::python {
namespace {

/// C-ordered float64 views of the caller's arrays (copies only when they are not already so).
using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

Array as_array(const py::object& v, const char* name, int ndim, const char* what) {
  Array a = Array::ensure(v);
  if (!a) throw py::type_error(std::string(name) + " must be an array of numbers");
  if (a.ndim() != ndim)
    throw DataError(std::string(name) + " must be " + what + ", got an array of shape " +
                    std::string(py::str(py::tuple(a.attr("shape")))));
  return a;
}

/// The per-row arrays sample() takes beside X and y (weights, trials, offset): each 1-D with one
/// value per row, or absent; taken out of `options` (they are not run options).
struct RowArrays {
  std::vector<double> weights, trials, offsets;
};
RowArrays take_row_arrays(py::dict& options) {
  RowArrays out;
  const std::pair<const char*, std::vector<double>*> keys[] = {
      {"weights", &out.weights}, {"trials", &out.trials}, {"offset", &out.offsets}};
  for (const auto& [key, to] : keys) {
    if (!options.contains(key)) continue;
    const py::object v = options[key];
    PyDict_DelItemString(options.ptr(), key);
    if (v.is_none()) continue;
    const Array a = as_array(v, key, 1, "1-D (one value per row)");
    to->assign(a.data(), a.data() + a.shape(0));
  }
  return out;
}

/// Attaches the arrays to the data set (checked by the model against its rows).
void attach_row_arrays(Dataset& ds, RowArrays&& r) {
  for (const auto& [name, v] : {std::pair{"weights", &r.weights}, std::pair{"trials", &r.trials},
                                std::pair{"offset", &r.offsets}})
    if (!v->empty() && v->size() != ds.n())
      throw DataError(std::string(name) + " has " + std::to_string(v->size()) +
                      " values but X has " + std::to_string(ds.n()) + " rows");
  ds.set_weights(std::move(r.weights));
  ds.set_trials(std::move(r.trials));
  ds.set_offsets(std::move(r.offsets));
}

/// The run's data from X (N × D), y (N) and the per-row arrays, checked as the data files are
/// (dataset_from_arrays).
std::shared_ptr<const Dataset> arrays_dataset(const Array& x, const Array& y, ModelKind model,
                                              Storage storage, RowArrays&& extras) {
  if (y.shape(0) != x.shape(0))
    throw DataError("X has " + std::to_string(x.shape(0)) + " rows but y has " +
                    std::to_string(y.shape(0)) + " labels");
  const auto n = static_cast<std::size_t>(x.shape(0)), d = static_cast<std::size_t>(x.shape(1));
  auto ds = std::make_shared<Dataset>(
      dataset_from_arrays({x.data(), n * d}, {y.data(), n}, d, label_domain(model), "X, y"));
  attach_row_arrays(*ds, std::move(extras));
  if (storage == Storage::f32) ds->store_as_f32();
  return ds;
}

Result sample(const py::object& x_in, const py::object& y_in, const py::kwargs& kwargs) {
  py::dict options(kwargs);
  RowArrays row_arrays = take_row_arrays(options);
  auto given_value = [&](const char* key) {
    return options.contains(key) && !options[key].is_none();
  };
  SampleRequest req;  // the front door's, as the command line's (front_door.hpp)
  req.iters_given = given_value("iters");
  req.ess_given = given_value("ess");
  apply_options(req.cfg, options);
  // No keyword is silently ignored: the sampler reads each, and under auto (algo="auto", the
  // default) each restricts the candidates to the samplers that read it. A keyword at its
  // default value counts as not given, so that a result's config, which names every option,
  // runs again (flymc.sample(X, y, **r.config)).
  const RunConfig defaults;
  for (const auto& [key, value] : options)
    if (const OptionInfo* o = find_option(py::cast<std::string>(key));
        o != nullptr && std::string_view(o->key) != "algo" &&
        get_value(req.cfg, *o) != get_value(defaults, *o))
      req.given.push_back(o);
  const SamplePlan plan = plan_sample(req);  // before the chains' tables are sized by it
  const Array x = as_array(x_in, "X", 2, "2-D (N rows x D features)");
  const Array y = as_array(y_in, "y", 1, "1-D (one label per row)");
  std::vector<ChainTable> tables(static_cast<std::size_t>(plan.cfg.chains));
  Sampled s;
  {
    // The chains run on oneTBB's threads and touch no Python object (the sinks fill `tables`),
    // so other Python threads run meanwhile. x and y stay referenced, hence alive, throughout.
    py::gil_scoped_release unlocked;
    const auto data = arrays_dataset(x, y, plan.cfg.model, plan.cfg.storage, std::move(row_arrays));
    s = flymc::sample(plan, data, memory_sinks(tables));
  }
  const std::optional<AlgoChoice>& choice = s.choice;
  const RunResult& r = s.run;
  if (choice && choice->pilots_short &&
      PyErr_WarnEx(
          PyExc_RuntimeWarning,
          "algo='auto': the pilots stopped at their time limit with few effective draws, "
          "so the prediction is rough: compare the two best candidates (run['auto_candidates']) "
          "with longer runs",
          1) != 0)
    throw py::error_already_set();         // the warning was turned into an error
  for (const std::string& w : r.warnings)  // e.g. bound violations of a run to finish
    if (PyErr_WarnEx(PyExc_RuntimeWarning, w.c_str(), 1) != 0) throw py::error_already_set();
  Result res = make_result(r, tables, choice);
  res.config = options_dict(r.config);
  return res;
}

/// A column named as --response ... --offset name it: a CSV header name (str) or a 0-based
/// index (int); None names none.
std::string column_spec(const py::object& c, const char* what) {
  if (c.is_none()) return {};
  if (py::isinstance<py::str>(c)) return c.cast<std::string>();
  if (py::isinstance<py::int_>(c) && !py::isinstance<py::bool_>(c)) {
    const long long i = c.cast<long long>();
    if (i < 0)
      throw ConfigError(std::string(what) + "=" + std::to_string(i) + ": a column index is >= 0");
    return std::to_string(i);
  }
  throw py::type_error(std::string(what) +
                       " names a column by its header name (str) or its 0-based index (int)");
}

/// (X, y) of a data file as `flymc sample --data` reads it (CSV, NPY, libsvm, file.h5:/dataset),
/// labels checked and recoded for `model`, the columns chosen as --response, --weights, --trials
/// and --offset choose them; with any of the last three also a dict of their arrays, keyed as
/// sample() takes them.
py::tuple load(const std::string& path, const std::string& model, const py::object& response,
               const py::object& weights, const py::object& trials, const py::object& offset) {
  RunConfig cfg;
  py::dict options;
  options["model"] = model;
  apply_options(cfg, options);
  const DataColumns cols{column_spec(response, "response"), column_spec(weights, "weights"),
                         column_spec(trials, "trials"), column_spec(offset, "offset")};
  std::optional<Dataset> ds;
  {
    py::gil_scoped_release unlocked;
    ds.emplace(load_data(path, label_domain(cfg.model), cfg.storage, cols));
  }
  const std::size_t n = ds->n(), d = ds->d();
  py::array_t<double> x({py::ssize_t(n), py::ssize_t(d)});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) x.mutable_data()[i * d + j] = ds->value(i, j);
  py::array_t<double> y(py::ssize_t(n), ds->y().data());
  if (cols.weights.empty() && cols.trials.empty() && cols.offset.empty())
    return py::make_tuple(x, y);
  py::dict extras;
  auto put = [&](const char* key, std::span<const double> v) {
    if (!v.empty()) extras[key] = py::array_t<double>(py::ssize_t(v.size()), v.data());
  };
  put("weights", ds->weights());
  put("trials", ds->trials());
  put("offset", ds->offsets());
  return py::make_tuple(x, y, extras);
}

constexpr const char* kSampleDoc = R"(Posterior draws of a model of X and y.

X is a 2-D array (N rows x D features), y holds N labels (logistic: -1/+1 or 0/1; softmax: class
ids 0..K-1; robust: real responses; binomial: successes). weights=, trials= and offset= take
1-D arrays of one value per row: a weight per datum, binomial trials, an offset added to each
linear predictor (models that read them: probit, gaussian, binomial). The options are RunConfig's fields under their own names,
with the command line's values (flymc.defaults() lists them with their defaults), e.g.
model="logistic", algo="auto" (or "flymc", "full", "smh", "minibatch-mh", "sgld", "bps",
"lipsbps", "sbps", "psbps", "zigzag-ss", "zigzag-cv"), kernel="rwmh" (or "mala", "hmc", "nuts",
"slice"), chains=4, warmup=1000, ess=1000 (sample until every parameter's bulk and tail ESS
reach it; iters=N alone asks for a fixed count instead), thin=1, seed=1, threads=0 (all cores).
A keyword the sampler does not read raises flymc.UsageError. None (or "auto")
leaves an automatic value to be chosen at set-up.

The draws equal `flymc sample`'s for the same data and options. The GIL is released while the
chains run. Bad data or options raise flymc.DataError or flymc.ConfigError (ValueErrors) with
the library's message; unknown options and values of the wrong type raise TypeError. A model
bound found violated while sampling raises flymc.BoundViolationError naming the family, the
datum and its predictor, unless on_bound_violation="finish" (then a warning, and the run's
exact figure is false).)";

}  // namespace
}  // namespace flymc::python

PYBIND11_MODULE(flymc, m) {
  namespace py = pybind11;
  namespace fp = flymc::python;
  m.doc() = "flymc: Firefly Monte Carlo and other samplers for tall data (docs/python.md)";
  m.attr("__version__") = FLYMC_VERSION;
  // flymc's errors are bad input (the CLI's exit codes 64, 65, 78) or an I/O failure: all
  // ValueErrors, each its own class. Translators are tried latest first, so the subclasses win.
  auto& error = py::register_exception<flymc::Error>(m, "Error", PyExc_ValueError);
  py::register_exception<flymc::DataError>(m, "DataError", error);
  py::register_exception<flymc::ConfigError>(m, "ConfigError", error);
  py::register_exception<flymc::UsageError>(m, "UsageError", error);
  py::register_exception<flymc::BoundViolationError>(m, "BoundViolationError", error);
  fp::bind_result(m);
  m.def("sample", &fp::sample, py::arg("X"), py::arg("y"), fp::kSampleDoc);
  m.def(
      "defaults", [] { return fp::options_dict(flymc::RunConfig{}); },
      "The options of flymc.sample() and their defaults (None: chosen at set-up). Without iters "
      "or ess, sample() runs to ess effective draws (iters: a fixed count when given).");
  m.def("load", &fp::load, py::arg("path"), py::arg("model") = "logistic",
        py::arg("response") = py::none(), py::arg("weights") = py::none(),
        py::arg("trials") = py::none(), py::arg("offset") = py::none(),
        "(X, y) of a data file as `flymc sample --data` reads it: .csv, .npy, libsvm text or "
        "file.h5:/dataset; labels checked for `model` (binary 0/1 become -1/+1). response=, "
        "weights=, trials= and offset= name columns as --response ... --offset do (a CSV header "
        "name or a 0-based index; a named column is not a feature); with weights, trials or "
        "offset named it returns (X, y, extras), extras a dict of their arrays keyed as "
        "sample() takes them: flymc.sample(X, y, **extras).");
}
