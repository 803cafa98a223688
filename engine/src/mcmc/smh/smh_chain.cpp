// One chain of scalable Metropolis–Hastings (smh_chain.hpp; docs/math.md §8).
#include "smh_chain.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "../run/run_chains.hpp"
#include "../run/violations.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/kernels/kernels.hpp"

namespace flymc::detail {
namespace {

/// The ρ a pCN chain tries in the second half of its warm-up (without --pcn-rho), in equal
/// blocks, keeping the one with the most squared jump distance per unit of cost.
constexpr std::array<double, 5> kRhoGrid = {0.0, 0.5, 0.8, 0.9, 0.95};
/// Too short a warm-up to compare them: ρ stays at the grid's first value.
constexpr long kMinTuningWarmup = 50;
/// The dual averaging's state (DualAveraging::State) in a saved chain.
constexpr std::size_t kAdaptValues = 9;

}  // namespace

SmhChain::SmhChain(const SmhShared& sh, int chain_id, DrawSink* sink, ChainSession& ses)
    : sh_(sh),
      st_(*sh.stats),
      cfg_(sh.cfg),
      data_(sh.data),
      p_(sh.dim()),
      total_n_(data_.total_n()),
      pcn_(cfg_.proposal == SmhProposal::pcn),
      chain_id_(chain_id),
      sink_(sink),
      ses_(ses),
      stops_(ses.ck, sh.faults, sh.link),
      rng_(cfg_.seed, static_cast<std::uint64_t>(chain_id)),
      // A random walk in u, where the posterior is close to N(0, I): Roberts, Gelman & Gilks's
      // 2.38/√d to start, then dual averaging toward the RW target acceptance.
      adapt_(2.38 / std::sqrt(static_cast<double>(sh.dim())), cfg_.target_accept.value_or(0.234)),
      step_(pcn_ ? cfg_.pcn_rho.value_or(kRhoGrid[0])
                 : 2.38 / std::sqrt(static_cast<double>(sh.dim()))),
      u_(Vec::Zero(static_cast<Eigen::Index>(p_))),
      u2_(u_),
      delta_(u_),
      delta2_(u_),
      theta_(aligned_zeros(std::max(data_.stride(), p_))),
      theta2_(aligned_zeros(std::max(data_.stride(), p_))),
      step_pad_(aligned_zeros(data_.stride())),
      step2_pad_(aligned_zeros(data_.stride())),
      u_pad_(aligned_zeros(sh.dim() + 8)),
      row_(sh.columns.size()),
      rho_jump_(kRhoGrid.size(), 0.0),
      rho_cost_(kRhoGrid.size(), 0.0) {
  res_.chain_id = chain_id;
  if (cfg_.profile) profile_ = &res_.profile;
  res_.kept = static_cast<std::size_t>((cfg_.iters + cfg_.thin - 1) / cfg_.thin);
}

/// u and δ from θ (theta_): δ = θ − θ̂, u = Lᵀδ; the rows read δ's coefficients alone.
void SmhChain::set_state_from_theta() {
  for (std::size_t j = 0; j < p_; ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    delta_[jj] = theta_[j] - st_.theta_hat[jj];
    if (j < data_.d()) step_pad_[j] = delta_[jj];
  }
  u_.noalias() = st_.chol.transpose() * delta_;
  cubic_ = cubic_term(u_);
}

/// Order 3: the quadratic factor's cubic part, ⅙·T̃(u, u, u) (d³/6 multiply-adds); else 0.
double SmhChain::cubic_term(const Vec& u) noexcept {
  if (st_.order != 3) return 0.0;
  std::copy(u.data(), u.data() + p_, u_pad_.get());
  return kernels::cubic_form(st_.cubic_padded.get(), u_pad_.get(), p_) / 6.0;
}

/// u' from u, then δ' = L⁻ᵀu' and θ' = θ̂ + δ' (O(d²): one triangular product, which
/// vectorises where a solve's substitution runs one row after another).
void SmhChain::propose() {
  for (Eigen::Index j = 0; j < u2_.size(); ++j) u2_[j] = rng_.normal();
  if (pcn_) {
    u2_ = step_ * u_ + std::sqrt(1.0 - step_ * step_) * u2_;
  } else {
    u2_ = u_ + step_ * u2_;
  }
  delta2_.noalias() = st_.linv_t.triangularView<Eigen::Upper>() * u2_;
  for (std::size_t j = 0; j < p_; ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    theta2_[j] = st_.theta_hat[jj] + delta2_[jj];
    if (j < data_.d()) step2_pad_[j] = delta2_[jj];
  }
}

/// δᵀ·diag(p)·δ, the prior's part of δᵀHδ.
double SmhChain::prior_quadratic(const Vec& delta) const {
  if (st_.precisions.size() == 0) return st_.precision * delta.squaredNorm();
  return delta.cwiseProduct(st_.precisions).dot(delta);
}

/// log of the quadratic factor's MH ratio: the prior times exp(Σ_n T_n) at θ' over θ, times the
/// proposal ratio. With δᵀH_Lδ = ‖u‖² − p‖δ‖² it costs O(d) once δ' is known; order 3 adds the
/// cubic terms' change (d³/6).
double SmhChain::log_quadratic_ratio() {
  cubic2_ = cubic_term(u2_);
  const Prior& prior = sh_.prior;
  const double quad2 = u2_.squaredNorm() - prior_quadratic(delta2_);
  const double quad = u_.squaredNorm() - prior_quadratic(delta_);
  double r = prior.log_density(theta2_.get(), p_) - prior.log_density(theta_.get(), p_) +
             st_.grad.dot(delta2_ - delta_) - 0.5 * (quad2 - quad) + (cubic2_ - cubic_);
  if (st_.global) {  // the global's own prior (the coefficients' prior holds a flat term for it)
    const std::size_t g = p_ - 1;
    r += st_.global->log_prior(theta2_[g]) - st_.global->log_prior(theta_[g]);
  }
  // pCN is reversible with respect to N(0, I) in u: q(u | u')/q(u' | u) = φ(u)/φ(u').
  if (pcn_) r += 0.5 * (u2_.squaredNorm() - u_.squaredNorm());
  return r;
}

/// λ_n = −log min(1, exp(r_n(θ') − r_n(θ))) = max(0, r_n(θ) − r_n(θ')), a difference of the
/// datum's gaps (SmhShared::remainder_change). The caller counts the two likelihood queries.
double SmhChain::remainder_drop(Index n) const noexcept {
  const SmhDatum& dat = st_.datum[n];
  const double e = data_.dot(n, step_pad_.get());
  const double e2 = data_.dot(n, step2_pad_.get());
  if (st_.global) {
    const auto g = static_cast<Eigen::Index>(p_ - 1);
    return std::max(0.0, st_.global_remainder_change(n, dat, e, delta_[g], e2, delta2_[g]));
  }
  return std::max(0.0, st_.remainder_change(n, dat, e, e2));
}

/// Row n's remainder exceeded its bound by `excess` at the proposal: where, for the error.
void SmhChain::note_violation(Index n, double excess) noexcept {
  const std::size_t first = data_.shard() != nullptr ? data_.shard()->first_row : 0;
  const auto off = data_.offsets();  // the predictor with its offset, as the family sees it
  const double eta = data_.dot(n, theta2_.get()) + (off.empty() ? 0.0 : off[n]);
  res_.counters.first_violation.merge({first + n, eta, excess});
}

/// Where the thinned process would propose more candidates than there are data (far from θ̂):
/// every factor evaluated, accepted with probability Π_n exp(−λ_n), the same factorised
/// acceptance (never the plain MH ratio). Σλ is a data-wide sum (across a shard's processes).
bool SmhChain::all_data_test(double psi, SmhOutcome& o) {
  struct Drops {
    double lambda = 0.0, violations = 0.0;
    double first = -1.0;  // this process's lowest violating row, −1 if none
  };
  const Drops all = fold_rows(
      data_, Drops{},
      [&](std::size_t lo, std::size_t hi) {
        Drops d;
        for (std::size_t i = lo; i < hi; ++i) {
          const double lam = remainder_drop(static_cast<Index>(i));
          if (lam > st_.datum[i].phi * psi) {
            if (d.violations == 0.0) d.first = double(i);
            d.violations += 1.0;
          }
          d.lambda += lam;
        }
        return d;
      },
      [](Drops a, Drops b) {
        return Drops{a.lambda + b.lambda, a.violations + b.violations,
                     a.first >= 0.0 ? a.first : b.first};
      },
      [](Drops d) {
        return std::vector<double>{d.lambda, d.violations};
      },
      [](const std::vector<double>& v) {
        return Drops{v.at(0), v.at(1)};
      });
  o.candidates += total_n_;
  o.violations += static_cast<std::uint64_t>(all.violations);
  if (all.first >= 0.0) {
    const auto n = static_cast<Index>(all.first);
    note_violation(n, remainder_drop(n) - st_.datum[n].phi * psi);
  }
  res_.counters.queries += 2 * total_n_;
  return std::log(rng_.uniform_pos()) < -all.lambda;
}

/// Starts loading what datum n's factor reads: its row and its record.
void SmhChain::prefetch_datum(Index n) const noexcept {
  data_.prefetch_row(n);
  __builtin_prefetch(&st_.datum[n]);  // aligned to its size: one cache line
  if (st_.reads_response) __builtin_prefetch(&data_.y()[static_cast<std::size_t>(n)]);
}

/// The data's factors by Poisson thinning with rate ψ·Σφ on [0, 1), on the proposal's own stream
/// (keyed by the chain and the proposal's number, so that the chain's stream does not depend on
/// how many points a test draws). Point k of the process gets its block (an alias draw over the
/// Φ_b), the alias word that picks its row within the block and its thinning uniform. This
/// process tests the candidates in its own blocks (all of them, unless the data are a shard) in
/// point order, stopping at the first rejection, and the processes' outcomes are combined by
/// point index (combine_tests). A candidate rejects with probability λ_n / (φ_n·ψ); the proposal
/// passes if none does. Candidates are taken kAhead at a time: their alias columns are
/// prefetched as they are drawn, then their rows and records, before any is tested, so that the
/// misses of a batch overlap instead of following one another; a rejection leaves the later
/// points undrawn.
bool SmhChain::thinned_test(double psi, double rate, SmhOutcome& o) {
  Rng points = proposal_stream();
  const std::size_t first = st_.first_block, last = first + st_.blocks_here();
  LocalTest test;
  double t = -std::log(points.uniform_pos()) / rate;
  while (t < 1.0 && !test.rejection) {
    std::size_t m = 0;
    for (; m < kAhead && t < 1.0; t -= std::log(points.uniform_pos()) / rate) {
      const std::uint64_t point = test.points++;
      const std::uint32_t b = st_.block_alias.index(points());
      const std::uint64_t word = points();
      const double uniform = points.uniform();
      if (b < first || b >= last) continue;
      const auto local = static_cast<std::uint32_t>(b - first);
      st_.row_alias.prefetch(local, word);
      batch_[m++] = {point, word, uniform, local, 0};
    }
    for (std::size_t k = 0; k < m; ++k) {
      Candidate& c = batch_[k];
      c.row = static_cast<Index>(std::size_t{c.block} * kReduceGrain +
                                 st_.row_alias.index(c.block, c.word));
      prefetch_datum(c.row);
    }
    for (std::size_t k = 0; k < m && !test.rejection; ++k) {
      const Candidate& c = batch_[k];
      const double lam = remainder_drop(c.row);
      const double bound = st_.datum[c.row].phi * psi;
      if (lam > bound) {
        test.violation_points.push_back(c.point);
        note_violation(c.row, lam - bound);
      }
      if (c.uniform * bound < lam) test.rejection = c.point;  // the datum's factor rejects
    }
  }
  return combine_tests(test, o);
}

/// The stream of the current proposal's thinning points.
Rng SmhChain::proposal_stream() const noexcept {
  std::uint64_t s = 0x534d48506f696e74ULL;  // "SMHPoint": apart from the chains' own streams
  std::uint64_t key = splitmix64(s) ^ static_cast<std::uint64_t>(chain_id_);
  key = splitmix64(key) ^ proposals_;
  return Rng(cfg_.seed, splitmix64(key));
}

/// The proposal's outcome from every process's test, as one process holding every row counts
/// it: the first rejecting point is the earliest any process saw, the candidates evaluated are
/// the points up to it (all of them if none rejects: then every process drew them all), and the
/// violations are those at or before it. On a shard that is one all-gather per proposal, and a
/// second where any process saw a violation (never expected: the bounds dominate; a violating
/// candidate always rejects, since its uniform is below 1, so such a process rejected too, and
/// its later violations must not count when another process rejected earlier).
bool SmhChain::combine_tests(const LocalTest& mine, SmhOutcome& o) {
  std::optional<std::uint64_t> rejection = mine.rejection;
  std::uint64_t violations = mine.violation_points.size();
  if (st_.link != nullptr) {
    const std::vector<double> parts = st_.link->all_gather(
        {mine.rejection ? static_cast<double>(*mine.rejection) : -1.0, double(violations)});
    double any_violation = 0.0;
    for (std::size_t r = 0; r + 1 < parts.size(); r += 2) {
      any_violation += parts[r + 1];
      if (parts[r] < 0.0) continue;  // no rejection there
      const auto point = static_cast<std::uint64_t>(parts[r]);
      if (!rejection || point < *rejection) rejection = point;
    }
    if (any_violation > 0.0) {
      const auto before =
          std::count_if(mine.violation_points.begin(), mine.violation_points.end(),
                        [&](std::uint64_t k) { return !rejection || k <= *rejection; });
      violations = 0;
      for (const double v : st_.link->all_gather({static_cast<double>(before)}))
        violations += static_cast<std::uint64_t>(v);
    }
  }
  const std::uint64_t evaluated = rejection ? *rejection + 1 : mine.points;
  o.candidates += evaluated;
  o.violations += violations;
  res_.counters.queries += 2 * evaluated;  // each datum's likelihood at θ and at θ'
  return !rejection;
}

/// ψ with λ_n ≤ φ_n·ψ for every datum (docs/math.md §8): the smaller of the remainders' own
/// bound, ‖u‖³ + ‖u'‖³, and the mean-value bound on their difference,
/// 3·max(‖u‖, ‖u'‖)²·‖u − u'‖, which is the smaller one for short moves. Order 3: ‖u‖⁴ + ‖u'‖⁴
/// and 4·max(‖u‖, ‖u'‖)³·‖u − u'‖. With an envelope, both hold with the derivative's sup over the
/// ball ‖u‖ ≤ max(‖u‖, ‖u'‖), where no predictor is farther than reach·max(‖u‖, ‖u'‖) from its
/// expansion point: the growth there multiplies them.
double SmhChain::psi() const {
  const double a = u_.norm(), b = u2_.norm(), m = std::max(a, b), step = (u2_ - u_).norm();
  const double psi = st_.order == 3
                         ? std::min(a * a * a * a + b * b * b * b, 4.0 * m * m * m * step)
                         : std::min(a * a * a + b * b * b, 3.0 * m * m * step);
  if (st_.global) {
    const double t_u = st_.reach * m, t_s = st_.global_reach * m;
    return psi * (st_.order == 3 ? st_.global->fourth_growth(t_u, t_s)
                                 : st_.global->envelope_growth(t_u, t_s));
  }
  return st_.envelope ? psi * st_.family->envelope_growth(st_.order + 1, st_.reach * m) : psi;
}

/// The factorised acceptance: the quadratic factor, then the data's factors with the bound φ_n·ψ
/// on every datum's (all of them where the thinned process would propose more candidates than
/// there are data).
SmhOutcome SmhChain::accept_test() {
  SmhOutcome o;
  double lr = 0.0;
  {
    const PhaseTimer timer(profile_, Phase::prior_bound);
    lr = log_quadratic_ratio();
  }
  if (!std::isfinite(lr)) {
    ++res_.counters.nonfinite;
    return o;
  }
  if (lr < 0.0 && std::log(rng_.uniform_pos()) >= lr) return o;
  o.rejected_by_data = true;
  const double bound = psi();
  const double rate = bound * st_.phi_sum;
  const PhaseTimer timer(profile_, Phase::likelihood);
  const bool pass = rate >= static_cast<double>(total_n_) ? all_data_test(bound, o)
                                                          : thinned_test(bound, rate, o);
  if (!pass) return o;
  o.rejected_by_data = false;
  o.accept = true;
  return o;
}

/// pCN without --pcn-rho: the second half of warm-up tries each ρ of kRhoGrid for an equal block
/// of iterations, adding up each one's squared jumps in u and its cost, counted in multiply-adds
/// (d² for the proposal, d³/6 more at order 3, 2d per candidate) so that the choice does not depend
/// on the machine and the draws stay reproducible. Sets the ρ of iteration it + 1.
void SmhChain::tune_rho(long it, double jump, std::uint64_t candidates) {
  const long w = cfg_.warmup, half = w / 2;
  if (cfg_.pcn_rho || w < kMinTuningWarmup) return;
  const auto block = [&](long i) {
    return static_cast<std::size_t>((i - half) * static_cast<long>(kRhoGrid.size()) / (w - half));
  };
  if (it >= half) {
    rho_jump_[block(it)] += jump;
    const std::size_t cubic = st_.order == 3 ? smh::cubic_size(p_) : 0;
    rho_cost_[block(it)] += static_cast<double>(p_ * p_ + cubic + 2 * p_ * candidates);
  }
  if (it + 1 >= half && it + 1 < w) step_ = kRhoGrid[block(it + 1)];
}

void SmhChain::transition(long it) {
  ++proposals_;
  {
    const PhaseTimer timer(profile_, Phase::proposal);
    propose();
  }
  const SmhOutcome o = accept_test();
  res_.counters.bound_violations += o.violations;
  double jump = 0.0;
  if (o.accept) {
    jump = (u2_ - u_).squaredNorm();
    u_.swap(u2_);
    std::swap(cubic_, cubic2_);
    delta_.swap(delta2_);
    std::swap(theta_, theta2_);
    std::swap(step_pad_, step2_pad_);
  } else if (o.rejected_by_data) {
    ++window_rej_data_;
  } else {
    ++window_rej_quad_;
  }
  const double acc = o.accept ? 1.0 : 0.0;
  window_accept_ += acc;
  gauge_accept_ += acc;
  ++window_steps_;
  window_cand_ += o.candidates;
  window_viol_ += o.violations;
  if (it < cfg_.warmup) {
    if (pcn_) {
      tune_rho(it, jump, o.candidates);
    } else {
      step_ = adapt_.update(acc);
    }
  } else {
    accept_sum_ += acc;
  }
}

/// End of warm-up: the random walk freezes its averaged step; pCN keeps the ρ with the most
/// squared jump distance per unit of cost. The adaptation block records the step and H⁻¹.
void SmhChain::end_warmup() {
  const auto now = Clock::now();
  ses_.warmup += seconds_between(seg_start_, now);
  seg_start_ = now;
  in_warmup_ = false;
  if (!pcn_ && cfg_.warmup > 0) step_ = adapt_.final_step_size();
  if (pcn_ && !cfg_.pcn_rho && cfg_.warmup >= kMinTuningWarmup) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < kRhoGrid.size(); ++k)
      if (rho_jump_[k] * rho_cost_[best] > rho_jump_[best] * rho_cost_[k]) best = k;
    step_ = kRhoGrid[best];
  }
  if (sink_) {
    const Mat cov = st_.linv_t * st_.linv;
    std::vector<double> inv(cov.data(), cov.data() + cov.size());
    sink_->adaptation(step_, inv, true);
  }
  accept_sum_ = 0.0;
  window_accept_ = 0.0;
  window_steps_ = 0;
  window_cand_ = window_rej_quad_ = window_rej_data_ = window_viol_ = 0;
  queries_at_row_ = queries_at_sampling_ = res_.counters.queries;
}

/// Every thin-th sampling iteration: the kept draw and its row. lp__ is not computed (0, as
/// Stan's fixed_param sampler writes it): it would cost a pass over all the data per draw.
void SmhChain::record(long it) {
  if ((it - cfg_.warmup) % cfg_.thin != 0) return;
  const PhaseTimer timer(profile_, Phase::output);
  res_.lp.push_back(0.0);
  res_.draws.insert(res_.draws.end(), theta_.get(), theta_.get() + p_);
  if (st_.global) res_.draws.back() = st_.global->reported(res_.draws.back());  // σ from s
  if (sink_) {
    const double steps = static_cast<double>(std::max(1L, window_steps_));
    const std::array<double, kSmhSamplerColumns.size()> s = {
        0.0,
        window_accept_ / steps,
        step_,
        static_cast<double>(window_cand_),
        static_cast<double>(res_.counters.queries - queries_at_row_),
        static_cast<double>(window_rej_quad_),
        static_cast<double>(window_rej_data_),
        static_cast<double>(window_viol_)};
    std::copy(s.begin(), s.end(), row_.begin());
    std::copy(theta_.get(), theta_.get() + p_, row_.begin() + static_cast<long>(s.size()));
    if (st_.global) row_.back() = st_.global->reported(row_.back());
    sink_->row(row_);
  }
  queries_at_row_ = res_.counters.queries;
  window_accept_ = 0.0;
  window_steps_ = 0;
  window_cand_ = window_rej_quad_ = window_rej_data_ = window_viol_ = 0;
}

ChainResult SmhChain::run(ChainGauge* gauge) {
  advance(cfg_.warmup + cfg_.iters, gauge);
  return finish();
}

/// The chain's start: fresh, resumed, or over before it began (stopped at once, or finished in an
/// earlier session: its results are then complete).
void SmhChain::begin(ChainGauge* gauge) {
  const ChainState* st = ses_.state;
  stage_ = Stage::over;
  if (st != nullptr && st->finished) {
    finished_earlier(*st, gauge);
    pos_ = st->tally.iteration;
    return;
  }
  if (st == nullptr && stops_.stop_requested(0)) {  // stopped before it started: nothing to save
    res_.stopped = true;
    res_.kept = 0;
    return;
  }
  if (cfg_.ess <= 0.0) {  // a run to an ESS target grows its draws block by block
    res_.draws.reserve(res_.kept * p_);
    res_.lp.reserve(res_.kept);
  }
  pos_ = 0;
  if (st != nullptr) {
    pos_ = restore(*st);
    if (gauge) gauge->publish(pos_);
  } else {
    initial_theta(cfg_, sh_.map, sh_.prior, rng_, theta_.get(), chain_id_);
    set_state_from_theta();
    if (sink_) sink_->begin(sh_.columns);
  }
  stops_.start(pos_, st != nullptr);
  session_first_ = pos_;
  seg_start_ = Clock::now();
  in_warmup_ = pos_ <= cfg_.warmup;
  stage_ = Stage::running;
}

void SmhChain::advance(long end, ChainGauge* gauge) {
  if (stage_ == Stage::fresh) begin(gauge);
  if (stage_ != Stage::running || res_.stopped) return;
  for (; pos_ < end; ++pos_) {
    stop_on_violation(cfg_, res_.counters);
    stop_if_aborted();
    if (stops_.on() && stops_.checkpoint_or_stop(pos_, [this](long it) { save(it, false); })) {
      res_.stopped = true;
      return;
    }
    if (pos_ == cfg_.warmup) end_warmup();
    transition(pos_);
    if (pos_ >= cfg_.warmup) record(pos_);
    if (gauge && ((pos_ & 15) == 15 || pos_ + 1 == end))
      gauge->publish(pos_ + 1, gauge_accept_, pos_ + 1 - session_first_,
                     std::numeric_limits<double>::quiet_NaN());
  }
}

void SmhChain::halt() {
  if (stage_ != Stage::running || res_.stopped) return;
  stops_.halt(pos_, [this](long it) { save(it, false); });
  res_.stopped = true;
}

ChainResult SmhChain::finish() {
  if (stage_ == Stage::over) return std::move(res_);
  double warm = 0.0, samp = 0.0;
  session_times(warm, samp);
  ses_.warmup = warm;
  ses_.sampling = samp;
  seg_start_ =
      Clock::now();  // the open segment is in ses_ now: the final save must not add it again
  res_.warmup_seconds = prev_.warmup + warm;
  res_.sampling_seconds = prev_.sampling + samp;
  res_.step_size = step_;
  res_.counters.profile = nullptr;  // points into res_, which is moved out
  res_.kept = res_.lp.size();
  if (res_.stopped) return std::move(res_);
  const double iters = static_cast<double>(std::max(1L, pos_ - cfg_.warmup));
  res_.accept_rate = accept_sum_ / iters;
  res_.bright_mean = std::numeric_limits<double>::quiet_NaN();
  res_.sampling_queries = res_.counters.queries - queries_at_sampling_;
  if (sink_) sink_->end(res_.warmup_seconds, res_.sampling_seconds, res_.counters);
  if (stops_.on()) save(pos_, true);
  return std::move(res_);
}

/// This session's seconds in warm-up and in sampling, up to now.
void SmhChain::session_times(double& warm, double& samp) const {
  const double open = seconds_between(seg_start_, Clock::now());
  warm = ses_.warmup + (in_warmup_ ? open : 0.0);
  samp = ses_.sampling + (in_warmup_ ? 0.0 : open);
}

/// What a chain's state holds beyond ChainState's common fields (its kernel_state): the dual
/// averaging's state, the ρ-tuning sums, u and δ as the chain holds them (recomputing them from θ
/// would round differently), and the draw file's window counts.
std::vector<double> SmhChain::saved_moves() const {
  const DualAveraging::State a = adapt_.state();
  std::vector<double> v = {a.mu, a.target, a.gamma,   a.t0,         a.kappa,
                           a.t,  a.h_bar,  a.log_eps, a.log_eps_bar};
  v.insert(v.end(), rho_jump_.begin(), rho_jump_.end());
  v.insert(v.end(), rho_cost_.begin(), rho_cost_.end());
  v.insert(v.end(), u_.data(), u_.data() + u_.size());
  v.insert(v.end(), delta_.data(), delta_.data() + delta_.size());
  for (const std::uint64_t c : {window_cand_, window_rej_quad_, window_rej_data_, window_viol_})
    v.push_back(static_cast<double>(c));  // counts below 2^53: exact
  return v;
}

void SmhChain::load_moves(const std::vector<double>& v, std::size_t expected) {
  if (v.size() != expected)
    throw ConfigError("chain " + std::to_string(chain_id_) +
                      "'s saved state does not fit scalable MH's (" + std::to_string(v.size()) +
                      " values, expected " + std::to_string(expected) + ")");
  auto at = v.begin();
  auto take = [&at](std::size_t k) {
    auto from = at;
    at += static_cast<std::ptrdiff_t>(k);
    return from;
  };
  const auto a = take(kAdaptValues);
  adapt_.set_state({a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]});
  std::copy_n(take(rho_jump_.size()), rho_jump_.size(), rho_jump_.begin());
  std::copy_n(take(rho_cost_.size()), rho_cost_.size(), rho_cost_.begin());
  std::copy_n(take(p_), p_, u_.data());
  std::copy_n(take(p_), p_, delta_.data());
  const auto w = take(4);
  window_cand_ = static_cast<std::uint64_t>(w[0]);
  window_rej_quad_ = static_cast<std::uint64_t>(w[1]);
  window_rej_data_ = static_cast<std::uint64_t>(w[2]);
  window_viol_ = static_cast<std::uint64_t>(w[3]);
}

/// The chain's state after `it` iterations, saved after the draw file is durable. On a shard only
/// the process that keeps the draws saves (every process holds the same state).
void SmhChain::save(long it, bool finished) {
  if (!sh_.keeps_draws) return;
  ChainState c = chain_state_head(chain_id_, finished, *sink_, res_.lp.size(), rng_, res_.counters);
  c.theta.assign(theta_.get(), theta_.get() + p_);
  c.step_size = step_;
  c.kernel_state = saved_moves();
  c.tally.iteration = it;
  c.tally.window_steps = window_steps_;
  c.tally.window_accept = window_accept_;
  c.tally.accept_sum = accept_sum_;
  c.tally.queries_at_sampling = queries_at_sampling_;
  c.tally.queries_at_row = queries_at_row_;
  double warm = 0.0, samp = 0.0;
  session_times(warm, samp);
  c.timers = saved_timers(prev_, ses_, warm, samp);
  stops_.options().store->save_chain(c);
}

/// A chain resumed from `st`: every value the loop reads, as it was. Returns the iteration to
/// continue from.
long SmhChain::restore(const ChainState& st) {
  rng_.set_state(st.rng);
  std::copy(st.theta.begin(), st.theta.end(), theta_.get());
  step_ = st.step_size;
  load_moves(st.kernel_state, kAdaptValues + rho_jump_.size() + rho_cost_.size() + 2 * p_ + 4);
  for (std::size_t j = 0; j < data_.d(); ++j) step_pad_[j] = delta_[static_cast<Eigen::Index>(j)];
  cubic_ = cubic_term(u_);  // the same function of the same u as when it was computed
  proposals_ = static_cast<std::uint64_t>(st.tally.iteration);  // one proposal per iteration
  window_steps_ = st.tally.window_steps;
  window_accept_ = st.tally.window_accept;
  accept_sum_ = st.tally.accept_sum;
  queries_at_sampling_ = st.tally.queries_at_sampling;
  queries_at_row_ = st.tally.queries_at_row;
  Profile* profile = res_.counters.profile;
  res_.counters = st.counters;
  res_.counters.profile = profile;
  prev_ = st.timers;
  restore_draws(kSmhSamplerColumns.size(), p_, ses_.rows, res_);
  return st.tally.iteration;
}

/// A chain that finished in an earlier session: its results from the state and the draw file.
void SmhChain::finished_earlier(const ChainState& st, ChainGauge* gauge) {
  restore_draws(kSmhSamplerColumns.size(), p_, ses_.rows, res_);
  res_.kept = res_.lp.size();
  res_.step_size = st.step_size;
  res_.counters = st.counters;
  res_.counters.profile = nullptr;
  res_.accept_rate =
      st.tally.accept_sum / static_cast<double>(std::max(1L, st.tally.iteration - cfg_.warmup));
  res_.bright_mean = std::numeric_limits<double>::quiet_NaN();
  res_.sampling_queries = st.counters.queries - st.tally.queries_at_sampling;
  res_.warmup_seconds = st.timers.warmup;
  res_.sampling_seconds = st.timers.sampling;
  if (gauge) gauge->publish(st.tally.iteration);
}

}  // namespace flymc::detail
