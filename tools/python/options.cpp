// The keyword options of flymc.sample(), defaults() and Result.config: the run options' table
// (flymc/core/options.hpp) under RunConfig's field names, with Python's type checks.
#include "options.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"

namespace flymc::python {
namespace {

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

/// The option's value from a Python object, with Python's type errors: an int (or __index__)
/// for an integer, never a bool or a float; True or False for a flag; None or "auto" for an
/// automatic option left unset; a str for a choice.
OptionValue from_python(const OptionInfo& o, py::handle v) {
  const std::string name = o.key;
  switch (o.kind()) {
    case OptionKind::flag:
      if (!PyBool_Check(v.ptr()))
        throw py::type_error(name + " must be True or False, got " + std::string(py::repr(v)));
      return v.ptr() == Py_True;
    case OptionKind::unsigned_integer:
      return to_unsigned(name, v);
    case OptionKind::auto_integer:
    case OptionKind::auto_real:
      if (v.is_none() || (py::isinstance<py::str>(v) && py::cast<std::string>(v) == "auto"))
        return std::monostate{};
      if (o.kind() == OptionKind::auto_real) return to_real(name, v);
      [[fallthrough]];
    case OptionKind::integer:
    case OptionKind::long_integer:
      // Here long long's range; set_value() checks the field's, RunConfig::validate() the
      // meaningful one.
      return to_integer(name, v, std::numeric_limits<long long>::min(),
                        std::numeric_limits<long long>::max());
    case OptionKind::real:
      return to_real(name, v);
    case OptionKind::choice:
    case OptionKind::text:
      if (!py::isinstance<py::str>(v))
        throw py::type_error(name + " must be a str, got " + std::string(py::repr(v)));
      return py::cast<std::string>(v);
  }
  return std::monostate{};
}

py::object to_python(const OptionValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, std::monostate>)
          return py::none();
        else
          return py::cast(x);
      },
      v);
}

}  // namespace

void apply_options(RunConfig& cfg, const py::dict& given) {
  for (const auto& [key, value] : given) {
    const auto name = py::cast<std::string>(key);
    const OptionInfo* o = find_option(name);
    // The keywords are the fields' names (a command-line spelling such as "prior-sd" is not).
    if (o == nullptr || name != o->key || !o->in_python)
      throw py::type_error("sample() got an unexpected keyword argument '" + name +
                           "' (flymc.defaults() lists the options)");
    set_value(cfg, *o, from_python(*o, value));
  }
}

py::dict options_dict(const RunConfig& cfg) {
  py::dict d;
  for_each_option([&](const OptionInfo& o) {
    if (o.in_python) d[py::str(o.key)] = to_python(get_value(cfg, o));
  });
  return d;
}

}  // namespace flymc::python
