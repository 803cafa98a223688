#pragma once
// Shared oracle of the loader fuzz targets. Each input is parsed with every LabelDomain, once with
// the default piece sizes and once with pieces of a few bytes (every block, carry-over and
// parallel-chunk boundary then falls inside the input). The only exception allowed is
// flymc::DataError; all parses of one input must agree (the same data, or the same message, apart
// from the label checks), and a loaded data set must be finite, zero padded and have labels in its
// domain. Any violation aborts, which libFuzzer reports as a crash.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "flymc/core/errors.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/data/loaders.hpp"

namespace flymc::fuzz {

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "fuzz oracle: %s\n", what.c_str());
  std::abort();
}

struct Outcome {
  std::optional<Dataset> ds;
  std::string error;  // DataError message when !ds
};

template <class Parse>
Outcome attempt(Parse&& parse) {
  Outcome o;
  try {
    o.ds.emplace(parse());
  } catch (const DataError& e) {
    o.error = e.what();
    if (o.error.empty()) die("empty DataError message");
  } catch (const std::exception& e) {
    die(std::string("exception other than DataError: ") + e.what());
  }
  return o;
}

inline bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

inline void check_same(const Outcome& a, const Outcome& b, const char* what) {
  if (a.ds.has_value() != b.ds.has_value())
    die(std::string(what) + ": one parse failed, the other did not: " + a.error + b.error);
  if (!a.ds) {
    if (a.error != b.error)
      die(std::string(what) + ": messages differ:\n" + a.error + "\n" + b.error);
    return;
  }
  const Dataset &x = *a.ds, &y = *b.ds;
  if (x.n() != y.n() || x.d() != y.d() || x.stride() != y.stride())
    die(std::string(what) + ": shapes differ");
  for (std::size_t i = 0; i < x.n(); ++i) {
    if (!same_bits(x.y()[i], y.y()[i])) die(std::string(what) + ": labels differ");
    for (std::size_t j = 0; j < x.stride(); ++j)
      if (!same_bits(x.row(i)[j], y.row(i)[j])) die(std::string(what) + ": features differ");
  }
}

inline void check_valid(const Dataset& ds, LabelDomain dom) {
  if (ds.n() == 0 || ds.d() == 0) die("empty data set loaded");
  if (ds.y().size() != ds.n()) die("label count differs from the row count");
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const double t = ds.y()[i];
    if (!std::isfinite(t)) die("non-finite label");
    if (dom == LabelDomain::binary && t != 1.0 && t != -1.0) die("binary label not in {-1,+1}");
    if (dom == LabelDomain::categorical && (!(t >= 0.0) || t != std::floor(t) || std::signbit(t)))
      die("categorical label is not a class index");
    for (std::size_t j = 0; j < ds.stride(); ++j) {
      const double v = ds.row(i)[j];
      if (j < ds.d() ? !std::isfinite(v) : !same_bits(v, 0.0)) die("bad feature or padding");
    }
  }
}

/// Runs the oracle; `parse(text, name, labels, blocks)` is detail::parse_csv_blocks or
/// detail::parse_npy_blocks, `plain` parse_csv or parse_npy. A loaded data set's source() must
/// be `source`, or the name the parsers are given when it is empty.
template <class ParseBlocks, class Parse>
void check_input(std::string_view text, ParseBlocks&& parse_blocks, Parse&& parse,
                 const std::string& source = {}) {
  const std::string name = "fuzz-input";
  detail::LoaderBlocks tiny;
  tiny.io_bytes = 7;
  tiny.parse_bytes = 3;
  tiny.npy_bytes = 1;  // one row per block: the parallel conversion path
  std::optional<Outcome> any;
  for (LabelDomain dom : {LabelDomain::any, LabelDomain::binary, LabelDomain::categorical}) {
    const Outcome big = attempt([&] { return parse(text, name, dom); });
    const Outcome small = attempt([&] { return parse_blocks(text, name, dom, tiny); });
    check_same(big, small, "default vs tiny pieces");
    if (big.ds) {
      check_valid(*big.ds, dom);
      if (big.ds->source() != (source.empty() ? name : source))
        die("source() is not the name given");
    }
    if (dom == LabelDomain::any) {
      any.emplace(attempt([&] { return parse(text, name, dom); }));
      check_same(big, *any, "repeated parse");
    } else if (!any->ds) {
      // A parse error comes before any label check, so every domain reports it.
      check_same(*any, big, "any vs label domain");
    } else if (big.ds) {
      // Same features; labels equal, except {0,1} mapped to {-1,+1} for binary.
      const Dataset &a = *any->ds, &b = *big.ds;
      if (a.n() != b.n() || a.d() != b.d()) die("shape depends on the label domain");
      for (std::size_t i = 0; i < a.n(); ++i) {
        for (std::size_t j = 0; j < a.stride(); ++j)
          if (!same_bits(a.row(i)[j], b.row(i)[j])) die("features depend on the label domain");
        const double t = a.y()[i];
        const double want = dom == LabelDomain::binary && t == 0.0 ? -1.0 : t + 0.0;
        if (b.y()[i] != want) die("label changed by the domain check");
      }
    }
  }
}

}  // namespace flymc::fuzz
