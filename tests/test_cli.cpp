// End-to-end tests of the `flymc` command line: files written, summary.json keys, exit codes.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/options.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/io/stan_csv.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string err;
};

/// Runs the CLI with `dir` as its working directory: a run without --out writes into the default
/// ./flymc-out, and two tests sharing one (CTest runs them in parallel) would meet each other's
/// output lock and exit 73 instead of the code under test.
Result run_cli(const std::string& args, const fs::path& dir) {
  const fs::path err = dir / "stderr.txt";
  const std::string cmd = "cd '" + dir.string() + "' && " + std::string(FLYMC_CLI_PATH) + " " +
                          flymc::test::with_fixed_defaults(args) + " >" +
                          (dir / "stdout.txt").string() + " 2>" + err.string();
  const int st = std::system(cmd.c_str());
  std::ifstream f(err);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, text};
}

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("flymc-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// A refused `flymc sample` invocation: its arguments, a word its message must contain, and its
/// exit code.
struct Refusal {
  std::string args, names;
  int code;
};

/// Runs every refusal on the data file `data` and checks its exit code and message.
void check_refusals(const std::vector<Refusal>& bad, const std::string& data, const fs::path& dir) {
  for (const Refusal& b : bad) {
    CAPTURE(b.args);
    const Result r =
        run_cli("sample --data " + data + " --out " + (dir / "bad").string() + " " + b.args, dir);
    CHECK(r.code == b.code);
    CHECK(r.err.find(b.names) != std::string::npos);
  }
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE(
      "flymc sample writes Stan CSV chains and summary.json with exactly the documented keys" *
      doctest::test_suite("threaded")) {
    const fs::path dir = temp_dir("sample");
    flymc::save_csv(*flymc::test::logistic_data(800, 3, 5), (dir / "d.csv").string());
    const std::string out = (dir / "run").string();
    const Result r =
        run_cli("sample --data " + (dir / "d.csv").string() +
                    " --chains 2 --warmup 300 --iters 1000 --thin 3 --seed 9 --out " + out,
                dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    for (int c = 1; c <= 2; ++c) {
      const auto csv = flymc::read_stan_csv(out + "/chain-" + std::to_string(c) + ".csv");
      CHECK(csv.draws.size() == 334);  // ceil(1000 / 3)
      CHECK(csv.columns.at(0) == "lp__");
      CHECK(csv.columns.at(3) == "n_bright__");
      CHECK(csv.columns.at(4) == "n_queries__");
      CHECK(csv.columns.back() == "theta.3");
      CHECK(csv.config_value("chain_id") == std::to_string(c));
      CHECK(csv.config_value("iter") == "1300");
      CHECK(csv.config_value("thin") == "3");
      CHECK(std::isfinite(csv.step_size));
      CHECK(std::isfinite(csv.sampling_seconds));
    }
    std::ifstream f(out + "/summary.json");
    const auto j = nlohmann::json::parse(f);
    std::set<std::string> top, run, param;
    for (auto& [k, v] : j.items()) top.insert(k);
    for (auto& [k, v] : j["run"].items()) run.insert(k);
    for (auto& [k, v] : j["params"][0].items()) param.insert(k);
    // config: every run option (tests/test_options.cpp checks its keys against the table).
    CHECK(top == std::set<std::string>{"config", "params", "run"});
    CHECK(run == std::set<std::string>{"chains",
                                       "warmup",
                                       "iters",
                                       "setup_seconds",
                                       "setup_phases",
                                       "warmup_seconds",
                                       "sampling_seconds",
                                       "queries_per_iter",
                                       "bright_mean",
                                       "accept_rate",
                                       "min_ess_bulk",
                                       "min_ess_bulk_per_second",
                                       "bound_slack",
                                       "q_dark_to_bright",
                                       "algo",
                                       "algo_chosen",
                                       "auto_chosen",
                                       "auto_candidates",
                                       "predicted_speedup",
                                       "prediction_rough",
                                       "auto_why",
                                       "auto_pilot_seconds",
                                       "auto_predicted_seconds",
                                       "auto_measured_seconds",
                                       "ess_target",
                                       "target_reached",
                                       "target_timed_out",
                                       "min_ess_tail",
                                       "max_rhat",
                                       "exact",
                                       "batch_mean",
                                       "bound_violations",
                                       "path_mean",
                                       "pdmp_spacing",
                                       "refresh_rate",
                                       "pdmp_precondition",
                                       "n",
                                       "dim",
                                       "bound_clamps",
                                       "nonfinite_proposals",
                                       "slice_failures",
                                       "divergences",
                                       "map_theta",
                                       "map_log_post",
                                       "warnings"});
    CHECK(param == std::set<std::string>{"name", "mean", "sd", "mcse_mean", "q5", "q50", "q95",
                                         "ess_bulk", "ess_tail", "rhat"});
    CHECK(j["params"].size() == 3);
    // The set-up's phases in order, from the file to the chains' start; the run's own add up to
    // its setup_seconds.
    std::vector<std::string> phase_names;
    double run_phases = 0.0;
    for (const auto& ph : j["run"]["setup_phases"]) {
      phase_names.push_back(ph["name"].get<std::string>());
      if (phase_names.back() != "read") run_phases += ph["seconds"].get<double>();
      CHECK(ph["seconds"].get<double>() >= 0.0);
    }
    CHECK(phase_names ==
          std::vector<std::string>{"read", "checks", "map", "statistics", "chains", "initial z"});
    CHECK(j["run"]["setup_phases"][0]["passes"] == 1);
    CHECK(j["run"]["setup_phases"][2]["passes"].get<int>() >= 1);  // Newton: a pass per step
    CHECK(run_phases <= j["run"]["setup_seconds"].get<double>() * (1.0 + 1e-9));
    CHECK(j["run"]["chains"] == 2);
    // The automatic choices as resolved: q is 0.01 up to N = 3,200; the slack is positive.
    CHECK(j["run"]["q_dark_to_bright"].get<double>() == 0.01);
    CHECK(j["run"]["bound_slack"].get<double>() > 0.0);
    CHECK(j["run"]["algo"] == "flymc");
    CHECK(j["run"]["exact"] == true);
    CHECK(j["run"]["batch_mean"].is_null());   // only the approximate samplers batch
    CHECK(j["run"]["algo_chosen"].is_null());  // only --algo auto chooses
    CHECK(j["run"]["auto_chosen"].is_null());
    CHECK(j["run"]["auto_candidates"].is_null());
    CHECK(j["run"]["predicted_speedup"].is_null());
    CHECK(j["run"]["prediction_rough"].is_null());

    const Result s = run_cli("summary " + out, dir);
    CHECK(s.code == 0);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample with no sampler and no length: auto, to 1,000 effective draws" *
            doctest::test_suite("threaded")) {
    const fs::path dir = temp_dir("default");
    flymc::save_csv(*flymc::test::logistic_data(2000, 3, 8), (dir / "d.csv").string());
    // Not through run_cli: its helper gives the older tests their fixed FlyMC run.
    const std::string cmd = "cd '" + dir.string() + "' && " + FLYMC_CLI_PATH +
                            " sample --data d.csv --out run >out.txt 2>err.txt";
    const int st = std::system(cmd.c_str());
    const std::string err = flymc::test::slurp(dir / "err.txt");
    CAPTURE(err);
    REQUIRE((WIFEXITED(st) && WEXITSTATUS(st) == 0));
    CHECK(err.find("--algo auto chose") != std::string::npos);
    CHECK(err.find("until every bulk and tail ESS >= 1000") != std::string::npos);
    std::ifstream f(dir / "run" / "summary.json");
    const auto j = nlohmann::json::parse(f);
    const auto& run = j["run"];
    CHECK(run["ess_target"].get<double>() == 1000.0);
    CHECK(run["target_reached"].get<bool>());
    CHECK(run["exact"].get<bool>());
    CHECK(run["min_ess_bulk"].get<double>() >= 1000.0);
    CHECK(run["min_ess_tail"].get<double>() >= 1000.0);
    CHECK(run["max_rhat"].get<double>() <= 1.01);
    CHECK(run["auto_why"].get<std::string>().find("effective draws") != std::string::npos);
    CHECK(run["auto_pilot_seconds"].get<double>() > 0.0);
    // The draw files hold the run's length: iters sampling rows a chain.
    const auto x = flymc::read_stan_csv((dir / "run" / "chain-1.csv").string());
    CHECK(x.draws.size() == static_cast<std::size_t>(run["iters"].get<long>()));

    // A target that cannot be met within --max-seconds: exit 0, a clear line, the flag false.
    const Result r = run_cli(
        "sample --data d.csv --out late --algo full --kernel nuts --ess 1e9 "
        "--max-seconds 1e-9 --chains 2 --warmup 50",
        dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.err.find("the ESS target was not reached: --max-seconds passed") != std::string::npos);
    std::ifstream g(dir / "late" / "summary.json");
    const auto k = nlohmann::json::parse(g);
    CHECK_FALSE(k["run"]["target_reached"].get<bool>());
    CHECK(k["run"]["target_timed_out"].get<bool>());
    CHECK(k["run"]["iters"].get<long>() == 1000);  // the first block's end (kMaxFirstBlock)
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample --algo auto runs what its pilots chose, with that algorithm's draws" *
            doctest::test_suite("threaded")) {
    const fs::path dir = temp_dir("auto");
    flymc::save_csv(*flymc::test::logistic_data(3000, 3, 8), (dir / "d.csv").string());
    const std::string args = "sample --data " + (dir / "d.csv").string() +
                             " --chains 2 --warmup 200 --iters 300 --seed 4 --out ";
    // (auto picks each candidate's kernel: a --kernel given with it is refused, tested below)
    const Result a = run_cli(args + (dir / "auto").string() + " --algo auto", dir);
    REQUIRE_MESSAGE(a.code == 0, a.err);
    CHECK(a.err.find("--algo auto chose") != std::string::npos);
    std::ifstream f(dir / "auto" / "summary.json");
    const auto j = nlohmann::json::parse(f);
    const std::string chosen = j["run"]["algo_chosen"].get<std::string>();
    CHECK(j["run"]["algo"] == chosen);
    // The candidates and their predictions; the chosen one has the most predicted ESS/s.
    double best = 0.0, best_regular = 0.0;
    std::string best_name;
    for (const auto& c : j["run"]["auto_candidates"]) {
      CAPTURE(c.dump());
      if (!c["skipped"].is_null()) continue;
      const double e = c["predicted_ess_per_second"].get<double>();
      CHECK(e > 0.0);
      if (e > best) best = e, best_name = c["name"].get<std::string>();
      if (c["algo"] == "full") best_regular = std::max(best_regular, e);
    }
    CHECK(j["run"]["auto_chosen"] == best_name);
    // (over the best regular pilot's; 0 when no regular pilot could pay for itself and none ran)
    CHECK(j["run"]["predicted_speedup"].get<double>() ==
          doctest::Approx(best_regular > 0.0 ? best / best_regular : 0.0));
    CHECK(a.err.find("--algo auto chose " + best_name) != std::string::npos);
    // The rough flag is the warning's: both or neither.
    CHECK(j["run"]["prediction_rough"].get<bool>() ==
          (a.err.find("the prediction is rough") != std::string::npos));
    // The pilots draw from streams of their own: the run is the one the chosen sampler's options
    // make when given by hand.
    const auto& cfg = j["config"];
    // Only the options the chosen sampler reads: the others would be refused.
    const flymc::Algo algo = *flymc::parse_enum<flymc::Algo>(chosen);
    std::string fixed = " --algo " + chosen;
    auto add = [&](const char* name, const std::string& value) {
      if (flymc::option(name).reads(algo)) fixed += std::string(" --") + name + " " + value;
    };
    add("kernel", cfg["kernel"].get<std::string>());
    add("metric", cfg["metric"].get<std::string>());
    add("slack-scale", flymc::number_text(cfg["slack_scale"].get<double>()));
    add("proposal", cfg["proposal"].get<std::string>());
    if (!cfg["adapt_metric"].get<bool>()) fixed += " --no-adapt-metric";
    // (smh-pcn3 is the third-order scheme: a slower build's pilots may choose it)
    add("smh-order", std::to_string(cfg["smh_order"].get<int>()));
    const Result b = run_cli(args + (dir / "fixed").string() + fixed, dir);
    REQUIRE_MESSAGE(b.code == 0, b.err);
    for (const char* chain : {"chain-1.csv", "chain-2.csv"}) {
      const auto x = flymc::read_stan_csv((dir / "auto" / chain).string());
      const auto y = flymc::read_stan_csv((dir / "fixed" / chain).string());
      CHECK(x.config_value("algorithm") == chosen);
      CHECK(x.draws == y.draws);
    }
    const Result bad = run_cli(args + (dir / "bad").string() + " --algo fastest", dir);
    CHECK(bad.code == 64);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample --algo minibatch-mh and sgld: draw files and summaries say approximate" *
            doctest::test_suite("threaded")) {
    const fs::path dir = temp_dir("approx");
    flymc::save_csv(*flymc::test::logistic_data(3000, 3, 5), (dir / "d.csv").string());
    for (const std::string algo : {"minibatch-mh", "sgld"}) {
      CAPTURE(algo);
      const std::string out = (dir / algo).string();
      const Result r = run_cli("sample --data " + (dir / "d.csv").string() + " --algo " + algo +
                                   " --chains 2 --warmup 200 --iters 500 --batch-size 64 "
                                   "--seed 3 --out " +
                                   out,
                               dir);
      REQUIRE_MESSAGE(r.code == 0, r.err);
      CHECK(r.err.find("approximate") != std::string::npos);
      const auto csv = flymc::read_stan_csv(out + "/chain-1.csv");
      CHECK(csv.draws.size() == 500);
      CHECK(csv.columns == std::vector<std::string>{"lp__", "accept_stat__", "stepsize__",
                                                    "batch__", "n_queries__", "theta.1", "theta.2",
                                                    "theta.3"});
      CHECK(csv.config_value("algorithm") == algo);
      CHECK(csv.config_value("exact") == "false");
      CHECK(csv.config_value("batch_size") == "64");
      for (const auto& row : csv.draws) CHECK(row[3] >= 64.0);
      std::ifstream f(out + "/summary.json");
      const auto j = nlohmann::json::parse(f);
      CHECK(j["run"]["algo"] == algo);
      CHECK(j["run"]["exact"] == false);
      CHECK(j["run"]["batch_mean"].get<double>() >= 64.0);
      CHECK(j["run"]["bright_mean"].is_null());
      CHECK(run_cli("summary " + out, dir).code == 0);
    }
    check_refusals({{"--algo minibatch-mh --batch-size 1", "--batch-size", 78},
                    {"--algo sgld --sgld-step 0", "--sgld-step", 78},
                    {"--algo sgld --sgld-step 2", "--sgld-step", 78},
                    {"--algo sgld --batch-size x", "--batch-size", 64},
                    {"--algo minibatch --iters 10", "--algo", 64},
                    {"--algo sgld --model softmax", "single-index family", 78},
                    // an option the sampler does not read is refused, naming who reads it
                    {"--algo minibatch-mh --kernel nuts", "applies to --algo flymc, full", 64},
                    {"--algo minibatch-mh --target-accept 0.6", "--target-accept", 78},
                    {"--algo minibatch-mh --barker-temper 0.5", "--barker-temper", 78},
                    {"--algo minibatch-mh --checkpoint-every 10", "checkpoint", 78}},
                   (dir / "d.csv").string(), dir);
    fs::remove_all(dir);
  }

  /// events-1.csv of a run with --warmup 50 --iters 200 --thin 2 --pdmp-spacing 0.2: it starts at
  /// time 0, ends at 50, its times never decrease, its kinds are those of the sampler, and the
  /// path through its points, linear between them, passes through every kept draw.
  void check_path_events(const std::string& out, bool zigzag,
                         const std::vector<std::vector<double>>& draws) {
    const auto ev = flymc::read_stan_csv(out + "/events-1.csv");
    REQUIRE(ev.columns == std::vector<std::string>{"time__", "kind__", "coordinate__", "theta.1",
                                                   "theta.2", "theta.3"});
    REQUIRE(ev.draws.size() >= 3);
    CHECK(ev.draws.front()[0] == 0.0);
    CHECK(ev.draws.front()[1] == 0.0);
    CHECK(ev.draws.back()[0] == doctest::Approx(50.0));
    CHECK(ev.draws.back()[1] == 4.0);
    for (std::size_t e = 1; e + 1 < ev.draws.size(); ++e) {
      const auto& row = ev.draws[e];
      CHECK(row[0] >= ev.draws[e - 1][0]);
      if (zigzag) {
        CHECK(row[1] == 3.0);
        CHECK((row[2] >= 1.0 && row[2] <= 3.0));
      } else {
        CHECK((row[1] == 1.0 || row[1] == 2.0));
        CHECK(row[2] == 0.0);
      }
    }
    std::size_t e = 0;
    for (std::size_t i = 0; i < draws.size(); ++i) {
      const double t = 0.2 * static_cast<double>(51 + 2 * i);
      while (e + 2 < ev.draws.size() && ev.draws[e + 1][0] <= t) ++e;
      const auto &a = ev.draws[e], &b = ev.draws[e + 1];
      const double f = b[0] > a[0] ? (t - a[0]) / (b[0] - a[0]) : 0.0;
      for (std::size_t j = 0; j < 3; ++j) {
        const double x = a[3 + j] + f * (b[3 + j] - a[3 + j]);
        CHECK(draws[i][6 + j] == doctest::Approx(x).epsilon(1e-7).scale(1.0));
      }
    }
  }

  TEST_CASE("flymc sample --algo bps ... zigzag-cv: path draws, exactness, refusals" *
            doctest::test_suite("threaded")) {
    const fs::path dir = temp_dir("pdmp");
    flymc::save_csv(*flymc::test::logistic_data(500, 3, 5), (dir / "d.csv").string());
    for (const std::string algo : {"bps", "lipsbps", "sbps", "psbps", "zigzag-ss", "zigzag-cv"}) {
      CAPTURE(algo);
      const std::string out = (dir / algo).string();
      // (only the samplers that batch read --batch-size: the others refuse it)
      const bool batches = algo == "lipsbps" || algo == "sbps" || algo == "psbps";
      const std::string batch = batches ? "--batch-size 20 " : "";
      const Result r = run_cli("sample --data " + (dir / "d.csv").string() + " --algo " + algo +
                                   " --chains 2 --warmup 50 --iters 200 --thin 2 " + batch +
                                   "--pdmp-spacing 0.2 --seed 3 --save-events --out " + out,
                               dir);
      REQUIRE_MESSAGE(r.code == 0, r.err);
      const bool exact = algo != "sbps" && algo != "psbps";
      CHECK((r.err.find("approximate") != std::string::npos) == !exact);
      const auto csv = flymc::read_stan_csv(out + "/chain-1.csv");
      CHECK(csv.draws.size() == 100);
      CHECK(csv.columns == std::vector<std::string>{
                               "lp__", "accept_stat__", "stepsize__", "n_events__", "n_queries__",
                               "bound_violations__", "theta.1", "theta.2", "theta.3"});
      CHECK(csv.config_value("algorithm") == algo);
      CHECK(csv.config_value("exact") == (exact ? "true" : "false"));
      CHECK(csv.config_value("pdmp_spacing") == "0.2");
      CHECK(csv.config_value("pdmp_precondition") == "laplace");
      CHECK(csv.step_size == 0.2);
      double violations = 0.0;
      for (const auto& row : csv.draws) {
        CHECK(row[4] >= 0.0);
        violations += row[5];
      }
      std::ifstream f(out + "/summary.json");
      const auto j = nlohmann::json::parse(f);
      CHECK(j["run"]["algo"] == algo);
      CHECK(j["run"]["exact"] == exact);
      CHECK(j["run"]["pdmp_spacing"].get<double>() == 0.2);
      CHECK(j["run"]["path_mean"].size() == 3);
      CHECK(j["run"]["bright_mean"].is_null());
      CHECK(j["run"]["refresh_rate"].is_null() == (algo.rfind("zigzag", 0) == 0));
      CHECK(j["run"]["pdmp_precondition"] == "laplace");
      if (exact) CHECK(j["run"]["bound_violations"] == 0);
      // The rows count the kept draws' windows only; the total also has warm-up's and thinning's.
      CHECK(j["run"]["bound_violations"].get<double>() >= violations);
      CHECK(run_cli("summary " + out, dir).code == 0);
      check_path_events(out, algo.rfind("zigzag", 0) == 0, csv.draws);
    }
    check_refusals({{"--algo bps --model softmax", "single-index family", 78},
                    {"--algo full --save-events", "--save-events is not read by --algo full", 64},
                    {"--algo lipsbps --model probit", "M1", 78},
                    {"--algo sbps --prior laplace", "Gaussian prior", 78},
                    {"--algo zigzag-ss --kernel hmc", "--kernel", 64},
                    {"--algo zigzag-cv --batch-size 20", "--batch-size", 64},
                    {"--algo smh --bound untuned", "it applies to --algo flymc", 64},
                    {"--algo auto --kernel nuts", "chosen by --algo auto", 64},
                    {"--algo bps --pdmp-spacing 0", "--pdmp-spacing", 78},
                    {"--algo bps --refresh-rate -1", "--refresh-rate", 78},
                    {"--algo lipsbps --checkpoint-every 10", "checkpoint", 78},
                    {"--algo zigzag", "--algo", 64}},
                   (dir / "d.csv").string(), dir);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample --model softmax: W.k.j columns, and labels that are not classes") {
    const fs::path dir = temp_dir("softmax");
    flymc::save_csv(*flymc::test::softmax_data(400, 3, 3, 6), (dir / "d.csv").string());
    const std::string out = (dir / "run").string();
    const Result r =
        run_cli("sample --model softmax --kernel mala --data " + (dir / "d.csv").string() +
                    " --chains 2 --warmup 200 --iters 300 --seed 3 --out " + out,
                dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const auto csv = flymc::read_stan_csv(out + "/chain-1.csv");
    CHECK(csv.draws.size() == 300);
    CHECK(csv.columns.at(5) == "W.1.1");
    CHECK(csv.columns.back() == "W.3.3");
    CHECK(csv.columns.size() == 5 + 9);
    {
      std::ofstream f(dir / "frac.csv");
      f << "label,x1\n0,0.5\n2,0.25\n1.5,1\n";
    }
    Result bad = run_cli("sample --model softmax --data " + (dir / "frac.csv").string(), dir);
    CHECK(bad.code == 65);
    CHECK(bad.err.find("frac.csv:4") != std::string::npos);
    CHECK(bad.err.find("label") != std::string::npos);
    {
      std::ofstream f(dir / "one.csv");
      f << "label,x1\n0,0.5\n0,0.25\n";
    }
    bad = run_cli("sample --model softmax --data " + (dir / "one.csv").string(), dir);
    CHECK(bad.code == 65);
    CHECK(bad.err.find("at least two classes") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample --model binomial --trials --weights --offset: columns by name") {
    const fs::path dir = temp_dir("columns");
    {
      // successes, trials, weight, offset, then the features (an intercept and one more)
      std::ofstream f(dir / "d.csv");
      f << "succ,m,w,off,one,x\n";
      flymc::Rng rng(4, 0);
      for (int i = 0; i < 400; ++i) {
        const double x = rng.normal(), off = 0.2 * rng.normal();
        const int m = 1 + i % 4;
        const double p = 1.0 / (1.0 + std::exp(-(0.3 - 0.8 * x + off)));
        int y = 0;
        for (int t = 0; t < m; ++t) y += rng.uniform() < p ? 1 : 0;
        f << y << ',' << m << ',' << (i % 3 == 0 ? 2 : 1) << ',' << off << ",1," << x << '\n';
      }
    }
    const std::string base = "sample --data " + (dir / "d.csv").string() +
                             " --model binomial --response succ --trials m --weights w --offset "
                             "off --chains 2 --warmup 200 --iters 300 --seed 3 --quiet ";
    const Result r =
        run_cli(base + "--algo flymc --kernel nuts --out " + (dir / "run").string(), dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const auto csv = flymc::read_stan_csv((dir / "run" / "chain-1.csv").string());
    CHECK(csv.columns.back() == "theta.2");  // the two features only
    CHECK(csv.config_value("trials_column") == "m");
    CHECK(csv.config_value("offset_column") == "off");
    std::ifstream summary(dir / "run" / "summary.json");
    const auto j = nlohmann::json::parse(summary);
    CHECK(j["config"]["weights_column"] == "w");
    CHECK(j["params"][1]["mean"].get<double>() == doctest::Approx(-0.8).epsilon(0.25));
    // A sampler that does not read them yet refuses the data, naming those that do.
    Result bad = run_cli(base + "--algo bps --out " + (dir / "bps").string(), dir);
    CHECK(bad.code == 78);
    CHECK(bad.err.find("--algo bps does not read per-row weights") != std::string::npos);
    bad = run_cli("sample --data " + (dir / "d.csv").string() +
                      " --model binomial --response succ --trials m --weights nope --out " +
                      (dir / "nope").string(),
                  dir);
    CHECK(bad.code == 65);
    CHECK(bad.err.find("--weights nope: no such column") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc rejects bad data and bad options with a clear message and a sysexits code") {
    const fs::path dir = temp_dir("bad");
    {
      std::ofstream f(dir / "ragged.csv");
      f << "label,a,b\n1,0.5,0.25\n-1,0.5\n";
    }
    Result r = run_cli(
        "sample --data " + (dir / "ragged.csv").string() + " --out " + (dir / "o").string(), dir);
    CHECK(r.code == 65);
    CHECK(r.err.find("ragged.csv:3") != std::string::npos);
    {
      std::ofstream f(dir / "labels.csv");
      f << "1,0.5\n2,0.5\n";
    }
    r = run_cli("sample --data " + (dir / "labels.csv").string(), dir);
    CHECK(r.code == 65);
    CHECK(r.err.find("labels.csv:2") != std::string::npos);
    r = run_cli("sample --data " + (dir / "missing.csv").string(), dir);
    CHECK(r.code == 65);
    CHECK(r.err.find("missing.csv") != std::string::npos);
    flymc::save_csv(*flymc::test::logistic_data(50, 2, 5), (dir / "ok.csv").string());
    r = run_cli("sample --data " + (dir / "ok.csv").string() + " --q-dark-to-bright 2", dir);
    CHECK(r.code == 78);
    CHECK(r.err.find("--q-dark-to-bright") != std::string::npos);
    r = run_cli("sample --data " + (dir / "ok.csv").string() + " --chains 0", dir);
    CHECK(r.code == 78);
    r = run_cli("sample --data " + (dir / "ok.csv").string() + " --kernel gibbs", dir);
    CHECK(r.code == 64);
    r = run_cli("sample --bogus", dir);
    CHECK(r.code == 64);
    r = run_cli("sample --data " + (dir / "ok.csv").string() + " --storage f16", dir);
    CHECK(r.code == 64);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample --storage f32: the draw file and summary say so; values beyond float") {
    const fs::path dir = temp_dir("storage");
    const std::string data = (dir / "d.npy").string();
    flymc::save_npy(*flymc::test::logistic_data(300, 3, 5), data);
    Result r = run_cli("sample --data " + data + " --algo smh --chains 1 --warmup 50 --iters 50 " +
                           "--storage f32 --quiet --out " + (dir / "o").string(),
                       dir);
    CHECK(r.code == 0);
    std::ifstream sj(dir / "o" / "summary.json");
    const auto summary = nlohmann::json::parse(sj);
    CHECK(summary["config"]["storage"] == "f32");
    CHECK(flymc::test::read_without_timing((dir / "o" / "chain-1.csv").string())
              .find("storage=f32") != std::string::npos);
    flymc::Dataset big(4, 2, "big");
    for (std::size_t i = 0; i < 4; ++i) big.mutable_y()[i] = 1.0;
    big.mutable_row(2)[0] = -4e38;
    flymc::save_npy(big, data);
    r = run_cli("sample --data " + data + " --storage f32 --out " + (dir / "o2").string(), dir);
    CHECK(r.code == 65);
    CHECK(r.err.find("d.npy: row 2: field 2 (x1)") != std::string::npos);
    CHECK(r.err.find("--storage f64") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample rejects every invalid option before reading the data") {
    // The data file does not exist: an option checked only after loading would give 65 here.
    const fs::path dir = temp_dir("options");
    const std::string base =
        "sample --data " + (dir / "missing.csv").string() + " --out " + (dir / "o").string() + " ";
    struct Bad {
      const char* args;
      int code;
      const char* mentions;  // the option named in the message
    };
    const Bad cases[] = {
        {"--chains -1", 78, "--chains"},
        {"--chains 0", 78, "--chains"},
        {"--chains 1.5", 64, "--chains"},
        {"--chains x", 64, "--chains"},
        {"--warmup -1", 78, "--warmup"},
        {"--iters -5", 78, "--iters"},
        {"--iters 0", 78, "--iters"},
        {"--iters 10000000000000", 78, "--iters"},
        {"--thin 0", 78, "--thin"},
        {"--thin -3", 78, "--thin"},
        {"--threads -1", 78, "--threads"},
        {"--theta-steps -1", 78, "--theta-steps"},
        {"--seed -1", 64, "--seed"},
        {"--seed x", 64, "--seed"},
        {"--q-dark-to-bright 0", 78, "--q-dark-to-bright"},
        {"--q-dark-to-bright -0.5", 78, "--q-dark-to-bright"},
        {"--q-dark-to-bright 1.0001", 78, "--q-dark-to-bright"},
        {"--q-dark-to-bright nan", 78, "--q-dark-to-bright"},
        {"--resample-fraction 0", 78, "--resample-fraction"},
        {"--resample-fraction 2", 78, "--resample-fraction"},
        {"--prior-sd 0", 78, "--prior-sd"},
        {"--prior-sd -1", 78, "--prior-sd"},
        {"--prior-sd nan", 78, "--prior-sd"},
        {"--prior-sd inf", 78, "--prior-sd"},
        {"--prior-sd 1e-300", 78, "--prior-sd"},  // 1/σ² overflowed: NaN MAP search
        {"--bound-slack -1", 78, "--bound-slack"},
        {"--bound-slack nan", 78, "--bound-slack"},
        {"--slack-scale -1", 78, "--slack-scale"},
        {"--slack-scale nan", 78, "--slack-scale"},
        // Another model's constant is refused by name, as an option the sampler does not read.
        {"--model softmax --slack-scale 1", 64, "--slack-scale is not read by --model softmax"},
        {"--model robust --slack-scale 0.5", 64, "--slack-scale"},
        {"--model probit --nu 3", 64, "--nu is not read by --model probit"},
        {"--model logistic --noise-scale 2", 64, "applies to --model robust, gaussian"},
        {"--model gaussian --untuned-xi 1", 64, "--untuned-xi"},
        {"--model robust --softmax-bound bohning", 64, "--softmax-bound"},
        {"--untuned-xi -1", 78, "--untuned-xi"},
        {"--model robust --nu 0", 78, "--nu"},
        {"--model robust --noise-scale -1", 78, "--noise-scale"},
        {"--step-size -1", 78, "--step-size"},
        {"--step-size inf", 78, "--step-size"},
        {"--target-accept 1", 78, "--target-accept"},
        {"--kernel gibbs", 64, "--kernel"},
        {"--kernel nuts --max-treedepth 0", 78, "--max-treedepth"},
        {"--max-treedepth 31", 78, "--max-treedepth"},
        {"--algo hmc", 64, "--algo"},
        {"--bound tight", 64, "--bound"},
        {"--z sometimes", 64, "--z"},
        {"--init random", 64, "--init"},
        {"--metric full", 64, "--metric"},
        {"--model logit", 64, "--model"},
        // A sampler that needs what the model does not offer (model_needs.hpp).
        {"--model softmax --algo smh", 78, "--algo smh"},
        {"--model softmax --algo smh --smh-order 3", 78, "--smh-order 3"},
        {"--model gaussian --algo zigzag-ss", 78, "--algo zigzag-ss"},
        {"--model custom", 78, "--model custom"},
        // Priors as written (core/prior_spec.hpp), and sigma's where it is a parameter.
        {"--prior 'normal(0, -1)'", 78, "the scale S must be in [1e-150, 1e150], got -1"},
        {"--prior cauchy", 78, "unknown distribution 'cauchy'"},
        {"--prior-intercept 'normal(0, 1)'", 78, "--prior-intercept needs --intercept"},
        {"--model gaussian --prior-sigma 'normal(1, 1)'", 78, "its location must be 0"},
        {"--model gaussian --noise-scale 1 --prior-sigma 'cauchy(0, 1)'", 78, "--prior-sigma"},
        {"--model gaussian --algo flymc", 78, "with sigma inferred"},
    };
    for (const Bad& b : cases) {
      CAPTURE(b.args);
      const Result r = run_cli(base + b.args, dir);
      CAPTURE(r.err);
      CHECK(r.code == b.code);
      CHECK(r.err.find(b.mentions) != std::string::npos);
      CHECK(r.err.find("missing.csv") == std::string::npos);
    }
    // An output directory that cannot be made is EX_CANTCREAT (73), also before the data.
    {
      std::ofstream f(dir / "file");
      f << "x\n";
    }
    Result r = run_cli(
        "sample --data " + (dir / "missing.csv").string() + " --out " + (dir / "file").string(),
        dir);
    CHECK(r.code == 73);
    CHECK(r.err.find("file") != std::string::npos);
    r = run_cli("sample --data " + (dir / "missing.csv").string() + " --out ''", dir);
    CHECK(r.code == 64);
    CHECK(r.err.find("--out") != std::string::npos);
    fs::remove_all(dir);
  }
}

TEST_SUITE("unit") {
  TEST_CASE(
      "flymc data synth-robust writes synth_robust's data; flymc sample --model robust runs") {
    const fs::path dir = temp_dir("robust");
    const std::string npy = (dir / "r.npy").string(), csv = (dir / "r.csv").string();
    Result r = run_cli(
        "data synth-robust --n 3000 --d 4 --seed 2 --nu 3 --noise-scale 0.5 --out " + npy, dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    r = run_cli("data synth-robust --n 3000 --d 4 --seed 2 --nu 3 --noise-scale 0.5 --out " + csv,
                dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const flymc::Dataset ref = flymc::synth_robust(3000, 4, 2, 3.0, 0.5);
    for (const std::string& path : {npy, csv}) {
      CAPTURE(path);
      const flymc::Dataset got = flymc::load_dataset(path, flymc::LabelDomain::any);
      REQUIRE(got.n() == 3000);
      REQUIRE(got.d() == 4);
      bool same = true;
      for (std::size_t i = 0; i < 3000; ++i) {
        same = same && got.y()[i] == ref.y()[i];
        for (std::size_t j = 0; j < 4; ++j) same = same && got.row(i)[j] == ref.row(i)[j];
      }
      CHECK(same);
    }
    // The paper's configuration on it: Laplace prior, slice sampling, MAP-tuned bound.
    const std::string out = (dir / "run").string();
    r = run_cli("sample --data " + npy +
                    " --model robust --nu 3 --noise-scale 0.5 --prior laplace --kernel slice "
                    "--chains 2 --warmup 200 --iters 300 --seed 4 --quiet --out " +
                    out,
                dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::ifstream f(out + "/summary.json");
    const auto j = nlohmann::json::parse(f);
    REQUIRE(j["params"].size() == 4);
    CHECK(j["params"][3]["name"] == "theta.4");
    CHECK(j["run"]["bright_mean"].get<double>() < 300.0);  // a small fraction of the data
    // The true coefficients are recovered (sd ~ 0.01 at N = 3000).
    const auto truth = flymc::synth_robust_params(4, 2).theta;
    for (std::size_t k = 0; k < 4; ++k)
      CHECK(std::fabs(j["params"][k]["mean"].get<double>() - truth[k]) < 0.1);
    // A response beyond 1e100 is a data error naming its row and field.
    {
      std::ofstream bad(dir / "bad.csv");
      bad << "0.5,1,2\n1e101,1,2\n";
    }
    r = run_cli("sample --model robust --data " + (dir / "bad.csv").string() + " --out " +
                    (dir / "o").string(),
                dir);
    CHECK(r.code == 65);
    CHECK(r.err.find("row 2: field 1 (response)") != std::string::npos);
    fs::remove_all(dir);
  }
}

TEST_SUITE("unit") {
  TEST_CASE("flymc data fmnist --augment writes build_fmnist's rows; flymc sample reads them") {
    const fs::path dir = temp_dir("augment");
    const std::string npy = (dir / "fm.npy").string();
    Result r = run_cli(
        "data fmnist --classes 7,9 --pca 3 --split test --augment 2 --seed 3 --out " + npy, dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    flymc::FmnistOptions o;
    o.pca = 3;
    o.split = "test";
    o.augment = 2;
    o.seed = 3;
    const flymc::Dataset ref = flymc::build_fmnist(o);
    const flymc::Dataset got = flymc::load_dataset(npy, flymc::LabelDomain::binary);
    REQUIRE(got.n() == 6000);
    REQUIRE(got.d() == 4);
    bool same = true;
    for (std::size_t i = 0; i < got.n(); ++i) {
      same = same && got.y()[i] == ref.y()[i];
      for (std::size_t j = 0; j < 4; ++j) same = same && got.row(i)[j] == ref.row(i)[j];
    }
    CHECK(same);
    r = run_cli("sample --data " + npy + " --chains 1 --warmup 100 --iters 100 --seed 1 --quiet " +
                    "--out " + (dir / "run").string(),
                dir);
    CHECK_MESSAGE(r.code == 0, r.err);
    // A negative K is refused with a message naming the option; nothing is written.
    r = run_cli("data fmnist --augment -1 --out " + (dir / "bad.npy").string(), dir);
    CHECK(r.code == 78);
    CHECK(r.err.find("--augment -1") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "bad.npy"));
    fs::remove_all(dir);
  }
}
