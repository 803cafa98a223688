#include "flymc/mcmc/metric.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "flymc/core/errors.hpp"

namespace flymc {
namespace {
using Index2 = Eigen::Index;
Index2 ei(std::size_t i) { return static_cast<Index2>(i); }
// The dense forms run as Eigen's vectorized matrix-vector products and triangular solves over the
// column-major factors: walking their rows with scalar sums strides through memory and, for the
// softmax model's hundreds of coefficients, took most of a FlyMC iteration.
using CVecMap = Eigen::Map<const Vec>;
using VecMap = Eigen::Map<Vec>;
}  // namespace

InverseMetric InverseMetric::identity(std::size_t p) {
  InverseMetric m;
  m.form_ = Form::identity;
  m.p_ = p;
  return m;
}

InverseMetric InverseMetric::diagonal(std::vector<double> var) {
  InverseMetric m;
  m.form_ = Form::diag;
  m.p_ = var.size();
  for (double v : var)
    if (!(v > 0.0) || !std::isfinite(v))
      throw ConfigError("metric: a diagonal entry is not a finite positive number");
  m.sd_.resize(var.size());
  for (std::size_t j = 0; j < var.size(); ++j) m.sd_[j] = std::sqrt(var[j]);
  m.var_ = std::move(var);
  return m;
}

InverseMetric InverseMetric::dense(const Mat& cov) {
  InverseMetric m;
  m.form_ = Form::dense;
  m.p_ = static_cast<std::size_t>(cov.rows());
  if (cov.rows() != cov.cols() || !cov.allFinite())
    throw ConfigError("metric: the dense inverse metric is not a finite square matrix");
  Eigen::LLT<Mat> llt(cov);
  if (llt.info() != Eigen::Success)
    throw ConfigError("metric: the dense inverse metric is not positive definite");
  m.cov_ = cov;
  m.chol_ = llt.matrixL();
  return m;
}

void InverseMetric::mul_sqrt(const double* eta, double* out) const noexcept {
  switch (form_) {
    case Form::identity:
      std::copy(eta, eta + p_, out);
      return;
    case Form::diag:
      for (std::size_t j = 0; j < p_; ++j) out[j] = sd_[j] * eta[j];
      return;
    case Form::dense:
      VecMap(out, ei(p_)).noalias() = chol_.triangularView<Eigen::Lower>() * CVecMap(eta, ei(p_));
      return;
  }
}

void InverseMetric::solve_sqrt(const double* v, double* out) const noexcept {
  switch (form_) {
    case Form::identity:
      std::copy(v, v + p_, out);
      return;
    case Form::diag:
      for (std::size_t j = 0; j < p_; ++j) out[j] = v[j] / sd_[j];
      return;
    case Form::dense: {  // forward substitution
      VecMap o(out, ei(p_));
      o = CVecMap(v, ei(p_));
      chol_.triangularView<Eigen::Lower>().solveInPlace(o);
      return;
    }
  }
}

void InverseMetric::mul_inv(const double* v, double* out) const noexcept {
  switch (form_) {
    case Form::identity:
      std::copy(v, v + p_, out);
      return;
    case Form::diag:
      for (std::size_t j = 0; j < p_; ++j) out[j] = var_[j] * v[j];
      return;
    case Form::dense:
      VecMap(out, ei(p_)).noalias() = cov_ * CVecMap(v, ei(p_));
      return;
  }
}

void InverseMetric::momentum(const double* eta, double* out) const noexcept {
  switch (form_) {
    case Form::identity:
      std::copy(eta, eta + p_, out);
      return;
    case Form::diag:
      for (std::size_t j = 0; j < p_; ++j) out[j] = eta[j] / sd_[j];
      return;
    case Form::dense: {  // back substitution with Lᵀ
      VecMap o(out, ei(p_));
      o = CVecMap(eta, ei(p_));
      chol_.triangularView<Eigen::Lower>().transpose().solveInPlace(o);
      return;
    }
  }
}

double InverseMetric::scale(std::size_t j) const noexcept {
  switch (form_) {
    case Form::identity:
      return 1.0;
    case Form::diag:
      return sd_[j];
    case Form::dense:
      return std::sqrt(cov_(ei(j), ei(j)));
  }
  return 1.0;
}

std::vector<double> InverseMetric::inverse_values() const {
  switch (form_) {
    case Form::identity:
      return std::vector<double>(p_, 1.0);
    case Form::diag:
      return var_;
    case Form::dense: {
      std::vector<double> v(p_ * p_);
      for (std::size_t i = 0; i < p_; ++i)
        for (std::size_t j = 0; j < p_; ++j) v[i * p_ + j] = cov_(ei(i), ei(j));
      return v;
    }
  }
  return {};
}

void InverseMetric::save(std::vector<double>& out) const {
  out.push_back(static_cast<double>(form_));
  out.push_back(static_cast<double>(p_));
  if (form_ == Form::diag) out.insert(out.end(), var_.begin(), var_.end());
  if (form_ == Form::dense) {
    const auto v = inverse_values();
    out.insert(out.end(), v.begin(), v.end());
  }
}

InverseMetric InverseMetric::load(std::span<const double> in, std::size_t& pos) {
  auto need = [&](std::size_t k) {
    if (pos + k > in.size()) throw ConfigError("metric state: truncated");
  };
  need(2);
  const double f = in[pos], pd = in[pos + 1];
  pos += 2;
  if (!(f == 0.0 || f == 1.0 || f == 2.0) || !(pd >= 0.0 && pd <= 1e6) || pd != std::floor(pd))
    throw ConfigError("metric state: invalid form or dimension");
  const auto p = static_cast<std::size_t>(pd);
  const auto form = static_cast<Form>(static_cast<int>(f));
  if (form == Form::identity) return identity(p);
  if (form == Form::diag) {
    need(p);
    std::vector<double> var(in.begin() + static_cast<std::ptrdiff_t>(pos),
                            in.begin() + static_cast<std::ptrdiff_t>(pos + p));
    pos += p;
    return diagonal(std::move(var));
  }
  need(p * p);
  Mat cov(ei(p), ei(p));
  for (std::size_t i = 0; i < p; ++i)
    for (std::size_t j = 0; j < p; ++j) cov(ei(i), ei(j)) = in[pos + i * p + j];
  pos += p * p;
  return dense(cov);
}

// ---------------------------------------------------------------------------------------------

MetricAdaptation::MetricAdaptation(InverseMetric::Form form, std::size_t p, long warmup)
    : form_(form), p_(p) {
  if (form == InverseMetric::Form::identity || warmup < 20) return;
  // Stan's defaults, shrunk proportionally when they do not fit (stan/mcmc/windowed_adaptation).
  long init = 75, term = 50, base = 25;
  if (init + term + base > warmup) {
    init = static_cast<long>(0.15 * static_cast<double>(warmup));
    term = static_cast<long>(0.1 * static_cast<double>(warmup));
    base = warmup - (init + term);
  }
  const long end = warmup - term;
  long start = init, size = base;
  windows_.push_back(start);
  while (start < end) {
    long stop = start + size;
    // A window that would leave less than twice its doubled size runs to the end of the slow
    // phase (Stan's compute_next_window). Stan's restart() sets the first window without that
    // check: with a warm-up of 151-199 it is [75, 100), then [100, warmup − 50).
    if (start != init && stop + 2 * size > end) stop = end;
    windows_.push_back(stop);
    start = stop;
    size *= 2;
  }
  mean_.assign(p_, 0.0);
  m2_.assign(form == InverseMetric::Form::dense ? p_ * p_ : p_, 0.0);
}

bool MetricAdaptation::add(long it, const double* theta, InverseMetric& metric) {
  if (!active() || it < windows_.front() || it >= windows_.back()) return false;
  // Welford's update of the mean and the (co)variance sums.
  ++n_;
  const double inv_n = 1.0 / static_cast<double>(n_);
  if (form_ == InverseMetric::Form::diag) {
    for (std::size_t j = 0; j < p_; ++j) {
      const double d = theta[j] - mean_[j];
      mean_[j] += d * inv_n;
      m2_[j] += d * (theta[j] - mean_[j]);
    }
  } else {
    // m2_[i·p + j] += d_j·(θ_i − mean_i) as one rank-1 update of the p×p sums (column i of
    // the column-major map is row i of m2_).
    const CVecMap th(theta, ei(p_));
    VecMap mean(mean_.data(), ei(p_));
    const Vec d = th - mean;
    mean += d * inv_n;
    Eigen::Map<Mat> m2(m2_.data(), ei(p_), ei(p_));
    m2.noalias() += d * (th - mean).transpose();
  }
  if (std::find(windows_.begin() + 1, windows_.end(), it + 1) == windows_.end()) return false;
  // End of a slow window: the regularized estimate becomes the metric.
  const double n = static_cast<double>(n_);
  const double w = n / (n + 5.0), reg = 1e-3 * 5.0 / (n + 5.0);
  if (n_ >= 2) {
    if (form_ == InverseMetric::Form::diag) {
      std::vector<double> var(p_);
      for (std::size_t j = 0; j < p_; ++j) var[j] = w * m2_[j] / (n - 1.0) + reg;
      metric = InverseMetric::diagonal(std::move(var));
    } else {
      Mat cov(ei(p_), ei(p_));
      for (std::size_t i = 0; i < p_; ++i)
        for (std::size_t j = 0; j < p_; ++j)
          cov(ei(i), ei(j)) =
              w * 0.5 * (m2_[i * p_ + j] + m2_[j * p_ + i]) / (n - 1.0) + (i == j ? reg : 0.0);
      metric = InverseMetric::dense(cov);
    }
  }
  n_ = 0;
  std::fill(mean_.begin(), mean_.end(), 0.0);
  std::fill(m2_.begin(), m2_.end(), 0.0);
  return true;
}

void MetricAdaptation::save(std::vector<double>& out) const {
  out.push_back(static_cast<double>(n_));
  out.insert(out.end(), mean_.begin(), mean_.end());
  out.insert(out.end(), m2_.begin(), m2_.end());
}

void MetricAdaptation::load(std::span<const double> in, std::size_t& pos) {
  const std::size_t need = 1 + mean_.size() + m2_.size();
  if (pos + need > in.size()) throw ConfigError("metric adaptation state: truncated");
  const double n = in[pos++];
  if (!(n >= 0.0 && n <= 1e15) || n != std::floor(n))
    throw ConfigError("metric adaptation state: invalid count");
  n_ = static_cast<long>(n);
  for (double& v : mean_) v = in[pos++];
  for (double& v : m2_) v = in[pos++];
}

}  // namespace flymc
