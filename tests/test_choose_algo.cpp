// --algo auto's library side (flymc/mcmc/choose_algo.hpp): the subset the regular pilot runs on,
// and a choice consistent with its own prediction on both of its paths (all rows, and a subset
// priced at the full data's measured query time).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "flymc/mcmc/choose_algo.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {
/// Two chains of `kernel` on one thread, and pilots with 100 warm-up iterations each.
RunConfig pilot_test_config(KernelKind kernel) {
  RunConfig cfg;
  cfg.kernel = kernel;
  cfg.chains = 2;
  cfg.threads = 1;
  return cfg;
}
AutoOptions short_warmups() {
  AutoOptions opt;
  opt.flymc_warmup = opt.regular_warmup = 100;
  return opt;
}
}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("subset_rows copies the chosen rows, their padding and their labels") {
    const auto data = test::logistic_data(50, 3, 2);
    const std::vector<Index> rows = {0, 7, 49};
    const auto sub = subset_rows(*data, rows);
    REQUIRE(sub->n() == 3);
    CHECK(sub->d() == data->d());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(sub->y()[i] == data->y()[rows[i]]);
      for (std::size_t j = 0; j < data->stride(); ++j)
        CHECK(sub->row(i)[j] == data->row(rows[i])[j]);
    }
  }

  TEST_CASE("choose_algo picks the algorithm its pilots predict faster, on all rows or a subset") {
    const auto data = test::logistic_data(4000, 3, 11);
    const RunConfig cfg = pilot_test_config(KernelKind::mala);
    AutoOptions opt = short_warmups();
    opt.flymc_iters = opt.regular_iters = 150;
    for (std::size_t rows : {std::size_t{100000}, std::size_t{1000}}) {
      CAPTURE(rows);
      opt.regular_rows = rows;
      const AlgoChoice c = choose_algo(cfg, data, opt);
      CHECK(c.regular_pilot_rows == std::min<std::size_t>(rows, 4000));
      CHECK(std::isfinite(c.flymc_ess_per_second));
      CHECK(std::isfinite(c.regular_ess_per_second));
      CHECK(c.flymc_ess_per_second > 0.0);
      CHECK(c.regular_ess_per_second > 0.0);
      CHECK(c.predicted_speedup ==
            doctest::Approx(c.flymc_ess_per_second / c.regular_ess_per_second));
      CHECK((c.algo == Algo::flymc) == (c.predicted_speedup >= 1.0));
      CHECK(c.pilot_seconds > 0.0);
    }
  }

  TEST_CASE("choose_algo lengthens a pilot too short to estimate its ESS, within its time limit") {
    // Replays Table 1's logistic row with RW-MH: pilots of a few hundred iterations made under one
    // effective draw each, so their ESS/s was one draw over their run times and --algo auto
    // chose regular MCMC where FlyMC was several times faster.
    const auto data = test::logistic_data(4000, 3, 11);
    const RunConfig cfg = pilot_test_config(KernelKind::rwmh);
    AutoOptions opt = short_warmups();
    opt.flymc_iters = 2;  // RW-MH's FlyMC pilot runs 10× more: 20 iterations, as the regular one
    opt.regular_iters = 20;
    opt.min_pilot_ess = 10.0;
    opt.max_pilot_seconds = 0.0;  // no time for a second run: the pilots stay short, and say so
    const AlgoChoice short_pilots = choose_algo(cfg, data, opt);
    CHECK(short_pilots.flymc_pilot_iters == 20);
    CHECK(short_pilots.regular_pilot_iters == 20);
    CHECK(std::min(short_pilots.flymc_pilot_ess, short_pilots.regular_pilot_ess) < 10.0);
    CHECK(short_pilots.pilots_short);

    opt.max_pilot_seconds = 1e6;
    const AlgoChoice c = choose_algo(cfg, data, opt);
    CHECK(c.flymc_pilot_ess >= 10.0);
    CHECK(c.regular_pilot_ess >= 10.0);
    CHECK_FALSE(c.pilots_short);
    // Each pilot that was short ran again with 4^k times the iterations.
    for (long iters : {c.flymc_pilot_iters, c.regular_pilot_iters}) {
      CHECK(iters >= 20);
      long k = iters / 20;
      while (k % 4 == 0) k /= 4;
      CHECK(k == 1);
      CHECK(iters % 20 == 0);
    }
    CHECK(c.flymc_pilot_iters + c.regular_pilot_iters > 40);
    CHECK((c.algo == Algo::flymc) == (c.predicted_speedup >= 1.0));
  }
}
