// `flymc summary DIR`: the posterior table from the chain files of a run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/io/output.hpp"
#include "flymc/io/stan_csv.hpp"
#include "table.hpp"

namespace flymc::cli {
namespace {

/// The bound checks from the chains' end comments (bound_violations, bound_clamps,
/// nonfinite_proposals, slice_failures); a chain without them has not finished.
void print_bound_checks(const std::vector<StanCsv>& chains) {
  unsigned long long violations = 0, clamps = 0, nonfinite = 0, slice_failures = 0;
  std::string violating, unfinished;
  for (const StanCsv& c : chains) {
    auto value = [&](const char* key) -> std::optional<unsigned long long> {
      for (const auto& [k, v] : c.diagnostics)
        if (k == key) {
          char* end = nullptr;
          const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
          if (end != v.c_str() && *end == '\0') return x;
        }
      return std::nullopt;
    };
    const auto bv = value("bound_violations");
    if (!bv) {
      unfinished += (unfinished.empty() ? "" : ", ") + c.config_value("chain_id");
      continue;
    }
    violations += *bv;
    if (*bv > 0) violating += (violating.empty() ? "" : ", ") + c.config_value("chain_id");
    clamps += value("bound_clamps").value_or(0);
    nonfinite += value("nonfinite_proposals").value_or(0);
    slice_failures += value("slice_failures").value_or(0);
  }
  std::printf(
      "\nbound checks: %llu violations (log B_n > log L_n beyond rounding), %llu rounding "
      "clamps, %llu non-finite proposals, %llu slice failures\n",
      violations, clamps, nonfinite, slice_failures);
  if (!unfinished.empty())
    std::printf(
        "(chain %s: no bound-check comments, not counted: the chain has not finished, "
        "or an older flymc wrote it)\n",
        unfinished.c_str());
  if (violations > 0)
    std::fprintf(stderr,
                 "flymc: warning: %llu bound violations in chain %s: the bound is invalid and "
                 "the draws are not exact\n",
                 violations, violating.c_str());
  if (slice_failures > 0)
    std::fprintf(stderr,
                 "flymc: warning: %llu slice-sampling updates gave up without finding a point in "
                 "the slice: the draws may not be exact\n",
                 slice_failures);
}

void run_summary(const std::string& dir) {
  const std::vector<StanCsv> chains = read_run_chains(dir);
  const auto& cols = chains.front().columns;
  std::size_t len = chains.front().draws.size();
  for (const auto& c : chains) len = std::min(len, c.draws.size());
  if (len == 0) throw DataError(dir + ": the chain files hold no kept draws");
  std::vector<ChainDraws> per_col(cols.size(), ChainDraws(chains.size()));
  for (std::size_t c = 0; c < chains.size(); ++c)
    for (std::size_t k = 0; k < cols.size(); ++k) {
      auto& v = per_col[k][c];
      v.resize(len);
      for (std::size_t i = 0; i < len; ++i) v[i] = chains[c].draws[i][k];
    }
  std::printf("%zu chains x %zu draws from %s\n", chains.size(), len, dir.c_str());
  print_summary_table(stdout, summarize_columns(cols, per_col));
  print_bound_checks(chains);
}

}  // namespace

void add_summary_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* s = app.add_subcommand("summary", "Print the posterior summary of a run directory");
  s->add_option("DIR", *dir, "Directory with chain-<k>.csv files")->required();
  s->callback([dir] { run_summary(*dir); });
}

}  // namespace flymc::cli
