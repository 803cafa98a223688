#pragma once
// Private: the set-up shared by the chains of an SMH run, and one chain (docs/math.md §8). The
// loop mirrors the approximate samplers' (minibatch/approx_chain.hpp), with no bright set; its
// chains save their state and resume as FlyMC's do (chain_state.hpp).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../run/chain_stops.hpp"
#include "../run/run_start.hpp"
#include "flymc/core/alias_table.hpp"
#include "flymc/core/memory.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/core/row_link.hpp"
#include "flymc/mcmc/adaptation.hpp"
#include "flymc/mcmc/columns.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/mcmc/smh/smh.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/global_family.hpp"
#include "flymc/models/model.hpp"

namespace flymc::detail {

/// What a candidate reads besides its row, in one 16-byte record (never split across cache
/// lines): where its log-likelihood was expanded (û, in its family's variable u, Expansion), the
/// sign σ with u − û = σ·x·(θ − θ̂), and its bound. The expansion's coefficients are recomputed from
/// û by the very function whose values the set-up summed into g and H_L, and φ is a float rounded
/// up (a bound only needs to dominate): the small record keeps an SMH run's memory near the
/// data's own.
struct alignas(16) SmhDatum {
  double u_hat;  // (written by the expansion pass)
  float phi;     // (M/6)·‖L⁻¹x_n‖³, enlarged (written by the bound pass)
  float sign;    // σ, SingleIndexFamily::expansion_sign (written by the expansion pass)
};
static_assert(sizeof(SmhDatum) == 16);

/// The expansion at θ̂ and the bounds (docs/math.md §8): built once from a data set, a model's
/// likelihood and prior and a MAP fit, read-only after. A later run on the same (`--algo auto`'s
/// SMH pilot, then its run: SetupCache) takes them over instead of building them again.
struct SmhStatistics {
  /// `fam`: the likelihood's family, whose M3 (order 2) or M4 (`expansion_order` 3) or else a
  /// local envelope must be given (build_smh_statistics checks).
  SmhStatistics(std::shared_ptr<const Dataset> d, const Prior& p,
                std::shared_ptr<const SingleIndexFamily> fam, double excess, int expansion_order)
      : source(d),
        data(d.get()),
        prior(p),
        family(std::move(fam)),
        extras(d->has_row_extras()),
        reads_response(extras || family->remainder_reads_response()),
        order(expansion_order),
        envelope(!(expansion_order == 3 ? family->m4() : family->m3())),
        m((expansion_order == 3 ? family->m4() : family->m3()).value_or(0.0)),
        bound_excess(excess) {}
  /// With a global parameter s beside the coefficients (global_family.hpp): z = (β, s), each
  /// datum expanded in (u, s) to second or third order, its bound from the family's envelope of
  /// the next.
  SmhStatistics(std::shared_ptr<const Dataset> d, const Prior& p,
                std::shared_ptr<const GlobalFamily> g, double excess, int expansion_order)
      : source(d),
        data(d.get()),
        prior(p),
        global(std::move(g)),
        extras(d->has_row_extras()),
        reads_response(true),
        order(expansion_order),
        envelope(true),
        m(0.0),
        bound_excess(excess) {}
  // What they were built from (fits()). Held weakly: a cache does not keep a data set alive, and
  // a data set freed cannot be mistaken for a later one at the same address.
  const std::weak_ptr<const Dataset> source;
  const Dataset* data;
  const Prior prior;
  const std::shared_ptr<const SingleIndexFamily> family;  // null with `global`
  /// The likelihood with a global parameter, last in z (null for a single-index family).
  const std::shared_ptr<const GlobalFamily> global;
  /// The data have weights, trials or offsets (Dataset::has_row_extras): each datum is expanded
  /// in u = η + o_n (σ = 1) from w_n·f(y_n, u; m_n), its bound is w_n·datum_scale times the
  /// family's, and the family's own expansion members are not used.
  const bool extras;
  const bool reads_response;  // extras || family->remainder_reads_response()
  const int order;            // of the expansion: 2, or 3 (then the remainders are of fourth order)
  /// The family gives no global constant of that order but a local envelope
  /// (SingleIndexFamily::has_envelope): each datum's bound is its envelope's scale at û_n, and
  /// every proposal's ψ is multiplied by the growth at reach·max(‖u‖, ‖u'‖), the farthest any
  /// datum's predictor can be from its expansion point along the move.
  const bool envelope;
  const double m;  // max |f⁽ᵒʳᵈᵉʳ⁺¹⁾| of a datum's log-likelihood in its predictor (0: envelope)
  const double bound_excess;
  Vec theta_hat;           // the expansion point θ̂ (θ_MAP)
  Vec grad;                // g = Σ_n σ_n f'(û_n) x_n, the likelihood's gradient at θ̂
  double precision = 1.0;  // p in H = H_L + p·I (the prior's precision, where uniform)
  Vec precisions;          // p_j in H = H_L + diag(p) where they differ (else empty)
  Mat chol;                // L, H = L·Lᵀ, H_L = −Σ_n f''(ŝ_n) x_n x_nᵀ
  Mat linv;                // L⁻¹ (lower triangular): whitens rows, x̃_n = L⁻¹x_n
  Mat linv_t;  // L⁻ᵀ (upper triangular, stored): δ = L⁻ᵀu by a product, not a solve
  // Order 3: the third derivatives' tensor in the whitened coordinates, Σ_n σ_n f‴(û_n) x̃_n⊗x̃_n⊗x̃_n
  // (x̃_n = L⁻¹x_n), its entries a ≤ b ≤ k in that order, each times the number of index
  // orders it stands for (smh::cubic_form); empty for order 2.
  std::vector<double> cubic;
  // The same tensor in the layout of kernels::cubic_form (each segment zero-padded to whole
  // vectors), which the chains evaluate once per proposal; null for order 2.
  AlignedBuffer cubic_padded;
  // Per datum, read at random: on huge pages, as the alias table; every field is written by the
  // set-up's parallel pass, which also first-touches the pages.
  std::vector<SmhDatum, HugePageUninitAllocator<SmhDatum>> datum;
  double phi_sum = 0.0;  // Σ_n φ_n over the whole data set
  double reach = 0.0;    // R = max_n ‖L⁻¹x_n‖ over the whole data set (with an envelope)
  // With `global`: λ = eta_scale(ŝ), and ‖L⁻¹e‖, e the global's unit vector: no proposal moves s
  // farther than global_reach·max(‖u‖, ‖u'‖) from ŝ.
  double eta_scale = 1.0;
  double global_reach = 0.0;
  // A candidate is drawn in two stages, so that a process holding some of the rows (a shard)
  // draws only its own: a block of kReduceGrain rows with probability Φ_b / Σφ, by every
  // process, then a row of the block with probability φ_n / Φ_b (an alias table per block),
  // by the block's holder.
  AliasTable block_alias;       // b with probability Φ_b / Σφ (Φ_b = Σ_{n in b} φ_n)
  BlockAliasTable row_alias;    // this process's blocks: a row of the block
  std::size_t first_block = 0;  // the data set's index of this process's first block
  RowLink* link = nullptr;      // the other processes' shards (none: null)
  int passes = 0;               // passes over the data rows that built all this

  /// z's dimension: the coefficients, and the global parameter where there is one.
  std::size_t dim() const noexcept { return data->d() + (global ? 1 : 0); }
  std::size_t blocks_here() const noexcept { return row_alias.blocks(); }
  /// Built from this data set, likelihood, prior, MAP fit and bound_excess.
  bool fits(const std::shared_ptr<const Dataset>& d, const Prior& p, const SingleIndexFamily& fam,
            const MapResult& map, double excess, int expansion_order) const noexcept {
    return d != nullptr && d == source.lock() && p == prior && family && fam.same_as(*family) &&
           excess == bound_excess && map.theta.size() == theta_hat.size() &&
           map.theta == theta_hat && expansion_order == order;
  }
  /// The same for a likelihood with a global parameter (`map` in z's coordinates).
  bool fits(const std::shared_ptr<const Dataset>& d, const Prior& p, const GlobalFamily& g,
            const MapResult& map, double excess, int expansion_order) const noexcept {
    return d != nullptr && d == source.lock() && p == prior && global && g.same_as(*global) &&
           excess == bound_excess && map.theta == theta_hat && expansion_order == order;
  }
  /// With `global`: datum n's expansion at u = x_n·β̂ + o_n = `u_hat` and ŝ, times its weight.
  GlobalExpansion global_expand(Index n, double u_hat) const noexcept;
  /// With `global`: datum n's remainder change (as remainder_change) between the points where
  /// x_n·(β − β̂) = e, s − ŝ = k and x_n·(β' − β̂) = e2, s' − ŝ = k2.
  double global_remainder_change(Index n, const SmhDatum& d, double e, double k, double e2,
                                 double k2) const noexcept;
  /// Datum n's expansion at predictor x·θ̂ = `s_hat`, in its family's variable u.
  Expansion taylor(Index n, double label, double s_hat) const noexcept {
    return extras ? datum_expand(n, s_hat) : family->expand(label, s_hat, order);
  }
  /// σ = ∂u/∂(x·θ) (SingleIndexFamily::expansion_sign).
  double sign(double label) const noexcept { return extras ? 1.0 : family->expansion_sign(label); }
  /// With `extras`: datum n's expansion at x·θ̂ = s_hat in u = η + o_n, of w_n·f(y_n, u; m_n).
  Expansion datum_expand(Index n, double s_hat) const noexcept;
  /// With `extras`: datum n's remainder change (as SingleIndexFamily::remainder_change) of
  /// w_n·f(y_n, u; m_n), its coefficients recomputed from û as datum_expand computes them.
  double datum_remainder_change(Index n, double u_hat, double h, double h2) const noexcept;
  /// Datum n's bound factor: w_n·datum_scale(y_n, m_n) (1 without extras).
  double bound_factor(Index n) const noexcept;
  /// r_n(θ) − r_n(θ') for datum n (this process's row), where x_n·(θ − θ̂) = e and
  /// x_n·(θ' − θ̂) = e2: the difference of its gaps (SingleIndexFamily::remainder_change).
  double remainder_change(Index n, const SmhDatum& d, double e, double e2) const noexcept {
    if (extras) return datum_remainder_change(n, d.u_hat, e, e2);
    const double sign = static_cast<double>(d.sign);
    return family->remainder_change(reads_response ? data->y()[n] : 0.0, d.u_hat, sign * e,
                                    sign * e2, order);
  }
};

/// Builds the expansion and the bounds at map.theta (chunks on oneTBB, bit-identical at any
/// thread count): in one pass over the data when the MAP search left the likelihood's curvature
/// there (MapResult::lik_curvature), else in two. @throw ConfigError if H is not positive
/// definite. `bound_excess` > 0 (a test hook, --test-bound-excess) divides every φ_n by
/// e^bound_excess: a bound too small, whose violations the chains must count as one process
/// would.
/// `order` 3: the third-order expansion (SmhStatistics::cubic). @throw ConfigError if the family
/// lacks M3 (order 2) or M4 (order 3).
std::shared_ptr<const SmhStatistics> build_smh_statistics(
    std::shared_ptr<const Dataset> data, const Prior& prior, const MapResult& map,
    std::shared_ptr<const SingleIndexFamily> family, double bound_excess = 0.0, int order = 2);

/// The same for a likelihood with a global parameter (smh_global.cpp): `zmap` is the MAP in
/// z = (β, s); H is the exact negative Hessian of the log-likelihood there plus the prior's
/// precisions (the global's prior_curvature for s), formed in a pass of its own. `order` 3 needs
/// the family's third derivatives and fourth-derivative envelope (has_fourth_envelope).
std::shared_ptr<const SmhStatistics> build_smh_global_statistics(
    std::shared_ptr<const Dataset> data, const Prior& prior, const MapResult& zmap,
    std::shared_ptr<const GlobalFamily> global, double bound_excess = 0.0, int order = 2);

/// Scratch of add_cubic_rows for blocks of up to m rows, allocated once per pass.
struct CubicScratch {  // the scaled rows of either sign (m × d each) and one slab (d × d)
  std::vector<double> pos, neg, c;
  CubicScratch(std::size_t m, std::size_t d) : pos(m * d), neg(m * d), c(d * d) {}
};

/// t += Σ_i w_i·z_i⊗z_i⊗z_i over the entries a ≤ b ≤ k (SmhStatistics::cubic's order, before the
/// entries are multiplied by their index orders), for `m` rows z_i (d entries, `stride` apart).
void add_cubic_rows(const double* z, std::size_t m, std::size_t d, std::size_t stride,
                    const double* w, double* t, CubicScratch& scratch);

/// SmhStatistics::cubic and cubic_padded from the tensor's entries a ≤ b ≤ k as summed (each
/// then multiplied by the number of index orders it stands for).
void set_cubic(SmhStatistics& sh, std::vector<double> entries);

/// Adds Σ_i w_i x_i x_iᵀ over the rows `x` (w.size() of them, `ds`'s stride) to h's upper triangle
/// (BLAS SYRK on rows scaled by √|w_i|). A log-concave family's weights are never negative; others'
/// (Student-t's, where a residual is beyond √c) may be, and those rows are subtracted as a second
/// rank update (smh.cpp).
void add_weighted_outer(Mat& h, const Dataset& ds, const double* x, const std::vector<double>& w);

/// The two stages of drawing a candidate (SmhShared) from the records' bounds (smh.cpp).
void candidate_tables(SmhStatistics& sh);

/// Everything the chains of one SMH run share, read-only.
struct SmhShared {
  const RunConfig& cfg;
  const Dataset& data;
  const Prior& prior;
  const MapResult& map;
  std::shared_ptr<const SmhStatistics> stats;  // the expansion at θ̂ and the bounds
  std::vector<std::string> columns;            // smh_draw_columns
  const FaultInjection& faults;
  // On a shard: the other processes (null: none), and whether this one keeps the draws and
  // saves the chains' states (the first part; every process holds the same state).
  RowLink* link = nullptr;
  bool keeps_draws = true;

  std::size_t dim() const noexcept { return stats->dim(); }
};

/// What one proposal's acceptance test did.
struct SmhOutcome {
  bool accept = false;
  bool rejected_by_data = false;  // false with !accept: the quadratic factor rejected
  std::uint64_t candidates = 0;   // data whose remainder factor was evaluated
  std::uint64_t violations = 0;   // remainders above their bound (never expected)
};

/// One chain. An iteration is one proposal and its factorised acceptance test.
class SmhChain {
 public:
  /// `ses`: checkpointing and, resuming, the saved state and the draw file's rows.
  SmhChain(const SmhShared& sh, int chain_id, DrawSink* sink, ChainSession& ses);
  ChainResult run(ChainGauge* gauge);
  /// Runs on to iteration `end` (warm-up included) or to a stop request; the first call starts
  /// or resumes the chain (run_blocks.hpp).
  void advance(long end, ChainGauge* gauge);
  long position() const noexcept { return pos_; }
  bool stopped() const noexcept { return res_.stopped; }
  /// The counts so far, warm-up included (auto's pilots price them at a block's end).
  const Counters& counts() const noexcept { return res_.counters; }
  const std::vector<double>& draws() const noexcept { return res_.draws; }
  /// Saves the state where the chain is and stops it, as a stop request would.
  void halt();
  /// After the last advance(): timers, results, the draw file's trailer and the final state.
  ChainResult finish();

 private:
  void begin(ChainGauge* gauge);
  long restore(const ChainState& st);
  void finished_earlier(const ChainState& st, ChainGauge* gauge);
  void save(long it, bool finished);
  std::vector<double> saved_moves() const;
  void load_moves(const std::vector<double>& v, std::size_t expected);
  void session_times(double& warm, double& samp) const;
  void propose();
  double log_quadratic_ratio();
  double prior_quadratic(const Vec& delta) const;
  double psi() const;
  double cubic_term(const Vec& u) noexcept;
  SmhOutcome accept_test();
  double remainder_drop(Index n) const noexcept;  // λ_n = max(0, r_n(θ) − r_n(θ'))
  void prefetch_datum(Index n) const noexcept;
  /// What this process's candidates of one proposal did (SmhShared: a shard tests its own),
  /// by the indices of the thinning process's points, which every process numbers alike.
  struct LocalTest {
    std::uint64_t points = 0;                     // the points drawn (all of them unless rejected)
    std::optional<std::uint64_t> rejection;       // the point whose factor rejected
    std::vector<std::uint64_t> violation_points;  // points whose remainder exceeded its bound
  };
  bool thinned_test(double psi, double rate, SmhOutcome& o);
  Rng proposal_stream() const noexcept;
  bool combine_tests(const LocalTest& mine, SmhOutcome& o);
  bool all_data_test(double psi, SmhOutcome& o);
  void note_violation(Index n, double excess) noexcept;
  void transition(long it);
  void tune_rho(long it, double jump, std::uint64_t candidates);
  void end_warmup();
  void record(long it);
  void set_state_from_theta();

  const SmhShared& sh_;
  const SmhStatistics& st_;  // *sh_.stats
  const RunConfig& cfg_;
  const Dataset& data_;
  const std::size_t p_, total_n_;  // total_n_: rows of the whole data set (a shard's included)
  const bool pcn_;
  const int chain_id_;
  DrawSink* sink_;
  ChainSession& ses_;
  ChainStops stops_;  // checkpoints and stop requests
  Rng rng_;
  std::uint64_t proposals_ = 0;  // proposals made so far: keys each one's thinning stream
  // A batch of the candidates in this process's blocks: the point's index, alias word (the
  // block's table), thinning uniform, local block, and local row once the word is looked up.
  struct Candidate {
    std::uint64_t point;
    std::uint64_t word;
    double uniform;
    std::uint32_t block;
    Index row;
  };
  static constexpr std::size_t kAhead = 16;  // looked up and prefetched together
  std::array<Candidate, kAhead> batch_{};
  DualAveraging adapt_;
  double step_;  // pCN: ρ; random walk: the step h in u
  // The state and the proposal: u (whitened), δ = L⁻ᵀu, θ = θ̂ + δ, and δ again padded for the
  // row kernels (a candidate needs x·δ, not x·θ).
  Vec u_, u2_, delta_, delta2_;
  double cubic_ = 0.0, cubic2_ = 0.0;  // order 3: ⅙·T̃(u, u, u) at u and at u' (SmhStatistics)
  AlignedBuffer theta_, theta2_, step_pad_, step2_pad_;
  AlignedBuffer u_pad_;  // order 3: u or u' followed by zeros, as kernels::cubic_form reads it
  std::vector<double> row_;
  // Tuning ρ in warm-up (pCN without --pcn-rho): squared jumps in u per unit of cost, per ρ.
  std::vector<double> rho_jump_, rho_cost_;
  // Sums since the last kept draw (window_*) and over the sampling iterations.
  double window_accept_ = 0.0, accept_sum_ = 0.0;
  long window_steps_ = 0;
  std::uint64_t window_cand_ = 0, window_rej_quad_ = 0, window_rej_data_ = 0, window_viol_ = 0;
  double gauge_accept_ = 0.0;
  std::uint64_t queries_at_row_ = 0, queries_at_sampling_ = 0;
  ChainResult res_;
  // This session's first iteration and start, whether it is still in warm-up, and the timers
  // of earlier sessions.
  long session_first_ = 0;
  enum class Stage { fresh, running, over };
  Stage stage_ = Stage::fresh;
  long pos_ = 0;  // the next iteration to run
  Clock::time_point seg_start_{};
  bool in_warmup_ = true;
  ChainTimers prev_;
  // flymc-profile's phases: proposal, the quadratic factor (prior_bound), the data's factors
  // (likelihood), the kept draws (output).
  Profile* profile_ = nullptr;
};

}  // namespace flymc::detail
