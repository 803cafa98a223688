#pragma once
// Private: one chain's transition loop, a template over the model (FireflyModel), whether it runs
// FlyMC, and its z-updater. The loop is short (run()); each of its steps is a member with a name:
// start or restore the state, take a transition (θ-step, adaptation, z-sweep), record a kept draw,
// save the state. A checkpoint is taken at the top of an iteration: the saved state is everything
// the rest of the loop reads, so a chain restored from it continues exactly as the original would
// have (flymc/mcmc/chain_state.hpp).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../run/chain_stops.hpp"
#include "../run/run_chains.hpp"
#include "../run/run_start.hpp"
#include "../run/violations.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/mcmc/chain_state.hpp"
#include "flymc/mcmc/columns.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/fly/theta_kernels.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/state_store.hpp"

namespace flymc::detail {

/// Everything shared read-only by the chains of one run.
template <class M>
struct Shared {
  const RunConfig& cfg;
  const M& model;
  const typename M::Bound* bound;  // null for regular MCMC
  const MapResult& map;
  const InverseMetric& metric;  // the initial metric (each chain adapts its own copy)
  double eps0;
  std::vector<std::string> columns;
  const FaultInjection& faults;
};

/// One chain. An iteration is one θ-step (one MH proposal, one HMC or NUTS trajectory, one slice
/// update), for FlyMC on p(θ | z); FlyMC resamples z after every `theta_steps`-th iteration. Each
/// θ-step and each z-sweep leaves the joint p(θ, z) invariant (docs/math.md §1.5).
template <class M, bool kFly, class ZUp>
class Chain {
 public:
  Chain(const Shared<M>& sh, int chain_id, ZUp* zup, DrawSink* sink, ChainSession& ses)
      : sh_(sh),
        cfg_(sh.cfg),
        data_(sh.model.data()),
        link_(shard_link(data_)),
        leader_(link_ == nullptr || link_->part() == 0),
        p_(sh.model.dim()),
        id_(chain_id),
        zup_(zup),
        sink_(sink),
        ses_(ses),
        stops_(ses.ck, sh.faults, link_),
        total_(cfg_.warmup + cfg_.iters),
        theta_steps_(cfg_.resolved_theta_steps()),
        rng_(cfg_.seed, static_cast<std::uint64_t>(chain_id)),
        kernel_(cfg_, p_, sh.metric, sh.eps0,
                std::span<const double>(sh.map.theta.data(), sh.map.theta.size())) {
    res_.chain_id = chain_id;
    res_.kept = static_cast<std::size_t>((cfg_.iters + cfg_.thin - 1) / cfg_.thin);
  }

  /// Runs the chain to its end (or to a stop request) and returns what it produced.
  ChainResult run(ChainGauge* gauge) {
    advance(total_, gauge);
    return finish();
  }

  /// Runs the chain on to iteration `end` (warm-up included), or to a stop request; nothing
  /// where it is there already. The first call starts the chain, or resumes it from its saved
  /// state (run_blocks.hpp runs a chain in blocks up to an ESS target).
  void advance(long end, ChainGauge* gauge) {
    if (stage_ == Stage::fresh) begin(gauge);
    if (stage_ != Stage::running || res_.stopped) return;
    for (; pos_ < end; ++pos_) {
      if constexpr (kFly) stop_on_violation(cfg_, counters());
      stop_if_aborted();
      if (stops_.on() && stops_.checkpoint_or_stop(pos_, save_at())) {
        res_.stopped = true;
        return;
      }
      if (pos_ == cfg_.warmup) begin_sampling();
      transition(pos_);
      if (pos_ >= cfg_.warmup) record(pos_);
      if (gauge && ((pos_ & 15) == 15 || pos_ + 1 == end)) publish(*gauge, pos_ + 1);
    }
  }
  long position() const noexcept { return pos_; }
  bool stopped() const noexcept { return res_.stopped; }
  /// The counts so far, warm-up included (auto's pilots price them at a block's end).
  const Counters& counts() const noexcept { return res_.counters; }
  const std::vector<double>& draws() const noexcept { return res_.draws; }
  /// Saves the state where the chain is and stops it, as a stop request would.
  void halt() {
    if (stage_ != Stage::running || res_.stopped) return;
    stops_.halt(pos_, save_at());
    res_.stopped = true;
  }

  /// After the last advance(): timers, results, the draw file's trailer and the final state.
  ChainResult finish() {
    if (stage_ == Stage::over) return std::move(res_);
    double warm, samp;
    session_times(warm, samp);
    ses_.warmup = warm;
    ses_.sampling = samp;
    seg_start_ =
        Clock::now();  // the open segment is in ses_ now: the final save must not add it again
    res_.step_size = kernel_.step_size();
    res_.warmup_seconds = prev_.warmup + warm;
    res_.sampling_seconds = prev_.sampling + samp;
    counters().profile = nullptr;  // points into res_, which is moved out
    res_.kept = res_.lp.size();
    if (res_.stopped) return std::move(res_);
    fill_sampling_results(pos_ - cfg_.warmup);
    if (sink_) sink_->end(res_.warmup_seconds, res_.sampling_seconds, counters());
    if (stops_.on()) save(pos_, true);
    return std::move(res_);
  }

 private:
  using Target = std::conditional_t<kFly, FlyTarget<M>, FullTarget<M>>;

  Counters& counters() noexcept { return res_.counters; }
  /// Saves the chain's unfinished state at an iteration (ChainStops' callback).
  auto save_at() {
    return [this](long it) { save(it, false); };
  }
  /// The chain's start: fresh, resumed, or over before it began (stopped at once, or finished
  /// in an earlier session: its results are then complete).
  void begin(ChainGauge* gauge) {
    const ChainState* st = ses_.state;
    stage_ = Stage::over;
    if (st == nullptr && stops_.stop_requested(0)) {  // stopped before it started: nothing to save
      res_.stopped = true;
      res_.kept = 0;
      return;
    }
    if (st != nullptr && st->finished) {
      finished_earlier(*st, gauge);
      pos_ = st->tally.iteration;
      return;
    }
    pos_ = st == nullptr ? start() : restore(*st, gauge);
    stops_.start(pos_, st != nullptr);
    stage_ = Stage::running;
  }

  /// The chain's objects before θ is known: θ-state, bright set, target, output buffers.
  void construct() {
    s_.theta.assign(p_, 0.0);
    s_.grad.assign(p_, 0.0);
    if (cfg_.profile) counters().profile = &res_.profile;
    if constexpr (kFly) {
      bright_ = BrightSet(data_);
      // Gradient kernels keep ∂ log L̃_n/∂ψ_n per bright datum, so that a z-sweep updates the
      // gradient from the flipped data alone (FlyTarget::apply_flips).
      if (kernel_.needs_gradient()) bright_.enable_coefs(sh_.model.layout().k);
      if (link_ != nullptr) zup_->set_shard(link_);
      target_.emplace(sh_.model, *sh_.bound, bright_);
    } else {
      target_.emplace(sh_.model);
    }
    row_.resize(sh_.columns.size());
    if (cfg_.ess <= 0.0) {  // a run to an ESS target grows its draws block by block
      res_.draws.reserve(res_.kept * p_);
      res_.lp.reserve(res_.kept);
    }
  }

  /// (Re)computes the cached log density (and gradient) at θ from the target's state.
  void refresh(Counters& c) {
    const bool grad = kernel_.needs_gradient();
    if constexpr (kFly) {
      if (grad) {
        s_.logp = target_->eval_grad(s_.theta.data(), s_.grad.data(), c);
        target_->accept();
      } else {
        s_.logp = target_->current();
      }
    } else {
      s_.logp = grad ? target_->eval_grad(s_.theta.data(), s_.grad.data(), c)
                     : target_->eval(s_.theta.data(), c);
    }
  }

  /// A fresh chain: θ0, for FlyMC z ~ p(z | θ0) exactly (one Gibbs pass over all data, in fixed
  /// blocks), the cached density, the draw file's header. Returns the first iteration (0).
  long start() {
    const Stopwatch clock;
    construct();
    seek_z_updater(0);
    detail::initial_theta(cfg_, sh_.map, sh_.model.prior(), rng_, s_.theta.data(), id_);
    if constexpr (kFly) {
      target_->set_current(s_.theta.data());
      ZScratch zs;
      zs.log.keep_rows = link_ != nullptr;
      std::vector<Index> block;
      const std::size_t n = bright_.num_data();
      for (std::size_t lo = 0; lo < n; lo += 4096) {
        const std::size_t hi = std::min(n, lo + 4096);
        block.resize(hi - lo);
        for (std::size_t i = lo; i < hi; ++i) block[i - lo] = static_cast<Index>(i);
        if (link_ != nullptr) {
          gibbs_z_shard(*sh_.bound, data_, bright_, target_->current_padded(), block.data(),
                        block.size(), rng_, counters(), zs, *link_);
        } else {
          gibbs_z(*sh_.bound, data_, bright_, target_->current_padded(), block.data(), block.size(),
                  rng_, counters(), zs);
        }
      }
    }
    refresh(counters());
    if (sink_) sink_->begin(sh_.columns);
    tally_.queries_at_sampling = tally_.queries_at_row = counters().queries;
    session_start(clock.start(), 0);
    return 0;
  }

  /// A chain resumed from `st`. The cached density (and gradient) are recomputed from θ and the
  /// cached log L̃: the same functions on the same values as when they were cached, so
  /// bit-identical, and consistent with this build's kernels even if the run moved to another
  /// machine. Returns the iteration to continue from.
  long restore(const ChainState& st, ChainGauge* gauge) {
    construct();
    rng_.set_state(st.rng);
    seek_z_updater(
        static_cast<std::uint64_t>((st.tally.iteration - st.tally.since_z) / theta_steps_));
    std::copy(st.theta.begin(), st.theta.end(), s_.theta.begin());
    kernel_.load(st.kernel_state);
    Counters scratch;  // not queries of the chain: the uninterrupted run had these cached
    if constexpr (kFly) {
      const std::vector<double> rows =
          link_ != nullptr ? shard_bright_rows(st) : std::vector<double>{};
      bright_.restore(st.bright, st.log_ltilde.data(), st.coefs.data(),
                      rows.empty() ? nullptr : rows.data());
      target_->set_current(s_.theta.data());
      if (kernel_.needs_gradient()) {
        s_.grad = st.grad;  // as the chain held it (a z-sweep may have updated it incrementally)
        s_.logp = target_->current();
      } else {
        refresh(scratch);
      }
    } else {
      refresh(scratch);
    }
    tally_ = st.tally;
    restore_counts(st.counters);
    prev_ = st.timers;
    restore_draws(sampler_columns(cfg_.kernel).size(), p_, ses_.rows, res_);
    if (gauge) gauge->publish(st.tally.iteration);
    session_start(Clock::now(), st.tally.iteration);
    return st.tally.iteration;
  }

  /// The rows of a saved bright set on a shard (stride() doubles per datum, in the state's
  /// order), each from the process that holds it: one exchange.
  std::vector<double> shard_bright_rows(const ChainState& st) {
    const std::size_t stride = data_.stride(), nb = st.bright.size();
    std::vector<double> mine, rows(nb * stride);
    for (std::size_t i = 0; i < nb; ++i)
      if (st.bright[i] < bright_.num_data() && bright_.holds(st.bright[i])) {
        mine.push_back(static_cast<double>(i));
        mine.resize(mine.size() + stride);
        data_.copy_row(bright_.local(st.bright[i]), mine.data() + mine.size() - stride);
      }
    const std::vector<double> all = link_->gather_in_order(mine);
    if (all.size() != nb * (stride + 1))
      throw ConfigError("chain " + std::to_string(id_) +
                        "'s saved bright set names data that no process holds");
    for (std::size_t at = 0; at < all.size(); at += stride + 1)
      std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(at + 1), stride,
                  rows.begin() +
                      static_cast<std::ptrdiff_t>(all[at]) * static_cast<std::ptrdiff_t>(stride));
    return rows;
  }

  /// An updater whose proposals come from a stream of their own (ImplicitZUpdater) gets the
  /// chain's key, from (seed, chain id) alone so that draws do not depend on the thread count,
  /// and the number of sweeps made.
  void seek_z_updater(std::uint64_t sweeps_done) {
    if constexpr (kFly && requires { zup_->set_candidate_stream(0, 0); }) {
      Rng key(cfg_.seed ^ 0x7a5eeb5c0ffee11dULL, static_cast<std::uint64_t>(id_));
      zup_->set_candidate_stream(key(), sweeps_done);
    }
  }

  void restore_counts(const Counters& from) {
    Profile* profile = counters().profile;
    counters() = from;
    counters().profile = profile;
  }

  /// A chain that finished in an earlier session: its results from the state and the draw file.
  void finished_earlier(const ChainState& st, ChainGauge* gauge) {
    restore_draws(sampler_columns(cfg_.kernel).size(), p_, ses_.rows, res_);
    res_.step_size = st.step_size;
    tally_ = st.tally;
    restore_counts(st.counters);
    fill_sampling_results(st.tally.iteration - cfg_.warmup);
    res_.kept = res_.lp.size();
    res_.warmup_seconds = st.timers.warmup;
    res_.sampling_seconds = st.timers.sampling;
    if (gauge) gauge->publish(st.tally.iteration);
  }

  /// This session's timers: its time goes to warm-up until the start of iteration `warmup`.
  void session_start(Clock::time_point chain_start, long it0) {
    seg_start_ = Clock::now();
    session_first_ = it0;
    ses_.z_init = ses_.state == nullptr ? seconds_between(chain_start, seg_start_) : 0.0;
    in_warmup_ = it0 <= cfg_.warmup;
  }
  void session_times(double& warm, double& samp) const {
    const double open = seconds_between(seg_start_, Clock::now());
    warm = ses_.warmup + (in_warmup_ ? open : 0.0);
    samp = ses_.sampling + (in_warmup_ ? 0.0 : open);
  }

  /// End of warm-up: the kernel freezes its adaptation, the draw file gets the adaptation block,
  /// the sampling sums start.
  void begin_sampling() {
    kernel_.end_warmup();
    if (sink_)
      sink_->adaptation(kernel_.step_size(), kernel_.metric().inverse_values(),
                        kernel_.metric().form() == InverseMetric::Form::dense);
    const auto now = Clock::now();
    ses_.warmup += seconds_between(seg_start_, now);
    seg_start_ = now;
    in_warmup_ = false;
    tally_.queries_at_sampling = tally_.queries_at_row = counters().queries;
    tally_.divergences_at_sampling = counters().divergences;
    tally_.window_accept = 0.0;
    tally_.window_steps = 0;
  }

  /// One iteration's transition: a θ-step (adapting in warm-up), then for FlyMC a z-sweep after
  /// every theta_steps-th θ-step (any fixed schedule of θ-steps and z-sweeps leaves the joint
  /// invariant, docs/math.md §1.5).
  void transition(long it) {
    const StepInfo info = kernel_.step(rng_, s_, *target_, counters());
    last_ = info;
    if (it < cfg_.warmup) {
      kernel_.adapt(it, info, s_.theta.data());
    } else {
      tally_.accept_sum += info.accept_stat;
    }
    tally_.window_accept += info.accept_stat;
    ++tally_.window_steps;
    gauge_accept_ += info.accept_stat;
    if constexpr (kFly) {
      if (++tally_.since_z == theta_steps_) {
        tally_.since_z = 0;
        PhaseTimer t(counters().profile, Phase::z_update);
        zup_->update(*sh_.bound, data_, bright_, target_->current_padded(), rng_, counters());
        // log p(θ | z) (and its gradient) under the new z, from the cached values.
        if (kernel_.needs_gradient()) target_->apply_flips(zup_->flips(), s_.grad.data());
        s_.logp = target_->current();
      }
    }
  }

  std::size_t bright_count() const noexcept {
    if constexpr (kFly) {
      return bright_.size();
    } else {
      return data_.total_n();  // every row, of every process of a shard
    }
  }

  /// The live figures of a progress display: only what the loop already holds (the acceptance
  /// sum is kept for the display alone and is not part of the chain's state).
  void publish(ChainGauge& gauge, long iterations) {
    gauge.publish(iterations, gauge_accept_, iterations - session_first_,
                  kFly ? double(bright_count()) : std::numeric_limits<double>::quiet_NaN());
  }

  /// A sampling iteration's sums, and every thin-th one's kept draw and draw-file row.
  void record(long it) {
    const std::size_t nb = bright_count();
    tally_.bright_sum += static_cast<double>(nb);
    if ((it - cfg_.warmup) % cfg_.thin != 0) return;
    PhaseTimer t(counters().profile, Phase::output);
    res_.lp.push_back(s_.logp);
    res_.draws.insert(res_.draws.end(), s_.theta.begin(), s_.theta.end());
    if (sink_) {
      SamplerRow r;
      r.lp = s_.logp;
      r.accept_stat = tally_.window_accept / static_cast<double>(std::max(1L, tally_.window_steps));
      r.stepsize = kernel_.step_size();
      r.treedepth = last_.treedepth;
      r.n_leapfrog = last_.n_leapfrog;
      r.divergent = last_.divergent ? 1.0 : 0.0;
      r.energy = last_.energy;
      r.n_bright = static_cast<double>(nb);
      r.n_queries = static_cast<double>(counters().queries - tally_.queries_at_row);
      fill_draw_row(cfg_.kernel, r, s_.theta.data(), p_, row_);
      sink_->row(row_);
    }
    tally_.queries_at_row = counters().queries;
    tally_.window_accept = 0.0;
    tally_.window_steps = 0;
  }

  /// The chain's state after `it` iterations (ChainState), saved after the draw file is durable.
  void save(long it, bool finished) {
    if (!leader_) return;
    ChainState c = chain_state_head(id_, finished, *sink_, res_.lp.size(), rng_, counters());
    c.theta = s_.theta;
    c.step_size = kernel_.step_size();
    kernel_.save(c.kernel_state);
    c.tally = tally_;
    c.tally.iteration = it;
    double warm, samp;
    session_times(warm, samp);
    c.timers = saved_timers(prev_, ses_, warm, samp);
    if constexpr (kFly) {
      c.bright.assign(bright_.bright_indices(), bright_.bright_indices() + bright_.size());
      c.log_ltilde.assign(bright_.log_ltilde(), bright_.log_ltilde() + bright_.size());
      if (kernel_.needs_gradient()) {
        c.grad = s_.grad;
        c.coefs.assign(bright_.coefs(), bright_.coefs() + bright_.size() * bright_.coef_width());
      }
    }
    stops_.options().store->save_chain(c);
  }

  void fill_sampling_results(long sampling_iters) {
    const double iters = static_cast<double>(std::max(1L, sampling_iters));
    res_.accept_rate = tally_.accept_sum / iters;
    res_.bright_mean = tally_.bright_sum / iters;
    res_.sampling_queries = counters().queries - tally_.queries_at_sampling;
    res_.sampling_divergences = counters().divergences - tally_.divergences_at_sampling;
  }

  const Shared<M>& sh_;
  const RunConfig& cfg_;
  const Dataset& data_;
  RowLink* link_;      // the other processes of a sharded data set (null otherwise)
  const bool leader_;  // keeps the draws and saves the state (every process of a shard holds it)
  const std::size_t p_;
  const int id_;
  ZUp* zup_;
  DrawSink* sink_;
  ChainSession& ses_;
  ChainStops stops_;
  const long total_;
  const int theta_steps_;

  // The chain's state (ChainState in plain values): random stream, θ with its cached density,
  // bright set and target (FlyMC), kernel with its adaptation, loop sums, counters (in res_),
  // timers of earlier sessions.
  Rng rng_;
  ThetaState s_;
  BrightSet bright_;
  std::optional<Target> target_;
  ThetaKernel kernel_;
  ChainTally tally_;
  ChainTimers prev_;

  ChainResult res_;
  StepInfo last_;  // this iteration's θ-step, for its draw-file row (NUTS's columns)
  std::vector<double> row_;
  Clock::time_point seg_start_{};
  bool in_warmup_ = true;
  enum class Stage { fresh, running, over };
  Stage stage_ = Stage::fresh;
  long pos_ = 0;               // the next iteration to run
  long session_first_ = 0;     // the first iteration of this session (a resumed run's restart)
  double gauge_accept_ = 0.0;  // acceptance summed over this session, for ChainGauge only
};

}  // namespace flymc::detail
