#pragma once
// Private: what the chains of the piecewise-deterministic samplers share (docs/math.md §7): the
// run's read-only set-up (PdmpShared), per-datum gradients of a single-index model, read through
// its family, with their query count (DatumGradients), and the chain's output (PdmpOutput): the
// discrete draws read off the continuous path, the draw file's rows, the segment-integrated means,
// the tallies. The chains move in u = T⁻¹θ (T = I without preconditioning, §7.6); the output is in
// θ.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "../run/violations.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/mcmc/columns.hpp"
#include "flymc/mcmc/pdmp/bounds.hpp"
#include "flymc/mcmc/pdmp/path.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"

namespace flymc::detail {

/// Everything the chains of one run share, read-only.
struct PdmpShared {
  const RunConfig& cfg;
  const Dataset& data;              // in the chains' coordinates u: features Tᵀx
  const SingleIndexFamily& family;  // the likelihood, datum by datum
  /// The model's own pass over all the data: log L and ∇ log L (stride entries) at u, padded.
  std::function<double(const double*, double*)> log_lik_grad;
  double prior_sd;       // of θ's prior (initial_theta)
  const MapResult& map;  // of θ
  const pdmp::PdmpConstants& c;
  const Mat& transform;    // T, lower triangular; empty for T = I
  double spacing = 1.0;    // Δ, path time per draw
  double refresh = 0.0;    // λ_ref (BPS family)
  double band_step = 1.0;  // SBPS: the band's interpolation step δ
  double slope_sd = 1.0;   // SBPS: σ_β of the band's slope prior
  std::vector<std::string> columns;

  /// Chain `chain`'s starting point in u: T⁻¹ times initial_theta()'s θ.
  void start(Rng& rng, double* u, int chain) const;
  /// θ = T u into theta (p entries); returns u itself for T = I.
  const double* to_theta(const double* u, double* theta) const noexcept;
};

/// Gradients of U_i = −f(y_i, x_i·θ): ∇U_i = c_i x_i (pdmp::datum_coef). Every datum whose c_i is
/// computed counts as one likelihood query, as the rest of flymc counts a datum's evaluation.
class DatumGradients {
 public:
  DatumGradients(const Dataset& data, const SingleIndexFamily& family, Counters& counters)
      : data_(data), family_(family), counters_(counters) {}
  /// coef[i] = c_{idx[i]}(θ), θ padded (stride entries, aligned).
  void coefficients(const Index* idx, std::size_t k, const double* theta_pad, double* coef);
  /// c_j(θ) of one datum.
  double coefficient(Index j, const double* theta_pad);
  /// grad[0..p) += scale·Σ_i coef[i]·x_{idx[i]}.
  void accumulate(const Index* idx, std::size_t k, const double* coef, double scale,
                  double* grad) const noexcept;
  /// proj[i] = coef[i]·(x_{idx[i]}·w), w padded: the data's directional derivatives along w.
  void projections(const Index* idx, std::size_t k, const double* coef, const double* w_pad,
                   double* proj);
  /// grad[0..p) = ∇ Σ_i U_i(θ) over all the data (N queries; deterministic reduction).
  void full(const PdmpShared& sh, const double* theta_pad, double* grad);

 private:
  const Dataset& data_;
  const SingleIndexFamily& family_;
  Counters& counters_;
  std::vector<double> dots_;
};

/// One chain's output. The chain moves along segments and reports its proposals and events; this
/// object turns the path into draws, rows and means.
class PdmpOutput {
 public:
  /// @param precond the chain's diagonal preconditioner (written as the inverse metric's
  /// diagonal, squared, at the end of warm-up), or null for the identity.
  PdmpOutput(const PdmpShared& sh, int chain_id, DrawSink* sink,
             const std::vector<double>* precond);
  pdmp::PathGrid& path() noexcept { return path_; }
  Counters& counters() noexcept { return res_.counters; }
  double remaining() const noexcept { return path_.remaining(); }
  bool done() const noexcept { return path_.done(); }
  bool sampling() const noexcept { return path_.sampling(); }

  /// Before the first move; `gauge` (may be null) counts the grid points passed.
  void begin(ChainGauge* gauge);
  /// Moves along u + w·s, s ∈ [0, tau], tau ≤ remaining().
  void advance(const double* theta, const double* w, double tau);
  /// A proposed event was accepted (a bounce or a flip) or rejected.
  void proposal(bool accepted) noexcept;
  /// The path starts, changes direction or ends at u, now (--save-events; PathEvent kinds).
  void event(int kind, int coordinate, const double* u) {
    event_at(path_.now(), kind, coordinate, u);
  }
  /// A proposal whose rate exceeded its bound: SBPS's bias diagnostic; for the exact samplers a
  /// wrong constant, which stops the run unless it is to finish (violations.hpp).
  void violation() {
    ++res_.counters.bound_violations;
    ++window_.violations;
    if (is_exact(sh_.cfg.algo)) stop_on_violation(sh_.cfg, res_.counters);
  }
  /// The batch size of the gradient estimates, reported as ChainResult::batch_mean.
  ChainResult finish(double batch);
  /// The path's end moves on to iteration `end` (warm-up included), for the next block.
  void extend(long end) noexcept { path_.extend(end); }
  long position() const noexcept { return path_.passed(); }
  const Counters& counts() const noexcept { return res_.counters; }
  const std::vector<double>& draws() const noexcept { return res_.draws; }
  int chain_id() const noexcept { return res_.chain_id; }

 private:
  void emit(long k, const double* u);
  void event_at(double time, int kind, int coordinate, const double* u);
  void end_warmup();

  struct Window {  // since the last kept draw (and, in sampling, since the warm-up's end)
    std::uint64_t proposals = 0, accepted = 0, violations = 0;
  };
  const PdmpShared& sh_;
  const std::vector<double>* precond_;
  DrawSink* sink_;
  ChainGauge* gauge_ = nullptr;
  std::size_t p_;
  pdmp::PathGrid path_;
  ChainResult res_;
  Window window_, total_;
  std::uint64_t queries_at_row_ = 0, queries_at_sampling_ = 0;
  std::vector<double> row_, theta_, event_theta_;
  std::vector<double> end_u_;  // the particle at the path's last grid point (its end event)
  Stopwatch warm_clock_;
  Clock::time_point sampling_start_ = Clock::now();
};

}  // namespace flymc::detail
