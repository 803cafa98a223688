#pragma once
/// @file state_store.hpp
/// What a checkpointed run saves and restores, and the interface through which it does: the run
/// defines the states (RunManifest here, ChainState in chain_state.hpp) and calls a StateStore;
/// where and how they are kept is the store's business. flymc/io/checkpoint.hpp implements it
/// with one file per state in a directory (checkpoint_directory()), as DrawSink is implemented by
/// the Stan CSV writer: the sampler never names a file.
#include <cstdint>
#include <optional>
#include <string>

#include "flymc/core/config.hpp"
#include "flymc/mcmc/chain_state.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// What a resumed run needs besides the chain states.
struct RunManifest {
  RunConfig config;           ///< `threads` and `profile` are not stored (free on resume)
  long checkpoint_every = 0;  ///< K: chains save their state every K iterations (0: only on stop)
  std::string data_arg;       ///< the data file as given (written into the draw files' config)
  std::string data_path;      ///< its absolute path, loaded on resume
  std::uint64_t n = 0, d = 0, data_hash = 0;  ///< data_fingerprint() of the data
  MapResult map;               ///< the MAP fit (bounds and proposal scale are rebuilt from it)
  double setup_seconds = 0.0;  ///< serial set-up time of the first session
  std::string simd;            ///< kernels::simd_name() of the build that started the run
};

/// Whether two configurations agree on every option a checkpoint stores (all but `threads` and
/// `profile`, which a resumed run may change).
bool same_stored_options(const RunConfig& a, const RunConfig& b);

/// Keeps a run's manifest and its chains' latest states. Every save replaces the previous
/// version whole: a process killed at any instant leaves the old or the new one.
///
/// Thread safety: the chains of a run call save_chain() concurrently, each for its own id;
/// the other functions are called by one thread while no chain runs.
class StateStore {
 public:
  virtual ~StateStore() = default;
  /// Removes every saved state (the stale states of an earlier run in the same place).
  virtual void clear() = 0;
  virtual void save_manifest(const RunManifest& m) = 0;
  /// @throw ConfigError if there is no manifest, or it is unreadable or damaged.
  virtual RunManifest load_manifest() const = 0;
  virtual void save_chain(const ChainState& c) = 0;
  /// Chain `chain_id`'s state, or nullopt if it never saved one.
  /// @throw ConfigError if the state exists but is unreadable, damaged or another chain's.
  virtual std::optional<ChainState> load_chain(int chain_id) const = 0;
  /// Names for messages: where the manifest and chain `chain_id`'s state are kept.
  virtual std::string manifest_name() const = 0;
  virtual std::string chain_name(int chain_id) const = 0;
};

}  // namespace flymc
