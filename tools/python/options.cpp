// One table maps the option names to RunConfig's fields, so setting an option and reporting it
// (defaults(), Result.config) cannot drift apart, and a field added to RunConfig needs one line.
#include "options.hpp"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "flymc/core/errors.hpp"

namespace flymc::python {
namespace {

/// How one option is set from a Python value and read back.
struct Option {
  std::function<void(RunConfig&, const std::string&, py::handle)> set;
  std::function<py::object(const RunConfig&)> get;
};

/// The integer a Python value stands for: an int, or anything with __index__ such as
/// numpy.int64, but not a float (truncated silently) or a bool.
py::object integer(const std::string& name, py::handle v) {
  if (!PyIndex_Check(v.ptr()) || PyBool_Check(v.ptr()))
    throw py::type_error(name + " must be an integer, got " + std::string(py::repr(v)));
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  return index;
}

[[noreturn]] void out_of_range(const std::string& name, const std::string& range, py::handle v) {
  throw ConfigError(name + " must be " + range + ", got " + std::string(py::str(v)));
}

/// An integer in [lo, hi].
long long to_integer(const std::string& name, py::handle v, long long lo, long long hi) {
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(integer(name, v).ptr(), &overflow);
  if (overflow != 0 || x < lo || x > hi)
    out_of_range(name, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", v);
  return x;
}

/// An integer in [0, 2^64 - 1] (the seed).
std::uint64_t to_unsigned(const std::string& name, py::handle v) {
  const unsigned long long x = PyLong_AsUnsignedLongLong(integer(name, v).ptr());
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    out_of_range(name, "an integer in [0, 2**64 - 1]", v);
  }
  return x;
}

double to_real(const std::string& name, py::handle v) {
  if (!PyFloat_Check(v.ptr()) && !PyIndex_Check(v.ptr()) && !py::hasattr(v, "__float__"))
    throw py::type_error(name + " must be a number, got " + std::string(py::repr(v)));
  return py::cast<double>(py::float_(py::reinterpret_borrow<py::object>(v)));
}

/// A number field (bool, integer or real) of RunConfig.
template <class T>
Option number(T RunConfig::*field) {
  Option o;
  o.set = [field](RunConfig& c, const std::string& name, py::handle v) {
    if constexpr (std::is_same_v<T, bool>) {
      if (!PyBool_Check(v.ptr()))
        throw py::type_error(name + " must be True or False, got " + std::string(py::repr(v)));
      c.*field = v.ptr() == Py_True;
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      c.*field = to_unsigned(name, v);
    } else if constexpr (std::is_integral_v<T>) {
      // The C++ type's own range; RunConfig::validate() checks the meaningful one.
      c.*field = static_cast<T>(
          to_integer(name, v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    } else {
      c.*field = to_real(name, v);
    }
  };
  o.get = [field](const RunConfig& c) { return py::cast(c.*field); };
  return o;
}

/// A field whose unset value means "chosen at set-up": None or "auto" leaves it unset.
template <class T>
Option automatic(std::optional<T> RunConfig::*field) {
  Option o;
  o.set = [field](RunConfig& c, const std::string& name, py::handle v) {
    if (v.is_none() || (py::isinstance<py::str>(v) && py::cast<std::string>(v) == "auto")) {
      (c.*field).reset();
    } else if constexpr (std::is_integral_v<T>) {
      c.*field = static_cast<T>(
          to_integer(name, v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    } else {
      c.*field = to_real(name, v);
    }
  };
  o.get = [field](const RunConfig& c) {
    return (c.*field).has_value() ? py::cast(*(c.*field)) : py::none();
  };
  return o;
}

/// An enum field, named by the library's to_string() of each of `choices`.
template <class E>
Option choice(E RunConfig::*field, std::initializer_list<E> choices) {
  Option o;
  o.set = [field, all = std::vector<E>(choices)](RunConfig& c, const std::string& name,
                                                 py::handle v) {
    if (!py::isinstance<py::str>(v))
      throw py::type_error(name + " must be a str, got " + std::string(py::repr(v)));
    const auto s = py::cast<std::string>(v);
    std::string names;
    for (E e : all) {
      if (s == to_string(e)) {
        c.*field = e;
        return;
      }
      names += (names.empty() ? "" : ", ") + std::string(to_string(e));
    }
    throw ConfigError(name + "='" + s + "' is not one of: " + names);
  };
  o.get = [field](const RunConfig& c) { return py::str(to_string(c.*field)); };
  return o;
}

const std::map<std::string, Option>& options() {
  using C = RunConfig;
  static const std::map<std::string, Option> table = {
      {"model", choice(&C::model, {ModelKind::logistic, ModelKind::softmax, ModelKind::robust})},
      {"prior", choice(&C::prior, {PriorKind::gaussian, PriorKind::laplace})},
      {"algo", choice(&C::algo,
                      {Algo::flymc, Algo::full, Algo::minibatch_mh, Algo::sgld, Algo::bps,
                       Algo::lipsbps, Algo::sbps, Algo::psbps, Algo::zigzag_ss, Algo::zigzag_cv})},
      {"bound", choice(&C::bound, {BoundTuning::map, BoundTuning::untuned})},
      {"z", choice(&C::z, {ZUpdate::implicit, ZUpdate::explicit_})},
      {"kernel", choice(&C::kernel, {KernelKind::rwmh, KernelKind::mala, KernelKind::hmc,
                                     KernelKind::slice, KernelKind::nuts})},
      {"init", choice(&C::init, {Init::map, Init::prior})},
      {"metric", choice(&C::metric, {Metric::automatic, Metric::identity, Metric::diag,
                                     Metric::dense, Metric::fly})},
      {"adapt_metric", number(&C::adapt_metric)},
      {"fly_metric_blend", number(&C::fly_metric_blend)},
      {"slice_mode", choice(&C::slice_mode, {SliceMode::direction, SliceMode::coordinate})},
      {"hmc_steps", number(&C::hmc_steps)},
      {"max_treedepth", number(&C::max_treedepth)},
      {"chains", number(&C::chains)},
      {"warmup", number(&C::warmup)},
      {"iters", number(&C::iters)},
      {"thin", number(&C::thin)},
      {"seed", number(&C::seed)},
      {"threads", number(&C::threads)},
      {"prior_sd", number(&C::prior_sd)},
      {"student_nu", number(&C::student_nu)},
      {"noise_scale", number(&C::noise_scale)},
      {"q_dark_to_bright", automatic(&C::q_dark_to_bright)},
      {"q_per_datum", number(&C::q_per_datum)},
      {"resample_fraction", number(&C::resample_fraction)},
      {"untuned_xi", number(&C::untuned_xi)},
      {"bound_slack", automatic(&C::bound_slack)},
      {"slack_scale", number(&C::slack_scale)},
      {"softmax_bound",
       choice(&C::softmax_bound, {SoftmaxBoundKind::tight, SoftmaxBoundKind::bohning})},
      {"theta_steps", automatic(&C::theta_steps)},
      {"target_accept", automatic(&C::target_accept)},
      {"step_size", automatic(&C::step_size)},
      {"init_jitter", number(&C::init_jitter)},
      {"batch_size", number(&C::batch_size)},
      {"sgld_step", automatic(&C::sgld_step)},
      {"barker_temper", number(&C::barker_temper)},
      {"pdmp_spacing", automatic(&C::pdmp_spacing)},
      {"refresh_rate", automatic(&C::refresh_rate)},
  };
  return table;
}

}  // namespace

void apply_options(RunConfig& cfg, const py::dict& given) {
  const auto& table = options();
  for (const auto& [key, value] : given) {
    const auto name = py::cast<std::string>(key);
    const auto it = table.find(name);
    if (it == table.end())
      throw py::type_error("sample() got an unexpected keyword argument '" + name +
                           "' (flymc.defaults() lists the options)");
    it->second.set(cfg, name, value);
  }
}

py::dict options_dict(const RunConfig& cfg) {
  py::dict d;
  for (const auto& [name, option] : options()) d[py::str(name)] = option.get(cfg);
  return d;
}

}  // namespace flymc::python
