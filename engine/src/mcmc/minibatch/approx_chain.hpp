#pragma once
// Private: one chain of an approximate subsampling sampler on a single-index model: minibatch MH
// with the Barker test, or SGLD (docs/math.md §5, §6). The loop mirrors Chain (chain.hpp) without
// the parts these samplers lack (bright set, z-sweeps, checkpoints).
#include <atomic>
#include <string>
#include <vector>

#include "flymc/core/rng.hpp"
#include "flymc/mcmc/adaptation.hpp"
#include "flymc/mcmc/columns.hpp"
#include "flymc/mcmc/minibatch/barker.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/model.hpp"

namespace flymc::detail {

/// Everything the chains of one approximate run share, read-only.
struct ApproxShared {
  const RunConfig& cfg;
  const Dataset& data;
  const SingleIndexFamily& family;  // the likelihood, datum by datum
  const Prior& prior;
  const MapResult& map;
  Mat chol;              // L, the metric M = L·Lᵀ (lower triangular)
  bool diagonal = true;  // L (and M) diagonal: the proposals cost O(D)
  double eps0 = 1.0;     // minibatch MH: the initial random-walk step
  std::vector<std::string> columns;
  const BarkerCorrection* corr;  // minibatch MH only
};

/// One chain. An iteration is one proposal with its acceptance test (minibatch MH) or one
/// Langevin step (SGLD).
class ApproxChain {
 public:
  ApproxChain(const ApproxShared& sh, int chain_id, DrawSink* sink);
  ChainResult run(ChainGauge* gauge);

 private:
  void transition(long it);
  void mh_step(long it);
  void sgld_step();
  void end_warmup();
  void record(long it);
  void publish(ChainGauge& gauge, long iterations) const;
  void metric_step(double scale, double* out);  // out += scale·L·ξ, ξ ~ N(0, I)
  void gather_responses(const Index* idx, std::size_t k);
  void batch_log_ratios(const Index* idx, std::size_t k, double* out);
  void batch_gradient(const Index* idx, std::size_t k, double* grad);

  const ApproxShared& sh_;
  const RunConfig& cfg_;
  const Dataset& data_;
  const std::size_t p_, n_;
  DrawSink* sink_;
  Rng rng_;
  BatchDrawer drawer_;
  DualAveraging adapt_;
  double step_;
  std::vector<double> theta_, prop_, grad_, xi_, buf_, a_, b_, row_;
  std::vector<double> ys_, fa_, fb_;  // a batch's responses and the family's terms
  AlignedBuffer cur_pad_, prop_pad_;
  // Sums since the last kept draw (window_*) and over the sampling iterations.
  double window_accept_ = 0.0, window_batch_ = 0.0, accept_sum_ = 0.0, batch_sum_ = 0.0;
  long window_steps_ = 0;
  double gauge_accept_ = 0.0;  // over the whole run, for ChainGauge only
  std::uint64_t queries_at_row_ = 0, queries_at_sampling_ = 0;
  ChainResult res_;
};

}  // namespace flymc::detail
