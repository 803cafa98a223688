// The sampler table (flymc/core/samplers.hpp): what the rest of the engine reads from it, and
// the page that shows it.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "test_util.hpp"

using namespace flymc;

TEST_SUITE("unit") {
  TEST_CASE("samplers: one row per Algo value, named as the command line parses them") {
    std::set<std::string> names;
    for (const SamplerInfo& s : kSamplers) {
      CAPTURE(s.name);
      CHECK(names.insert(s.name).second);
      CHECK(&sampler_info(s.algo) == &s);
      CHECK(parse_enum<Algo>(s.name) == s.algo);
      CHECK(std::string(to_string(s.algo)) == s.name);
      // Every sampler has a runner; auto alone resolves to another row's.
      CHECK((s.runner == nullptr) == (s.algo == Algo::automatic));
      // Only an exact sampler is piloted by auto, whose every candidate is exact.
      if (!s.auto_setups.empty()) CHECK(s.exact);
      // What it needs always includes the likelihood (regular MCMC's).
      CHECK((s.needs & kOfferLikelihood) != 0);
    }
    CHECK((kAllAlgos & algo_bit(Algo::automatic)) == 0);
  }

  TEST_CASE("samplers: RunConfig::validate() reads targets_ess from the table") {
    for (const SamplerInfo& s : kSamplers) {
      CAPTURE(s.name);
      RunConfig cfg;
      cfg.algo = s.algo;
      cfg.ess = 100.0;
      if (s.targets_ess)
        CHECK_NOTHROW(cfg.validate());
      else
        CHECK_THROWS_AS(cfg.validate(), ConfigError);
      // A run given neither --iters nor --ess goes to the default target where it can.
      RunConfig sized;
      sized.algo = s.algo;
      size_run_length(sized, false, false);
      CHECK((sized.ess > 0.0) == s.targets_ess);
    }
  }

  TEST_CASE("samplers: auto pilots exactly the table's set-ups, each with its row's sampler") {
    const auto data = test::logistic_data(300, 3, 5);
    RunConfig cfg;
    cfg.chains = 2;
    std::multiset<std::string> want, got;
    for (const SamplerInfo& s : kSamplers)
      for (const AutoSetup& a : s.auto_setups) want.insert(a.name);
    for (const AutoCandidate& c : auto_candidates(cfg, *data)) {
      got.insert(c.name);
      bool found = false;
      for (const AutoSetup& a : sampler_info(c.config.algo).auto_setups)
        found = found || c.name == a.name;
      CHECK_MESSAGE(found, c.name);
    }
    CHECK(got == want);
  }

  TEST_CASE("samplers: an option another model reads is refused by name") {
    const OptionInfo* nu = &option("student_nu");
    const OptionInfo* noise = &option("noise_scale");
    const OptionInfo* chains = &option("chains");
    const std::vector<const OptionInfo*> robust_only{nu}, both{noise, chains};
    CHECK_NOTHROW(check_model_reads(ModelKind::robust, robust_only));
    CHECK_NOTHROW(check_model_reads(ModelKind::gaussian, both));
    try {
      check_model_reads(ModelKind::probit, robust_only);
      FAIL("--nu accepted for probit regression");
    } catch (const UsageError& e) {
      const std::string w = e.what();
      CHECK(w.find("--nu is not read by --model probit") != std::string::npos);
      CHECK(w.find("--model robust") != std::string::npos);
    }
    CHECK_THROWS_AS(check_model_reads(ModelKind::logistic, both), UsageError);
  }

  TEST_CASE("samplers: the option lists come from the tables") {
    // --refresh-rate: the samplers whose row says they refresh (the BPS family).
    CHECK(kRefreshAlgos == (algo_bit(Algo::bps) | algo_bit(Algo::lipsbps) | algo_bit(Algo::sbps) |
                            algo_bit(Algo::psbps)));
    CHECK(option("refresh_rate").read_by == kRefreshAlgos);
    // The options auto sets for each candidate are marked in the option table.
    std::set<std::string> chosen;
    for (const OptionInfo& o : run_options())
      if (o.chosen_by_auto) chosen.insert(o.key);
    CHECK(chosen == std::set<std::string>{"kernel", "metric", "adapt_metric", "step_size",
                                          "target_accept", "theta_steps", "pcn_rho", "proposal",
                                          "smh_order"});
    // RunConfig::validate() checks every automatic option against the table's range, with the
    // range the command line prints.
    for (const OptionInfo& o : run_options()) {
      if (o.kind() != OptionKind::auto_real && o.kind() != OptionKind::auto_integer) continue;
      CAPTURE(o.name);
      RunConfig c = test::fixed_config();
      const double outside = o.range.lo_open ? o.range.lo : o.range.lo - 1.0;
      set_value(c, o,
                o.kind() == OptionKind::auto_integer ? OptionValue(static_cast<long long>(outside))
                                                     : OptionValue(outside));
      const std::string want = std::string("--") + o.name + " must be " + o.range.text();
      CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains(want.c_str()), ConfigError);
    }
  }

  TEST_CASE("samplers: docs/usage.md shows the table as the engine holds it") {
    const std::string path = std::string(FLYMC_TEST_DATA_DIR) + "/../../docs/usage.md";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), path);
    std::stringstream page;
    page << in.rdbuf();
    const std::string table = samplers_markdown();
    CAPTURE(table);
    CHECK_MESSAGE(page.str().find(table) != std::string::npos,
                  "docs/usage.md's sampler table differs from samplers_markdown(): paste it anew");
  }
}
