#include "flymc/report/svg.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <utility>

namespace flymc::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Appends `v` with one decimal: pixel coordinates (std::to_chars: no locale, no allocation,
/// which matters for traces of many thousand points).
void put(std::string& out, double v) {
  std::array<char, 32> buf;
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, 1);
  out.append(buf.data(), r.ptr);
}

/// "1.5e+06" → "1.5e6", "2e-05" → "2e-5": exponents as people write them.
std::string tidy_exponent(std::string s) {
  const auto e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mant = s.substr(0, e), exp = s.substr(e + 1);
  const bool neg = !exp.empty() && exp[0] == '-';
  if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) exp.erase(0, 1);
  exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
  return mant + "e" + (neg ? "-" : "") + exp;
}

/// The 1-2-5 step nearest above span / target.
double nice_step(double span, int target) {
  const double raw = span / std::max(target, 1);
  if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  return (norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0) * mag;
}

/// Appends ` name="v"` for every (name, v): the numeric attributes of an element.
void put_attrs(std::string& out, std::initializer_list<std::pair<const char*, double>> attrs) {
  for (const auto& [name, v] : attrs) {
    out += ' ';
    out += name;
    out += "=\"";
    put(out, v);
    out += '"';
  }
}

/// Text at (x, y), turned by `degrees` about that point.
void put_text(std::string& out, double x, double y, std::string_view text, const char* attrs,
              double degrees = 0.0) {
  out += "<text";
  put_attrs(out, {{"x", x}, {"y", y}});
  if (degrees != 0.0) {
    out += " transform=\"rotate(";
    put(out, degrees);
    out += ',';
    put(out, x);
    out += ',';
    put(out, y);
    out += ")\"";
  }
  out += ' ';
  out += attrs;
  out += '>';
  out += escape_xml(text);
  out += "</text>";
}

void put_line(std::string& out, double x0, double y0, double x1, double y1,
              std::string_view attrs) {
  out += "<line";
  put_attrs(out, {{"x1", x0}, {"y1", y0}, {"x2", x1}, {"y2", y1}});
  out += ' ';
  out += attrs;
  out += "/>";
}

/// A rectangle; `paint` holds its fill and stroke attributes.
void put_rect(std::string& out, double x, double y, double w, double h, std::string_view paint) {
  out += "<rect";
  put_attrs(out, {{"x", x}, {"y", y}, {"width", std::max(w, 0.0)}, {"height", std::max(h, 0.0)}});
  out += ' ';
  out += paint;
  out += "/>";
}

std::string fill(std::string_view colour) { return "fill=\"" + std::string(colour) + "\""; }

void open_svg(std::string& out, double width, double height) {
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\"";
  put_attrs(out, {{"width", width}, {"height", height}});
  out += " viewBox=\"0 0 ";
  put(out, width);
  out += ' ';
  put(out, height);
  out += "\" font-family=\"sans-serif\" font-size=\"10\">";
}

/// Opens a group translated by (x, y).
void open_group(std::string& out, double x, double y) {
  out += "<g transform=\"translate(";
  put(out, x);
  out += ',';
  put(out, y);
  out += ")\">";
}

}  // namespace

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_number(double value, int digits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", std::clamp(digits, 1, 17), value);
  return tidy_exponent(buf);
}

std::string format_tick(double value, double step) {
  if (!std::isfinite(value)) return format_number(value);
  step = std::abs(step);
  // A multiple of the step that should be 0 but carries rounding from k * step.
  if (step > 0 && std::abs(value) < step * 1e-9) return "0";
  const double a = std::abs(value);
  if (a >= 1e5 || (a < 1e-3 && a > 0)) return format_number(value, 3);
  const int decimals =
      step > 0 ? std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 6) : 3;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

Scale::Scale(double lo, double hi, ScaleKind kind) : lo_(lo), hi_(hi), kind_(kind) {
  if (kind_ == ScaleKind::log) {
    if (!(hi_ > 0) || !std::isfinite(hi_)) lo_ = 1.0, hi_ = 10.0;
    if (!(lo_ > 0) || !std::isfinite(lo_)) lo_ = hi_ / 10.0;
    if (lo_ >= hi_) hi_ = lo_ * 10.0;
    return;
  }
  if (!std::isfinite(lo_) || !std::isfinite(hi_)) lo_ = 0.0, hi_ = 1.0;
  if (lo_ >= hi_) {
    const double d = lo_ == 0.0 ? 0.5 : std::abs(lo_) / 2.0;
    hi_ = lo_ + d;
    lo_ -= d;
  }
}

bool Scale::placeable(double v) const noexcept {
  return std::isfinite(v) && (kind_ == ScaleKind::linear || v > 0);
}

double Scale::fraction(double v) const noexcept {
  if (!placeable(v)) return kNaN;
  if (kind_ == ScaleKind::linear) return (v - lo_) / (hi_ - lo_);
  return (std::log10(v) - std::log10(lo_)) / (std::log10(hi_) - std::log10(lo_));
}

Scale Scale::fit(std::span<const double> values, ScaleKind kind, std::span<const double> extra) {
  const Scale probe(1.0, 10.0, kind);  // only its placeable()
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (auto list : {values, extra})
    for (double v : list)
      if (probe.placeable(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) return kind == ScaleKind::log ? Scale(1.0, 10.0, kind) : Scale(0.0, 1.0, kind);
  if (kind == ScaleKind::log)
    return Scale(std::pow(10.0, std::floor(std::log10(lo))),
                 std::pow(10.0, std::ceil(std::log10(hi))), kind);
  const Scale widened(lo, hi, kind);  // a constant series gets an interval around its value
  const double step = nice_step(widened.hi() - widened.lo(), 5);
  return Scale(std::floor(widened.lo() / step) * step, std::ceil(widened.hi() / step) * step);
}

double Scale::tick_step(int target) const {
  return kind_ == ScaleKind::linear ? nice_step(hi_ - lo_, target) : 0.0;
}

std::vector<double> Scale::ticks(int target) const {
  std::vector<double> t;
  if (kind_ == ScaleKind::linear) {
    const double step = tick_step(target);
    // Integer multiples of the step, so that ticks carry no accumulated rounding.
    const long k0 = static_cast<long>(std::ceil(lo_ / step - 1e-9));
    const long k1 = static_cast<long>(std::floor(hi_ / step + 1e-9));
    for (long k = k0; k <= k1; ++k) t.push_back(double(k) * step);
    return t;
  }
  const int e0 = static_cast<int>(std::ceil(std::log10(lo_) - 1e-9));
  const int e1 = static_cast<int>(std::floor(std::log10(hi_) + 1e-9));
  const int decades = e1 - e0;
  // A narrow domain gets 2× and 5× ticks; a wide one every `every`-th power of ten only.
  const bool sub = decades <= 2;
  const int every = std::max(1, static_cast<int>(std::ceil((decades + 1.0) / (target + 2))));
  for (int e = e0 - 1; e <= e1; ++e) {
    const double p = std::pow(10.0, e);
    if (e >= e0 && (e - e0) % every == 0) t.push_back(p);
    if (sub)
      for (double m : {2.0, 5.0})
        if (m * p >= lo_ * (1 - 1e-9) && m * p <= hi_ * (1 + 1e-9)) t.push_back(m * p);
  }
  std::sort(t.begin(), t.end());
  return t;
}

Chart::Chart(double width, double height, Scale x, Scale y)
    : plot_w_(std::max(width - left_ - right_, 10.0)),
      plot_h_(std::max(height - top_ - bottom_, 10.0)),
      x_(x),
      y_(y) {}

void Chart::set_categories(std::vector<std::string> names) {
  std::size_t longest = 0;
  for (const auto& n : names) longest = std::max(longest, n.size());
  // Labels slanted at 30°: a character of 10px type drops by about 3px.
  bottom_ = std::max(bottom_, 18.0 + 3.0 * double(std::min<std::size_t>(longest, 30)));
  categories_ = std::move(names);
}

double Chart::y_base() const noexcept {
  if (y_.kind() == ScaleKind::linear && y_.lo() < 0 && y_.hi() > 0) return py(y_.fraction(0.0));
  return py(0.0);
}

std::vector<std::pair<double, int>> Chart::legend_layout() const {
  std::vector<std::pair<double, int>> at;
  double x = 0;
  int row = 0;
  for (const auto& entry : legend_) {
    const double w = 30.0 + 6.0 * double(entry.first.size());
    if (x > 0 && x + w > plot_w_) x = 0, ++row;
    at.emplace_back(x, row);
    x += w;
  }
  return at;
}

double Chart::top() const noexcept {
  return top_ + (legend_.empty() ? 0.0 : 14.0 * double(legend_layout().back().second + 1));
}

void Chart::line(std::span<const double> x, std::span<const double> y, std::string_view colour,
                 double stroke_width) {
  const std::size_t n = std::min(x.size(), y.size());
  bool open = false;
  for (std::size_t i = 0; i <= n; ++i) {
    const double fx = i < n ? x_.fraction(x[i]) : kNaN, fy = i < n ? y_.fraction(y[i]) : kNaN;
    if (std::isnan(fx) || std::isnan(fy)) {
      if (open) body_ += "\"/>";
      open = false;
      continue;
    }
    if (!open) {
      body_ += "<polyline fill=\"none\" stroke=\"";
      body_ += colour;
      body_ += "\" stroke-width=\"";
      put(body_, stroke_width);
      body_ += "\" stroke-linejoin=\"round\" points=\"";
      open = true;
    } else {
      body_ += ' ';
    }
    put(body_, px(fx));
    body_ += ',';
    put(body_, py(fy));
  }
}

void Chart::column(double x0, double x1, double value, std::string_view colour) {
  const double f0 = x_.fraction(x0), f1 = x_.fraction(x1), fy = y_.fraction(value);
  if (std::isnan(f0) || std::isnan(f1) || std::isnan(fy)) return;
  const double top = py(std::clamp(fy, 0.0, 1.0)), base = y_base();
  put_rect(body_, px(f0), std::min(top, base), px(f1) - px(f0), std::abs(base - top), fill(colour));
}

void Chart::bar(std::size_t index, double value, std::string_view colour) {
  const double mid = px(x_.fraction(double(index) + 0.5));
  if (!y_.placeable(value)) {
    put_text(body_, mid, y_base() - 3, "n/a", "text-anchor=\"middle\" fill=\"#777\"");
    return;
  }
  column(double(index) + 0.1, double(index) + 0.9, value, colour);
  const double top = py(std::clamp(y_.fraction(value), 0.0, 1.0));
  put_text(body_, mid, std::min(top, y_base()) - 3, format_number(value, 3),
           "text-anchor=\"middle\" font-size=\"9\" fill=\"#333\"");
}

void Chart::hline(double y, std::string_view colour, bool dashed) {
  const double f = y_.fraction(y);
  if (std::isnan(f) || f < 0 || f > 1) return;
  std::string attrs = "stroke=\"" + std::string(colour) + "\" stroke-width=\"1.2\"";
  if (dashed) attrs += " stroke-dasharray=\"5,3\"";
  put_line(body_, px(0), py(f), px(1), py(f), attrs);
}

void Chart::vline(double x, std::string_view colour, std::string_view label) {
  const double f = x_.fraction(x);
  if (std::isnan(f) || f < 0 || f > 1) return;
  put_line(body_, px(f), py(0), px(f), py(1),
           "stroke=\"" + std::string(colour) + "\" stroke-dasharray=\"3,3\"");
  if (!label.empty()) put_text(body_, px(f) + 3, py(1) + 10, label, "fill=\"#555\"");
}

void Chart::add_legend(std::string_view label, std::string_view colour) {
  legend_.emplace_back(label, colour);
}

void Chart::render_x_ticks(std::string& out) const {
  if (!categories_.empty()) {
    for (std::size_t i = 0; i < categories_.size(); ++i) {
      const double f = x_.fraction(double(i) + 0.5);
      if (std::isnan(f) || f < 0 || f > 1) continue;
      put_text(out, px(f) + 3, plot_h_ + 12, categories_[i],
               "class=\"tick\" text-anchor=\"end\" fill=\"#333\"", -30);
    }
    return;
  }
  // About one tick per 75 pixels, so that labels of small charts do not run together.
  const int target = std::clamp(static_cast<int>(plot_w_ / 75.0), 2, 8);
  const double step = x_.tick_step(target);
  for (double t : x_.ticks(target)) {
    const double x = px(x_.fraction(t));
    put_line(out, x, 0, x, plot_h_, "stroke=\"#e6e6e6\"");
    put_line(out, x, plot_h_, x, plot_h_ + 4, "stroke=\"#888\"");
    put_text(out, x, plot_h_ + 14, format_tick(t, step > 0 ? step : t),
             "class=\"tick\" text-anchor=\"middle\" fill=\"#333\"");
  }
}

void Chart::render_y_ticks(std::string& out) const {
  const int target = std::clamp(static_cast<int>(plot_h_ / 35.0), 2, 8);
  const double step = y_.tick_step(target);
  for (double t : y_.ticks(target)) {
    const double y = py(y_.fraction(t));
    put_line(out, 0, y, plot_w_, y, "stroke=\"#e6e6e6\"");
    put_line(out, -4, y, 0, y, "stroke=\"#888\"");
    put_text(out, -6, y + 3.5, format_tick(t, step > 0 ? step : t),
             "class=\"tick\" text-anchor=\"end\" fill=\"#333\"");
  }
}

void Chart::render_labels(std::string& out) const {
  if (!title_.empty())
    put_text(out, 8, 16, title_, "class=\"title\" font-size=\"12\" font-weight=\"bold\"");
  const auto at = legend_layout();
  for (std::size_t i = 0; i < legend_.size(); ++i) {
    const double x = left_ + at[i].first, y = top_ + 14.0 * at[i].second + 6;
    put_line(out, x, y - 3, x + 16, y - 3,
             "stroke=\"" + legend_[i].second + "\" stroke-width=\"3\"");
    put_text(out, x + 20, y, legend_[i].first, "class=\"legend\" fill=\"#333\"");
  }
  if (!x_label_.empty())
    put_text(out, left_ + plot_w_ / 2, height() - 6, x_label_,
             "class=\"axis-label\" text-anchor=\"middle\" font-size=\"11\"");
  if (!y_label_.empty())
    put_text(out, 13, top() + plot_h_ / 2, y_label_,
             "class=\"axis-label\" text-anchor=\"middle\" font-size=\"11\"", -90);
}

void Chart::render(std::string& out, double x0, double y0) const {
  open_group(out, x0, y0);
  render_labels(out);
  // The plot area: its background, grid and ticks, the drawings, then the frame over them.
  open_group(out, left_, top());
  put_rect(out, 0, 0, plot_w_, plot_h_, fill("#fff"));
  render_x_ticks(out);
  render_y_ticks(out);
  out += body_;
  put_rect(out, 0, 0, plot_w_, plot_h_, "fill=\"none\" stroke=\"#999\"");
  out += "</g></g>";
}

std::string Chart::svg() const {
  std::string out;
  out.reserve(body_.size() + 4096);
  open_svg(out, width(), height());
  render(out, 0, 0);
  out += "</svg>";
  return out;
}

std::string svg_row(std::span<const Chart> charts, std::string_view caption) {
  const double head = caption.empty() ? 0.0 : 18.0;
  double width = 0, height = 0;
  for (const Chart& c : charts) width += c.width(), height = std::max(height, c.height());
  std::string out;
  open_svg(out, width, height + head);
  if (!caption.empty())
    put_text(out, 4, 13, caption, "class=\"title\" font-size=\"12\" font-weight=\"bold\"");
  double x = 0;
  for (const Chart& c : charts) {
    c.render(out, x, head);
    x += c.width();
  }
  out += "</svg>";
  return out;
}

std::string_view series_colour(std::size_t k) noexcept {
  // Okabe & Ito (2008), "Color Universal Design", without its black and yellow (too dark / too
  // light against the white plot area).
  static constexpr std::array<std::string_view, 6> kPalette = {"#0072B2", "#D55E00", "#009E73",
                                                               "#CC79A7", "#E69F00", "#56B4E9"};
  return kPalette[k % kPalette.size()];
}

}  // namespace flymc::report
