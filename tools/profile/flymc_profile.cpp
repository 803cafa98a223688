// flymc-profile: a fixed, seeded FlyMC workload that reports where the time goes, phase by phase,
// from in-process timers. It runs unchanged under `perf record` or `valgrind --tool=callgrind`.
//   flymc-profile [--data F] [--iters I] [--algo flymc|full] [--kernel K] [--metric M]
//   [--no-timers] [--synth-n N]
// Without --data it generates synthetic logistic data (N = --synth-n, 12,000 by default, D = 51,
// seed 1): the shape of the Fashion-MNIST 7-vs-9 set, so that the workload needs no files; a
// larger --synth-n shows the z-sweep on data far bigger than the caches.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "run_options.hpp"

int main(int argc, char** argv) {
  using namespace flymc;
  using cli::add_run_option, cli::add_run_options;
  CLI::App app{"flymc-profile: time per phase of a fixed FlyMC workload"};
  std::string data_path;
  RunConfig cfg;
  cfg.algo = Algo::flymc;  // a fixed workload
  cfg.ess = 0.0;
  cfg.chains = 1;
  cfg.threads = 1;
  cfg.warmup = 20000;
  cfg.iters = 500000;
  cfg.thin = 10;
  cfg.seed = 1;
  bool no_timers = false;
  std::size_t synth_n = 12000;
  app.add_option("--data", data_path, "Logistic data (default: synthetic 12,000 x 51)");
  app.add_option("--synth-n", synth_n, "Rows of the synthetic data (without --data)")
      ->capture_default_str();
  // The run options it takes, from the run options' table (names, choices, help).
  add_run_option(&app, cfg, option("algo"),
                 "flymc, full or smh (smh's phases: proposal, its quadratic factor as 'prior + "
                 "collapsed bound', its candidates' factors as 'bright / data likelihood')")
      ->check(CLI::IsMember({"flymc", "full", "smh"}));
  add_run_options(&app, cfg,
                  {"kernel", "metric", "fly-metric-blend", "hmc-steps", "max-treedepth",
                   "q-per-datum", "slack-scale", "iters", "warmup", "theta-steps", "bound-slack",
                   "q-dark-to-bright", "proposal", "pcn-rho"});
  app.add_flag("--no-timers", no_timers, "Run without the phase timers (for perf/callgrind)");
  CLI11_PARSE(app, argc, argv);
  cfg.profile = !no_timers;
  try {
    auto data = data_path.empty()
                    ? std::make_shared<const Dataset>(synth_logistic(synth_n, 51, 1))
                    : std::make_shared<const Dataset>(load_data(data_path, LabelDomain::binary));
    const RunResult r = run(cfg, data);
    const ChainResult& c = r.chains[0];
    const double total = c.warmup_seconds + c.sampling_seconds;
    const long its = cfg.warmup + cfg.iters;
    std::printf(
        "%s (%s) on %zu x %zu: %ld iterations in %.3f s = %.0f iterations/s (%.3f us each)\n",
        to_string(cfg.algo), to_string(cfg.kernel), r.n, r.dim, its, total, double(its) / total,
        1e6 * total / double(its));
    std::printf("queries/iter %.1f, bright %.1f, acceptance %.3f, SIMD %s\n", r.queries_per_iter(),
                r.bright_mean(), r.accept_rate(), "see flymc_bm");
    if (cfg.profile) {
      std::printf("\n%-26s %10s %8s %12s %12s\n", "phase", "seconds", "share", "calls", "ns/call");
      double timed = 0.0;
      for (int p = 0; p < Profile::kPhases; ++p) timed += c.profile.seconds[p];
      for (int p = 0; p < Profile::kPhases; ++p) {
        const double s = c.profile.seconds[p];
        const auto n = c.profile.calls[p];
        std::printf("%-26s %10.3f %7.1f%% %12llu %12.1f\n", phase_name(static_cast<Phase>(p)), s,
                    100.0 * s / total, static_cast<unsigned long long>(n),
                    n ? 1e9 * s / double(n) : 0.0);
      }
      std::printf("%-26s %10.3f %7.1f%%\n", "loop + timers (rest)", total - timed,
                  100.0 * (total - timed) / total);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "flymc-profile: error: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
