#pragma once
// Private: the one skeleton every sampler family's run goes through, so that each family writes
// only what is its own (its statistics and its chains):
//   load     the model built (its constructor checks the labels and features), the checkpoint
//            options checked (refused by a sampler that cannot checkpoint), the data's
//            fingerprint taken where a checkpoint or another process will compare it; "checks";
//   set-up   the MAP fit every chain starts from (found, `pre`'s, or on resume the checkpoint's,
//            the same on every process; "map"), then the family's statistics ("statistics");
//   chains   each chain's session opened (its sink; resuming, its saved state and the rows of its
//            draw file) after a fresh checkpointed run's manifest is written, then the family's
//            chains run, with stops and checkpoints (chain_stops.hpp), to a fixed length or an
//            ESS target (run_blocks.hpp); "chains";
//   summary  the block outcome taken, the wall time apportioned between set-up, warm-up and
//            sampling.
// Every step that may fail on one process of a run in parts, or of a sharded data set, fails on
// all of them (PartSync, agree_on_parts), so that none waits for the others at a later step.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/clock.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/samplers.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/mcmc/run_part.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "run_blocks.hpp"
#include "run_chains.hpp"
#include "run_start.hpp"
#include "setup_clock.hpp"

namespace flymc::detail {

class RunSkeleton {
 public:
  explicit RunSkeleton(const RunRequest& r)
      : r_(r),
        sync_(r.part),
        link_(shard_link(*r.data)),
        leader_(link_ == nullptr || link_->part() == 0),
        phases_(r.progress) {
    phases_.begin("checks");
  }

  /// The other processes of a sharded data set (null otherwise).
  RowLink* link() const noexcept { return link_; }
  /// This process keeps the draws and saves the states (the first of a shard's processes).
  bool leader() const noexcept { return leader_; }
  /// The result filled so far (its family adds its own fields).
  RunResult& result() noexcept { return out_; }

  /// Load: builds the model into `model` from the run's data and configuration.
  template <class M>
  const M& load(std::optional<M>& model) {
    const bool checkpointable = sampler_info(r_.cfg.algo).checkpointable;
    sync_.step([&] {
      // On a shard the first process keeps the draws and saves the chains' states (every
      // process holds the same ones); every process reads them on resume.
      if (checkpointable)
        ck_ = sharded_checkpoint(*r_.data, r_.checkpoint, r_.sinks, leader_);
      else if (r_.checkpoint != nullptr && r_.checkpoint->store)
        throw ConfigError(std::string("--algo ") + to_string(r_.cfg.algo) +
                          " cannot checkpoint or resume yet (--checkpoint-every, --resume)");
      model.emplace(r_.data, r_.cfg);
      // In parts the fingerprint also tells that every process was given the same data.
      if (ck_ != nullptr || !sync_.whole()) fingerprint_ = data_fingerprint(*r_.data);
    });
    phases_.end(ck_ != nullptr || !sync_.whole() ? 2 : 1);
    out_.config = r_.cfg;
    out_.n = r_.data->total_n();
    out_.dim = model->dim();
    out_.names = model->param_names();
    return *model;
  }

  /// Set-up, first step: the MAP fit (RunResult::map).
  template <class M>
  void start(const M& model) {
    phases_.begin("map");
    RunStart st =
        agree_start(sync_, model, r_.cfg, *r_.data, ck_, fingerprint_, r_.pre, out_.warnings);
    out_.map = std::move(st.map);
    manifest_ = std::move(st.manifest);
    phases_.end(st.found ? out_.map.passes : 0);
  }

  /// Set-up, second step: the family's statistics, made by f(), which returns the passes over
  /// the data it made (0: taken from a cache; -1: not counted).
  template <class F>
  void set_up(F&& f) {
    phases_.begin("statistics");
    int passes = -1;
    sync_.step([&] { passes = f(); });
    phases_.end(passes);
  }

  /// Chains: the family prepares them (their metric, shared tables) after this.
  void begin_chains() { phases_.begin("chains"); }

  /// Chains, first step: every session of this process's block of chains, with the draw
  /// columns `columns` and `k` model constants per row of a saved state (FlyMC's bright set).
  ChainSessions& open_sessions(const std::vector<std::string>& columns, std::size_t k) {
    const ChainBlock block = sync_.block(r_.cfg.chains);
    sync_.step([&] {
      agree_on_parts(*r_.data, [&] {
        if (ck_ != nullptr && !ck_->resume && sync_.leader() && leader_)
          start_manifest(*ck_, r_.cfg, *r_.data, fingerprint_, out_.map, setup_clock_.seconds());
        sessions_ =
            detail::open_sessions(r_.cfg, block, ck_, leader_ ? r_.sinks : SinkFactory{}, columns,
                                  r_.data->total_n(), out_.dim, k, run_threads(r_.cfg), leader_);
      });
    });
    // On a sharded data set every process runs every chain, one after another (each chain's
    // steps are collective).
    if (link_ != nullptr)
      for (ChainSession& ses : sessions_.sessions) ses.concurrency = 1.0;
    phases_.end();
    return sessions_;
  }

  /// Chains, second step, and the summary: run(block, sessions) runs the chains of this
  /// process's block into RunResult::chains and returns their BlockOutcome.
  template <class Run>
  RunResult finish(Run&& run) {
    out_.setup_phases = phases_.take();
    const double setup_serial = setup_clock_.seconds();
    if (manifest_) out_.setup_seconds = manifest_->setup_seconds;
    const Stopwatch par_clock;
    if (r_.progress) r_.progress->chains_started.store(true);
    const BlockOutcome b = run(sync_.block(r_.cfg.chains), sessions_);
    take_outcome(b, out_);
    for (const ChainResult& c : out_.chains) out_.stopped = out_.stopped || c.stopped;
    apportion_wall_time(out_, sessions_, setup_serial, par_clock.seconds());
    return std::move(out_);
  }

  /// The same for a family whose chains neither checkpoint nor resume: run(out) runs them and
  /// splits their wall time (run_chains.hpp).
  template <class Run>
  RunResult finish_unsaved(Run&& run) {
    out_.setup_phases = phases_.take();
    out_.setup_seconds = setup_clock_.seconds();
    run(out_);
    return std::move(out_);
  }

 private:
  const RunRequest& r_;
  const PartSync sync_;
  RowLink* const link_;
  const bool leader_;
  const Stopwatch setup_clock_;
  SetupClock phases_;
  const CheckpointOptions* ck_ = nullptr;
  std::uint64_t fingerprint_ = 0;
  std::optional<RunManifest> manifest_;
  ChainSessions sessions_;
  RunResult out_;
};

/// The skeleton of a run of model M, loaded and started (the model checked, the MAP fit found or
/// taken) as it is made.
template <class M>
class ModelRun : public RunSkeleton {
 public:
  explicit ModelRun(const RunRequest& r) : RunSkeleton(r) { start(load(model_)); }
  const M& model() const noexcept { return *model_; }

 private:
  std::optional<M> model_;
};

}  // namespace flymc::detail
