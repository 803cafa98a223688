// A run in parts (flymc/mcmc/run_part.hpp): how chains are dealt. (How the leader's set-up reaches
// the other processes is the run's start: run_start.cpp.)
#include "flymc/mcmc/run_part.hpp"

#include <string>

#include "flymc/core/errors.hpp"

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

}  // namespace flymc
