#pragma once
/// @file errors.hpp
/// Exception types. Configuration and data problems are detected before sampling starts and
/// thrown as these; the CLI maps them to sysexits codes (64 usage, 65 data, 70 software, 78
/// config).
#include <stdexcept>
#include <string>

namespace flymc {

/// Base of every flymc exception; `exit_code()` is the sysexits code the CLI returns.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, int code = 70) : std::runtime_error(what), code_(code) {}
  int exit_code() const noexcept { return code_; }

 private:
  int code_;
};

/// Malformed or unusable input data (EX_DATAERR = 65). Messages name file, line and field.
class DataError : public Error {
 public:
  explicit DataError(const std::string& what) : Error(what, 65) {}
};

/// Invalid command-line usage (EX_USAGE = 64).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what, 64) {}
};

/// Invalid configuration values, e.g. q outside (0, 1] (EX_CONFIG = 78).
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& what) : Error(what, 78) {}
};

/// A model's bound or envelope found violated while sampling (EX_SOFTWARE = 70): the family's
/// constant is wrong, so the draws would not be the posterior's. The message names the family,
/// the datum and its predictor (RunConfig::on_bound_violation).
class BoundViolationError : public Error {
 public:
  explicit BoundViolationError(const std::string& what) : Error(what, 70) {}
};

}  // namespace flymc
