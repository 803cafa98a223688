#pragma once
/// @file run_record.hpp
/// A run's figures as one ordered list of named fields: summary.json's "run" object and Python's
/// Result.run are both serialised from it, so the two cannot drift apart (docs/output.md lists
/// the fields). A value is null, a boolean, an integer, a number, a string, a list of numbers or
/// a list of strings or a list of records (auto's candidates, the set-up phases). A number that is
/// not finite is null, as JSON has no NaN.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flymc/io/output.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/sampler.hpp"

namespace flymc {

struct RecordValue;
/// Named fields in order.
using Record = std::vector<std::pair<std::string, RecordValue>>;

struct RecordValue {
  enum class Kind { null, boolean, integer, number, text, numbers, texts, records };
  Kind kind = Kind::null;
  bool boolean = false;
  std::int64_t integer = 0;
  double number = 0.0;
  std::string text;
  std::vector<double> numbers;
  std::vector<std::string> texts;
  std::vector<Record> records;

  static RecordValue null() { return {}; }
  static RecordValue of(bool b);
  static RecordValue of(std::int64_t i);
  static RecordValue of(double v);  ///< null when not finite
  static RecordValue of(std::string s);
  static RecordValue of(std::vector<double> v);
  static RecordValue of(std::vector<std::string> v);
  static RecordValue of(std::vector<Record> r);
};

/// summary.json's "run" object: the run's algorithm and exactness, auto's choice and candidates
/// (`choice` null: no auto), its length and ESS target, its set-up phases and times, its
/// figures (queries, bright data, acceptance, min ESS and max R̂ over `params`), the samplers'
/// resolved settings, its checks (bound violations and clamps, non-finite proposals, slice
/// failures, divergences), the MAP fit and the run's warnings.
Record run_record(const RunResult& r, const std::vector<NamedSummary>& params,
                  const AlgoChoice* choice);

}  // namespace flymc
