// A run in parts (flymc/mcmc/run_part.hpp): how chains are dealt, and how the leader's set-up
// reaches the other processes.
#include "flymc/mcmc/run_part.hpp"

#include <string>

#include "flymc/core/errors.hpp"
#include "flymc/io/checkpoint.hpp"
#include "run_model.hpp"

namespace flymc {

ChainBlock deal_chains(int chains, int ranks, int rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw ConfigError("process " + std::to_string(rank) + " of " + std::to_string(ranks) +
                      ": not a process of the group");
  if (chains < ranks)
    throw ConfigError(std::to_string(chains) + " chains cannot be dealt to " +
                      std::to_string(ranks) +
                      " processes: every process needs at least one chain (--chains >= ranks)");
  const int base = chains / ranks, extra = chains % ranks;
  return {rank * base + std::min(rank, extra) + 1, base + (rank < extra ? 1 : 0)};
}

namespace detail {

void check_block(ChainBlock block, int chains) {
  if (block.count < 1 || block.first < 1 || block.first + block.count - 1 > chains)
    throw ConfigError("chains " + std::to_string(block.first) + " .. " +
                      std::to_string(block.first + block.count - 1) + " are not a block of the " +
                      std::to_string(chains) + " chains of the run");
}

void PartSync::share(RunManifest& m) const {
  if (part_ == nullptr) return;
  // The manifest's own encoding carries the MAP fit bit for bit, with a checksum.
  std::vector<unsigned char> bytes;
  if (part_->leader) bytes = encode_checkpoint(m);
  part_->share(bytes);
  if (!part_->leader) m = decode_run_manifest(bytes, "the leader's set-up");
}

}  // namespace detail
}  // namespace flymc
