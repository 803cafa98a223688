// flymc-bench storage (bench/storage.hpp). Each sampler runs on float64 and on float32 storage of
// the same file, in alternating order over the rounds (the machine drifts; the ratio is taken
// round by round). Float storage is exact for the rounded data, so its posterior differs from
// float64's by the rounding's effect alone: the shift is reported in MCSE units, where values of
// a few are what two independent chains of the same posterior give.
#include "storage.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_common.hpp"
#include "flymc/core/clock.hpp"
#include "flymc/data/loaders.hpp"

namespace flymc::bench {
namespace {

RunConfig storage_config(const StorageOptions& o, const std::string& algo) {
  RunConfig c;
  c.algo = Algo::flymc;
  c.ess = 0.0;
  c.chains = o.chains;
  c.threads = o.threads;
  c.seed = o.seed;
  c.warmup = o.warmup;
  c.iters = o.iters;
  c.thin = std::max(1L, o.iters / 10000);
  if (algo == "smh") {
    c.algo = Algo::smh;
  } else if (algo == "flymc") {
    c.algo = Algo::flymc;
    c.kernel = KernelKind::nuts;
    c.metric = Metric::fly;
    c.slack_scale = 1.0;
  } else if (algo == "full") {
    c.algo = Algo::full;
    c.kernel = KernelKind::nuts;
    c.metric = Metric::dense;
    c.adapt_metric = false;
  } else {
    throw UsageError("storage: --algos: smh, flymc or full, got '" + algo + "'");
  }
  return c;
}

struct StorageRun {
  double read_seconds = 0.0, min_ess = 0.0, max_rhat = 0.0;
  std::size_t data_bytes = 0;
  RunResult result;
};

StorageRun measure(const StorageOptions& o, const std::string& algo, Storage storage) {
  StorageRun r;
  RunConfig cfg = storage_config(o, algo);
  cfg.storage = storage;
  const Stopwatch clock;
  const auto data =
      std::make_shared<const Dataset>(load_dataset(o.data, LabelDomain::binary, storage));
  r.read_seconds = clock.seconds();
  r.data_bytes = data->n() * data->row_bytes();
  std::fprintf(stderr, "storage: %-6s %s ...\n", algo.c_str(), enum_name(storage));
  r.result = run_shown(cfg, data);
  r.min_ess = min_ess(r.result);
  r.max_rhat = max_rhat(r.result);
  return r;
}

nlohmann::json run_json(const StorageRun& r, Storage storage, int round) {
  const RunResult& x = r.result;
  return {{"storage", enum_name(storage)},
          {"round", round},
          {"data_bytes", r.data_bytes},
          {"read_seconds", r.read_seconds},
          {"setup_seconds", x.setup_seconds},
          {"sampling_seconds", x.sampling_seconds},
          {"us_per_iter", 1e6 * seconds_per_iter(x)},
          {"min_ess_bulk", r.min_ess},
          {"max_rhat", r.max_rhat},
          {"min_ess_per_second", r.min_ess / x.sampling_seconds},
          {"end_to_end_seconds", r.read_seconds + end_to_end_seconds(x)}};
}

void print_run(const std::string& algo, Storage storage, int round, const StorageRun& r) {
  const RunResult& x = r.result;
  std::printf("%-6s %-4s %5d %9.2f %7.2f %7.2f %8.2f %9.3f %9.1f %7.4f %10.1f %9.2f\n",
              algo.c_str(), enum_name(storage), round, double(r.data_bytes) / 1e9, r.read_seconds,
              x.setup_seconds, x.sampling_seconds, 1e6 * seconds_per_iter(x), r.min_ess, r.max_rhat,
              r.min_ess / x.sampling_seconds, r.read_seconds + end_to_end_seconds(x));
}

void storage_bench(const StorageOptions& o) {
  std::printf("Storage: %s, %d chains, %ld + %ld iterations, seed %llu\n", o.data.c_str(), o.chains,
              o.warmup, o.iters, static_cast<unsigned long long>(o.seed));
  std::printf("%-6s %-4s %5s %9s %7s %7s %8s %9s %9s %7s %10s %9s\n", "algo", "data", "round",
              "data GB", "read s", "setup s", "sample s", "us/iter", "min ESS", "max R^",
              "min ESS/s", "total s");
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& algo : split_list(o.algos)) {
    storage_config(o, algo);  // an unknown name fails before any run
    std::vector<StorageRun> last(2);
    for (int round = 1; round <= o.rounds; ++round) {
      // f64 first in odd rounds, f32 first in even ones.
      for (const Storage s : round % 2 == 1 ? std::vector{Storage::f64, Storage::f32}
                                            : std::vector{Storage::f32, Storage::f64}) {
        StorageRun r = measure(o, algo, s);
        print_run(algo, s, round, r);
        nlohmann::json j = run_json(r, s, round);
        j["algo"] = algo;
        rows.push_back(j);
        last[s == Storage::f32 ? 1 : 0] = std::move(r);
      }
    }
    const double z = max_mean_z(summaries(last[0].result), summaries(last[1].result));
    std::printf("%-6s posterior shift of f32 against f64: max |mean difference| / MCSE = %.2f\n",
                algo.c_str(), z);
    rows.push_back({{"algo", algo}, {"max_mean_z_f32_vs_f64", z}});
  }
  std::printf(
      "(data GB: the features as held; read s: loading the file; total s: reading, set-up, "
      "warm-up and sampling; the posterior shift compares the last round's two runs)\n");
  write_json(o.json, "storage",
             {{"dataset", o.data},
              {"chains", o.chains},
              {"warmup", o.warmup},
              {"iters", o.iters},
              {"seed", o.seed},
              {"rows", rows}});
}

}  // namespace

void add_storage_command(CLI::App& app, StorageOptions& o) {
  CLI::App* s = app.add_subcommand(
      "storage",
      "The same runs on the data held as float64 and as float32: time, memory and the "
      "posterior shift in MCSE units");
  s->add_option("--data", o.data, "Logistic data set (.npy is read without a float64 copy)")
      ->required();
  s->add_option("--algos", o.algos, "smh, flymc and/or full, comma-separated")
      ->capture_default_str();
  s->add_option("--rounds", o.rounds, "f64/f32 pairs per sampler, in alternating order")
      ->capture_default_str();
  s->add_option("--json", o.json, "Write the rows as JSON");
  cli::add_run_named(s, "chains", o.chains)->capture_default_str();
  cli::add_run_named(s, "threads", o.threads, "0: all cores")->capture_default_str();
  cli::add_run_named(s, "seed", o.seed)->capture_default_str();
  cli::add_run_named(s, "warmup", o.warmup)->capture_default_str();
  cli::add_run_named(s, "iters", o.iters)->capture_default_str();
  s->callback([&o] { storage_bench(o); });
}

}  // namespace flymc::bench
