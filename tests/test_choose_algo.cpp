// --algo auto's library side (flymc/mcmc/choose_algo.hpp): the subset the regular pilot runs on,
// and a choice consistent with its own prediction on both of its paths (all rows, and a subset
// priced at the full data's measured query time).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "flymc/mcmc/choose_algo.hpp"
#include "test_util.hpp"

using namespace flymc;

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
    RunConfig cfg;
    cfg.kernel = KernelKind::mala;
    cfg.chains = 2;
    cfg.threads = 1;
    AutoOptions opt;
    opt.flymc_warmup = opt.regular_warmup = 100;
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
}
