// flymc-bench JSON files: reading the five kinds flymc-bench writes (bench/flymc_bench.cpp,
// bench/compare.cpp, bench/tall.cpp) into bar and line charts, and their section of the page.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "flymc/core/errors.hpp"
#include "flymc/report/report.hpp"
#include "flymc/report/svg.hpp"
#include "report_detail.hpp"

namespace flymc::report {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kKinds = "table1, tall, compare, scaling, chains";

/// Field access that names the file, the row and the field in its errors.
class Fields {
 public:
  explicit Fields(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const { throw DataError(path_ + ": " + what); }

  /// The non-empty array "rows" of objects.
  const json& rows(const json& doc) const {
    if (!doc.contains("rows") || !doc["rows"].is_array() || doc["rows"].empty())
      fail("\"rows\" missing or empty (an array of objects, one per algorithm)");
    for (std::size_t i = 0; i < doc["rows"].size(); ++i)
      if (!doc["rows"][i].is_object()) fail("rows[" + std::to_string(i) + "]: not an object");
    return doc["rows"];
  }
  /// A number; with `nullable`, null (or a missing field) reads as NaN.
  double number(const json& row, std::size_t i, const char* key, bool nullable = false) const {
    const auto it = row.find(key);
    if ((it == row.end() || it->is_null()) && nullable) return kNaN;
    if (it == row.end() || !it->is_number())
      fail("rows[" + std::to_string(i) + "]: \"" + key + "\" " +
           (it == row.end() ? "missing" : "is not") + " (a number)");
    return it->get<double>();
  }
  std::string text(const json& row, std::size_t i, const char* key) const {
    const auto it = row.find(key);
    if (it == row.end() || !it->is_string())
      fail("rows[" + std::to_string(i) + "]: \"" + key + "\" " +
           (it == row.end() ? "missing" : "is not") + " (a string)");
    return it->get<std::string>();
  }

 private:
  std::string path_;
};

int family(const std::string& algo) {
  if (algo.starts_with("regular")) return 0;
  return algo.starts_with("flymc") ? 1 : 2;
}

std::string machine_line(const json& doc) {
  if (!doc.contains("machine") || !doc["machine"].is_object()) return "";
  const json& m = doc["machine"];
  auto get = [&](const char* k) {
    if (!m.contains(k)) return std::string("?");
    return m[k].is_string() ? m[k].get<std::string>() : m[k].dump();
  };
  return get("cpu") + ", " + get("cores") + " cores, " + get("simd") + " kernels, " + get("blas") +
         ", " + get("build_type") + " build, commit " + get("git_sha");
}

/// Bars of `key` per row (names from `name`), on log axes.
BarChartData bars(const Fields& f, const json& rows, const std::vector<std::size_t>& pick,
                  const std::vector<std::string>& names, const char* key, std::string title,
                  std::string y_label, bool nullable, double reference = kNaN) {
  BarChartData b{std::move(title), std::move(y_label), names, {}, {}, reference};
  for (std::size_t i : pick) {
    b.values.push_back(f.number(rows[i], i, key, nullable));
    b.family.push_back(family(f.text(rows[i], i, "algo")));
  }
  return b;
}

void read_table1(const Fields& f, const json& doc, BenchData& out) {
  const json& rows = f.rows(doc);
  // One pair of charts per (data set, protocol), as in docs/benchmarks.md's Table 1.
  std::vector<std::pair<std::string, std::string>> groups;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::pair<std::string, std::string> g = {f.text(rows[i], i, "dataset"),
                                                   rows[i].value("protocol", std::string())};
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  for (const auto& [dataset, protocol] : groups) {
    std::vector<std::size_t> pick;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (rows[i]["dataset"] == dataset && rows[i].value("protocol", std::string()) == protocol)
        pick.push_back(i);
    const std::string kernel0 = f.text(rows[pick[0]], pick[0], "kernel");
    for (std::size_t i : pick) {
      const std::string k = f.text(rows[i], i, "kernel");
      names.push_back(f.text(rows[i], i, "algo") + (k == kernel0 ? "" : " (" + k + ")"));
    }
    const std::string where = dataset + (protocol.empty() ? "" : ", " + protocol + " protocol");
    out.bars.push_back(bars(f, rows, pick, names, "ess_per_second_min", "min ESS/s: " + where,
                            "min bulk ESS / second", false));
    out.bars.push_back(bars(f, rows, pick, names, "speedup_wall",
                            "speedup over regular MCMC: " + where, "× regular (wall time)", true,
                            1.0));
  }
}

void read_tall(const Fields& f, const json& doc, BenchData& out) {
  const json& rows = f.rows(doc);
  std::vector<std::size_t> pick;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    pick.push_back(i);
    names.push_back(f.text(rows[i], i, "algo"));
  }
  out.bars.push_back(bars(f, rows, pick, names, "ess_per_second_min", "min ESS/s",
                          "min bulk ESS / second", false));
  out.bars.push_back(bars(f, rows, pick, names, "speedup_vs_best_regular",
                          "speedup over the best regular MCMC", "× best regular", true, 1.0));
}

void read_compare(const Fields& f, const json& doc, BenchData& out) {
  const json& rows = f.rows(doc);
  std::vector<std::size_t> pick;
  std::vector<std::string> names;
  double best_regular = kNaN;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    pick.push_back(i);
    const std::string algo = f.text(rows[i], i, "algo");
    const bool exact = !rows[i].contains("exact") || rows[i]["exact"] != false;
    names.push_back(algo + (exact ? "" : " (approx.)"));
    const double e = f.number(rows[i], i, "ess_per_second_min", true);
    if (family(algo) == 0 && !(e <= best_regular)) best_regular = e;
  }
  out.bars.push_back(bars(f, rows, pick, names, "ess_per_second_min",
                          "min ESS/s (approximate samplers' ESS ignores their bias)",
                          "min bulk ESS / second", true));
  if (std::isfinite(best_regular)) {
    BarChartData s = out.bars.back();
    for (double& v : s.values) v /= best_regular;
    s.title = "speedup over the best regular MCMC";
    s.y_label = "× best regular";
    s.reference = 1.0;
    out.bars.push_back(std::move(s));
  }
}

/// Line charts against N: one series per algorithm, on log-log axes.
void read_scaling(const Fields& f, const json& doc, BenchData& out) {
  const json& rows = f.rows(doc);
  struct Spec {
    const char* key;
    const char* title;
    const char* y_label;
    double reference;
  };
  const Spec specs[] = {
      {"seconds_per_iter", "time per iteration against N", "seconds / iteration", kNaN},
      {"ess_per_second_min", "min ESS/s against N", "min bulk ESS / second", kNaN},
      {"speedup_wall", "speedup over regular MCMC against N", "× regular (wall time)", 1.0}};
  for (const Spec& sp : specs) {
    LineChartData l{sp.title, "N (rows of data)", sp.y_label, {}, {}, {}, sp.reference};
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string algo = f.text(rows[i], i, "algo");
      const double n = f.number(rows[i], i, "n");
      const double y = f.number(rows[i], i, sp.key, sp.reference == 1.0);
      if (!std::isfinite(y)) continue;  // e.g. no speedup where regular MCMC did not run
      auto it = std::find(l.names.begin(), l.names.end(), algo);
      if (it == l.names.end()) {
        l.names.push_back(algo);
        l.x.emplace_back();
        l.y.emplace_back();
        it = l.names.end() - 1;
      }
      const auto s = static_cast<std::size_t>(it - l.names.begin());
      l.x[s].push_back(n);
      l.y[s].push_back(y);
    }
    if (!l.names.empty()) out.lines.push_back(std::move(l));
  }
}

void read_chains(const Fields& f, const json& doc, BenchData& out) {
  const json& rows = f.rows(doc);
  BarChartData e{"min ESS/s against concurrent chains", "min bulk ESS / second", {}, {}, {}, kNaN};
  BarChartData r{"min ESS/s over one chain's", "× one chain", {}, {}, {}, 1.0};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double c = f.number(rows[i], i, "chains");
    const std::string name = format_number(c) + (c == 1 ? " chain" : " chains");
    for (BarChartData* b : {&e, &r}) b->names.push_back(name), b->family.push_back(1);
    e.values.push_back(f.number(rows[i], i, "ess_per_second_min"));
    r.values.push_back(f.number(rows[i], i, "ratio_to_one_chain"));
  }
  out.bars.push_back(std::move(e));
  out.bars.push_back(std::move(r));
}

}  // namespace

BenchData load_bench(const std::string& path) {
  const Fields f(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) f.fail("cannot read");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    f.fail(std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) f.fail("not a JSON object (flymc-bench writes one object per file)");
  if (doc.contains("benchmarks") && doc.contains("context"))
    f.fail(std::string("Google Benchmark output (flymc_bm), not a flymc-bench file: flymc report "
                       "reads the JSON of flymc-bench ") +
           kKinds + " (tools/bench-report.py tables flymc_bm's)");
  if (!doc.contains("benchmark") || !doc["benchmark"].is_string())
    f.fail(std::string("no \"benchmark\" key (a string naming one of ") + kKinds +
           "): not a flymc-bench JSON file");
  BenchData b;
  b.path = path;
  b.kind = doc["benchmark"].get<std::string>();
  b.machine = machine_line(doc);
  b.heading = doc.value("dataset", std::string());
  if (doc.contains("model") && doc["model"].is_string())
    b.heading += ", " + doc["model"].get<std::string>();
  if (b.kind == "table1")
    read_table1(f, doc, b);
  else if (b.kind == "tall")
    read_tall(f, doc, b);
  else if (b.kind == "compare")
    read_compare(f, doc, b);
  else if (b.kind == "scaling")
    read_scaling(f, doc, b);
  else if (b.kind == "chains")
    read_chains(f, doc, b);
  else
    f.fail("\"benchmark\": \"" + b.kind + "\" is not a kind flymc report knows (" + kKinds + ")");
  return b;
}

namespace detail {
namespace {

constexpr std::string_view kFamilyColour[] = {"#888888", "#0072B2", "#E69F00"};
constexpr const char* kFamilyName[] = {"regular MCMC", "FlyMC", "other samplers"};

std::string bar_chart(const BarChartData& b) {
  const double n = double(b.names.size());
  // Room above the tallest bar for its value label: the domain reaches 3x past it.
  double top = b.reference;
  for (double v : b.values)
    if (std::isfinite(v) && !(v <= top)) top = v;
  const double extra[] = {b.reference, 3.0 * top};
  // Wide enough for the title in 12px bold type.
  const double width =
      std::clamp(std::max(90.0 + 48.0 * n, 70.0 + 7.0 * double(b.title.size())), 380.0, 760.0);
  Chart ch(width, 320, Scale(0.0, std::max(n, 1.0)), Scale::fit(b.values, ScaleKind::log, extra));
  ch.set_categories(b.names);
  for (std::size_t i = 0; i < b.values.size(); ++i)
    ch.bar(i, b.values[i], kFamilyColour[b.family.at(i)]);
  if (std::isfinite(b.reference)) ch.hline(b.reference, "#222");
  ch.set_title(b.title);
  ch.set_y_label(b.y_label);
  for (int fam = 0; fam < 3; ++fam)
    if (std::count(b.family.begin(), b.family.end(), fam) > 0)
      ch.add_legend(kFamilyName[fam], kFamilyColour[fam]);
  return ch.svg();
}

std::string line_chart(const LineChartData& l) {
  std::vector<double> xs, ys;
  for (const auto& v : l.x) xs.insert(xs.end(), v.begin(), v.end());
  for (const auto& v : l.y) ys.insert(ys.end(), v.begin(), v.end());
  const double extra[] = {l.reference};
  Chart ch(440, 300, Scale::fit(xs, ScaleKind::log), Scale::fit(ys, ScaleKind::log, extra));
  for (std::size_t s = 0; s < l.names.size(); ++s) {
    ch.line(l.x[s], l.y[s], series_colour(s), 2.0);
    ch.add_legend(l.names[s], series_colour(s));
  }
  if (std::isfinite(l.reference)) ch.hline(l.reference, "#222");
  ch.set_title(l.title);
  ch.set_x_label(l.x_label);
  ch.set_y_label(l.y_label);
  return ch.svg();
}

}  // namespace

std::string bench_section(const BenchData& b, std::size_t& svgs) {
  std::string h = "<section class=\"bench\"><h2>Benchmark <code>" + escape_xml(b.path) +
                  "</code>: " + escape_xml(b.kind) +
                  (b.heading.empty() ? "" : ", " + escape_xml(b.heading)) + "</h2>";
  if (!b.machine.empty()) h += "<p class=\"note\">Machine: " + escape_xml(b.machine) + "</p>";
  h += "<div class=\"grid\">";
  for (const auto& bar : b.bars) h += bar_chart(bar);
  for (const auto& line : b.lines) h += line_chart(line);
  svgs += b.bars.size() + b.lines.size();
  return h + "</div></section>";
}

}  // namespace detail
}  // namespace flymc::report
