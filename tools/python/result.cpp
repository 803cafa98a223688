// The result object of flymc.sample() and the sinks that collect its rows.
#include "result.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "flymc/io/output.hpp"

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

/// A JSON-like value: None for NaN or infinity, as summary.json writes null.
py::object finite_or_none(double v) { return std::isfinite(v) ? py::cast(v) : py::none(); }

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

/// The smallest bulk ESS over the parameters (0 where one cannot be computed), as summary.json.
double min_ess_bulk(const std::vector<NamedSummary>& params) {
  double m = std::numeric_limits<double>::infinity();
  for (const auto& p : params) m = std::min(m, std::isnan(p.s.ess_bulk) ? 0.0 : p.s.ess_bulk);
  return m;
}

/// --algo auto's candidates, as summary.json's run.auto_candidates (docs/output.md).
py::object auto_candidates_list(const AlgoChoice& choice) {
  py::list out;
  for (const AutoCandidate& c : choice.candidates) {
    const bool ran = c.skipped.empty();
    py::dict d;
    d["name"] = c.name;
    d["algo"] = to_string(c.config.algo);
    d["kernel"] = to_string(c.config.kernel);
    d["metric"] = to_string(c.config.resolved_metric());
    d["skipped"] = ran ? py::none() : py::object(py::str(c.skipped));
    d["predicted_ess_per_second"] = ran ? finite_or_none(c.ess_per_second) : py::none();
    d["predicted_seconds"] = ran ? finite_or_none(c.predicted_seconds) : py::none();
    d["predicted_core_seconds"] = ran ? finite_or_none(c.predicted_cost) : py::none();
    d["pilot_min_ess"] = ran ? finite_or_none(c.pilot_ess) : py::none();
    d["pilot_iters"] = ran ? py::object(py::int_(c.pilot_iters)) : py::none();
    d["pilot_rows"] = ran ? py::object(py::int_(c.pilot_rows)) : py::none();
    d["pilot_seconds"] = ran ? finite_or_none(c.pilot_seconds) : py::none();
    d["pilot_core_seconds"] = ran ? finite_or_none(c.pilot_cost) : py::none();
    d["rough"] = ran ? py::object(py::bool_(c.rough)) : py::none();
    out.append(d);
  }
  return out;
}

/// summary.json's "run" figures (docs/output.md), plus the run checks and the MAP fit.
py::dict run_dict(const RunResult& r, const std::vector<NamedSummary>& params,
                  const std::optional<AlgoChoice>& choice) {
  const RunConfig& c = r.config;
  py::dict d;
  d["algo"] = to_string(c.algo);
  d["exact"] = is_exact(c.algo);
  d["algo_chosen"] = choice ? py::object(py::str(to_string(choice->algo()))) : py::none();
  d["auto_chosen"] = choice ? py::object(py::str(choice->best().name)) : py::none();
  d["auto_candidates"] = choice ? auto_candidates_list(*choice) : py::none();
  d["predicted_speedup"] = choice ? finite_or_none(choice->predicted_speedup) : py::none();
  d["prediction_rough"] = choice ? py::object(py::bool_(choice->pilots_short)) : py::none();
  d["auto_why"] = choice ? py::object(py::str(choice->why)) : py::none();
  d["auto_pilot_seconds"] = choice ? finite_or_none(choice->pilot_seconds) : py::none();
  d["auto_predicted_seconds"] =
      choice ? finite_or_none(choice->best().predicted_seconds) : py::none();
  d["auto_measured_seconds"] =
      choice ? finite_or_none(r.setup_seconds + r.warmup_seconds + r.sampling_seconds) : py::none();
  d["n"] = r.n;
  d["dim"] = r.dim;
  d["chains"] = c.chains;
  d["warmup"] = c.warmup;
  d["iters"] = c.iters;
  d["setup_seconds"] = r.setup_seconds;
  py::list phases;  // the run's own (the data came from the caller's arrays)
  for (const SetupPhase& p : r.setup_phases) {
    py::dict one;
    one["name"] = p.name;
    one["seconds"] = p.seconds;
    one["passes"] = p.passes >= 0 ? py::object(py::int_(p.passes)) : py::none();
    phases.append(one);
  }
  d["setup_phases"] = phases;
  d["warmup_seconds"] = r.warmup_seconds;
  d["sampling_seconds"] = r.sampling_seconds;
  d["queries_per_iter"] = r.queries_per_iter();
  d["bright_mean"] = finite_or_none(r.bright_mean());
  d["batch_mean"] = finite_or_none(r.batch_mean());
  d["accept_rate"] = r.accept_rate();
  const double ess = min_ess_bulk(params);
  d["min_ess_bulk"] = finite_or_none(ess);
  d["min_ess_bulk_per_second"] = finite_or_none(ess / r.sampling_seconds);
  const bool fly = c.algo == Algo::flymc;
  d["bound_slack"] = fly ? py::cast(r.bound_slack) : py::none();
  d["q_dark_to_bright"] =
      fly && c.z == ZUpdate::implicit ? py::cast(r.q_dark_to_bright) : py::none();
  d["bound_violations"] = r.bound_violations();
  d["bound_clamps"] = r.bound_clamps();
  d["nonfinite_proposals"] = r.nonfinite();
  d["slice_failures"] = r.slice_failures();
  d["divergences"] = r.divergences();
  const std::vector<double> pm = r.path_mean();
  d["path_mean"] = pm.empty() ? py::none() : py::object(py::array_t<double>(pm.size(), pm.data()));
  d["pdmp_spacing"] = finite_or_none(r.pdmp_spacing);
  d["refresh_rate"] = finite_or_none(r.refresh_rate);
  const auto& theta = r.map.theta;
  d["map_theta"] = py::array_t<double>(theta.size(), theta.data());
  d["map_log_post"] = r.map.log_post;
  d["warnings"] = r.warnings;
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
