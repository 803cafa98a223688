#include "flymc/softmax.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "flymc/blas.hpp"
#include "flymc/errors.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/parallel.hpp"
#include "model_checks.hpp"

namespace flymc {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string num_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// The per-datum passes work on blocks of at most kBlockData data and kBlockVals predictors
/// (K per datum), held on the stack: the exps and logs of a block run vectorized
/// (kernels::exp / kernels::log), with no libm call per datum.
constexpr std::size_t kBlockVals = 2048;
constexpr std::size_t kBlockData = 256;
/// Data per block for K classes (≥ 2, since K ≤ SoftmaxModel::kMaxClasses = 1024).
constexpr std::size_t block_data(std::size_t K) noexcept {
  return std::min(kBlockData, kBlockVals / K);
}
static_assert(kBlockVals / SoftmaxModel::kMaxClasses >= 1);

/// softmax and lse of a block of n data with K predictors each (psi[i·K + k]), in log space with
/// max-subtraction, so that no exp overflows at any finite ψ: m_i = max_k ψ_ik and
/// lse(ψ_i) = m_i + l_i, l_i = log1p(r_i), r_i = Σ_{k ≠ argmax} e^{ψ_ik − m_i} ∈ [0, K−1].
/// The argmax's term (exactly 1) is left out of r, and log1p is formed by Goldberg's
/// log(1+r)·r/((1+r)−1), so l keeps full relative accuracy when a datum is confidently classified
/// (log L_n = −l_n ≈ −r_n tiny): 1 + r rounded would lose r below 1e-16.
struct SoftmaxBlock {
  alignas(64) double p[kBlockVals];  // softmax(ψ_i)_k at i·K + k
  alignas(64) double m[kBlockData];  // max_k ψ_ik
  alignas(64) double l[kBlockData];  // log Σ_k e^{ψ_ik − m_i}
  alignas(64) double u[kBlockData];  // 1 + r_i
  alignas(64) double lu[kBlockData];
  std::uint32_t a[kBlockData];  // argmax_k ψ_ik (the first)

  void compute(const double* psi, std::size_t n, std::size_t K) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      const double* x = psi + i * K;
      std::size_t am = 0;
      double mx = x[0];
      for (std::size_t k = 1; k < K; ++k)
        if (x[k] > mx) {
          mx = x[k];
          am = k;
        }
      m[i] = mx;
      a[i] = static_cast<std::uint32_t>(am);
      for (std::size_t k = 0; k < K; ++k) p[i * K + k] = x[k] - mx;
    }
    kernels::exp(p, p, n * K);
    for (std::size_t i = 0; i < n; ++i) {
      double* e = p + i * K;
      e[a[i]] = 0.0;
      double r = 0.0;
      for (std::size_t k = 0; k < K; ++k) r += e[k];
      e[a[i]] = 1.0;
      l[i] = r;
      u[i] = 1.0 + r;
    }
    kernels::log(u, lu, n);
    for (std::size_t i = 0; i < n; ++i) {
      const double r = l[i], s = u[i];
      l[i] = s == 1.0 ? r : lu[i] * (r / (s - 1.0));
      const double inv = 1.0 / s;
      for (std::size_t k = 0; k < K; ++k) p[i * K + k] *= inv;
    }
  }
};

/// The per-datum terms of Böhning's bound at v = ψ − ψ0, for a datum with predictors `psi` and
/// tangent record `r` (ψ0 then g0, see SoftmaxBound::rec_).
struct BoundTerms {
  double gv;    // g0ᵀv
  double q;     // ½vᵀHv
  double mean;  // v̄, the mean of v
};
/// H = ½C with C = I − 𝟙𝟙ᵀ/K the centering projector, so ½vᵀHv = ¼|v − v̄𝟙|²: a sum of squares,
/// with no cancellation (and +inf, not inf − inf = NaN, if v is huge).
inline BoundTerms bound_terms(const double* psi, const double* r, std::size_t K,
                              double inv_k) noexcept {
  double sv = 0.0, gv = 0.0;
  for (std::size_t c = 0; c < K; ++c) {
    const double v = psi[c] - r[c];
    sv += v;
    gv += r[K + c] * v;
  }
  const double mean = sv * inv_k;
  double q = 0.0;
  for (std::size_t c = 0; c < K; ++c) {
    const double w = (psi[c] - r[c]) - mean;
    q += w * w;
  }
  return {gv, 0.25 * q, mean};
}

/// Grain of the reductions whose chunk partials hold `partial_doubles` doubles (a D×D matrix
/// or K(K−1)/2 of them): deterministic_reduce keeps every chunk's partial until the ordered
/// combine, so the chunk count is capped by a 256 MB budget and by 64. It depends only on the
/// sizes, never on the thread count, so the sums stay bit-identical for any thread count.
std::size_t stats_grain(std::size_t n, std::size_t partial_doubles) {
  constexpr std::size_t kBudget = (std::size_t{256} << 20) / sizeof(double);
  const std::size_t max_chunks =
      std::clamp<std::size_t>(kBudget / std::max<std::size_t>(1, partial_doubles), 1, 64);
  return std::max(kReduceGrain, (n + max_chunks - 1) / max_chunks);
}

/// Partial sums of one data chunk for Newton's method: f = Σ log L_n, g = its gradient (K blocks
/// of stride), and for every class pair k < l the D×D matrix B_kl = Σ_n p_nk p_nl x_n x_nᵀ
/// (column-major, upper triangle).
struct NewtonStats {
  double f = 0.0;
  std::vector<double> g, pairs;
};

/// The negative Hessian of Σ log L_n from the pair sums: its K×K blocks are
/// Σ_n p_k(δ_kl − p_l) x xᵀ, i.e. −B_kl off the diagonal and, because each row of
/// diag(p) − ppᵀ sums to zero, p_k(1 − p_k) = Σ_{l≠k} p_k p_l on it: the diagonal blocks are
/// Σ_{l≠k} B_kl, sums of positive terms (no cancellation when p_k ≈ 1), and only the K(K−1)/2
/// SYRKs of the pairs are needed.
Mat assemble_neg_hessian(const std::vector<double>& pairs, std::size_t K, std::size_t d) {
  const auto D = static_cast<Eigen::Index>(d);
  Mat h = Mat::Zero(D * static_cast<Eigen::Index>(K), D * static_cast<Eigen::Index>(K));
  std::size_t pair = 0;
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t l = k + 1; l < K; ++l, ++pair) {
      Eigen::Map<const Mat> upper(pairs.data() + pair * d * d, D, D);
      const Mat b = upper.selfadjointView<Eigen::Upper>();
      const auto kk = static_cast<Eigen::Index>(k) * D, ll = static_cast<Eigen::Index>(l) * D;
      h.block(kk, ll, D, D) = -b;
      h.block(ll, kk, D, D) = -b;
      h.block(kk, kk, D, D) += b;
      h.block(ll, ll, D, D) += b;
    }
  return h;
}

}  // namespace

// ----------------------------------------------------------------------------------------------
SoftmaxModel::SoftmaxModel(std::shared_ptr<const Dataset> data, Prior prior)
    : data_(std::move(data)), prior_(prior) {
  if (!data_ || data_->n() == 0 || data_->d() == 0)
    throw DataError("softmax classification needs at least one row and one feature");
  // 1/σ² must be a finite, non-zero double (as RunConfig::validate checks).
  if (!(prior.sd >= 1e-150 && prior.sd <= 1e150))
    throw ConfigError("--prior-sd must be in [1e-150, 1e150], got " + std::to_string(prior.sd));
  const Dataset& ds = *data_;
  auto labels = std::make_shared<std::vector<std::uint32_t>>(ds.n());
  std::uint32_t top = 0;
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const double v = ds.y()[i];
    if (!(v >= 0.0 && v < static_cast<double>(kMaxClasses) && v == std::floor(v)))
      throw DataError(ds.source() + ": row " + std::to_string(i + 1) +
                      ": field 1 (label): softmax classification needs class indices 0..K-1 "
                      "(integers, at most " +
                      std::to_string(kMaxClasses) + " classes), got " + num_text(v));
    (*labels)[i] = static_cast<std::uint32_t>(v);
    top = std::max(top, (*labels)[i]);
  }
  if (top == 0)
    throw DataError(ds.source() +
                    ": field 1 (label): every label is 0; softmax classification needs at "
                    "least two classes (labels 0..K-1 with K >= 2)");
  k_ = std::size_t{top} + 1;
  labels_ = std::move(labels);
  detail::check_features(ds, "softmax classification");
  blas::use_single_thread();
}

std::vector<std::string> SoftmaxModel::param_names() const {
  std::vector<std::string> names;
  names.reserve(dim());
  for (std::size_t k = 1; k <= k_; ++k)
    for (std::size_t j = 1; j <= data_->d(); ++j)
      names.push_back("W." + std::to_string(k) + "." + std::to_string(j));
  return names;
}

double SoftmaxModel::log_lik(const double* theta) const {
  const Dataset& ds = *data_;
  const std::size_t K = k_, stride = ds.stride(), mb = block_data(K);
  const auto& y = *labels_;
  return deterministic_reduce(
      ds.n(), kReduceGrain, 0.0,
      [&](std::size_t lo, std::size_t hi) {
        SoftmaxBlock sb;
        alignas(64) double psi[kBlockVals];
        double f = 0.0;
        for (std::size_t b0 = lo; b0 < hi; b0 += mb) {
          const std::size_t m = std::min(mb, hi - b0);
          kernels::dots_packed_multi(ds.row(b0), m, stride, theta, K, stride, psi);
          sb.compute(psi, m, K);
          // log L_n = (ψ_y − m) − l: exact 0 − l when y is the argmax.
          for (std::size_t i = 0; i < m; ++i) f += (psi[i * K + y[b0 + i]] - sb.m[i]) - sb.l[i];
        }
        return f;
      },
      [](double a, double b) { return a + b; });
}

namespace {
struct LikGrad {
  double f = 0.0;
  std::vector<double> g;  // K·stride
};
}  // namespace

double SoftmaxModel::log_lik_grad(const double* theta, double* grad) const {
  const Dataset& ds = *data_;
  const std::size_t K = k_, stride = ds.stride(), mb = block_data(K);
  const auto& y = *labels_;
  LikGrad total = deterministic_reduce(
      ds.n(), kReduceGrain, LikGrad{},
      [&](std::size_t lo, std::size_t hi) {
        LikGrad part;
        part.g.assign(K * stride, 0.0);
        SoftmaxBlock sb;
        alignas(64) double psi[kBlockVals];
        // One pass per block: the rows are read from memory by the dot products and again, from
        // L2 (≤ 256 rows), by the K weighted row sums.
        for (std::size_t b0 = lo; b0 < hi; b0 += mb) {
          const std::size_t m = std::min(mb, hi - b0);
          kernels::dots_packed_multi(ds.row(b0), m, stride, theta, K, stride, psi);
          sb.compute(psi, m, K);
          for (std::size_t i = 0; i < m; ++i) {
            const std::uint32_t c = y[b0 + i];
            part.f += (psi[i * K + c] - sb.m[i]) - sb.l[i];
            // ∂ log L_n/∂ψ_n = e_y − softmax(ψ_n), in place of the probabilities.
            double* p = sb.p + i * K;
            for (std::size_t k = 0; k < K; ++k) p[k] = -p[k];
            p[c] += 1.0;
          }
          for (std::size_t k = 0; k < K; ++k)
            kernels::weighted_row_sum(ds.row(b0), m, stride, sb.p + k, K,
                                      part.g.data() + k * stride);
        }
        return part;
      },
      [](LikGrad acc, LikGrad p) {
        if (acc.g.empty()) return p;
        acc.f += p.f;
        for (std::size_t j = 0; j < acc.g.size(); ++j) acc.g[j] += p.g[j];
        return acc;
      });
  std::copy(total.g.begin(), total.g.end(), grad);
  return total.f;
}

MapResult SoftmaxModel::find_map(double tol, int max_iter) const {
  const auto t0 = Clock::now();
  const Vec zero = Vec::Zero(static_cast<Eigen::Index>(dim()));
  // At W = 0 every class has probability 1/K: a well-conditioned start for Newton.
  MapResult r = newton(Prior{PriorKind::gaussian, prior_.sd}, zero, tol, max_iter);
  if (prior_.kind != PriorKind::gaussian) {
    const int it = r.iterations;
    r = newton(prior_, r.theta, tol, max_iter);
    r.iterations += it;
  }
  r.seconds = seconds_since(t0);
  return r;
}

MapResult SoftmaxModel::newton(const Prior& prior, Vec theta, double tol, int max_iter) const {
  const Dataset& ds = *data_;
  const ParamLayout lay = layout();
  const std::size_t K = k_, d = ds.d(), stride = ds.stride(), p = dim(), mb = block_data(K);
  const std::size_t npairs = K * (K - 1) / 2;
  const auto P = static_cast<Eigen::Index>(p);
  const auto& y = *labels_;
  AlignedBuffer tp = aligned_zeros(lay.padded());

  // f, its gradient (want_grad) and the pair sums B_kl (want_hess) at padded θ in tp.
  auto stats = [&](bool want_grad, bool want_hess) {
    const std::size_t grain = stats_grain(ds.n(), want_hess ? npairs * d * d : K * stride);
    return deterministic_reduce(
        ds.n(), grain, NewtonStats{},
        [&](std::size_t lo, std::size_t hi) {
          NewtonStats st;
          if (want_grad) st.g.assign(K * stride, 0.0);
          if (want_hess) st.pairs.assign(npairs * d * d, 0.0);
          SoftmaxBlock sb;
          alignas(64) double psi[kBlockVals], c[kBlockVals];
          // Row copies scaled by √(p_k p_l); padding columns stay zero (never written).
          AlignedBuffer q = want_hess ? aligned_zeros(mb * stride) : AlignedBuffer();
          for (std::size_t b0 = lo; b0 < hi; b0 += mb) {
            const std::size_t m = std::min(mb, hi - b0);
            kernels::dots_packed_multi(ds.row(b0), m, stride, tp.get(), K, stride, psi);
            sb.compute(psi, m, K);
            for (std::size_t i = 0; i < m; ++i)
              st.f += (psi[i * K + y[b0 + i]] - sb.m[i]) - sb.l[i];
            if (want_grad) {
              for (std::size_t i = 0; i < m * K; ++i) c[i] = -sb.p[i];
              for (std::size_t i = 0; i < m; ++i) c[i * K + y[b0 + i]] += 1.0;
              for (std::size_t k = 0; k < K; ++k)
                kernels::weighted_row_sum(ds.row(b0), m, stride, c + k, K,
                                          st.g.data() + k * stride);
            }
            if (!want_hess) continue;
            std::size_t pair = 0;
            for (std::size_t k = 0; k < K; ++k)
              for (std::size_t l = k + 1; l < K; ++l, ++pair) {
                for (std::size_t i = 0; i < m; ++i) {
                  const double w = std::sqrt(sb.p[i * K + k] * sb.p[i * K + l]);
                  const double* x = ds.row(b0 + i);
                  double* s = q.get() + i * stride;
                  for (std::size_t j = 0; j < d; ++j) s[j] = w * x[j];
                }
                blas::syrk_accumulate(q.get(), m, d, stride, st.pairs.data() + pair * d * d);
              }
          }
          return st;
        },
        [](NewtonStats acc, NewtonStats s) {
          if (acc.g.empty() && acc.pairs.empty()) return s;
          acc.f += s.f;
          for (std::size_t j = 0; j < acc.g.size(); ++j) acc.g[j] += s.g[j];
          for (std::size_t j = 0; j < acc.pairs.size(); ++j) acc.pairs[j] += s.pairs[j];
          return acc;
        });
  };
  auto objective = [&](const Vec& th) {
    lay.pad(th.data(), tp.get());
    return log_lik(tp.get()) + prior.log_density(th.data(), p);
  };
  auto cholesky = [&](const Mat& m) {
    Eigen::LLT<Mat> llt(m);
    if (llt.info() != Eigen::Success)
      throw ConfigError(
          "softmax MAP: the negative Hessian plus the prior's precision is not positive "
          "definite in double precision (--prior-sd " +
          std::to_string(prior.sd) + " is too wide for these data)");
    return llt;
  };

  MapResult r;
  double f = objective(theta);
  int it = 0;
  for (; it < max_iter; ++it) {
    lay.pad(theta.data(), tp.get());
    const NewtonStats st = stats(true, true);
    Vec g(P);
    lay.unpad(st.g.data(), g.data());
    prior.add_gradient(theta.data(), p, g.data());
    Mat neg_hess = assemble_neg_hessian(st.pairs, K, d);
    for (Eigen::Index j = 0; j < P; ++j) neg_hess(j, j) += prior.map_curvature(theta[j]);
    const Vec step = cholesky(neg_hess).solve(g);
    const double decrement = g.dot(step);  // Newton decrement squared
    if (!(decrement > 2.0 * tol)) {
      // Converged; the last (tiny) step is taken unless it lowers the objective by more than
      // rounding, as in LogisticModel::newton (it shrinks |∇| by orders of magnitude).
      const double f_last = objective(theta + step);
      if (f_last >= f - 1e-12 * (1.0 + std::fabs(f))) {
        theta += step;
        f = f_last;
      }
      break;
    }
    double t = 1.0;
    double f_new = objective(theta + step);
    while (!(f_new >= f + 0.25 * t * decrement) && t > 1e-12) {
      t *= 0.5;
      f_new = objective(theta + t * step);
    }
    if (t <= 1e-12) break;
    theta += t * step;
    f = f_new;
  }
  // Laplace covariance at the final θ, with the prior's precision (a proper stand-in for the
  // Laplace prior's curvature, Prior::precision()).
  lay.pad(theta.data(), tp.get());
  Mat h = assemble_neg_hessian(stats(false, true).pairs, K, d);
  h.diagonal().array() += prior.precision();
  r.theta = theta;
  r.covariance = cholesky(h).solve(Mat::Identity(P, P));
  r.log_post = f;
  r.iterations = it;
  r.seconds = 0.0;
  return r;
}

// ----------------------------------------------------------------------------------------------
SoftmaxBound SoftmaxBound::make(const SoftmaxModel& model, const RunConfig& cfg,
                                const MapResult& map) {
  return cfg.bound == BoundTuning::map ? map_tuned(model, map.theta, bound_slack_of(cfg))
                                       : untuned(model, map.theta, bound_slack_of(cfg));
}

SoftmaxBound SoftmaxBound::untuned(const SoftmaxModel& model, const Vec& anchor, double slack) {
  return SoftmaxBound(model, nullptr, anchor, slack);
}

SoftmaxBound SoftmaxBound::map_tuned(const SoftmaxModel& model, const Vec& w_map, double slack) {
  return SoftmaxBound(model, &w_map, w_map, slack);
}

SoftmaxBound::SoftmaxBound(const SoftmaxModel& model, const Vec* tangent, const Vec& anchor,
                           double slack)
    : data_(model.data_ptr()), labels_(model.labels()), slack_(slack), shift_(slack) {
  const auto t0 = Clock::now();
  if (!(slack >= 0.0) || !std::isfinite(slack))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + std::to_string(slack));
  const Dataset& ds = *data_;
  const ParamLayout lay = model.layout();
  if (static_cast<std::size_t>(anchor.size()) != lay.dim() ||
      (tangent != nullptr && static_cast<std::size_t>(tangent->size()) != lay.dim()))
    throw ConfigError("softmax bound: anchor or tangent point has the wrong dimension");
  k_ = lay.k;
  d_ = lay.d;
  stride_ = lay.stride;
  const std::size_t K = k_, d = d_, stride = stride_, R = 2 * K + 2, mb = block_data(K);
  const double inv_k = 1.0 / static_cast<double>(K), log_k = std::log(static_cast<double>(K));
  anchor_pad_ = aligned_zeros(lay.padded());
  lay.pad(anchor.data(), anchor_pad_.get());
  AlignedBuffer tangent_pad;
  if (tangent != nullptr) {
    tangent_pad = aligned_zeros(lay.padded());
    lay.pad(tangent->data(), tangent_pad.get());
  }
  rec_.resize(ds.n() * R);
  const auto& y = *labels_;

  // One pass: the per-datum tangent records, f0 = Σ log B_n(W_a), G0 = Σ (e_y − g0 − Hv) x_nᵀ
  // with v = W_a x_n − ψ0_n, and S = Σ x xᵀ (one SYRK straight on the rows).
  struct Stats {
    double f = 0.0;
    std::vector<double> g, s;
  };
  Stats total = deterministic_reduce(
      ds.n(), stats_grain(ds.n(), d * d), Stats{},
      [&](std::size_t lo, std::size_t hi) {
        Stats st;
        st.g.assign(K * stride, 0.0);
        st.s.assign(d * d, 0.0);
        SoftmaxBlock sb;
        alignas(64) double psi0[kBlockVals], a[kBlockVals], c[kBlockVals];
        for (std::size_t b0 = lo; b0 < hi; b0 += mb) {
          const std::size_t m = std::min(mb, hi - b0);
          if (tangent != nullptr) {
            kernels::dots_packed_multi(ds.row(b0), m, stride, tangent_pad.get(), K, stride, psi0);
            sb.compute(psi0, m, K);
          }
          for (std::size_t i = 0; i < m; ++i) {
            double* r = rec_.data() + (b0 + i) * R;
            for (std::size_t k = 0; k < K; ++k) {
              r[k] = tangent != nullptr ? psi0[i * K + k] : 0.0;
              r[K + k] = tangent != nullptr ? sb.p[i * K + k] : inv_k;
            }
            r[2 * K] = tangent != nullptr ? sb.m[i] : 0.0;
            r[2 * K + 1] = tangent != nullptr ? sb.l[i] : log_k;
          }
          kernels::dots_packed_multi(ds.row(b0), m, stride, anchor_pad_.get(), K, stride, a);
          for (std::size_t i = 0; i < m; ++i) {
            const double* r = rec_.data() + (b0 + i) * R;
            const double* x = a + i * K;
            const BoundTerms t = bound_terms(x, r, K, inv_k);
            const std::uint32_t cls = y[b0 + i];
            st.f += (x[cls] - r[2 * K]) - r[2 * K + 1] - t.gv - t.q - slack;
            // ∂ log B_n/∂ψ = e_y − g0 − Hv.
            for (std::size_t k = 0; k < K; ++k)
              c[i * K + k] = -r[K + k] - 0.5 * ((x[k] - r[k]) - t.mean);
            c[i * K + cls] += 1.0;
          }
          for (std::size_t k = 0; k < K; ++k)
            kernels::weighted_row_sum(ds.row(b0), m, stride, c + k, K, st.g.data() + k * stride);
          blas::syrk_accumulate(ds.row(b0), m, d, stride, st.s.data());
        }
        return st;
      },
      [](Stats acc, Stats s) {
        if (acc.g.empty()) return s;
        acc.f += s.f;
        for (std::size_t j = 0; j < acc.g.size(); ++j) acc.g[j] += s.g[j];
        for (std::size_t j = 0; j < acc.s.size(); ++j) acc.s[j] += s.s[j];
        return acc;
      });
  f0_ = total.f;
  // G0 centered over the classes: Σ_k (e_y − g0 − Hv)_k = 0 for every datum, so this only removes
  // rounding, and makes the collapsed sum exactly invariant along the likelihood's null direction.
  g0_pad_ = aligned_zeros(K * stride);
  for (std::size_t j = 0; j < d; ++j) {
    double mean = 0.0;
    for (std::size_t k = 0; k < K; ++k) mean += total.g[k * stride + j];
    mean *= inv_k;
    for (std::size_t k = 0; k < K; ++k) g0_pad_[k * stride + j] = total.g[k * stride + j] - mean;
  }
  const auto D = static_cast<Eigen::Index>(d);
  s_ = Eigen::Map<const Mat>(total.s.data(), D, D).selfadjointView<Eigen::Upper>();
  s_pad_ = aligned_zeros(d * stride);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j)
      s_pad_[i * stride + j] = s_(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
  seconds_ = seconds_since(t0);
}

double SoftmaxBound::log_bound_sum(const double* theta, double* scratch,
                                   double* grad) const noexcept {
  const std::size_t K = k_, d = d_, stride = stride_;
  double* mean = scratch;      // v̄, the mean row of V = W − W_a
  double* v = mean + stride;   // CV: the rows of V minus v̄ (K blocks)
  double* u = v + K * stride;  // CV S (row k: S ṽ_k, S symmetric)
  const double inv_k = 1.0 / static_cast<double>(K);
  std::fill(mean, mean + stride, 0.0);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < stride; ++j)
      mean[j] += theta[k * stride + j] - anchor_pad_[k * stride + j];
  for (std::size_t j = 0; j < stride; ++j) mean[j] *= inv_k;
  // With H = ½C (C = I − 𝟙𝟙ᵀ/K, C² = C): tr(H V S Vᵀ) = ½ Σ_k ṽ_kᵀ S ṽ_k over the centered rows
  // ṽ_k, a sum of non-negative terms (S is PSD): no cancellation. G0 is stored centered over
  // the classes (CG0 = G0), so ⟨G0, V⟩ = ⟨G0, CV⟩, and the whole sum is invariant, like the
  // likelihood, to adding one vector to every row of W.
  double quad = 0.0, lin = 0.0;
  for (std::size_t k = 0; k < K; ++k) {
    double* vk = v + k * stride;
    double* uk = u + k * stride;
    for (std::size_t j = 0; j < stride; ++j)
      vk[j] = (theta[k * stride + j] - anchor_pad_[k * stride + j]) - mean[j];
    kernels::dots_packed(s_pad_.get(), d, stride, vk, uk);
    std::fill(uk + d, uk + stride, 0.0);
    quad += kernels::dot(vk, uk, stride);
    lin += kernels::dot(g0_pad_.get() + k * stride, vk, stride);
  }
  if (grad != nullptr) {
    // ∇ = G0 − H V S = G0 − ½ CV S.
    for (std::size_t k = 0; k < K; ++k) {
      const double* uk = u + k * stride;
      const double* gk = g0_pad_.get() + k * stride;
      double* out = grad + k * stride;
      for (std::size_t j = 0; j < d; ++j) out[j] = gk[j] - 0.5 * uk[j];
      std::fill(out + d, out + stride, 0.0);
    }
  }
  return f0_ + lin - 0.25 * quad;
}

template <bool kGrad>
BoundCheck SoftmaxBound::compute(const Index* idx, const double* preds, std::size_t k,
                                 double* delta, double* dpsi) const noexcept {
  const std::size_t K = k_, R = 2 * K + 2, mb = block_data(K);
  const double inv_k = 1.0 / static_cast<double>(K);
  BoundCheck check;
  SoftmaxBlock sb;
  for (std::size_t b0 = 0; b0 < k; b0 += mb) {
    const std::size_t m = std::min(mb, k - b0);
    const double* psi = preds + b0 * K;
    sb.compute(psi, m, K);
    for (std::size_t i = 0; i < m; ++i) {
      const double* x = psi + i * K;
      const double* r = rec_.data() + std::size_t{idx[b0 + i]} * R;
      const double* g = r + K;
      const BoundTerms t = bound_terms(x, r, K, inv_k);
      // Δ = [lse(ψ0) + g0ᵀv + ½vᵀHv] − lse(ψ) + ε, with lse = m + l on both sides.
      const double dl = (r[2 * K] - sb.m[i]) + (r[2 * K + 1] - sb.l[i]) + t.gv + t.q + shift_;
      if (dl > 0.0) {
        delta[b0 + i] = dl;
        if constexpr (kGrad) {
          // ∂Δ/∂ψ = g0 + Hv − softmax(ψ), (Hv)_c = ½(v_c − mean v).
          double* out = dpsi + (b0 + i) * K;
          for (std::size_t c = 0; c < K; ++c)
            out[c] = g[c] + 0.5 * ((x[c] - r[c]) - t.mean) - sb.p[i * K + c];
        }
        continue;
      }
      // Off the hot path: Δ ≤ 0 (or NaN) is clamped, and a negative one classified (BoundCheck;
      // the tolerance is documented at SoftmaxBound::deltas).
      if (dl < 0.0 || std::isnan(dl)) {
        constexpr double kUlps = 64.0 * std::numeric_limits<double>::epsilon();
        double gav = 0.0, vv = 0.0;
        for (std::size_t c = 0; c < K; ++c) {
          const double v = x[c] - r[c];
          gav += g[c] * std::fabs(v);
          vv += v * v;
        }
        const double tol =
            1e-9 + kUlps * (std::fabs(r[2 * K] - sb.m[i]) + r[2 * K + 1] + sb.l[i] + gav +
                            0.25 * (vv + static_cast<double>(K) * t.mean * t.mean));
        if (dl >= -tol) {
          ++check.clamped;
        } else {
          ++check.violations;  // also NaN
        }
      }
      delta[b0 + i] = 0.0;
      if constexpr (kGrad) std::fill(dpsi + (b0 + i) * K, dpsi + (b0 + i + 1) * K, 0.0);
    }
  }
  return check;
}

BoundCheck SoftmaxBound::deltas(const Index* idx, const double* preds, std::size_t k,
                                double* delta) const noexcept {
  return compute<false>(idx, preds, k, delta, nullptr);
}

BoundCheck SoftmaxBound::delta_grads(const Index* idx, const double* preds, std::size_t k,
                                     double* delta, double* dpsi) const noexcept {
  return compute<true>(idx, preds, k, delta, dpsi);
}

void SoftmaxBound::raise_for_testing(double excess) noexcept {
  shift_ -= excess;
  f0_ += excess * static_cast<double>(data_->n());
}

double SoftmaxBound::log_bound(Index n, const double* pred) const noexcept {
  const std::size_t K = k_;
  const double* r = rec_.data() + std::size_t{n} * (2 * K + 2);
  const BoundTerms t = bound_terms(pred, r, K, 1.0 / static_cast<double>(K));
  return (pred[(*labels_)[n]] - r[2 * K]) - r[2 * K + 1] - t.gv - t.q - shift_;
}

double SoftmaxBound::log_lik(Index n, const double* pred) const noexcept {
  SoftmaxBlock sb;
  sb.compute(pred, 1, k_);
  return (pred[(*labels_)[n]] - sb.m[0]) - sb.l[0];
}

}  // namespace flymc
