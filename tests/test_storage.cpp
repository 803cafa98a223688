// --storage f32: rows held as floats. Every consumer widens a float exactly, so a run on float
// storage must be the run on the same data rounded to float and held as doubles, bit for bit, for
// every sampler and model; the kernels' float overloads must equal their double ones on the
// widened rows; the loaders must round as they read, and refuse values beyond float's range.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// `src` with every feature rounded to float, held as doubles (f32 = false) or as floats.
std::shared_ptr<const Dataset> rounded(const Dataset& src, bool f32) {
  auto out = std::make_shared<Dataset>(src.n(), src.d(), src.source());
  for (std::size_t i = 0; i < src.n(); ++i) {
    out->mutable_y()[i] = src.y()[i];
    for (std::size_t j = 0; j < src.d(); ++j)
      out->mutable_row(i)[j] = static_cast<float>(src.value(i, j));
  }
  if (f32) out->store_as_f32();
  return out;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint64_t>(a[i]) != std::bit_cast<std::uint64_t>(b[i])) return false;
  return true;
}

/// The run on float storage against the run on the rounded doubles: the same draws and lp.
void check_same_run(RunConfig cfg, const Dataset& raw) {
  const auto as_f64 = rounded(raw, false), as_f32 = rounded(raw, true);
  cfg.storage = Storage::f64;
  const RunResult a = run(cfg, as_f64);
  cfg.storage = Storage::f32;
  const RunResult b = run(cfg, as_f32);
  REQUIRE(a.chains.size() == b.chains.size());
  for (std::size_t c = 0; c < a.chains.size(); ++c) {
    CAPTURE(c);
    CHECK(a.chains[c].kept > 0);
    CHECK(same_bits(a.chains[c].draws, b.chains[c].draws));
    CHECK(same_bits(a.chains[c].lp, b.chains[c].lp));
  }
}

RunConfig small_config(Algo algo, ModelKind model = ModelKind::logistic) {
  RunConfig cfg = flymc::test::fixed_config();
  cfg.algo = algo;
  cfg.model = model;
  cfg.chains = 2;
  cfg.warmup = 60;
  cfg.iters = 80;
  cfg.seed = 11;
  cfg.threads = 2;
  return cfg;
}

std::vector<double> random_values(std::size_t n, std::uint64_t seed) {
  Rng rng(seed, 3);
  std::vector<double> v(n);
  for (double& x : v) x = 3.0 * rng.normal();
  return v;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("kernels on float rows equal the same kernels on the rows widened, bit for bit") {
    for (const std::size_t stride : {8, 16, 24, 56, 64}) {
      CAPTURE(stride);
      const std::size_t rows = 37, m = 3;
      const std::vector<double> x = random_values(rows * stride, stride);
      std::vector<float> xf(x.begin(), x.end());
      const std::vector<double> xw(xf.begin(), xf.end());  // the floats, widened
      const std::vector<double> th = random_values(m * stride, 99);
      std::vector<double> y(rows);
      for (std::size_t i = 0; i < rows; ++i) y[i] = i % 3 == 0 ? -1.0 : 1.0;
      std::vector<Index> idx;
      for (std::size_t i = 0; i < 29; ++i) idx.push_back(static_cast<Index>((i * 7) % rows));
      const std::size_t k = idx.size();

      CHECK(kernels::dot(xf.data(), th.data(), stride) ==
            kernels::dot(xw.data(), th.data(), stride));
      CHECK(kernels::scalar::dot(xf.data(), th.data(), stride) ==
            kernels::scalar::dot(xw.data(), th.data(), stride));
      std::vector<double> a(rows * m), b(rows * m);
      kernels::dots_packed(xf.data(), rows, stride, th.data(), a.data());
      kernels::dots_packed(xw.data(), rows, stride, th.data(), b.data());
      CHECK(same_bits(a, b));
      kernels::dots_gather(xf.data(), stride, idx.data(), k, th.data(), a.data());
      kernels::dots_gather(xw.data(), stride, idx.data(), k, th.data(), b.data());
      CHECK(same_bits(a, b));
      kernels::dots_packed_multi(xf.data(), rows, stride, th.data(), m, stride, a.data());
      kernels::dots_packed_multi(xw.data(), rows, stride, th.data(), m, stride, b.data());
      CHECK(same_bits(a, b));
      kernels::dots_gather_multi(xf.data(), stride, idx.data(), k, th.data(), m, stride, a.data());
      kernels::dots_gather_multi(xw.data(), stride, idx.data(), k, th.data(), m, stride, b.data());
      CHECK(same_bits(a, b));
      CHECK(kernels::sum_log_sigmoid_signed(xf.data(), rows, stride, y.data(), th.data()) ==
            kernels::sum_log_sigmoid_signed(xw.data(), rows, stride, y.data(), th.data()));
      const std::vector<double> w = random_values(2 * rows, 7);  // a weight per row, 2 apart
      std::vector<double> ga(stride, 0.5), gb(stride, 0.5);
      kernels::weighted_row_sum(xf.data(), rows, stride, w.data(), 1, ga.data());
      kernels::weighted_row_sum(xw.data(), rows, stride, w.data(), 1, gb.data());
      CHECK(same_bits(ga, gb));
      kernels::scalar::weighted_row_sum(xf.data(), rows, stride, w.data(), 2, ga.data());
      kernels::scalar::weighted_row_sum(xw.data(), rows, stride, w.data(), 2, gb.data());
      CHECK(same_bits(ga, gb));
      kernels::scalar::dots_gather(xf.data(), stride, idx.data(), k, th.data(), a.data());
      kernels::scalar::dots_gather(xw.data(), stride, idx.data(), k, th.data(), b.data());
      CHECK(same_bits(a, b));
    }
  }

  TEST_CASE("a float data set reads back as its values rounded, through every accessor") {
    const auto raw = test::logistic_data(5000, 7, 3);  // more than one reduction chunk
    const auto dbl = rounded(*raw, false), flt = rounded(*raw, true);
    CHECK(flt->storage() == Storage::f32);
    CHECK(flt->row_bytes() * 2 == dbl->row_bytes());
    CHECK(data_fingerprint(*flt) == data_fingerprint(*dbl));
    CHECK(data_fingerprint(*flt) != data_fingerprint(*raw));  // the rounding changed the data
    const RowsF64 rows = flt->rows(4090, 4100);
    for (std::size_t i = 4090; i < 4100; ++i)
      for (std::size_t j = 0; j < flt->stride(); ++j) {
        CHECK(rows.row(i - 4090)[j] == dbl->row(i)[j]);
        if (j < flt->d()) CHECK(flt->value(i, j) == dbl->row(i)[j]);
      }
    std::vector<double> buf(flt->stride());
    flt->copy_row(17, buf.data());
    CHECK(std::equal(buf.begin(), buf.end(), dbl->row(17)));
    // Subsets keep the storage; gathered rows of a whole data set are its subset.
    const auto sub = subset_rows(*flt, {3, 1, 4999});
    CHECK(sub->storage() == Storage::f32);
    CHECK(sub->value(2, 5) == dbl->row(4999)[5]);
  }

  TEST_CASE("the loaders round to float as they read, and refuse values beyond its range") {
    test::TempDir dir("storage");
    const auto raw = test::logistic_data(300, 4, 8);
    const std::string npy = dir.path() + "/d.npy", csv = dir.path() + "/d.csv";
    save_npy(*raw, npy);
    save_csv(*raw, csv);
    const auto want = rounded(*raw, true);
    for (const std::string& path : {npy, csv}) {
      CAPTURE(path);
      const Dataset got = load_dataset(path, LabelDomain::binary, Storage::f32);
      CHECK(got.storage() == Storage::f32);
      CHECK(data_fingerprint(got) == data_fingerprint(*want));
    }
    // A finite double beyond float's range: row 7 (0-based), field 3 (x2).
    Dataset big(10, 3, "big");
    for (std::size_t i = 0; i < 10; ++i) big.mutable_y()[i] = 1.0;
    big.mutable_row(7)[1] = 1e39;
    save_npy(big, npy);
    save_csv(big, csv);
    CHECK_THROWS_WITH_AS(load_npy(npy, LabelDomain::binary, Storage::f32),
                         doctest::Contains("row 7: field 3 (x2): 1e+39 is beyond float32's range"),
                         DataError);
    CHECK_THROWS_WITH_AS(load_dataset(csv, LabelDomain::binary, Storage::f32),
                         doctest::Contains("data row 7 (0-based): field 3 (x2)"), DataError);
    CHECK_NOTHROW(load_npy(npy, LabelDomain::binary, Storage::f64));
  }

  TEST_CASE("run() refuses data whose storage is not the run's") {
    const auto raw = test::logistic_data(100, 3, 1);
    RunConfig cfg = small_config(Algo::full);
    cfg.storage = Storage::f32;
    CHECK_THROWS_WITH_AS(run(cfg, raw),
                         doctest::Contains("held as f64 but the run says --storage f32"),
                         ConfigError);
  }
}

TEST_SUITE("statistical") {
  TEST_CASE("every sampler draws on float storage exactly what it draws on the rounded doubles") {
    const auto logistic = test::logistic_data(600, 4, 21, 1.5);
    for (const Algo algo : {Algo::flymc, Algo::full, Algo::smh, Algo::minibatch_mh, Algo::sgld,
                            Algo::bps, Algo::lipsbps, Algo::zigzag_ss, Algo::zigzag_cv}) {
      CAPTURE(std::string(to_string(algo)));
      RunConfig cfg = small_config(algo);
      if (algo == Algo::flymc || algo == Algo::full) cfg.kernel = KernelKind::nuts;
      if (algo == Algo::minibatch_mh || algo == Algo::sgld || algo == Algo::lipsbps)
        cfg.batch_size = 50;
      check_same_run(cfg, *logistic);
    }
    SUBCASE("FlyMC with explicit z-updates and the untuned bound, and SMH's random walk") {
      RunConfig cfg = small_config(Algo::flymc);
      cfg.z = ZUpdate::explicit_;
      cfg.bound = BoundTuning::untuned;
      check_same_run(cfg, *logistic);
      RunConfig smh = small_config(Algo::smh);
      smh.proposal = SmhProposal::rw;
      check_same_run(smh, *logistic);
    }
  }

  TEST_CASE("robust and softmax regression on float storage: the rounded doubles' draws") {
    const auto robust = test::robust_data(500, 3, 5);
    for (const Algo algo : {Algo::flymc, Algo::full, Algo::smh}) {
      CAPTURE(std::string(to_string(algo)));
      check_same_run(small_config(algo, ModelKind::robust), *robust);
    }
    const auto softmax = test::softmax_data(400, 3, 3, 7);
    for (const Algo algo : {Algo::flymc, Algo::full}) {
      CAPTURE(std::string(to_string(algo)));
      check_same_run(small_config(algo, ModelKind::softmax), *softmax);
    }
  }

  TEST_CASE("a global parameter on float storage: Student-t with sigma and negbin with phi") {
    const auto t = test::robust_data(500, 3, 5);
    auto nb = std::make_shared<Dataset>(t->n(), t->d(), "counts");  // the rows, |y| rounded down
    for (std::size_t i = 0; i < nb->n(); ++i) {
      std::copy(t->row(i), t->row(i) + t->d(), nb->mutable_row(i));
      nb->mutable_y()[i] = std::floor(std::fabs(t->y()[i]));
    }
    for (const Algo algo : {Algo::full, Algo::smh}) {
      CAPTURE(std::string(to_string(algo)));
      RunConfig st = small_config(algo, ModelKind::student_t);
      st.prior_sigma = "exponential(1)";
      check_same_run(st, *t);
      check_same_run(small_config(algo, ModelKind::negbin), *nb);
    }
  }

  TEST_CASE("float storage across reduction chunks: SMH and regular MCMC on 9,000 rows") {
    const auto logistic = test::logistic_data(9000, 5, 4);
    for (const Algo algo : {Algo::smh, Algo::full, Algo::flymc}) {
      CAPTURE(std::string(to_string(algo)));
      check_same_run(small_config(algo), *logistic);
    }
  }
}
