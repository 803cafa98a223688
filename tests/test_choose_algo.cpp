// --algo auto's library side (flymc/mcmc/auto/choose_algo.hpp): the subset the regular pilot runs
// on, and a choice consistent with its own prediction on both of its paths (all rows, and a subset
// priced at the full data's measured query time).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/front_door.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {
/// Two chains of `kernel` on one thread, and pilots with 100 warm-up iterations each.
RunConfig pilot_test_config(KernelKind kernel) {
  RunConfig cfg = flymc::test::fixed_config();
  cfg.kernel = kernel;
  cfg.chains = 2;
  cfg.threads = 1;
  return cfg;
}
AutoOptions short_warmups() {
  AutoOptions opt;
  opt.flymc_warmup = opt.regular_warmup = 100;
  // These tests weigh every candidate's pilot; the rule that spares pilots which cannot pay
  // for themselves has a test of its own.
  opt.fixed_pays_for_itself = false;
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

  TEST_CASE("auto_candidates: every exact sampler that fits the model, with the user's lengths") {
    const auto data = test::logistic_data(500, 3, 2);
    RunConfig cfg = pilot_test_config(KernelKind::slice);
    cfg.seed = 77;
    cfg.iters = 1234;
    const std::vector<AutoCandidate> c = auto_candidates(cfg, *data);
    std::vector<std::string> names;
    for (const AutoCandidate& a : c) names.push_back(a.name);
    // The sampler table's set-ups, regular MCMC's first (samplers.hpp).
    CHECK(names == std::vector<std::string>{"regular-nuts-laplace", "regular-nuts", "regular-pcn",
                                            "flymc-nuts-fly", "zigzag-cv", "smh-pcn", "smh-pcn3"});
    for (const AutoCandidate& a : c) {
      CAPTURE(a.name);
      CHECK(a.skipped.empty());
      CHECK(is_exact(a.config.algo));
      CHECK(a.config.seed == 77);
      CHECK(a.config.iters == 1234);
      CHECK(a.config.chains == 2);
    }
    CHECK(c[0].config.metric == Metric::dense);
    CHECK_FALSE(c[0].config.adapt_metric);  // the Laplace covariance, fixed
    CHECK(c[1].config.adapt_metric);
    CHECK(c[2].config.kernel == KernelKind::pcn);
    CHECK(c[3].config.metric == Metric::fly);
    CHECK(c[3].config.slack_scale == 1.0);

    // Zig-Zag's cost model rules it out in 20 dimensions; it takes logistic regression only, so
    // robust regression keeps the others.
    for (const AutoCandidate& a : auto_candidates(cfg, *test::logistic_data(100, 20, 2)))
      CHECK(a.skipped.empty() == (a.name != "zigzag-cv"));
    // A checkpointed run keeps only the samplers that can checkpoint (FlyMC, regular MCMC, SMH).
    for (const AutoCandidate& a : auto_candidates(cfg, *data, true)) {
      CAPTURE(a.name);
      CHECK(a.skipped.empty() ==
            (uses_theta_kernel(a.config.algo) || a.name == "smh-pcn" || a.name == "smh-pcn3"));
    }
    RunConfig robust = cfg;
    robust.model = ModelKind::robust;
    const auto r = auto_candidates(robust, *test::robust_data(200, 3, 1));
    for (const AutoCandidate& a : r) {
      CAPTURE(a.name);
      // (its M4 admits third-order SMH, its M2 Zig-Zag with control variates)
      CHECK(a.skipped.empty());
    }
  }

  TEST_CASE("choose_algo runs the third-order SMH pilot only where its tensor pass can pay") {
    // The pass costs about d³/6 per row against the second-order pass's d(d + 1)/2: worth a
    // pilot only when it is shorter than the second-order run's own iterations.
    const auto data = test::logistic_data(4000, 6, 11);
    RunConfig cfg = pilot_test_config(KernelKind::mala);
    AutoOptions opt = short_warmups();
    opt.flymc_iters = opt.regular_iters = opt.pdmp_iters = opt.pcn_iters = 100;
    opt.smh_iters = 300;
    auto third = [](const AlgoChoice& c) {
      for (const AutoCandidate& a : c.candidates)
        if (a.name == "smh-pcn3") return a;
      FAIL("no smh-pcn3 candidate");
      return AutoCandidate{};
    };
    cfg.warmup = 0;
    cfg.iters = 1;  // a one-iteration run: no pass can pay
    const AutoCandidate short_run = third(choose_algo(cfg, data, opt));
    CHECK(short_run.skipped.find("tensor pass") != std::string::npos);
    cfg.iters = 100000000;  // a long run: the pass is paid back
    const AutoCandidate long_run = third(choose_algo(cfg, data, opt));
    CAPTURE(long_run.skipped);
    CHECK(long_run.skipped.empty());
    CHECK(long_run.ess_per_second > 0.0);
  }

  TEST_CASE("choose_algo picks the candidate its pilots predict fastest, on all rows or a subset") {
    const auto data = test::logistic_data(4000, 3, 11);
    const RunConfig cfg = pilot_test_config(KernelKind::mala);
    AutoOptions opt = short_warmups();
    opt.flymc_iters = opt.regular_iters = 150;
    opt.smh_iters = opt.pdmp_iters = opt.pcn_iters = 300;
    opt.skip_beaten_regular = false;  // (checked below)
    for (std::size_t rows : {std::size_t{100000}, std::size_t{1000}}) {
      CAPTURE(rows);
      opt.regular_rows = rows;
      const AlgoChoice c = choose_algo(cfg, data, opt);
      double best = 0.0, best_regular = 0.0;
      for (const AutoCandidate& a : c.candidates) {
        CAPTURE(a.name);
        CAPTURE(a.skipped);
        if (a.name == "smh-pcn3" && !a.skipped.empty()) {  // (its cost rule: checked below)
          CHECK(a.skipped.find("tensor pass") != std::string::npos);
          continue;
        }
        REQUIRE(a.skipped.empty());
        CHECK(std::isfinite(a.ess_per_second));
        CHECK(a.ess_per_second > 0.0);
        CHECK(a.pilot_seconds > 0.0);
        const bool regular = a.config.algo == Algo::full;
        CHECK(a.pilot_rows == (regular ? std::min<std::size_t>(rows, 4000) : 4000));
        best = std::max(best, a.ess_per_second);
        if (regular) best_regular = std::max(best_regular, a.ess_per_second);
      }
      CHECK(c.best().ess_per_second == best);
      CHECK(c.algo() == c.best().config.algo);
      CHECK(c.predicted_speedup == doctest::Approx(best / best_regular));
      CHECK(c.pilot_seconds > 0.0);
      // One MAP fit on all the rows, shared by the pilots there and handed to the run: the
      // model's own, bit for bit.
      REQUIRE(c.map != nullptr);
      const MapResult own = LogisticModel(data, cfg).find_map();
      CHECK(c.map->theta == own.theta);
      CHECK(c.map->covariance == own.covariance);
    }
    // By default the subsampling pilots run first, and a regular pilot that cannot beat the best
    // of them (its bound: one full-data query per iteration) is skipped, saying why; the
    // predicted speedup is then over that bound, so above 1.
    opt.skip_beaten_regular = true;
    opt.regular_rows = 1000;
    const AlgoChoice pruned = choose_algo(cfg, data, opt);
    for (const AutoCandidate& a : pruned.candidates) {
      CAPTURE(a.name);
      CAPTURE(a.skipped);
      if (a.config.algo != Algo::full || a.skipped.empty()) continue;
      CHECK(a.skipped.find("reads all 4000 rows per iteration: at most") != std::string::npos);
      CHECK(pruned.best().config.algo != Algo::full);
      CHECK(pruned.predicted_speedup > 1.0);
    }
    // A fit of another model's shape is refused, not used.
    RunConfig one = cfg;
    one.warmup = 10;
    one.iters = 10;
    auto wrong = std::make_shared<MapResult>();
    wrong->theta = Vec::Zero(2);
    wrong->covariance = Mat::Identity(2, 2);
    for (const Algo algo : {Algo::flymc, Algo::smh}) {
      one.algo = algo;
      CHECK_THROWS_AS(run(one, data, {}, nullptr, nullptr, {}, Precomputed{wrong, nullptr}),
                      ConfigError);
    }
  }

  TEST_CASE("--max-seconds spent by the first pilot starts no other, and the run gets the rest") {
    // deadline() floors the time left at a microsecond (a run's max_seconds must be positive),
    // so the rule that stops the pilots once it is spent must read the clock itself.
    const auto data = test::logistic_data(4000, 3, 11);
    RunConfig cfg = pilot_test_config(KernelKind::nuts);
    cfg.ess = 200;
    cfg.max_seconds = 1e-3;  // the first pilot's first block outlasts it
    AutoOptions opt;
    const AlgoChoice c = choose_algo(cfg, data, opt);
    int ran = 0, spent = 0;
    for (const AutoCandidate& a : c.candidates) {
      ran += a.skipped.empty() ? 1 : 0;
      spent += a.skipped.find("--max-seconds was spent") != std::string::npos ? 1 : 0;
    }
    CHECK(ran == 1);
    CHECK(spent >= 1);
    CHECK(c.best().config.max_seconds > 0.0);
    CHECK(c.best().config.max_seconds <= 1e-3);
  }

  TEST_CASE("for a fixed length too, a later pilot that cannot pay for itself is not run") {
    // Replays issue 51's 10^7-row run with --iters 1000: FlyMC's pilot (its statistics pass and
    // a Gibbs pass per chain) cost several times SMH's whole predicted run, and ran.
    const auto data = test::logistic_data(4000, 3, 11);
    RunConfig cfg = pilot_test_config(KernelKind::mala);
    cfg.warmup = 10;
    cfg.iters = 10;  // a run far cheaper than any second pilot's set-up
    AutoOptions opt;
    const AlgoChoice c = choose_algo(cfg, data, opt);
    int ran = 0, spared = 0;
    for (const AutoCandidate& a : c.candidates) {
      CAPTURE(a.name);
      CAPTURE(a.skipped);
      ran += a.skipped.empty() ? 1 : 0;
      spared += a.skipped.find("could not pay for itself") != std::string::npos ? 1 : 0;
    }
    CHECK(ran >= 1);
    CHECK(spared >= 1);
    CHECK(c.best().skipped.empty());
    // Without the rule every candidate the model takes runs its pilot.
    opt.fixed_pays_for_itself = false;
    for (const AutoCandidate& a : choose_algo(cfg, data, opt).candidates)
      CHECK(a.skipped.find("could not pay for itself") == std::string::npos);
  }

  TEST_CASE("choose_algo lengthens a pilot too short to estimate its ESS, within its time budget") {
    // Replays Table 1's logistic row with RW-MH: pilots of a few hundred iterations made under one
    // effective draw each, so their ESS/s was one draw over their run times and --algo auto
    // chose regular MCMC where FlyMC was several times faster.
    const auto data = test::logistic_data(4000, 3, 11);
    const RunConfig cfg = pilot_test_config(KernelKind::rwmh);
    AutoOptions opt = short_warmups();
    opt.smh_warmup = opt.pdmp_warmup = 100;
    opt.pcn_warmup = 100;
    opt.flymc_iters = opt.regular_iters = opt.smh_iters = opt.pdmp_iters = opt.pcn_iters = 2;
    opt.min_pilot_ess = 10.0;
    opt.budget_seconds = 0.0;  // no time for a second run: the pilots stay short, and say so
    const AlgoChoice short_pilots = choose_algo(cfg, data, opt);
    for (const AutoCandidate& a : short_pilots.candidates) {
      CAPTURE(a.name);
      CHECK(a.pilot_iters == 2);
      CHECK(a.rough == (a.pilot_ess < 10.0));
    }
    CHECK(short_pilots.pilots_short);

    opt.budget_seconds = 1e6;
    const AlgoChoice c = choose_algo(cfg, data, opt);
    CHECK_FALSE(c.pilots_short);
    // Each pilot that was short ran again with 4^k times the iterations.
    for (const AutoCandidate& a : c.candidates) {
      CAPTURE(a.name);
      REQUIRE(a.skipped.empty());
      REQUIRE(a.pilot_iters > 0);
      CHECK(a.pilot_ess >= 10.0);
      CHECK_FALSE(a.rough);
      CHECK(a.pilot_iters % 2 == 0);
      long k = a.pilot_iters / 2;
      while (k % 4 == 0) k /= 4;
      CHECK(k == 1);
    }
  }

  TEST_CASE("auto for an ESS target starts the chosen run where its pilot's chains ended") {
    const auto data = test::logistic_data(4000, 3, 11);
    RunConfig cfg = pilot_test_config(KernelKind::nuts);
    cfg.chains = 3;  // beyond the one pilot chain (one thread): later rounds of starts
    cfg.ess = 200;
    AutoOptions opt;
    const AlgoChoice c = choose_algo(cfg, data, opt);
    const AutoCandidate& b = c.best();
    CAPTURE(b.name);
    REQUIRE_FALSE(b.rough);
    REQUIRE(c.map != nullptr);
    const std::vector<Vec>& s = c.map->chain_starts;
    REQUIRE(s.size() == 3);
    CHECK(s == b.pilot_states);
    for (std::size_t i = 0; i < s.size(); ++i) {
      CHECK(s[i].size() == 3);
      CHECK(s[i].allFinite());
      CHECK(s[i] != c.map->theta);
      for (std::size_t j = 0; j < i; ++j) CHECK(s[i] != s[j]);  // no two chains start together
    }
    CHECK(b.config.warmup <= opt.reuse_warmup);
    CHECK(c.why.find("start where its pilot's ended") != std::string::npos);
    // Without the handover the chains start at θ_MAP plus jitter, as a run by hand does.
    opt.reuse_state_warmup = -1;
    CHECK(choose_algo(cfg, data, opt).map->chain_starts.empty());
    // A process that ran no pilot (another MPI process of the job) takes the same run from the
    // front door's message: the candidate, its step size, ρ, warm-up and time left, exactly.
    SamplePlan plan;
    plan.cfg = cfg;
    const AlgoChoice again = choose_algo(cfg, data, AutoOptions{});
    double speedup = -1.0;
    const RunConfig got = chosen_config(plan, *data, choice_message(again), &speedup);
    const RunConfig& want = again.best().config;
    CHECK(got.algo == want.algo);
    CHECK(got.kernel == want.kernel);
    CHECK(got.metric == want.metric);
    CHECK(got.step_size == want.step_size);
    CHECK(got.pcn_rho == want.pcn_rho);
    CHECK(got.warmup == want.warmup);
    CHECK(got.max_seconds == want.max_seconds);
    CHECK(speedup == again.predicted_speedup);
    CHECK_THROWS_AS(chosen_config(plan, *data, "", &speedup), std::invalid_argument);
  }

  TEST_CASE("every sampler family starts chain k at the map's chain_starts[(k - 1) mod size]") {
    // Starts 30 Laplace sds from the mode. A random walk whose step is so long that every
    // proposal is rejected, without warm-up, keeps each chain where it started; SMH's random
    // walk (its own step) moves a few sds at most, so its first draw stays far nearer its start
    // than the mode.
    const auto data = test::logistic_data(500, 3, 5);
    auto map = std::make_shared<MapResult>(LogisticModel(data, test::fixed_config()).find_map());
    const Vec sd = map->covariance.diagonal().cwiseSqrt();
    map->chain_starts = {map->theta + 30.0 * sd, map->theta - 30.0 * sd};
    for (const Algo algo : {Algo::full, Algo::flymc, Algo::smh}) {
      CAPTURE(to_string(algo));
      RunConfig cfg = test::fixed_config();
      cfg.algo = algo;
      cfg.kernel = KernelKind::rwmh;
      cfg.metric = algo == Algo::full ? Metric::identity : Metric::automatic;
      cfg.proposal = SmhProposal::rw;
      cfg.step_size = 1e6;
      cfg.chains = 3;
      cfg.threads = 1;
      cfg.warmup = 0;
      cfg.iters = 1;
      const RunResult r = run(cfg, data, {}, nullptr, nullptr, {}, Precomputed{map, nullptr});
      REQUIRE(r.chains.size() == 3);
      for (std::size_t k = 0; k < 3; ++k) {
        CAPTURE(k);
        const Vec& at = map->chain_starts[k % 2];
        const Vec first = Eigen::Map<const Vec>(r.chains[k].draws.data(), 3);
        if (algo == Algo::smh)
          CHECK((first - at).cwiseQuotient(sd).norm() < 10.0);
        else
          CHECK(first == at);
      }
    }
  }
}
