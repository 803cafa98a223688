// FlyMC state and exactness tests: BrightSet invariants, z-updater invariance (chi-square), and
// agreement of every sampler with the exact posterior computed by quadrature.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/fly/z_updates.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "flymc/models/softmax.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

/// Upper-tail p-value of a chi-square statistic with k degrees of freedom, by the Wilson–Hilferty
/// normal approximation (accurate to ~1e-3 relative in the tail for k >= 10, ample for 1e-3 cuts).
double chi2_pvalue(double stat, double k) {
  const double z = (std::cbrt(stat / k) - (1.0 - 2.0 / (9.0 * k))) / std::sqrt(2.0 / (9.0 * k));
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

AlignedBuffer padded(const Vec& v, std::size_t stride) {
  AlignedBuffer p = aligned_zeros(stride);
  for (Eigen::Index j = 0; j < v.size(); ++j) p[static_cast<std::size_t>(j)] = v[j];
  return p;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("BrightSet keeps its invariants under random flip sequences") {
    auto ds = test::logistic_data(500, 5, 11);
    BrightSet bs(*ds);
    std::set<Index> ref;
    Rng rng(1, 2);
    for (int step = 0; step < 20000; ++step) {
      const auto n = static_cast<Index>(rng.below(500));
      if (bs.is_bright(n)) {
        bs.darken(n);
        ref.erase(n);
      } else {
        bs.brighten(n, static_cast<double>(n));  // cache tag = index, checked below
        ref.insert(n);
      }
      REQUIRE(bs.size() == ref.size());
      if (step % 997 == 0) {
        bs.check_invariants();
        for (std::size_t i = 0; i < bs.size(); ++i) {
          CHECK(ref.count(bs.bright(i)) == 1);
          CHECK(bs.log_ltilde()[i] == static_cast<double>(bs.bright(i)));
        }
        for (Index m = 0; m < 500; ++m) CHECK(bs.is_bright(m) == (ref.count(m) == 1));
      }
    }
    bs.check_invariants();
  }

  TEST_CASE("BrightSet::check_invariants detects corruption") {
    auto ds = test::logistic_data(10, 3, 1);
    BrightSet bs(*ds);
    bs.brighten(3, 0.0);
    bs.check_invariants();
    // A packed row that no longer matches its datum must be caught.
    const_cast<double*>(bs.packed_rows())[0] += 1.0;
    CHECK_THROWS_AS(bs.check_invariants(), std::logic_error);
  }

  TEST_CASE("PositionTable: inserts, lookups and backward-shift erases agree with std::map") {
    // Keys crowded into a small table (probe runs that wrap around its end) and spread over the
    // whole Index range; every erase is followed by a check of every remaining key.
    for (const Index spread : {Index{64}, ~Index{0} - 1}) {
      CAPTURE(spread);
      PositionTable t;
      std::map<Index, Index> ref;
      Rng rng(12, spread);
      for (int step = 0; step < 20000; ++step) {
        const auto n = static_cast<Index>(rng.below(spread));
        if (ref.count(n) == 1 && rng.uniform() < 0.6) {
          t.erase(n);
          ref.erase(n);
        } else if (ref.count(n) == 1) {
          const auto v = static_cast<Index>(step);
          t.assign(n, v);
          ref[n] = v;
        } else if (ref.size() < 40) {
          t.reserve(ref.size() + 1);
          t.insert(n, static_cast<Index>(step));
          ref[n] = static_cast<Index>(step);
        }
        if (step % 37 == 0)
          for (const auto& [k, v] : ref) {
            REQUIRE(t.contains(k));
            CHECK(t.find(k) == v);
          }
        CHECK(!t.contains(spread));  // never inserted
      }
    }
  }
}

namespace {
/// After z-updates, the gradient kept up to date from the flipped data alone
/// (FlyTarget::apply_flips) equals a fresh evaluation at the same θ and z.
template <class M>
void check_incremental_gradient(std::shared_ptr<const Dataset> ds) {
  RunConfig cfg = flymc::test::fixed_config();
  const M model(ds, cfg);
  const MapResult map = model.find_map();
  const auto bound = M::Bound::make(model, cfg, map);
  const std::size_t p = model.dim();
  BrightSet bright(*ds);
  bright.enable_coefs(model.layout().k);
  FlyTarget<M> fly(model, bound, bright);
  Rng rng(3, 4);
  std::vector<double> theta(p), grad(p), fresh(p);
  for (std::size_t j = 0; j < p; ++j)
    theta[j] =
        map.theta[static_cast<Eigen::Index>(j)] +
        2.0 *
            std::sqrt(map.covariance(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j))) *
            rng.normal();
  fly.set_current(theta.data());
  Counters c;
  ExplicitZUpdater expl(0.5);
  ImplicitZUpdater imp(0.3);
  for (int sweep = 0; sweep < 20; ++sweep) {
    if (sweep == 0 || sweep % 7 == 3) {  // a fresh evaluation now and then, as an accepted move
      fly.eval_grad(theta.data(), grad.data(), c);
      fly.accept();
    }
    std::size_t flips;
    if (sweep % 2 == 0) {
      expl.update(bound, *ds, bright, fly.current_padded(), rng, c);
      fly.apply_flips(expl.flips(), grad.data());
      flips = expl.flips().on.size() + expl.flips().off.size();
    } else {
      imp.update(bound, *ds, bright, fly.current_padded(), rng, c);
      fly.apply_flips(imp.flips(), grad.data());
      flips = imp.flips().on.size() + imp.flips().off.size();
    }
    CHECK(flips > 0);
    const double lp = fly.current();
    CHECK(fly.eval_grad(theta.data(), fresh.data(), c) == doctest::Approx(lp).epsilon(1e-12));
    double scale = 1.0;
    for (double v : fresh) scale = std::max(scale, std::fabs(v));
    for (std::size_t j = 0; j < p; ++j) CHECK(std::fabs(grad[j] - fresh[j]) <= 1e-10 * scale);
  }
}
}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("the gradient updated from the flipped data equals a fresh one (logistic, softmax)") {
    check_incremental_gradient<LogisticModel>(test::logistic_data(300, 4, 9, 2.0));
    check_incremental_gradient<SoftmaxModel>(test::softmax_data(300, 4, 3, 9));
  }
}

TEST_SUITE("statistical") {
  // Each z-updater must leave p(z | θ) = Π_n Bernoulli(1 − B_n/L_n) invariant. Start R independent
  // replicates from an exact draw of p(z | θ), apply one update, and test the per-datum bright
  // counts against Binomial(R, p_n) with a chi-square over the N data (independent across n given
  // θ). With R = 20000 and p_n spread over (0.02, 0.98), a reversed inequality in the implicit
  // update (docs/math.md §1.2) moves the counts by hundreds of standard errors; the fixed seed
  // makes the test deterministic, and the cut p > 1e-3 is the false-alarm rate for a correct
  // sampler. The fifth updater uses per-datum rates q_n (thinned proposals; mutation: using q_max
  // instead of q_n in either acceptance fails it).
  TEST_CASE("the automatic z-update rate: 0.01 up to N = 3,200, a constant sweep cost beyond") {
    // The rule itself: min(cap, max(32, 4·B)/N), the cap 0.01 unless given (HMC and NUTS: 0.1).
    CHECK(auto_q_cap(KernelKind::rwmh) == 0.01);
    CHECK(auto_q_cap(KernelKind::mala) == 0.01);
    CHECK(auto_q_cap(KernelKind::slice) == 0.01);
    CHECK(auto_q_cap(KernelKind::hmc) == 0.1);
    CHECK(auto_q_cap(KernelKind::nuts) == 0.1);
    CHECK(auto_q_dark_to_bright(2000.0, 10000, 0.1) == 0.1);
    CHECK(auto_q_dark_to_bright(200.0, 10000, 0.1) == doctest::Approx(0.08));
    CHECK(auto_q_dark_to_bright(20.0, 1000000, 0.1) == doctest::Approx(8e-5));
    CHECK(auto_q_dark_to_bright(0.0, 1000) == 0.01);
    CHECK(auto_q_dark_to_bright(2000.0, 10000) == 0.01);
    CHECK(auto_q_dark_to_bright(0.0, 1000000) == doctest::Approx(3.2e-5));
    CHECK(auto_q_dark_to_bright(5.0, 1000000) == doctest::Approx(3.2e-5));
    CHECK(auto_q_dark_to_bright(20.0, 1000000) == doctest::Approx(8e-5));
    CHECK(auto_q_dark_to_bright(1000.0, 1000000) == doctest::Approx(4e-3));
    CHECK(auto_q_dark_to_bright(1e5, 1000000) == 0.01);
    CHECK(auto_q_dark_to_bright(std::nan(""), 1000000) == doctest::Approx(3.2e-5));
    CHECK(auto_q_dark_to_bright(0.0, 0) == 0.01);

    // In a run: resolved at set-up and reported. Tall data with MAP-tuned bounds keep a few data
    // bright, so q = 32/N; the untuned bound keeps most of them bright, so q = 0.01; an explicit
    // q is used as given.
    const std::size_t n = 40000;
    const auto data = test::logistic_data(n, 3, 17);
    RunConfig cfg = flymc::test::fixed_config();
    cfg.chains = 1;
    cfg.warmup = 20;
    cfg.iters = 20;
    RunResult r = run(cfg, data);
    REQUIRE(r.bright_mean() < 8.0);
    CHECK(r.q_dark_to_bright == doctest::Approx(32.0 / double(n)));
    cfg.bound = BoundTuning::untuned;
    r = run(cfg, data);
    REQUIRE(r.bright_mean() > 0.01 * double(n));
    CHECK(r.q_dark_to_bright == 0.01);
    cfg.bound = BoundTuning::map;
    cfg.q_dark_to_bright = 0.2;
    CHECK(run(cfg, data).q_dark_to_bright == 0.2);
  }

  TEST_CASE("implicit z-update: candidates at rate q from their own stream, replayed by a seek") {
    const std::size_t n = 4000;
    auto ds = test::logistic_data(n, 3, 23, 2.0);
    LogisticModel model(ds, 1.0);
    const auto bound = LogisticBound::untuned(model, 1.5, Vec::Zero(3));
    Vec th(3);
    th << 0.8, -0.6, 0.3;
    AlignedBuffer tp = padded(th, ds->stride());
    const double q = 0.02;
    // Whole run: 40 sweeps. Resumed: a fresh updater seeked to sweep 20 on the state after 20.
    ImplicitZUpdater a(q), b(q);
    a.set_candidate_stream(42, 0);
    BrightSet sa(*ds), sb(*ds);
    Rng ra(5, 1);
    Counters ca, cb;
    double queries_sum = 0.0, dark_sum = 0.0;
    Rng rb;
    for (int sweep = 0; sweep < 40; ++sweep) {
      if (sweep == 20) {
        sb.restore(std::vector<Index>(sa.bright_indices(), sa.bright_indices() + sa.size()),
                   sa.log_ltilde());
        rb = ra;
        b.set_candidate_stream(42, 20);
      }
      const auto q0 = ca.queries;
      dark_sum += static_cast<double>(sa.num_dark());
      a.update(bound, *ds, sa, tp.get(), ra, ca);
      queries_sum += static_cast<double>(ca.queries - q0);
      if (sweep >= 20) b.update(bound, *ds, sb, tp.get(), rb, cb);
    }
    REQUIRE(sb.size() == sa.size());
    for (std::size_t i = 0; i < sa.size(); ++i) CHECK(sb.bright(i) == sa.bright(i));
    CHECK(rb.uniform() == ra.uniform());
    // Each dark datum is proposed w.p. q: the proposals are Binomial(Σ dark, q) in all.
    const double mean = q * dark_sum, sd = std::sqrt(mean * (1.0 - q));
    CAPTURE(queries_sum);
    CHECK(std::fabs(queries_sum - mean) < 5.0 * sd);
  }

  TEST_CASE("z-updaters leave Bernoulli(1 - B/L) invariant (chi-square)") {
    const std::size_t n = 40;
    auto ds = test::logistic_data(n, 3, 21, 2.0);
    LogisticModel model(ds, 1.0);
    const auto bound = LogisticBound::untuned(model, 1.5, Vec::Zero(3));
    Vec th(3);
    th << 0.8, -0.6, 0.3;
    AlignedBuffer tp = padded(th, ds->stride());
    std::vector<double> p(n), llt(n);
    for (Index i = 0; i < n; ++i) {
      const double dot = kernels::dot(ds->row(i), tp.get(), ds->stride());
      const double delta = bound.log_lik(i, dot) - bound.log_bound(i, dot);
      p[i] = -std::expm1(-delta);
      llt[i] = kernels::log_expm1(delta);
    }
    const int reps = 20000;
    // Per-datum rates q_n spread over [0.02, 1] (docs/math.md §1.5), for the fifth updater, and one
    // q_n = 1 (bucket 0: every dark datum proposed).
    std::vector<double> log_rates(n);
    {
      Rng r(7, 7);
      for (auto& v : log_rates) v = std::log(0.02 + 0.98 * r.uniform());
      log_rates[3] = 0.0;
    }
    const ZRates rates(log_rates);
    // which: 0, 1 implicit at q = 0.3, 0.05; 2 explicit; 3 implicit then explicit; 4 per-datum
    // rates; 5 implicit at q = 1 (every dark datum proposed, in index order).
    for (int which = 0; which < 6; ++which) {
      CAPTURE(which);
      std::vector<double> count(n, 0.0);
      Rng rng(99, static_cast<std::uint64_t>(which));
      ImplicitZUpdater imp = which == 4   ? ImplicitZUpdater(rates)
                             : which == 5 ? ImplicitZUpdater(1.0)
                                          : ImplicitZUpdater(which == 0 ? 0.3 : 0.05);
      ExplicitZUpdater exp_up(which == 2 ? 0.5 : 0.1);
      Counters c;
      for (int r = 0; r < reps; ++r) {
        BrightSet bs(*ds);
        for (Index i = 0; i < n; ++i)
          if (rng.uniform() < p[i]) bs.brighten(i, llt[i]);
        if (which <= 1 || which >= 4) {
          imp.update(bound, *ds, bs, tp.get(), rng, c);
        } else if (which == 2) {
          exp_up.update(bound, *ds, bs, tp.get(), rng, c);
        } else {
          imp.update(bound, *ds, bs, tp.get(), rng, c);  // two updates in a row stay invariant
          exp_up.update(bound, *ds, bs, tp.get(), rng, c);
        }
        for (std::size_t i = 0; i < bs.size(); ++i) count[bs.bright(i)] += 1.0;
        // Cached log L̃ of bright data must be the value at θ.
        if (r % 1000 == 0)
          for (std::size_t i = 0; i < bs.size(); ++i)
            CHECK(bs.log_ltilde()[i] == doctest::Approx(llt[bs.bright(i)]).epsilon(1e-12));
      }
      double stat = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        const double e = reps * p[i], v = reps * p[i] * (1.0 - p[i]);
        stat += (count[i] - e) * (count[i] - e) / v;
      }
      const double pval = chi2_pvalue(stat, static_cast<double>(n));
      CAPTURE(stat);
      CHECK(pval > 1e-3);
    }
    // The spread of p_n makes the test sensitive.
    CHECK(*std::min_element(p.begin(), p.end()) < 0.1);
    CHECK(*std::max_element(p.begin(), p.end()) > 0.5);
  }
}
