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

#include "auto_option.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/mcmc/sampler.hpp"

int main(int argc, char** argv) {
  using namespace flymc;
  CLI::App app{"flymc-profile: time per phase of a fixed FlyMC workload"};
  std::string data_path, algo = "flymc", kernel = "rwmh", metric = "auto";
  RunConfig cfg;
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
  app.add_option("--algo", algo, "flymc or full")->check(CLI::IsMember({"flymc", "full"}));
  app.add_option("--kernel", kernel, "theta-kernel")
      ->check(CLI::IsMember({"rwmh", "mala", "hmc", "nuts", "slice"}))
      ->capture_default_str();
  app.add_option("--metric", metric, "Kernel metric (docs/usage.md)")
      ->check(CLI::IsMember({"auto", "identity", "diag", "dense", "fly"}))
      ->capture_default_str();
  app.add_option("--fly-metric-blend", cfg.fly_metric_blend)->capture_default_str();
  app.add_option("--hmc-steps", cfg.hmc_steps)->capture_default_str();
  app.add_option("--max-treedepth", cfg.max_treedepth, "NUTS: most doublings of a trajectory")
      ->capture_default_str();
  app.add_flag("--q-per-datum", cfg.q_per_datum, "Per-datum implicit z-update rates");
  app.add_option("--slack-scale", cfg.slack_scale, "Per-datum slack alpha x expected bright")
      ->capture_default_str();
  app.add_option("--iters", cfg.iters, "Sampling iterations")->capture_default_str();
  app.add_option("--warmup", cfg.warmup, "Warm-up iterations")->capture_default_str();
  cli::add_auto_option(
      &app, "--theta-steps", cfg.theta_steps, [](double x) { return x >= 1.0; }, ">= 1",
      "theta-steps per z-sweep");
  cli::add_auto_option(
      &app, "--bound-slack", cfg.bound_slack, [](double x) { return x >= 0.0; }, ">= 0",
      "Slack subtracted from every log B_n");
  cli::add_auto_option(
      &app, "--q-dark-to-bright", cfg.q_dark_to_bright,
      [](double x) { return x > 0.0 && x <= 1.0; }, "in (0, 1]", "Implicit z-update rate q");
  app.add_flag("--no-timers", no_timers, "Run without the phase timers (for perf/callgrind)");
  CLI11_PARSE(app, argc, argv);
  cfg.algo = algo == "full" ? Algo::full : Algo::flymc;
  cfg.kernel = kernel == "mala"    ? KernelKind::mala
               : kernel == "hmc"   ? KernelKind::hmc
               : kernel == "nuts"  ? KernelKind::nuts
               : kernel == "slice" ? KernelKind::slice
                                   : KernelKind::rwmh;
  cfg.metric = metric == "identity" ? Metric::identity
               : metric == "diag"   ? Metric::diag
               : metric == "dense"  ? Metric::dense
               : metric == "fly"    ? Metric::fly
                                    : Metric::automatic;
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
