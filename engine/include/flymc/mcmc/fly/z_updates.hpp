#pragma once
/// @file z_updates.hpp
/// The z-updates of FlyMC (docs/math.md §1): exact Gibbs on a block of data, explicit resampling of
/// a random fraction, and the implicit MH update with geometric skipping over dark data, with
/// uniform or per-datum proposal rates. Each leaves p(z | θ) invariant.
///
/// Thread safety: an updater belongs to one chain; ZRates is shared read-only.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/core/row_link.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/counters.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/predictors.hpp"
#include "flymc/models/model.hpp"

namespace flymc {

/// Shared scratch for the z-updaters.
struct ZScratch {
  std::vector<Index> idx, flip, flip_scratch;
  std::vector<double> a, b, c, pred, coef;
  FlipLog log;
  std::vector<Index> own_pos, own_local, own_global;  // a sharded update's own entries
  std::vector<double> msg;
  /// Room for k data with K predictors each.
  void reserve(std::size_t k, std::size_t K = 1) {
    if (a.size() < k) {
      a.resize(k);
      b.resize(k);
      c.resize(k);
    }
    if (pred.size() < k * K) pred.resize(k * K);
  }
};

/// Data per prefetch block of the z-updates: two blocks of rows (with their labels, bound
/// parameters and bright-set slots) in flight fit in L2 with room to spare, and one block holds
/// enough independent loads to cover a DRAM latency.
inline constexpr std::size_t kPrefetchBlock = 64;

/// The z-updates prefetch only data of at least this size: scattered reads from a set that fits
/// in the caches gain nothing from it, and the prefetch instructions cost time (flymc_bm's
/// BM_EngineImplicitZ / BM_EngineExplicitZ at N = 12,000).
inline constexpr std::size_t kPrefetchMinBytes = std::size_t{8} << 20;
inline bool worth_prefetching(const Dataset& data) noexcept {
  return data.n() * data.row_bytes() >= kPrefetchMinBytes;
}

/// Starts loading everything a z-update reads for the data idx[0, k): every cache line of the
/// row, what the bound reads per datum (its prefetch(n) member if it has one, else the label) and,
/// with `bright`, the datum's bright-set slot. The data are scattered over a set far larger than
/// the caches, so issuing these loads together overlaps their latencies instead of adding them.
/// With `kFar` the rows go to L2 only (prefetcht1): for data needed only after the θ-steps.
/// Forced inline, as every prefetch helper (see Dataset::prefetch_row).
template <bool kFar = false, class Bound>
[[gnu::always_inline]] inline void prefetch_data(const Bound& bound, const Dataset& data,
                                                 const BrightSet* bright, const Index* idx,
                                                 std::size_t k) noexcept {
  const double* y = data.y().data();
  for (std::size_t i = 0; i < k; ++i) {
    const Index n = idx[i];
    data.prefetch_row<kFar ? 2 : 3>(n);
    if constexpr (requires { bound.prefetch(n); }) {
      bound.prefetch(n);
    } else {
      __builtin_prefetch(y + n);
    }
    if (bright != nullptr) bright->prefetch(n);
  }
}

/// Δ_n at padded θ for the gathered data idx[0, k): K predictors per datum into s.pred, Δ into
/// `delta`. Counts k queries and the bound checks. With `coefs`, also ∂Δ_n/∂ψ_n (K per datum)
/// into s.coef, which gathered_coefs turns into ∂ log L̃_n/∂ψ_n once log L̃ is known.
/// Block by block, each block's data prefetched while the previous one is evaluated (and with
/// `bright`, their bright-set slots too); every Δ_n is computed as in one call over all k.
/// On a shard, `idx` are this process's row indices and `rec` the bound's (the whole data set's)
/// indices of the same data.
template <class Bound>
void gathered_deltas(const Bound& bound, const Dataset& data, const double* theta, const Index* idx,
                     std::size_t k, Counters& c, ZScratch& s, double* delta, bool coefs = false,
                     const BrightSet* bright = nullptr, const Index* rec = nullptr) {
  if (rec == nullptr) rec = idx;
  const std::size_t K = bound.outputs();
  if (coefs && s.coef.size() < k * K) s.coef.resize(k * K);
  const bool prefetch = worth_prefetching(data);
  if (prefetch) prefetch_data(bound, data, bright, idx, std::min(k, kPrefetchBlock));
  for (std::size_t b0 = 0; b0 < k; b0 += kPrefetchBlock) {
    const std::size_t m = std::min(kPrefetchBlock, k - b0);
    if (prefetch && b0 + m < k)
      prefetch_data(bound, data, bright, idx + b0 + m, std::min(kPrefetchBlock, k - b0 - m));
    double* pred = s.pred.data() + b0 * K;
    gather_predictors(K, data, idx + b0, m, theta, pred);
    if (coefs) {
      c.add(bound.delta_grads(rec + b0, pred, m, delta + b0, s.coef.data() + b0 * K));
    } else {
      c.add(bound.deltas(rec + b0, pred, m, delta + b0));
    }
  }
  c.queries += k;
}
/// Turns s.coef from ∂Δ/∂ψ into ∂ log L̃/∂ψ = ∂Δ/∂ψ · exp(Δ − log L̃), as FlyTarget does, using
/// `scratch` (k doubles).
inline void gathered_coefs(std::size_t K, std::size_t k, const double* delta, const double* llt,
                           double* scratch, ZScratch& s) {
  for (std::size_t i = 0; i < k; ++i) scratch[i] = delta[i] - llt[i];
  kernels::exp(scratch, scratch, k);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < K; ++j) {
      double& v = s.coef[i * K + j];
      v = v == 0.0 ? 0.0 : v * scratch[i];
    }
}

/// A z-update on a data set sharded over processes (docs/mpi.md, "FlyMC on a shard"). Every
/// process keeps the same bright set (indices, rows, cached log L̃) and draws every random number
/// the one-process update draws; each evaluates only the data it holds and decides their moves,
/// and one exchange per update hands every process all the moves, which each then applies in the
/// order of the update's entries: the bright set, and so the chain, are the one-process ones.
namespace zshard {

/// This process's entries of idx[0, k): positions, local row indices and whole-set indices.
inline void own_entries(const BrightSet& bright, const Index* idx, std::size_t k, ZScratch& s) {
  s.own_pos.clear();
  s.own_local.clear();
  s.own_global.clear();
  for (std::size_t i = 0; i < k; ++i)
    if (bright.holds(idx[i])) {
      s.own_pos.push_back(static_cast<Index>(i));
      s.own_local.push_back(static_cast<Index>(bright.local(idx[i])));
      s.own_global.push_back(idx[i]);
    }
}

/// Queries this process's entries of idx[0, k) at θ: Δ_n into s.a, log L̃_n into s.c and, when
/// the bright set caches coefficients, ∂ log L̃_n/∂ψ_n into s.coef (s.b is scratch), in the order
/// of s.own_pos; their bound checks go to `own`. Returns how many there are.
template <class Bound>
std::size_t query_own(const Bound& bound, const Dataset& data, const BrightSet& bright,
                      const double* theta, const Index* idx, std::size_t k, ZScratch& s,
                      Counters& own) {
  const std::size_t K = bound.outputs();
  const bool coefs = bright.coef_width() > 0;
  own_entries(bright, idx, k, s);
  const std::size_t m = s.own_pos.size();
  s.reserve(m, K);
  if (m == 0) return 0;
  gathered_deltas(bound, data, theta, s.own_local.data(), m, own, s, s.a.data(), coefs, nullptr,
                  s.own_global.data());
  kernels::log_expm1(s.a.data(), s.c.data(), m);
  if (coefs) gathered_coefs(K, m, s.a.data(), s.c.data(), s.b.data(), s);
  return m;
}

/// Starts this process's message: its length (set by exchange), its bound checks (with the first
/// violation's datum, −1 if none, predictor and excess), then moves.
inline constexpr std::size_t kHead = 6;
inline void begin(ZScratch& s, const Counters& own) {
  const ViolationSite& v = own.first_violation;
  s.msg.assign({0.0, double(own.bound_violations), double(own.bound_clamps),
                v.found() ? double(v.datum) : -1.0, v.eta, v.excess});
}
/// Entry i brightens (with log L̃, K coefficients if cached, its row as doubles).
inline void brighten(ZScratch& s, std::size_t i, double llt, const double* coef, std::size_t K,
                     const Dataset& data, std::size_t local) {
  s.msg.push_back(double(i));
  s.msg.push_back(1.0);
  s.msg.push_back(llt);
  s.msg.insert(s.msg.end(), coef, coef + K);
  s.msg.resize(s.msg.size() + data.stride());
  data.copy_row(local, s.msg.data() + s.msg.size() - data.stride());
}
/// Entry i darkens.
inline void darken(ZScratch& s, std::size_t i) {
  s.msg.push_back(double(i));
  s.msg.push_back(0.0);
}

/// Exchanges the processes' moves and applies all of them in entry order (idx: the entries'
/// data), logging them in s.log after what it holds; adds every process's bound checks to `c`.
inline void exchange(RowLink& link, const Index* idx, BrightSet& bright, Counters& c, ZScratch& s) {
  const std::size_t K = bright.coef_width(), stride = bright.stride();
  s.msg[0] = double(s.msg.size());
  const std::vector<double> all = link.gather_in_order(s.msg);
  std::vector<std::pair<std::size_t, std::size_t>> order;  // (entry, offset of its move)
  for (std::size_t at = 0; at < all.size();) {
    const auto len = static_cast<std::size_t>(all[at]);
    if (len < kHead || at + len > all.size())
      throw std::runtime_error("FlyMC on a shard: a malformed z-update message");
    c.bound_violations += static_cast<std::uint64_t>(all[at + 1]);
    c.bound_clamps += static_cast<std::uint64_t>(all[at + 2]);
    if (all[at + 3] >= 0.0)
      c.first_violation.merge({static_cast<std::size_t>(all[at + 3]), all[at + 4], all[at + 5]});
    for (std::size_t r = at + kHead; r < at + len; r += all[r + 1] != 0.0 ? 3 + K + stride : 2)
      order.emplace_back(static_cast<std::size_t>(all[r]), r);
    at += len;
  }
  std::sort(order.begin(), order.end());
  for (const auto& [i, r] : order) {
    const Index n = idx[i];
    if (all[r + 1] != 0.0) {
      brighten_logged(bright, n, all[r + 2], K > 0 ? all.data() + r + 3 : nullptr, s.log,
                      all.data() + r + 3 + K);
    } else {
      darken_logged(bright, n, s.log);
    }
  }
}

}  // namespace zshard

/// Gibbs updates z_n ~ Bernoulli(1 − B_n/L_n) at θ for the data `idx[0, k)` (in that order;
/// repeated indices are fine: each is an exact Gibbs update at the same θ). Paper Algorithm 1.
/// `theta` is padded (FlyTarget::current_padded()).
template <class Bound>
void gibbs_z(const Bound& bound, const Dataset& data, BrightSet& bright, const double* theta,
             const Index* idx, std::size_t k, Rng& rng, Counters& c, ZScratch& s) {
  const std::size_t K = bound.outputs();
  const bool coefs = bright.coef_width() > 0;
  s.reserve(k, K);
  s.log.clear();
  double* delta = s.a.data();
  double* p_dark = s.b.data();
  double* llt = s.c.data();
  gathered_deltas(bound, data, theta, idx, k, c, s, delta, coefs, &bright);
  // log L̃ = log expm1(Δ) (and with cached coefficients ∂ log L̃/∂ψ); P(z = 0) = B/L = e^{−Δ}:
  // vectorized.
  kernels::log_expm1(delta, llt, k);
  if (coefs) gathered_coefs(K, k, delta, llt, p_dark, s);
  for (std::size_t i = 0; i < k; ++i) p_dark[i] = -delta[i];
  kernels::exp(p_dark, p_dark, k);
  for (std::size_t i = 0; i < k; ++i) {
    const bool z1 = rng.uniform() >= p_dark[i];
    const Index n = idx[i];
    if (z1 && !bright.is_bright(n)) {
      brighten_logged(bright, n, llt[i], coefs ? s.coef.data() + i * K : nullptr, s.log);
    } else if (!z1 && bright.is_bright(n)) {
      darken_logged(bright, n, s.log);
    }
  }
}

/// gibbs_z on a data set sharded over processes (zshard): the same moves, the same draws.
template <class Bound>
void gibbs_z_shard(const Bound& bound, const Dataset& data, BrightSet& bright, const double* theta,
                   const Index* idx, std::size_t k, Rng& rng, Counters& c, ZScratch& s,
                   RowLink& link) {
  const std::size_t K = bound.outputs();
  const bool coefs = bright.coef_width() > 0;
  Counters own;
  const std::size_t m = zshard::query_own(bound, data, bright, theta, idx, k, s, own);
  const double* delta = s.a.data();
  double* p_dark = s.b.data();
  const double* llt = s.c.data();
  for (std::size_t j = 0; j < m; ++j) p_dark[j] = -delta[j];
  kernels::exp(p_dark, p_dark, m);
  c.queries += k;
  zshard::begin(s, own);
  // z of this process's data moved earlier in this update (an index may repeat).
  std::unordered_map<Index, bool> moved;
  auto bright_now = [&](Index n) {
    const auto it = moved.find(n);
    return it != moved.end() ? it->second : bright.is_bright(n);
  };
  for (std::size_t i = 0, j = 0; i < k; ++i) {
    const double u = rng.uniform();
    if (j == m || s.own_pos[j] != i) continue;
    const Index n = idx[i];
    const bool z1 = u >= p_dark[j], was = bright_now(n);
    if (z1 && !was) {
      zshard::brighten(s, i, llt[j], coefs ? s.coef.data() + j * K : nullptr, coefs ? K : 0, data,
                       s.own_local[j]);
      moved[n] = true;
    } else if (!z1 && was) {
      zshard::darken(s, i);
      moved[n] = false;
    }
    ++j;
  }
  s.log.clear();
  zshard::exchange(link, idx, bright, c, s);
}

/// Explicit z-resampling of ⌈N·f⌉ data drawn uniformly with replacement (docs/math.md §1.1).
class ExplicitZUpdater {
 public:
  explicit ExplicitZUpdater(double fraction) : fraction_(fraction) {}
  template <class Bound>
  void update(const Bound& bound, const Dataset& data, BrightSet& bright, const double* theta,
              Rng& rng, Counters& c) {
    const std::size_t n = bright.num_data();
    const auto k = static_cast<std::size_t>(std::ceil(double(n) * fraction_));
    s_.idx.resize(k);
    for (std::size_t i = 0; i < k; ++i) s_.idx[i] = static_cast<Index>(rng.below(n));
    if (link_ != nullptr) {
      gibbs_z_shard(bound, data, bright, theta, s_.idx.data(), k, rng, c, s_, *link_);
    } else {
      gibbs_z(bound, data, bright, theta, s_.idx.data(), k, rng, c, s_);
    }
  }
  /// The data are a shard, linked to the other processes' by `link` (zshard).
  void set_shard(RowLink* link) noexcept {
    link_ = link;
    s_.log.keep_rows = link != nullptr;
  }
  /// The data the last update flipped (recorded when the bright set caches coefficients).
  const FlipLog& flips() const noexcept { return s_.log; }

 private:
  double fraction_;
  ZScratch s_;
  RowLink* link_ = nullptr;
};

/// Per-datum proposal rates of the implicit z-update (docs/math.md §1.5), fixed for a run and
/// shared read-only by its chains: log q_n, and the data grouped into buckets of similar rate,
/// bucket b holding the n with q_n ∈ (2^−(b+1), 2^−b], so that dark data can be proposed
/// bucket by bucket at rate 2^−b by geometric skipping and thinned to q_n with probability
/// q_n·2^b ≥ 1/2. A sweep then costs O(Σ_n q_n) random numbers whatever the spread of the rates.
struct ZRates {
  std::vector<double> log_q;                ///< log q_n, q_n ∈ (0, 1]
  std::vector<std::vector<Index>> buckets;  ///< data of bucket b, ascending
  std::vector<double> log_rate, inv_log1m;  ///< per bucket: log 2^−b and 1/log(1 − 2^−b)

  /// Buckets for the given log rates (each ≤ 0; rates below 2^−60 share the last bucket).
  explicit ZRates(std::vector<double> log_rates) : log_q(std::move(log_rates)) {
    constexpr int kLast = 60;
    buckets.resize(kLast + 1);
    for (std::size_t i = 0; i < log_q.size(); ++i) {
      const double b = std::floor(-log_q[i] / std::log(2.0));
      buckets[static_cast<std::size_t>(std::clamp(b, 0.0, double(kLast)))].push_back(
          static_cast<Index>(i));
    }
    for (int b = 0; b <= kLast; ++b) {
      const double r = std::ldexp(1.0, -b);
      log_rate.push_back(-b * std::log(2.0));
      inv_log1m.push_back(b == 0 ? 0.0 : 1.0 / std::log1p(-r));
    }
  }
};

/// Implicit z-resampling by MH with q_{d→b} = q, q_{b→d} = 1 (docs/math.md §1.2): every bright
/// datum proposes to go dark, accepted w.p. min(1, q/L̃_n) (no query: L̃_n is cached); each dark
/// datum proposes to go bright w.p. q, chosen by geometric gaps from a substream per sweep (drawn
/// and prefetched a sweep early), accepted w.p. min(1, L̃_n/q) (one query). All proposals are made
/// against the z at the start of the sweep; the z_n are conditionally independent given θ, so the
/// sweep is a product of valid single-datum MH kernels. Acceptance tests compare a uniform with a
/// probability computed by a vectorized exp, and the geometric gaps take their logs in vectorized
/// batches: no scalar libm call per datum.
class ImplicitZUpdater {
 public:
  explicit ImplicitZUpdater(double q)
      : log_q_(std::log(q)), inv_log1mq_(q < 1.0 ? 1.0 / std::log1p(-q) : 0.0), q_one_(q >= 1.0) {}
  /// Per-datum rates q_n (docs/math.md §1.5), never depending on z: datum n is proposed to go
  /// bright with probability q_n (found bucket by bucket, see ZRates), and both acceptances use
  /// q_n. `rates` must outlive the updater.
  explicit ImplicitZUpdater(const ZRates& rates) : ImplicitZUpdater(1.0) { rates_ = &rates; }

  template <class Bound>
  void update(const Bound& bound, const Dataset& data, BrightSet& bright, const double* theta,
              Rng& rng, Counters& c) {
    // 1. Bright → dark proposals: darken iff u < q/L̃_n = exp(log q − log L̃_n).
    const std::size_t nb = bright.size();
    s_.reserve(nb);
    const double* llt = bright.log_ltilde();
    double* thr = s_.a.data();
    if (rates_ == nullptr) {
      for (std::size_t i = 0; i < nb; ++i) thr[i] = log_q_ - llt[i];
    } else {
      const double* lr = rates_->log_q.data();
      for (std::size_t i = 0; i < nb; ++i) thr[i] = lr[bright.bright(i)] - llt[i];
    }
    kernels::exp(thr, thr, nb);
    s_.flip.clear();
    for (std::size_t i = 0; i < nb; ++i)
      if (rng.uniform() < thr[i]) s_.flip.push_back(bright.bright(i));
    // 2. Dark → bright proposals.
    s_.idx.clear();
    if (rates_ == nullptr && !q_one_) {
      take_proposals(bright);
    } else if (rates_ == nullptr) {
      propose_darks(bright);
    } else {
      propose_darks_per_datum(bright, rng);
    }
    if (link_ != nullptr) {
      accept_on_shard(bound, data, bright, theta, rng, c);
      ++sweep_;
      return;
    }
    const std::size_t k = s_.idx.size();
    // 3. One query per proposal: log L̃_n at θ; accept iff u < L̃_n/q = exp(log L̃_n − log q).
    const std::size_t K = bound.outputs();
    const bool coefs = bright.coef_width() > 0;
    s_.reserve(k, K);
    double* delta = s_.a.data();
    double* acc = s_.b.data();
    double* lt = s_.c.data();
    if (k > 0) {
      gathered_deltas(bound, data, theta, s_.idx.data(), k, c, s_, delta, coefs);
      kernels::log_expm1(delta, lt, k);
      if (coefs) gathered_coefs(K, k, delta, lt, acc, s_);
      if (rates_ == nullptr) {
        for (std::size_t i = 0; i < k; ++i) acc[i] = lt[i] - log_q_;
      } else {
        const double* lr = rates_->log_q.data();
        for (std::size_t i = 0; i < k; ++i) acc[i] = lt[i] - lr[s_.idx[i]];
      }
      kernels::exp(acc, acc, k);
    }
    // 4. Apply: darken first (their proposals were decided), then brighten the accepted darks.
    s_.log.clear();
    for (Index n : s_.flip) darken_logged(bright, n, s_.log);
    for (std::size_t i = 0; i < k; ++i)
      if (rng.uniform() < acc[i])
        brighten_logged(bright, s_.idx[i], lt[i], coefs ? s_.coef.data() + i * K : nullptr, s_.log);
    // 5. The next sweep's candidates, drawn now so that their rows load during the θ-steps.
    ++sweep_;
    if (rates_ == nullptr && !q_one_) {
      draw_candidates(bright.num_data());
      if (worth_prefetching(data))
        prefetch_data<true>(bound, data, &bright, next_.data(),
                            std::min(next_.size(), kPrefetchAhead));
    }
  }
  /// Sets the stream of the uniform-rate sweeps' candidates (a chain's own key) and the number
  /// of sweeps already made (the substream of the next one): a resumed chain then draws what the
  /// uninterrupted one would have.
  void set_candidate_stream(std::uint64_t key, std::uint64_t sweeps_done) noexcept {
    key_ = key;
    sweep_ = sweeps_done;
    next_sweep_ = kNoSweep;
  }
  /// The data the last update flipped (recorded when the bright set caches coefficients).
  const FlipLog& flips() const noexcept { return s_.log; }
  /// The data are a shard, linked to the other processes' by `link` (zshard).
  void set_shard(RowLink* link) noexcept {
    link_ = link;
    s_.log.keep_rows = link != nullptr;
  }

 private:
  /// Steps 3 and 4 of update() on a shard (zshard): this process's proposals are queried and
  /// decided here, every uniform is drawn, the moves are exchanged and applied in order.
  template <class Bound>
  void accept_on_shard(const Bound& bound, const Dataset& data, BrightSet& bright,
                       const double* theta, Rng& rng, Counters& c) {
    const std::size_t k = s_.idx.size(), K = bound.outputs();
    const bool coefs = bright.coef_width() > 0;
    Counters own;
    const std::size_t m = zshard::query_own(bound, data, bright, theta, s_.idx.data(), k, s_, own);
    double* acc = s_.b.data();
    const double* lt = s_.c.data();
    for (std::size_t j = 0; j < m; ++j)
      acc[j] = lt[j] - (rates_ == nullptr ? log_q_ : rates_->log_q[s_.own_global[j]]);
    kernels::exp(acc, acc, m);
    c.queries += k;
    zshard::begin(s_, own);
    for (std::size_t i = 0, j = 0; i < k; ++i) {
      const double u = rng.uniform();
      if (j == m || s_.own_pos[j] != i) continue;
      if (u < acc[j])
        zshard::brighten(s_, i, lt[j], coefs ? s_.coef.data() + j * K : nullptr, coefs ? K : 0,
                         data, s_.own_local[j]);
      ++j;
    }
    s_.log.clear();
    for (Index n : s_.flip) darken_logged(bright, n, s_.log);
    zshard::exchange(*link_, s_.idx.data(), bright, c, s_);
  }

  /// Calls f(position) for the positions of [0, len) chosen independently w.p. r, found by
  /// skipping Geometric(r) gaps, gap = ⌊log(u)·inv_log1m⌋ with inv_log1m = 1/log(1 − r), the
  /// logs taken 64 at a time (r = 1: every position).
  template <class F>
  static void skip_positions(std::size_t len, double inv_log1m, bool all, Rng& rng, F&& f) {
    if (all) {
      for (std::size_t i = 0; i < len; ++i) f(i);
      return;
    }
    constexpr std::size_t kBatch = 64;
    alignas(64) double lu[kBatch];
    double pos = 0.0;  // next candidate position
    const double end = static_cast<double>(len);
    while (true) {
      for (std::size_t i = 0; i < kBatch; ++i) lu[i] = rng.uniform_pos();
      kernels::log(lu, lu, kBatch);
      for (std::size_t i = 0; i < kBatch; ++i) {
        pos += std::floor(lu[i] * inv_log1m);
        if (pos >= end) return;
        f(static_cast<std::size_t>(pos));
        pos += 1.0;
      }
    }
  }

  /// Candidates of sweep `sweep_` (docs/math.md §1.2): each of the N data independently w.p. q,
  /// by geometric skipping over the indices, from substream (key_, sweep_), a stream of its own
  /// that nothing else draws from. They do not depend on θ or z, so they can be drawn a sweep
  /// early.
  void draw_candidates(std::size_t n) {
    Rng r(key_, sweep_);
    next_n_ = n;
    next_.clear();
    skip_positions(n, inv_log1mq_, false, r,
                   [&](std::size_t i) { next_.push_back(static_cast<Index>(i)); });
    next_sweep_ = sweep_;
  }
  /// Fills s_.idx with the dark candidates of this sweep: each dark datum is then proposed w.p.
  /// q, independently of everything else (a bright candidate is passed over: its move is the
  /// bright → dark proposal).
  void take_proposals(const BrightSet& bright) {
    if (next_sweep_ != sweep_ || next_n_ != bright.num_data()) draw_candidates(bright.num_data());
    for (Index n : next_)
      if (!bright.is_bright(n)) s_.idx.push_back(n);
  }

  /// With q = 1: every dark datum, in index order.
  void propose_darks(const BrightSet& bright) {
    const auto n = static_cast<Index>(bright.num_data());
    for (Index i = 0; i < n; ++i)
      if (!bright.is_bright(i)) s_.idx.push_back(i);
  }

  /// The same with per-datum rates: bucket by bucket, candidates at the bucket's rate 2^−b over
  /// all its data; a bright candidate is passed over (its move is the bright → dark proposal),
  /// a dark one kept w.p. q_n·2^b. So each dark datum is proposed w.p. exactly q_n.
  void propose_darks_per_datum(const BrightSet& bright, Rng& rng) {
    const ZRates& z = *rates_;
    std::vector<Index>& cand = s_.flip_scratch;
    for (std::size_t b = 0; b < z.buckets.size(); ++b) {
      const std::vector<Index>& members = z.buckets[b];
      if (members.empty()) continue;
      cand.clear();
      skip_positions(members.size(), z.inv_log1m[b], b == 0, rng, [&](std::size_t pos) {
        if (!bright.is_bright(members[pos])) cand.push_back(members[pos]);
      });
      // Thinning: keep n iff u < exp(log q_n − log 2^−b).
      const std::size_t k = cand.size();
      s_.reserve(k);
      double* keep = s_.a.data();
      for (std::size_t i = 0; i < k; ++i) keep[i] = z.log_q[cand[i]] - z.log_rate[b];
      kernels::exp(keep, keep, k);
      for (std::size_t i = 0; i < k; ++i)
        if (rng.uniform() < keep[i]) s_.idx.push_back(cand[i]);
    }
  }

  /// Candidates of the next sweep prefetched at the end of a sweep (into L2: a few hundred rows
  /// fit there beside what the θ-steps use); the rest are prefetched block by block as usual.
  static constexpr std::size_t kPrefetchAhead = 256;
  static constexpr std::uint64_t kNoSweep = ~std::uint64_t{0};

  double log_q_, inv_log1mq_;
  bool q_one_;
  const ZRates* rates_ = nullptr;
  RowLink* link_ = nullptr;
  ZScratch s_;
  std::uint64_t key_ = 0, sweep_ = 0, next_sweep_ = kNoSweep;
  std::size_t next_n_ = 0;
  std::vector<Index> next_;  // candidates of sweep next_sweep_
};

}  // namespace flymc
