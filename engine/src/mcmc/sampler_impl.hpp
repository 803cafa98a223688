#pragma once
// Private: the chain loop and the multi-chain runner, templates over the model (FireflyModel),
// instantiated once per model in sampler_<model>.cpp so that the models compile in parallel.
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/adaptation.hpp"
#include "flymc/mcmc/metric.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/setup_stats.hpp"
#include "flymc/mcmc/theta_kernels.hpp"
#include "flymc/mcmc/z_updates.hpp"

namespace flymc::detail {

using Clock = std::chrono::steady_clock;
inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Draw-file columns: Stan's sampler columns, flymc's two, then the parameters.
inline std::vector<std::string> column_names(const std::vector<std::string>& params) {
  std::vector<std::string> cols = {"lp__", "accept_stat__", "stepsize__", "n_bright__",
                                   "n_queries__"};
  cols.insert(cols.end(), params.begin(), params.end());
  return cols;
}

/// Kept draws after `it` iterations: sampling iterations si = it' − warmup with si % thin == 0.
inline std::uint64_t kept_after(const RunConfig& cfg, long it) {
  if (it <= cfg.warmup) return 0;
  return static_cast<std::uint64_t>((it - cfg.warmup + cfg.thin - 1) / cfg.thin);
}

/// Per chain, per session: checkpointing and resume inputs, and the session's timer deltas.
struct ChainSession {
  const CheckpointOptions* ck = nullptr;              // null: checkpointing off
  const ChainCheckpoint* state = nullptr;             // resume from this state
  std::vector<std::vector<double>> rows;              // rows already in the draw file (resume)
  double concurrency = 1.0;                           // min(chains, threads) of this session
  double z_init = 0.0, warmup = 0.0, sampling = 0.0;  // this session's timer seconds (out)
};

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
};

/// Initial θ (dense): θ_MAP plus chain-specific jitter in Laplace standard deviations, or a prior
/// draw (a Gaussian with the prior's sd).
template <class M>
void initial_theta(const Shared<M>& sh, Rng& rng, double* theta) {
  const std::size_t p = sh.model.dim();
  for (std::size_t j = 0; j < p; ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    if (sh.cfg.init == Init::map) {
      theta[j] = sh.map.theta[jj] +
                 sh.cfg.init_jitter * std::sqrt(sh.map.covariance(jj, jj)) * rng.normal();
    } else {
      theta[j] = sh.model.prior().sd * rng.normal();
    }
  }
}

/// Fills the draws and lp of a chain from the rows of its draw file.
inline void restore_draws(std::size_t p, std::vector<std::vector<double>>& rows, ChainResult& res) {
  res.draws.reserve(res.kept * p);
  res.lp.reserve(res.kept);
  for (const auto& r : rows) {
    res.lp.push_back(r[0]);
    for (std::size_t j = 0; j < p; ++j) res.draws.push_back(r[5 + j]);
  }
  rows.clear();
  rows.shrink_to_fit();
}

inline void restore_counters(const ChainCheckpoint& st, Counters& cnt) {
  cnt.queries = st.queries;
  cnt.grad_evals = st.grad_evals;
  cnt.divergences = st.divergences;
  cnt.bound_violations = st.bound_violations;
  cnt.bound_clamps = st.bound_clamps;
  cnt.nonfinite = st.nonfinite;
}

/// The chain loop, shared by both algorithms. An iteration is one θ-step (one MH proposal, one
/// HMC trajectory, one slice update), for FlyMC on p(θ | z); FlyMC resamples z after every
/// `theta_steps`-th iteration. Each θ-step and each z-sweep leaves the joint p(θ, z) invariant
/// (MATH.md 1.5). Checkpoints are taken at the top of an iteration: the saved state is everything
/// the rest of the loop reads, so a chain restored from it continues exactly as the original
/// would have.
template <class M, bool kFly, class ZUp>
ChainResult run_chain(const Shared<M>& sh, int chain_id, ZUp* zup, DrawSink* sink,
                      std::atomic<long>* progress, ChainSession& ses) {
  const RunConfig& cfg = sh.cfg;
  const Dataset& data = sh.model.data();
  const std::size_t p = sh.model.dim();
  const CheckpointOptions* ck = ses.ck;
  const ChainCheckpoint* st = ses.state;
  const long total = cfg.warmup + cfg.iters;
  const int theta_steps = cfg.resolved_theta_steps();

  ChainResult res;
  res.chain_id = chain_id;
  res.kept = static_cast<std::size_t>((cfg.iters + cfg.thin - 1) / cfg.thin);
  Counters& cnt = res.counters;
  auto stop_requested = [ck](long it) {
    return ck != nullptr &&
           (it == ck->stop_at || (ck->stop && ck->stop->load(std::memory_order_relaxed)));
  };
  if (st == nullptr && stop_requested(0)) {  // stopped before it started: nothing to save
    res.stopped = true;
    res.kept = 0;
    return res;
  }
  if (st != nullptr && st->finished) {  // done in an earlier session
    restore_draws(p, ses.rows, res);
    res.step_size = st->step_size;
    res.accept_rate = st->accept_sum / static_cast<double>(cfg.iters);
    res.bright_mean = st->bright_sum / static_cast<double>(cfg.iters);
    res.sampling_queries = st->queries - st->queries_at_sampling;
    res.sampling_divergences = st->divergences - st->divergences_at_sampling;
    restore_counters(*st, cnt);
    res.warmup_seconds = st->warmup_seconds;
    res.sampling_seconds = st->sampling_seconds;
    if (progress) progress->store(total, std::memory_order_relaxed);
    return res;
  }

  Rng rng(cfg.seed, static_cast<std::uint64_t>(chain_id));
  ThetaState s;
  s.theta.assign(p, 0.0);
  s.grad.assign(p, 0.0);
  if (st == nullptr) initial_theta(sh, rng, s.theta.data());
  if (cfg.profile) cnt.profile = &res.profile;
  const auto t_start = Clock::now();

  BrightSet bright;
  std::optional<FlyTarget<M>> fly;
  std::optional<FullTarget<M>> full;
  ThetaKernel kernel(cfg, p, sh.metric, sh.eps0);
  const bool grad = kernel.needs_gradient();
  std::vector<double> row(sh.columns.size());
  res.draws.reserve(res.kept * p);
  res.lp.reserve(res.kept);
  double accept_sum = 0.0, bright_sum = 0.0, window_accept = 0.0;
  std::uint64_t queries_at_sampling = 0, queries_at_row = 0, divergences_at_sampling = 0;
  long window_steps = 0, since_z = 0, it0 = 0;
  // The chain's own timers over earlier sessions, and their wall-clock shares.
  double z_prev = 0.0, warm_prev = 0.0, samp_prev = 0.0;
  double wall_z_prev = 0.0, wall_warm_prev = 0.0, wall_samp_prev = 0.0;

  // (Re)computes the cached log density (and gradient) at s.theta from the target's state.
  auto refresh = [&](Counters& c) {
    if constexpr (kFly) {
      if (grad) {
        s.logp = fly->eval_grad(s.theta.data(), s.grad.data(), c);
        fly->accept();
      } else {
        s.logp = fly->current();
      }
    } else {
      s.logp =
          grad ? full->eval_grad(s.theta.data(), s.grad.data(), c) : full->eval(s.theta.data(), c);
    }
  };

  if constexpr (kFly) {
    bright = BrightSet(data);
    // Gradient kernels keep ∂ log L̃_n/∂ψ_n per bright datum, so that a z-sweep updates the
    // gradient from the flipped data alone (FlyTarget::apply_flips).
    if (grad) bright.enable_coefs(sh.model.layout().k);
    fly.emplace(sh.model, *sh.bound, bright);
  } else {
    full.emplace(sh.model);
  }
  if (st == nullptr) {
    if constexpr (kFly) {
      // z ~ p(z | θ0) exactly: one Gibbs pass over all data, in fixed blocks.
      fly->set_current(s.theta.data());
      ZScratch zs;
      std::vector<Index> block;
      for (std::size_t lo = 0; lo < data.n(); lo += 4096) {
        const std::size_t hi = std::min(data.n(), lo + 4096);
        block.resize(hi - lo);
        for (std::size_t i = lo; i < hi; ++i) block[i - lo] = static_cast<Index>(i);
        gibbs_z(*sh.bound, data, bright, fly->current_padded(), block.data(), block.size(), rng,
                cnt, zs);
      }
    }
    refresh(cnt);
    if (sink) sink->begin(sh.columns);
    queries_at_sampling = queries_at_row = cnt.queries;
  } else {
    rng.set_state(st->rng);
    std::copy(st->theta.begin(), st->theta.end(), s.theta.begin());
    kernel.load(st->kernel_state);
    // The cached density (and gradient) are recomputed from θ and the cached log L̃: the same
    // functions on the same values as when they were cached, so bit-identical, and consistent
    // with this build's kernels even if the run moved to another machine.
    Counters scratch;  // not queries of the chain: the uninterrupted run had these cached
    if constexpr (kFly) {
      bright.restore(st->order, static_cast<std::size_t>(st->num_bright), st->log_ltilde.data(),
                     st->coefs.data());
      fly->set_current(s.theta.data());
      if (grad) {
        // The gradient as the chain held it (a z-sweep may have updated it incrementally).
        s.grad = st->grad;
        s.logp = fly->current();
      } else {
        refresh(scratch);
      }
    } else {
      refresh(scratch);
    }
    it0 = st->iteration;
    since_z = st->since_z;
    window_steps = st->window_steps;
    window_accept = st->window_accept;
    accept_sum = st->accept_sum;
    bright_sum = st->bright_sum;
    restore_counters(*st, cnt);
    queries_at_sampling = st->queries_at_sampling;
    divergences_at_sampling = st->divergences_at_sampling;
    queries_at_row = st->queries_at_row;
    z_prev = st->z_init_seconds;
    warm_prev = st->warmup_seconds;
    samp_prev = st->sampling_seconds;
    wall_z_prev = st->wall_z_init;
    wall_warm_prev = st->wall_warmup;
    wall_samp_prev = st->wall_sampling;
    restore_draws(p, ses.rows, res);
    if (progress) progress->store(it0, std::memory_order_relaxed);
  }
  // Timers: this session's time goes to warm-up until the start of iteration `warmup`.
  auto seg_start = Clock::now();
  ses.z_init = st == nullptr ? seconds_between(t_start, seg_start) : 0.0;
  bool in_warmup = it0 <= cfg.warmup;
  auto session_times = [&](double& warm, double& samp) {
    const double open = seconds_between(seg_start, Clock::now());
    warm = ses.warmup + (in_warmup ? open : 0.0);
    samp = ses.sampling + (in_warmup ? 0.0 : open);
  };

  auto save = [&](long it, bool finished) {
    ChainCheckpoint c;
    c.chain_id = chain_id;
    c.finished = finished;
    c.iteration = it;
    c.sink_position = sink->sync();  // the draw file is durable before the state that cites it
    c.kept = res.lp.size();
    c.rng = rng.state();
    c.theta = s.theta;
    c.step_size = kernel.step_size();
    kernel.save(c.kernel_state);
    c.since_z = since_z;
    c.window_steps = window_steps;
    c.window_accept = window_accept;
    c.accept_sum = accept_sum;
    c.bright_sum = bright_sum;
    c.queries = cnt.queries;
    c.grad_evals = cnt.grad_evals;
    c.divergences = cnt.divergences;
    c.bound_violations = cnt.bound_violations;
    c.bound_clamps = cnt.bound_clamps;
    c.nonfinite = cnt.nonfinite;
    c.queries_at_sampling = queries_at_sampling;
    c.divergences_at_sampling = divergences_at_sampling;
    c.queries_at_row = queries_at_row;
    double warm, samp;
    session_times(warm, samp);
    c.z_init_seconds = z_prev + ses.z_init;
    c.warmup_seconds = warm_prev + warm;
    c.sampling_seconds = samp_prev + samp;
    c.wall_z_init = wall_z_prev + ses.z_init / ses.concurrency;
    c.wall_warmup = wall_warm_prev + warm / ses.concurrency;
    c.wall_sampling = wall_samp_prev + samp / ses.concurrency;
    if constexpr (kFly) {
      c.num_bright = bright.size();
      c.order.assign(bright.order(), bright.order() + bright.num_data());
      c.log_ltilde.assign(bright.log_ltilde(), bright.log_ltilde() + bright.size());
      if (grad) {
        c.grad = s.grad;
        c.coefs.assign(bright.coefs(), bright.coefs() + bright.size() * bright.coef_width());
      }
    }
    save_chain_checkpoint(ck->dir, c);
  };

  const long every = ck != nullptr ? ck->every : 0;
  long next_save = every > 0 ? (it0 / every + 1) * every : std::numeric_limits<long>::max();
  long saved_at = st != nullptr ? it0 : -1;  // the state on disk is at this iteration
  for (long it = it0; it < total; ++it) {
    if (ck != nullptr) {
      if (it == next_save) {
        save(it, false);
        saved_at = it;
        next_save += every;
      }
      if (stop_requested(it)) {
        if (!ck->stop_without_saving && saved_at != it) save(it, false);
        res.stopped = true;
        break;
      }
    }
    const bool sampling = it >= cfg.warmup;
    if (it == cfg.warmup) {
      kernel.end_warmup();
      if (sink)
        sink->adaptation(kernel.step_size(), kernel.metric().inverse_values(),
                         kernel.metric().form() == InverseMetric::Form::dense);
      const auto now = Clock::now();
      ses.warmup += seconds_between(seg_start, now);
      seg_start = now;
      in_warmup = false;
      queries_at_sampling = queries_at_row = cnt.queries;
      divergences_at_sampling = cnt.divergences;
      window_accept = 0.0;
      window_steps = 0;
    }
    StepInfo info;
    if constexpr (kFly) {
      info = kernel.step(rng, s, *fly, cnt);
    } else {
      info = kernel.step(rng, s, *full, cnt);
    }
    if (!sampling) {
      kernel.adapt(it, info, s.theta.data());
    } else {
      accept_sum += info.accept_stat;
    }
    window_accept += info.accept_stat;
    ++window_steps;
    if constexpr (kFly) {
      // z is resampled after every theta_steps-th θ-step (MATH.md 1.5: any fixed schedule of
      // θ-steps and z-sweeps leaves the joint invariant).
      if (++since_z == theta_steps) {
        since_z = 0;
        PhaseTimer t(cnt.profile, Phase::z_update);
        zup->update(*sh.bound, data, bright, fly->current_padded(), rng, cnt);
        // log p(θ | z) (and its gradient) under the new z, from the cached values.
        if (grad) fly->apply_flips(zup->flips(), s.grad.data());
        s.logp = fly->current();
      }
    }
    if (sampling) {
      const long si = it - cfg.warmup;
      const std::size_t nb = kFly ? bright.size() : data.n();
      bright_sum += static_cast<double>(nb);
      if (si % cfg.thin == 0) {
        PhaseTimer t(cnt.profile, Phase::output);
        res.lp.push_back(s.logp);
        res.draws.insert(res.draws.end(), s.theta.begin(), s.theta.end());
        if (sink) {
          row[0] = s.logp;
          row[1] = window_accept / static_cast<double>(std::max(1L, window_steps));
          row[2] = kernel.step_size();
          row[3] = static_cast<double>(nb);
          row[4] = static_cast<double>(cnt.queries - queries_at_row);
          std::copy(s.theta.begin(), s.theta.end(), row.begin() + 5);
          sink->row(row);
        }
        queries_at_row = cnt.queries;
        window_accept = 0.0;
        window_steps = 0;
      }
    }
    if (progress && ((it & 1023) == 1023 || it + 1 == total))
      progress->store(it + 1, std::memory_order_relaxed);
  }
  double warm, samp;
  session_times(warm, samp);
  ses.warmup = warm;
  ses.sampling = samp;
  res.step_size = kernel.step_size();
  res.warmup_seconds = warm_prev + warm;
  res.sampling_seconds = samp_prev + samp;
  cnt.profile = nullptr;  // points into res; must not outlive this frame
  if (res.stopped) {
    res.kept = res.lp.size();
    return res;
  }
  res.accept_rate = accept_sum / static_cast<double>(cfg.iters);
  res.bright_mean = bright_sum / static_cast<double>(cfg.iters);
  res.sampling_queries = cnt.queries - queries_at_sampling;
  res.sampling_divergences = cnt.divergences - divergences_at_sampling;
  if (sink) sink->end(res.warmup_seconds, res.sampling_seconds, cnt);
  if (ck != nullptr) save(total, true);
  return res;
}

/// Throws ConfigError unless a loaded chain state fits the run (a state from another run or a
/// damaged file that still passed its checksum).
void check_chain_state(const ChainCheckpoint& c, const RunConfig& cfg, std::size_t n, std::size_t p,
                       std::size_t k, const std::string& dir);

/// Eight draws of the Laplace approximation N(θ_MAP, Σ) from the stream Rng(seed, 0x5eedf1f1),
/// 8 × P dense values.
std::vector<double> laplace_draws(const MapResult& map, std::uint64_t seed);

/// The initial metric and step size of every chain (RunConfig::metric, MATH.md 3).
InverseMetric initial_metric(const RunConfig& cfg, const MapResult& map);
double initial_step_size(const RunConfig& cfg, const MapResult& map, std::size_t p);

/// Runs the chains of `cfg` on model M.
template <FireflyModel M>
RunResult run_model(const RunConfig& cfg, std::shared_ptr<const Dataset> data,
                    const SinkFactory& sinks, Progress* progress,
                    const CheckpointOptions* checkpoint) {
  const CheckpointOptions* ck =
      checkpoint != nullptr && !checkpoint->dir.empty() ? checkpoint : nullptr;
  if (ck != nullptr) {
    if (ck->every < 0)
      throw ConfigError("--checkpoint-every must be >= 1, got " + std::to_string(ck->every));
    if (!sinks)
      throw ConfigError(
          "checkpointing needs a draw sink per chain: the draws before a "
          "checkpoint are read back from it on resume");
  }
  const auto t0 = Clock::now();
  const M model(data, cfg);  // checks the data (labels, features) before anything else
  RunResult out;
  out.config = cfg;
  out.n = data->n();
  out.dim = model.dim();
  out.names = model.param_names();
  const std::uint64_t fingerprint = ck != nullptr ? data_fingerprint(*data) : 0;
  std::optional<RunManifest> manifest;
  if (ck != nullptr && ck->resume) {
    manifest = load_run_manifest(ck->dir);
    const std::string where = run_manifest_path(ck->dir);
    if (manifest->n != data->n() || manifest->d != data->d() || manifest->data_hash != fingerprint)
      throw DataError(data->source() + ": the data differ from those of the checkpointed run (" +
                      std::to_string(manifest->n) + " x " + std::to_string(manifest->d) +
                      " with another fingerprint in " + where + ", now " +
                      std::to_string(data->n()) + " x " + std::to_string(data->d()) +
                      "): resume with the original data file");
    // Every stored option must match (threads and profile are not stored).
    auto options = [](const RunConfig& c) {
      RunManifest m;
      m.config = c;
      return encode_checkpoint(m);
    };
    if (options(cfg) != options(manifest->config))
      throw ConfigError(where + ": the run configuration differs from the checkpointed run's");
    if (manifest->simd != kernels::simd_name())
      out.warnings.push_back(
          "the run was started by a build with " + manifest->simd + " kernels and resumed with " +
          kernels::simd_name() +
          " kernels: the chains remain valid, but their draws are not bit-identical to an "
          "uninterrupted run's");
  }
  // On resume the MAP fit is the checkpointed one: the bounds and metric built from it are then
  // those of the first session, bit for bit.
  if (manifest && static_cast<std::size_t>(manifest->map.theta.size()) != model.dim())
    throw ConfigError(run_manifest_path(ck->dir) + ": the MAP point has " +
                      std::to_string(manifest->map.theta.size()) + " entries, the model " +
                      std::to_string(model.dim()) + " (not a checkpoint of this run, or damaged)");
  out.map = manifest ? manifest->map : model.find_map();
  // The bound, and what is estimated from 8 draws of the Laplace approximation (a random stream
  // of its own, so the chains' streams are untouched and the estimates are the same at any
  // thread count): each datum's expected bright probability, for the automatic slack and the
  // per-datum z-proposal rates.
  std::optional<typename M::Bound> bound;
  std::optional<ZRates> rates;
  out.bound_slack = std::max(cfg.bound_slack, 0.0);
  // The automatic q is 0.01 up to N = 10,000 whatever the bright count (auto_q_dark_to_bright).
  out.q_dark_to_bright =
      cfg.q_dark_to_bright > 0.0 ? cfg.q_dark_to_bright : auto_q_dark_to_bright(0.0, data->n());
  if (cfg.algo == Algo::flymc) {
    RunConfig bc = cfg;
    bc.bound_slack = out.bound_slack;
    bound.emplace(M::Bound::make(model, bc, out.map));
    const bool auto_slack = cfg.bound_slack < 0.0;
    const bool per_datum = cfg.z == ZUpdate::implicit && cfg.q_per_datum;
    const bool auto_q =
        cfg.z == ZUpdate::implicit && cfg.q_dark_to_bright < 0.0 && out.q_dark_to_bright < 0.01;
    if (auto_slack || per_datum || auto_q) {
      std::vector<double> dark =
          mean_dark_probability(*bound, *data, model.layout(), laplace_draws(out.map, cfg.seed));
      if (auto_slack) {
        // ε = ¼ · (expected bright count)/N: about a quarter more bright data, in exchange for
        // no bright datum pulling log p(θ | z) to −∞ at its tight point (MATH.md 1.5). Measured
        // on Fashion-MNIST 7-vs-9 (README, "Levers"), where it comes to ε ≈ 0.003.
        double bright = 0.0;
        for (double m : dark) bright += 1.0 - m;
        out.bound_slack = 0.25 * bright / static_cast<double>(data->n());
        bc.bound_slack = out.bound_slack;
        bound.emplace(M::Bound::make(model, bc, out.map));
        const double shrink = std::exp(-out.bound_slack);
        for (double& m : dark) m *= shrink;  // B/L with the slack: e^{−ε}·B/L
      }
      if (auto_q) {
        double bright = 0.0;
        for (double m : dark) bright += 1.0 - m;
        out.q_dark_to_bright = auto_q_dark_to_bright(bright, data->n());
      }
      if (per_datum) {
        for (double& m : dark) m = 1.0 - m;
        rates.emplace(per_datum_rates(dark, out.q_dark_to_bright));
      }
    }
    if (cfg.test_bound_excess > 0.0) bound->raise_for_testing(cfg.test_bound_excess);
  }
  if (ck != nullptr && !ck->resume) {
    remove_checkpoints(ck->dir);  // stale states of an earlier run in the same directory
    RunManifest m;
    m.config = cfg;
    m.checkpoint_every = ck->every;
    m.data_arg = ck->data_arg;
    m.data_path = ck->data_path;
    m.n = data->n();
    m.d = data->d();
    m.data_hash = fingerprint;
    m.map = out.map;
    m.setup_seconds = seconds_between(t0, Clock::now());
    m.simd = kernels::simd_name();
    save_run_manifest(ck->dir, m);
  }
  const double setup_serial = seconds_between(t0, Clock::now());

  const std::size_t p = out.dim;
  const InverseMetric metric = initial_metric(cfg, out.map);
  const double eps0 = initial_step_size(cfg, out.map, p);
  const Shared<M> sh{cfg,    model, bound ? &*bound : nullptr, out.map,
                     metric, eps0,  column_names(out.names)};

  const int nchains = cfg.chains;
  const auto nc = static_cast<std::size_t>(nchains);
  const int threads = cfg.threads > 0 ? cfg.threads : tbb::info::default_concurrency();
  out.chains.resize(nc);
  std::vector<std::exception_ptr> errors(nc);
  std::vector<std::unique_ptr<DrawSink>> chain_sinks(nc);
  std::vector<std::optional<ChainCheckpoint>> states(nc);
  std::vector<ChainSession> sessions(nc);
  double prev_wall_z = 0.0, prev_wall_w = 0.0, prev_wall_s = 0.0;
  for (std::size_t c = 0; c < nc; ++c) {
    const int id = static_cast<int>(c) + 1;
    if (sinks) chain_sinks[c] = sinks(id);
    ChainSession& ses = sessions[c];
    ses.ck = ck;
    ses.concurrency = static_cast<double>(std::max(1, std::min(nchains, threads)));
    if (ck == nullptr || !ck->resume) continue;
    // Every chain state and draw file is checked before any chain runs.
    states[c] = load_chain_checkpoint(ck->dir, id);
    if (!states[c]) continue;  // never saved: the chain starts afresh
    const ChainCheckpoint& st = *states[c];
    check_chain_state(st, cfg, data->n(), p, model.layout().k, ck->dir);
    if (!chain_sinks[c])
      throw ConfigError("resuming needs a draw sink for chain " + std::to_string(id));
    ses.rows = chain_sinks[c]->resume(sh.columns, st.sink_position);
    if (ses.rows.size() != st.kept)
      throw ConfigError(chain_checkpoint_path(ck->dir, id) + ": records " +
                        std::to_string(st.kept) + " kept draws, the draw file holds " +
                        std::to_string(ses.rows.size()) + " up to the recorded length");
    ses.state = &st;
    prev_wall_z += st.wall_z_init;
    prev_wall_w += st.wall_warmup;
    prev_wall_s += st.wall_sampling;
  }
  if (manifest) out.setup_seconds = manifest->setup_seconds;

  tbb::task_arena arena(threads);
  const auto t_par = Clock::now();
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int>(0, nchains, 1),
        [&](const tbb::blocked_range<int>& r) {
          for (int c = r.begin(); c != r.end(); ++c) {
            const auto ci = static_cast<std::size_t>(c);
            try {
              DrawSink* sink = chain_sinks[ci].get();
              std::atomic<long>* prog = progress ? &progress->done[ci] : nullptr;
              ChainSession& ses = sessions[ci];
              if (cfg.algo == Algo::full) {
                out.chains[ci] =
                    run_chain<M, false, ImplicitZUpdater>(sh, c + 1, nullptr, sink, prog, ses);
              } else if (cfg.z == ZUpdate::implicit) {
                ImplicitZUpdater z =
                    rates ? ImplicitZUpdater(*rates) : ImplicitZUpdater(out.q_dark_to_bright);
                out.chains[ci] = run_chain<M, true>(sh, c + 1, &z, sink, prog, ses);
              } else {
                ExplicitZUpdater z(cfg.resample_fraction);
                out.chains[ci] = run_chain<M, true>(sh, c + 1, &z, sink, prog, ses);
              }
              chain_sinks[ci].reset();  // closes the file in the chain's own task
            } catch (...) {
              errors[ci] = std::current_exception();
            }
          }
        },
        tbb::simple_partitioner());
  });
  const double par_seconds = seconds_between(t_par, Clock::now());
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (const auto& c : out.chains) out.stopped = out.stopped || c.stopped;

  // Wall time of the parallel region, split between z set-up, warm-up and sampling in proportion
  // to the chains' own timers (chains may outnumber threads, so there is no common barrier).
  // Earlier sessions of a resumed run add their chains' timers divided by their concurrency.
  double zi = 0.0, w = 0.0, s = 0.0;
  for (const ChainSession& ses : sessions) {
    zi += ses.z_init;
    w += ses.warmup;
    s += ses.sampling;
  }
  const double tot = std::max(zi + w + s, 1e-300);
  out.setup_seconds += setup_serial + prev_wall_z + par_seconds * zi / tot;
  out.warmup_seconds = prev_wall_w + par_seconds * w / tot;
  out.sampling_seconds = prev_wall_s + par_seconds * s / tot;
  return out;
}

}  // namespace flymc::detail
