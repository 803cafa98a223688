// The real `flymc` binary, checkpointed: SIGKILL at random (seeded) instants and resumed until
// done, or SIGTERM and resumed, must give the draw files (minus their Elapsed Time lines) and the
// summary draws of an uninterrupted run; bad resumes fail with clear messages and sysexits codes;
// a forced bound violation is reported by `flymc sample` and `flymc summary`.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_process.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/io/stan_csv.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

using flymc::test::check_same_run;
using flymc::test::slurp;
using flymc::test::Status;
using flymc::test::wait_for;

fs::path temp_dir(const std::string& name) {
  return flymc::test::temp_dir("flymc-cli-ckpt-", name);
}

/// Starts `flymc args...` with stdout and stderr in dir/stdout.txt and dir/stderr.txt.
pid_t spawn(const std::string& args, const fs::path& dir) {
  return flymc::test::spawn_process(FLYMC_CLI_PATH, flymc::test::with_fixed_defaults(args), dir);
}

Status run(const std::string& args, const fs::path& dir) { return wait_for(spawn(args, dir), dir); }

/// A workload of about a second on an idle core: long enough to be interrupted many times.
std::string long_run_options() {
  return " --chains 2 --warmup 20000 --iters 300000 --thin 10 --seed 7 --quiet";
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE(
      "flymc sample: SIGTERM or SIGINT stops after a checkpoint (exit 75); --resume completes it") {
    const fs::path dir = temp_dir("sigterm");
    flymc::save_csv(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.csv").string());
    const std::string base = "sample --data " + (dir / "d.csv").string() + long_run_options();
    REQUIRE(run(base + " --threads 2 --out " + (dir / "ref").string(), dir).code == 0);

    for (const int sig : {SIGTERM, SIGINT}) {
      const std::string sig_name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
      CAPTURE(sig_name);
      const fs::path out = dir / ("run-" + sig_name);
      const pid_t pid =
          spawn(base + " --threads 2 --checkpoint-every 5000 --out " + out.string(), dir);
      // Wait until the chains are sampling (a first state is saved), then ask it to stop.
      const auto t0 = std::chrono::steady_clock::now();
      while (!fs::exists(out / "checkpoint" / "chain-1.ckpt") &&
             std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ::kill(pid, sig);
      const Status s = wait_for(pid, dir);
      CAPTURE(s.err);
      CHECK(s.code == 75);
      CHECK(s.err.find("stopped by " + sig_name) != std::string::npos);
      CHECK(s.err.find("--resume") != std::string::npos);
      CHECK(!fs::exists(out / "summary.json"));
      // Resumed on another thread count; must not accept other options.
      Status r = run("sample --resume " + out.string() + " --chains 3", dir);
      CHECK(r.code == 64);
      CHECK(r.err.find("--chains") != std::string::npos);
      r = run("sample --resume " + out.string() + " --threads 1 --quiet", dir);
      CAPTURE(r.err);
      REQUIRE(r.code == 0);
      check_same_run(dir / "ref", out, 2);
    }
    fs::remove_all(dir);
  }

  TEST_CASE("a second run into a live checkpointed run's directory exits 73 and deletes nothing") {
    // The bug: the second run removed the live run's checkpoint files before it found the lock
    // taken, so the first run could no longer be resumed after a kill.
    const fs::path dir = temp_dir("live-ckpt"), logs = dir / "second";
    fs::create_directories(logs);
    flymc::save_csv(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.csv").string());
    const fs::path out = dir / "run";
    const std::string base = "sample --data " + (dir / "d.csv").string() + long_run_options();
    const pid_t first = spawn("sample --data " + (dir / "d.csv").string() +
                                  " --chains 2 --warmup 20000 --iters 3000000 --seed 7 --quiet "
                                  "--threads 1 --checkpoint-every 20000 --out " +
                                  out.string(),
                              dir);
    const auto t0 = std::chrono::steady_clock::now();
    while (!fs::exists(out / "checkpoint" / "run.ckpt") &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(fs::exists(out / "checkpoint" / "run.ckpt"));
    const std::string manifest = slurp(out / "checkpoint" / "run.ckpt");
    const Status s = run(base + " --checkpoint-every 100 --out " + out.string(), logs);
    CHECK(s.code == 73);
    CHECK(s.err.find("another flymc run is writing this directory") != std::string::npos);
    CHECK(s.err.find(std::to_string(first)) != std::string::npos);  // names the holder
    CHECK(slurp(out / "checkpoint" / "run.ckpt") == manifest);
    ::kill(first, SIGKILL);
    wait_for(first, dir);
    // The killed run resumes from what the second run left: it saves a new state of chain 1 (so
    // it is sampling), then stops cleanly on SIGTERM. (Running its 3·10⁶ iterations to the end
    // would prove no more and take a minute.)
    const fs::path state = out / "checkpoint" / "chain-1.ckpt";
    const std::string before = fs::exists(state) ? slurp(state) : std::string();
    const pid_t again = spawn("sample --resume " + out.string() + " --quiet", dir);
    const auto t1 = std::chrono::steady_clock::now();
    while ((!fs::exists(state) || slurp(state) == before) &&
           std::chrono::steady_clock::now() - t1 < std::chrono::seconds(60))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(again, SIGTERM);
    const Status r = wait_for(again, dir);
    CAPTURE(r.err);
    CHECK(r.code == 75);
    CHECK(r.err.find("stopped by SIGTERM") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("two plain runs into one directory: the second exits 73 and the first's draws stay") {
    // The bug: without checkpointing no lock was taken; the second run (seed 2) truncated and
    // re-headed the first's draw files while the first kept appending to them.
    const fs::path dir = temp_dir("live-plain"), logs = dir / "second";
    fs::create_directories(logs);
    flymc::save_csv(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.csv").string());
    const fs::path out = dir / "run";
    const std::string data = "sample --data " + (dir / "d.csv").string();
    // Long enough that the second run always meets the first one running.
    const pid_t first = spawn(data +
                                  " --chains 2 --warmup 20000 --iters 3000000 --thin 100 --seed 7 "
                                  "--quiet --threads 2 --out " +
                                  out.string(),
                              dir);
    const auto t0 = std::chrono::steady_clock::now();
    while (!fs::exists(out / "chain-1.csv") &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const Status s = run(
        data + " --seed 2 --chains 2 --warmup 50 --iters 100 --quiet --out " + out.string(), logs);
    CHECK(s.code == 73);
    const Status f = wait_for(first, dir);
    CAPTURE(f.err);
    REQUIRE(f.code == 0);
    const flymc::StanCsv csv = flymc::read_stan_csv((out / "chain-1.csv").string());
    CHECK(csv.draws.size() == 30000);  // 3,000,000 iterations, thin 100
    CHECK(slurp(out / "chain-1.csv").find("seed=7") != std::string::npos);
    CHECK(slurp(out / "chain-1.csv").find("seed=2") == std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("a new run replaces a finished run's files in its directory, never mixes with them") {
    const fs::path dir = temp_dir("replace");
    flymc::save_csv(*flymc::test::logistic_data(500, 3, 5), (dir / "d.csv").string());
    const fs::path out = dir / "run";
    const std::string base = "sample --data " + (dir / "d.csv").string() +
                             " --warmup 100 --iters 200 --quiet --out " + out.string();
    REQUIRE(run(base + " --chains 5 --checkpoint-every 50", dir).code == 0);
    REQUIRE(fs::exists(out / "chain-5.csv"));
    REQUIRE(fs::exists(out / "checkpoint" / "chain-5.ckpt"));
    std::ofstream(out / "notes.txt") << "mine";  // not flymc's: left alone
    REQUIRE(run(base + " --chains 2 --seed 3", dir).code == 0);
    CHECK(fs::exists(out / "chain-2.csv"));
    for (const char* gone : {"chain-3.csv", "chain-4.csv", "chain-5.csv"})
      CHECK(!fs::exists(out / gone));
    CHECK(!fs::exists(out / "checkpoint" / "run.ckpt"));
    CHECK(!fs::exists(out / "checkpoint" / "chain-1.ckpt"));
    CHECK(slurp(out / "notes.txt") == "mine");
    const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
    CHECK(summary["run"]["chains"] == 2);
    fs::remove_all(dir);
  }

  TEST_CASE("flymc sample --resume: clear errors for a missing, corrupt, busy or mismatched run") {
    const fs::path dir = temp_dir("resume-errors");
    flymc::save_csv(*flymc::test::logistic_data(500, 3, 5), (dir / "d.csv").string());
    const fs::path out = dir / "run";
    const std::string fresh = "sample --data " + (dir / "d.csv").string() +
                              " --chains 2 --warmup 100 --iters 300 --quiet --out " + out.string();
    Status s = run(fresh + " --checkpoint-every 0", dir);
    CHECK(s.code == 78);
    CHECK(s.err.find("--checkpoint-every") != std::string::npos);
    s = run(fresh, dir);  // no checkpointing
    REQUIRE(s.code == 0);
    s = run("sample --resume " + out.string(), dir);
    CHECK(s.code == 78);
    CHECK(s.err.find("no checkpoint") != std::string::npos);
    s = run("sample --resume " + (dir / "nowhere").string(), dir);
    CHECK(s.code == 78);
    s = run("sample", dir);
    CHECK(s.code == 64);
    CHECK(s.err.find("--data") != std::string::npos);

    REQUIRE(run(fresh + " --checkpoint-every 100", dir).code == 0);
    REQUIRE(run("sample --resume " + out.string() + " --quiet", dir).code == 0);  // idempotent
    // Held by another process: refused, nothing touched.
    {
      const int fd = ::open((out / ".lock").c_str(), O_RDWR);
      REQUIRE(fd >= 0);
      REQUIRE(::flock(fd, LOCK_EX) == 0);
      s = run("sample --resume " + out.string(), dir);
      CHECK(s.code == 73);
      CHECK(s.err.find("another flymc run is writing this directory") != std::string::npos);
      ::close(fd);
    }
    // A corrupted manifest: the checksum catches it.
    const fs::path manifest = out / "checkpoint" / "run.ckpt";
    std::string bytes = slurp(manifest);
    bytes[bytes.size() / 2] ^= 0x5a;
    std::ofstream(manifest, std::ios::binary) << bytes;
    s = run("sample --resume " + out.string(), dir);
    CHECK(s.code == 78);
    CHECK(s.err.find("checksum") != std::string::npos);
    CHECK(s.err.find("run.ckpt") != std::string::npos);
    // The data file changed since the run started: 65, naming it.
    REQUIRE(run(fresh + " --checkpoint-every 100", dir).code == 0);
    flymc::save_csv(*flymc::test::logistic_data(500, 3, 6), (dir / "d.csv").string());
    s = run("sample --resume " + out.string(), dir);
    CHECK(s.code == 65);
    CHECK(s.err.find("d.csv") != std::string::npos);
    CHECK(s.err.find("differ") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("a forced bound violation is reported by flymc sample and flymc summary") {
    const fs::path dir = temp_dir("violation");
    flymc::save_csv(*flymc::test::logistic_data(2000, 3, 5), (dir / "d.csv").string());
    const std::string base = "sample --data " + (dir / "d.csv").string() +
                             " --chains 2 --warmup 200 --iters 500 --quiet --out ";
    Status s = run(base + (dir / "ok").string(), dir);
    REQUIRE(s.code == 0);
    CHECK(s.err.find("bound violation") == std::string::npos);
    s = run("summary " + (dir / "ok").string(), dir);
    CHECK(s.code == 0);
    CHECK(s.out.find("bound checks: 0 violations") != std::string::npos);

    // By default a violation stops the run with an error naming the model, datum and predictor.
    s = run(base + (dir / "stop").string() + " --test-bound-excess 1e-3", dir);
    CAPTURE(s.err);
    CHECK(s.code == 70);
    CHECK(s.err.find("the logistic model violates FlyMC's lower bound") != std::string::npos);
    CHECK(s.err.find("at datum ") != std::string::npos);
    CHECK(s.err.find("eta = ") != std::string::npos);
    CHECK(s.err.find("--on-bound-violation finish") != std::string::npos);
    // Asked to, it finishes, warns, and its summary says it is not exact.
    s = run(base + (dir / "bad").string() + " --test-bound-excess 1e-3 --on-bound-violation finish",
            dir);
    CAPTURE(s.err);
    CHECK(s.code == 0);
    CHECK(s.err.find("warning:") != std::string::npos);
    CHECK(s.err.find("bound violations, so the run is not exact") != std::string::npos);
    CHECK(nlohmann::json::parse(slurp(dir / "bad" / "summary.json"))["run"]["exact"] == false);
    s = run("summary " + (dir / "bad").string(), dir);
    CHECK(s.code == 0);
    CHECK(s.out.find("bound checks: ") != std::string::npos);
    CHECK(s.out.find("bound checks: 0 violations") == std::string::npos);
    CHECK(s.err.find("bound violations in chain 1, 2") != std::string::npos);
    // The hook stays out of --help; the checkpoint options are in it.
    s = run("sample --help", dir);
    CHECK(s.out.find("--checkpoint-every") != std::string::npos);
    CHECK(s.out.find("--resume") != std::string::npos);
    CHECK(s.out.find("--test-bound-excess") == std::string::npos);
    fs::remove_all(dir);
  }
}

TEST_SUITE("slow") {
  // SIGKILL at seeded random instants (set-up, warm-up, sampling, writing the end), then resume
  // (or restart, if killed before the run manifest existed) until the run completes. Timing on a
  // loaded machine varies, so the instants at which the kills land vary from run to run; every
  // outcome must give the uninterrupted run's files.
  TEST_CASE(
      "flymc sample killed with SIGKILL at random instants and resumed equals an "
      "uninterrupted run") {
    const fs::path dir = temp_dir("sigkill");
    flymc::save_csv(*flymc::test::logistic_data(20000, 6, 3), (dir / "d.csv").string());
    const std::string base = "sample --data " + (dir / "d.csv").string() + long_run_options();
    const auto t_ref = std::chrono::steady_clock::now();
    REQUIRE(run(base + " --out " + (dir / "ref").string(), dir).code == 0);
    const double ref_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ref).count();
    MESSAGE("uninterrupted run: " << ref_seconds << " s");

    const fs::path out = dir / "run";
    const std::string fresh = base + " --checkpoint-every 2000 --out " + out.string();
    const std::string resume = "sample --resume " + out.string() + " --quiet";
    flymc::Rng rng(20240601, 0);
    int kills = 0, resumed_kills = 0, sessions = 0;
    bool done = false;
    for (int k = 0; k < 8 && !done; ++k, ++sessions) {
      const bool started = fs::exists(out / "checkpoint" / "run.ckpt");
      const pid_t pid = spawn(started ? resume + (k % 2 ? " --threads 1" : "") : fresh, dir);
      // Up to ~40% of an uninterrupted run: each session gets killed part-way.
      const double delay = (0.02 + 0.4 * rng.uniform()) * std::max(ref_seconds, 0.3);
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      ::kill(pid, SIGKILL);
      const Status s = wait_for(pid, dir);
      if (s.signal == SIGKILL) {
        ++kills;
        resumed_kills += started ? 1 : 0;
      } else {
        CAPTURE(s.err);
        REQUIRE(s.code == 0);  // finished before the kill
        done = true;
      }
    }
    for (int k = 0; k < 3 && !done; ++k, ++sessions) {
      const bool started = fs::exists(out / "checkpoint" / "run.ckpt");
      const Status s = run(started ? resume : fresh, dir);
      CAPTURE(s.err);
      REQUIRE(s.code == 0);
      done = true;
    }
    MESSAGE(kills << " kills landed over " << sessions << " sessions, " << resumed_kills
                  << " of them in resumed sessions");
    CHECK(kills >= 3);
    CHECK(resumed_kills >= 2);
    check_same_run(dir / "ref", out, 2);
    fs::remove_all(dir);
  }
}
