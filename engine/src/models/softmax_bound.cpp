// Softmax classification: the quadratic bounds on lse (Böhning, Jebara–Choromanska) and their
// collapsed statistics.
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
#include "model_checks.hpp"
#include "softmax_detail.hpp"

namespace flymc {

using namespace softmax_detail;

// ----------------------------------------------------------------------------------------------
namespace lse_bound {
namespace {
/// tanh(r/2)/(2r), ¼ at r = 0: the Jaakkola–Jordan curvature coefficient (twice λ(r) of
/// docs/math.md §2.1). Below |r| = 1e-3 by its series ¼ − r²/48 + r⁴/480 (error O(r⁶) < 1e-19); for
/// huge |r| it tends to 1/(2|r|), and to 0 at infinity.
double jc_coefficient(double r) noexcept {
  const double a = std::fabs(r);
  if (a < 1e-3) {
    const double r2 = r * r;
    return 0.25 - r2 / 48.0 + r2 * r2 / 480.0;
  }
  if (!(a <= std::numeric_limits<double>::max())) return 0.0;
  return std::tanh(0.5 * a) / (2.0 * a);
}
}  // namespace

void jebara_choromanska(const double* psi0, const std::uint16_t* order, std::size_t K, double* c,
                        double* s) noexcept {
  double mx = psi0[0];
  for (std::size_t k = 1; k < K; ++k) mx = std::max(mx, psi0[k]);
  // lz = log z_{j−1} relative to e^{max ψ0}; r_j = log α_{o_j} − lz.
  double lz = psi0[order[0]] - mx;
  for (std::size_t j = 1; j < K; ++j) {
    const double a = psi0[order[j]] - mx;
    const double r = a - lz;
    c[j - 1] = jc_coefficient(r);
    // s_j = σ(r_j) and log z_j = lz + softplus(r_j), each in the form that cannot overflow.
    if (r >= 0.0) {
      const double e = std::exp(-r);
      s[j - 1] = 1.0 / (1.0 + e);
      lz = a + std::log1p(e);
    } else {
      const double e = std::exp(r);
      s[j - 1] = e / (1.0 + e);
      lz += std::log1p(e);
    }
  }
}

void bohning(std::size_t K, double* c, double* s) noexcept {
  for (std::size_t j = 1; j < K; ++j) {
    const auto jd = static_cast<double>(j);
    c[j - 1] = jd / (2.0 * (jd + 1.0));
    s[j - 1] = 1.0 / (jd + 1.0);
  }
}

double quad(const double* v, const std::uint16_t* order, const double* c, const double* s,
            std::size_t K, double* sv) noexcept {
  double m = v[order[0]], q = 0.0;
  if (sv == nullptr) {
    for (std::size_t j = 1; j < K; ++j) {
      const double t = v[order[j]] - m;
      q += c[j - 1] * (t * t);
      m += s[j - 1] * t;
    }
    return 0.5 * q;
  }
  for (std::size_t j = 1; j < K; ++j) {
    const double t = v[order[j]] - m;
    q += c[j - 1] * (t * t);
    m += s[j - 1] * t;
    sv[order[j]] = t;  // kept for the reverse pass (each class occurs once)
  }
  // Reverse pass: a = ∂q/∂m_j through the later terms; t_j feeds c_j t_j into v_{o_j} and takes
  // it (plus s_j·a) from m_{j−1}, which also passes a on directly.
  double a = 0.0;
  for (std::size_t j = K - 1; j >= 1; --j) {
    const double ct = c[j - 1] * sv[order[j]];
    sv[order[j]] = ct + a * s[j - 1];
    a = a * (1.0 - s[j - 1]) - ct;
  }
  sv[order[0]] = a;
  return 0.5 * q;
}

namespace {
/// w_kl = −S[k,l] for the pairs k < l (lexicographic, K(K−1)/2 of them), O(K²). For the
/// classes k = o_p, l = o_q at positions p < q, only l_q and the later l_j have both entries:
///   S[k,l] = −c_q μ_{q−1}[k] + μ_q[k] μ_q[l] T_q,  T_q = Σ_{j>q} c_j Π_{q<i<j}(1 − s_i)²,
/// since μ_{j−1}[k]μ_{j−1}[l] = μ_q[k]μ_q[l]·Π_{q<i<j}(1 − s_i)², and T_q = c_{q+1} +
/// (1 − s_{q+1})² T_{q+1}. `mu` and `t` are K doubles of scratch.
void pair_weights(const std::uint16_t* order, const double* c, const double* s, std::size_t K,
                  double* w, double* mu, double* t) noexcept {
  t[K - 1] = 0.0;
  for (std::size_t q = K - 1; q >= 2; --q) {
    const double u = 1.0 - s[q - 1];
    t[q - 1] = c[q - 1] + u * u * t[q];
  }
  std::fill(mu, mu + K, 0.0);
  mu[order[0]] = 1.0;  // μ_0, indexed by class
  for (std::size_t q = 1; q < K; ++q) {
    const std::size_t l = order[q];
    const double sq = s[q - 1], cq = c[q - 1], u = 1.0 - sq;
    for (std::size_t p = 0; p < q; ++p) {
      const std::size_t k = order[p];
      const double wkl = cq * mu[k] - (mu[k] * u) * sq * t[q];
      const std::size_t a = std::min(k, l), b = std::max(k, l);
      w[a * K - a * (a + 1) / 2 + (b - a - 1)] = wkl;
      mu[k] *= u;
    }
    mu[l] = sq;
  }
}
}  // namespace

void curvature(const std::uint16_t* order, const double* c, const double* s, std::size_t K,
               double* S) noexcept {
  std::vector<double> w(K * (K - 1) / 2), mu(K), t(K);
  pair_weights(order, c, s, K, w.data(), mu.data(), t.data());
  std::fill(S, S + K * K, 0.0);
  std::size_t pair = 0;
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t l = k + 1; l < K; ++l, ++pair) {
      S[k * K + l] = S[l * K + k] = -w[pair];
      S[k * K + k] += w[pair];
      S[l * K + l] += w[pair];
    }
}

double trace_product(const std::uint16_t* order, const double* c, const double* s, std::size_t K,
                     const double* M) noexcept {
  // l_jᵀMl_j = M[o,o] − 2(Mμ)_o + μᵀMμ with o = o_j, μ = μ_{j−1}, both kept up to date in O(K)
  // per step: μ ← (1 − s)μ + s e_o.
  std::vector<double> mmu(M + std::size_t{order[0]} * K, M + (std::size_t{order[0]} + 1) * K);
  double mum = M[std::size_t{order[0]} * K + order[0]], tr = 0.0;
  for (std::size_t j = 1; j < K; ++j) {
    const std::size_t o = order[j];
    const double sj = s[j - 1], u = 1.0 - sj, moo = M[o * K + o];
    tr += c[j - 1] * (moo - 2.0 * mmu[o] + mum);
    mum = u * u * mum + 2.0 * sj * u * mmu[o] + sj * sj * moo;
    for (std::size_t k = 0; k < K; ++k) mmu[k] = u * mmu[k] + sj * M[o * K + k];
  }
  return tr;
}

}  // namespace lse_bound

SoftmaxBound SoftmaxBound::make(const SoftmaxModel& model, const RunConfig& cfg,
                                const MapResult& map) {
  if (cfg.softmax_bound == SoftmaxBoundKind::tight)
    return tight(model, map, cfg.bound, bound_slack_of(cfg));
  return cfg.bound == BoundTuning::map ? map_tuned(model, map.theta, bound_slack_of(cfg))
                                       : untuned(model, map.theta, bound_slack_of(cfg));
}

SoftmaxBound SoftmaxBound::tight(const SoftmaxModel& model, const MapResult& map,
                                 BoundTuning tuning, double slack) {
  return SoftmaxBound(model, map, tuning, slack);
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
          const RowsF64 rows = ds.rows(b0, b0 + m);
          if (tangent != nullptr) {
            kernels::dots_packed_multi(rows.data(), m, stride, tangent_pad.get(), K, stride, psi0);
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
          kernels::dots_packed_multi(rows.data(), m, stride, anchor_pad_.get(), K, stride, a);
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
            kernels::weighted_row_sum(rows.data(), m, stride, c + k, K, st.g.data() + k * stride);
          blas::syrk_accumulate(rows.data(), m, d, stride, st.s.data());
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
  g0_pad_ = centered_over_classes(total.g, K, d, stride);
  const auto D = static_cast<Eigen::Index>(d);
  s_ = Eigen::Map<const Mat>(total.s.data(), D, D).selfadjointView<Eigen::Upper>();
  s_pad_ = aligned_zeros(d * stride);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j)
      s_pad_[i * stride + j] = s_(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
  seconds_ = seconds_between(t0, Clock::now());
}

namespace {
/// The tight bound's set-up sums over a range of data.
struct TightSums {
  double f = 0.0;            // Σ log B_n at the anchor
  double eq = 0.0;           // ½ Σ tr(S_n M_n) of the chosen curvatures
  double eqb = 0.0;          // the same with Böhning's curvature everywhere
  std::size_t jc = 0;        // data whose chosen curvature is a Jebara–Choromanska one
  std::vector<double> g, a;  // G0 (K rows of stride); the pair matrices (column-major D×D each)
  void add(const TightSums& s) {
    f += s.f;
    eq += s.eq;
    eqb += s.eqb;
    jc += s.jc;
    for (std::size_t j = 0; j < g.size(); ++j) g[j] += s.g[j];
    for (std::size_t j = 0; j < a.size(); ++j) a[j] += s.a[j];
  }
};

/// One thread's scratch for the tight set-up over blocks of at most `mb` data.
struct TightScratch {
  TightScratch(std::size_t K, std::size_t d, std::size_t stride, std::size_t mb, std::size_t np)
      : ybuf(d * mb),
        mom(mb * K * K),
        w(mb * np),
        v(K),
        sv(K),
        mu(K),
        tq(K),
        cand_c(K),
        cand_s(K),
        bc(K),
        bs(K),
        perm(K),
        border(K),
        qpos(aligned_zeros(mb * stride)),
        qneg(aligned_zeros(mb * stride)) {}
  SoftmaxBlock sb;
  alignas(64) double psi[kBlockVals], coef[kBlockVals];
  std::vector<double> ybuf, mom, w, v, sv, mu, tq, cand_c, cand_s, bc, bs;
  std::vector<std::uint16_t> perm, border;
  AlignedBuffer qpos, qneg;
};

struct CurvatureChoice {
  double crit = 0.0, crit_bohning = 0.0;  // ½·tr(S M) is half of these
  bool jc = false;
};

/// Picks the curvature of one datum with the smallest tr(S M) (M its second moments about ψ0):
/// Böhning's H (kept on ties), then Jebara–Choromanska orders, all of them for small K, else the
/// one with the dominant class first. Writes the order to `ord` and c, s into the record `r`.
CurvatureChoice choose_curvature(double* r, std::uint16_t* ord, const double* M, std::size_t K,
                                 TightScratch& s) {
  for (std::size_t k = 0; k < K; ++k) s.border[k] = static_cast<std::uint16_t>(k);
  lse_bound::bohning(K, s.bc.data(), s.bs.data());
  CurvatureChoice out;
  out.crit_bohning = lse_bound::trace_product(s.border.data(), s.bc.data(), s.bs.data(), K, M);
  out.crit = out.crit_bohning;
  auto consider = [&] {
    lse_bound::jebara_choromanska(r, s.perm.data(), K, s.cand_c.data(), s.cand_s.data());
    const double crit =
        lse_bound::trace_product(s.perm.data(), s.cand_c.data(), s.cand_s.data(), K, M);
    if (crit < out.crit) {
      out.crit = crit;
      out.jc = true;
      s.border = s.perm;
      s.bc = s.cand_c;
      s.bs = s.cand_s;
    }
  };
  for (std::size_t k = 0; k < K; ++k) s.perm[k] = static_cast<std::uint16_t>(k);
  if (K <= lse_bound::kMaxExhaustiveOrder) {
    do consider();
    while (std::next_permutation(s.perm.begin(), s.perm.end()));
  } else {
    // Dominant class first: decreasing ψ0, ties by class index.
    std::stable_sort(s.perm.begin(), s.perm.end(),
                     [&](std::uint16_t a, std::uint16_t b) { return r[a] > r[b]; });
    consider();
  }
  std::copy(s.border.begin(), s.border.end(), ord);
  std::copy(s.bc.begin(), s.bc.begin() + static_cast<std::ptrdiff_t>(K - 1), r + 2 * K + 2);
  std::copy(s.bs.begin(), s.bs.begin() + static_cast<std::ptrdiff_t>(K - 1), r + 3 * K + 1);
  return out;
}

/// The pair matrices A_kl += Σ w_{n,kl} x_n x_nᵀ over one block: rows scaled by √|w| and split
/// by the sign of w, A += Q₊ᵀQ₊ − Q₋ᵀQ₋ (one SYRK each).
void accumulate_pair_matrices(const double* rows, std::size_t m, std::size_t npairs, std::size_t d,
                              std::size_t stride, TightScratch& s, double* a_all) {
  for (std::size_t pair = 0; pair < npairs; ++pair) {
    std::size_t np = 0, nn = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const double wi = s.w[i * npairs + pair];
      if (wi == 0.0) continue;
      double* dst = wi > 0.0 ? s.qpos.get() + (np++) * stride : s.qneg.get() + (nn++) * stride;
      const double sc = std::sqrt(std::fabs(wi));
      const double* x = rows + i * stride;
      for (std::size_t j = 0; j < d; ++j) dst[j] = sc * x[j];
    }
    double* a = a_all + pair * d * d;
    blas::syrk_accumulate(s.qpos.get(), np, d, stride, a, 1.0);
    blas::syrk_accumulate(s.qneg.get(), nn, d, stride, a, -1.0);
  }
}

/// The pair matrices, symmetric, rows padded to stride (SYRK filled the upper triangle of the
/// column-major D×D sums).
AlignedBuffer padded_pair_matrices(const std::vector<double>& a_all, std::size_t npairs,
                                   std::size_t d, std::size_t stride) {
  AlignedBuffer out_all = aligned_zeros(std::max<std::size_t>(1, npairs) * d * stride);
  for (std::size_t pair = 0; pair < npairs; ++pair) {
    const double* a = a_all.data() + pair * d * d;
    double* out = out_all.get() + pair * d * stride;
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = 0; j < d; ++j)
        out[i * stride + j] = i <= j ? a[j * d + i] : a[i * d + j];
  }
  return out_all;
}
}  // namespace

/// The tight bound's set-up pass: per block of data, the second moments M_n of ψ_n under the
/// Laplace approximation, the chosen curvature of every datum (its record), f0 = Σ log B_n(W_a),
/// G0 = Σ ∂ log B_n/∂ψ_n x_nᵀ at W_a, and the pair matrices A_kl = Σ w_{n,kl} x_n x_nᵀ. Blocks of
/// rows are fixed by the data size alone, so every choice is the same for any thread count.
struct SoftmaxBound::TightPass {
  SoftmaxBound& b;
  const Dataset& ds;
  const std::vector<std::uint32_t>& y;
  const double* cov;  // the Laplace covariance, P×P column-major
  std::size_t ldc;    // P
  bool tuned;         // MAP-tuned: ψ0 = ψ̂ (the anchor's predictors); else ψ0 = 0
  std::size_t K, d, stride, R, mb, npairs;

  TightSums range(std::size_t lo, std::size_t hi) const {
    TightSums st;
    st.g.assign(K * stride, 0.0);
    st.a.assign(npairs * d * d, 0.0);
    TightScratch s(K, d, stride, mb, npairs);
    for (std::size_t b0 = lo; b0 < hi; b0 += mb) block(b0, std::min(mb, hi - b0), s, st);
    return st;
  }

  void block(std::size_t b0, std::size_t m, TightScratch& s, TightSums& st) const {
    const RowsF64 rows = ds.rows(b0, b0 + m);
    kernels::dots_packed_multi(rows.data(), m, stride, b.anchor_pad_.get(), K, stride, s.psi);
    if (tuned) s.sb.compute(s.psi, m, K);
    laplace_moments(rows.data(), m, s);
    for (std::size_t i = 0; i < m; ++i) datum(b0 + i, i, s, st);
    for (std::size_t k = 0; k < K; ++k)
      kernels::weighted_row_sum(rows.data(), m, stride, s.coef + k, K, st.g.data() + k * stride);
    accumulate_pair_matrices(rows.data(), m, npairs, d, stride, s, st.a.data());
  }

  /// Cov(ψ_n)[k,l] = x_nᵀ C_kl x_n, C_kl the (k,l) D×D block of the Laplace covariance.
  void laplace_moments(const double* rows, std::size_t m, TightScratch& s) const {
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t l = k; l < K; ++l) {
        blas::gemm_at_xt(cov + (l * d) * ldc + k * d, ldc, rows, m, d, stride, s.ybuf.data());
        for (std::size_t i = 0; i < m; ++i) {
          const double* x = rows + i * stride;
          const double* yi = s.ybuf.data() + i * d;
          double acc = 0.0;
          for (std::size_t j = 0; j < d; ++j) acc += x[j] * yi[j];
          s.mom[i * K * K + k * K + l] = s.mom[i * K * K + l * K + k] = acc;
        }
      }
  }

  /// Datum n (i-th of its block): its record, its curvature, and its terms of the sums.
  void datum(std::size_t n, std::size_t i, TightScratch& s, TightSums& st) const {
    double* r = b.rec_.data() + n * R;
    std::uint16_t* ord = b.order_.data() + n * K;
    const double* xa = s.psi + i * K;
    double* M = s.mom.data() + i * K * K;
    const double inv_k = 1.0 / static_cast<double>(K), log_k = std::log(static_cast<double>(K));
    for (std::size_t k = 0; k < K; ++k) {
      r[k] = tuned ? xa[k] : 0.0;
      r[K + k] = tuned ? s.sb.p[i * K + k] : inv_k;
    }
    r[2 * K] = tuned ? s.sb.m[i] : 0.0;
    r[2 * K + 1] = tuned ? s.sb.l[i] : log_k;
    // Untuned: the second moment about ψ0 = 0 adds ψ̂ψ̂ᵀ.
    if (!tuned)
      for (std::size_t k = 0; k < K; ++k)
        for (std::size_t l = 0; l < K; ++l) M[k * K + l] += xa[k] * xa[l];
    const CurvatureChoice c = choose_curvature(r, ord, M, K, s);
    st.eq += 0.5 * c.crit;
    st.eqb += 0.5 * c.crit_bohning;
    st.jc += c.jc ? 1 : 0;
    // log B_n and ∂ log B_n/∂ψ = e_y − g0 − S_n v at the anchor, v = ψ̂ − ψ0 (0 when MAP-tuned).
    double gv = 0.0;
    for (std::size_t k = 0; k < K; ++k) {
      s.v[k] = xa[k] - r[k];
      gv += r[K + k] * s.v[k];
    }
    const double q = lse_bound::quad(s.v.data(), ord, r + 2 * K + 2, r + 3 * K + 1, K, s.sv.data());
    const std::uint32_t cls = y[n];
    st.f += (xa[cls] - r[2 * K]) - r[2 * K + 1] - gv - q - b.slack_;
    for (std::size_t k = 0; k < K; ++k) s.coef[i * K + k] = -r[K + k] - s.sv[k];
    s.coef[i * K + cls] += 1.0;
    lse_bound::pair_weights(ord, r + 2 * K + 2, r + 3 * K + 1, K, s.w.data() + i * npairs,
                            s.mu.data(), s.tq.data());
  }
};

SoftmaxBound::SoftmaxBound(const SoftmaxModel& model, const MapResult& map, BoundTuning tuning,
                           double slack)
    : data_(model.data_ptr()),
      labels_(model.labels()),
      kind_(SoftmaxBoundKind::tight),
      slack_(slack),
      shift_(slack) {
  const Stopwatch clock;
  if (!(slack >= 0.0) || !std::isfinite(slack))
    throw ConfigError("--bound-slack must be finite and >= 0, got " + std::to_string(slack));
  const Dataset& ds = *data_;
  const ParamLayout lay = model.layout();
  const auto P = static_cast<Eigen::Index>(lay.dim());
  if (map.theta.size() != P || map.covariance.rows() != P || map.covariance.cols() != P)
    throw ConfigError(
        "tight softmax bound: the MAP point or its Laplace covariance has the wrong dimension");
  k_ = lay.k;
  d_ = lay.d;
  stride_ = lay.stride;
  anchor_pad_ = aligned_zeros(lay.padded());
  lay.pad(map.theta.data(), anchor_pad_.get());
  rec_.resize(ds.n() * rec_size());
  order_.resize(ds.n() * k_);
  const std::size_t npairs = k_ * (k_ - 1) / 2;
  const TightPass pass{
      *this, ds,      *labels_,   map.covariance.data(), lay.dim(), tuning == BoundTuning::map, k_,
      d_,    stride_, rec_size(), block_data(k_),        npairs};
  TightSums total = deterministic_reduce(
      ds.n(), stats_grain(ds.n(), std::max<std::size_t>(1, npairs) * d_ * d_), TightSums{},
      [&](std::size_t lo, std::size_t hi) { return pass.range(lo, hi); },
      [](TightSums acc, const TightSums& s) {
        if (acc.g.empty()) return s;
        acc.add(s);
        return acc;
      });
  f0_ = total.f;
  expected_quad_ = total.eq;
  expected_quad_bohning_ = total.eqb;
  jc_count_ = total.jc;
  // G0 centered over the classes: Σ_k (e_y − g0 − S_n v)_k = 0 for every datum (S_n𝟙 = 0), so
  // this only removes rounding, as for the Böhning kind.
  g0_pad_ = centered_over_classes(total.g, k_, d_, stride_);
  s_pad_ = padded_pair_matrices(total.a, npairs, d_, stride_);
  seconds_ = clock.seconds();
}

double SoftmaxBound::log_bound_sum_tight(const double* theta, double* scratch,
                                         double* grad) const noexcept {
  const std::size_t K = k_, d = d_, stride = stride_;
  double* mean = scratch;       // v̄, the mean row of V = W − W_a
  double* v = mean + stride;    // the rows of V minus v̄ (K blocks)
  double* dv = v + K * stride;  // v_k − v_l
  double* u = dv + stride;      // A_kl (v_k − v_l)
  const double inv_k = 1.0 / static_cast<double>(K);
  std::fill(mean, mean + stride, 0.0);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < stride; ++j)
      mean[j] += theta[k * stride + j] - anchor_pad_[k * stride + j];
  for (std::size_t j = 0; j < stride; ++j) mean[j] *= inv_k;
  double lin = 0.0;
  for (std::size_t k = 0; k < K; ++k) {
    double* vk = v + k * stride;
    for (std::size_t j = 0; j < stride; ++j)
      vk[j] = (theta[k * stride + j] - anchor_pad_[k * stride + j]) - mean[j];
    lin += kernels::dot(g0_pad_.get() + k * stride, vk, stride);
  }
  if (grad != nullptr)
    for (std::size_t k = 0; k < K; ++k) {
      std::copy(g0_pad_.get() + k * stride, g0_pad_.get() + k * stride + d, grad + k * stride);
      std::fill(grad + k * stride + d, grad + (k + 1) * stride, 0.0);
    }
  // Σ_{k<l} (v_k − v_l)ᵀ A_kl (v_k − v_l): differences of rows only (the likelihood's null
  // direction drops out); ∂/∂v_k of −½ of it is −A_kl(v_k − v_l), ∂/∂v_l is +A_kl(v_k − v_l).
  double quad = 0.0;
  std::size_t pair = 0;
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t l = k + 1; l < K; ++l, ++pair) {
      for (std::size_t j = 0; j < stride; ++j) dv[j] = v[k * stride + j] - v[l * stride + j];
      kernels::dots_packed(s_pad_.get() + pair * d * stride, d, stride, dv, u);
      std::fill(u + d, u + stride, 0.0);
      quad += kernels::dot(dv, u, stride);
      if (grad != nullptr)
        for (std::size_t j = 0; j < d; ++j) {
          grad[k * stride + j] -= u[j];
          grad[l * stride + j] += u[j];
        }
    }
  return f0_ + lin - 0.5 * quad;
}

double SoftmaxBound::log_bound_sum(const double* theta, double* scratch,
                                   double* grad) const noexcept {
  if (kind_ == SoftmaxBoundKind::tight) return log_bound_sum_tight(theta, scratch, grad);
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

namespace {
/// Off the hot path of both bound kinds: a Δ ≤ 0 (or NaN) is clamped to 0 with its gradient, and
/// a negative one classified as rounding (within tol(), computed only then) or a violation
/// (BoundCheck; the tolerances are documented at SoftmaxBound::deltas).
template <class Tol>
void settle_nonpositive(double dl, Tol&& tol, BoundCheck& check, double& delta, double* dpsi,
                        std::size_t K, Index n, const double* psi) {
  if (dl < 0.0 || std::isnan(dl)) {
    if (dl >= -tol()) {
      ++check.clamped;
    } else {
      check.violated(n, psi[0], dl);  // also NaN
    }
  }
  delta = 0.0;
  if (dpsi != nullptr) std::fill(dpsi, dpsi + K, 0.0);
}
}  // namespace

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
      const auto tol = [&] {
        constexpr double kUlps = 64.0 * std::numeric_limits<double>::epsilon();
        double gav = 0.0, vv = 0.0;
        for (std::size_t c = 0; c < K; ++c) {
          const double v = x[c] - r[c];
          gav += g[c] * std::fabs(v);
          vv += v * v;
        }
        return 1e-9 + kUlps * (std::fabs(r[2 * K] - sb.m[i]) + r[2 * K + 1] + sb.l[i] + gav +
                               0.25 * (vv + static_cast<double>(K) * t.mean * t.mean));
      };
      settle_nonpositive(dl, tol, check, delta[b0 + i], kGrad ? dpsi + (b0 + i) * K : nullptr, K,
                         idx[b0 + i], x);
    }
  }
  return check;
}

template <bool kGrad>
BoundCheck SoftmaxBound::compute_tight(const Index* idx, const double* preds, std::size_t k,
                                       double* delta, double* dpsi) const noexcept {
  const std::size_t K = k_, R = 4 * K, mb = block_data(K);
  BoundCheck check;
  SoftmaxBlock sb;
  alignas(64) double v[SoftmaxModel::kMaxClasses], sv[SoftmaxModel::kMaxClasses];
  for (std::size_t b0 = 0; b0 < k; b0 += mb) {
    const std::size_t m = std::min(mb, k - b0);
    const double* psi = preds + b0 * K;
    sb.compute(psi, m, K);
    for (std::size_t i = 0; i < m; ++i) {
      const double* x = psi + i * K;
      const std::size_t n = idx[b0 + i];
      const double* r = rec_.data() + n * R;
      const double* g = r + K;
      const std::uint16_t* ord = order_.data() + n * K;
      double gv = 0.0;
      for (std::size_t c = 0; c < K; ++c) {
        v[c] = x[c] - r[c];
        gv += g[c] * v[c];
      }
      const double q =
          lse_bound::quad(v, ord, r + 2 * K + 2, r + 3 * K + 1, K, kGrad ? sv : nullptr);
      // Δ = [lse(ψ0) + g0ᵀv + ½vᵀS_n v] − lse(ψ) + ε, with lse = m + l on both sides.
      const double dl = (r[2 * K] - sb.m[i]) + (r[2 * K + 1] - sb.l[i]) + gv + q + shift_;
      if (dl > 0.0) {
        delta[b0 + i] = dl;
        if constexpr (kGrad) {
          // ∂Δ/∂ψ = g0 + S_n v − softmax(ψ).
          double* out = dpsi + (b0 + i) * K;
          for (std::size_t c = 0; c < K; ++c) out[c] = g[c] + sv[c] - sb.p[i * K + c];
        }
        continue;
      }
      const auto tol = [&] {
        constexpr double kUlps = 64.0 * std::numeric_limits<double>::epsilon();
        double gav = 0.0, vmax = 0.0;
        for (std::size_t c = 0; c < K; ++c) {
          gav += g[c] * std::fabs(v[c]);
          vmax = std::max(vmax, std::fabs(v[c]));
        }
        const double kd = static_cast<double>(K);
        return 1e-9 + kUlps * (std::fabs(r[2 * K] - sb.m[i]) + r[2 * K + 1] + sb.l[i] + gav +
                               0.5 * kd * kd * vmax * vmax);
      };
      settle_nonpositive(dl, tol, check, delta[b0 + i], kGrad ? dpsi + (b0 + i) * K : nullptr, K,
                         idx[b0 + i], x);
    }
  }
  return check;
}

BoundCheck SoftmaxBound::deltas(const Index* idx, const double* preds, std::size_t k,
                                double* delta) const noexcept {
  if (kind_ == SoftmaxBoundKind::tight) return compute_tight<false>(idx, preds, k, delta, nullptr);
  return compute<false>(idx, preds, k, delta, nullptr);
}

BoundCheck SoftmaxBound::delta_grads(const Index* idx, const double* preds, std::size_t k,
                                     double* delta, double* dpsi) const noexcept {
  if (kind_ == SoftmaxBoundKind::tight) return compute_tight<true>(idx, preds, k, delta, dpsi);
  return compute<true>(idx, preds, k, delta, dpsi);
}

void SoftmaxBound::raise_for_testing(double excess) noexcept {
  shift_ -= excess;
  f0_ += excess * static_cast<double>(data_->n());
}

double SoftmaxBound::log_bound(Index n, const double* pred) const noexcept {
  const std::size_t K = k_;
  if (kind_ == SoftmaxBoundKind::tight) {
    const double* r = rec_.data() + std::size_t{n} * rec_size();
    double v[SoftmaxModel::kMaxClasses], gv = 0.0;
    for (std::size_t c = 0; c < K; ++c) {
      v[c] = pred[c] - r[c];
      gv += r[K + c] * v[c];
    }
    const double q =
        lse_bound::quad(v, order_.data() + std::size_t{n} * K, r + 2 * K + 2, r + 3 * K + 1, K);
    return (pred[(*labels_)[n]] - r[2 * K]) - r[2 * K + 1] - gv - q - shift_;
  }
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
