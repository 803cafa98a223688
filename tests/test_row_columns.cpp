// Data as it comes (issue 52, step a): a data file's response, weight, trials and offset columns
// chosen by header name or index (columns.hpp), with errors naming the file, column and row;
// the per-row values carried by subset_rows and the fingerprint; the generic single-index path
// reading them (a weight counts a datum w times, an offset shifts its predictor, trials make a
// binomial count), FlyMC's bound with per-datum curvature, the binomial family's derivatives and
// constants, which samplers refuse such data, and SBC of FlyMC and regular NUTS on binomial
// regression with trials and offsets; the Poisson family (regular MCMC, offsets) and its SBC
// (scalable MH on it: test_poisson.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/columns.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/glm.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/validate/validate.hpp"
#include "sbc_util.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

DataColumns cols(std::string response, std::string weights = "", std::string trials = "",
                 std::string offset = "") {
  return {std::move(response), std::move(weights), std::move(trials), std::move(offset)};
}

/// Loads `text` as CSV with the columns `cols`.
Dataset csv_with(const test::TempDir& dir, const std::string& text, const DataColumns& columns,
                 LabelDomain labels = LabelDomain::any) {
  const std::string path = dir.path() + "/d.csv";
  write(path, text);
  return load_data(path, labels, Storage::f64, columns);
}

/// n rows of an intercept and two normal features, with binomial counts of 1 to 6 trials,
/// weights 1 or 2 and offsets, from `seed`.
std::shared_ptr<Dataset> binomial_data(std::size_t n, std::uint64_t seed) {
  auto ds = std::make_shared<Dataset>(n, 3, "binomial data");
  Rng rng(seed, 0);
  std::vector<double> m(n), w(n), o(n);
  for (std::size_t i = 0; i < n; ++i) {
    double* x = ds->mutable_row(i);
    x[0] = 1.0;
    x[1] = rng.normal();
    x[2] = rng.normal();
    o[i] = 0.3 * rng.normal();
    m[i] = 1.0 + std::floor(6.0 * rng.uniform());
    w[i] = rng.uniform() < 0.3 ? 2.0 : 1.0;
    const double p = 1.0 / (1.0 + std::exp(-(0.4 - 0.7 * x[1] + 0.5 * x[2] + o[i])));
    double y = 0.0;
    for (int t = 0; t < int(m[i]); ++t) y += rng.uniform() < p ? 1.0 : 0.0;
    ds->mutable_y()[i] = y;
  }
  ds->set_trials(m);
  ds->set_weights(w);
  ds->set_offsets(o);
  return ds;
}

double lik_at(const GlmModel& model, const std::vector<double>& theta) {
  AlignedBuffer tp = aligned_zeros(model.stride());
  std::copy(theta.begin(), theta.end(), tp.get());
  return model.log_lik(tp.get());
}

RunConfig binomial_run(Algo algo) {
  RunConfig c = test::fixed_config();
  c.model = ModelKind::binomial;
  c.algo = algo;
  c.kernel = KernelKind::nuts;
  c.chains = 2;
  c.threads = 2;
  c.warmup = 300;
  c.iters = 600;
  c.seed = 3;
  return c;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("columns: chosen by header name or index, the rest features in file order") {
    const test::TempDir dir("columns");
    const std::string text = "x1,count,w,trials,off,x2\n0.5,2,1,3,0.1,7\n-1,0,2,4,-0.2,8\n";
    const Dataset ds = csv_with(dir, text, cols("count", "w", "trials", "off"));
    REQUIRE(ds.n() == 2);
    REQUIRE(ds.d() == 2);
    CHECK(ds.y()[0] == 2.0);
    CHECK(ds.value(0, 0) == 0.5);
    CHECK(ds.value(0, 1) == 7.0);
    CHECK(ds.weights()[1] == 2.0);
    CHECK(ds.trials()[1] == 4.0);
    CHECK(ds.offsets()[1] == -0.2);
    // The same by index; a column not named stays a feature.
    const Dataset by_index = csv_with(dir, text, cols("1", "", "3", ""));
    CHECK(by_index.d() == 4);
    CHECK(by_index.trials()[0] == 3.0);
    CHECK(by_index.weights().empty());
    CHECK(by_index.offsets().empty());
    CHECK(by_index.value(0, 1) == 1.0);  // w, a feature here
    // .npy and HDF5 take indices.
    const Dataset as_read = load_data(dir.path() + "/d.csv", LabelDomain::any);
    save_npy(as_read, dir.path() + "/d.npy");
    const Dataset npy =
        load_data(dir.path() + "/d.npy", LabelDomain::any, Storage::f64, cols("1", "2", "3", "4"));
    CHECK(npy.trials()[0] == 3.0);
    CHECK(npy.value(1, 1) == 8.0);
    save_hdf5(as_read, {dir.path() + "/d.h5", "/d"});
    const Dataset h5 = load_data(dir.path() + "/d.h5:/d", LabelDomain::any, Storage::f32,
                                 cols("1", "2", "3", "4"));
    CHECK(h5.storage() == Storage::f32);
    CHECK(h5.offsets()[0] == 0.1);  // not rounded: only the features are floats
    CHECK(data_fingerprint(npy) !=
          data_fingerprint(load_data(dir.path() + "/d.npy", LabelDomain::any, Storage::f64,
                                     cols("1", "2", "3", ""))));
    // subset_rows carries them.
    const auto sub = subset_rows(npy, {1});
    CHECK(sub->weights()[0] == 2.0);
    CHECK(sub->trials()[0] == 4.0);
    CHECK(sub->offsets()[0] == -0.2);
  }

  TEST_CASE("columns: an NPY file read once into its columns equals the whole file rearranged") {
    // Many blocks of rows (read in parallel), the response in the middle (so column 0 is a
    // feature), and an error at a row deep in the file naming it.
    const test::TempDir dir("npy-columns");
    const std::size_t n = 20000;
    Dataset whole(n, 5, "whole");
    Rng rng(17, 0);
    for (std::size_t i = 0; i < n; ++i) {
      whole.mutable_y()[i] = rng.normal();
      double* x = whole.mutable_row(i);
      x[0] = std::floor(4.0 * rng.uniform());         // the response: a count
      x[1] = rng.uniform() < 0.5 ? 1.0 : 2.0;         // weights
      x[2] = x[0] + std::floor(3.0 * rng.uniform());  // trials
      x[3] = rng.normal();
      x[4] = rng.normal();
    }
    const std::string path = dir.path() + "/w.npy";
    save_npy(whole, path);
    const DataColumns c = cols("1", "2", "3", "");
    const Dataset direct = load_data(path, LabelDomain::any, Storage::f64, c);
    const Dataset via = select_columns(load_data(path, LabelDomain::any), {}, c, LabelDomain::any);
    CHECK(direct.d() == 3);
    CHECK(data_fingerprint(direct) == data_fingerprint(via));
    CHECK(direct.value(n - 1, 0) == whole.y()[n - 1]);
    CHECK(direct.trials()[n - 1] == whole.value(n - 1, 2));
    whole.mutable_row(12345)[1] = -1.0;
    save_npy(whole, path);
    CHECK_THROWS_WITH_AS(load_data(path, LabelDomain::any, Storage::f64, c),
                         doctest::Contains("w.npy: row 12345: field 3 (column 2, weights): -1 "
                                           "must be >= 0"),
                         DataError);
  }

  TEST_CASE("columns: bad or missing columns are errors naming the file, column and row") {
    const test::TempDir dir("columns-bad");
    const std::string text = "y,w,m,x\n1,1,2,0.5\n1,-1,2,0.1\n";
    const auto error_of = [&](const std::string& t, const DataColumns& columns,
                              LabelDomain labels = LabelDomain::any) {
      try {
        (void)csv_with(dir, t, columns, labels);
      } catch (const DataError& e) {
        return std::string(e.what());
      }
      return std::string("(no error)");
    };
    CHECK(error_of(text, cols("", "weight"))
              .find("--weights weight: no such column (the header "
                    "names y, w, m, x)") != std::string::npos);
    CHECK(error_of(text, cols("", "9")).find("--weights 9: the file has columns 0..3") !=
          std::string::npos);
    CHECK(error_of(text, cols("", "w", "w")).find("named twice") != std::string::npos);
    CHECK(error_of(text, cols("", "w")).find("d.csv:3: field 2 (w, weights): -1 must be >= 0") !=
          std::string::npos);
    CHECK(error_of("y,w,m,x\n3,1,2,0.5\n", cols("", "", "m"))
              .find("d.csv:2: field 3 (m, trials): 2 is below the response 3") !=
          std::string::npos);
    CHECK(error_of("y,w,m,x\n1,1,2.5,0.5\n", cols("", "", "m")).find("must be an integer >= 0") !=
          std::string::npos);
    CHECK(error_of("y,w\n1,1\n", cols("", "w")).find("no feature column is left") !=
          std::string::npos);
    CHECK(error_of("x,y\n0.5,3\n", cols("y"), LabelDomain::binary)
              .find("d.csv:2: field 2 (y, response): label 3 is not a binary label") !=
          std::string::npos);
    write(dir.path() + "/d.svm", "1 1:0.5\n");
    CHECK_THROWS_WITH_AS(
        load_data(dir.path() + "/d.svm", LabelDomain::any, Storage::f64, cols("", "1")),
        doctest::Contains("a libsvm file has a label and features only"), DataError);
  }

  TEST_CASE("a weight counts a datum w times; an offset shifts its predictor; trials sum trials") {
    // Weights: the log-likelihood and its gradient are those of the rows repeated.
    auto ds = binomial_data(300, 4);
    const std::vector<double> theta = {0.3, -0.5, 0.2};
    RunConfig c = binomial_run(Algo::full);
    const GlmModel weighted(ds, c);
    std::vector<Index> rows;
    for (std::size_t i = 0; i < ds->n(); ++i)
      for (int k = 0; k < int(ds->weights()[i]); ++k) rows.push_back(static_cast<Index>(i));
    auto repeated = std::const_pointer_cast<Dataset>(subset_rows(*ds, rows));
    repeated->set_weights({});
    CHECK(lik_at(weighted, theta) ==
          doctest::Approx(lik_at(GlmModel(repeated, c), theta)).epsilon(1e-12));
    // Offsets: those of a feature column whose coefficient is held at 1.
    auto extended = std::make_shared<Dataset>(ds->n(), 4, "extended");
    for (std::size_t i = 0; i < ds->n(); ++i) {
      for (std::size_t j = 0; j < 3; ++j) extended->mutable_row(i)[j] = ds->value(i, j);
      extended->mutable_row(i)[3] = ds->offsets()[i];
      extended->mutable_y()[i] = ds->y()[i];
    }
    extended->set_trials({ds->trials().begin(), ds->trials().end()});
    extended->set_weights({ds->weights().begin(), ds->weights().end()});
    CHECK(lik_at(weighted, theta) ==
          doctest::Approx(lik_at(GlmModel(extended, c), {0.3, -0.5, 0.2, 1.0})).epsilon(1e-12));
    // Trials: a binomial count is the sum of its Bernoulli trials (the constant log C(m, y) is
    // dropped by both).
    auto bernoulli = std::make_shared<Dataset>(0, 3, "trials");
    std::vector<double> x, y, w, o;
    for (std::size_t i = 0; i < ds->n(); ++i)
      for (int t = 0; t < int(ds->trials()[i]); ++t) {
        for (std::size_t j = 0; j < 3; ++j) x.push_back(ds->value(i, j));
        y.push_back(t < ds->y()[i] ? 1.0 : 0.0);
        w.push_back(ds->weights()[i]);
        o.push_back(ds->offsets()[i]);
      }
    auto split = std::make_shared<Dataset>(
        dataset_from_arrays(x, y, 3, LabelDomain::any, "Bernoulli trials"));
    split->set_weights(w);
    split->set_offsets(o);
    CHECK(lik_at(weighted, theta) ==
          doctest::Approx(lik_at(GlmModel(split, c), theta)).epsilon(1e-12));
  }

  TEST_CASE("binomial: derivatives by central differences; per-datum constants bound them") {
    for (const auto link : {BinomialFamily::Link::logit, BinomialFamily::Link::probit}) {
      const BinomialFamily fam(link);
      CAPTURE(fam.name());
      for (const double m : {1.0, 3.0, 10.0})
        for (double y = 0.0; y <= m; y += 1.0)
          for (double eta = -30.0; eta <= 30.0; eta += 0.37) {
            double d[5], up[5], down[5];
            const double h = 1e-5;
            fam.derivatives_trials(y, m, eta, 4, d);
            fam.derivatives_trials(y, m, eta + h, 4, up);
            fam.derivatives_trials(y, m, eta - h, 4, down);
            for (int j = 0; j < 4; ++j)
              CHECK(d[j + 1] ==
                    doctest::Approx((up[j] - down[j]) / (2 * h)).epsilon(1e-5).scale(m));
            const double c = fam.datum_scale(y, m);
            CHECK(-d[2] <= c * *fam.kappa() * (1 + 1e-12));
            CHECK(std::fabs(d[2]) <= c * *fam.m2() * (1 + 1e-12));
            CHECK(std::fabs(d[3]) <= c * *fam.m3() * (1 + 1e-12));
            CHECK(std::fabs(d[4]) <= c * *fam.m4() * (1 + 1e-12));
            if (fam.m1()) CHECK(std::fabs(d[1]) <= c * *fam.m1() * (1 + 1e-12));
          }
      // The binomial of one trial is logistic (probit) regression on 0/1 labels.
      double b[5], l[5];
      fam.derivatives(1.0, 0.7, 4, b);
      if (link == BinomialFamily::Link::logit)
        LogisticFamily{}.derivatives(1.0, 0.7, 4, l);
      else
        ProbitFamily{}.derivatives(1.0, 0.7, 4, l);
      for (int j = 0; j <= 4; ++j) CHECK(b[j] == doctest::Approx(l[j]).epsilon(1e-14));
    }
    // A datum scale 10% too small is caught: m trials' curvature needs m times κ.
    const BinomialFamily fam(BinomialFamily::Link::logit);
    double d[3];
    fam.derivatives_trials(2.0, 5.0, 0.0, 2, d);
    CHECK(-d[2] > 0.9 * 5.0 * *fam.kappa());
  }

  TEST_CASE("FlyMC's generic bound with weights, trials and offsets: below, tight, collapsed") {
    const auto ds = binomial_data(2000, 7);
    const RunConfig c = binomial_run(Algo::flymc);
    const GlmModel model(ds, c);
    const MapResult map = model.find_map();
    const GlmBound bound = GlmBound::make(model, c, map);
    std::vector<Index> idx(ds->n());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<Index>(i);
    std::vector<double> eta(ds->n()), delta(ds->n()), dpsi(ds->n());
    AlignedBuffer tp = aligned_zeros(ds->stride()), scratch = aligned_zeros(bound.scratch_size());
    Rng rng(5, 0);
    for (int t = 0; t < 10; ++t) {
      for (std::size_t j = 0; j < ds->d(); ++j)
        tp[j] = map.theta[static_cast<Eigen::Index>(j)] + (t == 0 ? 0.0 : 2.0 * rng.normal());
      ds->dots(0, ds->n(), tp.get(), eta.data());
      const BoundCheck check =
          bound.delta_grads(idx.data(), eta.data(), ds->n(), delta.data(), dpsi.data());
      CHECK(check.violations == 0);
      double terms = 0.0, liks = 0.0;
      for (std::size_t n = 0; n < ds->n(); ++n) {
        terms += bound.log_bound(idx[n], eta[n]);
        liks += bound.log_lik(idx[n], eta[n]);
        CHECK(bound.log_lik(idx[n], eta[n]) - bound.log_bound(idx[n], eta[n]) ==
              doctest::Approx(delta[n]).epsilon(1e-9).scale(1.0));
      }
      CHECK(liks == doctest::Approx(model.log_lik(tp.get())).epsilon(1e-11));
      CHECK(bound.log_bound_sum(tp.get(), scratch.get()) == doctest::Approx(terms).epsilon(1e-11));
      if (t == 0) CHECK(*std::max_element(delta.begin(), delta.end()) < 1e-9);
    }
  }

  TEST_CASE("weights, trials and offsets: FlyMC, SMH and regular MCMC read them, others refuse") {
    const auto ds = binomial_data(500, 8);
    const RunResult fly = run(binomial_run(Algo::flymc), ds);
    CHECK(fly.bound_violations() == 0);
    const RunResult full = run(binomial_run(Algo::full), ds);
    for (std::size_t j = 0; j < 3; ++j) {
      const test::DrawMoments a = test::draw_moments(fly.coordinate(j));
      const test::DrawMoments b = test::draw_moments(full.coordinate(j));
      CHECK(std::fabs(a.mean - b.mean) < 0.25 * b.sd);  // the same posterior
    }
    RunConfig c = binomial_run(Algo::smh);
    c.kernel = KernelKind::rwmh;
    c.iters = 3000;
    for (const int order : {2, 3}) {
      c.smh_order = order;
      const RunResult smh = run(c, ds);
      CHECK(smh.bound_violations() == 0);
      for (std::size_t j = 0; j < 3; ++j) {
        const test::DrawMoments a = test::draw_moments(smh.coordinate(j));
        const test::DrawMoments b = test::draw_moments(full.coordinate(j));
        CHECK(std::fabs(a.mean - b.mean) < 0.25 * b.sd);
      }
    }
    c.algo = Algo::zigzag_cv;
    CHECK_THROWS_WITH_AS(run(c, ds),
                         doctest::Contains("--algo zigzag-cv does not read per-row weights"),
                         ConfigError);
    c = binomial_run(Algo::full);
    c.model = ModelKind::probit;  // no trials
    CHECK_THROWS_WITH_AS(run(c, ds), doctest::Contains("does not read (--model binomial does)"),
                         ConfigError);
    auto plain = std::const_pointer_cast<Dataset>(subset_rows(*ds, {0, 1, 2, 3}));
    plain->set_trials({});
    plain->mutable_y().assign({1.0, 0.0, 1.0, 1.0});
    c.model = ModelKind::logistic;
    CHECK_THROWS_WITH_AS(run(c, plain), doctest::Contains("per-row weights, trials and offsets"),
                         ConfigError);
    // auto leaves out the samplers that cannot read them.
    RunConfig a = binomial_run(Algo::automatic);
    a.ess = 0.0;
    for (const AutoCandidate& cand : auto_candidates(a, *ds, false, {}))
      if (cand.skipped.empty()) CHECK(sampler_info(cand.config.algo).row_extras);
  }

  TEST_CASE("binomial without trials takes 0/1 responses, and refuses a count above 1") {
    auto ds = std::const_pointer_cast<Dataset>(subset_rows(*binomial_data(50, 9), {0, 1, 2}));
    ds->set_trials({});
    ds->set_weights({});
    ds->set_offsets({});
    ds->mutable_y().assign({0.0, 1.0, 2.0});
    CHECK_THROWS_WITH_AS(GlmModel(ds, binomial_run(Algo::full)),
                         doctest::Contains("row 2 (0-based): response 2 exceeds 1"), DataError);
  }
}

TEST_SUITE("unit") {
  TEST_CASE(
      "poisson: derivatives, exact draws at small and large means, regular MCMC with offsets") {
    const PoissonFamily fam;
    for (const double y : {0.0, 1.0, 7.0, 300.0})
      for (double eta = -20.0; eta <= 8.0; eta += 0.53) {
        double d[5], up[5], down[5];
        const double h = 1e-6;
        fam.derivatives(y, eta, 4, d);
        fam.derivatives(y, eta + h, 4, up);
        fam.derivatives(y, eta - h, 4, down);
        for (int j = 0; j < 4; ++j)
          CHECK(d[j + 1] == doctest::Approx((up[j] - down[j]) / (2 * h))
                                .epsilon(1e-6)
                                .scale(std::exp(eta) + y + 1.0));
      }
    // Draws at means across inversion (< 10) and PTRS: mean and variance both μ, within 4.5
    // standard errors of 20,000 draws (the variance's se from the fourth central moment).
    Rng rng(3, 0);
    for (const double mu : {0.3, 4.0, 9.9, 10.0, 37.0, 2500.0}) {
      CAPTURE(mu);
      const int n = 20000;
      double s = 0.0, ss = 0.0;
      for (int i = 0; i < n; ++i) {
        const double k = fam.simulate(std::log(mu), rng);
        CHECK(k == std::floor(k));
        s += k;
        ss += k * k;
      }
      const double mean = s / n, var = ss / n - mean * mean;
      CHECK(std::fabs(mean - mu) < 4.5 * std::sqrt(mu / n));
      CHECK(std::fabs(var - mu) < 4.5 * std::sqrt((mu + 2.0 * mu * mu) / n));
    }
    // Regular MCMC runs it with offsets (FlyMC's refusal and scalable MH: test_poisson.cpp).
    auto ds = std::make_shared<Dataset>(300, 2, "counts");
    std::vector<double> off(300);
    for (std::size_t i = 0; i < 300; ++i) {
      ds->mutable_row(i)[0] = 1.0;
      ds->mutable_row(i)[1] = rng.normal();
      off[i] = std::log(1.0 + double(i % 5));  // exposures 1..5
      ds->mutable_y()[i] = fam.simulate(0.5 + 0.3 * ds->value(i, 1) + off[i], rng);
    }
    ds->set_offsets(off);
    RunConfig c = binomial_run(Algo::full);
    c.model = ModelKind::poisson;
    const RunResult r = run(c, ds);
    CHECK(std::fabs(test::draw_moments(r.coordinate(0)).mean - 0.5) <
          5.0 * test::draw_moments(r.coordinate(0)).sd);
    ds->mutable_y()[4] = 2.5;
    CHECK_THROWS_WITH_AS(run(c, ds), doctest::Contains("must be a count"), DataError);
  }
}

TEST_SUITE("statistical") {
  // Binomial regression with 1 to 5 trials and N(0, 0.5²) offsets per datum (SbcOptions::trials,
  // offsets); the small cases' sizes (sbc_util.hpp).
  SbcOptions binomial_sbc(Algo algo, BinomialFamily::Link link, long thin, std::uint64_t seed) {
    SbcOptions o = test::small_sbc(algo, thin, seed, 200);
    o.run.model = ModelKind::binomial;
    o.run.link = link == BinomialFamily::Link::logit ? Link::logit : Link::probit;
    o.run.kernel = KernelKind::nuts;
    o.trials = true;
    o.offsets = true;
    return o;
  }
  TEST_CASE("SBC: FlyMC with NUTS on binomial regression with trials and offsets is calibrated") {
    test::check_small_sbc(binomial_sbc(Algo::flymc, BinomialFamily::Link::logit, 10, 521));
  }
  TEST_CASE("SBC: regular NUTS on binomial-probit regression with trials and offsets") {
    test::check_small_sbc(binomial_sbc(Algo::full, BinomialFamily::Link::probit, 3, 522));
  }
  TEST_CASE("SBC: regular NUTS on Poisson regression with offsets is calibrated") {
    SbcOptions o = test::small_sbc(Algo::full, 3, 527, 200);
    o.run.model = ModelKind::poisson;
    o.run.kernel = KernelKind::nuts;
    o.offsets = true;
    test::check_small_sbc(o);
  }
  TEST_CASE("SBC: scalable MH (orders 2 and 3) on binomial regression with trials and offsets") {
    for (const int order : {2, 3}) {
      SbcOptions o = binomial_sbc(Algo::smh, BinomialFamily::Link::logit, 5, 523 + order);
      o.run.kernel = KernelKind::rwmh;
      o.run.smh_order = order;
      test::check_small_sbc(o);
    }
  }
}
