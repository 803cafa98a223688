// Checkpoint files (round trip, corruption detection), BrightSet restore, and in-process resume:
// a run stopped (with or without saving, i.e. as if killed) and resumed, in warm-up and in
// sampling, on 1 and 2 threads, gives the same draw-file bytes and the same draws as an
// uninterrupted run. Also the bound-violation counting and its reporting in the draw files.
#include <doctest/doctest.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/io/checkpoint.hpp"
#include "flymc/io/output.hpp"
#include "flymc/io/stan_csv.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/fly/bright_set.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/logistic.hpp"
#include "test_util.hpp"

using namespace flymc;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("flymc-ckpt-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

ChainState sample_chain_state(std::size_t n) {
  ChainState c;
  c.chain_id = 3;
  c.tally.iteration = 1234;
  c.sink_position = 98765;
  c.kept = 77;
  c.rng = Rng(5, 6).state();
  c.theta = {0.5, -1.25, 3e-300, -0.0};
  c.step_size = 0.0123;
  c.kernel_state = {0.0123, 1.5, -2.5, 3e-300};
  c.counters.grad_evals = 17;
  c.counters.divergences = 4;
  c.tally.since_z = 2;
  c.tally.window_steps = 3;
  c.tally.window_accept = 0.75;
  c.tally.accept_sum = 12.5;
  c.tally.bright_sum = 1e6;
  c.counters.queries = 1ULL << 40;
  c.counters.bound_violations = 1;
  c.counters.bound_clamps = 2;
  c.counters.nonfinite = 3;
  c.counters.slice_failures = 5;
  c.tally.divergences_at_sampling = 6;
  c.tally.queries_at_sampling = 11;
  c.tally.queries_at_row = 13;
  c.timers.z_init = 0.1;
  c.timers.warmup = 1.5;
  c.timers.sampling = 2.5;
  c.timers.wall_z_init = 0.05;
  c.timers.wall_warmup = 0.75;
  c.timers.wall_sampling = 1.25;
  c.bright = {static_cast<Index>(n - 1), 7};
  c.log_ltilde = {-3.5, 0.25};
  return c;
}

void check_equal(const ChainState& a, const ChainState& b) {
  CHECK(a.chain_id == b.chain_id);
  CHECK(a.finished == b.finished);
  CHECK(a.tally.iteration == b.tally.iteration);
  CHECK(a.sink_position == b.sink_position);
  CHECK(a.kept == b.kept);
  CHECK(std::memcmp(&a.rng, &b.rng, sizeof a.rng) == 0);
  CHECK(a.theta.size() == b.theta.size());
  CHECK(std::memcmp(a.theta.data(), b.theta.data(), a.theta.size() * sizeof(double)) == 0);
  CHECK(a.step_size == b.step_size);
  CHECK(a.kernel_state == b.kernel_state);
  CHECK(a.counters.grad_evals == b.counters.grad_evals);
  CHECK(a.counters.divergences == b.counters.divergences);
  CHECK(a.tally.since_z == b.tally.since_z);
  CHECK(a.tally.window_steps == b.tally.window_steps);
  CHECK(a.tally.window_accept == b.tally.window_accept);
  CHECK(a.tally.accept_sum == b.tally.accept_sum);
  CHECK(a.tally.bright_sum == b.tally.bright_sum);
  CHECK(a.counters.queries == b.counters.queries);
  CHECK(a.counters.bound_violations == b.counters.bound_violations);
  CHECK(a.counters.bound_clamps == b.counters.bound_clamps);
  CHECK(a.counters.nonfinite == b.counters.nonfinite);
  CHECK(a.counters.slice_failures == b.counters.slice_failures);
  CHECK(a.tally.divergences_at_sampling == b.tally.divergences_at_sampling);
  CHECK(a.tally.queries_at_sampling == b.tally.queries_at_sampling);
  CHECK(a.tally.queries_at_row == b.tally.queries_at_row);
  CHECK(a.timers.z_init == b.timers.z_init);
  CHECK(a.timers.warmup == b.timers.warmup);
  CHECK(a.timers.sampling == b.timers.sampling);
  CHECK(a.timers.wall_z_init == b.timers.wall_z_init);
  CHECK(a.timers.wall_warmup == b.timers.wall_warmup);
  CHECK(a.timers.wall_sampling == b.timers.wall_sampling);
  CHECK(a.bright == b.bright);
  CHECK(a.log_ltilde == b.log_ltilde);
}

std::string error_of(std::span<const unsigned char> bytes) {
  try {
    decode_chain_checkpoint(bytes, "x.ckpt");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::shared_ptr<Dataset> copy_of(const Dataset& a) {
  auto b = std::make_shared<Dataset>(a.n(), a.d(), a.source());
  for (std::size_t i = 0; i < a.n(); ++i)
    std::copy(a.row(i), a.row(i) + a.stride(), b->mutable_row(i));
  b->mutable_y().assign(a.y().begin(), a.y().end());
  return b;
}

/// A run with Stan CSV sinks in `dir` and optional checkpointing.
RunResult run_in(const RunConfig& cfg, std::shared_ptr<const Dataset> data, const fs::path& dir,
                 const CheckpointOptions* ck = nullptr, const FaultInjection& hooks = {}) {
  return run(cfg, data, stan_csv_sinks(dir.string(), cfg, {{"data", "synthetic"}}), nullptr, ck,
             hooks);
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("hash_bytes changes with every single byte and with the length") {
    std::vector<unsigned char> buf(101);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7);
    const std::uint64_t h = hash_bytes(buf.data(), buf.size());
    CHECK(h == hash_bytes(buf.data(), buf.size()));
    for (std::size_t i = 0; i < buf.size(); ++i)
      for (int bit = 0; bit < 8; bit += 3) {
        buf[i] ^= static_cast<unsigned char>(1u << bit);
        CHECK(hash_bytes(buf.data(), buf.size()) != h);
        buf[i] ^= static_cast<unsigned char>(1u << bit);
      }
    for (std::size_t len = 0; len < buf.size(); ++len)
      CHECK(hash_bytes(buf.data(), len) != hash_bytes(buf.data(), len + 1));
  }

  TEST_CASE("data_fingerprint identifies the values and does not depend on the thread count") {
    auto a = test::logistic_data(9000, 3, 1);  // three 4096-row chunks
    auto b = copy_of(*a);
    std::uint64_t f1 = 0, f2 = 0;
    tbb::task_arena(1).execute([&] { f1 = data_fingerprint(*a); });
    tbb::task_arena(2).execute([&] { f2 = data_fingerprint(*a); });
    CHECK(f1 == f2);
    CHECK(data_fingerprint(*b) == f1);
    b->mutable_row(8999)[2] = std::nextafter(b->row(8999)[2], 10.0);
    CHECK(data_fingerprint(*b) != f1);
    b = copy_of(*a);
    b->mutable_y()[0] = -b->y()[0];
    CHECK(data_fingerprint(*b) != f1);
  }

  TEST_CASE("checkpoint files round trip: chain states and manifest") {
    const fs::path dir = temp_dir("roundtrip");
    for (std::size_t n : {40, 4000}) {
      CAPTURE(n);
      const ChainState c = sample_chain_state(n);
      const auto bytes = encode_checkpoint(c);
      check_equal(decode_chain_checkpoint(bytes, "mem"), c);
      save_chain_checkpoint(dir.string(), c);
      const auto loaded = load_chain_checkpoint(dir.string(), 3);
      REQUIRE(loaded.has_value());
      check_equal(*loaded, c);
      for (const auto& e : fs::directory_iterator(dir))  // no temporary left
        CHECK(e.path().extension() == ".ckpt");
    }
    // The bright set is stored as its bright indices: a chain's state does not grow with N.
    CHECK(encode_checkpoint(sample_chain_state(4000000)).size() ==
          encode_checkpoint(sample_chain_state(40)).size());
    CHECK(!load_chain_checkpoint(dir.string(), 4).has_value());  // never saved: none

    RunManifest m;
    m.config.algo = Algo::flymc;
    m.config.z = ZUpdate::explicit_;
    m.config.metric = Metric::dense;
    m.config.chains = 3;
    m.config.seed = 123456789012345ULL;
    m.config.thin = 7;
    m.config.bound_slack = 0.25;
    m.config.softmax_bound = SoftmaxBoundKind::bohning;  // not the default
    m.checkpoint_every = 500;
    m.data_arg = "data/d.csv";
    m.data_path = "/abs/data/d.csv";
    m.n = 1000;
    m.d = 2;
    m.data_hash = 0xdeadbeefULL;
    m.map.theta = Vec(2);
    m.map.theta << 0.5, -0.25;
    m.map.covariance = Mat(2, 2);
    m.map.covariance << 1.0, 0.1, 0.1, 2.0;
    m.map.log_post = -12.5;
    m.map.iterations = 6;
    m.map.chain_starts = {Vec::Constant(2, 0.75), Vec::Constant(2, -1.5)};  // auto's handover
    m.setup_seconds = 0.5;
    m.simd = "avx2";
    save_run_manifest(dir.string(), m);
    const RunManifest r = load_run_manifest(dir.string());
    CHECK(encode_checkpoint(r) == encode_checkpoint(m));
    CHECK(r.map.chain_starts == m.map.chain_starts);
    CHECK(r.config.metric == Metric::dense);
    CHECK(r.config.softmax_bound == SoftmaxBoundKind::bohning);
    CHECK(r.config.seed == m.config.seed);
    CHECK(r.data_path == m.data_path);
    CHECK(r.map.covariance(1, 0) == 0.1);
    CHECK(r.simd == "avx2");
    remove_checkpoints(dir.string());
    CHECK_THROWS_AS(load_run_manifest(dir.string()), ConfigError);
    fs::remove_all(dir);
  }

  // Replays a bug: MapResult's log_post, iterations and seconds had no initializers, so a
  // default-initialized manifest encoded stack garbage, and resume's comparison of the stored
  // options (which encodes two manifests) refused a matching run in optimized sanitizer builds.
  TEST_CASE("a default-initialized manifest encodes no leftover memory") {
    auto encode_over = [](unsigned char fill) {
      alignas(RunManifest) unsigned char buf[sizeof(RunManifest)];
      std::memset(buf, fill, sizeof buf);
      auto* m = new (buf) RunManifest;  // default-initialization: no zeroing first
      std::vector<unsigned char> bytes = encode_checkpoint(*m);
      m->~RunManifest();
      return bytes;
    };
    CHECK(encode_over(0x00) == encode_over(0xAB));
  }

  TEST_CASE("a flipped byte, a truncation, another kind or version, or a foreign file is refused") {
    const auto good = encode_checkpoint(sample_chain_state(30));
    REQUIRE(error_of(good).empty());
    // Every byte flipped (one bit): always caught, by the magic, the header checks or the
    // checksum (a single-word change cannot collide: hash_bytes is bijective in each word).
    for (std::size_t i = 0; i < good.size(); ++i) {
      auto bad = good;
      bad[i] ^= 0x10;
      CAPTURE(i);
      CHECK(!error_of(bad).empty());
    }
    for (std::size_t len = 0; len < good.size(); ++len) {
      CAPTURE(len);
      CHECK(!error_of(std::span(good.data(), len)).empty());
    }
    auto longer = good;
    longer.push_back(0);
    CHECK(error_of(longer).find("torn") != std::string::npos);
    auto flipped = good;
    flipped[40] ^= 1;
    CHECK(error_of(flipped).find("checksum") != std::string::npos);
    CHECK(error_of(std::span(good.data(), good.size() - 3)).find("truncated") != std::string::npos);
    const std::string csv = "lp__,theta.1\n1,2\n";
    CHECK(error_of(std::span(reinterpret_cast<const unsigned char*>(csv.data()), csv.size()))
              .find("not a flymc checkpoint") != std::string::npos);
    // A run manifest where a chain state is expected.
    RunManifest m;
    m.map.theta = Vec::Zero(1);
    m.map.covariance = Mat::Identity(1, 1);
    m.d = 1;
    CHECK(error_of(encode_checkpoint(m)).find("run manifest") != std::string::npos);
    // Another format version (with a valid checksum): named as such.
    auto v2 = good;
    v2[8] = static_cast<unsigned char>(kCheckpointFormat + 1);
    const std::uint64_t h = hash_bytes(v2.data(), v2.size() - 8);
    std::memcpy(v2.data() + v2.size() - 8, &h, 8);
    CHECK(error_of(v2).find("version " + std::to_string(kCheckpointFormat + 1)) !=
          std::string::npos);
    // A damaged file on disk: ConfigError from the loader, naming the file.
    const fs::path dir = temp_dir("corrupt");
    auto bad = good;
    bad[good.size() / 2] ^= 0xff;
    std::ofstream(dir / "chain-3.ckpt", std::ios::binary)
        .write(reinterpret_cast<const char*>(bad.data()), static_cast<std::streamsize>(bad.size()));
    try {
      load_chain_checkpoint(dir.string(), 3);
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("chain-3.ckpt") != std::string::npos);
      CHECK(e.exit_code() == 78);
    }
    fs::remove_all(dir);
  }

  TEST_CASE("BrightSet::restore rebuilds the state saved from bright_indices() and log_ltilde()") {
    auto ds = test::logistic_data(300, 4, 2);
    BrightSet a(*ds);
    Rng rng(3, 4);
    for (int k = 0; k < 2000; ++k) {
      const auto n = static_cast<Index>(rng.below(300));
      if (a.is_bright(n)) {
        a.darken(n);
      } else {
        a.brighten(n, rng.normal());
      }
    }
    std::vector<Index> bright(a.bright_indices(), a.bright_indices() + a.size());
    REQUIRE(bright.size() > 6);
    BrightSet b(*ds);
    b.restore(bright, a.log_ltilde());
    b.check_invariants();
    REQUIRE(b.size() == a.size());
    CHECK(std::equal(bright.begin(), bright.end(), b.bright_indices()));
    CHECK(std::equal(a.log_ltilde(), a.log_ltilde() + a.size(), b.log_ltilde()));
    CHECK(std::memcmp(a.packed_rows(), b.packed_rows(), a.size() * a.stride() * sizeof(double)) ==
          0);
    for (Index n = 0; n < 300; ++n) CHECK(a.is_bright(n) == b.is_bright(n));
    // The same flips on both continue identically (the positions were rebuilt too).
    for (int k = 0; k < 500; ++k) {
      const auto n = static_cast<Index>(rng.below(300));
      if (a.is_bright(n)) {
        a.darken(n);
        b.darken(n);
      } else {
        a.brighten(n, 0.5);
        b.brighten(n, 0.5);
      }
    }
    CHECK(std::equal(a.bright_indices(), a.bright_indices() + a.size(), b.bright_indices()));
    std::vector<Index> twice = bright;
    twice[5] = twice[6];
    CHECK_THROWS_AS(b.restore(twice, a.log_ltilde()), std::invalid_argument);
    std::vector<Index> outside = bright;
    outside[2] = 300;
    CHECK_THROWS_AS(b.restore(outside, a.log_ltilde()), std::invalid_argument);
  }

  TEST_CASE("bound checks: sub-tolerance negatives are clamped and counted, larger ones violate") {
    auto ds = test::logistic_data(500, 3, 8);
    LogisticModel model(ds, 1.0);
    const MapResult map = model.find_map();
    AlignedBuffer tp = aligned_zeros(ds->stride());
    for (std::size_t j = 0; j < 3; ++j) tp[j] = map.theta[static_cast<Eigen::Index>(j)];
    std::vector<Index> idx(500);
    std::vector<double> dots(500), delta(500);
    for (Index i = 0; i < 500; ++i) {
      idx[i] = i;
      dots[i] = kernels::dot(ds->row(i), tp.get(), ds->stride());
    }
    // At θ_MAP the MAP-tuned bound is tight for every datum: Δ_n is 0 up to rounding (~1e-15).
    auto bound = LogisticBound::map_tuned(model, map.theta);
    const BoundCheck tight = bound.deltas(idx.data(), dots.data(), 500, delta.data());
    CHECK(tight.violations == 0);
    // Raised by 1e-12 (inside the 1e-9 tolerance): every Δ_n goes negative and is clamped.
    bound.raise_for_testing(1e-12);
    const BoundCheck clamped = bound.deltas(idx.data(), dots.data(), 500, delta.data());
    CHECK(clamped.violations == 0);
    CHECK(clamped.clamped == 500);
    for (double v : delta) CHECK(v == 0.0);
    // Raised by 1e-6 more: every datum is a violation.
    bound.raise_for_testing(1e-6);
    const BoundCheck violated = bound.deltas(idx.data(), dots.data(), 500, delta.data());
    CHECK(violated.violations == 500);
    CHECK(violated.clamped == 0);
  }

  TEST_CASE("a forced bound violation is counted per chain and written into the draw files") {
    auto ds = test::logistic_data(2000, 3, 9);
    const fs::path dir = temp_dir("violation");
    RunConfig cfg = flymc::test::fixed_config();
    cfg.chains = 2;
    cfg.warmup = 200;
    cfg.iters = 400;
    cfg.seed = 4;
    cfg.threads = 2;
    cfg.on_bound_violation = OnViolation::finish;
    for (double excess : {0.0, 1e-3}) {
      CAPTURE(excess);
      FaultInjection hooks;
      hooks.bound_excess = excess;
      const RunResult r = run_in(cfg, ds, dir, nullptr, hooks);
      if (excess == 0.0) {
        CHECK(r.bound_violations() == 0);
      } else {
        // Near θ_MAP many data have Δ_n < 1e-3: the raised bound is above their likelihood.
        CHECK(r.bound_violations() > 100);
      }
      for (const ChainResult& c : r.chains) {
        const StanCsv csv =
            read_stan_csv((dir / ("chain-" + std::to_string(c.chain_id) + ".csv")).string());
        std::string violations, clamps, slice_failures;
        for (const auto& [k, v] : csv.diagnostics) {
          if (k == "bound_violations") violations = v;
          if (k == "bound_clamps") clamps = v;
          if (k == "slice_failures") slice_failures = v;
        }
        CHECK(violations == std::to_string(c.counters.bound_violations));
        CHECK(clamps == std::to_string(c.counters.bound_clamps));
        CHECK(slice_failures == "0");                // written beside the bound checks
        CHECK(std::isfinite(csv.sampling_seconds));  // the Elapsed Time block is still read
      }
    }
    fs::remove_all(dir);
  }

  TEST_CASE("stopped and resumed runs equal an uninterrupted run, byte for byte" *
            doctest::test_suite("threaded")) {
    auto ds = test::logistic_data(3000, 4, 12);
    struct Case {
      const char* name;
      Algo algo;
      ZUpdate z;
      SmhProposal proposal = SmhProposal::pcn;
      int smh_order = 2;
    };
    // Scalable MH: pCN tunes ρ over the second half of warm-up (iterations 150-299 here), where
    // its first session stops; the random walk adapts its step by dual averaging.
    const Case cases[] = {{"flymc implicit", Algo::flymc, ZUpdate::implicit},
                          {"flymc explicit", Algo::flymc, ZUpdate::explicit_},
                          {"full", Algo::full, ZUpdate::implicit},
                          {"smh pcn", Algo::smh, ZUpdate::implicit, SmhProposal::pcn},
                          {"smh rw", Algo::smh, ZUpdate::implicit, SmhProposal::rw},
                          {"smh pcn order 3", Algo::smh, ZUpdate::implicit, SmhProposal::pcn, 3}};
    for (const Case& k : cases) {
      const std::string name = k.name;
      CAPTURE(name);
      const bool smh = k.algo == Algo::smh;
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = k.algo;
      cfg.z = k.z;
      cfg.proposal = k.proposal;
      cfg.smh_order = k.smh_order;
      cfg.chains = 3;
      cfg.warmup = 300;
      cfg.iters = k.algo == Algo::full ? 600 : 1500;
      cfg.thin = 3;
      if (!smh) {
        cfg.theta_steps = 4;
        cfg.q_dark_to_bright = 0.05;
        cfg.resample_fraction = 0.05;
      }
      cfg.seed = 31;
      const fs::path ref_dir = temp_dir("ref"), dir = temp_dir("resumed");
      cfg.threads = 2;
      const RunResult ref = run_in(cfg, ds, ref_dir);  // no checkpointing at all

      CheckpointOptions ck;
      FaultInjection hooks;
      ck.store = checkpoint_directory((dir / "checkpoint").string());
      ck.every = 50;
      // Session 1 stops in warm-up (saving), on 1 thread.
      cfg.threads = 1;
      hooks.stop_at = smh ? 211 : 137;
      CHECK(run_in(cfg, ds, dir, &ck, hooks).stopped);
      // Session 2 resumes on 2 threads and stops exactly at the end of warm-up (iteration 300,
      // before the switch to sampling).
      ck.resume = true;
      cfg.threads = 2;
      hooks.stop_at = 300;
      CHECK(run_in(cfg, ds, dir, &ck, hooks).stopped);
      // Session 3 "dies" in sampling without saving: the draw files run past the last state
      // (iteration 550), which the next resume cuts back to.
      hooks.stop_at = 571;
      hooks.stop_without_saving = true;
      CHECK(run_in(cfg, ds, dir, &ck, hooks).stopped);
      // Session 4 stops (saving) late in sampling, on 1 thread.
      hooks.stop_without_saving = false;
      cfg.threads = 1;
      hooks.stop_at = cfg.warmup + cfg.iters - 7;
      CHECK(run_in(cfg, ds, dir, &ck, hooks).stopped);
      // Session 5 finishes; session 6 finds every chain finished and only re-reads them.
      hooks.stop_at = -1;
      cfg.threads = 2;
      RunResult r = run_in(cfg, ds, dir, &ck, hooks);
      CHECK(!r.stopped);
      const RunResult again = run_in(cfg, ds, dir, &ck, hooks);
      for (const RunResult* x : {static_cast<const RunResult*>(&r), &again}) {
        REQUIRE(x->chains.size() == ref.chains.size());
        for (std::size_t c = 0; c < ref.chains.size(); ++c) {
          CAPTURE(c);
          const ChainResult &a = ref.chains[c], &b = x->chains[c];
          CHECK(a.kept == b.kept);
          CHECK(a.draws == b.draws);
          CHECK(a.lp == b.lp);
          CHECK(a.step_size == b.step_size);
          CHECK(a.accept_rate == b.accept_rate);
          CHECK((a.bright_mean == b.bright_mean ||
                 (std::isnan(a.bright_mean) && std::isnan(b.bright_mean))));
          CHECK(a.counters.bound_violations == b.counters.bound_violations);
          CHECK(a.sampling_queries == b.sampling_queries);
          CHECK(a.counters.queries == b.counters.queries);
          CHECK(a.counters.bound_clamps == b.counters.bound_clamps);
          const std::string file = "chain-" + std::to_string(c + 1) + ".csv";
          CHECK(test::read_without_timing((dir / file).string()) ==
                test::read_without_timing((ref_dir / file).string()));
        }
        CHECK(x->queries_per_iter() == ref.queries_per_iter());
        const auto ps = summarize_params(*x), pr = summarize_params(ref);
        for (std::size_t j = 0; j < ps.size(); ++j) {
          CHECK(ps[j].s.mean == pr[j].s.mean);
          CHECK(ps[j].s.ess_bulk == pr[j].s.ess_bulk);
        }
      }
      fs::remove_all(ref_dir);
      fs::remove_all(dir);
    }
  }

  TEST_CASE("a finished chain saves its own timers, not its last segment twice (replays a bug)") {
    // The final state was saved after the chain had folded its open segment into the session's
    // sums, and the save added that segment again: a run resumed after every chain had finished
    // reported about twice the sampling time.
    auto ds = test::logistic_data(2000, 3, 5);
    for (const Algo algo : {Algo::full, Algo::smh}) {
      CAPTURE(to_string(algo));
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = algo;
      cfg.chains = 2;
      cfg.warmup = 200;
      cfg.iters = algo == Algo::smh ? 200000 : 20000;
      cfg.thin = 100;
      cfg.seed = 3;
      const fs::path dir = temp_dir("timers");
      CheckpointOptions ck;
      ck.store = checkpoint_directory((dir / "checkpoint").string());
      ck.every = 1000000;  // only the final save
      const RunResult r = run_in(cfg, ds, dir, &ck);
      for (const ChainResult& c : r.chains) {
        const std::optional<ChainState> st = ck.store->load_chain(c.chain_id);
        REQUIRE(st.has_value());
        CHECK(st->finished);
        REQUIRE(c.sampling_seconds > 0.0);
        // Equal but for the draw file's sync before the save.
        CHECK(st->timers.sampling >= c.sampling_seconds);
        CHECK(st->timers.sampling < 1.5 * c.sampling_seconds);
      }
      fs::remove_all(dir);
    }
  }

  TEST_CASE(
      "stopped and resumed runs equal an uninterrupted run: MALA, HMC, NUTS, slice, dense metric" *
      doctest::test_suite("threaded")) {
    // The θ-kernels' adaptation state (dual averaging, the dense metric, the Welford sums of the
    // open window) travels in the checkpoint: stopping in the middle of a slow window, being
    // killed in sampling and stopping again late change no byte of the draw files (whose
    // adaptation block holds the step size and the adapted M⁻¹).
    auto ds = test::logistic_data(1500, 3, 14);
    struct Case {
      const char* name;
      KernelKind kind;
      SliceMode mode;
      Algo algo;
      int theta_steps;
    };
    const Case cases[] = {
        {"mala flymc", KernelKind::mala, SliceMode::direction, Algo::flymc, 2},
        {"mala full", KernelKind::mala, SliceMode::direction, Algo::full, 1},
        {"hmc flymc", KernelKind::hmc, SliceMode::direction, Algo::flymc, 1},
        {"hmc full", KernelKind::hmc, SliceMode::direction, Algo::full, 1},
        {"nuts flymc", KernelKind::nuts, SliceMode::direction, Algo::flymc, 1},
        {"nuts full", KernelKind::nuts, SliceMode::direction, Algo::full, 1},
        {"slice direction flymc", KernelKind::slice, SliceMode::direction, Algo::flymc, 1},
        {"slice coordinate full", KernelKind::slice, SliceMode::coordinate, Algo::full, 1}};
    for (const Case& k : cases) {
      const std::string name = k.name;
      CAPTURE(name);
      RunConfig cfg = flymc::test::fixed_config();
      cfg.algo = k.algo;
      cfg.kernel = k.kind;
      cfg.slice_mode = k.mode;
      cfg.metric = Metric::dense;
      cfg.adapt_metric = true;
      cfg.hmc_steps = 8;
      cfg.chains = 2;
      cfg.warmup = 300;  // slow windows [75, 100), [100, 150), [150, 250)
      cfg.iters = 400;
      cfg.thin = 2;
      cfg.theta_steps = k.theta_steps;
      cfg.q_dark_to_bright = 0.05;
      cfg.seed = 57;
      const fs::path ref_dir = temp_dir("kref"), dir = temp_dir("kresumed");
      cfg.threads = 2;
      const RunResult ref = run_in(cfg, ds, ref_dir);

      CheckpointOptions ck;
      FaultInjection hooks;
      ck.store = checkpoint_directory((dir / "checkpoint").string());
      ck.every = 50;
      // Session 1 stops mid-window (iteration 130 of [100, 150)), on 1 thread.
      cfg.threads = 1;
      hooks.stop_at = 130;
      CHECK(run_in(cfg, ds, dir, &ck, hooks).stopped);
      // Session 2 is killed in sampling (no save): resumed from iteration 400.
      ck.resume = true;
      cfg.threads = 2;
      hooks.stop_at = 433;
      hooks.stop_without_saving = true;
      CHECK(run_in(cfg, ds, dir, &ck, hooks).stopped);
      // Session 3 stops (saving) in sampling, session 4 finishes.
      hooks.stop_without_saving = false;
      hooks.stop_at = 611;
      CHECK(run_in(cfg, ds, dir, &ck, hooks).stopped);
      hooks.stop_at = -1;
      const RunResult r = run_in(cfg, ds, dir, &ck, hooks);
      CHECK(!r.stopped);
      REQUIRE(r.chains.size() == ref.chains.size());
      for (std::size_t c = 0; c < ref.chains.size(); ++c) {
        CAPTURE(c);
        const ChainResult &a = ref.chains[c], &b = r.chains[c];
        CHECK(a.kept == b.kept);
        CHECK(a.draws == b.draws);
        CHECK(a.lp == b.lp);
        CHECK(a.step_size == b.step_size);
        CHECK(a.accept_rate == b.accept_rate);
        CHECK(a.counters.grad_evals == b.counters.grad_evals);
        CHECK(a.counters.divergences == b.counters.divergences);
        CHECK(a.counters.queries == b.counters.queries);
        const std::string file = "chain-" + std::to_string(c + 1) + ".csv";
        const std::string text = test::read_without_timing((ref_dir / file).string());
        CHECK(test::read_without_timing((dir / file).string()) == text);
        // The metric was adapted (the file's adaptation block holds a dense M⁻¹).
        CHECK(text.find("# Elements of inverse mass matrix:") != std::string::npos);
      }
      CHECK(ref.chains[0].draws != ref.chains[1].draws);
      fs::remove_all(ref_dir);
      fs::remove_all(dir);
    }
  }

  TEST_CASE("resume refuses other data, another configuration and damaged draw files") {
    auto ds = test::logistic_data(1500, 3, 13);
    const fs::path dir = temp_dir("refuse");
    RunConfig cfg = flymc::test::fixed_config();
    cfg.chains = 2;
    cfg.warmup = 100;
    cfg.iters = 400;
    cfg.seed = 2;
    CheckpointOptions ck;
    FaultInjection hooks;
    ck.store = checkpoint_directory((dir / "checkpoint").string());
    ck.every = 100;
    hooks.stop_at = 250;
    REQUIRE(run_in(cfg, ds, dir, &ck, hooks).stopped);
    ck.resume = true;
    hooks.stop_at = -1;
    // Other data.
    auto other = copy_of(*ds);
    other->mutable_row(0)[0] += 1.0;
    CHECK_THROWS_AS(run_in(cfg, other, dir, &ck, hooks), DataError);
    // Another configuration.
    RunConfig cfg2 = cfg;
    cfg2.seed = 3;
    CHECK_THROWS_WITH_AS(run_in(cfg2, ds, dir, &ck), doctest::Contains("configuration"),
                         ConfigError);
    // A chain state with a valid checksum whose contents do not fit the run.
    {
      const ChainState saved = *ck.store->load_chain(1);
      ChainState bad = saved;
      REQUIRE(saved.bright.size() >= 2);
      bad.bright[0] = bad.bright[1];
      ck.store->save_chain(bad);
      CHECK_THROWS_WITH_AS(run_in(cfg, ds, dir, &ck, hooks), doctest::Contains("listed twice"),
                           ConfigError);
      bad.bright[0] = static_cast<Index>(ds->n());
      ck.store->save_chain(bad);
      CHECK_THROWS_WITH_AS(run_in(cfg, ds, dir, &ck, hooks), doctest::Contains("out of range"),
                           ConfigError);
      bad = saved;
      bad.kept += 1;
      ck.store->save_chain(bad);
      CHECK_THROWS_WITH_AS(run_in(cfg, ds, dir, &ck, hooks), doctest::Contains("kept-draw count"),
                           ConfigError);
      ck.store->save_chain(saved);
    }
    // A draw file shorter than its checkpoint says.
    const fs::path csv = dir / "chain-2.csv";
    fs::resize_file(csv, fs::file_size(csv) / 2);
    CHECK_THROWS_WITH_AS(run_in(cfg, ds, dir, &ck, hooks), doctest::Contains("fewer than"),
                         ConfigError);
    // No checkpoint at all.
    fs::remove_all(dir / "checkpoint");
    CHECK_THROWS_WITH_AS(run_in(cfg, ds, dir, &ck, hooks), doctest::Contains("no checkpoint"),
                         ConfigError);
    // Checkpointing without draw sinks is refused up front.
    ck.resume = false;
    CHECK_THROWS_AS(run_logistic(cfg, ds, {}, nullptr, &ck), ConfigError);
    fs::remove_all(dir);
  }
}
