// `flymc report`: the SVG writer (scales, ticks, escaping, non-finite values), the rank histogram
// and autocorrelation, the bench readers, the page of a real small run, and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/report/report.hpp"
#include "flymc/report/svg.hpp"

namespace fs = std::filesystem;
using namespace flymc::report;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

std::string bench_file(const std::string& name) {
  return std::string(FLYMC_TEST_DATA_DIR) + "/../../docs/bench/" + name;
}

/// The message of the flymc::Error `f` throws (and its exit code), "" if it throws none.
template <class F>
std::pair<std::string, int> error_of(F&& f) {
  try {
    f();
  } catch (const flymc::Error& e) {
    return {e.what(), e.exit_code()};
  }
  return {"", 0};
}

/// A finished `flymc sample` run of `chains` chains on small logistic data (d parameters).
fs::path small_run(const fs::path& dir, int chains, std::size_t d) {
  flymc::save_csv(*flymc::test::logistic_data(600, d, 3), (dir / "d.csv").string());
  const fs::path out = dir / "run";
  const pid_t pid = flymc::test::spawn_process(
      FLYMC_CLI_PATH,
      "sample --data " + (dir / "d.csv").string() + " --chains " + std::to_string(chains) +
          " --algo flymc --warmup 200 --iters 400 --thin 2 --seed 5 --quiet --out " + out.string(),
      dir);
  const auto st = flymc::test::wait_for(pid, dir);
  REQUIRE_MESSAGE(st.code == 0, st.err);
  return out;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("report: scales map values onto the axis; log scales skip what they cannot place") {
    const Scale lin(0.0, 10.0);
    CHECK(lin.fraction(2.5) == doctest::Approx(0.25));
    CHECK(lin.fraction(-5.0) == doctest::Approx(-0.5));
    CHECK(std::isnan(lin.fraction(kNaN)));
    CHECK(std::isnan(lin.fraction(kInf)));
    const Scale lg(1.0, 1000.0, ScaleKind::log);
    CHECK(lg.fraction(10.0) == doctest::Approx(1.0 / 3.0));
    CHECK(lg.fraction(1000.0) == doctest::Approx(1.0));
    CHECK(std::isnan(lg.fraction(0.0)));
    CHECK(std::isnan(lg.fraction(-1.0)));
    // Fitted domains have round ends and hold every value; non-finite values are ignored.
    const std::vector<double> v = {0.3, kNaN, 7.2, -kInf};
    const Scale f = Scale::fit(v);
    CHECK(f.lo() == 0.0);
    CHECK(f.hi() == 8.0);
    const std::vector<double> w = {0.02, 300.0, 0.0, -4.0};
    const Scale fl = Scale::fit(w, ScaleKind::log);
    CHECK(fl.lo() == doctest::Approx(0.01));
    CHECK(fl.hi() == doctest::Approx(1000.0));
    // A constant series, an empty one, a reversed interval: still a usable domain.
    const std::vector<double> c = {4.0, 4.0};
    CHECK(Scale::fit(c).lo() < 4.0);
    CHECK(Scale::fit(c).hi() > 4.0);
    CHECK(Scale::fit(std::vector<double>{}).hi() == 1.0);
    CHECK(Scale(5.0, 5.0).hi() > Scale(5.0, 5.0).lo());
    CHECK(Scale(-3.0, 100.0, ScaleKind::log).lo() > 0.0);
  }

  TEST_CASE("report: ticks are 1-2-5 multiples (linear) and powers of ten (log), labelled short") {
    const auto t = Scale(0.0, 1.0).ticks();
    REQUIRE(t.size() == 6);
    CHECK(t[3] == doctest::Approx(0.6));
    CHECK(format_tick(t[3], Scale(0.0, 1.0).tick_step()) == "0.6");
    CHECK(format_tick(0.0, 0.2) == "0");
    CHECK(format_tick(-1e-17, 0.2) == "0");
    CHECK(format_tick(250.0, 50.0) == "250");
    // Decades, with 2x and 5x in a narrow domain and every other power in a wide one.
    CHECK(Scale(1.0, 1e6, ScaleKind::log).ticks() ==
          std::vector<double>{1, 10, 100, 1e3, 1e4, 1e5, 1e6});
    const auto narrow = Scale(1.0, 10.0, ScaleKind::log).ticks();
    REQUIRE(narrow.size() == 4);
    CHECK(narrow[1] == doctest::Approx(2.0));
    CHECK(narrow[2] == doctest::Approx(5.0));
    const auto wide = Scale(1e-3, 1e9, ScaleKind::log).ticks();
    CHECK(wide.size() == 7);
    CHECK(wide.front() == doctest::Approx(1e-3));
    CHECK(wide[1] == doctest::Approx(1e-1));
    CHECK(format_tick(1e6, 1e6) == "1e6");
    CHECK(format_tick(1e-5, 1e-5) == "1e-5");
    CHECK(format_tick(0.001, 0.001) == "0.001");
    CHECK(format_tick(0.05, 0.05) == "0.05");
    CHECK(format_number(kNaN) == "nan");
    CHECK(format_number(123456.0, 3) == "1.23e5");
  }

  TEST_CASE("report: labels are escaped and non-finite points break lines instead of crashing") {
    CHECK(escape_xml("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
    Chart ch(300, 200, Scale(0, 6), Scale(0, 10));
    ch.set_title("a<b & \"c\"");
    ch.set_x_label("x < 1");
    ch.set_y_label("y & z");
    ch.add_legend("chain \"1\"", series_colour(0));
    const std::vector<double> x = {1, 2, 3, 4, 5};
    const std::vector<double> y = {1, kNaN, 3, kInf, 5};
    ch.line(x, y, series_colour(0));
    ch.bar(0, kNaN, "#000");
    ch.hline(kNaN, "#000");
    ch.vline(kInf, "#000");
    const std::string s = ch.svg();
    CHECK(s.find("a&lt;b &amp; &quot;c&quot;") != std::string::npos);
    CHECK(s.find("x &lt; 1") != std::string::npos);
    CHECK(s.find("y &amp; z") != std::string::npos);
    CHECK(s.find("chain &quot;1&quot;") != std::string::npos);
    CHECK(s.find("a<b") == std::string::npos);
    CHECK(count(s, "<polyline") == 3);  // points 1, 3 and 5, each alone
    CHECK(s.find("nan") == std::string::npos);
    CHECK(s.find("inf") == std::string::npos);
    CHECK(s.find("n/a") != std::string::npos);  // the bar without a value says so
    CHECK(count(s, "<svg") == 1);
    CHECK(count(s, "</svg>") == 1);
    // A log axis leaves out zeros and negatives.
    Chart lg(300, 200, Scale(0, 3), Scale(1, 100, ScaleKind::log));
    const std::vector<double> lx = {0, 1, 2, 3}, ly = {10, 0, -1, 50};
    lg.line(lx, ly, "#000");
    CHECK(count(lg.svg(), "<polyline") == 2);
    // Several charts in one svg element.
    const std::vector<Chart> row = {ch, lg};
    const std::string r = svg_row(row, "two & more");
    CHECK(count(r, "<svg") == 1);
    CHECK(count(r, "<g transform") == 2 * 2);  // each chart and its plot area
    CHECK(r.find("two &amp; more") != std::string::npos);
  }

  TEST_CASE("report: rank histograms count every pooled draw once, in its chain's row") {
    // Chain 1 holds the 4 smallest draws, chain 2 the 4 largest.
    const flymc::ChainDraws apart = {{1, 2, 3, 4}, {5, 6, 7, 8}};
    auto h = rank_histogram(apart, 2);
    CHECK(h[0] == std::vector<std::size_t>{4, 0});
    CHECK(h[1] == std::vector<std::size_t>{0, 4});
    // Interleaved chains: uniform counts.
    const flymc::ChainDraws mixed = {{1, 3, 5, 7}, {2, 4, 6, 8}};
    h = rank_histogram(mixed, 4);
    CHECK(h[0] == std::vector<std::size_t>{1, 1, 1, 1});
    CHECK(h[1] == std::vector<std::size_t>{1, 1, 1, 1});
    // Ties share their average rank (all 2.5 of 1..4: the first of two bins); NaN is not counted.
    const flymc::ChainDraws tied = {{1, 1, kNaN}, {1, 1}};
    h = rank_histogram(tied, 2);
    CHECK(h[0] == std::vector<std::size_t>{2, 0});
    CHECK(h[1] == std::vector<std::size_t>{2, 0});
    // A larger case: the counts add up to the draws per chain.
    flymc::ChainDraws big(3);
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 500; ++i) big[c].push_back(std::sin(1.0 + i * 7.0 + c * 0.37));
    h = rank_histogram(big, 20);
    for (const auto& row : h) {
      std::size_t total = 0;
      for (auto n : row) total += n;
      CHECK(total == 500);
    }
  }

  TEST_CASE("report: autocorrelation is 1 at lag 0, follows the chain, and NaN when constant") {
    std::vector<double> alt;
    for (int i = 0; i < 100; ++i) alt.push_back(i % 2 ? 1.0 : -1.0);
    const auto r = autocorrelation(alt, 5);
    REQUIRE(r.size() == 6);
    CHECK(r[0] == doctest::Approx(1.0));
    CHECK(r[1] == doctest::Approx(-0.99));  // divisor n: (n − 1)/n
    CHECK(r[2] == doctest::Approx(0.98));
    const std::vector<double> flat(10, 2.0);
    CHECK(std::isnan(autocorrelation(flat, 3)[1]));
    CHECK(autocorrelation(std::vector<double>{1, 2, 3}, 10).size() == 3);
  }

  TEST_CASE("report: the bench readers draw table1, tall, compare and scaling files") {
    const BenchData t1 = load_bench(bench_file("table1-logistic.json"));
    CHECK(t1.kind == "table1");
    REQUIRE(t1.bars.size() == 2);
    CHECK(t1.bars[0].names.size() == 3);
    CHECK(t1.bars[1].reference == 1.0);
    CHECK(t1.bars[0].family == std::vector<int>{0, 1, 1});
    const BenchData sm = load_bench(bench_file("table1-softmax.json"));
    CHECK(sm.bars.size() == 4);  // two protocols, each its own pair
    const BenchData tall = load_bench(bench_file("tall-fmnist-7v9-1e6.json"));
    CHECK(tall.bars.size() == 2);
    REQUIRE(tall.bars[0].names.size() == 8);  // 4 regular rows (adapted, fixed) and 4 FlyMC rows
    CHECK(tall.bars[0].names[2] == "regular-nuts-laplace");
    const BenchData cmp = load_bench(bench_file("compare-synth-1e6.json"));
    REQUIRE(cmp.bars.size() == 2);
    CHECK(cmp.bars[0].names[4] == "minibatch-mh (approx.)");
    CHECK(cmp.bars[1].values[0] == doctest::Approx(1.0));  // regular-nuts is the best regular
    const BenchData sc = load_bench(std::string(FLYMC_TEST_DATA_DIR) + "/report/scaling.json");
    REQUIRE(sc.lines.size() == 3);
    CHECK(sc.lines[0].names == std::vector<std::string>{"regular", "flymc-map"});
    CHECK(sc.lines[0].x[1].size() == 4);  // FlyMC runs up to N = 1e7, regular MCMC to 1e6
    CHECK(sc.lines[0].x[0].size() == 3);
    const std::vector<BenchData> all = {t1, cmp, sc};
    const std::string page = compose_page({}, all);
    CHECK(count(page, "<svg") == 2 + 2 + 3);
  }

  TEST_CASE("report: bench files of unknown shape are refused naming the file and the field") {
    const flymc::test::TempDir dir("report-bench");
    auto write = [&](const std::string& name, const std::string& text) {
      std::ofstream(dir.path() + "/" + name) << text;
      return dir.path() + "/" + name;
    };
    struct Case {
      std::string name, text, expect;
    };
    const std::vector<Case> cases = {
        {"notjson.json", "{\"rows\": [", "not valid JSON"},
        {"array.json", "[1, 2]", "not a JSON object"},
        {"nokind.json", "{\"rows\": []}", "no \"benchmark\" key"},
        {"other.json", "{\"benchmark\": \"foo\", \"rows\": [{}]}", "\"foo\" is not a kind"},
        {"norows.json", "{\"benchmark\": \"tall\"}", "\"rows\" missing or empty"},
        {"field.json",
         "{\"benchmark\": \"tall\", \"rows\": [{\"algo\": \"a\", \"ess_per_second_min\": 1}, "
         "{\"algo\": \"b\"}]}",
         "rows[1]: \"ess_per_second_min\" missing (a number)"},
        {"type.json", "{\"benchmark\": \"scaling\", \"rows\": [{\"algo\": 3, \"n\": 10}]}",
         "rows[0]: \"algo\" is not (a string)"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      const std::string path = write(c.name, c.text);
      const auto [what, code] = error_of([&] { load_bench(path); });
      CHECK(code == 65);
      CHECK(what.find(path) != std::string::npos);
      CHECK(what.find(c.expect) != std::string::npos);
    }
    const auto [what, code] = error_of([&] { load_bench(bench_file("flymc_bm.json")); });
    CHECK(code == 65);
    CHECK(what.find("Google Benchmark") != std::string::npos);
    CHECK(error_of([&] { load_bench(dir.path() + "/missing.json"); }).first.find("cannot read") !=
          std::string::npos);
  }
}

TEST_SUITE("unit") {
  TEST_CASE(
      "report: the page of a real run holds the table, the sampler plots and 3 per parameter" *
      doctest::test_suite("threaded")) {
    const fs::path dir = flymc::test::temp_dir("flymc-report-", "page");
    const fs::path run = small_run(dir, 3, 4);
    const RunData data = load_run(run.string());
    CHECK(data.chains.size() == 3);
    CHECK(data.draws == 200);
    CHECK(data.has_summary);
    const std::vector<RunData> runs = {data};
    const std::string page = compose_page(runs, {});
    // FlyMC with RW-MH: bright data, queries per iteration, acceptance, step size and lp__; then
    // trace, rank histograms and autocorrelation of each of the 4 parameters.
    const std::size_t expected = 5 + 3 * 4;
    CHECK(count(page, "<svg") == expected);
    CHECK(page.find("<meta name=\"flymc-plots\" content=\"" + std::to_string(expected) + "\">") !=
          std::string::npos);
    CHECK(page.find("Fireflies: bright data") != std::string::npos);
    CHECK(page.find("queries / iteration") != std::string::npos);
    CHECK(page.find("save_warmup=0") != std::string::npos);  // says warm-up is not in the files
    CHECK(count(page, "<tr") == 1 + 4);                      // header and one row per parameter
    CHECK(page.find("min_ess_bulk_per_second") != std::string::npos);  // from summary.json
    // Self-contained: nothing to fetch, nothing to run.
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("src=") == std::string::npos);
    CHECK(page.find("href") == std::string::npos);
    CHECK(count(page, "http") == count(page, "http://www.w3.org/2000/svg"));
    // Fewer parameters than there are: those with the lowest bulk ESS.
    ReportOptions o;
    o.max_params = 2;
    const std::string two = compose_page(runs, {}, o);
    CHECK(count(two, "<svg") == 5 + 3 * 2);
    CHECK(two.find("The 2 of 4 parameters with the lowest bulk ESS") != std::string::npos);

    // The command line writes the same page; bad input exits with the documented codes.
    const fs::path html = dir / "r.html";
    auto cli = [&](const std::string& args) {
      const auto st = flymc::test::wait_for(
          flymc::test::spawn_process(FLYMC_CLI_PATH, "report " + args, dir), dir);
      return st;
    };
    auto st = cli(run.string() + " --bench " + bench_file("table1-logistic.json") + " --out " +
                  html.string());
    REQUIRE_MESSAGE(st.code == 0, st.err);
    CHECK(count(flymc::test::slurp(html), "<svg") == expected + 2);
    st = cli((dir / "nowhere").string() + " --out " + html.string());
    CHECK(st.code == 64);
    CHECK(st.err.find("nowhere: not a directory") != std::string::npos);
    fs::create_directories(dir / "empty");
    st = cli((dir / "empty").string() + " --out " + html.string());
    CHECK(st.code == 65);
    CHECK(st.err.find("no chain-<k>.csv") != std::string::npos);
    st = cli("--out " + html.string());
    CHECK(st.code == 64);
    st = cli(run.string() + " --bench " + bench_file("flymc_bm.json") + " --out " + html.string());
    CHECK(st.code == 65);
    CHECK(st.err.find("flymc_bm.json") != std::string::npos);
    // A corrupt draw file: the message names the file, the line and the field.
    {
      std::string text = flymc::test::slurp(run / "chain-2.csv");
      auto row = text.find('\n', text.find("lp__")) + 1;  // the first draw, after the comments
      while (text[row] == '#') row = text.find('\n', row) + 1;
      text.replace(text.find(',', row) + 1, 1, "x");
      std::ofstream(run / "chain-2.csv") << text;
    }
    st = cli(run.string() + " --out " + html.string());
    CHECK(st.code == 65);
    CHECK(st.err.find("chain-2.csv:") != std::string::npos);
    CHECK(st.err.find("field 2 (accept_stat__)") != std::string::npos);
    const auto [what, code] = error_of([&] { load_run(run.string()); });
    CHECK(code == 65);
    CHECK(what.find("chain-2.csv") != std::string::npos);
    fs::remove_all(dir);
  }
}
