// A run directory: reading it, and its section of the page (configuration, summary table,
// sampler columns over the run, per-parameter traces, rank histograms and autocorrelations).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>

#include "flymc/core/errors.hpp"
#include "flymc/io/output.hpp"
#include "flymc/report/report.hpp"
#include "flymc/report/svg.hpp"
#include "report_detail.hpp"

namespace flymc::report {
namespace {

/// summary.json's "run" object with every scalar formatted; nested values are left out.
std::vector<std::pair<std::string, std::string>> read_run_figures(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw DataError(path + ": cannot read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("run") || !j["run"].is_object())
    throw DataError(path + ": no \"run\" object (not a summary.json of flymc sample)");
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, v] : j["run"].items()) {
    if (v.is_number()) out.emplace_back(key, format_number(v.get<double>(), 4));
    if (v.is_null()) out.emplace_back(key, "–");
    if (v.is_boolean()) out.emplace_back(key, v.get<bool>() ? "true" : "false");
    if (v.is_string()) out.emplace_back(key, v.get<std::string>());
  }
  return out;
}

long config_long(const StanCsv& c, const char* key, long fallback) {
  const std::string v = c.config_value(key);
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  return (!v.empty() && *end == '\0') ? x : fallback;
}

/// Column k of every chain's first `len` kept draws.
ChainDraws column_draws(const RunData& run, std::size_t k) {
  ChainDraws x(run.chains.size());
  for (std::size_t c = 0; c < run.chains.size(); ++c) {
    x[c].reserve(run.draws);
    for (std::size_t i = 0; i < run.draws; ++i) x[c].push_back(run.chains[c].draws[i][k]);
  }
  return x;
}

std::string td(std::string_view text, bool bad) {
  return std::string(bad ? "<td class=\"bad\">" : "<td>") + escape_xml(text) + "</td>";
}

/// The posterior summary table; doubtful rows (see ReportOptions) highlighted.
std::string summary_table(const std::vector<NamedSummary>& rows, std::size_t chains,
                          const ReportOptions& o) {
  const double ess_min = o.ess_per_chain_min * double(chains);
  std::string h =
      "<table class=\"summary\"><thead><tr><th>parameter</th><th>mean</th><th>sd</th>"
      "<th>MCSE</th><th>5%</th><th>50%</th><th>95%</th><th>ESS bulk</th><th>ESS tail</th>"
      "<th>R̂</th></tr></thead><tbody>";
  std::size_t flagged = 0;
  for (const auto& r : rows) {
    const auto& s = r.s;
    // NaN fails every comparison: an ESS or R̂ that cannot be computed is flagged too.
    const bool bad_bulk = !(s.ess_bulk >= ess_min), bad_tail = !(s.ess_tail >= ess_min);
    const bool bad_rhat = !(s.rhat <= o.rhat_max);
    const bool bad = bad_bulk || bad_tail || bad_rhat;
    flagged += bad;
    h += bad ? "<tr class=\"flag\">" : "<tr>";
    h += td(r.name, bad);
    for (double v : {s.mean, s.sd, s.mcse_mean, s.q5, s.q50, s.q95})
      h += td(format_number(v), false);
    h += td(format_number(std::round(s.ess_bulk), 6), bad_bulk);
    h += td(format_number(std::round(s.ess_tail), 6), bad_tail);
    h += td(format_number(s.rhat, 4), bad_rhat) + "</tr>";
  }
  h += "</tbody></table><p class=\"note\">Highlighted (" + std::to_string(flagged) + " of " +
       std::to_string(rows.size()) + "): R̂ above " + format_number(o.rhat_max) +
       ", or bulk or tail ESS below " + format_number(o.ess_per_chain_min) + " per chain (here " +
       format_number(ess_min, 6) +
       "), the thresholds Vehtari et al. (2021) recommend before trusting the estimates; a value "
       "that cannot be computed (nan) is highlighted as well.</p>";
  return h;
}

/// A sampler column worth plotting over the run.
struct SamplerPlot {
  const char* column;
  const char* title;
  const char* y_label;
  bool per_iteration;  // divide by thin: the column counts since the previous kept draw
  bool smooth;         // plot window means: the per-draw values are noise around a level
};

constexpr SamplerPlot kSamplerPlots[] = {
    {"n_bright__", "Fireflies: bright data", "bright data", false, false},
    {"n_queries__", "Likelihood queries per iteration", "queries / iteration", true, true},
    {"batch__", "Data per batch", "data / batch", false, false},
    {"n_events__", "Events per kept draw", "events", false, true},
    {"accept_stat__", "Acceptance", "mean acceptance", false, true},
    {"stepsize__", "Step size", "step size", false, false},
    {"treedepth__", "NUTS tree depth", "tree depth", false, true},
    {"lp__", "Log density (lp__)", "lp__", false, false},
};

/// Rows per window of a smoothed plot: about 100 windows over the run.
std::size_t smoothing_window(std::size_t rows) { return std::max<std::size_t>(1, rows / 100); }

/// One chain's column k over the run at x = the iteration (a kept draw every thin-th), with
/// the warm-up rows first when the file holds them and `with_warmup` asks for them; window means
/// of `window` rows when window > 1.
detail::Series run_series(const StanCsv& c, std::size_t k, std::size_t len, double scale,
                          bool with_warmup, std::size_t window, const ReportOptions& o) {
  const double thin = double(config_long(c, "thin", 1));
  with_warmup = with_warmup && !c.warmup.empty();
  std::vector<double> y;
  y.reserve((with_warmup ? c.warmup.size() : 0) + len);
  if (with_warmup)
    for (const auto& row : c.warmup) y.push_back(row[k] * scale);
  for (std::size_t i = 0; i < len; ++i) y.push_back(c.draws[i][k] * scale);
  const double x0 = with_warmup ? thin : double(config_long(c, "warmup", 0)) + thin;
  if (window > 1) return detail::window_means(y, x0, thin, window);
  return detail::reduce_trace(y, x0, thin, o.max_trace_points);
}

/// A chart of one series per chain.
Chart chain_chart(const std::vector<detail::Series>& s, double width, double height,
                  ScaleKind ykind = ScaleKind::linear, std::span<const double> y_extra = {}) {
  std::vector<double> xs, ys;
  for (const auto& c : s) xs.insert(xs.end(), c.x.begin(), c.x.end());
  for (const auto& c : s) ys.insert(ys.end(), c.y.begin(), c.y.end());
  double lo = INFINITY, hi = -INFINITY;
  for (double x : xs) lo = std::min(lo, x), hi = std::max(hi, x);
  Chart ch(width, height, Scale(lo, hi), Scale::fit(ys, ykind, y_extra));
  for (std::size_t c = 0; c < s.size(); ++c)
    ch.line(s[c].x, s[c].y, series_colour(c), s.size() > 2 ? 0.8 : 1.0);
  return ch;
}

std::string sampler_plots(const RunData& run, const ReportOptions& o, std::size_t& svgs) {
  const auto& cols = run.chains.front().columns;
  const StanCsv& first = run.chains.front();
  const bool regular = first.config_value("algorithm") == "full";
  std::string h = "<div class=\"grid\">";
  for (const SamplerPlot& p : kSamplerPlots) {
    const auto it = std::find(cols.begin(), cols.end(), p.column);
    if (it == cols.end() || (regular && std::string_view(p.column) == "n_bright__")) continue;
    const auto k = static_cast<std::size_t>(it - cols.begin());
    std::vector<detail::Series> s;
    bool constant_zero = true;
    const std::size_t window = p.smooth ? smoothing_window(first.warmup.size() + run.draws) : 1;
    for (const StanCsv& c : run.chains) {
      const double scale = p.per_iteration ? 1.0 / double(config_long(c, "thin", 1)) : 1.0;
      s.push_back(run_series(c, k, run.draws, scale, true, window, o));
      for (double v : s.back().y) constant_zero = constant_zero && v == 0.0;
    }
    if (constant_zero) continue;  // e.g. lp__ of the approximate samplers, written as 0
    Chart ch = chain_chart(s, 380, 210);
    ch.set_title(window > 1
                     ? std::string(p.title) + " (means of " + std::to_string(window) + " draws)"
                     : std::string(p.title));
    ch.set_x_label("iteration");
    ch.set_y_label(p.y_label);
    if (!first.warmup.empty())
      ch.vline(double(config_long(first, "warmup", 0)), "#444", "warm-up ends");
    h += ch.svg();
    ++svgs;
  }
  h += "</div>";
  const bool warmup_rows = std::any_of(run.chains.begin(), run.chains.end(),
                                       [](const StanCsv& c) { return !c.warmup.empty(); });
  if (!warmup_rows) {
    h += "<p class=\"note\">The draw files hold the kept draws after warm-up only (save_warmup=" +
         escape_xml(first.config_value("save_warmup")) +
         "), so these plots start after iteration " + escape_xml(first.config_value("warmup")) +
         ": acceptance and step size during warm-up are not recorded. Adaptation ended with "
         "step size";
    for (std::size_t c = 0; c < run.chains.size(); ++c)
      h += (c ? ", " : " ") + format_number(run.chains[c].step_size, 4);
    h += " (chains 1–" + std::to_string(run.chains.size()) + ").</p>";
  }
  if (std::find(cols.begin(), cols.end(), "n_bright__") != cols.end() && !regular)
    h += "<p class=\"note\">Bright data are the fireflies: the data whose likelihood an "
         "iteration evaluates. Queries count likelihood evaluations since the previous kept "
         "draw, divided by thin.</p>";
  return h;
}

/// Trace, rank histograms and autocorrelation of one parameter.
std::string parameter_plots(const RunData& run, std::size_t k, const NamedSummary& p,
                            const ReportOptions& o) {
  const ChainDraws x = column_draws(run, k);
  const std::size_t chains = x.size();
  // Only kept draws: the summary and the ranks are computed from those.
  std::vector<detail::Series> trace;
  for (const StanCsv& c : run.chains)
    trace.push_back(run_series(c, k, run.draws, 1.0, false, 1, o));
  Chart tr = chain_chart(trace, 380, 210);
  tr.set_title("trace");
  tr.set_x_label("iteration");
  tr.set_y_label(p.name);

  // At least 5 draws per bin and chain on average, else the histogram is noise.
  const std::size_t bins = std::clamp<std::size_t>(run.draws / 5, 1, o.rank_bins);
  const auto counts = rank_histogram(x, bins);
  const double expected = double(run.draws) / double(bins);
  std::vector<double> all;
  for (const auto& cc : counts) all.insert(all.end(), cc.begin(), cc.end());
  const double extra[] = {0.0, expected};
  const Scale ry = Scale::fit(all, ScaleKind::linear, extra);
  std::vector<Chart> ranks;
  const double w = std::clamp(480.0 / double(chains), 100.0, 140.0);
  for (std::size_t c = 0; c < chains; ++c) {
    // Ranks as a fraction of all draws: short tick labels in narrow panels.
    Chart h(w, 210, Scale(0, 1), ry);
    for (std::size_t b = 0; b < bins; ++b)
      h.column(double(b) / double(bins), double(b + 1) / double(bins), double(counts[c][b]),
               series_colour(c));
    h.hline(expected, "#222");
    h.set_title("chain " + std::to_string(c + 1));
    h.set_x_label("rank / draws");
    if (c == 0) h.set_y_label("draws per bin");
    ranks.push_back(std::move(h));
  }

  std::vector<detail::Series> acf(chains);
  for (std::size_t c = 0; c < chains; ++c) {
    acf[c].y = autocorrelation(x[c], std::min(o.max_lag, run.draws / 2));
    for (std::size_t l = 0; l < acf[c].y.size(); ++l) acf[c].x.push_back(double(l));
  }
  const double acf_extra[] = {0.0, 1.0};
  Chart ac = chain_chart(acf, 260, 210, ScaleKind::linear, acf_extra);
  ac.hline(0.0, "#666", false);
  ac.set_title("autocorrelation");
  ac.set_x_label("lag");
  ac.set_y_label("autocorrelation");

  const auto& s = p.s;
  std::string h = "<div class=\"param\"><h4>" + escape_xml(p.name) +
                  " <span class=\"stat\">ESS bulk " + format_number(std::round(s.ess_bulk), 6) +
                  ", tail " + format_number(std::round(s.ess_tail), 6) + ", R̂ " +
                  format_number(s.rhat, 4) + "</span></h4><div class=\"plots\">";
  h += tr.svg() + svg_row(ranks) + ac.svg() + "</div></div>";
  return h;
}

std::string chain_key(std::size_t chains) {
  std::string h = "<p class=\"note\">Chains:";
  for (std::size_t c = 0; c < chains; ++c)
    h += " <span class=\"key\" style=\"background:" + std::string(series_colour(c)) + "\"></span>" +
         std::to_string(c + 1);
  return h +
         ". Rank histograms: the ranks of all chains' draws pooled, one histogram per "
         "chain; the dashed line is the count expected when every chain samples the same "
         "distribution.</p>";
}

std::string run_info(const RunData& run) {
  const StanCsv& c = run.chains.front();
  std::string h = "<p class=\"info\">";
  for (const char* key : {"model", "algorithm", "kernel", "metric", "data"}) {
    const std::string v = c.config_value(key);
    if (!v.empty()) h += "<b>" + std::string(key) + "</b> " + escape_xml(v) + " &nbsp; ";
  }
  h += "<br>" + std::to_string(run.chains.size()) + " chains × " + std::to_string(run.draws) +
       " kept draws (warm-up " + escape_xml(c.config_value("warmup")) + ", iterations " +
       escape_xml(c.config_value("iter")) + " in all, thin " + escape_xml(c.config_value("thin")) +
       ", seed " + escape_xml(c.config_value("seed")) + ")</p>";
  if (!run.has_summary)
    return h +
           "<p class=\"note\">No summary.json in this directory (the run has not finished, "
           "or another program wrote the draws): the table below is computed from the "
           "draw files.</p>";
  h += "<dl class=\"figures\">";
  for (const auto& [k, v] : run.run_figures)
    h += "<div><dt>" + escape_xml(k) + "</dt><dd>" + escape_xml(v) + "</dd></div>";
  return h + "</dl>";
}

}  // namespace

RunData load_run(const std::string& dir) {
  RunData run;
  run.dir = dir;
  run.chains = read_run_chains(dir);
  run.draws = run.chains.front().draws.size();
  for (const StanCsv& c : run.chains) run.draws = std::min(run.draws, c.draws.size());
  if (run.draws == 0) throw DataError(dir + ": the chain files hold no kept draws");
  const std::string summary = (std::filesystem::path(dir) / "summary.json").string();
  std::error_code ec;
  if (std::filesystem::exists(summary, ec)) {
    run.run_figures = read_run_figures(summary);
    run.has_summary = true;
  }
  return run;
}

namespace detail {

std::string run_section(const RunData& run, const ReportOptions& o, std::size_t& svgs) {
  const auto& cols = run.chains.front().columns;
  std::vector<ChainDraws> per_col(cols.size());
  std::vector<std::size_t> param_cols;  // column of each parameter, in summarize_columns' order
  for (std::size_t k = 0; k < cols.size(); ++k) {
    per_col[k] = column_draws(run, k);
    if (!cols[k].ends_with("__")) param_cols.push_back(k);
  }
  const std::vector<NamedSummary> rows = summarize_columns(cols, per_col);
  std::string h = "<section class=\"run\"><h2>Run <code>" + escape_xml(run.dir) + "</code></h2>";
  h += run_info(run);
  h += "<h3>Posterior summary</h3>" + summary_table(rows, run.chains.size(), o);
  h += "<h3>Sampler over the run</h3>" + sampler_plots(run, o, svgs);

  // The parameters to plot: all, or the max_params with the lowest bulk ESS (NaN first).
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const bool all = rows.size() <= o.max_params;
  if (!all) {
    auto key = [&](std::size_t i) {
      return std::isnan(rows[i].s.ess_bulk) ? -INFINITY : rows[i].s.ess_bulk;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    order.resize(o.max_params);
  }
  h += "<h3>Parameters</h3><p class=\"note\">" +
       (all ? "All " + std::to_string(rows.size()) + " parameters."
            : "The " + std::to_string(o.max_params) + " of " + std::to_string(rows.size()) +
                  " parameters with the lowest bulk ESS, lowest first.") +
       "</p>" + chain_key(run.chains.size());
  for (std::size_t i : order) {
    h += parameter_plots(run, param_cols.at(i), rows[i], o);
    svgs += 3;
  }
  return h + "</section>";
}

}  // namespace detail
}  // namespace flymc::report
