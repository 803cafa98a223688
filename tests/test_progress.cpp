// The progress display of `flymc sample` (tools/common/progress_line.hpp): the line's fields,
// when a log gets a line, and what the command writes on a terminal, into a log and with
// --quiet.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "cli_process.hpp"
#include "flymc/data/loaders.hpp"
#include "progress_line.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using flymc::cli::format_duration;
using flymc::cli::format_progress;
using flymc::cli::ProgressPlan;
using flymc::cli::ProgressSnapshot;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A `flymc sample` run long enough for the display to poll several times (it polls every
/// 250 ms), writing its stderr (and stdout) to `log`; `tty` runs it under script(1), which gives
/// it a pseudo-terminal.
int run_sample(const fs::path& dir, const std::string& extra, bool tty, const fs::path& log) {
  const fs::path data = dir / "d.csv";
  if (!fs::exists(data)) flymc::save_csv(*flymc::test::logistic_data(2000, 3, 5), data.string());
  const std::string cmd = std::string(FLYMC_CLI_PATH) + " sample --data " + data.string() +
                          " --algo flymc --chains 2 --warmup 20000 --thin 200 --seed 3 --out " +
                          (dir / log.stem()).string() + " " + extra;
  const std::string line = tty ? "script -qec '" + cmd + "' /dev/null >" + log.string() + " 2>&1"
                               : cmd + " >/dev/null 2>" + log.string();
  const int st = std::system(line.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// Everything written to the temporary file `out`, which is then closed.
std::string read_and_close(std::FILE* out) {
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) text.push_back(char(c));
  std::fclose(out);
  return text;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("progress line: phase, counts, rate, time left, bright count and acceptance") {
    const ProgressPlan plan{1000, 11000};
    ProgressSnapshot before, now;
    now.started = before.started = true;
    before.accept_sum = 10.0;
    before.accept_steps = 40;
    now.done = 500;
    now.accept_sum = 40.0;
    now.accept_steps = 140;  // 30 accepted in 100 steps since `before`
    now.bright_sum = 301.0;
    now.bright_chains = 2;
    const std::string warm = format_progress(plan, now, before, 100.0);
    CAPTURE(warm);
    CHECK(contains(warm, "warm-up"));
    CHECK(contains(warm, "500/11000 it"));
    CHECK(contains(warm, "100 it/s"));
    CHECK(contains(warm, "ETA 1:45"));  // 10,500 iterations at 100 per second
    CHECK(contains(warm, "bright 150.5"));
    CHECK(contains(warm, "accept 0.300"));

    now.done = 5500;
    before = now;  // no step in between: the acceptance over the whole run
    const std::string samp = format_progress(plan, now, before, NAN);
    CAPTURE(samp);
    CHECK(contains(samp, "sampling  50.0%"));
    CHECK(contains(samp, "? it/s"));
    CHECK(contains(samp, "ETA ?"));
    CHECK(contains(samp, "accept 0.286"));  // 40 / 140

    ProgressSnapshot bare;  // samplers without acceptance or bright set (PDMP, SGLD)
    bare.started = true;
    bare.done = 11000;
    const std::string done = format_progress(plan, bare, ProgressSnapshot{}, 50.0);
    CHECK(contains(done, "100.0%"));
    CHECK(!contains(done, "bright"));
    CHECK(!contains(done, "accept"));
    CHECK(contains(format_progress(plan, ProgressSnapshot{}, ProgressSnapshot{}, NAN), "set-up"));
  }

  TEST_CASE("progress line: durations, and a log line every tenth of the run or every 30 s") {
    CHECK(format_duration(0.4) == "0:00");
    CHECK(format_duration(65) == "1:05");
    CHECK(format_duration(7387) == "2:03:07");
    CHECK(format_duration(NAN) == "?");
    CHECK(format_duration(-1) == "?");
    CHECK(flymc::cli::plain_line_due(-1, 0, 0.3));   // the chains started
    CHECK(!flymc::cli::plain_line_due(3, 3, 29.0));  // same tenth, under 30 s
    CHECK(flymc::cli::plain_line_due(3, 3, 30.0));
    CHECK(flymc::cli::plain_line_due(3, 5, 0.1));
  }

  TEST_CASE("progress display: a run over before the first poll still logs its set-up line") {
    // The replayed failure: `flymc sample` on 2,000 rows finished set-up and sampling within the
    // display's first 250 ms on a fast machine, and the log had the last line but no set-up line.
    flymc::Progress progress(2);
    progress.chains_started = true;
    for (auto& g : progress.chains) g.publish(1000, 200.0, 1000, 9.0);
    std::FILE* out = std::tmpfile();
    REQUIRE(out != nullptr);
    {
      flymc::cli::ProgressDisplay display(progress, 2, ProgressPlan{0, 2000},
                                          flymc::cli::ProgressDisplay::Mode::plain, out);
    }  // stopped at once: no poll ran
    const std::string text = read_and_close(out);
    CAPTURE(text);
    CHECK(contains(text, "flymc: set-up under "));
    CHECK(contains(text, "flymc: sampling 100.0% | 2000/2000 it"));
    CHECK(text.find("set-up") < text.find("sampling"));
  }

  TEST_CASE("progress display: the set-up line even when its thread starts after the chains") {
    // The replayed bug: the display's thread took its first snapshot itself, so when it was
    // scheduled after a quick set-up (a loaded machine) it never saw the set-up end.
    flymc::Progress progress(2);
    progress.chains_started = true;
    for (auto& g : progress.chains) g.publish(500, 100.0, 500, 7.0);
    std::FILE* out = std::tmpfile();
    REQUIRE(out != nullptr);
    {
      flymc::cli::ProgressDisplay display(progress, 2, ProgressPlan{0, 2000},
                                          flymc::cli::ProgressDisplay::Mode::plain, out);
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      for (auto& g : progress.chains) g.publish(1000, 200.0, 1000, 9.0);
    }
    const std::string text = read_and_close(out);
    CAPTURE(text);
    CHECK(contains(text, "flymc: set-up "));
    CHECK(contains(text, "flymc: sampling  50.0% | 1000/2000 it"));
    CHECK(contains(text, "bright 7.0 | accept 0.200"));
    CHECK(contains(text, "flymc: sampling 100.0% | 2000/2000 it"));  // written by stop()
  }

  TEST_CASE("flymc sample: a live line on a terminal, plain lines in a log, none with --quiet") {
    const flymc::test::TempDir tmp("progress-cli");
    const fs::path dir = tmp.path();
    REQUIRE(run_sample(dir, "--iters 1000000", false, dir / "log.txt") == 0);
    const std::string log = flymc::test::slurp(dir / "log.txt");
    CAPTURE(log);
    CHECK(!contains(log, "\r"));
    CHECK(contains(log, "flymc: set-up "));
    CHECK(contains(log, "flymc: sampling 100.0% | 2040000/2040000 it"));
    CHECK(contains(log, "bright "));
    CHECK(contains(log, "accept "));
    // Every tenth at most once, and a line per 30 s at most: far fewer than the polls.
    CHECK(std::count(log.begin(), log.end(), '\n') <= 16);

    REQUIRE(run_sample(dir, "--iters 1000000 --quiet", false, dir / "quiet.txt") == 0);
    const std::string quiet = flymc::test::slurp(dir / "quiet.txt");
    CAPTURE(quiet);
    CHECK(!contains(quiet, " it/s"));
    CHECK(!contains(quiet, "set-up"));

    // On a terminal: a run that cannot end before the display's first redraws, whatever the
    // machine's speed (a fixed length did, on a fast idle machine): an ESS target it cannot meet,
    // ended by --max-seconds at a block's end.
    REQUIRE(run_sample(dir, "--ess 1e9 --max-seconds 1.5 --iters 1000000000000", true,
                       dir / "tty.txt") == 0);
    const std::string tty = flymc::test::slurp(dir / "tty.txt");
    CAPTURE(tty);
    CHECK((contains(tty, "\rwarm-up") || contains(tty, "\rsampling")));  // redrawn in place
    CHECK(contains(tty, " it/s"));
    CHECK(contains(tty, "ESS "));  // the target's progress
    CHECK(contains(tty, "/1000000000 |"));
    CHECK(!contains(tty, "flymc: sampling"));  // no log lines on a terminal
  }
}
