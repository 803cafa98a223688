// Pinned draws: seeded runs of every model, sampler and θ-kernel must reproduce, bit for bit, the
// draws recorded in tests/data/pinned_draws.txt. A refactoring that changes them fails here; a
// commit that changes draws on purpose regenerates the file (FLYMC_WRITE_PINNED=PATH, see
// docs/validation.md) and says so. Bits depend on the SIMD path (the kernels' summation order), on
// the compiler flags (contraction into fused multiply-adds differs between -O2 and -O3), on the
// CPU model -march=native resolved to (vector widths and instruction choices) and on the kernels
// OpenBLAS picked for the CPU, so the file holds one section per such build, and the exact
// comparison runs against the section of a build like this one; with none, the runs are only
// checked to complete with finite draws, and a message says why.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "flymc/core/blas.hpp"
#include "flymc/kernels/kernels.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "test_util.hpp"

using namespace flymc;

namespace {

struct Pinned {
  const char* name;
  std::function<RunConfig()> config;
  std::function<std::shared_ptr<const Dataset>()> data;
};

RunConfig base_config(ModelKind model, KernelKind kernel) {
  RunConfig c = flymc::test::fixed_config();
  c.model = model;
  c.kernel = kernel;
  c.chains = 2;
  c.warmup = 200;
  c.iters = 300;
  c.seed = 17;
  c.threads = 2;
  // The metric the recorded draws were made with: `--metric auto` resolved to diag for every
  // kernel but RW-MH then, and to dense for the gradient kernels since.
  c.metric = kernel == KernelKind::rwmh ? Metric::identity : Metric::diag;
  return c;
}

/// The configurations added later pin every sampler at its defaults: the metric is left at
/// Metric::automatic (what the run resolves it to for the algorithm and kernel).
RunConfig sampler_config(ModelKind model, Algo algo, KernelKind kernel) {
  RunConfig c = base_config(model, kernel);
  c.algo = algo;
  c.metric = Metric::automatic;
  return c;
}

std::vector<Pinned> configurations() {
  auto logistic = [] { return test::logistic_data(2000, 5, 3); };
  auto softmax = [] { return test::softmax_data(1500, 4, 3, 5); };
  auto robust = [] { return test::robust_data(1500, 4, 6); };
  auto with = [](ModelKind m, KernelKind k, std::function<void(RunConfig&)> f = {}) {
    return [=] {
      RunConfig c = base_config(m, k);
      if (f) f(c);
      return c;
    };
  };
  auto sampler = [](ModelKind m, Algo a, KernelKind k = KernelKind::rwmh,
                    std::function<void(RunConfig&)> f = {}) {
    return [=] {
      RunConfig c = sampler_config(m, a, k);
      if (f) f(c);
      return c;
    };
  };
  constexpr ModelKind lr = ModelKind::logistic;
  return {
      {"logistic-rwmh", with(ModelKind::logistic, KernelKind::rwmh), logistic},
      {"logistic-mala", with(ModelKind::logistic, KernelKind::mala), logistic},
      {"logistic-hmc", with(ModelKind::logistic, KernelKind::hmc), logistic},
      {"logistic-full-hmc",
       with(ModelKind::logistic, KernelKind::hmc, [](RunConfig& c) { c.algo = Algo::full; }),
       logistic},
      {"logistic-slice-explicit",
       with(ModelKind::logistic, KernelKind::slice, [](RunConfig& c) { c.z = ZUpdate::explicit_; }),
       logistic},
      {"softmax-mala", with(ModelKind::softmax, KernelKind::mala), softmax},
      {"robust-slice",
       with(ModelKind::robust, KernelKind::slice, [](RunConfig& c) { c.prior = "laplace"; }),
       robust},
      // Regular MCMC with every other θ-kernel.
      {"logistic-full-rwmh", sampler(lr, Algo::full, KernelKind::rwmh), logistic},
      {"logistic-full-slice", sampler(lr, Algo::full, KernelKind::slice), logistic},
      {"logistic-full-nuts", sampler(lr, Algo::full, KernelKind::nuts), logistic},
      // pCN with an explicit ρ: with ρ tuned, its draws on these data equal the independence
      // sampler's (ρ = 0) bit for bit.
      {"logistic-full-pcn",
       sampler(lr, Algo::full, KernelKind::pcn, [](RunConfig& c) { c.pcn_rho = 0.5; }), logistic},
      {"logistic-full-imh", sampler(lr, Algo::full, KernelKind::imh), logistic},
      // FlyMC: the kernels and options not pinned above.
      {"logistic-nuts", sampler(lr, Algo::flymc, KernelKind::nuts), logistic},
      {"logistic-nuts-fly",
       sampler(lr, Algo::flymc, KernelKind::nuts, [](RunConfig& c) { c.metric = Metric::fly; }),
       logistic},
      {"logistic-pcn",
       sampler(lr, Algo::flymc, KernelKind::pcn, [](RunConfig& c) { c.pcn_rho = 0.5; }), logistic},
      {"logistic-imh", sampler(lr, Algo::flymc, KernelKind::imh), logistic},
      {"logistic-rwmh-untuned",
       sampler(lr, Algo::flymc, KernelKind::rwmh,
               [](RunConfig& c) { c.bound = BoundTuning::untuned; }),
       logistic},
      {"logistic-mala-q-per-datum",
       sampler(lr, Algo::flymc, KernelKind::mala, [](RunConfig& c) { c.q_per_datum = true; }),
       logistic},
      {"logistic-hmc-slack-scale",
       sampler(lr, Algo::flymc, KernelKind::hmc, [](RunConfig& c) { c.slack_scale = 1.0; }),
       logistic},
      // Scalable MH.
      {"logistic-smh2-pcn", sampler(lr, Algo::smh), logistic},
      {"logistic-smh2-rw",
       sampler(lr, Algo::smh, KernelKind::rwmh, [](RunConfig& c) { c.proposal = SmhProposal::rw; }),
       logistic},
      {"logistic-smh3-pcn",
       sampler(lr, Algo::smh, KernelKind::rwmh, [](RunConfig& c) { c.smh_order = 3; }), logistic},
      // The approximate subsampling samplers.
      {"logistic-minibatch-mh", sampler(lr, Algo::minibatch_mh), logistic},
      {"logistic-sgld", sampler(lr, Algo::sgld), logistic},
      // The piecewise-deterministic samplers.
      {"logistic-bps", sampler(lr, Algo::bps), logistic},
      {"logistic-lipsbps", sampler(lr, Algo::lipsbps), logistic},
      {"logistic-sbps", sampler(lr, Algo::sbps), logistic},
      {"logistic-psbps", sampler(lr, Algo::psbps), logistic},
      {"logistic-zigzag-ss", sampler(lr, Algo::zigzag_ss), logistic},
      {"logistic-zigzag-cv", sampler(lr, Algo::zigzag_cv), logistic},
      // Robust regression and softmax classification beyond FlyMC.
      {"robust-full-nuts", sampler(ModelKind::robust, Algo::full, KernelKind::nuts), robust},
      {"robust-smh2-pcn", sampler(ModelKind::robust, Algo::smh), robust},
      {"softmax-full-nuts", sampler(ModelKind::softmax, Algo::full, KernelKind::nuts), softmax},
      {"softmax-full-hmc", sampler(ModelKind::softmax, Algo::full, KernelKind::hmc), softmax},
      // The single-index models (recorded after they shipped): FlyMC's generic bound, SMH of
      // both orders, regular NUTS.
      {"probit-nuts", sampler(ModelKind::probit, Algo::flymc, KernelKind::nuts), logistic},
      {"probit-smh3-pcn",
       sampler(ModelKind::probit, Algo::smh, KernelKind::rwmh,
               [](RunConfig& c) { c.smh_order = 3; }),
       logistic},
      // (Recorded when σ = 1 was the default; without --noise-scale σ is now inferred.)
      {"gaussian-full-nuts",
       sampler(ModelKind::gaussian, Algo::full, KernelKind::nuts,
               [](RunConfig& c) { c.noise_scale = 1.0; }),
       robust},
      {"gaussian-smh2-pcn",
       sampler(ModelKind::gaussian, Algo::smh, KernelKind::rwmh,
               [](RunConfig& c) { c.noise_scale = 1.0; }),
       robust},
  };
}

/// tests/data/pinned_draws.txt: leading comment lines, then one section per build that recorded
/// draws, each a "# simd=… flags=… blas=…" header and its lines.
struct PinnedFile {
  std::vector<std::string> preamble;
  std::map<std::string, std::vector<std::string>> sections;
};

PinnedFile read_pinned(const std::string& path) {
  PinnedFile f;
  std::ifstream in(path);
  std::vector<std::string>* cur = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.rfind("# simd=", 0) == 0) {
      cur = &f.sections[line];
    } else if (cur != nullptr) {
      cur->push_back(line);
    } else {
      f.preamble.push_back(line);
    }
  }
  return f;
}

void write_pinned(const std::string& path, const PinnedFile& f) {
  std::ofstream out(path);
  for (const auto& l : f.preamble) out << l << "\n";
  for (const auto& [header, lines] : f.sections) {
    out << header << "\n";
    for (const auto& l : lines) out << l << "\n";
  }
}

/// One line per chain: the configuration, the chain, then lp and θ of its first and last kept
/// draws, as %.17g (exact round trip).
std::vector<std::string> pinned_lines(const Pinned& p, const RunResult& r) {
  std::vector<std::string> lines;
  for (const ChainResult& c : r.chains) {
    std::string line = std::string(p.name) + " chain " + std::to_string(c.chain_id) + ":";
    char buf[32];
    for (std::size_t i : {std::size_t{0}, c.kept - 1}) {
      std::snprintf(buf, sizeof buf, " %.17g", c.lp[i]);
      line += buf;
      for (std::size_t j = 0; j < r.dim; ++j) {
        std::snprintf(buf, sizeof buf, " %.17g", c.draws[i * r.dim + j]);
        line += buf;
      }
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE(
      "pinned draws: every model, sampler and kernel reproduces its recorded draws bit for bit") {
    std::vector<std::string> got;
    for (const Pinned& p : configurations()) {
      CAPTURE(p.name);
      const RunResult r = run(p.config(), p.data());
      for (const ChainResult& c : r.chains) {
        REQUIRE(c.kept == 300);
        for (double v : c.draws) REQUIRE(std::isfinite(v));
      }
      for (auto& l : pinned_lines(p, r)) got.push_back(std::move(l));
    }
    const std::string build = std::string("# simd=") + kernels::simd_name() +
                              " flags=" + FLYMC_BUILD_FLAGS + " blas=" + blas::core_name();
    const std::string path = std::string(FLYMC_TEST_DATA_DIR) + "/pinned_draws.txt";
    PinnedFile file = read_pinned(
        std::getenv("FLYMC_WRITE_PINNED") ? std::getenv("FLYMC_WRITE_PINNED") : path.c_str());
    if (const char* out = std::getenv("FLYMC_WRITE_PINNED")) {
      file.sections[build] = got;
      write_pinned(out, file);
      MESSAGE("wrote the section '" << build.substr(2) << "' of " << std::string(out));
      return;
    }
    REQUIRE(!file.sections.empty());
    const auto it = file.sections.find(build);
    if (it == file.sections.end()) {
      MESSAGE("no pinned draws were recorded by a build like this one ('"
              << build.substr(2)
              << "'): bits differ across SIMD paths, compiler flags, CPU models and BLAS kernels, "
                 "so only completion and finiteness were checked");
      return;
    }
    // Lines are matched by "configuration chain k". A section recorded before configurations were
    // added lacks their lines (the Cooperlake one: OpenBLAS 0.3.21 picks those kernels only on a
    // CPU it detects as such, and OPENBLAS_CORETYPE=Cooperlake is not among the names it accepts),
    // so those runs are only checked to complete with finite draws, and a message names them; a
    // recorded line no run produced fails.
    std::map<std::string, std::string> want;
    for (const std::string& l : it->second) want[l.substr(0, l.find(':'))] = l;
    std::string missing;
    for (const std::string& l : got) {
      const std::string key = l.substr(0, l.find(':'));
      const auto w = want.find(key);
      if (w == want.end()) {
        missing += (missing.empty() ? "" : ", ") + key;
        continue;
      }
      CAPTURE(key);
      CHECK(l == w->second);
      want.erase(w);
    }
    for (const auto& entry : want) {
      CAPTURE(entry.first);
      FAIL_CHECK("a recorded line that no configuration produced");
    }
    if (!missing.empty()) {
      MESSAGE("the section '" << build.substr(2) << "' holds no lines for " << missing
                              << ": only completion and finiteness were checked for them");
    }
  }
}
