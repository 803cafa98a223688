#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/io/stan_csv.hpp"

namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(FLYMC_TEST_DATA_DIR) + "/stan-csv-example.csv";

/// A scratch file path unique to this process and call; removed by the destructor.
struct TempFile {
  std::string path;
  TempFile() {
    static std::atomic<int> counter{0};
    path = (fs::temp_directory_path() / ("flymc-stan-csv-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(counter++) + ".csv"))
               .string();
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  void write(const std::string& content) const { std::ofstream(path, std::ios::binary) << content; }
  std::string read() const {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// Same double (bit for bit), or both NaN (NaN is written as "nan", payload and sign not kept).
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || bits(a) == bits(b); }

/// The DataError message from reading `path`, or "" if it read fine.
std::string read_error(const std::string& path) {
  try {
    flymc::read_stan_csv(path);
  } catch (const flymc::DataError& e) {
    return e.what();
  }
  return {};
}

const std::vector<std::string> kColumns = {"lp__", "accept_stat__", "x.1", "x.2", "x.3"};
const std::string kHeaderText = "lp__,accept_stat__,x.1,x.2,x.3\n";

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("read_stan_csv reads the Stan 2.21 fixture") {
    const flymc::StanCsv csv = flymc::read_stan_csv(kFixture);
    CHECK(csv.path == kFixture);
    const std::vector<std::string> expected_columns = {
        "lp__",        "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__",
        "divergent__", "energy__",      "beta.1",     "beta.2",      "beta.3"};
    CHECK(csv.columns == expected_columns);
    REQUIRE(csv.warmup.size() == 20);
    REQUIRE(csv.draws.size() == 10);
    for (const auto& row : csv.warmup) CHECK(row.size() == 10);
    for (const auto& row : csv.draws) CHECK(row.size() == 10);
    CHECK(csv.warmup[0][0] == -129.358);
    CHECK(csv.warmup[0][6] == 196.004);
    CHECK(csv.warmup[19][1] == 0.017123);
    CHECK(csv.draws[0][0] == -121.61);
    CHECK(csv.draws[0][9] == -0.00757488);
    CHECK(csv.draws[9][9] == 0.0790695);
    CHECK(csv.step_size == 0.143625);
    CHECK(csv.inv_metric == std::vector<double>{1, 1, 1});
    CHECK(csv.warmup_seconds == 0.001124);
    CHECK(csv.sampling_seconds == 0.000609);
    CHECK(csv.config_value("seed") == "3");
    CHECK(csv.config_value("chain_id") == "1");
    CHECK(csv.config_value("iter") == "30");
    CHECK(csv.config_value("sampler_t") == "NUTS(diag_e)");
    CHECK(csv.config_value("no_such_key").empty());
    CHECK(csv.config.size() == 23);
    CHECK(csv.config.front().first == "stan_version_major");
    CHECK(csv.truncated_lines == 0);
  }

  TEST_CASE("StanCsvWriter output reads back bit-identical") {
    constexpr double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> specials = {inf,
                                    -inf,
                                    nan,
                                    -nan,
                                    0.0,
                                    -0.0,
                                    1e-300,
                                    -1e-300,
                                    std::numeric_limits<double>::denorm_min(),
                                    -std::numeric_limits<double>::denorm_min(),
                                    std::numeric_limits<double>::min(),
                                    std::numeric_limits<double>::min() / 3,
                                    std::numeric_limits<double>::max(),
                                    std::numeric_limits<double>::lowest(),
                                    std::numeric_limits<double>::epsilon(),
                                    0.1,
                                    1.0 / 3,
                                    2.0 / 3,
                                    123456789012345678.0,
                                    1e22,
                                    1e23,
                                    -121.61};
    // Plus random bit patterns (all exponents, denormals, NaNs with payloads).
    std::mt19937_64 gen(12345);
    for (int i = 0; i < 5000; ++i) {
      const std::uint64_t b = gen();
      double v;
      std::memcpy(&v, &b, sizeof v);
      specials.push_back(v);
    }
    while (specials.size() % kColumns.size() != 0) specials.push_back(0.5);
    std::vector<std::vector<double>> rows;
    for (std::size_t i = 0; i < specials.size(); i += kColumns.size()) {
      rows.emplace_back(specials.begin() + static_cast<std::ptrdiff_t>(i),
                        specials.begin() + static_cast<std::ptrdiff_t>(i + kColumns.size()));
    }
    const std::size_t n_warmup = 7;
    const std::vector<double> metric = {0.25, 1e-300, 3.0};

    TempFile tmp;
    {
      flymc::StanCsvWriter w(tmp.path);
      w.write_header({{"iter", std::to_string(rows.size())},
                      {"warmup", std::to_string(n_warmup)},
                      {"save_warmup", "1"},
                      {"thin", "1"},
                      {"seed", "42"},
                      {"chain_id", "2"},
                      {"note", "a = b, c"}},
                     kColumns);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (i == n_warmup) w.write_adaptation(0.1 + 0.2, metric);
        w.write_row(rows[i]);
      }
      w.write_elapsed(1.5e-7, 12345.678);
      w.close();
    }
    const std::string text = tmp.read();
    CHECK(text.rfind("# iter=" + std::to_string(rows.size()) + "\n# warmup=7\n", 0) == 0);
    CHECK(text.find("#\n" + kHeaderText) != std::string::npos);
    CHECK(text.find("\n# Adaptation terminated\n# Step size = 0.30000000000000004\n"
                    "# Diagonal elements of inverse mass matrix:\n# 0.25, 1e-300, 3\n") !=
          std::string::npos);
    CHECK(text.find("\ninf,-inf,nan,nan,0\n-0,1e-300,-1e-300,5e-324,-5e-324\n") !=
          std::string::npos);

    const flymc::StanCsv csv = flymc::read_stan_csv(tmp.path);
    CHECK(csv.columns == kColumns);
    CHECK(csv.config_value("seed") == "42");
    CHECK(csv.config_value("chain_id") == "2");
    CHECK(csv.config_value("note") == "a = b, c");
    REQUIRE(csv.warmup.size() == n_warmup);
    REQUIRE(csv.draws.size() == rows.size() - n_warmup);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& got = i < n_warmup ? csv.warmup[i] : csv.draws[i - n_warmup];
      REQUIRE(got.size() == kColumns.size());
      for (std::size_t k = 0; k < kColumns.size(); ++k) {
        if (!same(got[k], rows[i][k])) ++mismatches;
      }
    }
    CHECK(mismatches == 0);
    CHECK(csv.step_size == 0.1 + 0.2);
    CHECK(csv.inv_metric == metric);
    CHECK(csv.warmup_seconds == 1.5e-7);
    CHECK(csv.sampling_seconds == 12345.678);
    CHECK(text.find("#  Elapsed Time: 0.00000015 seconds (Warm-up)\n") != std::string::npos);
    CHECK(csv.truncated_lines == 0);
  }

  TEST_CASE("StanCsvWriter writes the Elapsed Time block as the fixture does") {
    TempFile tmp;
    flymc::StanCsvWriter w(tmp.path);
    w.write_header({}, {"lp__"});
    w.write_elapsed(0.001124, 0.000609);
    w.close();
    const std::string expected =
        "#\nlp__\n"
        "# \n"
        "#  Elapsed Time: 0.001124 seconds (Warm-up)\n"
        "#                0.000609 seconds (Sampling)\n"
        "#                0.001733 seconds (Total)\n"
        "# \n";
    CHECK(tmp.read() == expected);
  }

  TEST_CASE("read_stan_csv: warm-up only when save_warmup=1 and an adaptation block exists") {
    TempFile tmp;
    SUBCASE("save_warmup=1 without adaptation block: all rows are draws") {
      tmp.write("# save_warmup=1\n#\n" + kHeaderText + "1,2,3,4,5\n6,7,8,9,10\n");
      const auto csv = flymc::read_stan_csv(tmp.path);
      CHECK(csv.warmup.empty());
      CHECK(csv.draws.size() == 2);
      CHECK(std::isnan(csv.step_size));
      CHECK(csv.inv_metric.empty());
      CHECK(std::isnan(csv.warmup_seconds));
    }
    SUBCASE("save_warmup=0 with adaptation block: no warm-up rows") {
      tmp.write("# save_warmup=0\n#\n" + kHeaderText +
                "# Adaptation terminated\n# Step size = 0.5\n"
                "# Diagonal elements of inverse mass matrix:\n# 2, 3\n1,2,3,4,5\n6,7,8,9,10\n");
      const auto csv = flymc::read_stan_csv(tmp.path);
      CHECK(csv.warmup.empty());
      CHECK(csv.draws.size() == 2);
      CHECK(csv.step_size == 0.5);
      CHECK(csv.inv_metric == std::vector<double>{2, 3});
    }
    SUBCASE("save_warmup=1 with adaptation block") {
      tmp.write("# save_warmup=1\n#\n" + kHeaderText +
                "1,2,3,4,5\n# Adaptation terminated\n6,7,8,9,10\n11,12,13,14,15\n");
      const auto csv = flymc::read_stan_csv(tmp.path);
      REQUIRE(csv.warmup.size() == 1);
      CHECK(csv.warmup[0][0] == 1);
      REQUIRE(csv.draws.size() == 2);
      CHECK(csv.draws[1][4] == 15);
    }
  }

  TEST_CASE("read_stan_csv reads CmdStan-style config, dense metric, spellings, CRLF") {
    TempFile tmp;
    tmp.write(
        "# stan_version_major = 2\r\n"
        "# method = sample (Default)\r\n"
        "#   sample\r\n"
        "#     num_samples = 3\r\n"
        "#     save_warmup = 1\r\n"
        "#         metric_file =  (Default)\r\n"
        "# id = 4\r\n"
        "lp__, a , b\r\n"
        "1,inf,-inf\r\n"
        "# Adaptation terminated\r\n"
        "# Step size = 0.25\r\n"
        "# Elements of inverse mass matrix:\r\n"
        "# 1, 0.5\r\n"
        "# 0.5, 2\r\n"
        "Inf,NaN, +7 \r\n"
        "\r\n"
        "-INF,nan,1e400\r\n"
        "-Infinity,-nan,-1e-400\r\n"
        "# \r\n"
        "#  Elapsed Time: 1.5 seconds (Warm-up)\r\n"
        "#                2 seconds (Sampling)\r\n"
        "#                3.5 seconds (Total)\r\n");
    const auto csv = flymc::read_stan_csv(tmp.path);
    CHECK(csv.config_value("method") == "sample");
    CHECK(csv.config_value("num_samples") == "3");
    CHECK(csv.config_value("id") == "4");
    CHECK(csv.config_value("metric_file").empty());
    CHECK(csv.config.size() == 6);
    CHECK(csv.columns == std::vector<std::string>{"lp__", "a", "b"});
    REQUIRE(csv.warmup.size() == 1);
    CHECK(csv.warmup[0][1] == std::numeric_limits<double>::infinity());
    CHECK(csv.warmup[0][2] == -std::numeric_limits<double>::infinity());
    REQUIRE(csv.draws.size() == 3);
    CHECK(csv.draws[0][0] == std::numeric_limits<double>::infinity());
    CHECK(std::isnan(csv.draws[0][1]));
    CHECK(csv.draws[0][2] == 7);
    CHECK(csv.draws[1][0] == -std::numeric_limits<double>::infinity());
    CHECK(csv.draws[1][2] == std::numeric_limits<double>::infinity());
    CHECK(csv.draws[2][0] == -std::numeric_limits<double>::infinity());
    CHECK(bits(csv.draws[2][2]) == bits(-0.0));
    CHECK(csv.step_size == 0.25);
    CHECK(csv.inv_metric == std::vector<double>{1, 0.5, 0.5, 2});
    CHECK(csv.warmup_seconds == 1.5);
    CHECK(csv.sampling_seconds == 2);
  }

  TEST_CASE("read_stan_csv errors name file, line and field") {
    TempFile tmp;
    const std::string& p = tmp.path;
    SUBCASE("missing file") {
      const std::string missing = p + ".does-not-exist";
      CHECK(read_error(missing) == missing + ": cannot open: " + std::strerror(ENOENT));
    }
    SUBCASE("empty file") {
      tmp.write("");
      CHECK(read_error(p) == p + ": empty file");
      tmp.write("\n  \n\n");
      CHECK(read_error(p) == p + ": empty file");
    }
    SUBCASE("no header") {
      tmp.write("# seed=1\n#\n");
      CHECK(read_error(p) == p + ":2: no header row (only comment lines)");
    }
    SUBCASE("empty column name") {
      tmp.write("a,,b\n");
      CHECK(read_error(p) == p + ":1: field 2: empty column name in header");
    }
    SUBCASE("row with too few fields") {
      tmp.write("#\n" + kHeaderText + "1,2,3,4,5\n1,2,3\n1,2,3,4,5\n");
      CHECK(read_error(p) == p + ":4: field 4 (x.2): missing (row has 3 fields, header has 5)");
    }
    SUBCASE("row with too many fields") {
      tmp.write(kHeaderText + "1,2,3,4,5,6\n");
      CHECK(read_error(p) == p + ":2: field 6: unexpected (row has 6 fields, header has 5)");
    }
    SUBCASE("non-numeric value") {
      tmp.write(kHeaderText + "1,2,3,4,5\n1,2,abc,4,5\n");
      CHECK(read_error(p) == p + ":3: field 3 (x.1): not a number: \"abc\"");
      tmp.write(kHeaderText + "1,2,3,4,1.5x\n");
      CHECK(read_error(p) == p + ":2: field 5 (x.3): not a number: \"1.5x\"");
      tmp.write(kHeaderText + "1,2,3,0x10,5\n");
      CHECK(read_error(p) == p + ":2: field 4 (x.2): not a number: \"0x10\"");
      tmp.write(kHeaderText + "NA,2,3,4,5\n");
      CHECK(read_error(p) == p + ":2: field 1 (lp__): not a number: \"NA\"");
    }
    SUBCASE("empty value") {
      tmp.write(kHeaderText + "1,,3,4,5\n");
      CHECK(read_error(p) == p + ":2: field 2 (accept_stat__): empty value");
    }
    SUBCASE("bad metric line") {
      tmp.write(kHeaderText +
                "# Adaptation terminated\n# Diagonal elements of inverse mass matrix:\n# 1, x\n");
      CHECK(read_error(p) == p + ":4: inverse metric: not a list of numbers: \"1, x\"");
    }
    SUBCASE("errors are DataError with exit code 65") {
      try {
        flymc::read_stan_csv(p + ".missing");
        FAIL("no exception");
      } catch (const flymc::Error& e) {
        CHECK(e.exit_code() == 65);
      }
    }
  }

  TEST_CASE("read_stan_csv ignores a last line cut by a kill") {
    TempFile tmp;
    const std::string full = "# seed=1\n#\n" + kHeaderText +
                             "1.5,2.25,3,4,5\n-6.5,0.75,8e-300,inf,10.125\n-11.5,12,13,14,15.5\n";
    const std::size_t last_row = full.rfind('\n', full.size() - 2) + 1;
    SUBCASE("fewer fields, no newline") {
      tmp.write(full.substr(0, full.size() - 8));  // "-11.5,12,13,1"
      const auto csv = flymc::read_stan_csv(tmp.path);
      CHECK(csv.draws.size() == 2);
      CHECK(csv.truncated_lines == 1);
    }
    SUBCASE("every cut point inside the last row") {
      for (std::size_t cut = last_row; cut <= full.size(); ++cut) {
        CAPTURE(cut);
        tmp.write(full.substr(0, cut));
        flymc::StanCsv csv;
        REQUIRE_NOTHROW(csv = flymc::read_stan_csv(tmp.path));
        if (cut == last_row || cut == full.size()) {
          CHECK(csv.truncated_lines == 0);
        }
        // Either the cut row is dropped and counted, or (cut inside the last field, or only
        // the newline lost) it is kept whole.
        CHECK(csv.draws.size() + static_cast<std::size_t>(csv.truncated_lines) ==
              (cut == last_row ? 2u : 3u));
        if (csv.draws.size() == 3) CHECK(csv.draws[2][0] == -11.5);
      }
    }
    SUBCASE("cut inside a comment after the header") {
      tmp.write(full + "# Adaptation terminated\n# Step size = 0.14");
      const auto csv = flymc::read_stan_csv(tmp.path);
      CHECK(csv.draws.size() == 3);
      CHECK(std::isnan(csv.step_size));
      CHECK(csv.truncated_lines == 1);
    }
    SUBCASE("a short row that is not the last line is still an error") {
      tmp.write(kHeaderText + "1,2\n1,2,3,4,5");
      CHECK(read_error(tmp.path) ==
            tmp.path + ":2: field 3 (x.1): missing (row has 2 fields, header has 5)");
    }
  }

  TEST_CASE("StanCsvWriter errors") {
    SUBCASE("cannot create") {
      const std::string bad = (fs::temp_directory_path() / "flymc-no-such-dir" / "x.csv").string();
      try {
        flymc::StanCsvWriter w(bad);
        FAIL("no exception");
      } catch (const flymc::Error& e) {
        CHECK(e.exit_code() == 73);
        CHECK(std::string(e.what()) == bad + ": cannot create: " + std::strerror(ENOENT));
      }
    }
    SUBCASE("misuse") {
      TempFile tmp;
      flymc::StanCsvWriter w(tmp.path);
      const std::vector<double> row = {1, 2, 3};
      CHECK_THROWS_AS(w.write_row(row), flymc::Error);  // before header
      CHECK_THROWS_AS(w.write_adaptation(1.0, row), flymc::Error);
      CHECK_THROWS_AS(w.write_elapsed(1.0, 2.0), flymc::Error);
      CHECK_THROWS_AS(w.write_header({}, {"a,b"}), flymc::Error);
      CHECK_THROWS_AS(w.write_header({{"k=", "v"}}, {"a"}), flymc::Error);
      CHECK_THROWS_AS(w.write_header({{"k", "v\n"}}, {"a"}), flymc::Error);
      w.write_header({}, {"a", "b"});
      CHECK_THROWS_AS(w.write_header({}, {"a", "b"}), flymc::Error);
      try {
        w.write_row(row);
        FAIL("no exception");
      } catch (const flymc::Error& e) {
        CHECK(e.exit_code() == 70);
        CHECK(std::string(e.what()) == tmp.path + ": write_row: 3 values for 2 columns");
      }
      w.close();
      CHECK_THROWS_AS(w.write_row(std::vector<double>{1, 2}), flymc::Error);
      CHECK_NOTHROW(w.close());
    }
  }

  TEST_CASE("StanCsvWriter: rows reach the file on flush(), and survive a kill") {
    TempFile tmp;
    SUBCASE("flush") {
      flymc::StanCsvWriter w(tmp.path);
      w.write_header({{"seed", "1"}}, kColumns);
      for (int i = 0; i < 10; ++i) w.write_row(std::vector<double>{1, 2, 3, 4, double(i)});
      CHECK(fs::file_size(tmp.path) == 0);  // still in the stdio buffer
      w.flush();
      const auto csv = flymc::read_stan_csv(tmp.path);
      CHECK(csv.draws.size() == 10);
      CHECK(csv.draws[9][4] == 9);
    }
    SUBCASE("a killed writer leaves whole rows up to the last flush or buffer spill") {
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        flymc::StanCsvWriter w(tmp.path);
        w.write_header({{"seed", "1"}}, kColumns);
        std::vector<double> row = {-123.456789, 0.987654321, 1.0 / 3, 2.0 / 3, 0};
        for (int i = 0; i < 100; ++i) {
          row[4] = i;
          w.write_row(row);
        }
        w.flush();
        // Enough unflushed rows to spill the 1 MiB buffer several times, then die.
        for (int i = 100; i < 60000; ++i) {
          row[4] = i;
          w.write_row(row);
        }
        ::raise(SIGKILL);
        ::_exit(0);
      }
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      REQUIRE(WIFSIGNALED(status));
      const std::string text = tmp.read();
      REQUIRE(!text.empty());
      // The writer hands stdio's buffer to the OS at row boundaries. (A kill is delivered between
      // system calls, so this also holds for glibc's own spilling, which finishes a row in a
      // second write(); the check documents the guarantee rather than isolating the mechanism.)
      CHECK(text.back() == '\n');
      const auto csv = flymc::read_stan_csv(tmp.path);
      CHECK(csv.truncated_lines == 0);
      CHECK(csv.draws.size() >= 100);
      CHECK(csv.draws.size() < 60000);
      for (std::size_t i = 0; i < csv.draws.size(); ++i) {
        if (csv.draws[i][4] != double(i)) {
          FAIL("row " << i << " out of order");
        }
      }
    }
  }
}
