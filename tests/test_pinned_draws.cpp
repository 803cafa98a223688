// Pinned draws: seeded runs of every model and θ-kernel must reproduce, bit for bit, the draws
// recorded in tests/data/pinned_draws.txt. A refactoring that changes them fails here; a commit
// that changes draws on purpose regenerates the file (FLYMC_WRITE_PINNED=PATH, see
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

std::vector<Pinned> configurations() {
  auto logistic = [] { return test::logistic_data(2000, 5, 3); };
  auto with = [](ModelKind m, KernelKind k, std::function<void(RunConfig&)> f = {}) {
    return [=] {
      RunConfig c = base_config(m, k);
      if (f) f(c);
      return c;
    };
  };
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
      {"softmax-mala", with(ModelKind::softmax, KernelKind::mala),
       [] { return test::softmax_data(1500, 4, 3, 5); }},
      {"robust-slice",
       with(ModelKind::robust, KernelKind::slice,
            [](RunConfig& c) { c.prior = PriorKind::laplace; }),
       [] { return test::robust_data(1500, 4, 6); }},
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
  TEST_CASE("pinned draws: every model and kernel reproduces its recorded draws bit for bit") {
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
    const std::vector<std::string>& want = it->second;
    REQUIRE(want.size() == got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i] == want[i]);
    }
  }
}
