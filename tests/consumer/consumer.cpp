// Samples a small logistic regression through the installed library and checks it ran.
#include <cmath>
#include <cstdio>
#include <flymc/flymc.hpp>
#include <memory>
#include <vector>

int main() {
  auto ds = std::make_shared<flymc::Dataset>(500, 2, "consumer");
  flymc::Rng rng(1, 0);
  for (std::size_t i = 0; i < ds->n(); ++i) {
    ds->mutable_row(i)[0] = rng.normal();
    ds->mutable_row(i)[1] = 1.0;
    ds->mutable_y()[i] = rng.uniform() < 1.0 / (1.0 + std::exp(-ds->row(i)[0])) ? 1.0 : -1.0;
  }
  flymc::RunConfig cfg;
  cfg.algo = flymc::Algo::flymc;  // FlyMC for exactly 2,000 iterations (the default is auto to
  cfg.ess = 0.0;                  // an ESS target)
  cfg.chains = 2;
  cfg.warmup = 500;
  cfg.iters = 2000;
  const auto r = flymc::run_logistic(cfg, ds);
  std::printf("consumer: %zu kept draws per chain, %.1f queries/iter\n", r.chains[0].kept,
              r.queries_per_iter());
  // The front door, as the command line and Python take it: the default (auto, an ESS target)
  // with two chains given, and summary.json's run fields.
  flymc::SampleRequest req;
  req.cfg.chains = 2;
  req.cfg.ess = 200;
  req.ess_given = true;
  const flymc::Sampled s = flymc::sample(flymc::plan_sample(req), ds);
  const std::vector<flymc::NamedSummary> params = flymc::summarize_params(s.run);
  const flymc::Record record = flymc::run_record(s.run, params, s.choice ? &*s.choice : nullptr);
  std::printf("consumer: auto chose %s (%zu run fields), target reached: %d\n",
              s.run.auto_chosen.c_str(), record.size(), int(s.run.target_reached));
  return r.chains[0].kept == 2000 && s.choice && s.run.target_reached ? 0 : 1;
}
