#include "flymc/core/prior_spec.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"

namespace flymc {
namespace {

// A scale's reciprocal square must be a finite, non-zero double (as --prior-sd's range).
constexpr double kMinScale = 1e-150, kMaxScale = 1e150;

/// Reads `text` left to right; every error names the option and the whole text.
class SpecReader {
 public:
  SpecReader(std::string_view text, std::string_view option) : s_(text), option_(option) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw ConfigError(std::string(option_) + " '" + std::string(s_) + "': " + why +
                      " (write flat, normal(M, S), student_t(NU, M, S) or laplace(M, B); M, S "
                      "and B may be [lists] with a value per coefficient)");
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "' at character " + std::to_string(i_ + 1));
  }
  std::string_view name() {
    skip_space();
    const std::size_t from = i_;
    while (i_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    return s_.substr(from, i_ - from);
  }
  double number() {
    skip_space();
    double v = 0.0;
    const char* first = s_.data() + i_;
    const auto [end, ec] = std::from_chars(first, s_.data() + s_.size(), v);
    if (ec != std::errc() || !std::isfinite(v))
      fail("expected a finite number at character " + std::to_string(i_ + 1));
    i_ += static_cast<std::size_t>(end - first);
    return v;
  }
  /// One number, or a bracketed list of them.
  std::vector<double> argument() {
    if (!eat('[')) return {number()};
    std::vector<double> out{number()};
    while (eat(',')) out.push_back(number());
    expect(']');
    return out;
  }
  bool at_end() {
    skip_space();
    return i_ == s_.size();
  }

 private:
  std::string_view s_, option_;
  std::size_t i_ = 0;
};

void check_scales(const SpecReader& r, const std::vector<double>& v, const char* what) {
  for (const double x : v)
    if (!(x >= kMinScale && x <= kMaxScale))
      r.fail(std::string("the scale ") + what + " must be in [1e-150, 1e150], got " +
             number_text(x));
}

}  // namespace

std::size_t PriorSpec::length() const noexcept {
  std::size_t n = 1;
  if (loc.size() > n) n = loc.size();
  if (scale.size() > n) n = scale.size();
  return n;
}

PriorSpec parse_prior_spec(std::string_view text, std::string_view option) {
  SpecReader r(text, option);
  PriorSpec p;
  const std::string_view name = r.name();
  if (r.at_end()) {
    if (name == "flat") {
      p.kind = PriorKind::flat;
      return p;
    }
    if (name == "gaussian" || name == "laplace") {
      p.kind = name == "gaussian" ? PriorKind::gaussian : PriorKind::laplace;
      p.keyword = true;
      return p;
    }
    r.fail(name.empty() ? "no distribution" : "unknown distribution '" + std::string(name) + "'");
  }
  r.expect('(');
  if (name == "normal" || name == "laplace") {
    p.kind = name == "normal" ? PriorKind::gaussian : PriorKind::laplace;
  } else if (name == "student_t") {
    p.kind = PriorKind::student_t;
    const std::vector<double> nu = r.argument();
    if (nu.size() != 1 || !(nu[0] > 0.0)) r.fail("NU must be one number > 0");
    p.nu = nu[0];
    r.expect(',');
  } else {
    r.fail("unknown distribution '" + std::string(name) + "'");
  }
  p.loc = r.argument();
  r.expect(',');
  p.scale = r.argument();
  r.expect(')');
  if (!r.at_end()) r.fail("unexpected text after the closing parenthesis");
  check_scales(r, p.scale, p.kind == PriorKind::laplace ? "B" : "S");
  if (p.loc.size() > 1 && p.scale.size() > 1 && p.loc.size() != p.scale.size())
    r.fail("its lists have different lengths (" + std::to_string(p.loc.size()) + " and " +
           std::to_string(p.scale.size()) + ")");
  return p;
}

ScalePrior parse_scale_prior(std::string_view text, const char* option) {
  SpecReader r(text, option);
  ScalePrior p;
  const std::string_view name = r.name();
  if (r.at_end()) {
    if (name == "flat") return p;
    r.fail(name.empty() ? "no distribution" : "unknown distribution '" + std::string(name) + "'");
  }
  r.expect('(');
  const auto scalar = [&](const char* what) {
    const std::vector<double> v = r.argument();
    if (v.size() != 1) r.fail(std::string(what) + " must be one number (sigma is one parameter)");
    return v[0];
  };
  const auto at_zero = [&] {
    if (scalar("the location") != 0.0)
      r.fail("sigma's prior is folded onto sigma > 0 at 0: its location must be 0");
    r.expect(',');
  };
  if (name == "normal" || name == "cauchy") {
    p.kind = name == "normal" ? ScalePrior::Kind::half_normal : ScalePrior::Kind::half_t;
    p.nu = 1.0;
    at_zero();
    p.scale = scalar("S");
  } else if (name == "student_t") {
    p.kind = ScalePrior::Kind::half_t;
    p.nu = scalar("NU");
    if (!(p.nu > 0.0)) r.fail("NU must be > 0");
    r.expect(',');
    at_zero();
    p.scale = scalar("S");
  } else if (name == "exponential") {
    p.kind = ScalePrior::Kind::exponential;
    p.rate = scalar("RATE");
    if (!(p.rate > 0.0 && p.rate <= kMaxScale)) r.fail("RATE must be in (0, 1e150]");
  } else {
    r.fail("unknown distribution '" + std::string(name) + "'");
  }
  r.expect(')');
  if (!r.at_end()) r.fail("unexpected text after the closing parenthesis");
  if (p.kind != ScalePrior::Kind::exponential) check_scales(r, {p.scale}, "S");
  return p;
}

double student_t_log_kernel(double r, double nu) noexcept {
  const double a = std::fabs(r);
  return a < 1e100 ? -0.5 * (nu + 1.0) * std::log1p(r * r / nu)
                   : -0.5 * (nu + 1.0) * (2.0 * std::log(a) - std::log(nu));
}

double ScalePrior::log_density(double sigma) const noexcept {
  const double r = sigma / scale;
  switch (kind) {
    case Kind::half_normal:
      return -0.5 * r * r;
    case Kind::half_t:
      return student_t_log_kernel(r, nu);
    case Kind::exponential:
      return -rate * sigma;
    case Kind::flat:
      return 0.0;
  }
  return 0.0;
}

double ScalePrior::gradient(double sigma) const noexcept {
  switch (kind) {
    case Kind::half_normal:
      return -sigma / (scale * scale);
    case Kind::half_t:
      return -(nu + 1.0) * sigma / (nu * scale * scale + sigma * sigma);
    case Kind::exponential:
      return -rate;
    case Kind::flat:
      return 0.0;
  }
  return 0.0;
}

double ScalePrior::map_curvature(double sigma) const noexcept {
  switch (kind) {
    case Kind::half_normal:
      return 1.0 / (scale * scale);
    case Kind::half_t:
      return (nu + 1.0) / (nu * scale * scale + sigma * sigma);
    case Kind::exponential:
    case Kind::flat:
      return 0.0;
  }
  return 0.0;
}

bool RunPriors::any_flat() const noexcept {
  return coefficients.kind == PriorKind::flat || intercept.kind == PriorKind::flat;
}

bool RunPriors::centred_gaussian() const noexcept {
  const auto centred = [](const PriorSpec& s) {
    return s.kind == PriorKind::gaussian && s.length() == 1 && (s.loc.empty() || s.loc[0] == 0.0);
  };
  return centred(coefficients) && centred(intercept) && coefficients.scale == intercept.scale;
}

RunPriors run_priors(const RunConfig& cfg) {
  RunPriors out;
  out.coefficients = parse_prior_spec(cfg.prior, "--prior");
  out.intercept = cfg.prior_intercept.empty()
                      ? out.coefficients
                      : parse_prior_spec(cfg.prior_intercept, "--prior-intercept");
  if (!out.coefficients.keyword && cfg.prior_sd != 1.0)
    throw ConfigError("--prior-sd sets the sd of --prior gaussian or laplace; --prior '" +
                      cfg.prior + "' carries its own scale");
  if (!cfg.prior_intercept.empty() && !cfg.intercept)
    throw ConfigError(
        "--prior-intercept needs --intercept (the column of ones it is the prior of)");
  if (cfg.intercept && cfg.prior_intercept.empty() && out.coefficients.length() > 1)
    throw ConfigError("--prior '" + cfg.prior +
                      "' has a value per feature: give the intercept's with --prior-intercept");
  if (cfg.intercept && out.intercept.length() > 1)
    throw ConfigError("--prior-intercept '" + cfg.prior_intercept +
                      "': the intercept is one coefficient (no lists)");
  return out;
}

}  // namespace flymc
