// Within-chain parallelism (FlyTarget's bright evaluation on oneTBB, core/parallel.hpp): the
// parallel evaluation equals the serial one bit for bit, and a run whose bright set is above the
// threshold gives the same draws on 1 and 2 threads (Stan's parallel_match tests).
#include <doctest/doctest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "flymc/core/parallel.hpp"
#include "flymc/mcmc/fly/targets.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/softmax.hpp"
#include "test_util.hpp"

using namespace flymc;

TEST_SUITE("unit") {
  TEST_CASE("chunked_for: chunks at multiples of the grain, none spawned for one chunk" *
            doctest::test_suite("threaded")) {
    std::vector<int> seen(1000, 0);
    std::atomic<int> calls{0};
    tbb::task_arena arena(2);
    arena.execute([&] {
      chunked_for(seen.size(), 64, [&](std::size_t b, std::size_t e) {
        CHECK(b % 64 == 0);
        CHECK(e == std::min<std::size_t>(b + 64, seen.size()));
        for (std::size_t i = b; i < e; ++i) ++seen[i];
        ++calls;
      });
    });
    CHECK(calls == 16);
    for (int s : seen) CHECK(s == 1);
    calls = 0;
    chunked_for(64, 64, [&](std::size_t b, std::size_t e) {
      CHECK(b == 0);
      CHECK(e == 64);
      ++calls;
    });
    chunked_for(0, 64, [&](std::size_t, std::size_t) { ++calls; });
    CHECK(calls == 1);
  }

  TEST_CASE("FlyTarget: the parallel bright evaluation equals the serial one bit for bit" *
            doctest::test_suite("threaded")) {
    // 1,500 bright rows of D = 61 (stride 64), K = 3: several row chunks and column slices.
    const auto ds = test::softmax_data(2000, 61, 3, 17);
    const SoftmaxModel model(ds, Prior{});
    const MapResult map = model.find_map();
    const SoftmaxBound bound = SoftmaxBound::untuned(model, map.theta);
    std::vector<double> theta(map.theta.data(), map.theta.data() + map.theta.size());
    Rng rng(4, 0);
    for (double& t : theta) t += 0.05 * rng.normal();
    struct Out {
      double lp = 0.0;
      std::vector<double> grad, llt, coef;
      std::size_t violations = 0, clamped = 0;
    };
    auto evaluate = [&](int threads, std::size_t min_work) {
      BrightSet bright(*ds);
      bright.enable_coefs(3);
      const double zero_coef[3] = {0.0, 0.0, 0.0};
      for (Index n = 0; n < 1500; ++n) bright.brighten(n, 0.0, zero_coef);
      FlyTarget<SoftmaxModel> target(model, bound, bright);
      target.set_parallel_min_work(min_work);
      Out o;
      o.grad.resize(theta.size());
      Counters c;
      tbb::task_arena arena(threads);
      arena.execute([&] {
        target.eval(theta.data(), c);  // a plain evaluation first: the scratch is reused
        o.lp = target.eval_grad(theta.data(), o.grad.data(), c);
      });
      target.accept();
      o.llt.assign(bright.log_ltilde(), bright.log_ltilde() + bright.size());
      o.coef.assign(bright.coefs(), bright.coefs() + bright.size() * 3);
      o.violations = c.bound_violations;
      o.clamped = c.bound_clamps;
      return o;
    };
    const std::size_t never = std::numeric_limits<std::size_t>::max();
    const Out serial = evaluate(1, never);
    REQUIRE(std::isfinite(serial.lp));
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      const Out par = evaluate(threads, 0);
      CHECK(par.lp == serial.lp);
      CHECK(par.grad == serial.grad);
      CHECK(par.llt == serial.llt);
      CHECK(par.coef == serial.coef);
      CHECK(par.violations == serial.violations);
      CHECK(par.clamped == serial.clamped);
    }
  }

  TEST_CASE("softmax FlyMC above the parallel threshold: the same draws on 1 and 2 threads" *
            doctest::test_suite("threaded")) {
    // Untuned bounds keep most of the 2,000 data bright: ~1,800 rows × K = 3 × stride 88 is above
    // FlyTarget::kParallelMinWork, so every evaluation runs on oneTBB.
    const auto ds = test::softmax_data(2000, 88, 3, 23);
    RunConfig cfg = flymc::test::fixed_config();
    cfg.model = ModelKind::softmax;
    cfg.softmax_bound = SoftmaxBoundKind::bohning;
    cfg.bound = BoundTuning::untuned;
    cfg.kernel = KernelKind::mala;
    cfg.chains = 2;
    cfg.warmup = 30;
    cfg.iters = 60;
    cfg.seed = 9;
    cfg.threads = 1;
    const RunResult a = run(cfg, ds);
    cfg.threads = 2;
    const RunResult b = run(cfg, ds);
    REQUIRE(a.bright_mean() * 3.0 * 88.0 >
            static_cast<double>(FlyTarget<SoftmaxModel>::kParallelMinWork));
    for (std::size_t c = 0; c < 2; ++c) {
      REQUIRE(a.chains[c].draws.size() == b.chains[c].draws.size());
      CHECK(a.chains[c].draws == b.chains[c].draws);
      CHECK(a.chains[c].lp == b.chains[c].lp);
    }
    CHECK(a.chains[0].draws != a.chains[1].draws);
  }
}
