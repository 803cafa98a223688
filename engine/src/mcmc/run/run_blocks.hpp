#pragma once
// Private: running a run's chains to its end, shared by the sampler families whose chains can
// continue (FlyMC and regular MCMC in run_model.hpp, scalable MH in smh/): all at once for a
// fixed length, or block after block up to an ESS target (flymc/mcmc/ess_target.hpp), the chain
// objects kept between blocks. A chain type C has advance(end, gauge) (run on to iteration
// `end`, warm-up included; the first call starts or resumes the chain), position(), stopped(),
// halt() (save the state where it is and stop, as if asked to), draws() (the kept draws so far)
// and finish() (the ChainResult; the chain's draw sink is closed by the caller's `finish`).
#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "flymc/core/clock.hpp"
#include "flymc/core/row_link.hpp"
#include "flymc/mcmc/auto/cost_model.hpp"
#include "flymc/mcmc/ess_target.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "run_chains.hpp"

namespace flymc::detail {

/// How the processes of a run agree at a block's end. Default (both empty): this process runs
/// every chain.
struct BlockSync {
  /// The chains are dealt to processes (run_part.hpp): given this process's chains' kept draws,
  /// returns every chain's in chain order, and raises `flag` when any process raised it.
  std::function<std::vector<std::vector<double>>(const std::vector<std::vector<double>>&,
                                                 bool& flag)>
      gather;
  /// Every process runs every chain (a sharded data set): replaces `values` by the first
  /// process's, so that all take its decision.
  std::function<void(std::vector<double>& values)> from_leader;
};

/// What a run's blocks came to.
struct BlockOutcome {
  long sampling_iters = 0;  ///< per chain, at the last block's end
  bool reached = false;     ///< the ESS target was met
  bool timed_out = false;   ///< RunConfig::max_seconds ended the run first
  TargetStatus status;      ///< the last check (ESS-target runs only)
};

/// The agreement of a run's processes at a block's end: through `part` when its chains are dealt
/// to processes, through `link` when every process runs every chain on its shard of the data.
inline BlockSync block_sync(const RunPart* part, RowLink* link) {
  BlockSync s;
  if (link != nullptr) {
    s.from_leader = [link](std::vector<double>& v) {
      const std::vector<double> all = link->all_gather(v);
      std::copy_n(all.begin(), v.size(), v.begin());
    };
  } else if (part != nullptr && part->gather) {
    s.gather = part->gather;
  }
  return s;
}

/// The run's length and its target's outcome into `out` (config.iters: the iterations run).
inline void take_outcome(const BlockOutcome& b, RunResult& out) {
  if (out.config.ess <= 0.0) return;
  out.config.iters = std::max(1L, b.sampling_iters);
  out.target_reached = b.reached;
  out.target_timed_out = b.timed_out;
  out.target = b.status;
}

namespace blocks {

/// The kept draws of `sampling_iters` sampling iterations per chain, agreed between processes.
/// `flag` comes in raised when a chain of this process stopped on request (its draws end before
/// the block's) and goes out raised when any process's did: there is then nothing to check.
template <class C>
TargetStatus check(const RunConfig& cfg, std::size_t dim, long sampling_iters,
                   const std::vector<std::unique_ptr<C>>& chains, const BlockSync& sync,
                   bool& flag) {
  std::vector<const std::vector<double>*> ptrs;
  std::vector<std::vector<double>> all;
  if (sync.gather) {
    const auto rows = static_cast<std::size_t>((sampling_iters + cfg.thin - 1) / cfg.thin);
    std::vector<std::vector<double>> mine;
    if (!flag)
      for (const auto& c : chains)
        mine.emplace_back(c->draws().begin(),
                          c->draws().begin() + static_cast<std::ptrdiff_t>(rows * dim));
    all = sync.gather(mine, flag);
    if (flag) return {};
    for (const auto& v : all) ptrs.push_back(&v);
  } else {
    if (flag) return {};  // (on a shard every process stops at the same iteration)
    for (const auto& c : chains) ptrs.push_back(&c->draws());
  }
  TargetStatus s = target_status(ptrs, dim, cfg, sampling_iters);
  if (sync.from_leader) {
    std::vector<double> v = {s.reached ? 1.0 : 0.0, s.min_ess_bulk, s.min_ess_tail, s.max_rhat,
                             flag ? 1.0 : 0.0};
    sync.from_leader(v);
    s.reached = v[0] != 0.0;
    s.min_ess_bulk = v[1];
    s.min_ess_tail = v[2];
    s.max_rhat = v[3];
    flag = v[4] != 0.0;
  }
  return s;
}

}  // namespace blocks

/// Whether a run with RunConfig::give_up_cost gives up at a block's end after `sampling`
/// core-seconds of sampling (the cost model's price of its counted work): its bulk ESS, growing
/// in proportion to the iterations, would reach the target only after more core-seconds of
/// sampling than that. The bulk ESS alone: the tail ESS of a short run is often still near 0
/// while the warm-up's transient passes, and the bulk ESS, never below the smaller of the two,
/// makes the rule err towards going on.
inline bool hopeless(const RunConfig& cfg, const TargetStatus& s, double sampling) {
  if (cfg.give_up_cost <= 0.0 || s.min_ess_bulk >= cfg.ess) return false;
  return sampling * cfg.ess / std::max(s.min_ess_bulk, 1.0) > cfg.give_up_cost;
}

/// The core-seconds of the chains' counted work so far, warm-up included.
template <class C>
double priced_work(const RunConfig& cfg, const CostShape& shape,
                   const std::vector<std::unique_ptr<C>>& chains) {
  Work w;
  for (const auto& ch : chains)
    w += Work{static_cast<double>(ch->position()), static_cast<double>(ch->counts().queries),
              static_cast<double>(ch->counts().grad_evals)};
  return work_seconds(cfg, shape, w);
}

/// Whether the run's priced work ends it at this block's end (RunConfig::give_up_cost and
/// max_cost; auto's pilots, all of whose chains run in one process): a function of the counted
/// work alone, so the same at any load and thread count. `s` is the sampling iterations so far,
/// `next` where the next block would end.
template <class C>
bool out_of_budget(const RunConfig& cfg, const CostShape& shape,
                   const std::vector<std::unique_ptr<C>>& chains, const TargetStatus& status,
                   long s, long next) {
  if (cfg.give_up_cost <= 0.0 && cfg.max_cost <= 0.0) return false;
  const double spent = priced_work(cfg, shape, chains);
  const double pace = spent / static_cast<double>(std::max(1L, cfg.warmup + s));
  if (cfg.max_cost > 0.0 && spent + pace * static_cast<double>(next - s) > cfg.max_cost)
    return true;
  return hopeless(cfg, status, pace * static_cast<double>(s));
}

/// Runs chains `first_id` .. `first_id + nchains - 1` of `cfg` to the run's end. `make(i)`
/// builds chain i of the block (a std::unique_ptr<C>) in its own task; `finish(i, chain)` returns
/// its ChainResult (and closes its sink) in its own task. `in_turn`: one chain after another
/// (chains on a shard of the data).
/// `shape` prices the chains' work for RunConfig::give_up_cost and max_cost; its `p` is the
/// draws' width.
template <class C, class Make, class Finish>
BlockOutcome run_blocks(const RunConfig& cfg, const CostShape& shape, int nchains, int first_id,
                        bool in_turn, Progress* progress, Make&& make, Finish&& finish,
                        std::vector<ChainResult>& results, const BlockSync& sync = {}) {
  const std::size_t dim = shape.p;
  const int threads = run_threads(cfg);
  results.resize(static_cast<std::size_t>(nchains));
  auto gauge = [&](int i) -> ChainGauge* {
    return progress ? &progress->chains[static_cast<std::size_t>(first_id - 1 + i)] : nullptr;
  };
  BlockOutcome out;
  if (cfg.ess <= 0.0) {  // a fixed length: each chain runs through in one task
    for_each_chain(
        nchains, threads,
        [&](int i) {
          std::unique_ptr<C> ch = make(i);
          ch->advance(cfg.warmup + cfg.iters, gauge(i));
          results[static_cast<std::size_t>(i)] = finish(i, *ch);
        },
        in_turn);
    out.sampling_iters = cfg.iters;
    return out;
  }
  std::vector<std::unique_ptr<C>> chains(static_cast<std::size_t>(nchains));
  const Stopwatch clock;
  long s = first_block_end(cfg);
  for (;;) {
    if (progress) progress->block_end.store(cfg.warmup + s, std::memory_order_relaxed);
    for_each_chain(
        nchains, threads,
        [&](int i) {
          auto& ch = chains[static_cast<std::size_t>(i)];
          if (!ch) ch = make(i);
          ch->advance(cfg.warmup + s, gauge(i));
        },
        in_turn);
    bool stop = false;
    long reach = std::numeric_limits<long>::max();
    for (const auto& ch : chains) {
      stop = stop || ch->stopped();
      reach = std::min(reach, ch->position());
    }
    // Chains that finished in an earlier session cannot go on: the run ended where they are.
    if (!stop && reach < cfg.warmup + s) s = std::max(0L, reach - cfg.warmup);
    bool flag = stop;
    out.status = blocks::check(cfg, dim, s, chains, sync, flag);
    stop = flag;
    if (progress)
      progress->ess_now.store(std::min(out.status.min_ess_bulk, out.status.min_ess_tail),
                              std::memory_order_relaxed);
    if (stop) {  // a chain stopped on request: the others save where they are and stop too
      for (auto& ch : chains) ch->halt();
      break;
    }
    out.reached = out.status.reached;
    if (out.reached || s >= cfg.iters || reach < cfg.warmup + s) break;
    // The clock ends a run only at a block's end, the last one that fits: when the next block,
    // at the pace of the iterations so far, would end past max_seconds. (It only cuts: where the
    // blocks end never depends on it.) The first process's clock decides.
    const long next = next_block_end(cfg, out.status);
    const double elapsed = clock.seconds();
    const double pace = elapsed / static_cast<double>(std::max(1L, cfg.warmup + s));
    bool late =
        cfg.max_seconds > 0.0 && (elapsed >= cfg.max_seconds ||
                                  elapsed + pace * static_cast<double>(next - s) > cfg.max_seconds);
    late = late || out_of_budget(cfg, shape, chains, out.status, s, next);
    if (sync.from_leader) {
      std::vector<double> v = {late ? 1.0 : 0.0};
      sync.from_leader(v);
      late = v[0] != 0.0;
    } else if (sync.gather) {
      sync.gather({}, late);
    }
    if (late) {
      out.timed_out = true;
      break;
    }
    s = next;
  }
  out.sampling_iters = s;
  for_each_chain(
      nchains, threads,
      [&](int i) {
        auto& ch = chains[static_cast<std::size_t>(i)];
        results[static_cast<std::size_t>(i)] = finish(i, *ch);
        ch.reset();
      },
      in_turn);
  return out;
}

}  // namespace flymc::detail
