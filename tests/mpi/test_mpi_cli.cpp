// `mpirun flymc sample` (built with -DFLYMC_MPI=ON): chains dealt to ranks in uneven blocks give
// the one-process run's draw files bit for bit and its pooled summary; a rank killed mid-run
// takes the job down and --resume (on any number of ranks) continues every chain to the
// uninterrupted run's draws; the run-directory lock still keeps a second job out; scalable MH and
// FlyMC on data sharded over the ranks (--shard-data) give the one-process draws, and, stopped,
// resume on any number of ranks to them. CTest label "mpi";
// each test runs in its own temporary directory.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_process.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/io/output.hpp"
#include "flymc/io/stan_csv.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using flymc::test::slurp;
using flymc::test::Status;
using flymc::test::wait_for;

namespace {

/// Starts `mpirun -np ranks flymc args...` (3 ranks on 2 cores need --oversubscribe).
pid_t spawn_mpi(int ranks, const std::string& args, const fs::path& dir) {
  return flymc::test::spawn_process(FLYMC_MPIEXEC,
                                    "--oversubscribe -np " + std::to_string(ranks) + " " +
                                        FLYMC_CLI_PATH + " " +
                                        flymc::test::with_fixed_defaults(args),
                                    dir);
}
Status run_mpi(int ranks, const std::string& args, const fs::path& dir) {
  return wait_for(spawn_mpi(ranks, args, dir), dir);
}
Status run_one(const std::string& args, const fs::path& dir) {
  return wait_for(
      flymc::test::spawn_process(FLYMC_CLI_PATH, flymc::test::with_fixed_defaults(args), dir), dir);
}

/// Waits up to 60 s for `file` to appear (a checkpoint a running job writes); the caller's
/// checks then fail if it did not.
void wait_for_file(const fs::path& file) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!fs::exists(file) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

/// Waits up to `seconds` for `pid` to end: the test fails instead of hanging.
Status wait_at_most(pid_t pid, const fs::path& dir, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  while (::waitpid(pid, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(seconds)) {
      ::kill(pid, SIGKILL);
      FAIL("the job did not end within " << seconds << " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Status s;
  if (WIFEXITED(st)) s.code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
  s.err = slurp(dir / "stderr.txt");
  return s;
}

/// The process ids whose parent is `parent` (mpirun starts the ranks of its own node).
std::vector<pid_t> children(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string stat;
    std::getline(f, stat);
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return out;
}

/// The MPI rank of process `pid`, from the environment mpirun gave it (-1 if none is found).
int rank_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string key = "OMPI_COMM_WORLD_RANK=";
  for (std::string var; std::getline(f, var, '\0');)
    if (var.rfind(key, 0) == 0) return std::stoi(var.substr(key.size()));
  return -1;
}

/// Whether process `pid` runs (a zombie awaiting its parent does not).
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

/// What `flymc summary DIR` computes: the diagnostics of every parameter from the draw files.
std::vector<flymc::NamedSummary> summary_of_files(const fs::path& dir, int chains) {
  std::vector<flymc::StanCsv> files;
  for (int c = 1; c <= chains; ++c)
    files.push_back(flymc::read_stan_csv((dir / ("chain-" + std::to_string(c) + ".csv")).string()));
  const auto& cols = files.front().columns;
  const std::size_t len = files.front().draws.size();
  std::vector<flymc::ChainDraws> per_col(cols.size(), flymc::ChainDraws(files.size()));
  for (std::size_t c = 0; c < files.size(); ++c)
    for (std::size_t k = 0; k < cols.size(); ++k)
      for (std::size_t i = 0; i < len; ++i) per_col[k][c].push_back(files[c].draws[i][k]);
  return flymc::summarize_columns(cols, per_col);
}

/// summary.json's params equal the diagnostics of the draw files.
void check_summary_is_pooled(const fs::path& dir, int chains) {
  const auto j = nlohmann::json::parse(slurp(dir / "summary.json"));
  const auto files = summary_of_files(dir, chains);
  REQUIRE(j["params"].size() == files.size());
  CHECK(j["run"]["chains"] == chains);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& p = j["params"][i];
    CAPTURE(files[i].name);
    CHECK(p["name"] == files[i].name);
    CHECK(p["mean"].get<double>() == files[i].s.mean);
    CHECK(p["sd"].get<double>() == files[i].s.sd);
    CHECK(p["q50"].get<double>() == files[i].s.q50);
    CHECK(p["ess_bulk"].get<double>() == files[i].s.ess_bulk);
    CHECK(p["rhat"].get<double>() == files[i].s.rhat);
  }
}

/// About a second of sampling on an idle core: long enough to be interrupted.
std::string workload(const fs::path& dir, int chains = 4, long iters = 300000) {
  return "sample --data " + (dir / "d.csv").string() + " --chains " + std::to_string(chains) +
         " --warmup 20000 --iters " + std::to_string(iters) + " --thin 10 --seed 7 --quiet";
}

/// n rows of features (a weight 1 or 2, an offset, an intercept and two normal features), with
/// each row's predictor 0.3 + 0.5·x₄ − 0.2·x₅ + offset in `eta`, for responses the caller draws;
/// as a file, the columns after the response: 9,000 rows are three 4,096-row blocks.
flymc::Dataset rows_with_extras(std::size_t n, flymc::Rng& rng, std::vector<double>& eta) {
  flymc::Dataset ds(n, 5, "rows");
  eta.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds.mutable_row(i);
    x[0] = i % 3 == 0 ? 2.0 : 1.0;
    x[1] = 0.2 * rng.normal();
    x[2] = 1.0;
    x[3] = rng.normal();
    x[4] = rng.normal();
    eta[i] = 0.3 + 0.5 * x[3] - 0.2 * x[4] + x[1];
  }
  return ds;
}

/// A geometric count (negative binomial with dispersion 1) of mean e^eta.
double geometric(double eta, flymc::Rng& rng) {
  const double mu = std::exp(eta);
  return std::floor(std::log(rng.uniform()) / std::log(mu / (1.0 + mu)));
}

/// Each run (its command without the output directory) in one process, then on 2 and 3 ranks:
/// the same draw files.
void check_ranks_agree(const std::vector<std::string>& runs, const fs::path& dir) {
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const fs::path one = dir / ("one-" + std::to_string(r));
    Status s = run_one(runs[r] + one.string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    for (const int ranks : {2, 3}) {
      CAPTURE(runs[r]);
      CAPTURE(ranks);
      const fs::path out = dir / ("np" + std::to_string(ranks) + "-" + std::to_string(r));
      s = run_mpi(ranks, runs[r] + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(one, out, 2);
    }
  }
}

}  // namespace

TEST_SUITE("mpi") {
  TEST_CASE("mpirun -np 2 and -np 3, 4 chains: the one-process draws and the pooled summary") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "same");
    flymc::save_csv(*flymc::test::logistic_data(3000, 6, 3), (dir / "d.csv").string());
    const std::string base = "sample --data " + (dir / "d.csv").string() +
                             " --chains 4 --warmup 300 --iters 1500 --seed 7 --quiet --out ";
    Status s = run_one(base + (dir / "one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    for (const int ranks : {2, 3}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("np" + std::to_string(ranks));
      s = run_mpi(ranks, base + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "one", out, 4);
      check_summary_is_pooled(out, 4);
      // `flymc summary` prints the same table for both directories.
      const Status a = run_one("summary " + (dir / "one").string(), dir);
      const Status b = run_one("summary " + out.string(), dir);
      REQUIRE(a.code == 0);
      CHECK(a.out.substr(a.out.find('\n')) == b.out.substr(b.out.find('\n')));
    }
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--ess under mpirun: chains dealt to 2 and 3 ranks, and SMH sharded over 2, stop "
      "where one process stops, with its draws") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "ess");
    flymc::save_csv(*flymc::test::logistic_data(3000, 6, 3), (dir / "d.csv").string());
    flymc::save_npy(*flymc::test::logistic_data(3000, 6, 3), (dir / "d.npy").string());
    // Chains dealt to ranks gather their draws at every block's end to decide together.
    const std::string dealt = "sample --data " + (dir / "d.csv").string() +
                              " --algo full --kernel nuts --chains 4 --warmup 200 --ess 800 "
                              "--seed 7 --quiet --out ";
    Status s = run_one(dealt + (dir / "one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    const auto one = nlohmann::json::parse(flymc::test::slurp(dir / "one" / "summary.json"));
    CHECK(one["run"]["target_reached"].get<bool>());
    for (const int ranks : {2, 3}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("np" + std::to_string(ranks));
      s = run_mpi(ranks, dealt + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "one", out, 4);
      const auto j = nlohmann::json::parse(flymc::test::slurp(out / "summary.json"));
      CHECK(j["run"]["iters"] == one["run"]["iters"]);
      CHECK(j["run"]["target_reached"].get<bool>());
    }
    // On a shard every rank runs every chain and takes rank 0's decision.
    const std::string sharded = "sample --data " + (dir / "d.npy").string() +
                                " --algo smh --chains 2 --warmup 200 --ess 800 --seed 7 --quiet "
                                "--out ";
    s = run_one(sharded + (dir / "smh-one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    s = run_mpi(2, sharded + (dir / "smh-np2").string() + " --shard-data", dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    flymc::test::check_same_run(dir / "smh-one", dir / "smh-np2", 2);
    fs::remove_all(dir);
  }

  TEST_CASE("a rank killed with SIGKILL ends the job; --resume on 3 or 2 ranks continues it") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "kill");
    flymc::save_csv(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.csv").string());
    REQUIRE(run_one(workload(dir) + " --out " + (dir / "ref").string(), dir).code == 0);
    const fs::path out = dir / "run";
    const pid_t job =
        spawn_mpi(3, workload(dir) + " --checkpoint-every 5000 --out " + out.string(), dir);
    wait_for_file(out / "checkpoint" / "chain-4.ckpt");
    const std::vector<pid_t> ranks = children(job);
    REQUIRE(ranks.size() == 3);
    ::kill(ranks.back(), SIGKILL);
    const Status s = wait_at_most(job, dir, 60.0);
    CHECK(s.code != 0);
    // No rank left behind. mpirun may end a moment before the kernel has finished a rank it
    // killed, so each gets a few seconds to go; one that hung would still be there.
    for (const pid_t r : ranks) {
      const auto t1 = std::chrono::steady_clock::now();
      while (alive(r) && std::chrono::steady_clock::now() - t1 < std::chrono::seconds(10))
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      CHECK(!alive(r));
    }
    fs::copy(out, dir / "run2", fs::copy_options::recursive);
    Status r = run_mpi(3, "sample --resume " + out.string() + " --quiet", dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    flymc::test::check_same_run(dir / "ref", out, 4);
    r = run_mpi(2, "sample --resume " + (dir / "run2").string() + " --quiet", dir);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    flymc::test::check_same_run(dir / "ref", dir / "run2", 4);
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--shard-data: SMH and FlyMC read each rank's trials, weights and offsets, draws as one "
      "process") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "columns");
    // Columns: successes, trials, weight, offset, then an intercept and two features.
    const std::size_t n = 9000;
    flymc::Dataset ds(n, 6, "counts");
    flymc::Rng rng(11, 0);
    for (std::size_t i = 0; i < n; ++i) {
      double* x = ds.mutable_row(i);
      x[0] = 1.0 + double(i % 4);     // trials
      x[1] = i % 3 == 0 ? 2.0 : 1.0;  // weight
      x[2] = 0.3 * rng.normal();      // offset
      x[3] = 1.0;
      x[4] = rng.normal();
      x[5] = rng.normal();
      const double p = 1.0 / (1.0 + std::exp(-(0.2 + 0.6 * x[4] - 0.4 * x[5] + x[2])));
      double y = 0.0;
      for (int t = 0; t < int(x[0]); ++t) y += rng.uniform() < p ? 1.0 : 0.0;
      ds.mutable_y()[i] = y;
    }
    flymc::save_npy(ds, (dir / "d.npy").string());
    const std::string base = "sample --data " + (dir / "d.npy").string() +
                             " --model binomial --trials 1 --weights 2 --offset 3 --algo smh "
                             "--chains 2 --warmup 200 --iters 800 --seed 5 --quiet --shard-data "
                             "--out ";
    Status s = run_one(base + (dir / "one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    for (const int ranks : {2, 3}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("np" + std::to_string(ranks));
      s = run_mpi(ranks, base + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "one", out, 2);
    }
    // FlyMC evaluates bright data held by other ranks, with their trials, weights and offsets
    // (the untuned bound keeps hundreds of them bright).
    const std::string fly = "sample --data " + (dir / "d.npy").string() +
                            " --model binomial --trials 1 --weights 2 --offset 3 --algo flymc "
                            "--bound untuned --chains 2 --warmup 200 --iters 600 --seed 5 --quiet "
                            "--shard-data --out ";
    s = run_one(fly + (dir / "fly-one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    for (const int ranks : {2, 3}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("fly-np" + std::to_string(ranks));
      s = run_mpi(ranks, fly + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "fly-one", out, 2);
    }
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--shard-data: SMH with sigma or phi inferred (Student-t, negative binomial), weights and "
      "offsets read by each rank, draws as one process") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "global");
    const std::size_t n = 9000;
    flymc::Rng rng(12, 0);
    std::vector<double> eta;
    flymc::Dataset ds = rows_with_extras(n, rng, eta);
    std::vector<double> st(n), nb(n);
    for (std::size_t i = 0; i < n; ++i) {
      double chi2 = 0.0;  // t with 4 degrees of freedom
      for (int k = 0; k < 4; ++k) chi2 += std::pow(rng.normal(), 2);
      st[i] = eta[i] + 0.7 * rng.normal() / std::sqrt(chi2 / 4.0);
      nb[i] = geometric(eta[i], rng);
    }
    std::copy(st.begin(), st.end(), ds.mutable_y().begin());
    flymc::save_npy(ds, (dir / "st.npy").string());
    std::copy(nb.begin(), nb.end(), ds.mutable_y().begin());
    flymc::save_npy(ds, (dir / "nb.npy").string());
    const std::string opts =
        " --weights 1 --offset 2 --algo smh --chains 2 --warmup 200 "
        "--iters 800 --seed 5 --quiet --shard-data --out ";
    check_ranks_agree({"sample --data " + (dir / "st.npy").string() + " --model student_t" + opts,
                       "sample --data " + (dir / "nb.npy").string() + " --model negbin" + opts},
                      dir);
    // A count out of the domain in the last rank's rows: every rank gives the error naming it.
    ds.mutable_y()[8500] = -1.0;
    flymc::save_npy(ds, (dir / "bad.npy").string());
    const Status s = run_mpi(
        3, "sample --data " + (dir / "bad.npy").string() + " --model negbin" + opts + "x", dir);
    CHECK(s.code == 65);
    CHECK(s.err.find("row 8501: field 1 (response)") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--shard-data: FlyMC on the negative binomial's per-datum kappa, with and without weights "
      "and offsets; Gaussian regression with sigma inferred by regular MCMC; draws as one "
      "process") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "flycounts");
    // The untuned bound keeps hundreds of data bright, most of them another rank's.
    const std::size_t n = 9000;
    flymc::Rng rng(13, 0);
    std::vector<double> eta;
    flymc::Dataset ds = rows_with_extras(n, rng, eta);
    std::vector<double> gs(n);
    for (std::size_t i = 0; i < n; ++i) {
      ds.mutable_y()[i] = geometric(eta[i], rng);
      gs[i] = eta[i] + 0.8 * rng.normal();
    }
    flymc::save_npy(ds, (dir / "nb.npy").string());
    std::copy(gs.begin(), gs.end(), ds.mutable_y().begin());
    flymc::save_npy(ds, (dir / "gs.npy").string());
    const std::string opts =
        " --chains 2 --warmup 200 --iters 600 --seed 5 --quiet --shard-data --out ";
    const std::string fly = " --model negbin --dispersion 1 --algo flymc --bound untuned";
    check_ranks_agree(
        {"sample --data " + (dir / "nb.npy").string() + fly + " --weights 1 --offset 2" + opts,
         // No extras: the factors of κ_n alone travel with the records.
         "sample --data " + (dir / "nb.npy").string() + fly +
             " --kernel rwmh --z explicit --resample-fraction 0.3" + opts,
         "sample --data " + (dir / "gs.npy").string() +
             " --model gaussian --weights 1 --offset 2 --algo full" + opts},
        dir);
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--shard-data: SMH on 1, 2 and 4 ranks, each reading its rows, draws as one process "
      "(logistic and robust regression)") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "shard");
    // Five blocks of 4,096 rows (the last one short): on 4 ranks one holds two, the rest one.
    flymc::save_npy(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.npy").string());
    const std::string base = "sample --data " + (dir / "d.npy").string() +
                             " --algo smh --chains 2 --warmup 200 --iters 1500 --seed 7 --quiet "
                             "--shard-data --out ";
    Status s = run_one(base + (dir / "one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    const auto one = nlohmann::json::parse(slurp(dir / "one" / "summary.json"));
    CHECK(one["run"]["queries_per_iter"].get<double>() > 2.0);  // candidates in every test
    for (const int ranks : {1, 2, 4}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("np" + std::to_string(ranks));
      s = run_mpi(ranks, base + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "one", out, 2);
    }
    // Bounds made 20 times too small (a test hook): violations are common, on ranks that
    // rejected and on ranks that did not, and every rank must count them as one process does.
    const std::string bad = "sample --data " + (dir / "d.npy").string() +
                            " --algo smh --chains 2 --warmup 200 --iters 300 --seed 7 --quiet "
                            "--shard-data --test-bound-excess 3 --on-bound-violation finish --out ";
    // By default the violations stop the run, on every rank at the same proposal (none is left
    // waiting in a collective call), with the error one process gives.
    const std::string stop = bad.substr(0, bad.find("--on-bound-violation")) + "--out ";
    s = run_mpi(2, stop + (dir / "stop-np2").string(), dir);
    CHECK(s.code != 0);
    CHECK(s.err.find("scalable MH's remainder bound") != std::string::npos);
    s = run_one(bad + (dir / "one-bad").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    const auto one_bad = nlohmann::json::parse(slurp(dir / "one-bad" / "summary.json"));
    CHECK(one_bad["run"]["bound_violations"].get<double>() > 0.0);
    for (const int ranks : {2, 4}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("bad-np" + std::to_string(ranks));
      s = run_mpi(ranks, bad + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "one-bad", out, 2);
      const auto j = nlohmann::json::parse(slurp(out / "summary.json"));
      CHECK(j["run"]["bound_violations"] == one_bad["run"]["bound_violations"]);
    }
    // An HDF5 data set: each rank reads its rows by hyperslab, and the draws are one process's.
    flymc::save_hdf5(*flymc::test::logistic_data(20000, 6, 3), {(dir / "d.h5").string(), "/d"});
    const std::string h5 = "sample --data " + (dir / "d.h5").string() +
                           ":/d --algo smh --chains 2 --warmup 200 --iters 1500 --seed 7 --quiet "
                           "--shard-data --out ";
    s = run_one(h5 + (dir / "h5-one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    for (const int ranks : {2, 4}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("h5-np" + std::to_string(ranks));
      s = run_mpi(ranks, h5 + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "h5-one", out, 2);
    }
    // Robust regression: its MAP search (Newton and MM steps) and SMH's two-pass set-up fold
    // across the ranks as logistic regression's do.
    flymc::save_npy(*flymc::test::robust_data(20000, 6, 3), (dir / "r.npy").string());
    const std::string rob = "sample --data " + (dir / "r.npy").string() +
                            " --model robust --algo smh --chains 2 --warmup 200 --iters 1500 "
                            "--seed 7 --quiet --shard-data --out ";
    s = run_one(rob + (dir / "r-one").string(), dir);
    REQUIRE_MESSAGE(s.code == 0, s.err);
    for (const int ranks : {2, 4}) {
      CAPTURE(ranks);
      const fs::path out = dir / ("r-np" + std::to_string(ranks));
      s = run_mpi(ranks, rob + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(dir / "r-one", out, 2);
    }
    // What it does not run yet: every process gives the one clear error.
    s = run_mpi(
        2, "sample --data " + (dir / "d.npy").string() + " --algo full --shard-data --out x", dir);
    CHECK(s.code == 78);
    CHECK(s.err.find("--shard-data runs --algo flymc, smh (and --algo full for --model gaussian") !=
          std::string::npos);
    flymc::save_csv(*flymc::test::logistic_data(100, 3, 3), (dir / "d.csv").string());
    s = run_mpi(2, "sample --data " + (dir / "d.csv").string() + " --algo smh --shard-data --out x",
                dir);
    CHECK(s.code == 78);
    CHECK(s.err.find("--shard-data reads .npy files and HDF5 data sets") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--shard-data: FlyMC on 2, 3 and 4 ranks, each evaluating its own rows, draws as one "
      "process") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "shard-fly");
    flymc::save_npy(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.npy").string());
    flymc::save_npy(*flymc::test::robust_data(20000, 6, 3), (dir / "r.npy").string());
    const std::string data = "sample --data " + (dir / "d.npy").string() +
                             " --algo flymc --chains 2 --warmup 200 --iters 600 --seed 7 --quiet ";
    const std::string robust = "sample --data " + (dir / "r.npy").string() +
                               " --model robust --algo flymc --chains 2 --warmup 200 --iters 600 "
                               "--seed 7 --quiet ";
    // The implicit z-update with a gradient kernel (flipped data's rows update the gradient),
    // the explicit one (random data, repeats among them: the moves must be applied in the
    // update's order, not the ranks'; a version applying them rank by rank fails here), float
    // rows, and bounds made too small (violations, counted on the rank that evaluates them,
    // reach every rank's counters). The untuned bound keeps hundreds of data bright, so that the
    // order of the bright set, which its sums follow, is put to the test (on these rows the
    // MAP-tuned one keeps about one).
    // Robust regression's bound reads each bright datum's y_n and ξ_n, gathered to every rank.
    const std::vector<std::pair<std::string, std::vector<int>>> runs = {
        {data + "--kernel nuts --bound untuned", {2, 4}},
        {data + "--kernel rwmh --z explicit --resample-fraction 0.3 --bound untuned", {2, 3}},
        {data + "--kernel mala --metric fly --storage f32", {3}},
        {data + "--kernel hmc --z explicit --test-bound-excess 3 --on-bound-violation finish", {4}},
        {robust + "--kernel nuts --bound untuned --untuned-xi 0.5", {2, 4}},
    };
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const std::string& opts = runs[r].first;
      const std::vector<int>& ranks_list = runs[r].second;
      CAPTURE(opts);
      const fs::path one = dir / ("one" + std::to_string(r));
      Status s = run_one(opts + " --out " + one.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      const auto j1 = nlohmann::json::parse(slurp(one / "summary.json"));
      for (const int ranks : ranks_list) {
        CAPTURE(ranks);
        const fs::path out = dir / ("np" + std::to_string(ranks) + "-" + std::to_string(r));
        s = run_mpi(ranks, opts + " --shard-data --out " + out.string(), dir);
        REQUIRE_MESSAGE(s.code == 0, s.err);
        flymc::test::check_same_run(one, out, 2);
        const auto j = nlohmann::json::parse(slurp(out / "summary.json"));
        CHECK(j["run"]["bound_violations"] == j1["run"]["bound_violations"]);
        CHECK(j["run"]["bright_mean"] == j1["run"]["bright_mean"]);
      }
    }
    // What FlyMC does not run sharded yet: every process gives the one clear error.
    for (const std::string opt : {"--q-per-datum", "--slack-scale 1"}) {
      CAPTURE(opt);
      const Status s = run_mpi(2, data + opt + " --shard-data --out x", dir);
      CHECK(s.code == 78);
      CHECK(s.err.find("yet") != std::string::npos);
    }
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--shard-data: the single-index models (probit, Gaussian) with FlyMC and SMH of orders 2 "
      "and 3, and float rows under SMH, draws as one process") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "shard-glm");
    flymc::save_npy(*flymc::test::logistic_data(20000, 5, 4), (dir / "p.npy").string());
    flymc::save_npy(*flymc::test::robust_data(20000, 5, 4), (dir / "g.npy").string());
    const std::string common = " --chains 2 --warmup 200 --iters 600 --seed 7 --quiet ";
    const std::string probit = "sample --data " + (dir / "p.npy").string() + " --model probit";
    const std::string gauss =
        "sample --data " + (dir / "g.npy").string() + " --model gaussian --noise-scale 2";
    // FlyMC's generic bound reads each bright datum's record (tangent and response), gathered to
    // every rank; the untuned bound keeps many data bright. SMH's candidates read their own
    // rank's rows; its set-up sums (gradient, Hessian, the order-3 tensor) go across the ranks.
    const std::vector<std::string> runs = {
        probit + " --algo flymc --kernel nuts --bound untuned" + common,
        probit + " --algo smh" + common,
        probit + " --algo smh --smh-order 3" + common,
        probit + " --algo smh --storage f32" + common,
        gauss + " --algo flymc --kernel nuts" + common,
        gauss + " --algo smh --smh-order 3" + common,
        "sample --data " + (dir / "p.npy").string() + " --algo smh --smh-order 3" + common,
    };
    for (std::size_t r = 0; r < runs.size(); ++r) {
      CAPTURE(runs[r]);
      const fs::path one = dir / ("one" + std::to_string(r));
      Status s = run_one(runs[r] + " --out " + one.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      const fs::path out = dir / ("np2-" + std::to_string(r));
      s = run_mpi(2, runs[r] + " --shard-data --out " + out.string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(one, out, 2);
    }
    fs::remove_all(dir);
  }

  TEST_CASE(
      "--shard-data with checkpoints (SMH and FlyMC): SIGTERM to one rank stops every rank at "
      "one iteration; --resume on 4 ranks, or in one process, continues to the one-process "
      "draws") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "shard-ck");
    flymc::save_npy(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.npy").string());
    // About a second on 2 ranks: stopped a few milliseconds after chain 1's first save. FlyMC
    // with the untuned bound resumes hundreds of bright data, most of whose rows a resumed
    // rank does not hold: they come from the ranks that do.
    for (const std::string algo : {"--algo smh --iters 400000",
                                   "--algo flymc --kernel rwmh --bound untuned --iters 100000"}) {
      CAPTURE(algo);
      const fs::path sub = dir / (algo.substr(7, 3));
      fs::create_directories(sub);
      const std::string base = "sample --data " + (dir / "d.npy").string() + " " + algo +
                               " --chains 2 --warmup 500 --thin 20 --seed 9 --quiet --shard-data";
      Status s = run_one(base + " --out " + (sub / "one").string(), dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      const fs::path out = sub / "run";
      const pid_t job = spawn_mpi(2, base + " --checkpoint-every 1000 --out " + out.string(), dir);
      wait_for_file(out / "checkpoint" / "chain-1.ckpt");
      // SIGTERM to rank 1 alone (rank 0 writes the files and reports): the ranks agree on the
      // request, all stop at one iteration, save and end with 75, and rank 0 says so. A rank
      // that stopped on its own signal would leave rank 0 waiting in a collective call until
      // mpirun ended the job for rank 1's exit code, with nothing reported. (A signal to mpirun
      // itself reaches every rank, but mpirun may then end before it has passed on rank 0's
      // report.)
      const std::vector<pid_t> ranks = children(job);
      REQUIRE(ranks.size() == 2);
      const pid_t second = rank_of(ranks[0]) == 1 ? ranks[0] : ranks[1];
      REQUIRE(rank_of(second) == 1);
      ::kill(second, SIGTERM);
      s = wait_at_most(job, dir, 60.0);
      CAPTURE(s.err);
      // (rank 0 saw no signal of its own: it reports a stop "by request")
      CHECK(s.err.find("flymc: stopped by") != std::string::npos);
      CHECK(!fs::exists(out / "summary.json"));
      fs::copy(out, sub / "run2", fs::copy_options::recursive);
      s = run_mpi(4, "sample --resume " + out.string() + " --shard-data --quiet", dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(sub / "one", out, 2);
      s = run_one("sample --resume " + (sub / "run2").string() + " --quiet", dir);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      flymc::test::check_same_run(sub / "one", sub / "run2", 2);
    }
    fs::remove_all(dir);
  }

  TEST_CASE("a second job into a running job's directory exits 73; errors are reported once") {
    const fs::path dir = flymc::test::temp_dir("flymc-mpi-", "lock"), logs = dir / "second";
    fs::create_directories(logs);
    flymc::save_csv(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.csv").string());
    const fs::path out = dir / "run";
    const pid_t first = spawn_mpi(
        2, workload(dir, 4, 3000000) + " --checkpoint-every 100000 --out " + out.string(), dir);
    wait_for_file(out / "checkpoint" / "run.ckpt");
    const std::string manifest = slurp(out / "checkpoint" / "run.ckpt");
    Status s = run_mpi(3, workload(dir) + " --out " + out.string(), logs);
    CHECK(s.code == 73);
    CHECK(s.err.find("another flymc run is writing this directory") != std::string::npos);
    CHECK(slurp(out / "checkpoint" / "run.ckpt") == manifest);
    ::kill(first, SIGKILL);  // mpirun's death takes its ranks along
    wait_at_most(first, dir, 60.0);
    // Bad input: one clear message (from rank 0), the sysexits code, no hang.
    s = run_mpi(3, "sample --data " + (dir / "missing.csv").string() + " --out x", logs);
    CHECK(s.code == 65);
    auto count = [](const std::string& text, const std::string& what) {
      std::size_t n = 0;
      for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    CHECK(count(s.err, "flymc: error:") == 1);
    s = run_mpi(3, workload(dir, 2) + " --out " + (dir / "few").string(), logs);
    CHECK(s.code == 78);
    CHECK(s.err.find("2 chains cannot be dealt to 3 processes") != std::string::npos);
    fs::remove_all(dir);
  }
}
