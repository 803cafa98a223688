#pragma once
// What flymc.sample() returns: the draw rows every chain's sink received (the rows the command
// line writes to chain-<k>.csv), as NumPy arrays, with the run's figures and its summary.
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc::python {

namespace py = pybind11;

/// One chain's output as its DrawSink received it. Filled without the GIL (plain C++ only).
struct ChainTable {
  std::vector<std::string> columns;
  std::vector<double> values;  ///< rows × columns, row-major
  std::size_t rows = 0;
  double step_size = 0.0;
  std::vector<double> inv_metric;  ///< its diagonal, or with `dense` all of it
  bool dense = false;
};

/// Sinks writing chain k's output into tables[k - 1]; `tables` must hold one per chain and
/// outlive the run.
SinkFactory memory_sinks(std::vector<ChainTable>& tables);

/// The Python-facing result. Every member is a Python object made once, under the GIL.
struct Result {
  py::object draws;        ///< ndarray (chains, draws, params)
  py::object param_names;  ///< list of str
  py::object sampler;      ///< dict: sampler column (lp__, ...) -> ndarray (chains, draws)
  py::object step_size;    ///< ndarray (chains,): the frozen step size of every chain
  py::object inv_metric;   ///< ndarray (chains, P) or, for a dense metric, (chains, P, P)
  py::object run;          ///< dict: the run's figures (summary.json's "run" and more)
  py::object summary;      ///< dict: name -> list, mean, sd, ... -> ndarray (params,)
  py::object config;       ///< dict: the options the run used (flymc.defaults()' keys)

  /// The keyword arguments of arviz.from_dict: posterior, sample_stats and attrs.
  py::dict to_arviz_dict() const;
};

/// Builds the result of run `r` from its chains' tables; `choice` is algo="auto"'s decision.
Result make_result(const RunResult& r, const std::vector<ChainTable>& tables,
                   const std::optional<AlgoChoice>& choice);

/// Registers the Result class in the module.
void bind_result(py::module_& m);

}  // namespace flymc::python
