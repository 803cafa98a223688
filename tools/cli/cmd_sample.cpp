// `flymc sample`: run chains, write DIR/chain-<k>.csv and DIR/summary.json, print the summary.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "flymc/errors.hpp"
#include "flymc/loaders.hpp"
#include "flymc/output.hpp"
#include "flymc/sampler.hpp"
#include "table.hpp"

namespace flymc::cli {
namespace {

struct SampleOptions {
  std::string data, model = "logistic", out = "flymc-out";
  RunConfig cfg;
  bool quiet = false;
};

/// A JSON number, or null for NaN/inf (JSON has no spelling for them).
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

void write_summary_json(const std::string& path, const RunResult& r,
                        const std::vector<NamedSummary>& params) {
  nlohmann::json j;
  j["params"] = nlohmann::json::array();
  double min_ess = std::numeric_limits<double>::infinity();
  for (const auto& p : params) {
    const auto& s = p.s;
    j["params"].push_back({{"name", p.name},
                           {"mean", num(s.mean)},
                           {"sd", num(s.sd)},
                           {"mcse_mean", num(s.mcse_mean)},
                           {"q5", num(s.q5)},
                           {"q50", num(s.q50)},
                           {"q95", num(s.q95)},
                           {"ess_bulk", num(s.ess_bulk)},
                           {"ess_tail", num(s.ess_tail)},
                           {"rhat", num(s.rhat)}});
    min_ess = std::min(min_ess, std::isnan(s.ess_bulk) ? 0.0 : s.ess_bulk);
  }
  j["run"] = {{"chains", r.config.chains},
              {"warmup", r.config.warmup},
              {"iters", r.config.iters},
              {"setup_seconds", r.setup_seconds},
              {"warmup_seconds", r.warmup_seconds},
              {"sampling_seconds", r.sampling_seconds},
              {"queries_per_iter", r.queries_per_iter()},
              {"bright_mean", r.bright_mean()},
              {"accept_rate", r.accept_rate()},
              {"min_ess_bulk", num(min_ess)},
              {"min_ess_bulk_per_second", num(min_ess / r.sampling_seconds)}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw Error(tmp + ": cannot create", 73);
    f << j.dump(2) << '\n';
    if (!f) throw Error(tmp + ": write failed", 74);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error(path + ": cannot rename", 74);
}

/// Fails with exit code 73 (EX_CANTCREAT) unless a file can be created in `dir`: checked before
/// the data are read, not when the chains open their files after the MAP search.
void check_writable(const std::string& dir) {
  const std::string probe = dir + "/.flymc-write-test-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (f == nullptr)
    throw Error(dir + ": cannot create files in the output directory: " + std::strerror(errno), 73);
  std::fclose(f);
  std::remove(probe.c_str());
}

void run_sample(const SampleOptions& o) {
  // Every option is checked before any work: values, then the output directory, then the data.
  o.cfg.validate();
  if (o.model != "logistic")
    throw ConfigError("--model " + o.model + ": only 'logistic' is available in this build");
  if (o.out.empty()) throw UsageError("--out must not be empty");
  SinkFactory sinks = stan_csv_sinks(o.out, o.cfg, {{"data", o.data}});
  check_writable(o.out);
  auto data = std::make_shared<const Dataset>(load_dataset(o.data, LabelDomain::binary));
  const bool tty = isatty(STDERR_FILENO) && !o.quiet;
  if (!o.quiet)
    std::fprintf(stderr, "flymc: %s: %zu rows x %zu features; %s, %d chains, %ld+%ld iterations\n",
                 o.data.c_str(), data->n(), data->d(), to_string(o.cfg.algo), o.cfg.chains,
                 o.cfg.warmup, o.cfg.iters);
  Progress progress(o.cfg.chains);
  std::atomic<bool> done{false};
  std::thread monitor;
  if (tty) {
    monitor = std::thread([&] {
      const long total = o.cfg.warmup + o.cfg.iters;
      while (!done.load()) {
        long sum = 0;
        for (auto& c : progress.done) sum += c.load(std::memory_order_relaxed);
        std::fprintf(stderr, "\rsampling: %5.1f%% (%ld / %ld iterations over %d chains)",
                     100.0 * double(sum) / double(total * o.cfg.chains), sum, total * o.cfg.chains,
                     o.cfg.chains);
        std::fflush(stderr);
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
      std::fprintf(stderr, "\r%70s\r", "");
    });
  }
  RunResult r;
  try {
    r = run_logistic(o.cfg, data, sinks, &progress);
  } catch (...) {
    done = true;
    if (monitor.joinable()) monitor.join();
    throw;
  }
  done = true;
  if (monitor.joinable()) monitor.join();
  const auto params = summarize_params(r);
  write_summary_json(o.out + "/summary.json", r, params);
  if (!o.quiet) {
    print_summary_table(stdout, params);
    std::printf(
        "\nset-up %.3f s, warm-up %.3f s, sampling %.3f s; %.1f likelihood queries/iter "
        "(%.2f%% of N), %.1f bright on average, acceptance %.3f\n",
        r.setup_seconds, r.warmup_seconds, r.sampling_seconds, r.queries_per_iter(),
        100.0 * r.queries_per_iter() / double(r.n), r.bright_mean(), r.accept_rate());
    if (r.bound_violations() > 0 || r.nonfinite() > 0)
      std::printf("warning: %llu bound violations, %llu non-finite proposals\n",
                  static_cast<unsigned long long>(r.bound_violations()),
                  static_cast<unsigned long long>(r.nonfinite()));
    std::printf("draws: %s/chain-{1..%d}.csv, summary: %s/summary.json\n", o.out.c_str(),
                o.cfg.chains, o.out.c_str());
  }
}

/// An option taking one of the names in `values`, stored as the mapped enum. An unknown name is a
/// usage error naming the option and the choices, e.g. "--kernel: nuts not in {rwmh}".
template <class E>
void add_enum_option(CLI::App* s, const std::string& name, E& target,
                     const std::map<std::string, E>& values, const std::string& help,
                     const std::string& default_name) {
  std::vector<std::string> names;
  for (const auto& kv : values) names.push_back(kv.first);
  s->add_option_function<std::string>(
       name, [&target, values](const std::string& v) { target = values.at(v); }, help)
      ->check(CLI::IsMember(names))
      ->default_str(default_name);
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto o = std::make_shared<SampleOptions>();
  RunConfig& c = o->cfg;
  CLI::App* s = app.add_subcommand("sample", "Draw posterior samples (FlyMC or regular MCMC)");
  s->add_option("--data", o->data, "Data file (.csv or .npy; label first)")->required();
  s->add_option("--model", o->model, "Model")
      ->check(CLI::IsMember({"logistic"}))
      ->capture_default_str();
  const std::map<std::string, Algo> algos{{"flymc", Algo::flymc}, {"full", Algo::full}};
  add_enum_option(s, "--algo", c.algo, algos, "flymc or full (regular MCMC)", "flymc");
  const std::map<std::string, BoundTuning> bounds{{"map", BoundTuning::map},
                                                  {"untuned", BoundTuning::untuned}};
  add_enum_option(s, "--bound", c.bound, bounds, "map (MAP-tuned) or untuned", "map");
  const std::map<std::string, ZUpdate> zs{{"implicit", ZUpdate::implicit},
                                          {"explicit", ZUpdate::explicit_}};
  add_enum_option(s, "--z", c.z, zs, "z-update: implicit or explicit", "implicit");
  const std::map<std::string, KernelKind> kernels{{"rwmh", KernelKind::rwmh}};
  add_enum_option(s, "--kernel", c.kernel, kernels, "theta-kernel", "rwmh");
  const std::map<std::string, Metric> metrics{
      {"identity", Metric::identity}, {"diag", Metric::diag}, {"dense", Metric::dense}};
  add_enum_option(s, "--metric", c.metric, metrics,
                  "RW proposal covariance: identity, or the Laplace covariance (diag or dense)",
                  "identity");
  s->add_option("--target-accept", c.target_accept, "Step-size adaptation target")
      ->capture_default_str();
  const std::map<std::string, Init> inits{{"map", Init::map}, {"prior", Init::prior}};
  add_enum_option(s, "--init", c.init, inits, "map (MAP + jitter) or prior draw", "map");
  s->add_option("--chains", c.chains, "Number of chains")->capture_default_str();
  s->add_option("--warmup", c.warmup, "Warm-up iterations")->capture_default_str();
  s->add_option("--iters", c.iters, "Sampling iterations")->capture_default_str();
  s->add_option("--thin", c.thin, "Keep every K-th draw")->capture_default_str();
  // (CLI11 would wrap a negative seed around to 2^64 - 1: refused instead.)
  s->add_option("--seed", c.seed, "Random seed (an integer >= 0)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  s->add_option("--threads", c.threads, "Worker threads (0: all cores)")->capture_default_str();
  s->add_option("--prior-sd", c.prior_sd, "Gaussian prior standard deviation")
      ->capture_default_str();
  s->add_option("--q-dark-to-bright", c.q_dark_to_bright, "Implicit z-update proposal rate q")
      ->capture_default_str();
  s->add_option("--resample-fraction", c.resample_fraction, "Explicit z-update fraction")
      ->capture_default_str();
  s->add_option("--untuned-xi", c.untuned_xi, "xi of the untuned bound")->capture_default_str();
  s->add_option("--bound-slack", c.bound_slack, "Slack subtracted from every log B_n")
      ->capture_default_str();
  s->add_option("--theta-steps", c.theta_steps, "theta-steps per z-sweep")->capture_default_str();
  s->add_option("--step-size", c.step_size, "Initial step size (0: from the Laplace fit)")
      ->capture_default_str();
  s->add_option("--out", o->out, "Output directory")->capture_default_str();
  s->add_flag("--quiet", o->quiet, "No progress line or table");
  s->callback([o] { run_sample(*o); });
}

}  // namespace flymc::cli
