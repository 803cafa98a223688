// The page: head, inline style sheet, the run and bench sections, and writing it out.
#include <string>

#include "flymc/core/atomic_file.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/report/report.hpp"
#include "flymc/report/svg.hpp"
#include "report_detail.hpp"

namespace flymc::report {
namespace {

// Inline, so that the page needs nothing from the network (and a viewer without network shows
// it whole). System fonts only.
constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 24px auto; max-width: 1240px; padding: 0 16px; color: #222; background: #fafafa; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; border-bottom: 2px solid #0072B2; padding-bottom: 4px; margin-top: 36px; }
h3 { font-size: 16px; margin: 22px 0 8px; }
h4 { font-size: 14px; margin: 14px 0 4px; }
code { font-size: 90%; background: #eee; padding: 1px 4px; border-radius: 3px; }
.note { color: #555; font-size: 13px; max-width: 1000px; }
.info { font-size: 14px; line-height: 1.6; }
.stat { font-weight: normal; color: #555; font-size: 12px; margin-left: 8px; }
table.summary { border-collapse: collapse; font-size: 12px; font-variant-numeric: tabular-nums; }
table.summary th { background: #e8eef4; padding: 3px 8px; text-align: right; }
table.summary td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #e4e4e4; }
table.summary td:first-child, table.summary th:first-child { text-align: left; }
table.summary td.bad { background: #fbd3cc; font-weight: bold; }
table.summary tr.flag td:first-child { color: #a31b00; }
dl.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr));
             gap: 2px 16px; font-size: 12px; margin: 8px 0; }
dl.figures div { display: flex; justify-content: space-between; border-bottom: 1px dotted #ccc; }
dl.figures dt { color: #555; } dl.figures dd { margin: 0; font-variant-numeric: tabular-nums; }
.grid, .plots { display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-start; }
.param { border-top: 1px solid #e0e0e0; }
svg { background: #fff; border: 1px solid #e2e2e2; max-width: 100%; height: auto; }
.key { display: inline-block; width: 14px; height: 10px; margin: 0 3px 0 8px; }
)";

}  // namespace

std::string compose_page(std::span<const RunData> runs, std::span<const BenchData> benches,
                         const ReportOptions& options) {
  std::string body;
  std::size_t svgs = 0;
  for (const RunData& r : runs) body += detail::run_section(r, options, svgs);
  for (const BenchData& b : benches) body += detail::bench_section(b, svgs);
  std::string sources;
  for (const RunData& r : runs) sources += (sources.empty() ? "" : ", ") + escape_xml(r.dir);
  for (const BenchData& b : benches) sources += (sources.empty() ? "" : ", ") + escape_xml(b.path);
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"generator\" content=\"flymc report\">"
      // The number of plots, for a reader (or a test) to check the page against.
      "<meta name=\"flymc-plots\" content=\"" +
      std::to_string(svgs) + "\"><title>flymc report</title><style>" + kStyle +
      "</style></head><body><h1>flymc report</h1><p class=\"note\">" + std::to_string(runs.size()) +
      (runs.size() == 1 ? " run, " : " runs, ") + std::to_string(benches.size()) +
      (benches.size() == 1 ? " benchmark file" : " benchmark files") + ": " + sources + ". " +
      std::to_string(svgs) + " plots.</p>";
  h.reserve(h.size() + body.size() + 32);
  return h + body + "</body></html>\n";
}

void write_report(const std::vector<std::string>& dirs, const std::vector<std::string>& benches,
                  const std::string& out, const ReportOptions& options) {
  if (dirs.empty() && benches.empty())
    throw UsageError("flymc report: give at least one run directory or --bench file");
  // Everything is read (and every input checked) before the output is touched.
  std::vector<RunData> runs;
  for (const auto& d : dirs) runs.push_back(load_run(d));
  std::vector<BenchData> bench;
  for (const auto& b : benches) bench.push_back(load_bench(b));
  write_text_atomic(out, compose_page(runs, bench, options));
}

}  // namespace flymc::report
