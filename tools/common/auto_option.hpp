#pragma once
// A command-line option whose value may be "auto", shared by the flymc CLI, flymc-profile and
// flymc-bench: RunConfig's automatic choices are std::optional values left unset.
#include <CLI/CLI.hpp>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "flymc/core/errors.hpp"

namespace flymc::cli {

/// An option taking "auto" (left unset: a value chosen at set-up) or a number that `valid`
/// accepts (for an int target, a whole number); anything else is a configuration error (exit 78)
/// naming the option and the value.
template <class T>
CLI::Option* add_auto_option(CLI::App* s, const std::string& name, std::optional<T>& target,
                             std::function<bool(double)> valid, const std::string& range,
                             const std::string& help) {
  return s
      ->add_option_function<std::string>(
          name,
          [&target, valid, name, range](const std::string& v) {
            if (v == "auto") {
              target.reset();
              return;
            }
            double x = std::numeric_limits<double>::quiet_NaN();
            try {
              std::size_t used = 0;
              x = std::stod(v, &used);
              if (used != v.size()) x = std::numeric_limits<double>::quiet_NaN();
            } catch (const std::exception&) {
            }
            const bool whole = !std::is_integral_v<T> || (std::abs(x) < 1e9 && x == std::trunc(x));
            if (!std::isfinite(x) || !whole || !valid(x))
              throw ConfigError(name + " must be auto or a number " + range + ", got " + v);
            target = static_cast<T>(x);
          },
          help)
      ->default_str("auto");
}

}  // namespace flymc::cli
