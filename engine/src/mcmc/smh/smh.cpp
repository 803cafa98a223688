// Scalable Metropolis–Hastings (flymc/mcmc/smh/smh.hpp): the Taylor expansion of the logistic
// log-likelihood, the run's set-up (expansion at θ̂, whitening, per-datum bounds, alias table) and
// run_smh().
#include "flymc/mcmc/smh/smh.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "../run_chains.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/kernels/kernels.hpp"
#include "smh_chain.hpp"

namespace flymc {

namespace smh {

Taylor logistic_taylor(double s_hat) noexcept {
  Taylor t;
  t.s_hat = s_hat;
  t.f0 = kernels::log_sigmoid(s_hat);
  const double sig_minus = std::exp(kernels::log_sigmoid(-s_hat));  // σ(−ŝ)
  const double sig_plus = std::exp(t.f0);                           // σ(ŝ)
  t.f1 = sig_minus;
  t.f2 = -sig_plus * sig_minus;
  return t;
}

double logistic_remainder(const Taylor& t, double s) noexcept {
  const double h = s - t.s_hat;
  return (kernels::log_sigmoid(s) - t.f0) - h * (t.f1 + 0.5 * t.f2 * h);
}

}  // namespace smh

namespace detail {
namespace {

using RowBlock =
    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
               Eigen::OuterStride<>>;

RowBlock rows(const Dataset& ds, std::size_t lo, std::size_t hi) {
  return RowBlock(ds.row(lo), static_cast<Eigen::Index>(hi - lo), static_cast<Eigen::Index>(ds.d()),
                  Eigen::OuterStride<>(static_cast<Eigen::Index>(ds.stride())));
}

/// A chunk's part of the expansion: g and H_L = Σ w_n x_n x_nᵀ (w_n = −f''(ŝ_n)).
struct Expansion {
  Vec g;
  Mat h;
};

/// Pass 1: ŝ_n and the Taylor coefficients per datum; g and H_L summed in chunk order.
void expand_at_theta_hat(SmhShared& sh) {
  const Dataset& ds = sh.model.data();
  const std::size_t n = ds.n(), d = ds.d();
  AlignedBuffer th = aligned_zeros(ds.stride());
  std::copy(sh.theta_hat.data(), sh.theta_hat.data() + d, th.get());
  sh.datum.resize(n);
  const auto y = ds.y();
  const auto dd = static_cast<Eigen::Index>(d);
  Expansion total = deterministic_reduce(
      n, kReduceGrain, Expansion{},
      [&](std::size_t lo, std::size_t hi) {
        std::vector<double> s(hi - lo), w(hi - lo);
        kernels::dots_packed(ds.row(lo), hi - lo, ds.stride(), th.get(), s.data());
        Expansion part{Vec::Zero(dd), Mat::Zero(dd, dd)};
        Vec coef(static_cast<Eigen::Index>(hi - lo));
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const smh::Taylor t = smh::logistic_taylor(y[lo + i] * s[i]);
          sh.datum[lo + i].taylor = t;
          sh.datum[lo + i].label = y[lo + i];
          coef[static_cast<Eigen::Index>(i)] = y[lo + i] * t.f1;
          w[i] = std::sqrt(-t.f2);
        }
        const RowBlock x = rows(ds, lo, hi);
        part.g.noalias() = x.transpose() * coef;
        const Mat wx =
            Eigen::Map<const Vec>(w.data(), static_cast<Eigen::Index>(w.size())).asDiagonal() * x;
        part.h.selfadjointView<Eigen::Lower>().rankUpdate(wx.transpose());
        return part;
      },
      [](Expansion acc, Expansion part) {
        if (acc.g.size() == 0) return part;
        acc.g += part.g;
        acc.h += part.h;
        return acc;
      });
  sh.grad = total.g;
  Mat h = total.h.selfadjointView<Eigen::Lower>();
  h.diagonal().array() += sh.precision;
  const Eigen::LLT<Mat> llt(h);
  if (llt.info() != Eigen::Success)
    throw ConfigError("--algo smh: the Hessian at the MAP is not positive definite");
  sh.chol = llt.matrixL();
}

/// Pass 2: φ_n = (M/6)·‖L⁻¹x_n‖³ = (M/6)·(x_nᵀH⁻¹x_n)^{3/2}, enlarged by a relative 1e-9 so that
/// rounding in ‖L⁻¹x_n‖ cannot make a bound fall below its remainder.
void bound_constants(SmhShared& sh) {
  const Dataset& ds = sh.model.data();
  const std::size_t n = ds.n();
  const auto dd = static_cast<Eigen::Index>(ds.d());
  Mat linv = Mat::Identity(dd, dd);
  sh.chol.triangularView<Eigen::Lower>().solveInPlace(linv);
  const Mat hinv = linv.transpose() * linv;
  std::vector<double> phi(n);
  const double c = smh::kLogisticM / 6.0 * (1.0 + 1e-9);
  chunked_for(n, kReduceGrain, [&](std::size_t lo, std::size_t hi) {
    const RowBlock x = rows(ds, lo, hi);
    const Mat xh = x * hinv;
    for (std::size_t i = lo; i < hi; ++i) {
      const double q =
          xh.row(static_cast<Eigen::Index>(i - lo)).dot(x.row(static_cast<Eigen::Index>(i - lo)));
      phi[i] = c * q * std::sqrt(q);
      sh.datum[i].phi = phi[i];
    }
  });
  sh.phi_sum = deterministic_reduce(
      n, kReduceGrain, 0.0,
      [&](std::size_t lo, std::size_t hi) {
        double s = 0.0;
        for (std::size_t i = lo; i < hi; ++i) s += phi[i];
        return s;
      },
      [](double a, double b) { return a + b; });
  sh.alias = AliasTable(phi);
}

}  // namespace

void build_smh_shared(SmhShared& sh) {
  sh.theta_hat = sh.map.theta;
  sh.precision = sh.model.prior().precision();
  expand_at_theta_hat(sh);
  bound_constants(sh);
}

}  // namespace detail

RunResult run_smh(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                  const SinkFactory& sinks, Progress* progress,
                  const CheckpointOptions* checkpoint) {
  if (cfg.model != ModelKind::logistic)
    throw ConfigError("--algo smh runs logistic regression only so far");
  const Stopwatch setup_clock;
  const LogisticModel model(data, cfg);
  RunResult out = detail::start_uncheckpointed_run(cfg, model, checkpoint);
  detail::SmhShared sh(cfg, model, out.map);
  sh.columns = smh_draw_columns(out.names);
  detail::build_smh_shared(sh);
  out.setup_seconds = setup_clock.seconds();
  detail::run_independent_chains(cfg, sinks, progress, out, [&](int id, DrawSink* sink) {
    return detail::SmhChain(sh, id, sink);
  });
  return out;
}

}  // namespace flymc
