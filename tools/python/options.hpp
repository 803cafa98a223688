#pragma once
// The keyword options of flymc.sample(): one per RunConfig field, under the field's own name,
// set from Python values and read back into a dict (flymc.defaults(), Result.config).
#include <pybind11/pybind11.h>

#include "flymc/core/config.hpp"

namespace flymc::python {

namespace py = pybind11;

/// Sets the fields `options` names. An unknown name is a TypeError (as for any Python function);
/// a value of the wrong type a TypeError; an enum name outside its choices, or an integer outside
/// its C++ type (a negative seed), a flymc::ConfigError naming the option (and the choices), as
/// RunConfig::validate() names the option whose value is out of range.
void apply_options(RunConfig& cfg, const py::dict& options);

/// Every option's value in `cfg`: enums as their names, automatic values as None.
py::dict options_dict(const RunConfig& cfg);

}  // namespace flymc::python
