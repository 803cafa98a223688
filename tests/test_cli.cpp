// End-to-end tests of the `flymc` command line: files written, summary.json keys, exit codes.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "flymc/loaders.hpp"
#include "flymc/stan_csv.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string err;
};

Result run_cli(const std::string& args, const fs::path& dir) {
  const fs::path err = dir / "stderr.txt";
  const std::string cmd = std::string(FLYMC_CLI_PATH) + " " + args + " >" +
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

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE(
      "flymc sample writes Stan CSV chains and summary.json with exactly the documented keys") {
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
    CHECK(top == std::set<std::string>{"params", "run"});
    CHECK(run == std::set<std::string>{"chains", "warmup", "iters", "setup_seconds",
                                       "warmup_seconds", "sampling_seconds", "queries_per_iter",
                                       "bright_mean", "accept_rate", "min_ess_bulk",
                                       "min_ess_bulk_per_second"});
    CHECK(param == std::set<std::string>{"name", "mean", "sd", "mcse_mean", "q5", "q50", "q95",
                                         "ess_bulk", "ess_tail", "rhat"});
    CHECK(j["params"].size() == 3);
    CHECK(j["run"]["chains"] == 2);

    const Result s = run_cli("summary " + out, dir);
    CHECK(s.code == 0);
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
    r = run_cli("sample --data " + (dir / "ok.csv").string() + " --kernel nuts", dir);
    CHECK(r.code == 64);
    r = run_cli("sample --bogus", dir);
    CHECK(r.code == 64);
    fs::remove_all(dir);
  }
}
