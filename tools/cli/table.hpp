#pragma once
// The posterior summary table printed by `flymc sample` and `flymc summary`.
#include <cstdio>
#include <vector>

#include "flymc/io/output.hpp"

namespace flymc::cli {

inline void print_summary_table(std::FILE* f, const std::vector<NamedSummary>& rows) {
  std::fprintf(f, "%-14s %11s %10s %10s %11s %11s %11s %9s %9s %7s\n", "name", "mean", "sd", "mcse",
               "5%", "50%", "95%", "ess_bulk", "ess_tail", "rhat");
  for (const auto& r : rows) {
    const auto& s = r.s;
    std::fprintf(f, "%-14s %11.4g %10.4g %10.3g %11.4g %11.4g %11.4g %9.0f %9.0f %7.3f\n",
                 r.name.c_str(), s.mean, s.sd, s.mcse_mean, s.q5, s.q50, s.q95, s.ess_bulk,
                 s.ess_tail, s.rhat);
  }
}

}  // namespace flymc::cli
