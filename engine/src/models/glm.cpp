#include "flymc/models/glm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"
#include "model_checks.hpp"
#include "newton.hpp"

namespace flymc {
namespace {

/// Rows per block of a data pass: one dots_packed, one call of the family, then the weighted
/// sums, while the block's rows are in L2.
constexpr std::size_t kBlock = 256;
constexpr int kSlots = SingleIndexFamily::kMaxOrder + 1;

/// The derivatives of k data's log-likelihoods w_n·f(y_n, η_n + o_n; m_n) at η (without their
/// offsets) into out[j·k + i], datum i being row at(i) of `ex`'s arrays: the family's batched
/// call itself where the data have no weights, trials or offsets (the same bits as before they
/// existed). `ys` holds the k responses.
template <class At>
void block_derivatives(const RowExtras& ex, const SingleIndexFamily& fam, At&& at, const double* ys,
                       const double* eta, std::size_t k, int order, double* out) {
  if (!ex.any()) {
    fam.derivatives(ys, eta, k, order, out);
    return;
  }
  alignas(64) double shifted[kBlock];
  for (std::size_t i = 0; i < k; ++i) shifted[i] = ex.off.empty() ? eta[i] : eta[i] + ex.off[at(i)];
  if (!ex.trials.empty()) {  // one datum at a time, as datum_derivatives computes it
    double one[kSlots];
    for (std::size_t i = 0; i < k; ++i) {
      const std::size_t n = at(i);
      fam.derivatives_trials(ys[i], ex.trials[n], shifted[i], order, one);
      for (int j = 0; j <= order; ++j)
        out[static_cast<std::size_t>(j) * k + i] = ex.w.empty() ? one[j] : one[j] * ex.w[n];
    }
    return;
  }
  fam.derivatives(ys, shifted, k, order, out);
  if (!ex.w.empty())
    for (int j = 0; j <= order; ++j)
      for (std::size_t i = 0; i < k; ++i) out[static_cast<std::size_t>(j) * k + i] *= ex.w[at(i)];
}

AlignedBuffer padded(const double* theta, std::size_t d, std::size_t stride) {
  AlignedBuffer p = aligned_zeros(stride);
  std::copy(theta, theta + d, p.get());
  return p;
}

/// The sums of one data pass: Σ f, Σ f'·x (stride entries, if asked), Σ w·x xᵀ (upper
/// triangle, if asked) with w = max(−f'', 0), and how many data had −f'' < 0.
struct GlmStats {
  double f = 0.0;
  double clipped = 0.0;
  std::vector<double> g;
  Mat h;

  // As doubles for the processes of a sharded data set (row_fold.hpp).
  static constexpr const char* kWhat = "single-index model";
  void pack(PackedSums& p) const { p.scalar(f).scalar(clipped).array(g).matrix(h); }
  static GlmStats unpack(SumsReader& r) {
    GlmStats s;
    s.f = r.scalar();
    s.clipped = r.scalar();
    s.g = r.array();
    s.h = r.matrix<Mat>();
    return s;
  }
};

/// acc + p (the reduction's first value is empty: 0 + x is x, bit for bit).
GlmStats add_stats(GlmStats acc, GlmStats p) {
  acc.f += p.f;
  acc.clipped += p.clipped;
  if (acc.g.empty()) {
    acc.g = std::move(p.g);
  } else {
    for (std::size_t j = 0; j < acc.g.size(); ++j) acc.g[j] += p.g[j];
  }
  if (acc.h.size() == 0) {
    acc.h = std::move(p.h);
  } else if (p.h.size() != 0) {
    acc.h += p.h;
  }
  return acc;
}

/// One deterministic pass over the rows of `ds` (of the whole data set if it is a shard) at
/// padded θ: Σ f always, the gradient with `grad`, the clipped curvature with `curvature`.
GlmStats glm_pass(const Dataset& ds, const SingleIndexFamily& fam, const double* theta_p, bool grad,
                  bool curvature) {
  const std::size_t d = ds.d(), stride = ds.stride();
  const int order = curvature ? 2 : grad ? 1 : 0;
  const auto y = ds.y();
  return fold_sums(
      ds, GlmStats{},
      [&](std::size_t lo, std::size_t hi) {
        GlmStats p;
        if (grad) p.g.assign(stride, 0.0);
        AlignedBuffer block;
        if (curvature) {
          p.h = Mat::Zero(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
          block = aligned_zeros(kBlock * stride);
        }
        alignas(64) double eta[kBlock], out[kSlots * kBlock], roots[kBlock];
        for (std::size_t b0 = lo; b0 < hi; b0 += kBlock) {
          const std::size_t m = std::min(kBlock, hi - b0);
          const RowsF64 rows = ds.rows(b0, b0 + m);
          kernels::dots_packed(rows.data(), m, stride, theta_p, eta);
          block_derivatives(
              RowExtras::of(ds), fam, [b0](std::size_t i) { return b0 + i; }, y.data() + b0, eta, m,
              order, out);
          for (std::size_t i = 0; i < m; ++i) p.f += out[i];
          if (grad) ds.weighted_row_sum(b0, b0 + m, out + m, 1, p.g.data());
          if (!curvature) continue;
          for (std::size_t i = 0; i < m; ++i) {
            const double w = -out[2 * m + i];
            if (w < 0.0) p.clipped += 1.0;
            roots[i] = std::sqrt(std::max(w, 0.0));  // NaN stays NaN: the Cholesky fails
          }
          blas::syrk_scaled_rows(rows.data(), m, d, stride, roots, block.get(), p.h.data());
        }
        return p;
      },
      add_stats);
}

Mat symmetric(const Mat& upper) { return upper.selfadjointView<Eigen::Upper>(); }

/// Throws DataError naming the first row (of the whole data set) whose response the family
/// refuses.
void check_labels(const Dataset& ds, const SingleIndexFamily& fam) {
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;
  const auto y = ds.y();
  const std::vector<double> bad = fold_rows(
      ds, std::vector<double>{},
      [&](std::size_t lo, std::size_t hi) {
        for (std::size_t i = lo; i < hi; ++i)
          if (!fam.check_label(y[i]).empty()) return std::vector<double>{double(first + i), y[i]};
        return std::vector<double>{};
      },
      [](std::vector<double> a, std::vector<double> b) { return a.empty() ? b : a; },
      [](const std::vector<double>& v) { return v; },
      [](const std::vector<double>& v) { return v; });
  if (!bad.empty())
    throw DataError(ds.source() + ": row " + std::to_string(std::size_t(bad[0]) + 1) +
                    ": field 1 (label): " + number_text(bad[1]) + " " + fam.check_label(bad[1]) +
                    " for the " + fam.name() + " model");
}

/// Throws DataError naming the first row whose weight, trials or offset is out of its domain
/// (data from a file were checked as they were read; data built in code are checked here), or,
/// for a family that reads trials, whose response exceeds them (1 where there is no trials
/// column).
void check_row_extras(const Dataset& ds, const SingleIndexFamily& fam) {
  const auto w = ds.weights(), m = ds.trials(), o = ds.offsets(), y = ds.y();
  const std::size_t first = ds.shard() != nullptr ? ds.shard()->first_row : 0;
  const auto fail = [&](std::size_t i, const char* what, double v, const std::string& why) {
    throw DataError(ds.source() + ": row " + std::to_string(first + i) + " (0-based): " + what +
                    " " + number_text(v) + " " + why);
  };
  for (std::size_t i = 0; i < ds.n(); ++i) {
    if (!w.empty() && !(w[i] >= 0.0 && std::isfinite(w[i])))
      fail(i, "weight", w[i], "must be finite and >= 0");
    if (!o.empty() && !std::isfinite(o[i])) fail(i, "offset", o[i], "must be finite");
    if (!m.empty() && !(m[i] >= 0.0 && m[i] == std::floor(m[i]) && std::isfinite(m[i])))
      fail(i, "trials", m[i], "must be an integer >= 0");
    if (fam.reads_trials() && !(y[i] <= (m.empty() ? 1.0 : m[i])))
      fail(i, "response", y[i],
           m.empty() ? "exceeds 1, and the data have no trials (--trials)"
                     : "exceeds the datum's trials " + number_text(m[i]));
  }
}

}  // namespace

// ----------------------------------------------------------------------------------------------
GlmModel::GlmModel(std::shared_ptr<const Dataset> data, Prior prior,
                   std::shared_ptr<const SingleIndexFamily> family)
    : OnePredictorModel(std::move(data), prior), family_(std::move(family)) {
  if (!family_) throw ConfigError("a single-index model needs its family");
  if (!data_ || data_->total_n() == 0 || data_->d() == 0)
    throw DataError("the " + family_->name() + " model needs at least one row and one feature");
  if (!(prior.sd >= 1e-150 && prior.sd <= 1e150))
    throw ConfigError("--prior-sd must be in [1e-150, 1e150], got " + number_text(prior.sd));
  check_labels(*data_, *family_);
  check_row_extras(*data_, *family_);
  detail::check_features(*data_, family_->name() + " regression");
  blas::use_single_thread();
}

double GlmModel::log_lik(const double* theta) const {
  return glm_pass(*data_, *family_, theta, false, false).f;
}

double GlmModel::log_lik_grad(const double* theta, double* grad) const {
  const GlmStats s = glm_pass(*data_, *family_, theta, true, false);
  std::copy(s.g.begin(), s.g.end(), grad);
  return s.f;
}

MapResult GlmModel::find_map(double tol, int max_iter) const {
  const auto d = static_cast<Eigen::Index>(dim());
  AlignedBuffer tp = aligned_zeros(stride());
  auto load = [&](const Vec& th) { std::copy(th.data(), th.data() + d, tp.get()); };
  // Each trial point's pass also forms the gradient and curvature there: a full Newton step is
  // usually taken, and then the next iteration reads them instead of passing over the data again
  // (on tall data every pass is a read of the whole matrix).
  struct Trial {
    Vec theta;
    GlmStats stats;
  };
  std::optional<Trial> last;
  int made = 0;  // passes over the data
  auto stats_at = [&](const Vec& th) {
    if (!last || last->theta != th) {
      load(th);
      last = Trial{th, glm_pass(*data_, *family_, tp.get(), true, true)};
      ++made;
    }
    return last->stats;
  };
  MapResult r = detail::two_stage_map(dim(), prior_, [&](const Prior& prior, const Vec& from) {
    MapResult s;
    s.theta = from;
    const int before = made;
    auto objective = [&](const Vec& th) {
      return stats_at(th).f + prior.log_density(th.data(), dim());
    };
    for (s.iterations = 0; s.iterations < max_iter; ++s.iterations) {
      const GlmStats st = stats_at(s.theta);
      double f = st.f + prior.log_density(s.theta.data(), dim());
      Vec g = Eigen::Map<const Vec>(st.g.data(), d);
      prior.add_gradient(s.theta.data(), dim(), g.data());
      Mat h = symmetric(st.h);
      for (Eigen::Index j = 0; j < d; ++j)
        h(j, j) += prior.map_curvature(static_cast<std::size_t>(j), s.theta[j]);
      const Eigen::LLT<Mat> llt(h);
      if (llt.info() != Eigen::Success)
        throw ConfigError(detail::improper_or_singular(
            prior, "the " + family_->name() +
                       " model's MAP search met a Hessian that is not positive definite (a "
                       "non-finite derivative?)"));
      const detail::NewtonMove move =
          detail::newton_move(objective, s.theta, f, g, llt.solve(g), tol);
      s.log_post = f;
      if (move != detail::NewtonMove::stepped) break;
    }
    s.passes = s.curvature_passes = made - before;
    return s;
  });
  // The curvature at θ_MAP itself: the Laplace covariance, and scalable MH's expansion if exact.
  const int before = made;
  const GlmStats st = stats_at(r.theta);
  r.passes += made - before;
  r.curvature_passes += made - before;
  const Mat lik = symmetric(st.h);
  Mat h = lik;
  add_prior_precision(prior_, h);
  const Eigen::LLT<Mat> llt(h);
  detail::check_laplace_precision(prior_, llt, "the " + family_->name() + " model");
  detail::check_proper(prior_, r.theta, "the " + family_->name() + " model", [&](const Vec& th) {
    load(th);
    return log_lik(tp.get());
  });
  r.covariance = llt.solve(Mat::Identity(d, d));
  r.covariance = 0.5 * (r.covariance + r.covariance.transpose());
  if (st.clipped == 0.0) r.lik_curvature = lik;
  return r;
}

// ----------------------------------------------------------------------------------------------
GlmBound GlmBound::make(const GlmModel& model, const RunConfig& cfg, const MapResult& map) {
  require_constant(model.family(), 'k', "--algo flymc");
  return GlmBound(model, map.theta, cfg.bound == BoundTuning::map, bound_slack_of(cfg));
}

GlmBound::GlmBound(const GlmModel& model, const Vec& theta_hat, bool tuned, double slack)
    : data_(model.data_ptr()),
      family_(model.family_ptr()),
      kappa_(*model.family().kappa()),
      slack_(slack),
      offset_(slack) {
  if (!(slack >= 0.0) || !std::isfinite(slack))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + number_text(slack));
  const Dataset& ds = *data_;
  if (static_cast<std::size_t>(theta_hat.size()) != ds.d())
    throw ConfigError("bound anchor has the wrong dimension");
  const std::size_t d = ds.d(), stride = ds.stride();
  rec_.resize(ds.n());
  const AlignedBuffer theta0 = padded(theta_hat.data(), d, stride);
  const auto y = ds.y();
  const double half_kappa = 0.5 * kappa_;
  // Datum n's curvature is κ·c_n, c_n its weight times the family's datum and κ scales (all 1
  // where the data have no weights or trials and κ is one for all: then the sums below are those
  // of one κ).
  if (ds.has_row_extras() || family_->kappa_reads_response()) {
    factor_.resize(ds.n());
    for (std::size_t i = 0; i < ds.n(); ++i)
      factor_[i] = datum_constant_factor(*family_, ds, i) * family_->kappa_scale(y[i]);
  }
  // One pass: each datum's tangent (records), and at the anchor θ0, with e_n = x_n·θ0 − η̂_n,
  // f0 = Σ [f̂ + f̂'·e − (κc/2)e²], g0 = Σ (f̂' − κce)·x_n and S = Σ c_n x_n x_nᵀ (A = (κ/2)S).
  const GlmStats s = fold_sums(
      ds, GlmStats{},
      [&](std::size_t lo, std::size_t hi) {
        GlmStats p;
        p.g.assign(stride, 0.0);
        p.h = Mat::Zero(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
        AlignedBuffer block = aligned_zeros(kBlock * stride);
        alignas(64) double a[kBlock], hat[kBlock], out[2 * kBlock], coef[kBlock], roots[kBlock];
        std::fill_n(roots, kBlock, 1.0);
        for (std::size_t b0 = lo; b0 < hi; b0 += kBlock) {
          const std::size_t m = std::min(kBlock, hi - b0);
          const RowsF64 rows = ds.rows(b0, b0 + m);
          kernels::dots_packed(rows.data(), m, stride, theta0.get(), a);
          for (std::size_t i = 0; i < m; ++i) hat[i] = tuned ? a[i] : 0.0;
          block_derivatives(
              RowExtras::of(ds), *family_, [b0](std::size_t i) { return b0 + i; }, y.data() + b0,
              hat, m, 1, out);
          for (std::size_t i = 0; i < m; ++i) {
            const double e = a[i] - hat[i], f1 = out[m + i];
            rec_[b0 + i] = Record{hat[i], out[i], f1, y[b0 + i]};
            if (factor_.empty()) {
              p.f += out[i] + f1 * e - half_kappa * e * e;
              coef[i] = f1 - kappa_ * e;
            } else {
              const double c = factor_[b0 + i];
              p.f += out[i] + f1 * e - half_kappa * c * e * e;
              coef[i] = f1 - kappa_ * c * e;
              roots[i] = std::sqrt(c);
            }
          }
          ds.weighted_row_sum(b0, b0 + m, coef, 1, p.g.data());
          blas::syrk_scaled_rows(rows.data(), m, d, stride, roots, block.get(), p.h.data());
        }
        return p;
      },
      add_stats);
  sum_ = CollapsedQuadratic(s.f - static_cast<double>(ds.total_n()) * slack,
                            Eigen::Map<const Vec>(s.g.data(), static_cast<Eigen::Index>(d)),
                            half_kappa * symmetric(s.h), theta_hat, stride);
  share_records();
}

void GlmBound::share_records() {
  const RowShard* s = data_->shard();
  if (s == nullptr || s->link->parts() <= 1) return;
  // A record's four doubles, then its curvature factor and row extras where the data have them
  // (as any process's have them: a process may hold no rows).
  const RowExtras own = RowExtras::of(*data_);
  const std::span<const double> extra[] = {factor_, own.off, own.trials, own.w};
  std::vector<double> has(4);
  for (std::size_t k = 0; k < 4; ++k) has[k] = extra[k].empty() ? 0.0 : 1.0;
  const std::vector<double> any = s->link->all_gather(has);
  for (std::size_t j = 0; j < any.size(); ++j) has[j % 4] = std::max(has[j % 4], any[j]);
  const std::size_t width = 4 + static_cast<std::size_t>(has[0] + has[1] + has[2] + has[3]);
  std::vector<double> mine(width * rec_.size());
  for (std::size_t i = 0; i < rec_.size(); ++i) {
    const Record& r = rec_[i];
    double* m = mine.data() + width * i;
    *m++ = r.eta_hat;
    *m++ = r.f_hat;
    *m++ = r.d1_hat;
    *m++ = r.y;
    for (std::size_t k = 0; k < 4; ++k)
      if (has[k] != 0.0) *m++ = extra[k][i];
  }
  const std::vector<double> all = s->link->gather_in_order(mine);
  const std::size_t rows = s->total_rows;
  if (all.size() != width * rows)
    throw Error(data_->source() + ": the shards' bound records do not add up to the data set");
  rec_.resize(rows);
  std::vector<double>* dest[] = {&factor_, &shared_off_, &shared_trials_, &shared_w_};
  for (std::size_t k = 0; k < 4; ++k) dest[k]->assign(has[k] != 0.0 ? rows : 0, 0.0);
  for (std::size_t i = 0; i < rows; ++i) {
    const double* a = all.data() + width * i;
    rec_[i] = Record{a[0], a[1], a[2], a[3]};
    const double* more = a + 4;
    for (std::size_t k = 0; k < 4; ++k)
      if (has[k] != 0.0) (*dest[k])[i] = *more++;
  }
  shared_ = true;
}

RowExtras GlmBound::extras() const noexcept {
  return shared_ ? RowExtras{shared_off_, shared_trials_, shared_w_} : RowExtras::of(*data_);
}

double GlmBound::log_bound_sum(const double* theta, double* scratch, double* grad) const noexcept {
  return sum_.evaluate(theta, scratch, grad);
}

BoundCheck GlmBound::deltas(const Index* idx, const double* eta, std::size_t k,
                            double* delta) const noexcept {
  return delta_grads(idx, eta, k, delta, nullptr);
}

BoundCheck GlmBound::delta_grads(const Index* idx, const double* eta, std::size_t k, double* delta,
                                 double* dpsi) const noexcept {
  constexpr double kEps = std::numeric_limits<double>::epsilon();
  const int order = dpsi != nullptr ? 1 : 0;
  BoundCheck check;
  const RowExtras ex = extras();
  alignas(64) double ys[kBlock], out[2 * kBlock];
  for (std::size_t b0 = 0; b0 < k; b0 += kBlock) {
    const std::size_t m = std::min(kBlock, k - b0);
    for (std::size_t i = 0; i < m; ++i) ys[i] = rec_[idx[b0 + i]].y;
    const Index* at = idx + b0;
    block_derivatives(
        ex, *family_, [at](std::size_t i) { return at[i]; }, ys, eta + b0, m, order, out);
    for (std::size_t i = 0; i < m; ++i) {
      const Record& r = rec_[idx[b0 + i]];
      const double kappa = factor_.empty() ? kappa_ : kappa_ * factor_[idx[b0 + i]];
      const double e = eta[b0 + i] - r.eta_hat, lin = r.d1_hat * e, quad = 0.5 * kappa * e * e;
      double dl = (out[i] - r.f_hat - lin) + quad + offset_;
      double g = order == 1 ? out[m + i] - r.d1_hat + kappa * e : 0.0;
      if (!(dl >= 0.0)) {
        // Δ is a difference of terms: within their rounding a clamp, beyond (or NaN) a violation.
        const double tol = 1e-9 + 64.0 * kEps *
                                      (std::fabs(out[i]) + std::fabs(r.f_hat) + std::fabs(lin) +
                                       quad + std::fabs(offset_));
        if (dl >= -tol)
          ++check.clamped;
        else
          check.violated(idx[b0 + i], eta[b0 + i], dl);
        dl = 0.0;
        g = 0.0;
      }
      delta[b0 + i] = dl;
      if (dpsi != nullptr) dpsi[b0 + i] = g;
    }
  }
  return check;
}

void GlmBound::raise_for_testing(double excess) noexcept {
  offset_ -= excess;
  sum_.add_constant(excess * static_cast<double>(data_->total_n()));
}

void GlmBound::add_uniform_slack(double eps) {
  if (!(eps >= 0.0) || !std::isfinite(eps))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + number_text(eps));
  offset_ += eps;
  slack_ += eps;
  sum_.add_constant(-eps * static_cast<double>(data_->total_n()));
}

double GlmBound::log_bound(Index n, double eta) const noexcept {
  const Record& r = rec_[n];
  const double e = eta - r.eta_hat;
  const double kappa = factor_.empty() ? kappa_ : kappa_ * factor_[n];
  return r.f_hat + r.d1_hat * e - 0.5 * kappa * e * e - offset_;
}

double GlmBound::log_lik(Index n, double eta) const noexcept {
  const double y = rec_[n].y;
  const RowExtras ex = extras();
  if (!ex.any()) return family_->log_lik(y, eta);
  double f = 0.0;
  block_derivatives(
      ex, *family_, [n](std::size_t) { return std::size_t{n}; }, &y, &eta, 1, 0, &f);
  return f;
}

}  // namespace flymc
