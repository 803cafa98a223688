#pragma once
/// @file format.hpp
/// Numbers as text, one way everywhere (messages, configuration comments, reports): the shortest
/// decimal that reads back to the same double ("0.1", "1e-300"), not printf's rounding to 6 or 17
/// digits.
#include <charconv>
#include <string>

namespace flymc {

inline std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace flymc
