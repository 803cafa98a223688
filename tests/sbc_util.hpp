#pragma once
// The small SBC cases of the samplers that make their own moves (test_pdmp.cpp, test_smh.cpp),
// with validate.hpp (the method and its power in test_sbc.cpp's header): R = 1000 replicates of
// n = 50 rows and d = 3 coefficients, L = 39 kept draws in B = 8 bins (expected count 125 per
// bin), family-wise level 0.001; `thin` iterations per kept draw make the kept draws nearly
// independent (ESS/L > 0.85 and |lag-1| < 0.1, checked). The seeds are fixed, so the cases are
// deterministic.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "flymc/validate/validate.hpp"

namespace flymc::test {

inline SbcOptions small_sbc(Algo algo, long thin, std::uint64_t seed, long warmup) {
  SbcOptions o;
  o.run.algo = algo;
  o.run.warmup = warmup;
  o.run.batch_size = 5;  // lipsbps: its bound Σ‖x_i‖ does not depend on the batch
  o.n = 50;
  o.d = 3;
  o.reps = 1000;
  o.draws = 39;
  o.thin = thin;
  o.bins = 8;
  o.alpha = 0.001;
  o.seed = seed;
  return o;
}

/// Runs the case, prints its time and p-values, and checks calibration, no bound violation and
/// nearly independent kept draws.
inline void check_small_sbc(const SbcOptions& o) {
  const SbcResult r = run_sbc(o);
  std::printf("SBC %s (kernel %s, proposal %s): %.1f s, p-values", to_string(o.run.algo),
              to_string(o.run.kernel), to_string(o.run.proposal), r.seconds);
  for (const RankTest& t : r.quantities) std::printf(" %s %.3g", t.name.c_str(), t.p_value);
  std::printf("\n");
  CHECK_MESSAGE(r.passed(), format_report(r));
  CHECK(r.bound_violations == 0);
  for (const RankTest& t : r.quantities) {
    CAPTURE(t.name);
    CHECK(t.ess_ratio > 0.85);
    CHECK(std::fabs(t.lag1) < 0.1);
  }
}

}  // namespace flymc::test
