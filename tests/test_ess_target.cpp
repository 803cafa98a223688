// Runs sized in effective draws (RunConfig::ess, flymc/mcmc/ess_target.hpp): the check at a
// block's end, the schedule of block ends, and that running in blocks changes no draw: an ESS run
// equals a fixed run of the length it stopped at, at any thread count, and a stopped and resumed
// ESS run equals an uninterrupted one.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/io/output.hpp"
#include "flymc/mcmc/ess_target.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "test_util.hpp"

using namespace flymc;
namespace fs = std::filesystem;

namespace {

/// `chains` chains of `n` independent N(0, 1) draws in `dim` coordinates, row-major.
std::vector<std::vector<double>> iid_chains(int chains, std::size_t n, std::size_t dim) {
  Rng rng(5, 1);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(chains));
  for (auto& c : out)
    for (std::size_t i = 0; i < n * dim; ++i) c.push_back(rng.normal());
  return out;
}

std::vector<const std::vector<double>*> pointers(const std::vector<std::vector<double>>& v) {
  std::vector<const std::vector<double>*> p;
  for (const auto& x : v) p.push_back(&x);
  return p;
}

/// The smallest of every parameter's bulk and tail ESS, and the largest R̂, of a run's draws.
TargetStatus diagnose(const RunResult& r) {
  TargetStatus s;
  s.min_ess_bulk = s.min_ess_tail = 1e300;
  for (std::size_t j = 0; j < r.dim; ++j) {
    const auto x = r.coordinate(j);
    s.min_ess_bulk = std::min(s.min_ess_bulk, ess_bulk(x));
    s.min_ess_tail = std::min(s.min_ess_tail, ess_tail(x));
    s.max_rhat = std::max(s.max_rhat, rhat(x));
  }
  return s;
}

void check_same_draws(const RunResult& a, const RunResult& b) {
  REQUIRE(a.chains.size() == b.chains.size());
  for (std::size_t c = 0; c < a.chains.size(); ++c) {
    CAPTURE(c);
    CHECK(a.chains[c].kept == b.chains[c].kept);
    CHECK(a.chains[c].draws == b.chains[c].draws);
    CHECK(a.chains[c].lp == b.chains[c].lp);
    CHECK(a.chains[c].accept_rate == b.chains[c].accept_rate);
    CHECK(a.chains[c].counters.queries == b.chains[c].counters.queries);
  }
}

RunConfig ess_config(Algo algo, KernelKind kernel, double ess) {
  RunConfig cfg;
  cfg.algo = algo;
  cfg.kernel = kernel;
  cfg.metric = Metric::dense;
  cfg.chains = 3;
  cfg.warmup = 300;
  cfg.iters = 200000;  // the cap: far above what the target needs
  cfg.ess = ess;
  cfg.seed = 17;
  return cfg;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("ESS target: independent draws meet a target below their count, not one above it") {
    const auto draws = iid_chains(4, 600, 3);  // 2,400 independent draws a coordinate
    RunConfig cfg;
    cfg.ess = 1000;
    TargetStatus s = target_status(pointers(draws), 3, cfg, 600);
    CAPTURE(s.min_ess_bulk);
    CAPTURE(s.min_ess_tail);
    // Bulk ESS of 2,400 iid draws is about 2,400 (its estimate's sd is a few percent); the tail
    // ESS, of quantile indicators, about as much.
    CHECK(s.min_ess_bulk > 1800);
    CHECK(s.min_ess_tail > 1500);
    CHECK(s.max_rhat < kTargetRhat);
    CHECK(s.reached);
    cfg.ess = 5000;
    CHECK_FALSE(target_status(pointers(draws), 3, cfg, 600).reached);
    // Only the first 100 iterations a chain count: 400 draws, below a target of 1,000.
    cfg.ess = 1000;
    s = target_status(pointers(draws), 3, cfg, 100);
    CHECK(s.min_ess_bulk < 600);
    CHECK_FALSE(s.reached);
    // Thinning by 3: 300 iterations are 100 kept draws a chain.
    cfg.thin = 3;
    CHECK(target_status(pointers(draws), 3, cfg, 300).min_ess_bulk ==
          doctest::Approx(s.min_ess_bulk));
  }

  TEST_CASE("ESS target: a constant coordinate never meets it, and stuck chains fail on R-hat") {
    auto draws = iid_chains(2, 800, 2);
    for (std::size_t i = 0; i < 800; ++i) draws[0][i * 2 + 1] = draws[1][i * 2 + 1] = 0.5;
    RunConfig cfg;
    cfg.ess = 100;
    CHECK_FALSE(target_status(pointers(draws), 2, cfg, 800).reached);
    auto shifted = iid_chains(2, 800, 1);
    for (double& v : shifted[1]) v += 3.0;  // two chains in different places
    const TargetStatus s = target_status(pointers(shifted), 1, cfg, 800);
    CHECK(s.max_rhat > 1.5);
    CHECK_FALSE(s.reached);
  }

  TEST_CASE("ESS target: block ends grow by a tenth to a doubling, toward the predicted length") {
    RunConfig cfg;
    cfg.ess = 1000;
    cfg.chains = 4;
    cfg.iters = 1'000'000;
    CHECK(first_block_end(cfg) == 250);
    cfg.chains = 40;
    CHECK(first_block_end(cfg) == kMinBlock);
    cfg.ess = 1e9;
    CHECK(first_block_end(cfg) == kMaxFirstBlock);
    cfg.ess = 1000;
    TargetStatus s;
    s.sampling_iters = 1000;
    s.min_ess_bulk = 500;
    s.min_ess_tail = 400;  // the smaller decides: 2.5 times as many iterations, capped at 2
    CHECK(next_block_end(cfg, s) == 2000);
    s.min_ess_bulk = s.min_ess_tail = 800;  // 1.25 × 1.1
    CHECK(next_block_end(cfg, s) == 1375);
    s.min_ess_bulk = s.min_ess_tail = 990;  // nearly there: at least a tenth more
    CHECK(next_block_end(cfg, s) == 1112);
    s.min_ess_bulk = s.min_ess_tail = 2000;  // ESS there, R-hat not yet
    CHECK(next_block_end(cfg, s) == 1500);
    s.min_ess_bulk = s.min_ess_tail = 0;  // nothing measured: double
    CHECK(next_block_end(cfg, s) == 2000);
    cfg.iters = 1200;  // the cap
    CHECK(next_block_end(cfg, s) == 1200);
    cfg.iters = 50;
    CHECK(first_block_end(cfg) == 50);
  }

  TEST_CASE("ESS target: the options are checked") {
    RunConfig cfg;
    cfg.ess = -1;
    CHECK_THROWS_AS(cfg.validate(), ConfigError);
    cfg.ess = 0;
    cfg.max_seconds = -5;
    CHECK_THROWS_AS(cfg.validate(), ConfigError);
    cfg.max_seconds = 5;
    cfg.ess = 100;
    CHECK_NOTHROW(cfg.validate());
    cfg.algo = Algo::sgld;  // an approximate subsampling sampler runs a fixed length
    CHECK_THROWS_WITH_AS(cfg.validate(), doctest::Contains("ESS target"), ConfigError);
    cfg.algo = Algo::zigzag_cv;
    CHECK_NOTHROW(cfg.validate());
  }
}

TEST_SUITE("threaded") {
  TEST_CASE("an ESS run with give_up_cost ends where its ESS rate cannot reach the target") {
    // Auto's pilots stop paying once they cannot win (choose_algo.hpp): the rule extrapolates
    // the bulk ESS in proportion to the sampling, and only cuts, like max_seconds.
    auto ds = test::logistic_data(1500, 4, 3);
    RunConfig cfg = ess_config(Algo::full, KernelKind::nuts, 1e7);
    cfg.threads = 1;
    cfg.give_up_cost = 1e-9;  // any sampling at all extrapolates past it
    const RunResult r = run(cfg, ds);
    CHECK_FALSE(r.target_reached);
    CHECK(r.target_timed_out);
    CHECK(r.config.iters == first_block_end(cfg));
    // A target the run meets in its blocks is not given up, whatever the limit's size once
    // the ESS is there; and without the limit the same run goes on to it.
    cfg.ess = 400;
    cfg.give_up_cost = 1e9;
    const RunResult met = run(cfg, ds);
    CHECK(met.target_reached);
    cfg.give_up_cost = 0.0;
    check_same_draws(met, run(cfg, ds));
  }

  TEST_CASE("an ESS run meets its target and equals a fixed run of the length it stopped at") {
    auto ds = test::logistic_data(1500, 4, 3);
    struct Case {
      const char* name;
      Algo algo;
      KernelKind kernel;
      // Zig-Zag's proposal times are absolute, so its path in blocks is the path of one run;
      // BPS draws a fresh proposal at a block's end (exact, but another path).
      bool same_as_fixed = true;
    };
    const Case cases[] = {{"full nuts", Algo::full, KernelKind::nuts},
                          {"flymc rwmh", Algo::flymc, KernelKind::rwmh},
                          {"smh", Algo::smh, KernelKind::rwmh},
                          {"zigzag-cv", Algo::zigzag_cv, KernelKind::rwmh},
                          {"bps", Algo::bps, KernelKind::rwmh, false}};
    for (const Case& k : cases) {
      const std::string name = k.name;
      CAPTURE(name);
      RunConfig cfg = ess_config(k.algo, k.kernel, 400);
      if (k.algo != Algo::full) cfg.metric = Metric::automatic;
      cfg.threads = 1;
      const RunResult r = run(cfg, ds);
      CHECK(r.target_reached);
      CHECK_FALSE(r.target_timed_out);
      CHECK(r.config.iters < cfg.iters);
      CHECK(r.config.iters >= first_block_end(cfg));
      const TargetStatus d = diagnose(r);
      CAPTURE(d.min_ess_bulk);
      CAPTURE(d.min_ess_tail);
      CHECK(d.min_ess_bulk >= 400);
      CHECK(d.min_ess_tail >= 400);
      CHECK(d.max_rhat <= kTargetRhat);
      CHECK(r.target.min_ess_bulk == doctest::Approx(d.min_ess_bulk));
      // Blocks change no draw: the fixed run of the same length gives the same chains.
      RunConfig fixed = r.config;
      fixed.ess = 0;
      if (k.same_as_fixed) check_same_draws(r, run(fixed, ds));
      // Nor does the thread count.
      cfg.threads = 2;
      check_same_draws(r, run(cfg, ds));
    }
  }

  TEST_CASE("an ESS run stopped inside a block and at a block's end resumes to the same draws") {
    auto ds = test::logistic_data(1500, 4, 4);
    for (const Algo algo : {Algo::full, Algo::smh}) {
      CAPTURE(to_string(algo));
      RunConfig cfg =
          ess_config(algo, algo == Algo::full ? KernelKind::nuts : KernelKind::rwmh, 600);
      cfg.threads = 2;
      const test::TempDir ref_dir("ess-ref"), dir("ess-resumed");
      const RunResult ref =
          run(cfg, ds, stan_csv_sinks(ref_dir.path(), cfg, {{"data", "synthetic"}}));
      REQUIRE(ref.target_reached);
      REQUIRE(ref.config.iters > first_block_end(cfg));  // more than one block
      CheckpointOptions ck;
      ck.store = checkpoint_directory(dir.path() + "/checkpoint");
      ck.every = 64;
      FaultInjection hooks;
      const SinkFactory sinks = stan_csv_sinks(dir.path(), cfg, {{"data", "synthetic"}});
      // Inside the first block, then exactly at its end (before its check), then done.
      for (const long stop : {cfg.warmup + 77, cfg.warmup + first_block_end(cfg), -1L}) {
        hooks.stop_at = stop;
        const RunResult r = run(cfg, ds, sinks, nullptr, &ck, hooks);
        ck.resume = true;
        CHECK(r.stopped == (stop >= 0));
        if (stop >= 0) continue;
        CHECK(r.target_reached);
        CHECK(r.config.iters == ref.config.iters);
        check_same_draws(ref, r);
        for (int c = 1; c <= cfg.chains; ++c) {
          const std::string file = "/chain-" + std::to_string(c) + ".csv";
          CHECK(test::read_without_timing(dir.path() + file) ==
                test::read_without_timing(ref_dir.path() + file));
        }
      }
    }
  }
}
