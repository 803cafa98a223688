// Samples a small logistic regression through the installed library and checks it ran.
#include <cmath>
#include <cstdio>
#include <flymc/flymc.hpp>
#include <memory>

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
  return r.chains[0].kept == 2000 ? 0 : 1;
}
