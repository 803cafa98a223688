// flymc::mpi (flymc/mpi/mpi.hpp): a run's chains over the processes of a communicator. The
// engine runs each process's block of chains (run_part); this file supplies the collective
// operations it needs and pools the chains on rank 0.
#include "flymc/mpi/mpi.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <new>
#include <vector>

#include "flymc/io/checkpoint.hpp"
#include "mpi_detail.hpp"

namespace flymc::mpi {
namespace {

/// A process's chains as two flat arrays, integers and doubles, in a fixed order.
struct Packed {
  std::vector<std::uint64_t> words;
  std::vector<double> values;
};

void pack(const ChainResult& c, Packed& p) {
  p.words.insert(p.words.end(),
                 {static_cast<std::uint64_t>(c.chain_id), c.kept, c.draws.size(), c.lp.size(),
                  c.sampling_queries, c.sampling_divergences, c.stopped ? 1u : 0u});
  c.counters.for_each_count([&](std::uint64_t v) { p.words.push_back(v); });
  p.words.insert(p.words.end(), c.profile.calls.begin(), c.profile.calls.end());
  p.values.insert(p.values.end(), {c.step_size, c.accept_rate, c.bright_mean, c.batch_mean,
                                   c.warmup_seconds, c.sampling_seconds});
  p.values.insert(p.values.end(), c.profile.seconds.begin(), c.profile.seconds.end());
  p.values.insert(p.values.end(), c.draws.begin(), c.draws.end());
  p.values.insert(p.values.end(), c.lp.begin(), c.lp.end());
}

/// Reads back one chain that pack() wrote, advancing `w` and `v`.
ChainResult unpack(const std::uint64_t*& w, const double*& v) {
  ChainResult c;
  c.chain_id = static_cast<int>(*w++);
  c.kept = *w++;
  const std::size_t ndraws = *w++, nlp = *w++;
  c.sampling_queries = *w++;
  c.sampling_divergences = *w++;
  c.stopped = *w++ != 0;
  c.counters.for_each_count([&](std::uint64_t& x) { x = *w++; });
  for (auto& x : c.profile.calls) x = *w++;
  for (double* x : {&c.step_size, &c.accept_rate, &c.bright_mean, &c.batch_mean, &c.warmup_seconds,
                    &c.sampling_seconds})
    *x = *v++;
  for (auto& x : c.profile.seconds) x = *v++;
  c.draws.assign(v, v + ndraws);
  v += ndraws;
  c.lp.assign(v, v + nlp);
  v += nlp;
  return c;
}

/// Rank 0 receives every other process's chains (in rank order, which is chain-id order) and
/// the run's longest wall times; every process learns whether any chain stopped.
void pool(MPI_Comm comm, RunResult& r) {
  const int rank = rank_of(comm), size = size_of(comm);
  int stopped = r.stopped ? 1 : 0, any_stopped = 0;
  MPI_Allreduce(&stopped, &any_stopped, 1, MPI_INT, MPI_LOR, comm);
  r.stopped = any_stopped != 0;
  double mine[3] = {r.setup_seconds, r.warmup_seconds, r.sampling_seconds}, longest[3] = {};
  MPI_Reduce(mine, longest, 3, MPI_DOUBLE, MPI_MAX, 0, comm);
  if (rank != 0) {
    Packed p;
    for (const ChainResult& c : r.chains) pack(c, p);
    send_vector(comm, 0, p.words);
    send_vector(comm, 0, p.values);
    return;
  }
  r.setup_seconds = longest[0];
  r.warmup_seconds = longest[1];
  r.sampling_seconds = longest[2];
  for (int from = 1; from < size; ++from) {
    const auto words = recv_vector<std::uint64_t>(comm, from);
    const auto values = recv_vector<double>(comm, from);
    const std::uint64_t* w = words.data();
    const double* v = values.data();
    while (w != words.data() + words.size()) r.chains.push_back(unpack(w, v));
  }
}

/// The message and exit code of an exception, as the CLI would report them; true if it was
/// agreed already (a RankError: its message names its origin, kept in `rank`).
bool describe(const std::exception_ptr& e, std::string& what, int& code, int& rank) {
  try {
    std::rethrow_exception(e);
  } catch (const RankError& x) {
    what = x.what();
    code = x.exit_code();
    rank = x.rank();
    return true;
  } catch (const Error& x) {
    what = x.what();
    code = x.exit_code();
  } catch (const std::bad_alloc&) {
    what = "out of memory";
    code = 70;
  } catch (const std::exception& x) {
    what = std::string("internal error: ") + x.what();
    code = 70;
  } catch (...) {
    what = "unknown internal error";
    code = 70;
  }
  return false;
}

/// RunPart::gather: each process's chains packed as [count, length of each, values of each],
/// gathered to every process in rank order.
std::vector<std::vector<double>> gather_chains(MPI_Comm comm,
                                               const std::vector<std::vector<double>>& mine,
                                               bool& flag) {
  int f = flag ? 1 : 0, any = 0;
  MPI_Allreduce(&f, &any, 1, MPI_INT, MPI_MAX, comm);
  flag = any != 0;
  std::vector<double> packed = {static_cast<double>(mine.size())};
  for (const auto& v : mine) packed.push_back(static_cast<double>(v.size()));
  for (const auto& v : mine) packed.insert(packed.end(), v.begin(), v.end());
  if (packed.size() > static_cast<std::size_t>(INT_MAX))
    throw ConfigError("--ess: a process's kept draws are too many to gather in one message");
  const int size = size_of(comm);
  int count = static_cast<int>(packed.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), at(static_cast<std::size_t>(size));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  long long total = 0;
  for (int r = 0; r < size; ++r) {
    if (total > INT_MAX)
      throw ConfigError("--ess: the chains' kept draws are too many to gather in one message");
    at[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(packed.data(), count, MPI_DOUBLE, all.data(), counts.data(), at.data(), MPI_DOUBLE,
                 comm);
  std::vector<std::vector<double>> out;
  for (int r = 0; r < size; ++r) {
    const double* p = all.data() + at[static_cast<std::size_t>(r)];
    const auto k = static_cast<std::size_t>(p[0]);
    const double* values = p + 1 + k;
    for (std::size_t c = 0; c < k; ++c) {
      const auto len = static_cast<std::size_t>(p[1 + c]);
      out.emplace_back(values, values + len);
      values += len;
    }
  }
  return out;
}

RunPart make_part(MPI_Comm comm, ChainBlock block) {
  RunPart part;
  part.block = block;
  part.leader = rank_of(comm) == 0;
  part.agree = [comm](std::exception_ptr e) {
    agree(comm, [&] {
      if (e) std::rethrow_exception(e);
    });
  };
  part.share = [comm, leader = part.leader](RunManifest& m) {
    std::vector<unsigned char> bytes;
    if (leader) bytes = encode_checkpoint(m);
    std::uint64_t n = bytes.size();
    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
    bytes.resize(n);
    bcast_bytes(comm, 0, bytes.data(), n);
    if (!leader) m = decode_run_manifest(bytes, "the leader's set-up");
  };
  part.gather = [comm](const std::vector<std::vector<double>>& mine, bool& flag) {
    return gather_chains(comm, mine, flag);
  };
  return part;
}

}  // namespace

void agree(MPI_Comm comm, const std::function<void()>& f) {
  const int rank = rank_of(comm), size = size_of(comm);
  std::exception_ptr e;
  try {
    f();
  } catch (...) {
    e = std::current_exception();
  }
  std::string what;
  int origin = rank, head[2] = {0, 0};  // exit code, agreed already
  if (e) head[1] = describe(e, what, head[0], origin) ? 1 : 0;
  // The lowest origin wins; the lowest process holding it tells the others.
  int key = e ? origin : size, first = size;
  MPI_Allreduce(&key, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int holder = key == first ? rank : size, root = size;
  MPI_Allreduce(&holder, &root, 1, MPI_INT, MPI_MIN, comm);
  std::uint64_t len = what.size();
  MPI_Bcast(head, 2, MPI_INT, root, comm);
  MPI_Bcast(&len, 1, MPI_UINT64_T, root, comm);
  what.resize(len);
  bcast_bytes(comm, root, what.data(), len);
  // The message names the process it came from, once (an agreed error's message does already).
  const bool prefix = first != 0 && head[1] == 0;
  throw RankError(prefix ? "rank " + std::to_string(first) + ": " + what : what, head[0], first);
}

int broadcast(MPI_Comm comm, int value) {
  MPI_Bcast(&value, 1, MPI_INT, 0, comm);
  return value;
}

RunResult run(MPI_Comm comm, const RunConfig& cfg, std::shared_ptr<const Dataset> data,
              const SinkFactory& sinks, Progress* progress, const CheckpointOptions* checkpoint,
              const FaultInjection& faults, const Precomputed& pre) {
  ChainBlock block;
  agree(comm, [&] {
    block = deal_chains(cfg.chains, size_of(comm), rank_of(comm));
    if (progress != nullptr && progress->chains.size() != static_cast<std::size_t>(cfg.chains))
      throw ConfigError("the progress counters must be sized to the run's chains");
  });
  const RunPart part = make_part(comm, block);
  RunResult r;
  agree(comm, [&] {
    r = run_part(cfg, std::move(data), sinks, progress, checkpoint, part, faults, pre);
  });
  pool(comm, r);
  return r;
}

}  // namespace flymc::mpi
