// Softmax classification: the model (likelihood, gradient, MAP by Newton's method).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "flymc/core/blas.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/models/softmax.hpp"
#include "lik_grad.hpp"
#include "model_checks.hpp"
#include "newton.hpp"
#include "softmax_detail.hpp"

namespace flymc {

using namespace softmax_detail;

// ----------------------------------------------------------------------------------------------
SoftmaxModel::SoftmaxModel(std::shared_ptr<const Dataset> data, Prior prior)
    : data_(std::move(data)), prior_(std::move(prior)) {
  if (!data_ || data_->n() == 0 || data_->d() == 0)
    throw DataError("softmax classification needs at least one row and one feature");
  // 1/σ² must be a finite, non-zero double (as RunConfig::validate checks).
  if (!(prior.sd >= 1e-150 && prior.sd <= 1e150))
    throw ConfigError("--prior-sd must be in [1e-150, 1e150], got " + std::to_string(prior.sd));
  const Dataset& ds = *data_;
  detail::refuse_shard(ds, "softmax classification");
  auto labels = std::make_shared<std::vector<std::uint32_t>>(ds.n());
  std::uint32_t top = 0;
  for (std::size_t i = 0; i < ds.n(); ++i) {
    const double v = ds.y()[i];
    if (!(v >= 0.0 && v < static_cast<double>(kMaxClasses) && v == std::floor(v)))
      throw DataError(ds.source() + ": row " + std::to_string(i + 1) +
                      ": field 1 (label): softmax classification needs class indices 0..K-1 "
                      "(integers, at most " +
                      std::to_string(kMaxClasses) + " classes), got " + number_text(v));
    (*labels)[i] = static_cast<std::uint32_t>(v);
    top = std::max(top, (*labels)[i]);
  }
  if (top == 0)
    throw DataError(ds.source() +
                    ": field 1 (label): every label is 0; softmax classification needs at "
                    "least two classes (labels 0..K-1 with K >= 2)");
  k_ = std::size_t{top} + 1;
  labels_ = std::move(labels);
  if (prior_.any_flat())
    throw ConfigError(
        "softmax classification: its likelihood stays the same when one vector is added to "
        "every class's coefficients, so a flat prior leaves the posterior improper (give a "
        "proper prior, e.g. --prior 'normal(0, 10)')");
  if (prior_.terms.size() == ds.d()) prior_ = prior_.repeated(k_);  // one block per class
  if (!prior_.terms.empty() && prior_.terms.size() != dim())
    throw ConfigError("softmax classification: the prior has " +
                      std::to_string(prior_.terms.size()) + " coordinates, not " +
                      std::to_string(dim()));
  detail::check_features(ds, "softmax classification");
  blas::use_single_thread();
}

std::vector<std::string> SoftmaxModel::param_names() const {
  std::vector<std::string> names;
  names.reserve(dim());
  for (std::size_t k = 1; k <= k_; ++k)
    for (std::size_t j = 1; j <= data_->d(); ++j)
      names.push_back("W." + std::to_string(k) + "." +
                      (data_->has_intercept() ? j == 1 ? "intercept" : std::to_string(j - 1)
                                              : std::to_string(j)));
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
          ds.dots_multi(b0, b0 + m, theta, K, stride, psi);
          sb.compute(psi, m, K);
          // log L_n = (ψ_y − m) − l: exact 0 − l when y is the argmax.
          for (std::size_t i = 0; i < m; ++i) f += (psi[i * K + y[b0 + i]] - sb.m[i]) - sb.l[i];
        }
        return f;
      },
      [](double a, double b) { return a + b; });
}

double SoftmaxModel::log_lik_grad(const double* theta, double* grad) const {
  const Dataset& ds = *data_;
  const std::size_t K = k_, stride = ds.stride(), mb = block_data(K);
  const auto& y = *labels_;
  return detail::reduce_lik_grad(
      ds,
      [&](std::size_t lo, std::size_t hi) {
        detail::LikGrad part;
        part.g.assign(K * stride, 0.0);
        SoftmaxBlock sb;
        alignas(64) double psi[kBlockVals];
        // One pass per block: the rows are read from memory by the dot products and again, from
        // L2 (≤ 256 rows), by the K weighted row sums.
        for (std::size_t b0 = lo; b0 < hi; b0 += mb) {
          const std::size_t m = std::min(mb, hi - b0);
          ds.dots_multi(b0, b0 + m, theta, K, stride, psi);
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
            ds.weighted_row_sum(b0, b0 + m, sb.p + k, K, part.g.data() + k * stride);
        }
        return part;
      },
      grad);
}

MapResult SoftmaxModel::find_map(double tol, int max_iter) const {
  // At W = 0 every class has probability 1/K: a well-conditioned start for Newton.
  return detail::two_stage_map(dim(), prior_, [&](const Prior& prior, const Vec& start) {
    return newton(prior, start, tol, max_iter);
  });
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
            const RowsF64 rows = ds.rows(b0, b0 + m);
            kernels::dots_packed_multi(rows.data(), m, stride, tp.get(), K, stride, psi);
            sb.compute(psi, m, K);
            for (std::size_t i = 0; i < m; ++i)
              st.f += (psi[i * K + y[b0 + i]] - sb.m[i]) - sb.l[i];
            if (want_grad) {
              for (std::size_t i = 0; i < m * K; ++i) c[i] = -sb.p[i];
              for (std::size_t i = 0; i < m; ++i) c[i * K + y[b0 + i]] += 1.0;
              for (std::size_t k = 0; k < K; ++k)
                kernels::weighted_row_sum(rows.data(), m, stride, c + k, K,
                                          st.g.data() + k * stride);
            }
            if (!want_hess) continue;
            std::size_t pair = 0;
            for (std::size_t k = 0; k < K; ++k)
              for (std::size_t l = k + 1; l < K; ++l, ++pair) {
                for (std::size_t i = 0; i < m; ++i) {
                  const double w = std::sqrt(sb.p[i * K + k] * sb.p[i * K + l]);
                  const double* x = rows.row(i);
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
          "definite in double precision (the prior is too wide for these data)");
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
    for (Eigen::Index j = 0; j < P; ++j)
      neg_hess(j, j) += prior.map_curvature(static_cast<std::size_t>(j), theta[j]);
    const Vec step = cholesky(neg_hess).solve(g);
    if (detail::newton_move(objective, theta, f, g, step, tol) != detail::NewtonMove::stepped)
      break;
  }
  // Laplace covariance at the final θ, with the prior's precision (a proper stand-in for the
  // Laplace prior's curvature, Prior::precision()).
  lay.pad(theta.data(), tp.get());
  Mat h = assemble_neg_hessian(stats(false, true).pairs, K, d);
  add_prior_precision(prior, h);
  r.theta = theta;
  r.covariance = cholesky(h).solve(Mat::Identity(P, P));
  r.log_post = f;
  r.iterations = it;
  r.seconds = 0.0;
  return r;
}

// ----------------------------------------------------------------------------------------------

}  // namespace flymc
