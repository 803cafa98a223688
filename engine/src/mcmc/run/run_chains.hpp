#pragma once
// Private: running the independent chains of one run, shared by every sampler family (FlyMC and
// regular MCMC in run_model.hpp, the approximate subsampling samplers in minibatch/, the
// piecewise-deterministic samplers in pdmp/). One oneTBB task per chain in an arena of the
// run's threads; a chain's exception is kept and rethrown after every chain has ended, so no
// chain is abandoned half-written. Each chain draws from its own stream keyed by (seed, chain
// id), so nothing here can make the draws depend on the thread count.
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/model.hpp"
#include "setup_clock.hpp"

namespace flymc::detail {

/// The worker threads of a run: cfg.threads, or all cores for 0.
inline int run_threads(const RunConfig& cfg) {
  return cfg.threads > 0 ? cfg.threads : tbb::info::default_concurrency();
}

/// The abort flag of the for_each_chain whose chain the calling thread runs (null outside one):
/// raised when one of its chains has thrown, so that the others stop early (chain_aborted()).
/// Every chain of one call shares the flag, so a thread that runs another chain of the same call
/// while it waits inside its own sees the same one.
inline thread_local std::atomic<bool>* t_chain_abort = nullptr;

/// Thrown by a chain that stops because another chain of its run has failed (not an error of
/// its own: for_each_chain drops it).
struct ChainAborted {};

/// Throws ChainAborted if another chain of the running for_each_chain has failed: a chain asks
/// at the top of each iteration. No draw depends on it: it only ends a run that is going to
/// throw.
inline void stop_if_aborted() {
  if (t_chain_abort != nullptr && t_chain_abort->load(std::memory_order_relaxed))
    throw ChainAborted{};
}

/// Calls one_chain(c) for c in [0, nchains) as tasks of an arena of `threads` threads, then
/// rethrows the first chain's exception (in chain order) if any chain threw; the other chains
/// stop at their next iteration once one has thrown (chain_aborted). `in_turn`: one chain after
/// another in chain order, each with the arena's threads for its own parallel work (chains on a
/// shard of the data make collective calls, which every process makes in the same order); the
/// chains after one that threw are not started.
template <class OneChain>
void for_each_chain(int nchains, int threads, OneChain&& one_chain, bool in_turn = false) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(nchains));
  std::atomic<bool> abort{false};
  auto guarded = [&](int c) {
    std::atomic<bool>* outer = t_chain_abort;
    t_chain_abort = &abort;
    try {
      one_chain(c);
    } catch (const ChainAborted&) {  // another chain's error is the run's
    } catch (...) {
      errors[static_cast<std::size_t>(c)] = std::current_exception();
      abort.store(true, std::memory_order_relaxed);
    }
    t_chain_abort = outer;
  };
  tbb::task_arena arena(threads);
  arena.execute([&] {
    if (in_turn) {
      for (int c = 0; c < nchains && !abort.load(std::memory_order_relaxed); ++c) guarded(c);
      return;
    }
    tbb::parallel_for(
        tbb::blocked_range<int>(0, nchains, 1),
        [&](const tbb::blocked_range<int>& r) {
          for (int c = r.begin(); c != r.end(); ++c) guarded(c);
        },
        tbb::simple_partitioner());
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Splits `par`, the wall seconds of the chains' parallel region, between warm-up and sampling in
/// proportion to the chains' own timers (chains may outnumber threads: there is no common barrier).
inline void split_wall_time(RunResult& out, double par) {
  double w = 0.0, s = 0.0;
  for (const auto& ch : out.chains) {
    w += ch.warmup_seconds;
    s += ch.sampling_seconds;
  }
  const double tot = std::max(w + s, 1e-300);
  out.warmup_seconds = par * w / tot;
  out.sampling_seconds = par * s / tot;
}

/// Runs the chains of a sampler without checkpoints: `make_chain(chain_id, sink)` builds chain
/// chain_id (1-based) writing to `sink` (null without sinks), and its `run(progress)` returns
/// the ChainResult. The sink is made and closed in the chain's own task. Fills out.chains and
/// splits the parallel region's wall time between warm-up and sampling in proportion to the
/// chains' own timers (chains may outnumber threads, so there is no common barrier).
/// `in_turn`: one chain after another, in chain order (chains on a shard of the data).
template <class MakeChain>
void run_independent_chains(const RunConfig& cfg, const SinkFactory& sinks, Progress* progress,
                            RunResult& out, MakeChain&& make_chain, bool in_turn = false) {
  const int nchains = cfg.chains;
  out.chains.resize(static_cast<std::size_t>(nchains));
  const Stopwatch par_clock;
  if (progress) progress->chains_started.store(true);
  for_each_chain(
      nchains, run_threads(cfg),
      [&](int c) {
        const auto ci = static_cast<std::size_t>(c);
        std::unique_ptr<DrawSink> sink = sinks ? sinks(c + 1) : nullptr;
        out.chains[ci] =
            make_chain(c + 1, sink.get()).run(progress ? &progress->chains[ci] : nullptr);
      },
      in_turn);
  split_wall_time(out, par_clock.seconds());
}

/// The MAP fit a fresh run starts from: `pre`'s when given (checked against the model's
/// dimension), else a search.
template <class M>
MapResult start_map(const M& model, const Precomputed& pre, bool& found) {
  found = !pre.map;
  if (found) return model.find_map();
  if (static_cast<std::size_t>(pre.map->theta.size()) != model.dim())
    throw ConfigError("the precomputed MAP fit has " + std::to_string(pre.map->theta.size()) +
                      " coefficients, the model " + std::to_string(model.dim()));
  return *pre.map;
}

/// The iteration loop of a chain that makes its own moves (the approximate samplers, SMH): warm-up
/// iterations, then sampling ones with a kept draw every thin-th, the gauge every 16 iterations;
/// the warm-up and sampling wall times go to `res`. `end_warmup()`, `transition(it)`,
/// `record(it)` and `publish(gauge, iterations)` are the chain's. A resumed chain starts at
/// iteration `first`; `stop_at_top(it)`, asked before each iteration's work, ends the loop early
/// when it returns true (a checkpointed chain saves its state there).
template <class EndWarmup, class Transition, class Record, class Publish,
          class StopAtTop = bool (*)(long)>
void own_moves_loop(
    const RunConfig& cfg, ChainResult& res, ChainGauge* gauge, EndWarmup&& end_warmup,
    Transition&& transition, Record&& record, Publish&& publish, long first = 0,
    StopAtTop&& stop_at_top = [](long) { return false; }) {
  const long total = cfg.warmup + cfg.iters;
  Stopwatch warm_clock;
  Clock::time_point sampling_start = Clock::now();
  for (long it = first; it < total; ++it) {
    stop_if_aborted();
    if (stop_at_top(it)) break;
    if (it == cfg.warmup) {
      end_warmup();
      res.warmup_seconds = warm_clock.seconds();
      sampling_start = Clock::now();
    }
    transition(it);
    if (it >= cfg.warmup) record(it);
    if (gauge && ((it & 15) == 15 || it + 1 == total)) publish(*gauge, it + 1);
  }
  res.sampling_seconds = seconds_between(sampling_start, Clock::now());
}

/// Chain `chain`'s starting point (dense θ), the same for every sampler family: the map's
/// chain_starts where given (auto's pilot's draws), else θ_MAP plus chain-specific jitter of
/// cfg.init_jitter Laplace standard deviations, or a draw near the prior (a Gaussian with each
/// coordinate's location and Prior::init_sd; RunConfig::validate refuses it for a flat prior).
inline void initial_theta(const RunConfig& cfg, const MapResult& map, const Prior& prior, Rng& rng,
                          double* theta, int chain) {
  const auto p = map.theta.size();
  if (!map.chain_starts.empty()) {
    const Vec& s = map.chain_starts[static_cast<std::size_t>(std::max(chain - 1, 0)) %
                                    map.chain_starts.size()];
    if (s.size() != p) throw ConfigError("a chain's starting point has the wrong dimension");
    std::copy_n(s.data(), p, theta);
    return;
  }
  for (Eigen::Index j = 0; j < p; ++j) {
    const auto jj = static_cast<std::size_t>(j);
    theta[jj] =
        cfg.init == Init::map
            ? map.theta[j] + cfg.init_jitter * std::sqrt(map.covariance(j, j)) * rng.normal()
            : prior.term(jj).loc + prior.init_sd(jj) * rng.normal();
  }
}

}  // namespace flymc::detail
