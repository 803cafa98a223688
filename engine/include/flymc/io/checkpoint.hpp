#pragma once
/// @file checkpoint.hpp
/// Checkpoint files of a run, kept in one directory (`DIR/checkpoint` for the CLI):
///
///     run.ckpt        the run manifest: configuration, data identity, the MAP fit. Written once,
///                     before the chains start.
///     chain-<k>.ckpt  chain k's complete state at an iteration boundary, with the byte length
///                     of its draw file at that moment. Rewritten by chain k alone, every K
///                     iterations, when stopped, and once more when it finishes.
///
/// Every file is replaced atomically (temporary file, fsync, rename, fsync of the directory), so
/// a process killed at any instant leaves either the old or the new version, never a torn one.
/// Chains are independent (own random stream, own draw file), so each resumes from its own
/// latest state and no barrier between chains is needed.
///
/// File layout (all integers little-endian, doubles as their IEEE-754 bits):
///
///     8 bytes   magic "FLYMCCKP"
///     u32       format version (kCheckpointFormat)
///     u32       kind: 1 run manifest, 2 chain state
///     u64       payload length P
///     P bytes   payload (the fields of RunManifest or ChainState, chain_state.hpp)
///     u64       hash_bytes() of everything before it
///
/// A file that is too short, has another magic, version or kind, a length that disagrees with
/// the file size, or a wrong checksum is refused with a ConfigError naming the file and the
/// reason; so is a payload whose fields are out of range.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/hash.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/mcmc/chain_state.hpp"
#include "flymc/mcmc/state_store.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// 12: the chains' starting points (MapResult::chain_starts, auto's handover from its pilot) in
/// the manifest, so that a chain resumed before its first checkpoint, or run by another process,
/// starts where the leader's would. 11: the MAP fit's likelihood curvature in the manifest (SMH's
/// statistics), and scalable MH's chain states. 10: the data's storage (f64 or f32) in the stored
/// configuration. 9: `--metric auto` resolves to dense for the gradient kernels (a stored "auto"
/// meant diag for them before). 8: the configuration as every option that affects the draws, each
/// named (core/options.hpp), so the approximate samplers' options are stored too. 7: a chain's
/// bright set as its bright indices (O(bright) bytes) instead of a permutation of all N, and the
/// slack scale in the configuration. 6: both of the 5s below (the two were written on parallel
/// branches). 5: NUTS (the kernel kind nuts, max_treedepth in the stored configuration); the fly
/// metric (its blend). 4: a chain's state grouped as ChainState (counters with slice failures); no
/// test hooks in the stored configuration. 3: the softmax bound kind in the stored configuration;
/// 2: models, θ-kernels and their adaptation state (metric, windows); 1 held RW-MH only.
inline constexpr std::uint32_t kCheckpointFormat = 12;

std::vector<unsigned char> encode_checkpoint(const RunManifest& m);
std::vector<unsigned char> encode_checkpoint(const ChainState& c);
/// Decode a checkpoint file's bytes; `name` is used in error messages.
/// @throw ConfigError (78) for a torn, foreign, corrupted or out-of-range file.
RunManifest decode_run_manifest(std::span<const unsigned char> bytes, const std::string& name);
ChainState decode_chain_checkpoint(std::span<const unsigned char> bytes, const std::string& name);

std::string run_manifest_path(const std::string& dir);
std::string chain_checkpoint_path(const std::string& dir, int chain_id);
/// Creates `dir` if needed and writes the manifest atomically. @throw Error 73/74.
void save_run_manifest(const std::string& dir, const RunManifest& m);
/// @throw ConfigError if there is no manifest in `dir`, or it is unreadable or corrupt.
RunManifest load_run_manifest(const std::string& dir);
/// Writes chain c.chain_id's state atomically. @throw Error 73/74.
void save_chain_checkpoint(const std::string& dir, const ChainState& c);
/// Chain `chain_id`'s state, or nullopt if it never saved one.
/// @throw ConfigError if the file exists but is unreadable, corrupt or of another chain.
std::optional<ChainState> load_chain_checkpoint(const std::string& dir, int chain_id);
/// Removes every checkpoint file (and leftover temporary file) in `dir`, if any.
void remove_checkpoints(const std::string& dir);

/// The StateStore of the files above in `dir` (created when the manifest is first saved): what
/// CheckpointOptions::store takes for a run checkpointed to a directory.
std::shared_ptr<StateStore> checkpoint_directory(std::string dir);

}  // namespace flymc
