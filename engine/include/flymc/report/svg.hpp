#pragma once
/// @file svg.hpp
/// A small SVG chart writer for `flymc report`: linear and log scales with ticks, axes with
/// labels, polylines, bars, reference lines and a legend. It writes plain SVG text (no scripts,
/// no external fonts or images), so a page holding its charts is self-contained.
///
/// Conventions:
/// - A Scale maps a data interval (its domain) to the fraction 0..1 of an axis; a log scale maps
///   log10 of the value. Values a scale cannot place (NaN, ±inf, and ≤ 0 on a log scale) are
///   skipped by every drawing call: a polyline breaks there, a bar is not drawn.
/// - Text (titles, labels, category names) is XML-escaped, so names such as `a<b & "c"` are safe.
/// - Coordinates are written with one decimal: enough for a screen, and it keeps pages of many
///   thousand points small.
///
/// Thread safety: none per object; distinct objects may be used from distinct threads.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flymc::report {

/// `text` with &, <, >, " and ' replaced by XML entities (for text nodes and attribute values).
std::string escape_xml(std::string_view text);

/// A short label of a tick value: `step` is the distance between neighbouring ticks, which sets
/// the decimals shown (0.25 with step 0.05 → "0.25"; 1e6 → "1e6").
std::string format_tick(double value, double step);

/// A number in at most `digits` significant digits ("1.23e+05", "0.0123", "nan" for NaN).
std::string format_number(double value, int digits = 4);

enum class ScaleKind { linear, log };

/// A data interval mapped onto an axis.
class Scale {
 public:
  /// Domain [lo, hi]; an empty or reversed interval is widened around lo (linear: ±0.5 or ±|lo|/2;
  /// log: one decade), a log domain not above 0 becomes [1, 10].
  Scale(double lo, double hi, ScaleKind kind = ScaleKind::linear);
  /// The smallest domain with round ends (multiples of a 1-2-5 tick step; whole decades for log)
  /// that holds every placeable value of `values` and the `extra` values (e.g. 0 for bars, or a
  /// reference line). [0, 1] (log: [1, 10]) if there are none.
  static Scale fit(std::span<const double> values, ScaleKind kind = ScaleKind::linear,
                   std::span<const double> extra = {});

  double lo() const noexcept { return lo_; }
  double hi() const noexcept { return hi_; }
  ScaleKind kind() const noexcept { return kind_; }
  /// True if `v` can be placed: finite, and > 0 on a log scale.
  bool placeable(double v) const noexcept;
  /// Where `v` lies along the domain: 0 at lo, 1 at hi (outside for values outside); NaN when
  /// `v` is not placeable.
  double fraction(double v) const noexcept;
  /// Tick values inside the domain, about `target` of them: multiples of a 1-2-5 step (linear),
  /// or powers of ten, with 2× and 5× between them when the domain spans less than two decades,
  /// and every k-th power when it spans many (log).
  std::vector<double> ticks(int target = 5) const;
  /// The step format_tick() should use for the labels of ticks() (log: the tick itself).
  double tick_step(int target = 5) const;

 private:
  double lo_, hi_;
  ScaleKind kind_;
};

/// One chart: a plot area with x and y axes, their ticks and labels, a title, a legend, and what
/// the drawing calls add. Drawing calls map through the scales at once, in the plot area's own
/// coordinates; render() then writes the grid and axes under the drawings and the frame, labels
/// and legend around them.
class Chart {
 public:
  /// A chart of `width` × `height` pixels, margins for ticks and labels included. A legend (one
  /// row under the title per plot-width of entries) and slanted category names add to the
  /// height, not take from the plot: the final size is width() × height().
  Chart(double width, double height, Scale x, Scale y);

  void set_title(std::string_view title) { title_ = title; }
  void set_x_label(std::string_view label) { x_label_ = label; }
  void set_y_label(std::string_view label) { y_label_ = label; }
  /// Replaces the numeric x ticks by category names, category i centred at x = i + 0.5 (use an x
  /// scale over [0, names.size()]). Names are slanted; the bottom margin grows to fit the longest.
  void set_categories(std::vector<std::string> names);

  /// A polyline through (x[i], y[i]); unplaceable points split it into separate pieces.
  void line(std::span<const double> x, std::span<const double> y, std::string_view colour,
            double stroke_width = 1.0);
  /// A bar for category `index` (x from index + 0.1 to index + 0.9) from the bottom of the y
  /// domain (linear: from 0 when 0 is inside it) to `value`, labelled with the value on top. An
  /// unplaceable value draws nothing but an "n/a" mark.
  void bar(std::size_t index, double value, std::string_view colour);
  /// A vertical bar over [x0, x1] from the bottom of the y domain to `value` (histograms).
  void column(double x0, double x1, double value, std::string_view colour);
  /// A horizontal reference line at `y` across the plot area.
  void hline(double y, std::string_view colour, bool dashed = true);
  /// A vertical reference line at `x` with an optional label at its top.
  void vline(double x, std::string_view colour, std::string_view label = {});
  /// A legend entry (a short line of `colour`, then `label`), in rows under the title.
  void add_legend(std::string_view label, std::string_view colour);

  /// The whole chart as one `<svg>` element.
  std::string svg() const;
  /// The chart's elements translated by (x0, y0), for several charts in one `<svg>`.
  void render(std::string& out, double x0, double y0) const;

  double width() const noexcept { return left_ + plot_w_ + right_; }
  double height() const noexcept { return top() + plot_h_ + bottom_; }

 private:
  // Plot-area coordinates of a fraction along x and y.
  double px(double fraction) const noexcept { return fraction * plot_w_; }
  double py(double fraction) const noexcept { return (1.0 - fraction) * plot_h_; }
  double y_base() const noexcept;  // the row bars stand on
  double top() const noexcept;     // title and legend rows
  /// Each legend entry's x offset and row.
  std::vector<std::pair<double, int>> legend_layout() const;
  void render_x_ticks(std::string& out) const;
  void render_y_ticks(std::string& out) const;
  void render_labels(std::string& out) const;

  double left_ = 58, right_ = 12, top_ = 26, bottom_ = 40;
  double plot_w_, plot_h_;
  Scale x_, y_;
  std::string title_, x_label_, y_label_;
  std::vector<std::string> categories_;
  std::vector<std::pair<std::string, std::string>> legend_;  // (label, colour)
  std::string body_;                                         // the drawings, in call order
};

/// Several charts side by side in one `<svg>` element (e.g. one rank histogram per chain), with
/// an optional caption above them.
std::string svg_row(std::span<const Chart> charts, std::string_view caption = {});

/// A colour per series (chain k → palette[k mod size]): the Okabe-Ito palette, told apart by
/// readers with the common colour-vision deficiencies.
std::string_view series_colour(std::size_t k) noexcept;

}  // namespace flymc::report
