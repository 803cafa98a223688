#pragma once
// Private: what softmax_model.cpp and softmax_bound.cpp share: blockwise softmax/lse in log space,
// Böhning's per-datum bound terms, the grain of the deterministic reductions, the Newton Hessian
// from the pair sums, and the class-centered gradient.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "flymc/kernels/kernels.hpp"
#include "flymc/models/softmax.hpp"

namespace flymc::softmax_detail {
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
inline std::size_t stats_grain(std::size_t n, std::size_t partial_doubles) {
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
inline Mat assemble_neg_hessian(const std::vector<double>& pairs, std::size_t K, std::size_t d) {
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

/// The K class blocks of g (K·stride entries) minus their mean over the classes, per feature:
/// both bound kinds' collapsed gradient G0, whose class sum is zero up to rounding.
inline AlignedBuffer centered_over_classes(const std::vector<double>& g, std::size_t K,
                                           std::size_t d, std::size_t stride) {
  const double inv_k = 1.0 / static_cast<double>(K);
  AlignedBuffer out = aligned_zeros(K * stride);
  for (std::size_t j = 0; j < d; ++j) {
    double mean = 0.0;
    for (std::size_t k = 0; k < K; ++k) mean += g[k * stride + j];
    mean *= inv_k;
    for (std::size_t k = 0; k < K; ++k) out[k * stride + j] = g[k * stride + j] - mean;
  }
  return out;
}

}  // namespace flymc::softmax_detail
