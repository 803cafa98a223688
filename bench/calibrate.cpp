// flymc-bench cost-model (calibrate.hpp).
#include "calibrate.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "flymc/core/model_table.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/mcmc/auto/choose_algo.hpp"
#include "flymc/mcmc/auto/cost_model.hpp"

namespace flymc::bench {
namespace {

/// "file" or "file:model" (and "file:softmax:0.3" for a prior sd): the data and the run's model.
struct DataSpec {
  std::string path;
  RunConfig cfg;
};

DataSpec parse_spec(const std::string& spec) {
  DataSpec d;
  d.path = spec;
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return d;
  d.path = spec.substr(0, colon);
  std::string rest = spec.substr(colon + 1);
  const auto second = rest.find(':');
  if (second != std::string::npos) {
    d.cfg.prior_sd = std::stod(rest.substr(second + 1));
    rest = rest.substr(0, second);
  }
  const auto names = cli::enum_map<ModelKind>();
  const auto it = names.find(rest);
  if (it == names.end()) throw UsageError("cost-model: --data " + spec + ": unknown model");
  d.cfg.model = it->second;
  return d;
}

/// The counted work of a run, summed over its chains, and its core-seconds: the chains' own
/// warm-up and sampling timers added up.
struct Measured {
  Work work;
  double seconds = 0.0, statistics_passes = 0.0, statistics_seconds = 0.0;
};

Measured measured(const RunResult& r) {
  Measured m;
  for (const ChainResult& ch : r.chains) {
    m.work +=
        Work{static_cast<double>(r.config.warmup + r.config.iters),
             static_cast<double>(ch.counters.queries), static_cast<double>(ch.counters.grad_evals)};
    m.seconds += ch.warmup_seconds + ch.sampling_seconds;
  }
  for (const SetupPhase& p : r.setup_phases)
    if (p.name == "statistics" && p.passes > 0) {
      m.statistics_passes += p.passes;
      m.statistics_seconds += p.seconds;
    }
  return m;
}

nlohmann::json one_row(const std::string& name, const RunResult& r, const Dataset& data) {
  const Measured m = measured(r);
  const CostShape shape = cost_shape(data, r.dim);
  const double predicted = work_seconds(r.config, shape, m.work);
  const double stats = statistics_seconds(r.config, shape, m.statistics_passes);
  std::printf("%-22s %9zu %4zu %5zu %10.3g %10.3g %10.3g %9.3f %9.3f %6.2f %8.3f %8.3f\n",
              name.c_str(), shape.n, shape.d, shape.p, m.work.iterations, m.work.queries,
              m.work.grads, m.seconds, predicted, predicted / std::max(m.seconds, 1e-12),
              m.statistics_seconds, stats);
  std::fflush(stdout);
  return {{"name", name},
          {"algo", to_string(r.config.algo)},
          {"kernel", to_string(r.config.kernel)},
          {"smh_order", r.config.smh_order},
          {"n", shape.n},
          {"d", shape.d},
          {"p", shape.p},
          {"bytes", shape.bytes},
          {"chains", r.config.chains},
          {"iterations", m.work.iterations},
          {"queries", m.work.queries},
          {"grads", m.work.grads},
          {"core_seconds", m.seconds},
          {"predicted_core_seconds", predicted},
          {"statistics_passes", m.statistics_passes},
          {"statistics_seconds", m.statistics_seconds},
          {"predicted_statistics_seconds", stats}};
}

bool wanted(const CostModelOptions& o, const std::string& name) {
  return o.only.empty() || ("," + o.only + ",").find("," + name + ",") != std::string::npos;
}

void cost_model_bench(const CostModelOptions& o) {
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-22s %9s %4s %5s %10s %10s %10s %9s %9s %6s %8s %8s\n", "candidate", "n", "d", "p",
              "iters", "queries", "grads", "core-s", "priced", "ratio", "stats-s", "priced");
  for (const std::string& spec : o.data) {
    const DataSpec s = parse_spec(spec);
    const auto data =
        std::make_shared<const Dataset>(load_dataset(s.path, label_domain(s.cfg.model)));
    RunConfig cfg = s.cfg;
    cfg.ess = 0.0;
    cfg.chains = o.chains;
    cfg.threads = o.threads;
    cfg.seed = o.seed;
    std::shared_ptr<const MapResult> map;
    for (const AutoCandidate& a : auto_candidates(cfg, *data)) {
      if (!a.skipped.empty() || !wanted(o, a.name)) continue;
      RunConfig c = a.config;
      // Regular MCMC's iterations cost a pass each: fewer on tall data, so that each run takes
      // about as long as on 10^5 rows.
      const double tall = std::max(1.0, static_cast<double>(data->n()) / 1e5);
      c.iters = c.algo == Algo::full
                    ? std::max(20L, static_cast<long>(static_cast<double>(o.regular_iters) / tall))
                    : o.iters;
      c.warmup = std::max(10L, c.iters / 2);
      c.thin = std::max(1L, c.iters / 5000);
      const RunResult r = run(c, data, {}, nullptr, nullptr, {}, Precomputed{map, nullptr});
      if (!map) map = std::make_shared<const MapResult>(r.map);
      rows.push_back(one_row(a.name, r, *data));
      rows.back()["data"] = s.path;
    }
  }
  write_json(o.json, "cost-model", {{"rows", rows}});
}

}  // namespace

void add_cost_model_command(CLI::App& app, CostModelOptions& o) {
  CLI::App* s = app.add_subcommand(
      "cost-model",
      "Auto's candidates for fixed lengths: counted work, measured core-seconds and the cost "
      "model's price of that work (what its constants are fitted to)");
  s->add_option("--data", o.data, "Data sets: file or file:model[:prior-sd], repeatable")
      ->required();
  s->add_option("--only", o.only, "Candidates to run, comma-separated (default: all)");
  s->add_option("--json", o.json, "Write the rows as JSON");
  cli::add_run_named(s, "chains", o.chains)->capture_default_str();
  cli::add_run_named(s, "threads", o.threads, "0: all cores")->capture_default_str();
  cli::add_run_named(s, "seed", o.seed)->capture_default_str();
  cli::add_run_named(s, "iters", o.iters, "Subsampling samplers' iterations (warm-up: half)")
      ->capture_default_str();
  s->add_option("--regular-iters", o.regular_iters,
                "Regular MCMC's iterations on 10^5 rows or fewer (fewer on taller data)")
      ->capture_default_str();
  s->callback([&o] { cost_model_bench(o); });
}

}  // namespace flymc::bench
