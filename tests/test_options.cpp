// The run options' table (flymc/core/options.hpp) against RunConfig and every place generated
// from it: a field missing from the table, or an option missing from the command line, the
// draw-file header, summary.json or the checkpoint, fails here.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/io/output.hpp"
#include "flymc/io/stan_csv.hpp"
#include "test_util.hpp"

namespace {

using namespace flymc;
namespace fs = std::filesystem;

/// A valid configuration that differs from the default in option `o` alone (save_events needs a
/// sampler with path events, prior_intercept an intercept, prior_sigma Gaussian regression,
/// prior_phi negative binomial).
RunConfig with_other_value(const OptionInfo& o) {
  RunConfig c = flymc::test::fixed_config();
  const OptionValue v = get_value(c, o);
  if (o.kind() == OptionKind::choice) {
    // The last name that is not the default (every one is valid with the other defaults).
    std::string other;
    for (const std::string& n : std::get<ChoiceField>(o.field).names())
      if (n != std::get<std::string>(v)) other = n;
    set_value(c, o, other);
  } else if (std::string_view(o.key) == "prior") {
    set_value(c, o, std::string("student_t(3, 0, 2.5)"));
  } else if (std::string_view(o.key) == "prior_sigma") {
    set_value(c, o, std::string("normal(0, 5)"));
    c.model = ModelKind::gaussian;
  } else if (std::string_view(o.key) == "prior_phi") {
    set_value(c, o, std::string("normal(0, 5)"));
    c.model = ModelKind::negbin;
  } else if (std::string_view(o.key) == "prior_intercept") {
    set_value(c, o, std::string("normal(0, 5)"));
    c.intercept = true;
  } else if (o.kind() == OptionKind::text) {
    set_value(c, o, std::string("1"));  // a column index
  } else if (const auto* b = std::get_if<bool>(&v)) {
    set_value(c, o, !*b);
    if (std::string_view(o.key) == "save_events") c.algo = Algo::bps;
  } else if (const auto* i = std::get_if<long long>(&v)) {
    set_value(c, o, *i + 1);
  } else if (const auto* u = std::get_if<std::uint64_t>(&v)) {
    set_value(c, o, *u + 1);
  } else if (const auto* d = std::get_if<double>(&v)) {
    set_value(c, o, *d > 0.0 ? 2.0 * *d : 0.5);
  } else {  // unset automatic
    set_value(c, o, o.kind() == OptionKind::auto_integer ? OptionValue(2LL) : OptionValue(0.5));
  }
  c.validate();
  return c;
}

std::string key_of(const OptionInfo& o) { return o.key; }

/// Whether `--name` occurs in a help text as a whole option name (not as a prefix of another).
bool lists_option(const std::string& help, const std::string& name) {
  const std::string flag = "--" + name;
  for (std::size_t at = help.find(flag); at != std::string::npos; at = help.find(flag, at + 1)) {
    const std::size_t end = at + flag.size();
    if (end == help.size() ||
        (!std::isalnum(static_cast<unsigned char>(help[end])) && help[end] != '-'))
      return true;
  }
  return false;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("options: one table entry per RunConfig field, each its own field") {
    const auto table = run_options();
    // A field added to RunConfig without an entry changes the count.
    CHECK(aggregate_field_count<RunConfig>() == table.size() + kCodeOnlyFields);
    std::set<std::string> names, keys;
    for (const OptionInfo& o : table) {
      CAPTURE(key_of(o));
      CHECK(names.insert(o.name).second);
      CHECK(keys.insert(o.key).second);
      CHECK(std::string(o.help).size() > 5);
      CHECK(o.read_by != 0);
      CHECK(find_option(o.name) == &o);
      CHECK(find_option(o.key) == &o);
      // Changing this option changes no other: no two entries share a field, so with the count
      // above every field has its entry.
      const RunConfig base = flymc::test::fixed_config(), other = with_other_value(o);
      CHECK(format_value(other, o) != format_value(base, o));
      for (const OptionInfo& p : table)
        if (&p != &o && !(key_of(o) == "save_events" && key_of(p) == "algo") &&
            !(key_of(o) == "prior_intercept" && key_of(p) == "intercept") &&
            !((key_of(o) == "prior_sigma" || key_of(o) == "prior_phi") && key_of(p) == "model"))
          CHECK_MESSAGE(format_value(other, p) == format_value(base, p), p.key);
      // The text form reads back to the same value.
      RunConfig back = flymc::test::fixed_config();
      parse_value(back, o, format_value(other, o));
      CHECK(format_value(back, o) == format_value(other, o));
    }
  }

  TEST_CASE("options: enum names parse back and are to_string's") {
    for (const auto& n : kKernelNames) {
      CHECK(parse_enum<KernelKind>(n.name) == n.value);
      CHECK(std::string(to_string(n.value)) == n.name);
    }
    for (const auto& n : kAlgoNames) CHECK(std::string(to_string(n.value)) == n.name);
    for (const auto& n : kMetricNames) CHECK(std::string(to_string(n.value)) == n.name);
    CHECK(!parse_enum<Metric>("automatic").has_value());
    RunConfig c = flymc::test::fixed_config();
    CHECK_THROWS_WITH_AS(parse_value(c, option("kernel"), "gibbs"),
                         "kernel='gibbs' is not one of: rwmh, mala, hmc, slice, nuts, pcn, imh",
                         ConfigError);
    CHECK_THROWS_AS(parse_value(c, option("chains"), "3.5"), ConfigError);
    CHECK_THROWS_AS(parse_value(c, option("chains"), "99999999999"), ConfigError);
    parse_value(c, option("q-dark-to-bright"), "0.25");
    CHECK(c.q_dark_to_bright == 0.25);
    parse_value(c, option("q_dark_to_bright"), "auto");
    CHECK(!c.q_dark_to_bright.has_value());
  }

  TEST_CASE("options: the checkpoint stores every option that affects the draws") {
    const fs::path dir = test::temp_dir("options-ckpt", "");
    for (const OptionInfo& o : run_options()) {
      CAPTURE(key_of(o));
      RunManifest m;
      m.config = with_other_value(o);
      m.n = 10;
      m.d = 2;
      m.map.theta = Vec::Zero(2);
      m.map.covariance = Mat::Identity(2, 2);
      save_run_manifest(dir.string(), m);
      const RunConfig back = load_run_manifest(dir.string()).config;
      if (o.affects_draws)
        CHECK(format_value(back, o) == format_value(m.config, o));
      else  // threads and profile are the resuming process's own
        CHECK(format_value(back, o) == format_value(RunConfig{}, o));
    }
    fs::remove_all(dir);
  }

  TEST_CASE("options: the draw-file header names every option that affects the draws") {
    const fs::path dir = test::temp_dir("options-header", "");
    RunConfig cfg = flymc::test::fixed_config();
    cfg.step_size = 0.125;
    cfg.init_jitter = 0.375;
    cfg.fly_metric_blend = 0.25;
    cfg.metric = Metric::fly;
    {
      auto sink = stan_csv_sinks(dir.string(), cfg)(1);
      sink->begin({"lp__", "theta.1"});
      sink->end(0.0, 0.0, Counters{});
    }
    const StanCsv csv = read_stan_csv((dir / "chain-1.csv").string());
    for (const OptionInfo& o : run_options()) {
      CAPTURE(key_of(o));
      const std::string value = csv.config_value(o.header_name());
      if (!o.affects_draws) {
        CHECK(value.empty());
        continue;
      }
      CHECK(value == (o.resolved != nullptr ? o.resolved(cfg) : format_value(cfg, o)));
    }
    CHECK(csv.config_value("step_size") == "0.125");
    CHECK(csv.config_value("init_jitter") == "0.375");
    CHECK(csv.config_value("fly_metric_blend") == "0.25");
    CHECK(csv.config_value("algorithm") == "flymc");
    CHECK(csv.config_value("adapt_delta") == "0.234");
    fs::remove_all(dir);
  }

  TEST_CASE("options: flymc sample takes every option, and summary.json reports it") {
    const fs::path dir = test::temp_dir("options-cli", "");
    const test::Status help =
        test::wait_for(test::spawn_process(FLYMC_CLI_PATH, "sample --help", dir), dir);
    REQUIRE(help.code == 0);
    const test::Status sbc =
        test::wait_for(test::spawn_process(FLYMC_CLI_PATH, "validate sbc --help", dir), dir);
    REQUIRE(sbc.code == 0);  // its options are looked up in the table at start
    for (const OptionInfo& o : run_options()) {
      CAPTURE(key_of(o));
      CHECK(lists_option(help.out, o.name) == o.in_cli);
    }
    save_csv(*test::logistic_data(200, 3, 5), (dir / "d.csv").string());
    const test::Status r = test::wait_for(
        test::spawn_process(FLYMC_CLI_PATH,
                            "sample --quiet --algo flymc --chains 1 --warmup 20 --iters 20 "
                            "--step-size 0.5 "
                            "--init-jitter 0.25 --data " +
                                (dir / "d.csv").string() + " --out " + (dir / "run").string(),
                            dir),
        dir);
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(test::slurp(dir / "run" / "summary.json"));
    REQUIRE(j.contains("config"));
    CHECK(j["config"].size() == run_options().size());
    for (const OptionInfo& o : run_options()) CHECK_MESSAGE(j["config"].contains(o.key), o.key);
    CHECK(j["config"]["step_size"] == 0.5);
    CHECK(j["config"]["init_jitter"] == 0.25);
    CHECK(j["config"]["q_dark_to_bright"].is_null());
    CHECK(j["config"]["kernel"] == "rwmh");
    fs::remove_all(dir);
  }
}

TEST_SUITE("unit") {
  TEST_CASE("options: no command spells a run option's name by hand") {
    // Every command-line option named like a run option (flymc sample's own, the benchmark's
    // per-row values, validate's and data's settings) goes through add_run_option(s) or
    // add_run_named (tools/common/run_options.hpp), so the table names and describes it.
    namespace fs = std::filesystem;
    const fs::path root = fs::path(FLYMC_TEST_DATA_DIR).parent_path().parent_path();
    std::size_t files = 0;
    for (const char* dir : {"bench", "tools"})
      for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
        const std::string ext = e.path().extension().string();
        if (e.path().filename() == "run_options.hpp" || (ext != ".cpp" && ext != ".hpp")) continue;
        ++files;
        std::ifstream in(e.path());
        std::string line;
        for (int no = 1; std::getline(in, line); ++no)
          for (const char* call : {"add_option(\"--", "add_flag(\"--"}) {
            const std::size_t at = line.find(call);
            if (at == std::string::npos) continue;
            const std::size_t from = at + std::string(call).size();
            const std::string name = line.substr(from, line.find('"', from) - from);
            CAPTURE(e.path().string());
            CAPTURE(no);
            CHECK_MESSAGE(find_option(name) == nullptr,
                          "--" << name << " is a run option: add it with add_run_named");
          }
      }
    CHECK(files > 20);
  }
}
