// Data sharded over the ranks of MPI_COMM_WORLD (flymc::mpi::load_shard), run as
// `mpirun -np R shard_check DIR`: every rank reads only its part of an NPY file, and the logistic
// MAP search over the parts (each Newton pass's sums handed from rank to rank in row order)
// equals, bit for bit, the search over the whole file in one process, for any R; so does scalable
// MH's set-up at that MAP (the expansion, the per-datum bounds and their sum); so do robust
// regression's MAP search, log-likelihood and SMH set-up (its two-pass path), and a bad response
// is named by the same file row on every rank; so do a global family's MAP search and SMH draws. A
// file whose binary labels use one coding in one part and the other in another is refused on every
// rank with the message the one-process loader gives. Exit 0 if all holds; each failure is printed.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "flymc/data/loaders.hpp"
#include "flymc/data/row_fold.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/global_model.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/robust.hpp"
#include "flymc/mpi/mpi.hpp"
#include "mcmc/smh/smh_chain.hpp"

namespace {

int failures = 0;

void check(bool ok, const std::string& what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, what.c_str());
  ++failures;
}

template <class M>
bool same_bits(const M& a, const M& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * std::size_t(a.size())) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string dir = argc > 1 ? argv[1] : ".";
  const std::string tall = dir + "/shard_tall.npy", mixed = dir + "/shard_mixed.npy";
  const std::string robust = dir + "/shard_robust.npy", bad = dir + "/shard_robust_bad.npy";
  if (rank == 0) {
    // Above the MAP search's warm-start threshold (400,000 rows), so its subsample is gathered
    // from the parts too; not a whole number of chunks, so the last part is short.
    flymc::save_npy(flymc::synth_logistic(409600 + 1234, 6, 7), tall);
    flymc::Dataset m = flymc::synth_logistic(3 * 4096 + 10, 3, 1);
    for (double& y : m.mutable_y()) y = 1.0;
    m.mutable_y()[5] = 0.0;              // {0,1} coding in the first part ...
    m.mutable_y()[3 * 4096 + 2] = -1.0;  // ... {-1,+1} in the last
    flymc::save_npy(m, mixed);
    flymc::Dataset r = flymc::synth_robust(4 * 4096 + 77, 5, 3);
    flymc::save_npy(r, robust);
    r.mutable_y()[3 * 4096 + 9] = 1e200;  // beyond what robust regression's sums take
    flymc::save_npy(r, bad);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  const flymc::Prior prior{flymc::PriorKind::gaussian, 1.0};
  auto whole =
      std::make_shared<const flymc::Dataset>(flymc::load_npy(tall, flymc::LabelDomain::binary));
  const flymc::MapResult one = flymc::LogisticModel(whole, prior).find_map();
  auto part = flymc::mpi::load_shard(MPI_COMM_WORLD, tall, flymc::LabelDomain::binary);
  check(part->total_n() == whole->n(), "the shard's total rows", rank);
  const flymc::MapResult sharded = flymc::LogisticModel(part, prior).find_map();
  check(same_bits(one.theta, sharded.theta), "theta_MAP differs from one process's", rank);
  check(same_bits(one.covariance, sharded.covariance), "the Laplace covariance differs", rank);
  check(one.log_post == sharded.log_post, "the log posterior differs", rank);
  check(one.passes == sharded.passes, "the number of passes differs", rank);

  // The log-likelihood and its gradient (what full-data kernels call) over the parts.
  const flymc::LogisticModel m_one(whole, prior), m_part(part, prior);
  const std::size_t stride = whole->stride();
  flymc::AlignedBuffer tp = flymc::aligned_zeros(stride), g_one = flymc::aligned_zeros(stride),
                       g_part = flymc::aligned_zeros(stride);
  for (std::size_t j = 0; j < whole->d(); ++j) tp[j] = 0.5 * one.theta[Eigen::Index(j)];
  const double f_one = m_one.log_lik_grad(tp.get(), g_one.get());
  const double f_part = m_part.log_lik_grad(tp.get(), g_part.get());
  const bool same_g = std::memcmp(g_one.get(), g_part.get(), stride * sizeof(double)) == 0;
  check(f_one == f_part && same_g, "the log-likelihood gradient differs", rank);

  // Scalable MH's set-up at θ̂ over the parts: the expansion's gradient and Cholesky factor and
  // the bounds' sum are the whole data set's, each part's per-datum bounds its rows'.
  const flymc::RunConfig cfg;
  const auto sh_one =
      flymc::detail::build_smh_statistics(whole, prior, one, flymc::LogisticFamily::shared());
  const auto sh_part =
      flymc::detail::build_smh_statistics(part, prior, sharded, flymc::LogisticFamily::shared());
  check(same_bits(sh_one->grad, sh_part->grad), "SMH: the gradient at theta_hat differs", rank);
  check(same_bits(sh_one->chol, sh_part->chol), "SMH: the Cholesky factor differs", rank);
  check(sh_one->phi_sum == sh_part->phi_sum, "SMH: the bounds' sum differs", rank);
  const std::size_t first = part->shard()->first_row;
  bool same_phi = sh_part->datum.size() == part->n();
  for (std::size_t i = 0; same_phi && i < part->n(); ++i)
    same_phi = sh_part->datum[i].phi == sh_one->datum[first + i].phi;
  check(same_phi, "SMH: a datum's bound differs from the same row's in one process", rank);

  // Robust regression: the MAP search (Newton and MM steps, every pass a fold), the
  // log-likelihood, and SMH's set-up, which here makes its own curvature pass.
  {
    auto r_whole =
        std::make_shared<const flymc::Dataset>(flymc::load_npy(robust, flymc::LabelDomain::any));
    auto r_part = flymc::mpi::load_shard(MPI_COMM_WORLD, robust, flymc::LabelDomain::any);
    const flymc::RobustModel r_one(r_whole, prior, 4.0, 1.0), r_sh(r_part, prior, 4.0, 1.0);
    const flymc::MapResult ro = r_one.find_map(), rs = r_sh.find_map();
    check(same_bits(ro.theta, rs.theta), "robust: theta_MAP differs", rank);
    check(same_bits(ro.covariance, rs.covariance), "robust: the covariance differs", rank);
    flymc::AlignedBuffer rt = flymc::aligned_zeros(r_whole->stride());
    for (std::size_t j = 0; j < r_whole->d(); ++j) rt[j] = 0.5 * ro.theta[Eigen::Index(j)];
    check(r_one.log_lik(rt.get()) == r_sh.log_lik(rt.get()), "robust: log L differs", rank);
    const auto s1 = flymc::detail::build_smh_statistics(r_whole, prior, ro, r_one.family_ptr());
    const auto s2 = flymc::detail::build_smh_statistics(r_part, prior, rs, r_sh.family_ptr());
    check(same_bits(s1->grad, s2->grad) && same_bits(s1->chol, s2->chol) &&
              s1->phi_sum == s2->phi_sum,
          "robust: SMH's set-up differs", rank);
    std::string want, got_bad;
    try {
      (void)flymc::RobustModel(
          std::make_shared<const flymc::Dataset>(flymc::load_npy(bad, flymc::LabelDomain::any)),
          prior, 4.0, 1.0);
    } catch (const flymc::Error& e) {
      want = e.what();
    }
    auto bad_part = flymc::mpi::load_shard(MPI_COMM_WORLD, bad, flymc::LabelDomain::any);
    try {
      (void)flymc::RobustModel(bad_part, prior, 4.0, 1.0);
    } catch (const flymc::Error& e) {
      got_bad = e.what();
    }
    check(!want.empty() && want == got_bad,
          "robust: a bad response: expected \"" + want + "\", got \"" + got_bad + "\"", rank);
  }

  // A family with a global parameter given in code (here the engine's Student-t scale family
  // through GlobalFamilyModel): its MAP search in (β, log σ) and scalable MH on the shard give
  // one process's θ̂ and draws.
  {
    auto gl_whole =
        std::make_shared<const flymc::Dataset>(flymc::load_npy(robust, flymc::LabelDomain::any));
    auto gl_part = flymc::mpi::load_shard(MPI_COMM_WORLD, robust, flymc::LabelDomain::any);
    flymc::RunConfig gc = cfg;
    gc.model = flymc::ModelKind::custom;
    gc.global_family = std::make_shared<const flymc::StudentTScaleFamily>(
        4.0, flymc::parse_scale_prior("exponential(1)"));
    const flymc::GlobalFamilyModel gl_one(gl_whole, gc), gl_sh(gl_part, gc);
    const flymc::MapResult go = gl_one.find_map(), gs = gl_sh.find_map();
    check(same_bits(go.theta, gs.theta), "global family: theta_MAP differs", rank);
    check(same_bits(go.covariance, gs.covariance), "global family: the covariance differs", rank);
    gc.algo = flymc::Algo::smh;
    gc.kernel = flymc::KernelKind::rwmh;
    gc.chains = 2;
    gc.iters = 300;
    gc.warmup = 200;
    gc.ess = 0.0;
    const flymc::RunResult r1 = flymc::run(gc, gl_whole, gc.global_family);
    const flymc::RunResult r2 = flymc::run(gc, gl_part, gc.global_family);
    if (rank == 0)  // the first process keeps a shard's draws
      for (std::size_t j = 0; j < r1.dim; ++j)
        check(r1.coordinate(j) == r2.coordinate(j), "global family: SMH's draws differ", rank);
  }

  // A failure on one rank inside a fold (here rank 1, before it takes rank 0's accumulator)
  // reaches every rank with its message and code instead of leaving the others waiting, and the
  // next fold is unaffected (no message is left over).
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int failing = size > 1 ? 1 : 0;
  std::string fold_error;
  int fold_code = 0;
  try {
    (void)flymc::sum_rows(*part, [&](std::size_t, std::size_t) -> double {
      if (rank == failing) throw flymc::DataError("rank " + std::to_string(failing) + " failed");
      return 1.0;
    });
  } catch (const flymc::Error& e) {
    fold_error = e.what();
    fold_code = e.exit_code();
  }
  check(fold_error == "rank " + std::to_string(failing) + " failed" && fold_code == 65,
        "a fold's failure on one rank: got \"" + fold_error + "\"", rank);
  auto sum_y = [](const flymc::Dataset& ds) {  // Σ y_n·(n mod 7), n the file's row
    const std::size_t off = ds.shard() != nullptr ? ds.shard()->first_row : 0;
    return flymc::sum_rows(ds, [&](std::size_t lo, std::size_t hi) {
      double t = 0.0;
      for (std::size_t i = lo; i < hi; ++i) t += ds.y()[i] * double((off + i) % 7);
      return t;
    });
  };
  check(sum_y(*part) == sum_y(*whole), "a fold after a failed one differs", rank);

  // Regular MCMC on a shard is refused until its iterations go across the ranks (FlyMC's and
  // SMH's do: tests/mpi/test_mpi_cli.cpp).
  flymc::RunConfig full = cfg;
  full.algo = flymc::Algo::full;
  bool refused = false;
  try {
    (void)flymc::run(full, part);
  } catch (const flymc::ConfigError&) {
    refused = true;
  }
  check(refused, "sampling a shard was not refused", rank);

  std::string expected, got;
  try {
    (void)flymc::load_npy(mixed, flymc::LabelDomain::binary);
  } catch (const flymc::Error& e) {
    expected = e.what();
  }
  try {
    (void)flymc::mpi::load_shard(MPI_COMM_WORLD, mixed, flymc::LabelDomain::binary);
  } catch (const flymc::mpi::RankError& e) {
    got = e.what();
  }
  check(!expected.empty() && got.find(expected) != std::string::npos,
        "mixed codings: expected \"" + expected + "\", got \"" + got + "\"", rank);

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("shard_check: %s\n", total == 0 ? "OK" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
